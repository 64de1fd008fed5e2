#include "src/plan/expert_balance.h"

#include <gtest/gtest.h>

#include "src/plan/expert_search.h"
#include "src/util/error.h"

namespace placer {
namespace {

const ExpertTopology kTwoNodes{4, 2};  // ranks 0, 1 on node 0; ranks 2, 3 on node 1

// Loads [6, 4, 1, 1 | 4, 3, 1, 0], 2 groups of 4, 4 redundant copies: 12 slots, 3 per rank.
// By hand: group loads 12 and 8 -> node 0 and node 1. Node 0 fills 6 slots from 4 experts:
// +e0 (6 -> 3 per copy), then e1 (4) is heaviest per copy -> +e1 (2 per copy). Copies
// 3, 3, 2, 2, 1, 1 packed heaviest first onto the least loaded rank with a free slot and no
// copy of the same expert: r0 3, r1 3, r0 5 (tie -> lower rank), r1 5, r0 6, r1 6.
// Node 1: +e4 (2 per copy), then e5 (3) -> +e5 (1.5). Copies 2, 2, 1.5, 1.5, 1, 0:
// r2 2, r3 2, r2 3.5, r3 3.5, r2 4.5, r3 3.5.
TEST(Eplb, HierarchicalPackingMatchesHandComputation) {
  const std::vector<double> load = {6, 4, 1, 1, 4, 3, 1, 0};
  EplbOptions o;
  o.redundant = 4;
  o.groups = 2;
  const ExpertLayerMap m = eplb_layer(load, kTwoNodes, o);
  const std::vector<std::vector<int>> want = {{0, 1}, {0, 1}, {0}, {1}, {2, 3}, {2, 3}, {2}, {3}};
  EXPECT_EQ(m.replicas, want);
  // Rank loads by hand: 6, 6, 4.5, 3.5.
  std::vector<double> rank_load(4, 0.0);
  for (size_t e = 0; e < load.size(); ++e) {
    for (int r : m.replicas[e]) rank_load[r] += load[e] / double(m.replicas[e].size());
  }
  EXPECT_EQ(rank_load, (std::vector<double>{6, 6, 4.5, 3.5}));
}

TEST(Eplb, GlobalPolicyWithoutReplicasBalancesLoads) {
  // One node (no hierarchy): loads 5, 4, 3, 2, 2, 1 packed onto 2 ranks of 3 slots:
  // 5 -> r0, 4 -> r1, 3 -> r1 (7), 2 -> r0 (7), 2 -> r0 (tie, lower rank: 9, now full),
  // 1 -> r1 (8).
  const ExpertLayerMap m = eplb_layer({5, 4, 3, 2, 2, 1}, ExpertTopology{2, 2}, EplbOptions{});
  const std::vector<std::vector<int>> want = {{0}, {1}, {1}, {0}, {0}, {1}};
  EXPECT_EQ(m.replicas, want);
}

TEST(Eplb, SlotsMustDivideOverRanks) {
  EplbOptions o;
  o.redundant = 1;
  EXPECT_THROW(eplb_layer({1, 1, 1, 1}, kTwoNodes, o), ValidationError);
}

TEST(ExpertMaps, RoundRobinAndDefaultLayouts) {
  EXPECT_EQ(round_robin_layer(5, 2).replicas,
            (std::vector<std::vector<int>>{{0}, {1}, {0}, {1}, {0}}));
  // Fewer experts than ranks: copies fill the ranks (3 experts on 5 ranks: slots 3, 4 copy
  // experts 0, 1).
  EXPECT_EQ(round_robin_layer(3, 5).replicas,
            (std::vector<std::vector<int>>{{0, 3}, {1, 4}, {2}}));
  EXPECT_NO_THROW(validate_expert_layer(round_robin_layer(8, 16), 8, 16));
  EXPECT_EQ(default_expert_layer(4, 2).replicas,
            (std::vector<std::vector<int>>{{0}, {0}, {1}, {1}}));
  EXPECT_NO_THROW(validate_expert_layer(round_robin_layer(8, 4), 8, 4));
  ExpertLayerMap bad = round_robin_layer(8, 4);
  bad.replicas[3] = {1, 1};
  EXPECT_THROW(validate_expert_layer(bad, 8, 4), ValidationError);
}

// 2 nodes x 2 ranks, 8 experts, 400 assignments, 1 ms per assignment, 1000 B per assignment,
// 1 MB/s within a node, 100 kB/s across, 10 ms latency per all-to-all.
ExpertStepCost hand_cost() {
  ExpertStepCost c;
  c.assignments = 400;
  c.seconds_per_assignment = 1e-3;
  c.bytes_per_assignment = 1000;
  c.intra_bandwidth = 1e6;
  c.inter_bandwidth = 1e5;
  c.latency = 0.01;
  return c;
}

const std::vector<double> kShares = {0.25, 0.15, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};

// Round-robin (e mod 4): rank shares 0.35, 0.25, 0.2, 0.2, so every rank sends 35, 25, 20, 20
// of its 100 assignments to ranks 0..3; loads 140, 100, 80, 80; compute 0.14 s. Rank 0 sends
// 40 across nodes and receives 70 -> 70 x 1000 B / 1e5 B/s = 0.7 s (the slowest rank; rank 1
// 0.5, ranks 2 and 3 0.6). All-to-all 0.71 s; the layer 3 x 0.14 + 4 x 0.71 = 3.26 s.
TEST(ExpertStep, TwoNodeEightExpertLayerByHand) {
  const ExpertLayerStep s =
      expert_layer_step(kShares, round_robin_layer(8, 4), kTwoNodes, hand_cost());
  EXPECT_EQ(s.rank_load.size(), 4u);
  EXPECT_NEAR(s.rank_load[0], 140, 1e-9);
  EXPECT_NEAR(s.rank_load[1], 100, 1e-9);
  EXPECT_NEAR(s.rank_load[2], 80, 1e-9);
  EXPECT_NEAR(s.compute, 0.14, 1e-12);
  EXPECT_NEAR(s.all_to_all, 0.71, 1e-12);
  EXPECT_NEAR(s.total, 3.26, 1e-12);
}

// Expert 0 replicated on ranks 0 and 2: node 1's tokens for it stay on node 1 (rank 2).
// Sources on node 0 send 35, 25, 20, 20; sources on node 1 send 10, 25, 45, 20. Loads 90,
// 100, 130, 80 -> compute 0.13 s. Across nodes: rank 1 receives 25 + 25 = 50 -> 0.5 s (rank 0
// sends 40 and receives 20; ranks 2, 3 send 35 and receive 40 -> 0.4 s; within node 1, 45 x
// 1000 / 1e6 = 0.045 s). All-to-all 0.51 s; the layer 0.39 + 2.04 = 2.43 s.
TEST(ExpertStep, ReplicaServesItsOwnNodeByHand) {
  ExpertLayerMap m = round_robin_layer(8, 4);
  m.replicas[0] = {0, 2};
  const ExpertLayerStep s = expert_layer_step(kShares, m, kTwoNodes, hand_cost());
  EXPECT_NEAR(s.rank_load[0], 90, 1e-9);
  EXPECT_NEAR(s.rank_load[2], 130, 1e-9);
  EXPECT_NEAR(s.compute, 0.13, 1e-12);
  EXPECT_NEAR(s.all_to_all, 0.51, 1e-12);
  EXPECT_NEAR(s.total, 2.43, 1e-12);
  RoutingStats r;
  r.share = {kShares, kShares};
  EXPECT_NEAR(expert_step(r, {m, m}, kTwoNodes, hand_cost()), 4.86, 1e-12);
}

// The bound with 3 slots per rank: 100 assignments per rank -> compute 0.1 s; a node holds
// at most 6 of the 8 experts, so at least the two lightest (0.1 + 0.1) of a rank's 100 cross:
// 20 x 1000 B / 1e5 B/s = 0.2 s. Layer: 0.3 + 4 x 0.21 = 1.14 s, below the replica map's
// 2.43 s above. With 4 slots a node can hold every expert: 0.3 + 4 x 0.01 = 0.34 s.
TEST(ExpertStep, LowerBoundByHand) {
  RoutingStats r;
  r.share = {kShares};
  EXPECT_NEAR(expert_step_bound(r, kTwoNodes, hand_cost(), 3), 1.14, 1e-12);
  EXPECT_NEAR(expert_step_bound(r, kTwoNodes, hand_cost(), 4), 0.34, 1e-12);
  r.share = {kShares, kShares};
  EXPECT_NEAR(expert_step_bound(r, kTwoNodes, hand_cost(), 3), 2.28, 1e-12);
  ExpertLayerMap m = round_robin_layer(8, 4);
  m.replicas[0] = {0, 2};
  m.replicas[1] = {1, 3};
  m.replicas[2] = {0, 3};
  m.replicas[3] = {1, 2};
  EXPECT_GT(expert_step(r, {m, m}, kTwoNodes, hand_cost()), 2.28);
}

TEST(ExpertSearch, SlotsRoundTripAndAnnealingFindsTheKnownOptimum) {
  ExpertLayerMap m = round_robin_layer(8, 4);
  m.replicas[0] = {0, 2};
  EXPECT_EQ(map_of(slots_of(m, 4), 8).replicas, m.replicas);
  RoutingStats r;
  r.share = {kShares};
  const ExpertObjective f = [&](const std::vector<ExpertLayerMap>& maps) {
    return expert_step(r, maps, kTwoNodes, hand_cost());
  };
  // The default layout puts e0 and e1 on rank 0 (share 0.4): compute 0.16 s, rank 0 receives
  // 80 across nodes (0.8 s), 3 x 0.16 + 4 x 0.81 = 3.72 s. With two copies per rank and no
  // replicas the best is round-robin's 3.26 s: e0 (0.25) shares its rank with an expert of
  // at least 0.1, and that rank receives 2 x 35 across nodes whatever the layout.
  ExpertAnnealOptions o;
  o.evaluations = 400;
  const ExpertSearchResult a = anneal_expert_maps({default_expert_layer(8, 4)}, 4, f, o);
  ASSERT_EQ(a.best_curve.size(), 400u);
  EXPECT_NEAR(a.best_curve.front(), 3.72, 1e-12);
  EXPECT_NEAR(a.best, 3.26, 1e-12);
  EXPECT_NEAR(f(a.maps), a.best, 1e-12);
  EXPECT_NO_THROW(validate_expert_layer(a.maps[0], 8, 4));
  for (size_t i = 1; i < a.best_curve.size(); ++i) EXPECT_LE(a.best_curve[i], a.best_curve[i - 1]);
  EXPECT_EQ(samples_to_within({10, 8, 5, 5, 4.9}, 0.05), 3);
}

}  // namespace
}  // namespace placer
