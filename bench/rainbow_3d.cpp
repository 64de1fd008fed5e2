// rainbow-3d against the `megatron` grid on GPT sizes (issue 19's target: geomean step-time
// ratio <= 0.97). Per row: the grid's best step (and its search time), rainbow-3d's step,
// the ratio, rainbow-3d's search time and simulator runs, and the shape it chose. GPT-3
// shapes (Brown et al. 2020) with Adam and fp32 master weights, on one DGX A100 with the
// fitted profile and on four H100 nodes. Results and command: docs/results.md.
//
//   ./build/bench/rainbow_3d [--only NAME] [--runs N] [--seed S]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "agents/megatron_grid.h"
#include "agents/rainbow_3d.h"
#include "datasets/gpt.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

using namespace placer;

namespace {

using Clock = std::chrono::steady_clock;

struct Row {
  std::string label, cluster, profile;
  int layers;
  int64_t hidden, heads, seq_len, batch;
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Returns rainbow-3d / grid.
double run(const Row& row, int64_t runs, uint64_t seed) {
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
  SearchBudget gb;  // the grid's default: 10 s
  auto t0 = Clock::now();
  const SimResult rg = sim.run(grid.search(p, gb));
  const double grid_s = seconds_since(t0);

  Rainbow3DPlacer r3;
  SearchBudget rb;
  rb.max_evaluations = runs;
  rb.seed = seed;
  t0 = Clock::now();
  const SearchOutcome out = r3.search_outcome(p, rb);
  const double r3_s = seconds_since(t0);
  const SimResult rr = sim.run(out.plan);
  const Rainbow3DStats& s = r3.last_stats();
  const double ratio = rr.step_time / rg.step_time;
  std::printf("| %s | %d | %.1f%s | %.1f | %s | %.1f%s | %.3f | %.1f | %lld (opp %lld, cuts %lld, "
              "layout %lld) | tp %d, pp %d, dp %d, v %d, m %d%s%s |\n",
              row.label.c_str(), cluster.num_devices(), rg.step_time * 1e3, rg.oom ? " OOM" : "",
              grid_s, describe(grid.last_stats().best).c_str(), rr.step_time * 1e3,
              rr.oom ? " OOM" : "", ratio, r3_s, static_cast<long long>(out.stats.runs),
              static_cast<long long>(s.opp_runs), static_cast<long long>(s.cut_runs),
              static_cast<long long>(s.layout_runs), s.tp, s.pp, s.dp, s.v, s.micro_batches,
              s.zero_stage ? ", zero 1" : "", s.recompute ? ", full" : "");
  std::fflush(stdout);
  return ratio;
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  int64_t runs = 300;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoll(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: rainbow_3d [--only NAME] [--runs N] [--seed S]\n");
      return 2;
    }
  }
  const std::string a100 = "datasets/clusters/dgx_a100.cluster.yaml";
  const std::string a100p = "datasets/clusters/dgx_a100.profile.yaml";
  const std::string h100 = "datasets/clusters/h100_ib_4node.cluster.yaml";
  const std::string h100p = "datasets/clusters/h100.profile.yaml";
  const std::vector<Row> rows = {
      {"gpt3-125m", a100, a100p, 12, 768, 12, 2048, 64},
      {"gpt3-350m", a100, a100p, 24, 1024, 16, 2048, 64},
      {"gpt3-1.3b", a100, a100p, 24, 2048, 16, 2048, 64},
      {"gpt3-2.7b", h100, h100p, 32, 2560, 32, 2048, 128},
      {"gpt3-6.7b", h100, h100p, 32, 4096, 32, 2048, 128},
      // Small global batches: data parallelism alone cannot use the devices.
      {"gpt3-1.3b-b8", a100, a100p, 24, 2048, 16, 2048, 8},
      {"gpt3-6.7b-b16", h100, h100p, 32, 4096, 32, 2048, 16},
  };
  std::printf("| model | GPUs | megatron ms | grid search s | megatron's choice | rainbow-3d ms "
              "| ratio | rainbow-3d search s | simulator runs | rainbow-3d's shape |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n");
  double log_sum = 0;
  int n = 0;
  try {
    for (const Row& r : rows) {
      if (!only.empty() && only != r.label) continue;
      log_sum += std::log(run(r, runs, seed));
      ++n;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "rainbow_3d: %s\n", e.what());
    return 1;
  }
  if (n > 0) std::printf("\ngeomean ratio rainbow-3d / megatron: %.3f over %d rows\n", std::exp(log_sum / n), n);
  return 0;
}
