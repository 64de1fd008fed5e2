// Torch-free replay machinery of the Rainbow agent: sum-tree, prioritized replay, n-step.
#include "agents/common/replay.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "src/util/error.h"

namespace placer {
namespace {

Transition with_action(int a) {
  Transition t;
  t.state = {static_cast<float>(a)};
  t.action = a;
  return t;
}

TEST(SumTree, TotalAndFindOnHandExample) {
  SumTree tree(5);  // not a power of two: padding leaves must never be returned
  const std::vector<double> p{1, 2, 3, 4, 0};
  for (std::size_t i = 0; i < p.size(); ++i) tree.set(i, p[i]);
  EXPECT_DOUBLE_EQ(tree.total(), 10.0);
  // Leaf intervals: [0,1) [1,3) [3,6) [6,10).
  EXPECT_EQ(tree.find(0.0), 0u);
  EXPECT_EQ(tree.find(0.99), 0u);
  EXPECT_EQ(tree.find(1.0), 1u);
  EXPECT_EQ(tree.find(2.99), 1u);
  EXPECT_EQ(tree.find(3.0), 2u);
  EXPECT_EQ(tree.find(5.5), 2u);
  EXPECT_EQ(tree.find(6.0), 3u);
  EXPECT_EQ(tree.find(9.99), 3u);
  // Overshoot (rounding): the last positive leaf, never the zero leaf 4 or padding.
  EXPECT_EQ(tree.find(10.0), 3u);
  EXPECT_EQ(tree.find(1e9), 3u);

  tree.set(1, 0.0);  // now [0,1) [1,4) [4,8)
  EXPECT_DOUBLE_EQ(tree.total(), 8.0);
  EXPECT_EQ(tree.find(1.5), 2u);
  EXPECT_EQ(tree.find(4.0), 3u);
  tree.set(3, 0.5);
  EXPECT_DOUBLE_EQ(tree.total(), 4.5);
  EXPECT_DOUBLE_EQ(tree.get(3), 0.5);
  EXPECT_EQ(tree.find(4.2), 3u);
}

TEST(SumTree, RejectsBadInput) {
  EXPECT_THROW(SumTree(0), ValidationError);
  SumTree tree(3);
  EXPECT_THROW(tree.find(0.0), ValidationError);  // all zero
  EXPECT_THROW(tree.set(3, 1.0), ValidationError);
  EXPECT_THROW(tree.set(0, -1.0), ValidationError);
  EXPECT_THROW(tree.set(0, std::nan("")), ValidationError);
}

TEST(PrioritizedReplay, SamplingFrequencyProportionalToPriority) {
  ReplayConfig config;
  config.capacity = 4;
  config.alpha = 1.0;
  config.epsilon = 0.0;
  PrioritizedReplay replay(config);
  for (int a = 0; a < 4; ++a) replay.add(with_action(a));
  replay.update_priorities({0, 1, 2, 3}, {1.0, -2.0, 3.0, 4.0});  // |error| is used
  std::mt19937_64 rng(7);
  std::vector<int> count(4, 0);
  const int draws = 20000;
  for (int k = 0; k < draws; ++k) ++count[replay.sample(1, 0, rng).indices.at(0)];
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(count[static_cast<std::size_t>(i)] / static_cast<double>(draws), 0.1 * (i + 1),
                0.02)
        << "slot " << i;
  }
}

TEST(PrioritizedReplay, AlphaFlattensPriorities) {
  ReplayConfig config;
  config.capacity = 2;
  config.alpha = 0.5;
  config.epsilon = 0.0;
  PrioritizedReplay replay(config);
  replay.add(with_action(0));
  replay.add(with_action(1));
  replay.update_priorities({0, 1}, {1.0, 9.0});  // p^0.5: 1 and 3 -> P = 0.25, 0.75
  std::mt19937_64 rng(3);
  const ReplaySample s = replay.sample(4, 0, rng);
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_DOUBLE_EQ(s.probabilities[k], s.indices[k] == 0 ? 0.25 : 0.75);
  }
}

TEST(PrioritizedReplay, ImportanceWeightsHandComputed) {
  ReplayConfig config;
  config.capacity = 3;
  config.alpha = 1.0;
  config.epsilon = 0.0;
  config.beta_start = 0.5;
  config.beta_end = 1.0;
  config.beta_steps = 10;
  PrioritizedReplay replay(config);
  for (int a = 0; a < 3; ++a) replay.add(with_action(a));
  replay.update_priorities({0, 1, 2}, {1.0, 1.0, 2.0});
  EXPECT_DOUBLE_EQ(replay.beta(0), 0.5);
  EXPECT_DOUBLE_EQ(replay.beta(5), 0.75);
  EXPECT_DOUBLE_EQ(replay.beta(10), 1.0);
  EXPECT_DOUBLE_EQ(replay.beta(1000), 1.0);
  // Mass 4 cut into 4 segments of 1: [0,1) -> 0, [1,2) -> 1, [2,4) -> 2 twice.
  std::mt19937_64 rng(11);
  const ReplaySample s = replay.sample(4, 0, rng);
  ASSERT_EQ(s.indices, (std::vector<std::size_t>{0, 1, 2, 2}));
  // beta 0.5: w = (3 P)^-0.5 -> (0.75)^-0.5 and (1.5)^-0.5; divided by the max, the first.
  EXPECT_NEAR(s.weights[0], 1.0, 1e-12);
  EXPECT_NEAR(s.weights[1], 1.0, 1e-12);
  EXPECT_NEAR(s.weights[2], std::sqrt(0.5), 1e-12);
  EXPECT_NEAR(s.weights[3], std::sqrt(0.5), 1e-12);
  // beta 1 at step 10: ratio 0.5.
  const ReplaySample s1 = replay.sample(4, 10, rng);
  EXPECT_NEAR(s1.weights[3], 0.5, 1e-12);
}

TEST(PrioritizedReplay, NewItemsGetMaxPriority) {
  ReplayConfig config;
  config.capacity = 10;
  config.epsilon = 0.01;
  PrioritizedReplay replay(config);
  EXPECT_DOUBLE_EQ(replay.max_priority(), 1.0);
  replay.add(with_action(0));
  EXPECT_DOUBLE_EQ(replay.priority(0), 1.0);
  replay.add(with_action(1));
  replay.update_priorities({0, 1}, {3.0, 0.5});
  EXPECT_DOUBLE_EQ(replay.priority(0), 3.01);
  EXPECT_DOUBLE_EQ(replay.priority(1), 0.51);
  EXPECT_DOUBLE_EQ(replay.max_priority(), 3.01);
  replay.add(with_action(2));
  EXPECT_DOUBLE_EQ(replay.priority(2), 3.01);
  replay.update_priorities({0}, {0.0});  // max stays the largest seen
  replay.add(with_action(3));
  EXPECT_DOUBLE_EQ(replay.priority(3), 3.01);
  EXPECT_DOUBLE_EQ(replay.priority(0), 0.01);
}

TEST(PrioritizedReplay, CapacityWrapAround) {
  ReplayConfig config;
  config.capacity = 3;
  config.epsilon = 0.0;
  PrioritizedReplay replay(config);
  EXPECT_EQ(replay.add(with_action(0)), 0u);
  EXPECT_EQ(replay.add(with_action(1)), 1u);
  replay.update_priorities({0, 1}, {5.0, 0.25});
  EXPECT_EQ(replay.add(with_action(2)), 2u);
  EXPECT_EQ(replay.size(), 3u);
  EXPECT_EQ(replay.add(with_action(3)), 0u);  // overwrites the oldest
  EXPECT_EQ(replay.add(with_action(4)), 1u);
  EXPECT_EQ(replay.size(), 3u);
  EXPECT_EQ(replay.at(0).action, 3);
  EXPECT_EQ(replay.at(1).action, 4);
  EXPECT_EQ(replay.at(2).action, 2);
  // The overwritten slots got the max priority, not their predecessors' 5 and 0.25.
  EXPECT_DOUBLE_EQ(replay.priority(0), 5.0);
  EXPECT_DOUBLE_EQ(replay.priority(1), 5.0);
  std::mt19937_64 rng(1);
  for (std::size_t i : replay.sample(16, 0, rng).indices) EXPECT_LT(i, 3u);
  EXPECT_THROW(replay.at(3), ValidationError);
}

TEST(PrioritizedReplay, RejectsBadInput) {
  ReplayConfig bad;
  bad.capacity = 0;
  EXPECT_THROW(PrioritizedReplay{bad}, ValidationError);
  bad = {};
  bad.beta_start = 1.5;
  EXPECT_THROW(PrioritizedReplay{bad}, ValidationError);
  PrioritizedReplay replay;
  std::mt19937_64 rng(1);
  EXPECT_THROW(replay.sample(4, 0, rng), ValidationError);  // empty
  replay.add(with_action(0));
  EXPECT_THROW(replay.sample(0, 0, rng), ValidationError);
  EXPECT_THROW(replay.update_priorities({0, 0}, {1.0}), ValidationError);
  EXPECT_THROW(replay.update_priorities({1}, {1.0}), ValidationError);
  EXPECT_THROW(replay.update_priorities({0}, {std::nan("")}), ValidationError);
}

EnvStep step(int t, float reward, bool done) {
  EnvStep s;
  s.state = {static_cast<float>(t)};
  s.next_state = {static_cast<float>(t + 1)};
  s.mask = {1, 1};
  s.next_mask = {1, static_cast<uint8_t>(t % 2)};
  s.action = t % 2;
  s.reward = reward;
  s.done = done;
  return s;
}

TEST(NStepAccumulator, ReturnsHandComputedWithEarlyEnd) {
  NStepAccumulator acc(3, 0.5);
  EXPECT_TRUE(acc.push(step(0, 1, false)).empty());
  EXPECT_TRUE(acc.push(step(1, 2, false)).empty());
  EXPECT_EQ(acc.pending(), 2u);
  // s0: 1 + 0.5*2 + 0.25*4 = 3, bootstraps from s3 with 0.5^3.
  std::vector<Transition> out = acc.push(step(2, 4, false));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FLOAT_EQ(out[0].reward, 3.0f);
  EXPECT_FLOAT_EQ(out[0].discount, 0.125f);
  EXPECT_EQ(out[0].state, std::vector<float>{0.0f});
  EXPECT_EQ(out[0].next_state, std::vector<float>{3.0f});
  EXPECT_EQ(out[0].next_mask, (std::vector<uint8_t>{1, 0}));  // mask of s3 (t = 2)
  EXPECT_EQ(out[0].action, 0);
  // Terminal at the 4th step: the three pending steps all complete, discount 0.
  out = acc.push(step(3, 8, true));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FLOAT_EQ(out[0].reward, 2 + 0.5f * 4 + 0.25f * 8);  // s1: 6
  EXPECT_FLOAT_EQ(out[1].reward, 4 + 0.5f * 8);              // s2: 8
  EXPECT_FLOAT_EQ(out[2].reward, 8.0f);                      // s3
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(out[static_cast<std::size_t>(k)].state,
              std::vector<float>{static_cast<float>(k + 1)});
    EXPECT_FLOAT_EQ(out[static_cast<std::size_t>(k)].discount, 0.0f);
  }
  EXPECT_EQ(acc.pending(), 0u);

  // An episode shorter than n: every step still yields one transition.
  out = acc.push(step(0, 1, false));
  EXPECT_TRUE(out.empty());
  out = acc.push(step(1, 2, true));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FLOAT_EQ(out[0].reward, 2.0f);
  EXPECT_FLOAT_EQ(out[1].reward, 2.0f);
  EXPECT_FLOAT_EQ(out[0].discount, 0.0f);
  EXPECT_FLOAT_EQ(out[1].discount, 0.0f);
}

TEST(NStepAccumulator, FlushBootstrapsTruncatedEpisode) {
  NStepAccumulator acc(3, 0.5);
  acc.push(step(0, 1, false));
  acc.push(step(1, 2, false));
  std::vector<Transition> out = acc.flush();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FLOAT_EQ(out[0].reward, 2.0f);  // 1 + 0.5 * 2
  EXPECT_FLOAT_EQ(out[0].discount, 0.25f);
  EXPECT_FLOAT_EQ(out[1].reward, 2.0f);
  EXPECT_FLOAT_EQ(out[1].discount, 0.5f);
  EXPECT_EQ(out[0].next_state, std::vector<float>{2.0f});
  EXPECT_EQ(out[1].next_state, std::vector<float>{2.0f});
  EXPECT_EQ(acc.pending(), 0u);
}

TEST(NStepAccumulator, OneStepIsPlainTransition) {
  NStepAccumulator acc(1, 0.9);
  std::vector<Transition> out = acc.push(step(0, 2, false));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FLOAT_EQ(out[0].reward, 2.0f);
  EXPECT_FLOAT_EQ(out[0].discount, 0.9f);
  EXPECT_THROW(NStepAccumulator(0, 0.9), ValidationError);
  EXPECT_THROW(NStepAccumulator(3, 1.5), ValidationError);
}

}  // namespace
}  // namespace placer
