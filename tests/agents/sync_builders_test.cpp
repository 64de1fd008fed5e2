// The synchronisation strategy builders (horovod, ps, parallax, poseidon) and the
// autosync-search descent: which strategy each variable gets, the gates on lossy choices,
// determinism.

#include <gtest/gtest.h>

#include "agents/api/placer.h"
#include "agents/sync/autosync.h"
#include "agents/sync/autosync_rl.h"
#include "agents/sync/sync_builders.h"
#include "simulator/cost_model.h"
#include "src/util/error.h"
#include "tests/agents/sync_toy.h"

namespace placer {
namespace {

struct Fixture : sync_testing::SyncToy {
  Plan run(const std::string& method, SearchBudget b = {}) {
    Plan p = make_placer(method)->search(problem(), b);
    p.validate(g, c);
    return p;
  }
};

TEST(SyncBuilders, HorovodAllReducesEverything) {
  Fixture f;
  const Plan p = f.run("horovod");
  EXPECT_EQ(p.data_parallel.replicas, 4);
  EXPECT_TRUE(p.synchronization.enabled);
  EXPECT_TRUE(p.synchronization.rules.empty());
  EXPECT_EQ(p.synchronization.default_strategy.synchronizer, Synchronizer::kAllReduce);
  EXPECT_EQ(p.synchronization.default_strategy.algorithm, SyncScheme::kRing);
}

TEST(SyncBuilders, ParallaxPutsTheSparseTableOnTheShardedPs) {
  Fixture f;
  const Plan p = f.run("parallax");
  ASSERT_EQ(p.synchronization.rules.size(), 1u);
  EXPECT_EQ(p.synchronization.rules[0].pattern, "embedding");
  EXPECT_EQ(p.synchronization.rules[0].strategy, sharded_ps({0, 2}));
  EXPECT_EQ(p.synchronization.strategy_of(f.g, f.g.find_op("fc")).synchronizer,
            Synchronizer::kAllReduce);
}

TEST(SyncBuilders, PsBalancesVariablesOverOneServerPerHost) {
  Fixture f;
  EXPECT_EQ(ps_servers(f.c, {0, 1, 2, 3}), (std::vector<int>{0, 2}));
  const Plan p = f.run("ps");
  // The table (256,000 B) is above a server's fair share (264,192 / 2): sharded over both
  // (the default); fc goes whole to the least-loaded server, the first on a tie.
  EXPECT_EQ(p.synchronization.default_strategy, sharded_ps({0, 2}));
  ASSERT_EQ(p.synchronization.rules.size(), 1u);
  EXPECT_EQ(p.synchronization.rules[0].pattern, "fc");
  EXPECT_EQ(p.synchronization.rules[0].strategy.destinations, std::vector<int>{0});
  EXPECT_EQ(p.synchronization.rules[0].strategy.shards, 1);
}

TEST(SyncBuilders, SfbOnlyWhereTheFactorsAreSmaller) {
  Fixture f;
  // fc: 64 x 32 weights; 4 workers each with 8 x 16 / 4 = 32 rows: 4 x 32 x (64 + 32) =
  // 12,288 factor elements against 2,048 - no.
  EXPECT_FALSE(sfb_pays(f.g, f.g.find_op("fc"), 4));
  EXPECT_FALSE(sfb_pays(f.g, f.g.find_op("embedding"), 4));  // not a MatMul
}

TEST(AutoSync, SeededNoWorseThanTheBuildersAndLosslessByDefault) {
  Fixture f;
  SearchBudget b;
  b.seed = 7;
  b.max_evaluations = 60;
  const Plan a = f.run("autosync-search", b), again = f.run("autosync-search", b);
  EXPECT_EQ(a.synchronization.default_strategy, again.synchronization.default_strategy);
  ASSERT_EQ(a.synchronization.rules.size(), again.synchronization.rules.size());
  for (size_t i = 0; i < a.synchronization.rules.size(); ++i) {
    EXPECT_EQ(a.synchronization.rules[i], again.synchronization.rules[i]);
  }
  const double t = f.sim.run(a).step_time;
  for (const char* m : {"horovod", "ps", "parallax", "poseidon"}) {
    EXPECT_LE(t, f.sim.run(f.run(m)).step_time) << m;
  }
  EXPECT_TRUE(lossy_choices(a.synchronization, f.g).empty());
  // On this slow link the PS moving 64 sparse rows per worker beats all-reducing the table.
  EXPECT_NE(a.synchronization.strategy_of(f.g, f.g.find_op("embedding")).synchronizer,
            Synchronizer::kAllReduce);
}

TEST(AutoSync, LossyChoicesOnlyWhenAllowed) {
  Fixture f;
  SearchBudget b;
  b.max_evaluations = 80;
  b.allow_compression = true;
  b.max_staleness = 1;
  const Plan p = f.run("autosync-search", b);
  const double lossless = f.sim.run(f.run("autosync-search")).step_time;
  EXPECT_LE(f.sim.run(p).step_time, lossless);
  for (const SyncRule& r : p.synchronization.rules) EXPECT_LE(r.strategy.staleness, 1);
}

TEST(AutoSync, DescentSpendsTheRunsOfItsBudget) {
  Fixture f;
  const Plan start = f.run("horovod");
  const double start_time = sync_step_time(f.problem(), start);
  SearchBudget b;
  b.max_evaluations = 3;
  EXPECT_EQ(
      autosync_coordinate_descent(f.problem(), b, start.synchronization, start_time).evaluations,
      3);
  // A time limit alone keeps the default run count: the same descent as without a budget.
  SearchBudget none, seconds;
  seconds.max_seconds = 1e6;
  const CoordinateDescentResult a =
      autosync_coordinate_descent(f.problem(), none, start.synchronization, start_time);
  const CoordinateDescentResult t =
      autosync_coordinate_descent(f.problem(), seconds, start.synchronization, start_time);
  EXPECT_EQ(a.evaluations, t.evaluations);
  EXPECT_EQ(a.config.rules, t.config.rules);
  EXPECT_LE(a.evaluations, kAutosyncDefaultEvals);
  SearchBudget negative;
  negative.max_evaluations = -1;
  EXPECT_THROW(
      autosync_coordinate_descent(f.problem(), negative, start.synchronization, start_time),
      ValidationError);
}

}  // namespace
}  // namespace placer
