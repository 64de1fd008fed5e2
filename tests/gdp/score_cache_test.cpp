// ScoreCache: the bounded memory of scored placements of gdp_place.
#include <gtest/gtest.h>

#include <vector>

#include "agents/gdp/score_cache.h"

namespace placer {
namespace {

StepResult score(double t) {
  StepResult r;
  r.step_time = t;
  return r;
}

TEST(ScoreCache, ForgetsTheOldestBeyondItsCapacity) {
  ScoreCache cache(2);
  cache.add({0, 1}, score(1));
  cache.add({1, 1}, score(2));
  ASSERT_NE(cache.find({0, 1}), nullptr);
  EXPECT_EQ(cache.find({0, 1})->step_time, 1);
  cache.add({1, 0}, score(3));  // full: {0, 1}, the oldest, goes
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.find({0, 1}), nullptr);
  ASSERT_NE(cache.find({1, 1}), nullptr);
  EXPECT_EQ(cache.find({1, 1})->step_time, 2);
  ASSERT_NE(cache.find({1, 0}), nullptr);
  EXPECT_EQ(cache.find({1, 0})->step_time, 3);
  cache.add({0, 1}, score(4));  // scored again: the newest now, {1, 1} goes
  EXPECT_EQ(cache.find({1, 1}), nullptr);
  EXPECT_EQ(cache.find({0, 1})->step_time, 4);
}

TEST(ScoreCache, CapacityZeroRemembersNothing) {
  ScoreCache cache(0);
  cache.add({2}, score(1));
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.find({2}), nullptr);
}

}  // namespace
}  // namespace placer
