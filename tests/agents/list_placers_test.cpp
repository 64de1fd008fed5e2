// Tests of the list-scheduling placers (agents/classical/list_placers.cpp): validity on a transformer
// training step, expert block boundaries, a hand ETF schedule, hash seeding, memory
// capacity and determinism.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "agents/classical/list_placers_common.h"
#include "agents/api/placer.h"
#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"

namespace placer {
namespace {

const std::vector<std::string> kListMethods = {"single", "expert", "hash", "critical-path",
                                               "m-topo", "m-etf",  "m-sct", "tf-greedy"};
const std::vector<std::string> kMemoryMethods = {"expert", "critical-path", "m-topo",
                                                 "m-etf",  "m-sct",         "tf-greedy"};

/// k identical GPUs in one host: 10 TFLOP/s (f32 and f16), 1 TB/s, no launch overhead,
/// links of 10 us + 10 GB/s per pair (1 MB moves in 110 us).
Cluster make_cluster(int k, uint64_t memory = 16ull << 30) {
  DeviceSpec s;
  s.model = "gpu10t";
  s.peak_flops[static_cast<int>(DType::kF32)] = 10e12;
  s.peak_flops[static_cast<int>(DType::kF16)] = 10e12;
  s.memory_bandwidth = 1e12;
  s.memory_bytes = memory;
  s.launch_overhead = 0;
  Cluster c;
  c.name = "test";
  c.add_host("host0", s, k);
  c.set_link(LinkLevel::kIntraHost, LinkSpec{"pcie", 10e-6, 10e9, LinkSharing::kPerPair});
  return c;
}

/// A graph + cluster + cost model (efficiency 1: hand-computable) + simulator.
struct Fixture {
  Fixture(Graph graph, Cluster cl)
      : g(std::move(graph)), c(std::move(cl)), cost(c, uniform_profile(1.0)), sim(g, c, cost) {}
  Problem problem() { return Problem{g, c, cost, sim, {}}; }
  Plan run(const std::string& method, uint64_t seed = 1) {
    SearchBudget b;
    b.seed = seed;
    Problem p = problem();
    return make_placer(method)->search(p, b);
  }
  Graph g;
  Cluster c;
  CostModel cost;
  Simulator sim;
};

Graph transformer_step() {
  TransformerOptions t;
  t.layers = 2;
  t.d_model = 256;
  t.heads = 4;
  t.seq_len = 64;
  t.batch = 4;
  t.vocab = 4000;
  return expand_training_step(make_transformer(t));
}

TEST(ListPlacers, AllRegistered) {
  for (const std::string& m : kListMethods) EXPECT_EQ(make_placer(m)->name(), m);
}

TEST(ListPlacers, ValidPlansOnTransformerStep) {
  for (int k : {2, 4}) {
    Fixture f(transformer_step(), make_cluster(k));
    for (const std::string& m : kListMethods) {
      SCOPED_TRACE(m + " on " + std::to_string(k) + " GPUs");
      const Plan plan = f.run(m);
      EXPECT_EQ(plan.method, m);
      EXPECT_NO_THROW(plan.validate(f.g, f.c));
      const SimResult r = f.sim.run(plan);
      EXPECT_FALSE(r.oom);
      EXPECT_GT(r.step_time, 0);
      // Backward and update ops sit with their forward op.
      for (OpId o = 0; o < f.g.num_ops(); ++o) {
        const OpId fw = f.g.op(o).forward_op;
        if (fw != kNoOp) {
          EXPECT_EQ(plan.placement[o], plan.placement[fw]) << f.g.op(o).name;
        }
      }
    }
    // Expert: forward ops in topological order never go back to an earlier device, and
    // every device gets a block.
    const Plan e = f.run("expert");
    int last = 0;
    std::vector<int> count(k, 0);
    for (OpId o : f.g.topo_order()) {
      if (f.g.op(o).phase != Phase::kForward) continue;
      EXPECT_GE(e.placement[o], last) << f.g.op(o).name;
      last = e.placement[o];
      ++count[last];
    }
    for (int d = 0; d < k; ++d) EXPECT_GT(count[d], 0) << "device " << d;
  }
}

TEST(ListPlacers, OnlyTheProblemDevices) {
  Fixture f(transformer_step(), make_cluster(4));
  for (const std::string& m : kListMethods) {
    SCOPED_TRACE(m);
    Problem p = f.problem();
    p.devices = {3, 1};
    const Plan plan = make_placer(m)->search(p, SearchBudget{});
    std::vector<int> count(4, 0);
    for (int d : plan.placement) ++count[d];
    EXPECT_EQ(count[0] + count[2], 0);
    // The spreading methods use both; the list schedulers may keep a small graph on one.
    if (m == "expert" || m == "hash" || m == "m-topo") {
      EXPECT_GT(count[1] * count[3], 0);
    }
  }
  // single: both have the same memory and speed, so the first of the problem's devices.
  Problem p = f.problem();
  p.devices = {3, 1};
  EXPECT_EQ(make_placer("single")->search(p, SearchBudget{}).placement[0], 3);
}

std::vector<int> chain_devices(const Fixture& f, int n) {
  std::vector<int> d;
  const Plan p = const_cast<Fixture&>(f).run("expert");
  for (int i = 0; i < n; ++i) d.push_back(p.placement[f.g.find_op("chain." + std::to_string(i))]);
  return d;
}

TEST(ListPlacers, ExpertBlocksOnEqualChain) {
  ChainOptions o;
  o.n = 8;
  Fixture f8(make_chain(o), make_cluster(4));
  EXPECT_EQ(chain_devices(f8, 8), (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  o.n = 12;
  Fixture f12(make_chain(o), make_cluster(4));
  EXPECT_EQ(chain_devices(f12, 12), (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}));
  // 10 ops on 4 devices: the bottleneck is 3 ops; boundaries move towards an even split.
  o.n = 10;
  Fixture f10(make_chain(o), make_cluster(4));
  EXPECT_EQ(chain_devices(f10, 10), (std::vector<int>{0, 0, 0, 1, 1, 2, 2, 2, 3, 3}));
}

TEST(ListPlacers, ExpertMinimisesTheLargestBlock) {
  // Times 100, 100, 100, 100, 400 us: {4 ops | last} = 400 us beats {3 | 2} = 500 us.
  ChainOptions o;
  o.per_op_flops = {1e9, 1e9, 1e9, 1e9, 4e9};
  Fixture f(make_chain(o), make_cluster(2));
  EXPECT_EQ(chain_devices(f, 5), (std::vector<int>{0, 0, 0, 0, 1}));
}

TEST(ListPlacers, ExpertWeighsBlocksByDeviceSpeed) {
  // gpu1 is 3x faster: 2 ops on gpu0 (200 us) and 6 on gpu1 (200 us) is the best split.
  Cluster c = make_cluster(1);
  DeviceSpec fast = c.device(0).spec;
  fast.peak_flops[static_cast<int>(DType::kF32)] = 30e12;
  c.add_device(0, "host0/fast", fast);
  ChainOptions o;
  o.n = 8;
  Fixture f(make_chain(o), std::move(c));
  EXPECT_EQ(chain_devices(f, 8), (std::vector<int>{0, 0, 1, 1, 1, 1, 1, 1}));
}

/// a -> {b, c} -> d, 1 MB tensors: a, d 100 us; b, c 1000 us (forward only).
Graph diamond() {
  GraphBuilder b("diamond");
  const TensorId x = b.add_tensor("x", 1000000);
  const TensorId ta = b.add_tensor("a.out", 1000000);
  const TensorId tb = b.add_tensor("b.out", 1000000);
  const TensorId tc = b.add_tensor("c.out", 1000000);
  const TensorId td = b.add_tensor("d.out", 1000000);
  auto op = [&](const std::string& name, double flops, std::vector<TensorId> in, TensorId out) {
    Op o;
    o.name = name;
    o.type = "MatMul";
    o.category = OpCategory::kMatMul;
    o.flops = flops;
    o.inputs = std::move(in);
    o.outputs = {out};
    b.add_op(o);
  };
  op("a", 1e9, {x}, ta);
  op("b", 1e10, {ta}, tb);
  op("c", 1e10, {ta}, tc);
  op("d", 1e9, {tb, tc}, td);
  return b.build();
}

TEST(ListPlacers, EtfMatchesHandScheduleOnDiamond) {
  Fixture f(diamond(), make_cluster(2));
  // Hand ETF: a@0 [0, 100us]; b and c both start earliest on gpu0 (100 us; gpu1 210 us
  // after the 110 us transfer): b first (lower rank), [100, 1100]. c: gpu0 1100 vs gpu1
  // 210 -> gpu1 [210, 1210]. d: gpu0 max(1100, 1210 + 110) = 1320 vs gpu1
  // max(1100 + 110, 1210) = 1210 -> gpu1 [1210, 1310].
  const Plan p = f.run("m-etf");
  EXPECT_EQ(p.placement, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_NEAR(f.sim.run(p).step_time, 1310e-6, 1e-9);
  // SCT: a's favourite child is b (equal bytes, lower rank), b's is d; same schedule here.
  EXPECT_EQ(f.run("m-sct").placement, (std::vector<int>{0, 0, 1, 1}));
  // tf-greedy in topological order: b on gpu0 (finish 1100 vs 1210), c on gpu1, d on gpu1.
  EXPECT_EQ(f.run("tf-greedy").placement, (std::vector<int>{0, 0, 1, 1}));
}

TEST(ListPlacers, SctKeepsTheFavouriteChildWithItsParent) {
  // a (100 us) -> w (1000 us, 1 MB), a -> p (100 us, 2 MB), p -> c (1000 us, 1 MB); ids
  // and ranks a 0, w 1, p 2, c 3.
  GraphBuilder b("fork");
  const TensorId x = b.add_tensor("x", 1000000);
  const TensorId aw = b.add_tensor("a.w", 1000000);
  const TensorId ap = b.add_tensor("a.p", 2000000);
  const TensorId pc = b.add_tensor("p.c", 1000000);
  const TensorId wo = b.add_tensor("w.out", 1000000);
  const TensorId co = b.add_tensor("c.out", 1000000);
  auto op = [&](const std::string& name, double flops, TensorId in, std::vector<TensorId> out) {
    Op o;
    o.name = name;
    o.type = "MatMul";
    o.category = OpCategory::kMatMul;
    o.flops = flops;
    o.inputs = {in};
    o.outputs = std::move(out);
    b.add_op(o);
  };
  op("a", 1e9, x, {aw, ap});
  op("w", 1e10, aw, {wo});
  op("p", 1e9, ap, {pc});
  op("c", 1e10, pc, {co});
  Fixture f(b.build(), make_cluster(2));
  // ETF: a@0 [0, 100]; w and p both start at 100 on gpu0, w wins (rank) [100, 1100]; p on
  // gpu1 after the 210 us transfer [310, 410]; c follows on gpu1 [410, 1410].
  const Plan etf = f.run("m-etf");
  EXPECT_EQ(etf.placement, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_NEAR(f.sim.run(etf).step_time, 1410e-6, 1e-9);
  // SCT: a's favourite child is p (2 MB), p's is c: a, p [100, 200], c [200, 1200] on gpu0;
  // w on gpu1 after the 110 us transfer [210, 1210].
  const Plan sct = f.run("m-sct");
  EXPECT_EQ(sct.placement, (std::vector<int>{0, 1, 0, 0}));
  EXPECT_NEAR(f.sim.run(sct).step_time, 1210e-6, 1e-9);
}

TEST(ListPlacers, HashDeterministicPerSeed) {
  Fixture f(transformer_step(), make_cluster(4));
  const Plan a = f.run("hash", 7);
  EXPECT_EQ(a.placement, f.run("hash", 7).placement);
  EXPECT_NE(a.placement, f.run("hash", 8).placement);
  std::vector<int> count(4, 0);
  for (int d : a.placement) ++count[d];
  for (int d = 0; d < 4; ++d) EXPECT_GT(count[d], 0);
}

/// Chain of 8 ops with 256 MiB of parameters each, as a training step with Adam: 1 GiB
/// resident per op (parameter, gradient, two moments) by placer.h's estimate.
Graph heavy_chain_step() {
  ChainOptions o;
  o.n = 8;
  o.param_bytes = 256ull << 20;
  return expand_training_step(make_chain(o));
}

TEST(ListPlacers, MemoryRespectingWhenParamsExceedEveryDevice) {
  // 8 GiB resident; devices of 3.5 GiB: no single device holds it, 4 of them do.
  Fixture f(heavy_chain_step(), make_cluster(4, 3584ull << 20));
  EXPECT_TRUE(f.sim.run(f.run("single")).oom);
  for (const std::string& m : kMemoryMethods) {
    SCOPED_TRACE(m);
    const Plan plan = f.run(m);
    EXPECT_NO_THROW(plan.validate(f.g, f.c));
    EXPECT_FALSE(f.sim.run(plan).oom);
  }
}

TEST(ListPlacers, MTopoFillsMemorySharesInOrder) {
  // Each anchor carries 1 GiB resident + its 1 MiB output: a quarter of the estimate is
  // exactly two anchors, so chain.i lands on device i / 2 (its backward and update too).
  Fixture f(heavy_chain_step(), make_cluster(4, 3584ull << 20));
  const Plan p = f.run("m-topo");
  for (int i = 0; i < 8; ++i) {
    const OpId o = f.g.find_op("chain." + std::to_string(i));
    EXPECT_EQ(p.placement[o], i / 2) << i;
    EXPECT_EQ(p.placement[f.g.find_op("chain." + std::to_string(i) + "/update")], i / 2) << i;
  }
}

TEST(ListPlacers, SimulatorCheckFallsBackToMemoryBalancing) {
  Fixture f(heavy_chain_step(), make_cluster(4, 3584ull << 20));
  Problem problem = f.problem();
  const list_sched::ListContext c = list_sched::make_context(problem);
  // Everything on device 0 OOMs in the simulation: the check returns memory balancing.
  const Plan p = list_sched::check_memory(c, std::vector<int>(f.g.num_ops(), 0), "test");
  EXPECT_EQ(p.placement, list_sched::to_plan(c, list_sched::memory_balanced(c), "x").placement);
  EXPECT_FALSE(f.sim.run(p).oom);
  // A plan that fits is kept as it is.
  Fixture small(diamond(), make_cluster(2));
  Problem sp = small.problem();
  const list_sched::ListContext sc = list_sched::make_context(sp);
  EXPECT_EQ(list_sched::check_memory(sc, {1, 1, 1, 1}, "test").placement,
            (std::vector<int>{1, 1, 1, 1}));
}

TEST(ListPlacers, ClearErrorWhenNothingFits) {
  // 8 GiB resident; 4 devices of 1.5 GiB = 6 GiB.
  Fixture f(heavy_chain_step(), make_cluster(4, 1536ull << 20));
  for (const std::string& m : kMemoryMethods) {
    SCOPED_TRACE(m);
    try {
      f.run(m);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("needs 8"), std::string::npos) << msg;
      EXPECT_NE(msg.find("cluster has 6"), std::string::npos) << msg;
    }
  }
  // single still answers; the simulation reports the OOM.
  EXPECT_TRUE(f.sim.run(f.run("single")).oom);
}

TEST(ListPlacers, SingleTakesTheLargestDevice) {
  DeviceSpec s;
  s.peak_flops[static_cast<int>(DType::kF32)] = 10e12;
  s.memory_bandwidth = 1e12;
  s.memory_bytes = 8ull << 30;
  Cluster c;
  c.add_host("h0", s, 1);
  s.memory_bytes = 16ull << 30;
  c.add_host("h1", s, 2);
  c.set_link(LinkLevel::kIntraHost, LinkSpec{"pcie", 10e-6, 10e9, LinkSharing::kPerPair});
  c.set_link(LinkLevel::kInterHost, LinkSpec{"eth", 10e-6, 1e9, LinkSharing::kPerPair});
  Fixture f(diamond(), std::move(c));
  EXPECT_EQ(f.run("single").placement, (std::vector<int>{1, 1, 1, 1}));
}

TEST(ListPlacers, Deterministic) {
  LayeredRandomOptions o;
  o.n_ops = 300;
  o.seed = 3;
  Fixture f(expand_training_step(make_layered_random(o)), make_cluster(4));
  for (const std::string& m : kListMethods) {
    SCOPED_TRACE(m);
    EXPECT_EQ(f.run(m, 5).placement, f.run(m, 5).placement);
  }
}

}  // namespace
}  // namespace placer
