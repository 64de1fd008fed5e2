// Search wall time of every registered placement method (agents/api/placer.h) on layered random
// DAGs (datasets/synthetic.h, seed 42, 16 ops per level) of 1k and 10k forward ops,
// expanded to training steps (backward + Adam updates: 1k -> ~2.3k ops, 10k -> ~23k ops),
// on the 8 GPUs of datasets/clusters/dgx1_p100.cluster.yaml. anneal runs with a fixed
// budget of 200 simulator evaluations. Counters: ops (of the training step), step_ms (the
// plan's simulated step time), speedup (over everything on gpu0).
// Results: docs/results.md ("Classical placers").
//
//   ./build/bench/placers_bench --benchmark_counters_tabular=true
//   ./build/bench/placers_bench --benchmark_filter='/1000/'      # the 1k graphs only
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <memory>

#include "agents/api/placer.h"
#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"

namespace placer {
namespace {

constexpr int64_t kAnnealEvaluations = 200;

std::string cluster_path() {
  const std::filesystem::path here = std::filesystem::path(__FILE__).parent_path().parent_path();
  const std::filesystem::path p = here / "datasets/clusters/dgx1_p100.cluster.yaml";
  return std::filesystem::exists(p) ? p.string() : "datasets/clusters/dgx1_p100.cluster.yaml";
}

struct Setup {
  Graph graph;
  Cluster cluster;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<Simulator> sim;
  double single_step = 0;
};

Setup& setup(int forward_ops) {
  static std::map<int, std::unique_ptr<Setup>> cache;
  auto& s = cache[forward_ops];
  if (!s) {
    LayeredRandomOptions o;
    o.n_ops = forward_ops;
    o.width = 16;
    o.seed = 42;
    s = std::unique_ptr<Setup>(new Setup{expand_training_step(make_layered_random(o)),
                                         load_cluster_yaml(cluster_path()), nullptr, nullptr, 0});
    s->cost = std::make_unique<CostModel>(s->cluster, default_profile());
    s->sim = std::make_unique<Simulator>(s->graph, s->cluster, *s->cost);
    s->single_step = s->sim->run(Plan::single_device(s->graph, 0)).step_time;
  }
  return *s;
}

void bm_method(benchmark::State& state, const std::string& method) {
  Setup& s = setup(static_cast<int>(state.range(0)));
  SearchBudget budget;
  budget.seed = 1;
  if (method == "anneal") budget.max_evaluations = kAnnealEvaluations;
  Problem p{s.graph, s.cluster, *s.cost, *s.sim, {}};
  double step = 0;
  for (auto _ : state) {
    try {
      Plan plan = make_placer(method)->search(p, budget);
      benchmark::DoNotOptimize(plan.placement.data());
      state.PauseTiming();
      step = s.sim->run(plan).step_time;
      state.ResumeTiming();
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
  state.counters["ops"] = double(s.graph.num_ops());
  state.counters["step_ms"] = step * 1e3;
  state.counters["speedup"] = step > 0 ? s.single_step / step : 0;
}

const bool registered = [] {
  for (const MethodInfo& m : placer_methods()) {
    for (int n : {1000, 10000}) {
      benchmark::RegisterBenchmark(("place/" + m.name).c_str(), bm_method, m.name)
          ->Arg(n)
          ->Unit(benchmark::kMillisecond)
          ->Iterations(n >= 10000 ? 1 : 3);
    }
  }
  return true;
}();

}  // namespace
}  // namespace placer

BENCHMARK_MAIN();
