// Plan format 1.1 in the simulator, by hand: replicated ops, stage grids, host dispatch,
// recomputation, ZeRO, non-overlapped gradient sync and the step barrier.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <vector>

#include <algorithm>

#include "sim_fixtures.h"
#include "simulator/simulator.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;
using testing::place;
using testing::TestGraph;

constexpr double kAlpha = 5e-6;
constexpr double kBeta = 1e9;

// Adds a `replicated` partition of each op over `devices`.
void replicate_on(Plan* p, std::initializer_list<OpId> ops, const std::vector<int>& devices) {
  for (OpId o : ops) {
    OpPartition q;
    q.op = o;
    q.replicated = true;
    q.devices = devices;
    p->partitions.push_back(q);
  }
}

TEST(TrainingFeatures, ReplicatedOpsRunWholeOnEveryDeviceWithoutCommunication) {
  TestGraph b;
  const TensorId x = b.tensor("x", 4000000);
  const OpId a = b.op("a", 2e9, {}, {x});
  const OpId c = b.op("c", 1e9, {x}, {});
  const Graph g = b.build();
  const Cluster cl = make_cluster(1, 2, link(kAlpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = place(g, {0, 0});
  replicate_on(&p, {a, c}, {0, 1});
  p.validate(g, cl);
  const SimResult r = sim.run(p);
  EXPECT_DOUBLE_EQ(r.step_time, 3e-3);  // the whole op on each device, in parallel
  EXPECT_DOUBLE_EQ(r.compute_time[1], 3e-3);
  EXPECT_EQ(r.num_collectives, 0u);
  EXPECT_EQ(r.num_transfers, 0u);
  EXPECT_EQ(r.peak_memory[1], 4000000u);  // x exists whole on both devices
}

TEST(TrainingFeatures, AStageIsATensorParallelByDataParallelGrid) {
  TestGraph b;
  const TensorId x = b.tensor("x", 4000000);
  const OpId a = b.op("a", 2e9, {}, {x});
  const OpId c = b.op("c", 2e9, {x}, {});
  const Graph g = b.build();
  const Cluster cl = make_cluster(1, 4, link(kAlpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p;
  p.pipeline.stages = {{{a, c}, {0, 1, 2, 3}}};
  // Four data-parallel copies: a quarter of the batch each.
  EXPECT_DOUBLE_EQ(sim.run(p).step_time, 1e-3);
  // A 2 x 2 grid: TP pairs {0, 1} and {2, 3}, each running half of the batch; the ops are
  // replicated inside a pair.
  p.pipeline.stages[0].tensor_parallel = 2;
  replicate_on(&p, {a, c}, {0, 1});
  p.placement.assign(g.num_ops(), 0);
  p.validate(g, cl);
  const SimResult r = sim.run(p);
  EXPECT_DOUBLE_EQ(r.step_time, 2e-3);
  for (int d = 0; d < 4; ++d) EXPECT_DOUBLE_EQ(r.compute_time[d], 2e-3) << d;
  EXPECT_EQ(r.peak_memory[3], r.peak_memory[1]);
}

TEST(TrainingFeatures, TinyKernelsAreHostBound) {
  constexpr int n = 10;
  constexpr double d = 10e-6;
  for (const double flops : {1e6, 1e9}) {
    TestGraph b;
    TensorId prev = kNoTensor;
    for (int i = 0; i < n; ++i) {
      const TensorId out = b.tensor("t" + std::to_string(i), 1000);
      b.op("k" + std::to_string(i), flops, prev == kNoTensor ? std::vector<TensorId>{}
                                                             : std::vector<TensorId>{prev},
           {out});
      prev = out;
    }
    const Graph g = b.build();
    const Cluster cl = make_cluster(1, 1, link(kAlpha, kBeta), link(0, 1e9));
    CostProfile prof = uniform_profile(1.0);
    prof.op(OpCategory::kMatMul).dispatch = d;
    const CostModel cost(cl, prof);
    Simulator sim(g, cl, cost);
    const double kernel = flops / 1e12;
    const double step = sim.run(place(g, std::vector<int>(n, 0))).step_time;
    if (kernel < d) {
      EXPECT_NEAR(step, n * d + kernel, 1e-12);  // each kernel waits for its issue
    } else {
      EXPECT_NEAR(step, d + n * kernel, 1e-12);  // only the first issue shows
    }
  }
}

// Two layers (a1 and a2 are 4 MB activations inside a layer, h1 / h2 the 1 MB layer
// outputs), a head, and backward ops by hand.
struct TwoLayers {
  Graph g;
  OpId f[5];
};

TwoLayers two_layers(const std::string& core_scope_of_f3 = "layer.1") {
  TestGraph b;
  const TensorId a1 = b.tensor("a1", 4000000), h1 = b.tensor("h1", 1000000);
  const TensorId a2 = b.tensor("a2", 4000000), h2 = b.tensor("h2", 1000000);
  const TensorId y = b.tensor("y", 1000);
  const TensorId g2 = b.tensor("g2", 1000000), ga2 = b.tensor("ga2", 1000000);
  const TensorId g1 = b.tensor("g1", 1000000), ga1 = b.tensor("ga1", 1000000);
  TwoLayers t;
  t.f[0] = b.op("f1", 1e9, {}, {a1});
  t.f[1] = b.op("f2", 2e9, {a1}, {h1});
  t.f[2] = b.op("f3", 1e9, {h1}, {a2});
  t.f[3] = b.op("f4", 2e9, {a2}, {h2});
  t.f[4] = b.op("f5", 1e9, {h2}, {y});
  for (int i = 0; i < 4; ++i) b.at(t.f[i]).layer = i / 2;
  b.at(t.f[2]).scope = core_scope_of_f3;
  b.op("b5", 1e9, {}, {g2}, Phase::kBackward, t.f[4]);
  b.op("b4", 4e9, {g2, a2}, {ga2}, Phase::kBackward, t.f[3]);
  b.op("b3", 2e9, {ga2, h1}, {g1}, Phase::kBackward, t.f[2]);
  b.op("b2", 4e9, {g1, a1}, {ga1}, Phase::kBackward, t.f[1]);
  b.op("b1", 2e9, {ga1}, {}, Phase::kBackward, t.f[0]);
  t.g = b.build();
  return t;
}

TEST(TrainingFeatures, FullRecomputationAddsOneForwardAndHoldsOneLayer) {
  const TwoLayers t = two_layers();
  const Cluster cl = make_cluster(1, 1, link(kAlpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(t.g, cl, cost);
  Plan p = place(t.g, std::vector<int>(t.g.num_ops(), 0));
  const SimResult none = sim.run(p);
  EXPECT_DOUBLE_EQ(none.step_time, 20e-3);  // 7 ms forward + 13 ms backward
  // At b4: a1, h1, a2 held for backward, g2 and ga2: 4 + 1 + 4 + 1 + 1 MB.
  EXPECT_EQ(none.peak_memory[0], 11000000u);
  p.recompute = Recompute::kFull;
  const SimResult full = sim.run(p);
  EXPECT_DOUBLE_EQ(full.step_time, 20e-3 + 6e-3);  // f1..f4 once more (f5 is no layer)
  // Only the layer outputs h1, h2 are kept; a layer's a-tensor comes back during its
  // backward: at b4 h1 + g2 + ga2 + a2 (rematerialised) = 7 MB, at b3 h1 + ga2 + g1 + a2.
  EXPECT_EQ(full.peak_memory[0], 7000000u);
}

TEST(TrainingFeatures, SelectiveRecomputationReRunsTheAttentionCoreOnly) {
  const TwoLayers t = two_layers("layer.1.core_attention");
  const Cluster cl = make_cluster(1, 1, link(kAlpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(t.g, cl, cost);
  Plan p = place(t.g, std::vector<int>(t.g.num_ops(), 0));
  p.recompute = Recompute::kSelective;
  const SimResult r = sim.run(p);
  EXPECT_DOUBLE_EQ(r.step_time, 20e-3 + 1e-3);  // f3 again
  // a2 (f3's output) is dropped after f4 and held again during layer 1's backward.
  EXPECT_EQ(r.peak_memory[0], 11000000u);
}

// f owns P bytes of parameters, its update S bytes of optimizer state; the gradient is G.
Graph zero_graph(uint64_t P, uint64_t S, uint64_t G) {
  TestGraph b;
  const TensorId y = b.tensor("y", 1000);
  const TensorId gw = b.tensor("gw", G, /*batch_scaled=*/false, /*param_grad=*/true);
  const OpId f = b.op("f", 1e9, {}, {y});
  b.at(f).param_bytes = P;
  b.op("f/grad", 1e9, {}, {gw}, Phase::kBackward, f);
  const OpId u = b.op("f/update", 1e9, {gw}, {}, Phase::kOptimizer, f);
  b.at(u).state_bytes = S;
  return b.build();
}

TEST(TrainingFeatures, ZeroShardsStateGradientsAndParameters) {
  const Graph g = zero_graph(4000000, 8000000, 4000000);
  const Cluster cl = make_cluster(1, 4, link(kAlpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = place(g, {0, 0, 0});
  p.data_parallel.replicas = 4;
  // Peak (during the backward op and the sync): parameters + state + gradient.
  const uint64_t expected[4] = {4000000 + 8000000 + 4000000, 4000000 + 2000000 + 4000000,
                                4000000 + 2000000 + 1000000, 1000000 + 2000000 + 1000000};
  for (int z = 0; z <= 3; ++z) {
    p.data_parallel.zero_stage = z;
    const SimResult r = sim.run(p);
    EXPECT_EQ(r.peak_memory[0], expected[z]) << "ZeRO-" << z;
    EXPECT_EQ(r.peak_memory[3], expected[z]) << "ZeRO-" << z;
  }
}

TEST(TrainingFeatures, ZeroThreeGathersParametersInForwardAndBackward) {
  const Graph g = zero_graph(4000000, 8000000, 4000000);
  const Cluster cl = make_cluster(1, 4, link(kAlpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = place(g, {0, 0, 0});
  p.data_parallel.replicas = 4;
  const double base = sim.run(p).step_time;
  p.data_parallel.zero_stage = 3;
  // Each of f and f/grad first all-gathers its whole 4 MB parameter from the 4 replicas'
  // 1 MB shards.
  const double gather =
      cost.collective_time(CollectiveKind::kAllGather, {0, 1, 2, 3}, 4000000, SyncScheme::kAuto);
  EXPECT_NEAR(sim.run(p).step_time, base + 2 * gather, 1e-12);
}

// ZeRO 1-3 synchronise gradients by reduce-scatter, then all-gather the updated parameter
// shards (Megatron's distributed optimizer), instead of one all-reduce.
TEST(TrainingFeatures, ZeroSyncIsAReduceScatterAndAnAllGather) {
  const Graph g = zero_graph(4000000, 8000000, 4000000);
  const Cluster cl = make_cluster(1, 4, link(kAlpha, kBeta), link(0, 1e9));
  CostProfile prof = uniform_profile(1.0);
  const CostModel cost(cl, prof);
  Simulator sim(g, cl, cost);
  Plan p = place(g, {0, 0, 0});
  p.data_parallel.replicas = 4;
  p.data_parallel.sync = SyncScheme::kTree;  // the all-reduce's own algorithm; ZeRO's are rings
  const std::vector<int> all = {0, 1, 2, 3};
  const double ar = cost.collective_time(CollectiveKind::kAllReduce, all, 4000000, SyncScheme::kTree);
  const double rs_ag =
      cost.collective_time(CollectiveKind::kReduceScatter, all, 4000000, SyncScheme::kAuto) +
      cost.collective_time(CollectiveKind::kAllGather, all, 4000000, SyncScheme::kAuto);
  const double base = sim.run(p).step_time;
  p.data_parallel.zero_stage = 1;
  EXPECT_NEAR(sim.run(p).step_time - base, rs_ag - ar, 1e-12);
  EXPECT_GT(std::abs(rs_ag - ar), 1e-5);  // the two models differ measurably here
}

TEST(TrainingFeatures, NonOverlappedSyncIsOneAllReduceAfterTheLastBackwardOp) {
  TestGraph b;
  const TensorId x = b.tensor("x", 1000), gx = b.tensor("gx", 1000);
  const TensorId g1 = b.tensor("g1", 2000000, false, true), g2 = b.tensor("g2", 2000000, false, true);
  const OpId f1 = b.op("f1", 1e9, {}, {x});
  const OpId f2 = b.op("f2", 1e9, {x}, {});
  b.op("b2", 2e9, {}, {g2, gx}, Phase::kBackward, f2);
  const OpId b1 = b.op("b1", 2e9, {gx}, {g1}, Phase::kBackward, f1);
  const Graph g = b.build();
  const Cluster cl = make_cluster(1, 2, link(kAlpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = place(g, {0, 0, 0, 0});
  p.data_parallel.replicas = 2;
  p.data_parallel.bucket_bytes = 1;  // one bucket per gradient
  SimOptions opt;
  opt.record_events = true;
  SimResult r = sim.run(p, opt);
  EXPECT_EQ(r.num_collectives, 2u);  // g2 during b1, g1 after it
  p.data_parallel.overlap = false;
  r = sim.run(p, opt);
  EXPECT_EQ(r.num_collectives, 1u);
  double b1_end = -1, coll_start = -1;
  for (const SimEvent& e : r.events) {
    if (e.kind == SimEvent::kCompute && e.op == b1) b1_end = e.end;
    if (e.kind == SimEvent::kCollective && e.device == 0) coll_start = e.start;
  }
  EXPECT_DOUBLE_EQ(b1_end, 3e-3);  // f1, f2 0.5 ms each (half the batch), b2, b1 1 ms
  EXPECT_DOUBLE_EQ(coll_start, b1_end);
  EXPECT_EQ(r.collective_bytes, 4000000u);
  EXPECT_NEAR(r.step_time,
              b1_end + cost.collective_time(CollectiveKind::kAllReduce, {0, 1}, 4000000,
                                            SyncScheme::kRing),
              1e-12);
}

TEST(TrainingFeatures, LossScalingAndClippingAllReduceBeforeTheOptimizer) {
  const Graph g = zero_graph(4000000, 8000000, 4000000);
  const Cluster cl = make_cluster(1, 2, link(kAlpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = place(g, {0, 0, 0});
  p.data_parallel.replicas = 2;
  const double base = sim.run(p).step_time;
  const double scalar =
      cost.collective_time(CollectiveKind::kAllReduce, {0, 1}, 4, SyncScheme::kAuto);
  p.precision.loss_scaling = true;
  EXPECT_NEAR(sim.run(p).step_time, base + scalar, 1e-12);
  p.precision.grad_clipping = true;
  EXPECT_NEAR(sim.run(p).step_time, base + 2 * scalar, 1e-12);
}

TEST(TrainingFeatures, ComputeDtypeSelectsThePeak) {
  TestGraph b;
  b.op("a", 1e9, {}, {});
  const Graph g = b.build();
  DeviceSpec s = testing::test_spec();
  s.peak_flops[static_cast<int>(DType::kF16)] = 4e12;
  Cluster cl;
  cl.name = "t";
  cl.add_host("h", s, 1);
  cl.set_link(LinkLevel::kIntraHost, link(kAlpha, kBeta));
  cl.set_link(LinkLevel::kInterHost, link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = place(g, {0});
  EXPECT_DOUBLE_EQ(sim.run(p).step_time, 1e-3);
  p.precision.compute_set = true;
  p.precision.compute = DType::kF16;
  EXPECT_DOUBLE_EQ(sim.run(p).step_time, 0.25e-3);
}

}  // namespace
}  // namespace placer
