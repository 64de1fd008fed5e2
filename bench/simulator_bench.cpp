// Simulator speed: simulated ops per second on layered random DAGs (datasets/synthetic.h,
// seed 42, 16 ops per level) placed round-robin by level on the 8 GPUs of a DGX-1, as a
// forward graph and as the expanded training step (backward + Adam updates).
// Results: docs/results.md ("Simulator speed").
//
//   ./build/bench/simulator_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <map>
#include <memory>

#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/training_step.h"

namespace placer {
namespace {

// 8x P100 DGX-1, as datasets/clusters/dgx1_p100.cluster.yaml (sources there): 10.6 TFLOP/s
// f32, 21.2 f16, 732 GB/s HBM2, 16 GB; NVLink hybrid cube-mesh, 20 GB/s per direction
// between linked pairs, 10 GB/s (PCIe + QPI) between the others; a channel per pair.
Cluster dgx1_like() {
  DeviceSpec p100;
  p100.model = "P100-SXM2-16GB";
  p100.peak_flops[static_cast<int>(DType::kF64)] = 5.3e12;
  p100.peak_flops[static_cast<int>(DType::kF32)] = 10.6e12;
  p100.peak_flops[static_cast<int>(DType::kF16)] = 21.2e12;
  p100.memory_bandwidth = 732e9;
  p100.memory_bytes = 16ull << 30;
  p100.launch_overhead = 5e-6;
  Cluster c;
  c.name = "dgx1-p100";
  c.add_host("dgx1", p100, 8);
  LinkSpec nvlink;
  nvlink.type = "nvlink";
  nvlink.latency = 5e-6;
  nvlink.bandwidth = 20e9;
  nvlink.sharing = LinkSharing::kPerPair;
  c.set_link(LinkLevel::kIntraHost, nvlink);
  std::vector<double> bw(64, 10e9);
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      const bool same_quad = a / 4 == b / 4;
      if (a == b || same_quad || (a % 4) == (b % 4)) bw[a * 8 + b] = 20e9;
    }
  }
  c.set_bandwidth_matrix(bw);
  return c;
}

struct Setup {
  Graph graph;
  Cluster cluster;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<Simulator> sim;
  Plan plan;
};

// Built once per (size, training) and reused by every repetition.
Setup& setup(int n_ops, bool training) {
  static std::map<std::pair<int, bool>, std::unique_ptr<Setup>> cache;
  auto& s = cache[{n_ops, training}];
  if (s) return *s;
  s = std::make_unique<Setup>();
  LayeredRandomOptions o;
  o.n_ops = n_ops;
  o.width = 16;
  o.seed = 42;
  Graph fwd = make_layered_random(o);
  s->graph = training ? expand_training_step(fwd) : std::move(fwd);
  s->cluster = dgx1_like();
  s->cost = std::make_unique<CostModel>(s->cluster, default_profile());
  s->sim = std::make_unique<Simulator>(s->graph, s->cluster, *s->cost);
  s->plan.placement.resize(s->graph.num_ops());
  for (OpId i = 0; i < s->graph.num_ops(); ++i) {
    s->plan.placement[i] = std::max(0, s->graph.op(i).layer) % 8;  // round-robin by level
  }
  return *s;
}

void run(benchmark::State& state, bool training) {
  Setup& s = setup(static_cast<int>(state.range(0)), training);
  SimOptions opts;
  uint64_t ops = 0;
  double step = 0;
  for (auto _ : state) {
    const SimResult r = s.sim->run(s.plan, opts);
    ops += r.simulated_ops;
    step = r.step_time;
    benchmark::ClobberMemory();
  }
  state.counters["ops"] = static_cast<double>(s.graph.num_ops());
  state.counters["ops/s"] =
      benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
  state.counters["step_ms"] = step * 1e3;
}

void BM_SimulateForward(benchmark::State& state) { run(state, false); }
void BM_SimulateTrainingStep(benchmark::State& state) { run(state, true); }

BENCHMARK(BM_SimulateForward)->Arg(1000)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateTrainingStep)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(50000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace placer

BENCHMARK_MAIN();
