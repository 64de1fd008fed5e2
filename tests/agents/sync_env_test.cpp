// The MDP of the learned autosync search (agents/sync/sync_env.h) on the 2-variable sync
// test graph (a sparse 1000 x 64 embedding table and a 64 x 32 FC layer) over 2 hosts x 2
// devices: the units, the masks (counted by hand), the decoded strategies, the reward of
// every episode against an independent simulation, the reference, and named errors.
#include "agents/sync/sync_env.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "agents/sync/sync_builders.h"
#include "simulator/cost_model.h"
#include "src/util/error.h"
#include "tests/agents/sync_toy.h"

namespace placer {
namespace {

using sync_testing::make_sync_graph;

struct Toy : sync_testing::SyncToy {
  // The step of a section on the replicated plan, simulated outside the env.
  double simulate(const SynchronizationConfig& s) {
    Plan plan = replicated_plan(problem(), "test");
    plan.synchronization = s;
    const SimResult r = sim.run(plan);
    return r.oom ? std::numeric_limits<double>::infinity() : r.step_time;
  }
};

int allowed(const std::vector<uint8_t>& m) {
  int n = 0;
  for (uint8_t x : m) n += x;
  return n;
}

TEST(SyncEnv, UnitsLargestFirstAndHandCountedMasks) {
  Toy t;
  const Problem p = t.problem();
  SyncEnv env(p, {});
  ASSERT_EQ(env.units(), 2);  // both variables one by one, no rest unit
  EXPECT_EQ(env.unit_variables(0), std::vector<OpId>{t.g.find_op("embedding")});
  EXPECT_EQ(env.unit_variables(1), std::vector<OpId>{t.g.find_op("fc")});
  EXPECT_EQ(env.simulations(), 4);  // the four builders
  // Embedding, lossless: ring, hierarchical, PS sharded (with / without local sum), PS on
  // server 0 or 1, all-gather (sparse) = 7; no SFB (not a MatMul).
  EXPECT_EQ(allowed(env.mask()), 7);
  EXPECT_EQ(env.observation().size(), size_t(SyncEnv::kStateDim));
  EXPECT_FLOAT_EQ(env.observation()[2], 1.f);  // sparse
  // rows touched per worker: 8 x 16 lookups / 4 workers = 32 of 1000 rows.
  EXPECT_FLOAT_EQ(env.observation()[3], 32.f / 1000.f);
  EXPECT_FLOAT_EQ(env.observation()[1], float(256000.0 / (256000.0 + 8192.0)));
  env.step(SyncEnv::action_of(0, 0, 0));
  // FC: the same minus all-gather = 6 (its factors, 32 x 96 floats per worker, exceed the
  // 64 x 32 matrix: no SFB).
  EXPECT_EQ(allowed(env.mask()), 6);
  // The context: all of the embedding's bytes decided as ring all-reduce.
  const std::vector<float> x = env.observation();
  EXPECT_FLOAT_EQ(x[SyncEnv::kUnitFeatures + SyncEnv::kClusterFeatures + 0],
                  float(256000.0 / (256000.0 + 8192.0)));

  // Lossy choices allowed: compressors on float variables (PowerSGD not on all-gather) and
  // staleness 0..1: embedding (6 x 4 + 1 x 3) x 2 = 54, FC 6 x 4 x 2 = 48.
  SyncEnvOptions lossy;
  lossy.allow_compression = true;
  lossy.max_staleness = 1;
  SyncEnv env2(p, lossy);
  EXPECT_EQ(allowed(env2.mask()), 54);
  env2.step(SyncEnv::action_of(8, 3, 1));  // all-gather + top-k + staleness 1
  EXPECT_EQ(allowed(env2.mask()), 48);
  // An integer table takes no compressor.
  Toy ti;
  ti.g = make_sync_graph(DType::kI32);
  Simulator sim_i{ti.g, ti.c, ti.cost};
  SyncEnv env3(Problem{ti.g, ti.c, ti.cost, sim_i, {}}, lossy);
  EXPECT_EQ(allowed(env3.mask()), 7 * 2);
}

TEST(SyncEnv, ActionsDecodeToStrategies) {
  const std::vector<int> servers = {0, 2};
  const VariableSync a = SyncEnv::action_strategy(SyncEnv::action_of(3, 2, 1), servers);
  EXPECT_EQ(a.synchronizer, Synchronizer::kParameterServer);
  EXPECT_EQ(a.destinations, servers);
  EXPECT_EQ(a.shards, 2);
  EXPECT_FALSE(a.local_aggregation);
  EXPECT_EQ(a.compressor, Compressor::kPowerSGD);
  EXPECT_EQ(a.powersgd_rank, 4);
  EXPECT_EQ(a.staleness, 1);
  const VariableSync b = SyncEnv::action_strategy(SyncEnv::action_of(5, 0, 0), servers);
  EXPECT_EQ(b.destinations, std::vector<int>{2});
  EXPECT_EQ(b.shards, 1);
  EXPECT_EQ(SyncEnv::action_strategy(SyncEnv::action_of(1, 0, 0), servers).algorithm,
            SyncScheme::kHierarchical);
  EXPECT_EQ(SyncEnv::action_name(SyncEnv::action_of(8, 3, 2)), "allgather+topk1%+s2");
  EXPECT_EQ(SyncEnv::action_strategy(SyncEnv::action_of(9, 0, 0), servers).synchronizer,
            Synchronizer::kFactorBroadcast);
  // Every action of the set decodes to a distinct strategy (on 4 servers).
  std::set<std::string> names;
  for (int i = 0; i < SyncEnv::kNumActions; ++i) names.insert(SyncEnv::action_name(i));
  EXPECT_EQ(names.size(), size_t(SyncEnv::kNumActions));
  EXPECT_THROW(SyncEnv::action_strategy(SyncEnv::action_of(7, 0, 0), servers), ValidationError);
}

// Every episode of the lossless MDP: the reward is 0 after the first unit and
// clamp(log(T_ref / T), -1, 1) after the second, T simulated independently from the
// hand-built section; T_ref the best of the four builders.
TEST(SyncEnv, RewardOfEveryEpisodeMatchesIndependentSimulation) {
  Toy t;
  const Problem p = t.problem();
  SyncEnv env(p, {});
  const std::vector<int> servers = {0, 2};
  double ref = std::numeric_limits<double>::infinity();
  for (const SynchronizationConfig& s :
       {horovod_sync(), ps_sync(t.g, servers), parallax_sync(t.g, servers, 4),
        poseidon_sync(t.g, servers, 4)}) {
    ref = std::min(ref, t.simulate(s));
  }
  EXPECT_DOUBLE_EQ(env.reference_time(), ref);
  const std::vector<uint8_t> m0 = env.mask();
  double best = std::numeric_limits<double>::infinity();
  int episodes = 0;
  for (int a0 = 0; a0 < SyncEnv::kNumActions; ++a0) {
    if (!m0[size_t(a0)]) continue;
    env.reset();
    const SyncEnv::StepResult r0 = env.step(a0);
    EXPECT_FALSE(r0.done);
    EXPECT_EQ(r0.reward, 0.0);
    const std::vector<uint8_t> m1 = env.mask();
    for (int a1 = 0; a1 < SyncEnv::kNumActions; ++a1) {
      if (!m1[size_t(a1)]) continue;
      env.reset();
      env.step(a0);
      const SyncEnv::StepResult r1 = env.step(a1);
      ASSERT_TRUE(r1.done);
      SynchronizationConfig s;
      s.enabled = true;
      s.rules.push_back({SyncMatch::kName, "embedding", SyncEnv::action_strategy(a0, servers)});
      s.rules.push_back({SyncMatch::kName, "fc", SyncEnv::action_strategy(a1, servers)});
      const double time = t.simulate(s);
      EXPECT_DOUBLE_EQ(env.step_time(), time)
          << SyncEnv::action_name(a0) << " / " << SyncEnv::action_name(a1);
      EXPECT_DOUBLE_EQ(r1.reward, std::clamp(std::log(ref / time), -1.0, 1.0));
      best = std::min(best, time);
      ++episodes;
    }
  }
  EXPECT_EQ(episodes, 7 * 6);
  // The PS moving 32 sparse rows per worker beats all-reducing the whole table: the
  // optimum is faster than horovod (ring for both).
  env.reset();
  env.step(SyncEnv::action_of(0, 0, 0));
  env.step(SyncEnv::action_of(0, 0, 0));
  EXPECT_LT(best, env.step_time());
  EXPECT_EQ(env.simulations(), 4 + 42 + 1);
}

// The demonstration episode: the best builder's section as actions. On the toy every
// builder's section is expressible (one PS per host, variables whole or sharded), so the
// episode reproduces the reference time exactly.
TEST(SyncEnv, ReferenceActionsReplayTheBestBuilder) {
  Toy t;
  const Problem p = t.problem();
  SyncEnv env(p, {});
  const std::vector<int> demo = env.reference_actions();
  ASSERT_EQ(demo.size(), 2u);
  for (int a : demo) env.step(a);
  EXPECT_DOUBLE_EQ(env.step_time(), env.reference_time());
  // The best builder puts the sparse table on a parameter server.
  EXPECT_EQ(SyncEnv::action_strategy(demo[0], {0, 2}).synchronizer,
            Synchronizer::kParameterServer);
}

TEST(SyncEnv, NamedErrors) {
  Toy t;
  const Problem p = t.problem();
  SyncEnvOptions bad;
  bad.max_units = 0;
  EXPECT_THROW(SyncEnv(p, bad), ValidationError);
  bad.max_units = 3;
  bad.max_staleness = -1;
  try {
    SyncEnv env(p, bad);
    FAIL() << "negative staleness accepted";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("max-staleness"), std::string::npos) << e.what();
  }
  SyncEnv env(p, {});
  // All-gather on the FC layer (dense) is masked; a compressor without permission too.
  env.step(SyncEnv::action_of(0, 0, 0));
  EXPECT_THROW(env.step(SyncEnv::action_of(8, 0, 0)), ValidationError);
  EXPECT_THROW(env.step(SyncEnv::action_of(0, 1, 0)), ValidationError);
  EXPECT_THROW(env.step(-1), ValidationError);
  env.step(SyncEnv::action_of(0, 0, 0));
  EXPECT_THROW(env.step(SyncEnv::action_of(0, 0, 0)), ValidationError);  // after the end
  // One device: no data parallelism.
  Problem one{t.g, t.c, t.cost, t.sim, {0}};
  EXPECT_THROW(SyncEnv(one, {}), Error);
}

TEST(SyncEnv, RestUnitIsTheDefault) {
  Toy t;
  const Problem p = t.problem();
  SyncEnvOptions o;
  o.max_units = 1;
  SyncEnv env(p, o);
  ASSERT_EQ(env.units(), 2);
  EXPECT_EQ(env.unit_variables(1), std::vector<OpId>{t.g.find_op("fc")});
  env.step(SyncEnv::action_of(2, 0, 0));
  // The rest unit: no all-gather / SFB (variables of every kind share it).
  EXPECT_FALSE(env.mask()[size_t(SyncEnv::action_of(8, 0, 0))]);
  env.step(SyncEnv::action_of(1, 0, 0));
  const SynchronizationConfig s = env.config();
  EXPECT_EQ(s.default_strategy.algorithm, SyncScheme::kHierarchical);
  ASSERT_EQ(s.rules.size(), 1u);
  EXPECT_EQ(s.rules[0].pattern, "embedding");
  EXPECT_EQ(s.rules[0].strategy.synchronizer, Synchronizer::kParameterServer);
}

}  // namespace
}  // namespace placer
