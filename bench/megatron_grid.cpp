// The `megatron` method against a reference configuration and pipeline-dp, on GPT sizes
// from one DGX A100 to 512 H100s. Per row: the grid's size (configurations enumerated,
// those the analytic memory estimate keeps, those simulated within --seconds, 10 by
// default), the search time, the configuration chosen and its simulated step, and next to
// it a hand-picked reference configuration (the published one where there is one) and
// pipeline-dp, simulated by the same simulator. Results and command: docs/results.md.
//
// --rainbow-3d: rainbow-3d (agents/rainbow/rainbow_3d.h) against the grid instead
// (target: geomean step-time ratio <= 0.97): per row the grid's best step and search time,
// rainbow-3d's step, the ratio, its search time (its own warm-start grid included) and
// simulator runs (by stage: its grid's, then its own), the runs until its best was within
// 5% of its final one (the grid's and the sharding searches' included), the shape it
// chose and its layers per stage, on GPT sizes from 8 A100s to 512 H100s (two with small
// global batches); then the geomean. --no-warm-start: rainbow-3d without the grid's plan
// (grid_seconds 0), its own search alone. --cp-ep: the same table on the models whose best
// plans use expert and context parallelism, from their Hugging Face configs (bf16, fp32
// master weights) on the first 64 GPUs of the 64-node H100 cluster: Mixtral-8x7B at 4096
// tokens (batch 256) and Llama-3-8B at 131072 tokens (batch 16).
//
//   ./build/bench/megatron_grid [--only NAME] [--seconds S]
//   ./build/bench/megatron_grid --rainbow-3d [--only NAME] [--runs N] [--seed S] [--no-warm-start]
//   ./build/bench/megatron_grid --rainbow-3d --cp-ep [--only NAME] [--runs N] [--seed S]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "agents/classical/megatron_grid.h"
#include "agents/rainbow/rainbow_3d.h"
#include "datasets/gpt.h"
#include "datasets/hf_config.h"
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
  int devices = 0;  ///< the cluster's first `devices` GPUs (whole hosts); 0 = all of them
  /// A Hugging Face config.json: the graph is that model's (bf16) at seq_len and batch, and
  /// layers / hidden / heads are unused.
  std::string hf_config = "";
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

/// The training step of a row's GPT (Adam, fp32 master weights) on its cluster and profile.
struct Setup {
  explicit Setup(const Row& row)
      : cluster(load_cluster_yaml(row.cluster)),
        cost(cluster, load_cost_profile(row.profile)),
        g(graph(row)),
        sim(g, cluster, cost),
        p{g, cluster, cost, sim, first_devices(row.devices)} {}
  static Graph graph(const Row& row) {
    TrainingOptions t;
    t.master_weights = true;
    if (!row.hf_config.empty()) {
      HfGraphOptions h;
      h.name = row.label, h.seq_len = row.seq_len, h.batch = row.batch;
      return expand_training_step(make_hf_graph(load_hf_config(row.hf_config), h), t);
    }
    GptOptions o;
    o.name = row.label, o.layers = row.layers, o.hidden = row.hidden, o.heads = row.heads;
    o.seq_len = row.seq_len, o.batch = row.batch;
    return expand_training_step(make_gpt(o), t);
  }
  static std::vector<int> first_devices(int n) {
    std::vector<int> d;
    for (int i = 0; i < n; ++i) d.push_back(i);
    return d;
  }
  const Cluster cluster;
  const CostModel cost;
  const Graph g;
  Simulator sim;
  const Problem p;
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void run(const Row& row, double seconds) {
  Setup su(row);
  const Cluster& cluster = su.cluster;
  const Graph& g = su.g;
  Simulator& sim = su.sim;
  const Problem& p = su.p;

  MegatronGridPlacer grid;
  SearchBudget budget;
  budget.max_seconds = seconds;
  const auto t0 = Clock::now();
  const SearchOutcome outcome = grid.search_outcome(p, budget);
  const Plan& best = outcome.plan;
  const double search = seconds_since(t0);
  const SimResult rb = sim.run(best);

  MegatronConfig ref = row.reference;
  ref.global_batch = static_cast<int>(row.batch);
  const SimResult rr = sim.run(megatron_plan(g, ref));
  std::string pdp = "fail";
  try {
    pdp = ms(sim.run(make_placer("pipeline-dp")->search(p, SearchBudget{})));
  } catch (const Error&) {
  }
  auto count = [&outcome](const char* name) { return static_cast<int>(outcome.stats.value(name)); };
  std::printf("| %s | %d | %d / %d / %d | %.1f | %s | %s | %s: %s | %s |\n", row.label.c_str(),
              cluster.num_devices(), count("enumerated"), count("fitting"), count("simulated"),
              search, describe(megatron_config_of_outcome(outcome.stats)).c_str(), ms(rb).c_str(),
              row.reference_source.c_str(), ms(rr).c_str(), pdp.c_str());
  std::fflush(stdout);
}

/// Layers per pipeline stage (model chunk) of `p`, "5 5 6"; a layer split between stages
/// counts in each, the embedding before the first layer and the head after the last count
/// in none.
std::string stage_layers(const Plan& p, const Graph& g) {
  std::string out;
  for (const PipelineStage& st : p.pipeline.stages) {
    std::set<int> layers;
    for (OpId o : st.ops) {
      if (g.op(o).layer >= 0) layers.insert(g.op(o).layer);
    }
    out += (out.empty() ? "" : " ") + std::to_string(layers.size());
  }
  return out;
}

/// rainbow-3d against the grid on one row; returns rainbow-3d / grid.
double versus_rainbow_3d(const Row& row, int64_t runs, uint64_t seed, bool warm_start) {
  Setup su(row);
  MegatronGridPlacer grid;
  auto t0 = Clock::now();
  const SearchOutcome grid_out = grid.search_outcome(su.p, SearchBudget{});  // default: 1000 runs
  const SimResult rg = su.sim.run(grid_out.plan);
  const double grid_s = seconds_since(t0);

  Rainbow3DOptions r3o;
  if (!warm_start) r3o.grid_seconds = 0;
  Rainbow3DPlacer r3(r3o);
  SearchBudget rb;
  rb.max_evaluations = runs;
  rb.seed = seed;
  t0 = Clock::now();
  const SearchOutcome out = r3.search_outcome(su.p, rb);
  const double r3_s = seconds_since(t0);
  const SimResult rr = su.sim.run(out.plan);
  std::string cp_ep;  // context and expert parallelism of rainbow-3d's plan, when used
  if (out.plan.context_parallel.enabled()) {
    cp_ep += ", cp " + std::to_string(out.plan.context_parallel.degree) + " " +
             to_string(out.plan.context_parallel.comm);
  }
  if (out.plan.expert_parallel.enabled()) {
    cp_ep += ", ep " + std::to_string(out.plan.expert_parallel.degree) + ", etp " +
             std::to_string(out.plan.expert_parallel.tensor_parallel);
  }
  // rainbow-3d's counts and shape, as the named values of its SearchOutcome.
  auto count = [&out](const char* name) { return static_cast<long long>(out.stats.value(name)); };
  auto shape = [&out](const char* name) { return static_cast<int>(out.stats.value(name)); };
  const double ratio = rr.step_time / rg.step_time;
  std::printf(
      "| %s | %d | %s | %.1f (%lld runs) | %s | %s | %.3f | %.1f | %lld (grid %lld, opp %lld, "
      "cuts %lld, layout %lld) | %lld | tp %d, pp %d, dp %d, v %d, m %d%s%s%s%s | %s |\n",
      row.label.c_str(), int(problem_devices(su.p).size()), ms(rg).c_str(), grid_s,
      static_cast<long long>(grid_out.stats.runs),
      describe(megatron_config_of_outcome(grid_out.stats)).c_str(), ms(rr).c_str(), ratio, r3_s,
      static_cast<long long>(out.stats.runs), count("grid_runs"), count("opp_runs"),
      count("cut_runs"), count("layout_runs"), count("runs_to_5pct"), shape("tp"), shape("pp"),
      shape("dp"), shape("virtual_stages"), shape("micro_batches"), cp_ep.c_str(),
      shape("sequence_parallel") ? ", sp" : "", shape("zero_stage") ? ", zero 1" : "",
      shape("recompute") == 2   ? ", full"
      : shape("recompute") == 1 ? ", selective"
                                : "",
      stage_layers(out.plan, su.g).c_str());
  std::fflush(stdout);
  return ratio;
}

/// rainbow-3d against the grid on `rows` (those called `only` when given): the table, then
/// the geomean ratio; the exit status.
int rainbow_table(const std::vector<Row>& rows, const std::string& only, int64_t runs,
                  uint64_t seed, bool warm_start) {
  std::printf(
      "| model | GPUs | megatron ms | grid search s (runs) | megatron's choice | rainbow-3d ms "
      "| ratio | rainbow-3d search s | simulator runs | runs to 5%% | rainbow-3d's shape | its "
      "layers per stage |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  double log_sum = 0;
  int n = 0;
  try {
    for (const Row& r : rows) {
      if (!only.empty() && only != r.label) continue;
      log_sum += std::log(versus_rainbow_3d(r, runs, seed, warm_start));
      ++n;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "megatron_grid: %s\n", e.what());
    return 1;
  }
  if (n > 0) {
    std::printf("\ngeomean ratio rainbow-3d / megatron: %.3f over %d rows\n", std::exp(log_sum / n),
                n);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  double seconds = 10;
  bool rainbow = false, warm_start = true, cp_ep = false;
  int64_t runs = 300;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--rainbow-3d") {
      rainbow = true;
    } else if (a == "--cp-ep") {
      cp_ep = true;
    } else if (a == "--no-warm-start") {
      warm_start = false;
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoll(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr,
                   "usage: megatron_grid [--only NAME] [--seconds S]\n"
                   "       megatron_grid --rainbow-3d [--cp-ep] [--only NAME] [--runs N] "
                   "[--seed S] [--no-warm-start]\n");
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
  if (rainbow) {
    const std::string h100 = "datasets/clusters/h100_ib_4node.cluster.yaml";
    const std::string h100x64 = "datasets/clusters/h100_ib_64node.cluster.yaml";
    const MegatronConfig none;
    const std::vector<Row> r3rows = {
        {"gpt3-125m", a100, a100p, 12, 768, 12, 2048, 64, none, ""},
        rows[0],
        rows[1],
        {"gpt3-2.7b", h100, h100p, 32, 2560, 32, 2048, 128, none, ""},
        rows[2],
        // Small global batches: data parallelism alone cannot use the devices.
        {"gpt3-1.3b-b8", a100, a100p, 24, 2048, 16, 2048, 8, none, ""},
        {"gpt3-6.7b-b16", h100, h100p, 32, 4096, 32, 2048, 16, none, ""},
        // Sizes that need model parallelism on H100s: GPT-3 13B on 4 nodes, GPT-NeoX-20B's
        // shape (Black et al. 2022: 44 layers, d 6144, 64 heads; 44 layers split evenly
        // only into 2, 4 or 11 stages) and Megatron-LM's 39.1B (Narayanan et al. 2021,
        // Table 1: 48 layers, d 8192, 64 heads) on the first 8 nodes of the 64-node cluster,
        // and GPT-3 175B on all 64 nodes.
        {"gpt3-13b", h100, h100p, 40, 5120, 40, 2048, 256, none, ""},
        {"neox-20b", h100x64, h100p, 44, 6144, 64, 2048, 512, none, "", 64},
        {"megatron-39b", h100x64, h100p, 48, 8192, 64, 2048, 512, none, "", 64},
        {"gpt3-175b", h100x64, h100p, 96, 12288, 96, 2048, 1536, none, ""},
    };
    // Expert and context parallelism: the shipped Hugging Face configs.
    const std::vector<Row> cp_ep_rows = {
        {"mixtral-8x7b", h100x64, h100p, 0, 0, 0, 4096, 256, none, "", 64,
         "datasets/models/hf/mixtral_8x7b.config.json"},
        {"llama3-8b-128k", h100x64, h100p, 0, 0, 0, 131072, 16, none, "", 64,
         "datasets/models/hf/llama3_8b.config.json"},
    };
    return rainbow_table(cp_ep ? cp_ep_rows : r3rows, only, runs, seed, warm_start);
  }
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
