// The learned expert placer's decision process (agents/experts/expert_episode.h): the copy
// order, the rank features and the mask, by hand.
#include <gtest/gtest.h>

#include <vector>

#include "agents/experts/expert_episode.h"

namespace placer {
namespace {

// 4 ranks on 2 nodes, 2 slots each; 6 experts, expert 0 in 3 copies of 0.12 each. Copy
// order: experts 1, 2, 3, 0, 0, 0, 4, 5.
TEST(ExpertEpisode, CopiesHeaviestFirstWithRankFeaturesAndMask) {
  const ExpertTopology topo{4, 2};
  ExpertEpisode ep({0.36, 0.2, 0.15, 0.13, 0.09, 0.07}, {3, 1, 1, 1, 1, 1}, topo, 2, 0.5);
  ASSERT_EQ(ep.steps(), 8);
  std::vector<float> x;
  std::vector<uint8_t> mask;
  // First copy: expert 1 (0.2, the heaviest copy): 0.2 x 4 ranks = 0.8; empty ranks.
  ep.observe(&x, &mask);
  ASSERT_EQ(x.size(), 4u * kRankFeatures);
  EXPECT_FLOAT_EQ(x[0], 0.8f);
  EXPECT_FLOAT_EQ(x[1], 0.0f);
  EXPECT_FLOAT_EQ(x[2], 1.0f);
  EXPECT_FLOAT_EQ(x[5], 0.5f);
  EXPECT_EQ(mask, (std::vector<uint8_t>{1, 1, 1, 1}));
  ep.place(0);
  // Second: expert 2 (0.15 x 4 = 0.6); rank 0 holds 0.2 (x 4 = 0.8), one slot of two free,
  // its node 0.2 (x 2 nodes = 0.4).
  x.clear();
  mask.clear();
  ep.observe(&x, &mask);
  EXPECT_FLOAT_EQ(x[0], 0.6f);
  EXPECT_FLOAT_EQ(x[1], 0.8f);
  EXPECT_FLOAT_EQ(x[2], 0.5f);
  EXPECT_FLOAT_EQ(x[3], 0.4f);
  EXPECT_FLOAT_EQ(x[kRankFeatures + 3], 0.4f);  // rank 1 shares rank 0's node
  EXPECT_FLOAT_EQ(x[2 * kRankFeatures + 3], 0.0f);
  ep.place(0);  // rank 0 now full
  ep.place(2);  // expert 3
  // Then expert 0's three copies (0.12 each): the first on rank 1; the second may not go to
  // rank 0 (full) nor rank 1 (holds it), and node 0 already holds a copy (feature 4).
  ep.place(1);
  x.clear();
  mask.clear();
  ep.observe(&x, &mask);
  EXPECT_EQ(mask, (std::vector<uint8_t>{0, 0, 1, 1}));
  EXPECT_FLOAT_EQ(x[kRankFeatures + 4], 1.0f);
  EXPECT_FLOAT_EQ(x[2 * kRankFeatures + 4], 0.0f);
  ep.place(2);
  ep.place(3);
  ep.place(1);  // expert 4
  ep.place(3);  // expert 5
  ASSERT_TRUE(ep.done());
  EXPECT_EQ(ep.map().replicas[0], (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(ep.map().replicas[1], (std::vector<int>{0}));
  EXPECT_EQ(ep.map().replicas[5], (std::vector<int>{3}));
  validate_expert_layer(ep.map(), 6, 4);
}

TEST(ExpertEpisode, EplbCopyCountsFillTheSlots) {
  const ExpertTopology topo{4, 2};
  const std::vector<int> c = eplb_copies({0.5, 0.1, 0.1, 0.1, 0.1, 0.1}, topo, EplbOptions{2, 0});
  int total = 0;
  for (int k : c) total += k;
  EXPECT_EQ(total, 8);
  // Hierarchical: experts 0-2 on node 0, 3-5 on node 1, one extra slot per node: expert 0
  // (the heaviest per copy) on node 0, expert 3 (a tie: the lower index) on node 1.
  EXPECT_EQ(c, (std::vector<int>{2, 1, 1, 2, 1, 1}));
}

// The replica phase: 4 ranks x 2 slots, 6 experts, 2 redundant slots to give out. Replica
// rows of expert 0 (share 0.36): 0.36 x 6 = 2.16, 1 copy, 0.36 x 4 = 1.44 per copy, 0.72
// with a second copy; the placement order follows the chosen counts.
TEST(ExpertEpisode, ReplicaPhaseGivesOutTheRedundantSlotsFirst) {
  const ExpertTopology topo{4, 2};
  ExpertEpisode ep({0.36, 0.2, 0.15, 0.13, 0.09, 0.07}, {3, 1, 1, 1, 1, 1}, topo, 2, 0.5, true);
  ASSERT_EQ(ep.steps(), 2 + 8);
  ASSERT_TRUE(ep.choosing_replicas());
  EXPECT_EQ(ep.copies(), (std::vector<int>{1, 1, 1, 1, 1, 1}));
  std::vector<float> x;
  std::vector<uint8_t> mask;
  ep.observe_replicas(&x, &mask);
  ASSERT_EQ(x.size(), 6u * kReplicaFeatures);
  const float expert0[kReplicaFeatures] = {2.16f, 1.0f, 1.44f, 0.72f, 0.5f};
  for (int f = 0; f < kReplicaFeatures; ++f) EXPECT_FLOAT_EQ(x[size_t(f)], expert0[f]) << f;
  EXPECT_EQ(mask, (std::vector<uint8_t>(6, 1)));
  ep.add_replica(1);
  ep.add_replica(0);
  EXPECT_FALSE(ep.choosing_replicas());
  EXPECT_EQ(ep.copies(), (std::vector<int>{2, 2, 1, 1, 1, 1}));
  // Copies by weight: 0 (0.18) twice, 2 (0.15), 3 (0.13), 1 (0.1) twice, 4, 5.
  x.clear();
  mask.clear();
  ep.observe(&x, &mask);
  EXPECT_FLOAT_EQ(x[0], 0.72f);  // expert 0's copy, 0.18 x 4
  for (int r : {0, 1, 2, 3, 0, 1, 2, 3}) ep.place(r);
  ASSERT_TRUE(ep.done());
  EXPECT_EQ(ep.map().replicas[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(ep.map().replicas[1], (std::vector<int>{0, 1}));
  validate_expert_layer(ep.map(), 6, 4);
}

}  // namespace
}  // namespace placer
