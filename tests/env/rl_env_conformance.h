#pragma once
// Conformance of the RL environments through their one interface (env/rl_env.h), in
// OpenSpiel's RandomSimTest style: the same typed tests run seeded random episodes of every
// env over the same graphs and clusters. reset(seed) gives a finite observation of the
// declared size, the same twice; every row of the mask has a legal action until done; a
// random legal action steps with a finite reward; an illegal one is refused with a
// ValidationError and changes nothing; an episode ends within horizon(); the terminal plan
// validates and simulates to a finite step time; the same seed gives the same trajectory
// and plan.
//
// The suite is value-free and type-parameterised (TYPED_TEST_SUITE_P): each test binary
// instantiates it with its makers, tests/env/env_conformance_test.cpp for the envs of env/
// and tests/agents/sync_env_conformance_test.cpp for SyncEnv (agents/sync). A maker is a
// struct constructible from `Case&` with a public member `env` (the environment, reached
// only through RlEnv), a static `kName`, and observation_size() (the declared size of the
// flattened observation).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "env/features.h"
#include "env/rl_env.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/io/plan_io.h"
#include "src/util/error.h"
#include "tests/env/env_fixtures.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer::conformance {

/// One graph on one cluster; every env of a case shares them.
struct Case {
  std::string name;
  Graph graph;
  Cluster cluster;
  CostModel cost;
  Simulator sim;
  Case(std::string n, Graph g, Cluster c)
      : name(std::move(n)),
        graph(std::move(g)),
        cluster(std::move(c)),
        cost(cluster, default_profile()),
        sim(graph, cluster, cost) {}
};

/// The MLP and transformer training steps of env_fixtures.h, each on one host of 4 devices
/// and on 2 hosts of 2.
inline std::vector<std::unique_ptr<Case>> cases() {
  using testing::link;
  using testing::make_cluster;
  std::vector<std::unique_ptr<Case>> out;
  const std::vector<std::pair<std::string, Graph>> graphs = {
      {"mlp", testing::mlp_step()}, {"transformer", testing::transformer_step()}};
  for (const auto& [name, g] : graphs) {
    out.push_back(std::make_unique<Case>(name + "/1x4", g,
                                         make_cluster(1, 4, link(5e-6, 100e9), link(5e-6, 100e9))));
    out.push_back(std::make_unique<Case>(name + "/2x2", g,
                                         make_cluster(2, 2, link(5e-6, 100e9), link(2e-5, 10e9))));
  }
  return out;
}

/// The observation as floats (a node-feature observation: its feature matrix).
inline const std::vector<float>& flat(const std::vector<float>& x) { return x; }
inline const std::vector<float>& flat(const NodeFeatures& f) { return f.x; }

/// An action of one column per mask row: the int itself for an int action.
template <typename Action>
Action as_action(const std::vector<int>& columns) {
  if constexpr (std::is_same_v<Action, int>) {
    return columns.at(0);
  } else {
    return columns;
  }
}

/// A uniformly drawn legal action; fails the test when a row has none.
template <typename O, typename A, typename R>
A random_legal_action(const RlEnv<O, A, R>& env, std::mt19937_64& rng) {
  const std::vector<uint8_t>& mask = env.action_mask();
  const size_t heads = size_t(env.action_heads());
  EXPECT_TRUE(heads > 0 && mask.size() % heads == 0) << mask.size() << " / " << heads;
  const size_t width = mask.size() / heads;
  std::vector<int> columns(heads, 0);
  for (size_t h = 0; h < heads; ++h) {
    std::vector<int> legal;
    for (size_t i = 0; i < width; ++i) {
      if (mask[h * width + i]) legal.push_back(int(i));
    }
    EXPECT_FALSE(legal.empty()) << "no legal action in row " << h;
    if (legal.empty()) return as_action<A>(columns);
    columns[h] = legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)];
  }
  return as_action<A>(columns);
}

/// One column past the mask in every row: an action every env refuses.
template <typename O, typename A, typename R>
A illegal_action(const RlEnv<O, A, R>& env) {
  const size_t heads = size_t(env.action_heads());
  return as_action<A>(std::vector<int>(heads, int(env.action_mask().size() / heads)));
}

/// The env as its interface: the tests reach it only through RlEnv.
template <typename O, typename A, typename R>
RlEnv<O, A, R>& rl(RlEnv<O, A, R>& env) {
  return env;
}

/// Everything an episode shows, for comparing two runs of the same seed.
struct Trajectory {
  std::vector<std::vector<float>> observations;
  std::vector<double> rewards;
  std::string plan;  // the terminal plan as JSON
  int steps = 0;
};

inline void expect_valid_observation(const std::vector<float>& obs, size_t size) {
  ASSERT_EQ(obs.size(), size);
  for (size_t i = 0; i < obs.size(); ++i) ASSERT_TRUE(std::isfinite(obs[i])) << "entry " << i;
}

/// One seeded random episode of legal actions: checks every step and returns what it saw.
template <typename O, typename A, typename R>
Trajectory run_episode(RlEnv<O, A, R>& env, const Case& c, size_t obs_size, uint64_t seed) {
  Trajectory t;
  std::mt19937_64 rng(seed);
  env.reset(seed);
  EXPECT_FALSE(env.done());
  expect_valid_observation(flat(env.observation()), obs_size);
  t.observations.push_back(flat(env.observation()));
  while (!env.done()) {
    if (t.steps >= env.horizon()) {
      ADD_FAILURE() << "no end after " << t.steps << " steps (horizon " << env.horizon() << ")";
      break;
    }
    const R s = env.step(random_legal_action(env, rng));
    ++t.steps;
    EXPECT_TRUE(std::isfinite(s.reward)) << "step " << t.steps;
    EXPECT_EQ(s.done, env.done()) << "step " << t.steps;
    t.rewards.push_back(s.reward);
    expect_valid_observation(flat(env.observation()), obs_size);
    t.observations.push_back(flat(env.observation()));
  }
  EXPECT_GE(t.steps, 1);
  const Plan plan = env.to_plan();
  EXPECT_NO_THROW(plan.validate(c.graph, c.cluster));
  Simulator sim(c.graph, c.cluster, c.cost);
  const SimResult r = sim.run(plan);
  EXPECT_TRUE(std::isfinite(r.step_time) && r.step_time > 0) << r.step_time;
  t.plan = plan_to_json(plan, c.graph, c.cluster);
  return t;
}

template <typename Maker>
class RlEnvConformance : public ::testing::Test {};
TYPED_TEST_SUITE_P(RlEnvConformance);

TYPED_TEST_P(RlEnvConformance, RandomEpisodesEndWithinTheHorizonWithValidPlans) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c->name);
    TypeParam m(*c);
    for (uint64_t seed : {1, 2, 3}) {
      SCOPED_TRACE("seed " + std::to_string(seed));
      run_episode(m.env, *c, m.observation_size(), seed);
    }
  }
}

TYPED_TEST_P(RlEnvConformance, ResetTwiceGivesTheSameObservation) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c->name);
    TypeParam m(*c);
    auto& env = rl(m.env);
    env.reset(5);
    const std::vector<float> first = flat(env.observation());
    env.reset(5);
    EXPECT_EQ(flat(env.observation()), first);
    run_episode(env, *c, m.observation_size(), 6);  // and after an episode
    env.reset(5);
    EXPECT_EQ(flat(env.observation()), first);
    EXPECT_FALSE(env.done());
  }
}

TYPED_TEST_P(RlEnvConformance, SameSeedSameTrajectoryAndPlan) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c->name);
    TypeParam first(*c);
    TypeParam second(*c);  // a fresh env: nothing carried over from `first`
    const size_t size = first.observation_size();
    const Trajectory x = run_episode(first.env, *c, size, 7);
    const Trajectory y = run_episode(second.env, *c, size, 7);
    EXPECT_EQ(x.steps, y.steps);
    EXPECT_EQ(x.rewards, y.rewards);
    EXPECT_EQ(x.observations, y.observations);
    EXPECT_EQ(x.plan, y.plan);
    // The same env, reset, repeats it too.
    const Trajectory z = run_episode(first.env, *c, size, 7);
    EXPECT_EQ(x.rewards, z.rewards);
    EXPECT_EQ(x.observations, z.observations);
    EXPECT_EQ(x.plan, z.plan);
  }
}

TYPED_TEST_P(RlEnvConformance, IllegalActionIsRefusedAndChangesNothing) {
  const auto all = cases();
  Case& c = *all.front();
  TypeParam m(c);
  auto& env = rl(m.env);
  env.reset(1);
  const std::vector<float> before = flat(env.observation());
  EXPECT_THROW(env.step(illegal_action(env)), ValidationError);
  EXPECT_FALSE(env.done());
  EXPECT_EQ(flat(env.observation()), before);
  run_episode(env, c, m.observation_size(), 1);  // the env still runs an episode after it
}

REGISTER_TYPED_TEST_SUITE_P(RlEnvConformance, RandomEpisodesEndWithinTheHorizonWithValidPlans,
                            ResetTwiceGivesTheSameObservation, SameSeedSameTrajectoryAndPlan,
                            IllegalActionIsRefusedAndChangesNothing);

/// Test names: the maker's kName.
struct MakerNames {
  template <typename Maker>
  static std::string GetName(int) {
    return Maker::kName;
  }
};

}  // namespace placer::conformance
