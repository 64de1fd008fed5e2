// Conformance of every environment of env/ through one interface (OpenSpiel's
// RandomSimTest style): each env is wrapped in a small adapter (reset, observation, legal
// actions, step, plan) and the same typed tests run seeded random episodes over the same
// graphs and clusters: reset gives a finite observation of the declared size, a random legal
// action steps, an illegal one is refused with a ValidationError, an episode ends within its
// bound, rewards are finite, the terminal plan validates and simulates, and the same seed
// gives the same trajectory. The adapters only call the envs' public interfaces.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "datasets/synthetic.h"
#include "env/opp_env.h"
#include "env/pipeline_env.h"
#include "env/placement_env.h"
#include "env/placeto_env.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;

/// One graph on one cluster; every env of a case shares them.
struct Case {
  std::string name;
  Graph graph;
  Cluster cluster;
  CostModel cost;
  Case(std::string n, Graph g, Cluster c)
      : name(std::move(n)), graph(std::move(g)), cluster(std::move(c)),
        cost(cluster, default_profile()) {}
};

Graph mlp_step() {
  MlpOptions o;
  o.layers = 3;
  o.input = 256;
  o.hidden = 512;
  o.classes = 64;
  o.batch = 32;
  return expand_training_step(make_mlp(o));
}

Graph transformer_step() {
  TransformerOptions t;
  t.layers = 2;
  t.d_model = 128;
  t.heads = 4;
  t.seq_len = 32;
  t.batch = 4;
  t.vocab = 1000;
  return expand_training_step(make_transformer(t));
}

/// mlp and transformer training steps, each on one host of 4 devices and on 2 hosts of 2.
std::vector<std::unique_ptr<Case>> cases() {
  std::vector<std::unique_ptr<Case>> out;
  const std::vector<std::pair<std::string, Graph>> graphs = {{"mlp", mlp_step()},
                                                             {"transformer", transformer_step()}};
  for (const auto& [name, g] : graphs) {
    out.push_back(std::make_unique<Case>(name + "/1x4", g,
                                         make_cluster(1, 4, link(5e-6, 100e9), link(5e-6, 100e9))));
    out.push_back(std::make_unique<Case>(name + "/2x2", g,
                                         make_cluster(2, 2, link(5e-6, 100e9), link(2e-5, 10e9))));
  }
  return out;
}

/// What one step of any env reports.
struct Step {
  double reward = 0;
  bool done = false;
};

/// Indices of the set entries of a mask.
std::vector<int> set_entries(const std::vector<uint8_t>& mask, size_t begin, size_t end) {
  std::vector<int> out;
  for (size_t i = begin; i < end; ++i) {
    if (mask[i]) out.push_back(int(i - begin));
  }
  return out;
}

int pick(const std::vector<int>& legal, std::mt19937_64& rng) {
  return legal[std::uniform_int_distribution<size_t>(0, legal.size() - 1)(rng)];
}

// ---------------------------------------------------------------------- adapters ----
// Each adapter: a static `kName`, a constructor from a Case, reset(seed), observation(),
// done(), max_steps() (the bound on an episode's length), random_action(rng) (one legal
// action, as the int sequence the env takes), illegal_action() (one the env must refuse),
// step(action) and plan() (the plan of the state reached).

/// GDP's one-shot placement: one step places every colocation unit.
struct PlacementAdapter {
  static constexpr const char* kName = "placement";
  using Action = std::vector<int>;
  PlacementEnv env;
  Action last;
  bool finished = false;

  explicit PlacementAdapter(const Case& c) : env(c.graph, c.cluster, c.cost, options(c)) {}
  static PlacementEnvOptions options(const Case& c) {
    PlacementEnvOptions o;
    o.max_devices = c.cluster.num_devices();
    return o;
  }
  void reset(uint64_t) { finished = false; }
  std::vector<float> observation() const { return env.observation().x; }
  size_t observation_size() const {
    return size_t(env.observation().num_nodes) * size_t(env.observation().dim);
  }
  bool done() const { return finished; }
  int max_steps() const { return 1; }
  Action random_action(std::mt19937_64& rng) const {
    Action a(size_t(env.num_units()));
    const size_t w = size_t(env.max_devices());
    for (size_t u = 0; u < a.size(); ++u) {
      a[u] = pick(set_entries(env.action_mask(), u * w, (u + 1) * w), rng);
    }
    return a;
  }
  Action illegal_action() const { return Action(size_t(env.num_units()), env.max_devices()); }
  Step step(const Action& a) {
    const StepResult r = env.step(a);
    last = a;
    finished = true;
    return {r.reward, r.done};
  }
  Plan plan() const { return env.to_plan(last); }
};

/// Placeto: one group (forward op with its gradient and update ops) per step.
struct PlacetoAdapter {
  static constexpr const char* kName = "placeto";
  using Action = int;
  PlacetoEnv env;

  explicit PlacetoAdapter(const Case& c)
      : env(c.graph, c.cluster, c.cost, groups(c.graph), options(c)) {}
  static PlacetoEnvOptions options(const Case& c) {
    PlacetoEnvOptions o;
    o.max_devices = c.cluster.num_devices();
    return o;
  }
  /// Dense group ids: an op's forward op (itself when it has none).
  static std::vector<int> groups(const Graph& g) {
    std::map<OpId, int> id;
    std::vector<int> out(g.num_ops());
    for (OpId i = 0; i < g.num_ops(); ++i) {
      const OpId root = g.op(i).forward_op == kNoOp ? i : g.op(i).forward_op;
      out[i] = id.emplace(root, int(id.size())).first->second;
    }
    return out;
  }
  void reset(uint64_t seed) { env.reset(seed); }
  std::vector<float> observation() const { return env.observation(); }
  size_t observation_size() const { return size_t(env.num_nodes()) * env.feature_dim(); }
  bool done() const { return env.done(); }
  int max_steps() const { return env.num_nodes(); }
  Action random_action(std::mt19937_64& rng) const {
    return pick(set_entries(env.action_mask(), 0, env.action_mask().size()), rng);
  }
  Action illegal_action() const { return env.max_devices(); }
  Step step(Action a) {
    const PlacetoStepResult r = env.step(a);
    return {r.reward, r.done};
  }
  Plan plan() const { return env.to_plan(env.placement()); }
};

/// Auto-MAP pipeline cuts: one cut per step, S - 1 steps.
struct PipelineAdapter {
  static constexpr const char* kName = "pipeline";
  using Action = int;
  PipelineEnv env;

  explicit PipelineAdapter(const Case& c) : env(c.graph, c.cluster, c.cost, options()) {}
  static PipelineEnvOptions options() {
    PipelineEnvOptions o;
    o.stages = 2;
    o.micro_batches = 2;
    return o;
  }
  void reset(uint64_t) { env.reset(); }
  std::vector<float> observation() const { return env.observation(); }
  size_t observation_size() const { return size_t(env.num_pivots()) * env.features_per_pivot(); }
  bool done() const { return env.done(); }
  int max_steps() const { return env.num_stages() - 1; }
  Action random_action(std::mt19937_64& rng) const {
    return pick(set_entries(env.action_mask(), 0, env.action_mask().size()), rng);
  }
  Action illegal_action() const { return env.num_pivots(); }
  Step step(Action a) {
    const PipelineStepResult r = env.step(a);
    return {r.reward, r.done};
  }
  Plan plan() const { return env.to_plan(env.cuts()); }
};

/// Auto-MAP operator partitioning: partition or replicate one variable dim per step.
struct OppAdapter {
  static constexpr const char* kName = "opp";
  using Action = int;
  OppEnv env;

  explicit OppAdapter(const Case& c) : env(c.graph, c.cluster, c.cost) {}
  void reset(uint64_t) { env.reset(); }
  std::vector<float> observation() const { return env.observation(); }
  size_t observation_size() const { return size_t(env.state_dim()); }
  bool done() const { return env.done(); }
  int max_steps() const { return int(env.slots().size()); }
  Action random_action(std::mt19937_64& rng) const {
    const std::vector<uint8_t> mask = env.mask();
    return pick(set_entries(mask, 0, mask.size()), rng);
  }
  Action illegal_action() const { return OppEnv::kNumActions; }
  Step step(Action a) {
    const OppEnv::StepResult r = env.step(a);
    return {r.reward, r.done};
  }
  Plan plan() const { return env.plan(); }
};

// ------------------------------------------------------------------- the checks ----

/// Everything an episode shows, for comparing two runs of the same seed.
struct Trajectory {
  std::vector<std::vector<float>> observations;
  std::vector<double> rewards;
  std::vector<int> placement;  // the terminal plan's placement
  int steps = 0;
};

void expect_valid_observation(const std::vector<float>& obs, size_t size) {
  ASSERT_EQ(obs.size(), size);
  for (size_t i = 0; i < obs.size(); ++i) ASSERT_TRUE(std::isfinite(obs[i])) << "entry " << i;
}

/// One seeded random episode: checks every step and returns what it saw.
template <typename A>
Trajectory run_episode(A& a, const Case& c, uint64_t seed) {
  Trajectory t;
  std::mt19937_64 rng(seed);
  a.reset(seed);
  EXPECT_FALSE(a.done());
  expect_valid_observation(a.observation(), a.observation_size());
  t.observations.push_back(a.observation());
  while (!a.done()) {
    if (t.steps >= a.max_steps()) {
      ADD_FAILURE() << "no end after " << t.steps << " steps (bound " << a.max_steps() << ")";
      break;
    }
    const Step s = a.step(a.random_action(rng));
    ++t.steps;
    EXPECT_TRUE(std::isfinite(s.reward)) << "step " << t.steps;
    EXPECT_EQ(s.done, a.done()) << "step " << t.steps;
    t.rewards.push_back(s.reward);
    expect_valid_observation(a.observation(), a.observation_size());
    t.observations.push_back(a.observation());
  }
  EXPECT_GE(t.steps, 1);
  const Plan plan = a.plan();
  EXPECT_NO_THROW(plan.validate(c.graph, c.cluster));
  Simulator sim(c.graph, c.cluster, c.cost);
  const SimResult r = sim.run(plan);
  EXPECT_TRUE(std::isfinite(r.step_time) && r.step_time > 0) << r.step_time;
  t.placement = plan.placement;
  return t;
}

template <typename A>
class EnvConformance : public ::testing::Test {};

using Adapters = ::testing::Types<PlacementAdapter, PlacetoAdapter, PipelineAdapter, OppAdapter>;
struct AdapterNames {
  template <typename A>
  static std::string GetName(int) {
    return A::kName;
  }
};
TYPED_TEST_SUITE(EnvConformance, Adapters, AdapterNames);

TYPED_TEST(EnvConformance, RandomEpisodesEndWithFiniteRewardsAndValidPlans) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c->name);
    TypeParam a(*c);
    for (uint64_t seed : {1, 2, 3}) {
      SCOPED_TRACE("seed " + std::to_string(seed));
      run_episode(a, *c, seed);
    }
  }
}

TYPED_TEST(EnvConformance, SameSeedSameTrajectory) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c->name);
    TypeParam first(*c);
    TypeParam second(*c);  // a fresh env: nothing carried over from `first`
    const Trajectory x = run_episode(first, *c, 7);
    const Trajectory y = run_episode(second, *c, 7);
    EXPECT_EQ(x.steps, y.steps);
    EXPECT_EQ(x.rewards, y.rewards);
    EXPECT_EQ(x.observations, y.observations);
    EXPECT_EQ(x.placement, y.placement);
    // The same env, reset, repeats it too.
    const Trajectory z = run_episode(first, *c, 7);
    EXPECT_EQ(x.rewards, z.rewards);
    EXPECT_EQ(x.observations, z.observations);
  }
}

TYPED_TEST(EnvConformance, IllegalActionIsRefusedAndChangesNothing) {
  const auto all = cases();
  const Case& c = *all.front();
  TypeParam a(c);
  a.reset(1);
  const std::vector<float> before = a.observation();
  EXPECT_THROW(a.step(a.illegal_action()), ValidationError);
  EXPECT_FALSE(a.done());
  EXPECT_EQ(a.observation(), before);
  run_episode(a, c, 1);  // the env still runs an episode after the refusal
}

}  // namespace
}  // namespace placer
