// The hierarchical NCCL model (simulator/nccl_collectives.h) through CostModel: every expected
// time below is worked out by hand from the formulas of docs/simulator.md.
#include "simulator/nccl_collectives.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "sim_fixtures.h"
#include "simulator/cost_model.h"
#include "src/util/error.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;

constexpr double kUs = 1e-6, kGB = 1e9;

// Inside a host: latency 10 us + 1 us per rank beyond two, ring 300 GB/s, NVLS 250 GB/s.
// Between hosts: latency 20 us + 2 us per host hop beyond two hosts, 50 GB/s per NIC.
// Efficiency 1.
CostProfile nccl_profile(double intra_gbps = 300, double nvls_gbps = 250) {
  CostProfile p = uniform_profile();
  p.all_reduce = CollectiveAlgorithm::kAuto;
  p.nccl.intra.latency = 10 * kUs;
  p.nccl.intra.latency_per_rank = 1 * kUs;
  p.nccl.intra.bus_bandwidth = intra_gbps * kGB;
  p.nccl.intra.efficiency = EfficiencyCurve::constant(1.0);
  p.nccl.nvls_bandwidth = nvls_gbps * kGB;
  p.nccl.inter.latency = 20 * kUs;
  p.nccl.inter.latency_per_rank = 2 * kUs;
  p.nccl.inter.bus_bandwidth = 50 * kGB;
  p.nccl.inter.efficiency = EfficiencyCurve::constant(1.0);
  return p;
}

std::vector<int> iota(int n, int first = 0) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// The links the model must not read: absurd numbers.
Cluster cluster(int hosts, int per_host) {
  return make_cluster(hosts, per_host, link(1, 1), link(1, 1));
}

// Seconds for `kind` of 1 GB among devices 0 .. n-1.
double one_gb(const CostModel& cost, CollectiveKind kind, int n, SyncScheme scheme) {
  return cost.collective_time(kind, iota(n), 1000000000, scheme);
}

// The shape of devices 0 .. n-1, after checking the hosts and rails make_group counts.
NcclShape shape_of(const CostModel& cost, int n, int hosts, int rails) {
  const CollectiveGroup g = cost.make_group(iota(n));
  EXPECT_EQ(g.hosts, hosts);
  EXPECT_EQ(g.rails, rails);
  return {g.size, g.hosts, g.local_max, g.rails};
}

TEST(NcclModel, TwoHostsOfEightRingTreeAndNvlsTree) {
  const CostProfile p = nccl_profile();
  const CostModel cost(cluster(2, 8), p);
  const NcclShape s = shape_of(cost, 16, 2, 8);
  const double n = 1e9;
  // Ring: 20 us (two hosts); min(8 NICs x 50, 300) = 300 GB/s; 2 x 15/16 x 1 GB.
  EXPECT_NEAR(nccl_algorithm_time(p.nccl, CollectiveKind::kAllReduce, NcclAlgorithm::kRing, s, n),
              20 * kUs + 1.875 / 300.0, 1e-12);
  // Tree: depth 1 (20 us); two hosts, so each NIC 1 GB / 400 GB/s = 2.5 ms < the chain's
  // 2 x 1 GB / 300 GB/s.
  EXPECT_NEAR(nccl_algorithm_time(p.nccl, CollectiveKind::kAllReduce, NcclAlgorithm::kTree, s, n),
              20 * kUs + 2.0 / 300.0, 1e-12);
  // NVLS tree: two hosts, so 1 GB / 400 GB/s over the NICs < 1 GB / 250 GB/s NVLS: 4 ms.
  EXPECT_NEAR(
      nccl_algorithm_time(p.nccl, CollectiveKind::kAllReduce, NcclAlgorithm::kNvlsTree, s, n),
      20 * kUs + 4e-3, 1e-12);
  EXPECT_TRUE(std::isinf(
      nccl_algorithm_time(p.nccl, CollectiveKind::kAllReduce, NcclAlgorithm::kNvls, s, n)));
  double t = 0;
  EXPECT_EQ(nccl_fastest(p.nccl, CollectiveKind::kAllReduce, s, n, &t), NcclAlgorithm::kNvlsTree);
  EXPECT_NEAR(one_gb(cost, CollectiveKind::kAllReduce, 16, SyncScheme::kAuto), 20 * kUs + 4e-3,
              1e-12);
  // An explicit scheme runs its algorithm: ring, tree.
  EXPECT_NEAR(one_gb(cost, CollectiveKind::kAllReduce, 16, SyncScheme::kRing),
              20 * kUs + 1.875 / 300.0, 1e-12);
  EXPECT_NEAR(one_gb(cost, CollectiveKind::kAllReduce, 16, SyncScheme::kTree),
              20 * kUs + 2.0 / 300.0, 1e-12);
  // All-to-all: each rank's 8/16 off-host share, 8 ranks' worth over 8 NICs: 1 GB / 100 GB/s,
  // slower than the on-host 7/16 GB at 300 GB/s.
  EXPECT_NEAR(one_gb(cost, CollectiveKind::kAllToAll, 16, SyncScheme::kAuto), 20 * kUs + 1e-2,
              1e-12);
}

TEST(NcclModel, SixteenHostsOfOneRingAndTree) {
  const CostProfile p = nccl_profile();
  const CostModel cost(cluster(16, 1), p);
  const NcclShape s = shape_of(cost, 16, 16, 1);
  const double n = 1e8;
  // Ring: 20 us + 2 us x 2 x 14 hops beyond two hosts; one NIC: 2 x 15/16 x 100 MB / 50 GB/s.
  EXPECT_NEAR(nccl_algorithm_time(p.nccl, CollectiveKind::kAllReduce, NcclAlgorithm::kRing, s, n),
              76 * kUs + 1.875 * 1e8 / 50e9, 1e-12);
  // Tree: depth 4, 20 + 2 us x 2 x 3; 2 x 100 MB through the one NIC.
  EXPECT_NEAR(nccl_algorithm_time(p.nccl, CollectiveKind::kAllReduce, NcclAlgorithm::kTree, s, n),
              32 * kUs + 2 * 1e8 / 50e9, 1e-12);
  // One GPU per host: no NVLS.
  EXPECT_TRUE(std::isinf(
      nccl_algorithm_time(p.nccl, CollectiveKind::kAllReduce, NcclAlgorithm::kNvlsTree, s, n)));
  // All-gather runs the ring only (one pass: 14 hops): 20 + 2 x 14 us + 15/16 x 100 MB /
  // 50 GB/s.
  EXPECT_NEAR(
      cost.collective_time(CollectiveKind::kAllGather, iota(16), 100000000, SyncScheme::kTree),
      48 * kUs + 0.9375 * 1e8 / 50e9, 1e-12);
}

TEST(NcclModel, ChoiceBySizeSwitchesAtTheCrossover) {
  // 16 hosts x 1: ring 76 us + 1.875 n / 50 GB/s, tree 32 us + 2 n / 50 GB/s; equal at
  // 44 us = 0.125 n / 50 GB/s, n = 17.6 MB. Below it the tree wins, above it the ring.
  const CostProfile p = nccl_profile();
  const CostModel cost(cluster(16, 1), p);
  const NcclShape s = shape_of(cost, 16, 16, 1);
  double t = 0;
  EXPECT_EQ(nccl_fastest(p.nccl, CollectiveKind::kAllReduce, s, 17.5e6, &t), NcclAlgorithm::kTree);
  EXPECT_NEAR(t, 32 * kUs + 2 * 17.5e6 / 50e9, 1e-12);
  EXPECT_EQ(nccl_fastest(p.nccl, CollectiveKind::kAllReduce, s, 17.7e6, &t), NcclAlgorithm::kRing);
  EXPECT_NEAR(t, 76 * kUs + 1.875 * 17.7e6 / 50e9, 1e-12);
  EXPECT_NEAR(
      cost.collective_time(CollectiveKind::kAllReduce, iota(16), 17500000, SyncScheme::kAuto),
      32 * kUs + 2 * 17.5e6 / 50e9, 1e-12);
  EXPECT_NEAR(
      cost.collective_time(CollectiveKind::kAllReduce, iota(16), 17700000, SyncScheme::kAuto),
      76 * kUs + 1.875 * 17.7e6 / 50e9, 1e-12);
}

TEST(NcclModel, OneGpuPerHostUsesOneNicAWholeHostEight) {
  // NVLink fast enough (1000 GB/s) that the NICs bind the whole-host ring.
  const CostProfile p = nccl_profile(1000, 0);
  const CostModel cost(cluster(2, 8), p);
  const CollectiveGroup one = cost.make_group({0, 8});  // local GPU 0 of each host
  const CollectiveGroup all = cost.make_group(iota(16));
  EXPECT_EQ(one.rails, 1);
  EXPECT_EQ(all.rails, 8);
  // All-gather of 1 GB (two hosts: 20 us): 1/2 GB over one NIC; 15/16 GB over 8 NICs.
  EXPECT_NEAR(
      cost.collective_time(CollectiveKind::kAllGather, {0, 8}, 1000000000, SyncScheme::kAuto),
      20 * kUs + 0.5 / 50.0, 1e-12);
  EXPECT_NEAR(one_gb(cost, CollectiveKind::kAllGather, 16, SyncScheme::kAuto),
              20 * kUs + 0.9375 / 400.0, 1e-12);
  // Two GPUs per NIC: a whole host uses 4 NICs, GPUs 0 and 1 of each host one.
  CostProfile shared = p;
  shared.nccl.gpus_per_nic = 2;
  const CostModel cost2(cluster(2, 8), shared);
  EXPECT_EQ(cost2.make_group(iota(16)).rails, 4);
  EXPECT_EQ(cost2.make_group({0, 1, 8, 9}).rails, 1);
  EXPECT_EQ(cost2.make_group({0, 2, 8, 10}).rails, 2);
}

TEST(NcclModel, NvlsInsideOneHost) {
  const CostProfile p = nccl_profile();
  const CostModel cost(cluster(1, 8), p);
  // NVLS: 10 + 6 x 1 us + 1 GB / 250 GB/s; the ring's 1.75 GB / 300 GB/s is slower.
  EXPECT_NEAR(one_gb(cost, CollectiveKind::kAllReduce, 8, SyncScheme::kAuto), 16 * kUs + 4e-3,
              1e-12);
  EXPECT_NEAR(one_gb(cost, CollectiveKind::kAllReduce, 8, SyncScheme::kHierarchical),
              16 * kUs + 4e-3, 1e-12);
  EXPECT_NEAR(one_gb(cost, CollectiveKind::kAllReduce, 8, SyncScheme::kRing),
              16 * kUs + 1.75 / 300.0, 1e-12);
  // Reduce-scatter has no NVLS: the ring, 7/8 GB / 300 GB/s.
  EXPECT_NEAR(one_gb(cost, CollectiveKind::kReduceScatter, 8, SyncScheme::kAuto),
              16 * kUs + 0.875 / 300.0, 1e-12);
  // Without NVLS the all-reduce is the ring.
  const CostModel plain(cluster(1, 8), nccl_profile(300, 0));
  EXPECT_NEAR(one_gb(plain, CollectiveKind::kAllReduce, 8, SyncScheme::kAuto),
              16 * kUs + 1.75 / 300.0, 1e-12);
}

TEST(NcclModel, MeasuredCurveWinsAndParameterServerKeepsItsFormula) {
  CostProfile p = nccl_profile();
  CollectiveCurve c;
  c.latency = 5 * kUs;
  c.bus_bandwidth = 100 * kGB;
  p.curve(CollectiveKind::kAllReduce, LinkLevel::kIntraHost) = c;
  const CostModel cost(make_cluster(1, 4, link(2 * kUs, 10 * kGB), link(1, 1)), p);
  // The curve: 5 us + 1.5 GB / 100 GB/s.
  EXPECT_NEAR(one_gb(cost, CollectiveKind::kAllReduce, 4, SyncScheme::kAuto), 5 * kUs + 1.5e-2,
              1e-12);
  // The parameter server: 2 x 3/4 GB / 10 GB/s + 2 x 3 x 2 us, from the links.
  EXPECT_NEAR(one_gb(cost, CollectiveKind::kAllReduce, 4, SyncScheme::kParameterServer),
              0.15 + 12 * kUs, 1e-12);
}

TEST(NcclModel, ProfileRoundTripAndErrors) {
  CostProfile p = nccl_profile();
  p.nccl.gpus_per_nic = 2;
  p.nccl.inter.efficiency = EfficiencyCurve::ramp({{6, 0.2}, {9, 1.0}});
  const CostProfile back = parse_cost_profile(cost_profile_to_yaml(p), "rt.profile.yaml");
  EXPECT_EQ(back.nccl, p.nccl);
  EXPECT_EQ(back, p);
  // A profile without the section reads with the model off.
  EXPECT_FALSE(parse_cost_profile("format_version: \"1.0\"\n").nccl.enabled());
  const std::string head = "format_version: \"1.0\"\nnccl:\n";
  const std::string intra = "  intra_host: {bus_bandwidth: 300 GB/s}\n";
  try {
    parse_cost_profile(head + intra, "x.profile.yaml");
    FAIL() << "accepted a model without inter_host";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.profile.yaml: nccl.inter_host: missing"),
              std::string::npos)
        << e.what();
  }
  try {
    parse_cost_profile(head + intra + "  inter_host: {bus_bandwidth: 50 GB/s, gpus_per_nic: 0}\n",
                       "x.profile.yaml");
    FAIL() << "accepted gpus_per_nic 0";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nccl.inter_host.gpus_per_nic"), std::string::npos)
        << e.what();
  }
}

TEST(NcclModel, ShippedH100ProfileOnWholeNodesAndOneGpuPerNode) {
  // h100_sxm_ib400: 47 GB/s per NIC, NVLS 275 GB/s. Two whole nodes all-reduce 8 GiB over the
  // NVLS tree (the slower of 8 NICs and NVLS, each at its ramp's efficiency); one GPU per
  // node over one NIC's ring.
  const CostProfile p = load_cost_profile(std::string(PLACER_SOURCE_DIR) +
                                          "/datasets/clusters/h100_sxm_ib400.profile.yaml");
  ASSERT_TRUE(p.nccl.enabled());
  const CostModel cost(cluster(2, 8), p);
  const double n = 8589934592.0;
  const double e = p.nccl.inter.efficiency.at(n), e_host = p.nccl.intra.efficiency.at(n);
  EXPECT_NEAR(
      cost.collective_time(CollectiveKind::kAllReduce, iota(16), 8589934592ull, SyncScheme::kAuto),
      46 * kUs + std::max(n / (8 * 47e9 * e), n / (275e9 * e_host)), 1e-9);
  EXPECT_NEAR(
      cost.collective_time(CollectiveKind::kAllReduce, {0, 8}, 8589934592ull, SyncScheme::kAuto),
      46 * kUs + n / (47e9 * e), 1e-9);
}

}  // namespace
}  // namespace placer
