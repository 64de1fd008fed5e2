#include "simulator/cost_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "sim_fixtures.h"
#include "src/graph/kernel_list.h"
#include "src/util/error.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;

Op make_op(OpCategory cat, double flops, DType dt = DType::kF32) {
  Op o;
  o.name = "op";
  o.category = cat;
  o.flops = flops;
  o.dtype = dt;
  return o;
}

TEST(CostModel, RooflineOpTime) {
  const Cluster c = make_cluster(1, 1, link(0, 1e9), link(0, 1e9));
  const CostModel half(c, uniform_profile(0.5));
  // Compute-bound: 1e9 / (1e12 * 0.5).
  EXPECT_DOUBLE_EQ(half.op_time(make_op(OpCategory::kMatMul, 1e9), 1000000, 0), 2e-3);
  // Memory-bound: 1e9 bytes / (1e12 B/s * 0.5).
  EXPECT_DOUBLE_EQ(half.op_time(make_op(OpCategory::kElementwise, 1e3), 1000000000, 0), 2e-3);
  // A quarter of the work.
  EXPECT_DOUBLE_EQ(half.op_time(make_op(OpCategory::kMatMul, 1e9), 1000000, 0, 0.25), 5e-4);
  // f16 is not listed on the device: falls back to the f32 peak.
  EXPECT_DOUBLE_EQ(half.op_time(make_op(OpCategory::kMatMul, 1e9, DType::kF16), 0, 0), 2e-3);
  // Inputs cost nothing, even with a launch overhead; empty ops cost only the launch.
  CostProfile p = uniform_profile(1.0);
  p.launch_overhead = 5e-6;
  const CostModel launch(c, p);
  EXPECT_EQ(launch.op_time(make_op(OpCategory::kInput, 1e9), 1000, 0), 0.0);
  EXPECT_DOUBLE_EQ(launch.op_time(make_op(OpCategory::kOther, 0), 0, 0), 5e-6);
  EXPECT_DOUBLE_EQ(launch.op_time(make_op(OpCategory::kMatMul, 1e9), 0, 0), 5e-6 + 1e-3);
}

TEST(CostModel, EfficiencyCurveUsesTheScaledSize) {
  const Cluster c = make_cluster(1, 1, link(0, 1e9), link(0, 1e9));
  CostProfile p = uniform_profile(1.0);
  p.op(OpCategory::kMatMul).compute = EfficiencyCurve::ramp({{8, 0.25}, {10, 0.75}});
  const CostModel m(c, p);
  // 1e10 FLOPs at 0.75; a tenth of it (1e9) at 0.5.
  EXPECT_DOUBLE_EQ(m.op_time(make_op(OpCategory::kMatMul, 1e10), 0, 0), 1e10 / (1e12 * 0.75));
  EXPECT_DOUBLE_EQ(m.op_time(make_op(OpCategory::kMatMul, 1e10), 0, 0, 0.1), 1e9 / (1e12 * 0.5));
}

TEST(CostModel, DtypeCurveReplacesTheCategoryCurve) {
  const Cluster c = make_cluster(1, 1, link(0, 1e9), link(0, 1e9));
  CostProfile p = uniform_profile(1.0);
  p.op(OpCategory::kMatMul).compute = EfficiencyCurve::constant(0.5);
  p.op(OpCategory::kMatMul).compute_by_dtype[DType::kBF16] = EfficiencyCurve::constant(0.25);
  const CostModel m(c, p);
  // 1e9 FLOPs at 1e12 FLOP/s: f32 at 0.5 of peak, bf16 at its own 0.25, f16 (no curve of
  // its own) at the category's 0.5.
  EXPECT_DOUBLE_EQ(m.op_time(make_op(OpCategory::kMatMul, 1e9, DType::kF32), 0, 0), 2e-3);
  EXPECT_DOUBLE_EQ(m.op_time(make_op(OpCategory::kMatMul, 1e9, DType::kBF16), 0, 0), 4e-3);
  EXPECT_DOUBLE_EQ(m.op_time(make_op(OpCategory::kMatMul, 1e9, DType::kF16), 0, 0), 2e-3);
  // A plan's compute dtype selects the curve too.
  EXPECT_DOUBLE_EQ(
      m.op_time(make_op(OpCategory::kMatMul, 1e9, DType::kF32), 0, 0, 1.0, DType::kBF16), 4e-3);
}

TEST(CostModel, DtypeMemoryCurveReplacesTheCategoryCurve) {
  const Cluster c = make_cluster(1, 1, link(0, 1e9), link(0, 1e9));
  CostProfile p = uniform_profile(1.0);
  p.op(OpCategory::kElementwise).memory = EfficiencyCurve::constant(0.8);
  p.op(OpCategory::kElementwise).memory_by_dtype[DType::kBF16] = EfficiencyCurve::constant(0.4);
  const CostModel m(c, p);
  const double bw = c.device(0).spec.memory_bandwidth;
  // 1e8 bytes: f32 at 0.8 of the bandwidth, bf16 at its own 0.4.
  EXPECT_DOUBLE_EQ(m.op_time(make_op(OpCategory::kElementwise, 0, DType::kF32), 100000000, 0),
                   1e8 / (bw * 0.8));
  EXPECT_DOUBLE_EQ(m.op_time(make_op(OpCategory::kElementwise, 0, DType::kBF16), 100000000, 0),
                   1e8 / (bw * 0.4));
}

TEST(CostModel, ListedKernelsEachLaunchAndRunAtTheirOwnRate) {
  const Cluster c = make_cluster(1, 1, link(0, 1e9), link(0, 1e9));
  CostProfile p = uniform_profile(1.0);
  p.launch_overhead = 2e-6;
  p.op(OpCategory::kElementwise).memory = EfficiencyCurve::constant(0.8);
  p.op(OpCategory::kDataMovement).memory = EfficiencyCurve::constant(0.25);
  p.op(OpCategory::kDataMovement).memory_by_dtype[DType::kF32] = EfficiencyCurve::constant(0.5);
  const CostModel m(c, p);
  const double bw = c.device(0).spec.memory_bandwidth;
  // An elementwise op standing for a 4e8-byte strided bf16 copy, a 2e8-byte fp32 one and a
  // 4e8-byte vectorised pass: 3 launches, 4e8 / 0.25 + 2e8 / 0.5 + 4e8 / 0.8 of bandwidth.
  Op o = make_op(OpCategory::kElementwise, 0, DType::kBF16);
  o.attrs = {
      {kKernelListAttr, format_kernel_list({{OpCategory::kDataMovement, DType::kBF16, 400000000},
                                            {OpCategory::kDataMovement, DType::kF32, 200000000},
                                            {OpCategory::kElementwise, DType::kBF16, 400000000}})},
      {kBackwardKernelListAttr, "elementwise:bf16:1000000000"}};
  const double forward = 3 * 2e-6 + (4e8 / 0.25 + 2e8 / 0.5 + 4e8 / 0.8) / bw;
  EXPECT_DOUBLE_EQ(m.op_time(o, 1000000000, 0), forward);
  // Half the work (a micro-batch of two): every kernel halves, the launches stay.
  EXPECT_DOUBLE_EQ(m.op_time(o, 1000000000, 0, 0.5), 3 * 2e-6 + (forward - 6e-6) / 2);
  // The backward op reads its own list: one kernel of 1e9 bytes at 0.8.
  o.phase = Phase::kBackward;
  EXPECT_DOUBLE_EQ(m.op_time(o, 1000000000, 0), 2e-6 + 1e9 / (bw * 0.8));
  // Without a list the op is one kernel at its category's rate.
  o.attrs.clear();
  EXPECT_DOUBLE_EQ(m.op_time(o, 1000000000, 0), 2e-6 + 1e9 / (bw * 0.8));
  // An entry that is not category:dtype:bytes names the op.
  o.attrs = {{kBackwardKernelListAttr, "elementwise:bf16"}};
  EXPECT_THROW(m.op_time(o, 1000, 0), ValidationError);
}

TEST(CostModel, TransferTimeWithProfileOverrides) {
  const Cluster c = make_cluster(2, 2, link(1e-6, 1e11), link(5e-6, 1e10));
  const CostModel plain(c, uniform_profile(1.0));
  EXPECT_DOUBLE_EQ(plain.transfer_time(0, 1, 1000000), 1e-6 + 1e6 / 1e11);
  EXPECT_DOUBLE_EQ(plain.transfer_time(1, 2, 1000000), 5e-6 + 1e6 / 1e10);
  EXPECT_EQ(plain.transfer_time(3, 3, 1000000), 0.0);
  CostProfile p = uniform_profile(1.0);
  p.link(LinkLevel::kInterHost).bandwidth_efficiency = 0.5;
  p.link(LinkLevel::kIntraHost).latency = 2e-6;
  p.link(LinkLevel::kIntraHost).bandwidth = 4e10;
  const CostModel over(c, p);
  EXPECT_DOUBLE_EQ(over.transfer_time(1, 2, 1000000), 5e-6 + 1e6 / (1e10 * 0.5));
  EXPECT_DOUBLE_EQ(over.transfer_time(0, 1, 1000000), 2e-6 + 1e6 / 4e10);
}

TEST(CostModel, RingAllReduceFormula) {
  const double alpha = 2e-6, beta = 1e10, n = 1e8;
  const Cluster c = make_cluster(1, 4, link(alpha, beta), link(1e-5, 1e9));
  const CostModel m(c, uniform_profile(1.0));
  const double p = 4;
  EXPECT_DOUBLE_EQ(
      m.collective_time(CollectiveKind::kAllReduce, {0, 1, 2, 3}, uint64_t(n), SyncScheme::kRing),
      2 * (p - 1) / p * n / beta + 2 * (p - 1) * alpha);
  EXPECT_DOUBLE_EQ(
      m.collective_time(CollectiveKind::kAllReduce, {0, 1}, uint64_t(n), SyncScheme::kRing),
      2 * 1.0 / 2 * n / beta + 2 * alpha);
  EXPECT_DOUBLE_EQ(
      m.collective_time(CollectiveKind::kAllGather, {0, 1, 2, 3}, uint64_t(n), SyncScheme::kRing),
      (p - 1) / p * n / beta + (p - 1) * alpha);
  EXPECT_DOUBLE_EQ(m.collective_time(CollectiveKind::kReduceScatter, {0, 1, 2, 3}, uint64_t(n),
                                     SyncScheme::kRing),
                   (p - 1) / p * n / beta + (p - 1) * alpha);
  EXPECT_DOUBLE_EQ(
      m.collective_time(CollectiveKind::kBroadcast, {0, 1, 2, 3}, uint64_t(n), SyncScheme::kRing),
      n / beta + (p - 1) * alpha);
  EXPECT_EQ(m.collective_time(CollectiveKind::kAllReduce, {2}, uint64_t(n), SyncScheme::kRing), 0);
}

TEST(CostModel, RingUsesTheSlowestLinkAndLargestLatency) {
  const Cluster c = make_cluster(2, 2, link(1e-6, 1e11), link(5e-6, 1e10));
  const CostModel m(c, uniform_profile(1.0));
  const double n = 1e8, p = 4;
  EXPECT_DOUBLE_EQ(
      m.collective_time(CollectiveKind::kAllReduce, {0, 1, 2, 3}, uint64_t(n), SyncScheme::kRing),
      2 * (p - 1) / p * n / 1e10 + 2 * (p - 1) * 5e-6);
}

TEST(CostModel, TreeHierarchicalAndParameterServer) {
  const double n = 1e8;
  for (LinkSharing nic : {LinkSharing::kPerDevice, LinkSharing::kPerHost}) {
    const Cluster c = make_cluster(2, 2, link(1e-6, 1e11), link(5e-6, 1e10, nic));
    CostProfile prof = uniform_profile(1.0);
    prof.all_reduce = CollectiveAlgorithm::kAuto;
    const CostModel m(c, prof);
    const std::vector<int> all = {0, 1, 2, 3};
    // Double binary tree: 2 * ceil(log2 4) * alpha + 2 n / beta, worst pair.
    const double tree = 2 * 2 * 5e-6 + 2 * n / 1e10;
    EXPECT_DOUBLE_EQ(
        m.collective_time(CollectiveKind::kAllReduce, all, uint64_t(n), SyncScheme::kTree), tree);
    // Intra-host reduce-scatter + all-gather (2 devices) around an inter-host ring all-reduce
    // (2 hosts) of n / 2 per NIC, or all of n when the host's devices share one NIC.
    const double chunk = nic == LinkSharing::kPerHost ? n : n / 2;
    const double hier = 2 * (0.5 * n / 1e11 + 1e-6) + (2 * 0.5 * chunk / 1e10 + 2 * 5e-6);
    EXPECT_DOUBLE_EQ(
        m.collective_time(CollectiveKind::kAllReduce, all, uint64_t(n), SyncScheme::kHierarchical),
        hier);
    // Sharded parameter server: push and pull (p - 1) shards of n / p through each port.
    const double ps = 2 * 3.0 / 4 * n / 1e10 + 2 * 3 * 5e-6;
    EXPECT_DOUBLE_EQ(m.collective_time(CollectiveKind::kAllReduce, all, uint64_t(n),
                                       SyncScheme::kParameterServer),
                     ps);
    const double ring = 2 * 3.0 / 4 * n / 1e10 + 2 * 3 * 5e-6;
    EXPECT_DOUBLE_EQ(
        m.collective_time(CollectiveKind::kAllReduce, all, uint64_t(n), SyncScheme::kAuto),
        std::min({ring, tree, hier, ps}));
  }
}

TEST(CostModel, AutoFollowsTheProfileChoice) {
  const Cluster c = make_cluster(1, 8, link(1e-5, 1e10), link(1e-5, 1e9));
  CostProfile p = uniform_profile(1.0);
  std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  // Small message: latency-bound, the tree (2 * 3 alpha) beats the ring (14 alpha).
  p.all_reduce = CollectiveAlgorithm::kAuto;
  const CostModel autom(c, p);
  const CollectiveGroup g = autom.make_group(all);
  EXPECT_EQ(autom.resolve_scheme(CollectiveKind::kAllReduce, g, 1000, SyncScheme::kAuto),
            SyncScheme::kTree);
  EXPECT_EQ(autom.resolve_scheme(CollectiveKind::kAllReduce, g, 1000000000, SyncScheme::kAuto),
            SyncScheme::kRing);
  EXPECT_EQ(autom.resolve_scheme(CollectiveKind::kAllReduce, g, 1000, SyncScheme::kRing),
            SyncScheme::kRing);
  p.all_reduce = CollectiveAlgorithm::kRing;
  const CostModel ring(c, p);
  EXPECT_DOUBLE_EQ(ring.collective_time(CollectiveKind::kAllReduce, all, 1000, SyncScheme::kAuto),
                   2 * 7.0 / 8 * 1000 / 1e10 + 2 * 7 * 1e-5);
}

TEST(CostModel, RejectsBadClusterAndProfile) {
  Cluster c = make_cluster(2, 1, link(0, 1e9), link(0, 0));  // inter-host link with no bandwidth
  EXPECT_THROW(CostModel(c, uniform_profile(1.0)), ValidationError);
  const Cluster ok = make_cluster(1, 2, link(0, 1e9), link(0, 1e9));
  CostProfile bad = uniform_profile(1.0);
  bad.op(OpCategory::kConv).memory = EfficiencyCurve::constant(0);
  EXPECT_THROW(CostModel(ok, bad), ValidationError);
}

}  // namespace
}  // namespace placer

namespace placer {
namespace {

// Each group's make_group bounds equal the largest latency and smallest bandwidth over its
// pairs of distinct devices.
void expect_bounds_are_the_worst_pair(const CostModel& cost,
                                      const std::vector<std::vector<int>>& groups) {
  for (const std::vector<int>& devs : groups) {
    double alpha = 0, beta = std::numeric_limits<double>::infinity();
    for (int a : devs) {
      for (int b : devs) {
        if (a == b) continue;
        alpha = std::max(alpha, cost.latency(a, b));
        beta = std::min(beta, cost.bandwidth(a, b));
      }
    }
    const CollectiveGroup g = cost.make_group(devs);
    EXPECT_EQ(g.all_alpha, alpha) << ::testing::PrintToString(devs);
    EXPECT_EQ(g.all_beta, beta) << ::testing::PrintToString(devs);
  }
}

// A group's tree / parameter-server bounds (its slowest, highest-latency pair) come from the
// link levels its devices span; they equal the bounds over every pair of distinct devices,
// on hosts mixing GPUs and a CPU, with a device listed twice and with a single device.
TEST(CollectiveGroupBounds, EqualTheWorstPairOnEveryLevel) {
  using testing::link;
  Cluster c = testing::make_cluster(3, 2, link(3e-6, 3e11), link(7e-6, 2.5e10));
  DeviceSpec cpu = testing::test_spec();
  cpu.kind = DeviceKind::kCpu;
  c.add_device(0, "host0/cpu0", cpu);
  c.set_link(LinkLevel::kHostDevice, link(11e-6, 1e10));
  const CostModel cost(c, uniform_profile(1.0));
  const std::vector<std::vector<int>> groups = {
      {0, 1}, {0, 6}, {0, 1, 6}, {0, 2}, {0, 1, 2, 3, 4, 5}, {1, 6, 4}, {2, 2, 3}, {5}, {3, 3}};
  expect_bounds_are_the_worst_pair(cost, groups);
}

/// Leaves of `hosts_per_leaf` hosts under a spine `ratio`:1 oversubscribed, `spine_latency`
/// more across it.
Topology leaf_spine(int hosts_per_leaf, double ratio, double spine_latency = 0) {
  Topology t;
  t.hosts_per_leaf = hosts_per_leaf;
  t.oversubscription = ratio;
  t.spine_latency = spine_latency;
  return t;
}

/// `hosts` x `per_host` test devices, the given links, under topology `t`.
Cluster with_topology(int hosts, int per_host, const LinkSpec& intra, const LinkSpec& inter,
                      const Topology& t) {
  Cluster c = testing::make_cluster(hosts, per_host, intra, inter);
  c.set_topology(t);
  return c;
}

// NVLink domains of 2 hosts, leaves of 4 hosts, rails, a 3:1 spine: the O(p) bounds from
// the tiers a group crosses equal the worst pair, and each pair equals the cluster's.
TEST(CollectiveGroupBounds, EqualTheWorstPairUnderATopology) {
  using testing::link;
  Topology t = leaf_spine(4, 3, 2e-6);
  t.nvlink_domain_hosts = 2;
  t.rails = true;
  const Cluster c = with_topology(8, 4, link(3e-6, 3e11), link(7e-6, 2.5e10), t);
  const CostModel cost(c, uniform_profile(1.0));
  for (int a = 0; a < c.num_devices(); ++a) {
    for (int b = 0; b < c.num_devices(); ++b) {
      ASSERT_EQ(cost.level(a, b), c.level(a, b)) << a << " " << b;
      ASSERT_EQ(cost.bandwidth(a, b), c.bandwidth(a, b)) << a << " " << b;
      ASSERT_EQ(cost.latency(a, b), c.latency(a, b)) << a << " " << b;
    }
  }
  std::vector<std::vector<int>> groups = {{0, 4},    {0, 8},        {0, 9},  {0, 16}, {0, 20},
                                          {1, 5, 2}, {0, 4, 8, 12}, {3, 19}, {7, 7}};
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dev(0, c.num_devices() - 1), size(2, 9);
  for (int k = 0; k < 200; ++k) {
    std::vector<int> g(static_cast<size_t>(size(rng)));
    for (int& d : g) d = dev(rng);
    groups.push_back(g);
  }
  expect_bounds_are_the_worst_pair(cost, groups);
}

TEST(CostModel, TreeAllReduceAcrossAnOversubscribedSpine) {
  using testing::link;
  const Cluster c = with_topology(4, 2, link(3e-6, 9e11), link(5e-6, 5e10), leaf_spine(2, 2, 1e-6));
  const CostModel m(c, uniform_profile(1.0));
  const double n = 1e9;
  // Two GPUs of one leaf (node0, node1): 2 * ceil(log2 2) * 5 us + 2 n / 50 GB/s.
  EXPECT_DOUBLE_EQ(
      m.collective_time(CollectiveKind::kAllReduce, {0, 2}, uint64_t(n), SyncScheme::kTree),
      2 * 5e-6 + 2 * n / 5e10);
  // Across the spine (node0, node2): 6 us and 25 GB/s.
  EXPECT_DOUBLE_EQ(
      m.collective_time(CollectiveKind::kAllReduce, {0, 4}, uint64_t(n), SyncScheme::kTree),
      2 * 6e-6 + 2 * n / 2.5e10);
  // A ring over both leaves is as slow as its spine hops.
  EXPECT_DOUBLE_EQ(
      m.collective_time(CollectiveKind::kAllGather, {0, 2, 4, 6}, uint64_t(n), SyncScheme::kRing),
      3.0 / 4 * n / 2.5e10 + 3 * 6e-6);
}

// A measured inter-host curve (1e-5 s + bytes / 10 GB/s for 2 ranks) keeps its latency
// and doubles its bandwidth term across a 2:1 spine.
TEST(CostModel, MeasuredCurveAcrossAnOversubscribedSpine) {
  using testing::link;
  const Cluster c = with_topology(4, 2, link(3e-6, 9e11), link(5e-6, 5e10), leaf_spine(2, 2));
  CostProfile p = uniform_profile(1.0);
  CollectiveCurve curve;
  curve.latency = 1e-5;
  curve.bus_bandwidth = 1e10;
  curve.efficiency = EfficiencyCurve::constant(1.0);
  p.curve(CollectiveKind::kAllReduce, LinkLevel::kInterHost) = curve;
  const CostModel m(c, p);
  const double n = 1e9;  // all-reduce of 2 ranks: bus factor 2 (2 - 1) / 2 = 1
  EXPECT_DOUBLE_EQ(
      m.collective_time(CollectiveKind::kAllReduce, {0, 2}, uint64_t(n), SyncScheme::kAuto),
      1e-5 + n / 1e10);
  EXPECT_DOUBLE_EQ(
      m.collective_time(CollectiveKind::kAllReduce, {0, 4}, uint64_t(n), SyncScheme::kAuto),
      1e-5 + 2 * n / 1e10);
}

// Two NVLink domains of two hosts x 2 GPUs: the hierarchical all-reduce rings inside each
// domain at NVLink speed (4 GPUs), then between the domains' leaders on n / 4 per NIC.
// A fused attention op of b 2, 4 heads, seq 16 (non-causal: 256 pairs), head dim `head_dim`:
// 2 * 4 * 256 = 2048 scores, 4 * head_dim FLOPs each forward (2.5x that backward).
Op attention_op(int head_dim, Phase phase = Phase::kForward) {
  Op o = make_op(OpCategory::kAttention,
                 2048.0 * 4 * head_dim * (phase == Phase::kBackward ? 2.5 : 1));
  o.phase = phase;
  o.attrs = {
      {"causal", "0"}, {"heads", "4"}, {"kv_heads", "2"}, {"head_dim", std::to_string(head_dim)}};
  return o;
}

TEST(CostModel, AttentionAddsItsScoresTimesTheScoreTime) {
  const Cluster c = make_cluster(1, 1, link(0, 1e9), link(0, 1e9));
  CostProfile p = uniform_profile(0.5);
  p.op(OpCategory::kAttention).score_time = 2e-13;
  p.op(OpCategory::kAttention).backward_score_time = 5e-13;
  const CostModel m(c, p);
  const Op fwd = attention_op(16), bwd = attention_op(16, Phase::kBackward);
  EXPECT_DOUBLE_EQ(attention_scores(fwd), 2048);
  EXPECT_DOUBLE_EQ(attention_scores(bwd), 2048);
  // 131072 FLOPs at 0.5 of 1e12 FLOP/s, plus 2048 scores of 0.2 ps: 262.144 + 0.4096 ns.
  EXPECT_DOUBLE_EQ(m.op_time(fwd, 0, 0), 262.144e-9 + 0.4096e-9);
  // Backward: 327680 FLOPs (655.36 ns) and 2048 scores of 0.5 ps (1.024 ns).
  EXPECT_DOUBLE_EQ(m.op_time(bwd, 0, 0), 655.36e-9 + 1.024e-9);
  // A quarter of the work has a quarter of the scores.
  EXPECT_DOUBLE_EQ(m.op_time(fwd, 0, 0, 0.25), 65.536e-9 + 0.1024e-9);
  // The score term is compute time: memory-bound beyond it (1e6 B at 0.5 of 1e12 B/s = 2 us).
  EXPECT_DOUBLE_EQ(m.op_time(fwd, 1000000, 0), 2e-6);
  // MLA: queries and keys 24 wide, values 16: 2 (24 + 16) = 80 FLOPs per score.
  Op mla = attention_op(24);
  mla.attrs.emplace_back("v_head_dim", "16");
  mla.flops = 2048.0 * 80;
  EXPECT_DOUBLE_EQ(attention_scores(mla), 2048);
}

TEST(CostModel, HeadDim64IsSlowerThan128AtEqualFlops) {
  const Cluster c = make_cluster(1, 1, link(0, 1e9), link(0, 1e9));
  CostProfile p = uniform_profile(0.5);
  p.op(OpCategory::kAttention).score_time = 2e-13;
  const CostModel m(c, p);
  Op narrow = attention_op(64), wide = attention_op(128);
  narrow.flops = wide.flops = 1e12;
  // Both 2 s of FLOPs; 1e12 / 256 scores against 1e12 / 512.
  EXPECT_DOUBLE_EQ(attention_scores(narrow), 1e12 / 256);
  EXPECT_DOUBLE_EQ(m.op_time(narrow, 0, 0), 2 + 1e12 / 256 * 2e-13);
  EXPECT_DOUBLE_EQ(m.op_time(wide, 0, 0), 2 + 1e12 / 512 * 2e-13);
  EXPECT_GT(m.op_time(narrow, 0, 0), m.op_time(wide, 0, 0));
}

TEST(CostModel, NoScoreTimeOrNoHeadDimIsTheRooflineExactly) {
  const Cluster c = make_cluster(1, 1, link(0, 1e9), link(0, 1e9));
  const CostModel plain(c, uniform_profile(0.5));
  const Op fwd = attention_op(16);
  EXPECT_EQ(plain.op_time(fwd, 4096, 0), 131072 / (1e12 * 0.5));
  // A score time but an op that does not say its head dim (a graph written without it).
  CostProfile p = uniform_profile(0.5);
  p.op(OpCategory::kAttention).score_time = 2e-13;
  Op bare = fwd;
  bare.attrs.pop_back();
  EXPECT_EQ(attention_scores(bare), 0);
  EXPECT_EQ(CostModel(c, p).op_time(bare, 4096, 0), plain.op_time(fwd, 4096, 0));
}

TEST(CostModel, HierarchicalTreatsAnNvlinkDomainAsOneHost) {
  using testing::link;
  Topology t;
  t.nvlink_domain_hosts = 2;
  const Cluster c =
      with_topology(4, 2, link(3e-6, 9e11), link(5e-6, 5e10, LinkSharing::kPerDevice), t);
  const CostModel m(c, uniform_profile(1.0));
  const double n = 1e9;
  const CollectiveGroup g = m.make_group({0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(g.hosts, 2);
  EXPECT_EQ(g.local_max, 4);
  const double intra = 3.0 / 4 * n / 9e11 + 3 * 3e-6;
  const double inter = 2 * 1.0 / 2 * (n / 4) / 5e10 + 2 * 5e-6;
  EXPECT_DOUBLE_EQ(m.collective_time(CollectiveKind::kAllReduce, {0, 1, 2, 3, 4, 5, 6, 7},
                                     uint64_t(n), SyncScheme::kHierarchical),
                   2 * intra + inter);
}

}  // namespace
}  // namespace placer
