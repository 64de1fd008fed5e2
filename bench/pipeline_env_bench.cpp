// Pipeline-cut environment speed (env/pipeline_env.h): environment steps per second, one
// episode = reset() + S - 1 step() calls with seeded random legal cuts, without the terminal
// simulation (simulate = false: feature and mask updates only) and with it. Graphs: the
// imported 12-layer transformer encoder (datasets/models/transformer_enc12_d768.graph.json)
// and a generated 24-layer transformer (datasets/synthetic.h), both expanded into training
// steps; cluster: Auto-MAP configuration B (3 servers x 8 V100, NVLink, 25 Gbit/s between
// servers), as datasets/clusters/automap_config_b.cluster.yaml. No pruning: every module
// boundary is a candidate (and, with scopes:0, every forward position of the encoder).
// Target: >= 2,000 steps/s on one core.
// Results: docs/pipeline_env.md ("Speed").
//
//   ./build/bench/pipeline_env_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "datasets/synthetic.h"
#include "env/pipeline_env.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/cluster/cluster.h"
#include "src/graph/training_step.h"
#include "src/io/graph_json.h"

namespace placer {
namespace {

// Auto-MAP configuration B: 3 servers x 8 V100-SXM2-16GB; one NVLink 2.0 link (25 GB/s per
// direction) per GPU pair; one 25 Gbit/s NIC per server.
Cluster automap_b() {
  DeviceSpec v100;
  v100.model = "V100-SXM2-16GB";
  v100.peak_flops[static_cast<int>(DType::kF64)] = 7.8e12;
  v100.peak_flops[static_cast<int>(DType::kF32)] = 15.7e12;
  v100.peak_flops[static_cast<int>(DType::kF16)] = 125e12;
  v100.memory_bandwidth = 900e9;
  v100.memory_bytes = 16ull << 30;
  v100.launch_overhead = 5e-6;
  Cluster c;
  c.name = "automap-config-b";
  for (int h = 0; h < 3; ++h) c.add_host("server" + std::to_string(h), v100, 8);
  LinkSpec nvlink;
  nvlink.type = "nvlink";
  nvlink.latency = 5e-6;
  nvlink.bandwidth = 25e9;
  nvlink.sharing = LinkSharing::kPerPair;
  c.set_link(LinkLevel::kIntraHost, nvlink);
  LinkSpec eth;
  eth.type = "ethernet";
  eth.latency = 50e-6;
  eth.bandwidth = 25e9 / 8;
  eth.sharing = LinkSharing::kPerHost;
  c.set_link(LinkLevel::kInterHost, eth);
  return c;
}

std::string source_dir() {
  std::string f = __FILE__;  // <source>/bench/pipeline_env_bench.cpp
  for (int up = 0; up < 2; ++up) {
    const size_t slash = f.find_last_of('/');
    f = slash == std::string::npos ? "." : f.substr(0, slash);
  }
  return f;
}

Graph make_graph(int which) {
  if (which == 0) {
    Graph g = load_graph_json(source_dir() + "/datasets/models/transformer_enc12_d768.graph.json");
    return g.is_training_step() ? g : expand_training_step(g);
  }
  TransformerOptions t;
  t.layers = 24;
  t.d_model = 1024;
  t.heads = 16;
  t.seq_len = 512;
  t.batch = 32;
  return expand_training_step(make_transformer(t));
}

struct Problem {
  Graph graph;
  Cluster cluster;
  std::unique_ptr<CostModel> cost;
};

Problem& problem(int which) {
  static std::map<int, std::unique_ptr<Problem>> cache;
  auto& p = cache[which];
  if (!p) {
    p = std::make_unique<Problem>();
    p->graph = make_graph(which);
    p->cluster = automap_b();
    p->cost = std::make_unique<CostModel>(p->cluster, default_profile());
  }
  return *p;
}

// Args: graph (0 = imported encoder, 1 = generated 24 layers), stages, simulate (0/1),
// scopes (1 = pivots on module boundaries, 0 = every forward position: ~40x more pivots).
void BM_PipelineEnvEpisode(benchmark::State& state) {
  Problem& p = problem(static_cast<int>(state.range(0)));
  PipelineEnvOptions o;
  o.stages = static_cast<int>(state.range(1));
  o.simulate = state.range(2) != 0;
  o.prune = false;
  o.use_scopes = state.range(3) != 0;
  PipelineEnv env(p.graph, p.cluster, *p.cost, o);
  std::mt19937_64 rng(42);
  std::vector<int> legal;
  int64_t steps = 0;
  double reward = 0;
  for (auto _ : state) {
    env.reset();
    while (!env.done()) {
      legal.clear();
      const auto& mask = env.action_mask();
      for (size_t i = 0; i < mask.size(); ++i) {
        if (mask[i]) legal.push_back(static_cast<int>(i));
      }
      const PipelineStepResult r =
          env.step(legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)]);
      reward += r.reward;
      ++steps;
    }
    benchmark::DoNotOptimize(env.observation().data());
  }
  state.counters["steps/s"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
  state.counters["pivots"] = env.num_pivots();
  state.counters["ops"] = static_cast<double>(p.graph.num_ops());
  state.counters["mean_reward"] =
      state.iterations() > 0 ? reward / static_cast<double>(state.iterations()) : 0;
}
BENCHMARK(BM_PipelineEnvEpisode)
    ->ArgNames({"graph", "stages", "sim", "scopes"})
    ->ArgsProduct({{0, 1}, {4, 8}, {0, 1}, {1}})
    ->ArgsProduct({{0}, {4, 8}, {0, 1}, {0}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace placer

BENCHMARK_MAIN();
