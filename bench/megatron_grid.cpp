// The `megatron` method against a reference configuration and pipeline-dp, on GPT sizes
// from one DGX A100 to 512 H100s. Per row: the grid's size (configurations enumerated,
// those the analytic memory estimate keeps, those simulated within the 10 s default
// budget), the search time, the configuration chosen and its simulated step, and next to
// it a hand-picked reference configuration (the published one where there is one) and
// pipeline-dp, simulated by the same simulator. Results and command: docs/results.md.
//
//   ./build/bench/megatron_grid [--only NAME] [--seconds S]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "agents/megatron_grid.h"
#include "datasets/gpt.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/plan/megatron_plan.h"
#include "src/util/error.h"

using namespace placer;

namespace {

using Clock = std::chrono::steady_clock;

struct Row {
  std::string label, cluster, profile;
  int layers;
  int64_t hidden, heads, seq_len, batch;
  MegatronConfig reference;  ///< global_batch is set from batch
  std::string reference_source;
};

MegatronConfig config(int tp, int pp, int dp, int mb, Recompute rc, int zero) {
  MegatronConfig m;
  m.tp = tp, m.pp = pp, m.dp = dp, m.micro_batch = mb, m.recompute = rc, m.zero_stage = zero;
  return m;
}

std::string ms(const SimResult& r) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%s", r.step_time * 1e3, r.oom ? " OOM" : "");
  return b;
}

void run(const Row& row, double seconds) {
  const Cluster cluster = load_cluster_yaml(row.cluster);
  const CostModel cost(cluster, load_cost_profile(row.profile));
  GptOptions o;
  o.name = row.label, o.layers = row.layers, o.hidden = row.hidden, o.heads = row.heads;
  o.seq_len = row.seq_len, o.batch = row.batch;
  TrainingOptions t;
  t.master_weights = true;
  const Graph g = expand_training_step(make_gpt(o), t);
  Simulator sim(g, cluster, cost);
  const Problem p{g, cluster, cost, sim, {}};

  MegatronGridPlacer grid;
  SearchBudget budget;
  budget.max_seconds = seconds;
  const auto t0 = Clock::now();
  const Plan best = grid.search(p, budget);
  const double search = std::chrono::duration<double>(Clock::now() - t0).count();
  const SimResult rb = sim.run(best);

  MegatronConfig ref = row.reference;
  ref.global_batch = static_cast<int>(row.batch);
  const SimResult rr = sim.run(megatron_plan(g, ref));
  std::string pdp = "fail";
  try {
    pdp = ms(sim.run(make_placer("pipeline-dp")->search(p, SearchBudget{})));
  } catch (const Error&) {
  }
  const MegatronGridStats& s = grid.last_stats();
  std::printf("| %s | %d | %d / %d / %d | %.1f | %s | %s | %s: %s | %s |\n", row.label.c_str(),
              cluster.num_devices(), s.enumerated, s.fitting, s.simulated, search,
              describe(s.best).c_str(), ms(rb).c_str(), row.reference_source.c_str(), ms(rr).c_str(),
              pdp.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  double seconds = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: megatron_grid [--only NAME] [--seconds S]\n");
      return 2;
    }
  }
  const std::string a100 = "datasets/clusters/dgx_a100.cluster.yaml";
  const std::string a100p = "datasets/clusters/dgx_a100.profile.yaml";
  const std::string h100p = "datasets/clusters/h100.profile.yaml";
  // GPT-3 shapes (Brown et al. 2020, Table 2.1). References: hand-picked configurations a
  // user would start from; for 175B the one Narayanan et al. 2021 ran (tp 8, pp 16, mb 1).
  const std::vector<Row> rows = {
      {"gpt3-350m", a100, a100p, 24, 1024, 16, 2048, 64,
       config(1, 1, 8, 8, Recompute::kNone, 0), "dp 8, mb 8"},
      {"gpt3-1.3b", a100, a100p, 24, 2048, 16, 2048, 64,
       config(2, 1, 4, 4, Recompute::kFull, 0), "tp 2, dp 4, mb 4, full"},
      {"gpt3-6.7b", "datasets/clusters/h100_ib_4node.cluster.yaml", h100p, 32, 4096, 32, 2048, 128,
       config(8, 1, 4, 4, Recompute::kFull, 1), "tp 8, dp 4, mb 4, full, zero 1"},
      {"gpt3-175b", "datasets/clusters/h100_ib_64node.cluster.yaml", h100p, 96, 12288, 96, 2048, 1536,
       config(8, 16, 4, 1, Recompute::kFull, 1), "tp 8, pp 16, dp 4, mb 1, full, zero 1"},
  };
  std::printf("| model | GPUs | enumerated / fit memory / simulated | search s | megatron's choice "
              "| its step ms | reference: ms | pipeline-dp ms |\n|---|---|---|---|---|---|---|---|\n");
  try {
    for (const Row& r : rows) {
      if (only.empty() || only == r.label) run(r, seconds);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "megatron_grid: %s\n", e.what());
    return 1;
  }
  return 0;
}
