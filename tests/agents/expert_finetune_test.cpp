// Fine-tuning expert-rl, its torch-free parts (agents/experts/expert_finetune.h): the
// learning-rate and entropy schedules, which layer each rollout samples, the self-critical
// advantages and the cache of judged maps, against values computed by hand.
#include "agents/experts/expert_finetune.h"

#include <gtest/gtest.h>

#include <vector>

namespace placer {
namespace {

TEST(ExpertFinetune, ScheduleFallsLinearlyOverTheBudget) {
  const ExpertFinetuneSchedule s;  // 5e-3 -> 5e-4, entropy 0.01 -> 0
  EXPECT_DOUBLE_EQ(s.learning_rate_at(0), 5e-3);
  EXPECT_DOUBLE_EQ(s.learning_rate_at(0.5), 2.75e-3);  // 5e-3 - 0.5 x 4.5e-3
  EXPECT_DOUBLE_EQ(s.learning_rate_at(1), 5e-4);
  EXPECT_DOUBLE_EQ(s.learning_rate_at(3), 5e-4);  // clamped
  EXPECT_DOUBLE_EQ(s.entropy_at(0.25), 0.0075);
  EXPECT_DOUBLE_EQ(s.entropy_at(-1), 0.01);
  EXPECT_DOUBLE_EQ(s.entropy_at(1), 0.0);
}

TEST(ExpertFinetune, LayersTakeTurnsAtBeingSampled) {
  // 8 rollouts per update over 4 layers: rollout 0 greedy, 1..7 sample layers 0 1 2 3 0 1 2.
  EXPECT_EQ(sampled_layer(0, 0, 8, 4), -1);
  EXPECT_EQ(sampled_layer(0, 1, 8, 4), 0);
  EXPECT_EQ(sampled_layer(0, 4, 8, 4), 3);
  EXPECT_EQ(sampled_layer(0, 5, 8, 4), 0);
  // Update 1 goes on where update 0 stopped: (1 x 7 + 0) mod 4 = 3, then (7 + 2) mod 4 = 1.
  EXPECT_EQ(sampled_layer(1, 1, 8, 4), 3);
  EXPECT_EQ(sampled_layer(1, 3, 8, 4), 1);
  EXPECT_EQ(sampled_layer(2, 3, 8, 4), 0);  // (14 + 2) mod 4
}

TEST(ExpertFinetune, SelfCriticalAdvantagesOverTheSampledSpread) {
  // Greedy 10; samples 9 11 10 12: mean 10.5, variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25.
  const std::vector<double> a = self_critical_advantages({10, 9, 11, 10, 12});
  ASSERT_EQ(a.size(), 5u);
  const double sd = 1.118033988749895;  // sqrt(1.25)
  EXPECT_DOUBLE_EQ(a[0], 0.0);
  EXPECT_DOUBLE_EQ(a[1], 1 / sd);
  EXPECT_DOUBLE_EQ(a[2], -1 / sd);
  EXPECT_DOUBLE_EQ(a[3], 0.0);
  EXPECT_DOUBLE_EQ(a[4], -2 / sd);
  EXPECT_EQ(self_critical_advantages({5, 6, 6}), (std::vector<double>{0, 0, 0}));  // no spread
  EXPECT_EQ(self_critical_advantages({5}), (std::vector<double>{0}));
}

TEST(ExpertFinetune, CacheKeysMapsByTheirContent) {
  ExpertMapCache c;
  const std::vector<ExpertLayerMap> one_layer{{{{0}, {1}}}};
  const std::vector<ExpertLayerMap> two_layers{{{{0}}}, {{{1}}}};
  const std::vector<ExpertLayerMap> replicated{{{{0, 1}}}};
  EXPECT_EQ(c.find(one_layer), nullptr);
  c.add(one_layer, 2.5);
  ASSERT_NE(c.find(one_layer), nullptr);
  EXPECT_EQ(*c.find(one_layer), 2.5);
  EXPECT_EQ(c.find(two_layers), nullptr);  // the same ranks split over two layers
  EXPECT_EQ(c.find(replicated), nullptr);  // one expert on both ranks
  c.add(two_layers, 3.0);
  EXPECT_EQ(*c.find(two_layers), 3.0);
  EXPECT_EQ(c.size(), 2u);
}

}  // namespace
}  // namespace placer
