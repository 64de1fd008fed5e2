// PlacetoEnv: OpenSpiel RandomSimTest-style conformance (seeded random rollouts on several
// graphs, groupings and clusters: every node visited once, masks, observation flags, rewards
// summing to the cost change, determinism, valid plans), the group DAG and relations of a
// hand graph, hand-computed features and costs, and errors.
#include "env/placeto_env.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "datasets/coarsen.h"
#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/graph/algorithms.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"
#include "tests/env/env_fixtures.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

using testing::dgx1;
using testing::mlp_step;
using testing::random_step;
using testing::transformer_step;
using testing::two_gpus;

struct Case {
  std::string name;
  Graph graph;
  Cluster cluster;
  std::vector<int> devices;  // empty = default
  std::vector<int> groups;   // group of every op
};

std::vector<Case> cases() {
  std::vector<Case> out;
  const std::vector<std::pair<std::string, Graph>> graphs = {
      {"mlp", mlp_step()}, {"transformer", transformer_step()}, {"random1", random_step(1)}};
  for (const auto& g : graphs) {
    int n = 0;
    const std::vector<int> units = colocation_units(g.second, &n);
    CoarsenOptions co;
    co.target_groups = 12;
    const std::vector<int> coarse = coarsen(g.second, co).group_of_op;
    out.push_back({g.first + "/units/two_gpus", g.second, two_gpus(), {}, units});
    out.push_back({g.first + "/coarse12/dgx1x4", g.second, dgx1(), {0, 1, 2, 3}, coarse});
    out.push_back({g.first + "/coarse12/dgx1x8", g.second, dgx1(), {}, coarse});
  }
  return out;
}

int random_allowed(const PlacetoEnv& env, std::mt19937_64& rng) {
  const std::vector<int>& a = env.allowed_devices();
  return a[size_t(rng() % a.size())];
}

TEST(PlacetoEnvConformance, RandomRollouts) {
  std::mt19937_64 rng(2024);
  int episodes = 0, steps = 0;
  for (Case& c : cases()) {
    SCOPED_TRACE(c.name);
    CostModel cost(c.cluster, default_profile());
    // An independent simulator to check the env's numbers.
    Simulator check(c.graph, c.cluster, cost);
    SimOptions so;
    so.critical_path = false;
    for (PlacetoReward mode : {PlacetoReward::kIntermediate, PlacetoReward::kFinal}) {
      SCOPED_TRACE(to_string(mode));
      PlacetoEnvOptions o;
      o.devices = c.devices;
      o.reward = mode;
      PlacetoEnv env(c.graph, c.cluster, cost, c.groups, o);
      const int n = env.num_nodes();
      const int dim = env.feature_dim();
      ASSERT_EQ(dim, 3 + 8 + 2);
      ASSERT_GT(n, 1);
      // Order: a permutation of the nodes, topological for the group DAG.
      std::vector<int> pos(size_t(n), -1);
      for (int i = 0; i < n; ++i) pos[size_t(env.order()[size_t(i)])] = i;
      for (int p : pos) ASSERT_GE(p, 0);
      for (int v = 0; v < n; ++v) {
        for (int j = env.parent_offsets()[size_t(v)]; j < env.parent_offsets()[size_t(v) + 1]; ++j)
          ASSERT_LT(pos[size_t(env.parents()[size_t(j)])], pos[size_t(v)]);
      }
      // Mask: exactly the allowed devices.
      const std::vector<int>& allowed = env.allowed_devices();
      for (int d = 0; d < 8; ++d) {
        const bool in = std::find(allowed.begin(), allowed.end(), d) != allowed.end();
        ASSERT_EQ(env.action_mask()[size_t(d)], in ? 1 : 0);
      }
      EXPECT_THROW(env.step(allowed[0]), Error);  // before reset

      for (int ep = 0; ep < 3; ++ep) {
        const uint64_t seed = rng();
        env.reset(seed);
        ++episodes;
        const std::vector<int> start = env.placement();
        const int64_t sims_at_start = env.simulations();
        double start_cost = 0;
        if (mode == PlacetoReward::kIntermediate) {
          ASSERT_TRUE(env.cost_known());
          start_cost = env.current_cost();
        } else {
          EXPECT_FALSE(env.cost_known());
        }
        std::vector<int> actions, visited_order;
        double reward_sum = 0;
        PlacetoStepResult last;
        for (int t = 0; t < n; ++t) {
          ASSERT_FALSE(env.done());
          ASSERT_EQ(env.step_index(), t);
          const int v = env.current_node();
          visited_order.push_back(v);
          // Observation: t visited nodes, exactly one current (v), device one-hot = placement.
          const std::vector<float>& x = env.observation();
          ASSERT_EQ(x.size(), size_t(n) * size_t(dim));
          int visited = 0, current = -1;
          for (int u = 0; u < n; ++u) {
            const float* row = x.data() + size_t(u) * size_t(dim);
            visited += row[dim - 2] > 0.5f ? 1 : 0;
            if (row[dim - 1] > 0.5f) {
              ASSERT_EQ(current, -1);
              current = u;
            }
            for (int d = 0; d < 8; ++d)
              ASSERT_EQ(row[placeto_feat::kDevice + d], d == env.placement()[size_t(u)] ? 1.f : 0.f);
          }
          ASSERT_EQ(visited, t);
          ASSERT_EQ(current, v);
          // A masked device throws and changes nothing.
          EXPECT_THROW(env.step(c.devices.empty() ? 8 : 5), Error);
          EXPECT_THROW(env.step(-1), Error);
          ASSERT_EQ(env.step_index(), t);
          const int a = random_allowed(env, rng);
          actions.push_back(a);
          last = env.step(a);
          ++steps;
          ASSERT_TRUE(std::isfinite(last.reward));
          reward_sum += last.reward;
          if (mode == PlacetoReward::kFinal && t + 1 < n) {
            EXPECT_EQ(last.reward, 0.0);
            EXPECT_FALSE(last.simulated);
          }
          EXPECT_EQ(last.done, t + 1 == n);
        }
        EXPECT_TRUE(env.done());
        EXPECT_EQ(env.current_node(), -1);
        EXPECT_THROW(env.step(allowed[0]), Error);
        // Every node visited exactly once, in order().
        EXPECT_EQ(visited_order, env.order());
        // The final placement = start with the actions applied.
        std::vector<int> want = start;
        for (int t = 0; t < n; ++t) want[size_t(env.order()[size_t(t)])] = actions[size_t(t)];
        ASSERT_EQ(env.placement(), want);
        // The final cost matches an independent simulation of the plan.
        const Plan plan = env.to_plan(env.placement());
        EXPECT_NO_THROW(plan.validate(c.graph, c.cluster));
        for (OpId op = 0; op < c.graph.num_ops(); ++op)
          ASSERT_EQ(plan.placement[op], env.placement()[size_t(c.groups[op])]);
        const SimResult r = check.run(plan, so);
        double frac = 0;
        for (size_t d = 0; d < r.peak_memory.size(); ++d)
          frac = std::max(frac, double(r.peak_memory[d]) /
                                    double(c.cluster.device(int(d)).spec.memory_bytes));
        const double end_cost = env.cost_of(r.step_time, frac);
        ASSERT_TRUE(env.cost_known());
        EXPECT_EQ(last.step_time, r.step_time);
        EXPECT_EQ(last.oom, r.oom);
        EXPECT_DOUBLE_EQ(last.cost, end_cost);
        if (mode == PlacetoReward::kIntermediate) {
          // Rewards sum to the cost change p(s_0) - p(s_T).
          EXPECT_NEAR(reward_sum, start_cost - end_cost, 1e-9 * std::max(1.0, start_cost));
        } else {
          EXPECT_DOUBLE_EQ(reward_sum, -end_cost);
          EXPECT_EQ(env.simulations() - sims_at_start, 1);
        }
        // Determinism: the same seed and actions give the same start and rewards.
        env.reset(seed);
        EXPECT_EQ(env.placement(), start);
        double again = 0;
        for (int a : actions) again += env.step(a).reward;
        EXPECT_EQ(again, reward_sum);
      }
      // The best placement seen is among the simulated ones and valid.
      ASSERT_FALSE(env.best_placement().empty());
      EXPECT_GE(env.best_simulation(), 1);
      EXPECT_LE(env.best_simulation(), env.simulations());
      EXPECT_NO_THROW(env.to_plan(env.best_placement()).validate(c.graph, c.cluster));
    }
  }
  EXPECT_EQ(episodes, 9 * 2 * 3);
  std::printf("placeto env: %d episodes, %d steps\n", episodes, steps);
}

TEST(PlacetoEnv, SingleStartAndUnchangedStepsDoNotSimulate) {
  const Cluster c = dgx1();
  CostModel cost(c, default_profile());
  const Graph g = mlp_step();
  int n = 0;
  const std::vector<int> units = colocation_units(g, &n);
  PlacetoEnvOptions o;
  o.devices = {0, 1};
  o.start = PlacetoStart::kSingle;
  PlacetoEnv env(g, c, cost, units, o);
  env.reset(1);
  EXPECT_EQ(env.placement(), std::vector<int>(size_t(n), 0));
  const int64_t sims = env.simulations();
  EXPECT_EQ(sims, 1);
  // Keeping every node on device 0: no simulation, zero reward, cost unchanged.
  double sum = 0;
  while (!env.done()) {
    const PlacetoStepResult s = env.step(0);
    EXPECT_FALSE(s.simulated);
    sum += s.reward;
  }
  EXPECT_EQ(env.simulations(), sims);
  EXPECT_EQ(sum, 0.0);
  // Devices 0 and 1 are identical P100s: the single-device start is the reference and costs
  // exactly 1 (far below the memory threshold).
  EXPECT_EQ(env.current_time(), env.reference_time());
  EXPECT_EQ(env.current_cost(), 1.0);
}

// a -> b -> d, a -> c -> d, e alone; groups: {a}, {b}, {c}, {d}, {e}.
Graph diamond() {
  testing::TestGraph b("diamond");
  const TensorId ta = b.tensor("a.out", 1000);
  const TensorId tb = b.tensor("b.out", 2000);
  const TensorId tc = b.tensor("c.out", 3000);
  const TensorId td = b.tensor("d.out", 4000);
  const TensorId te = b.tensor("e.out", 5000);
  b.op("a", 1e9, {}, {ta});
  b.op("b", 2e9, {ta}, {tb});
  b.op("c", 3e9, {ta}, {tc});
  b.op("d", 4e9, {tb, tc}, {td});
  b.op("e", 6e9, {}, {te});
  return b.build();
}

TEST(PlacetoEnv, HandGraphStructureAndFeatures) {
  const Graph g = diamond();
  const Cluster c = testing::make_cluster(1, 2, testing::link(1e-6, 1e10), testing::link(1e-6, 1e10));
  CostModel cost(c, uniform_profile(1.0));
  PlacetoEnvOptions o;
  o.max_devices = 4;
  PlacetoEnv env(g, c, cost, {0, 1, 2, 3, 4}, o);
  ASSERT_EQ(env.num_nodes(), 5);
  EXPECT_EQ(env.allowed_devices(), (std::vector<int>{0, 1}));
  EXPECT_EQ(env.action_mask(), (std::vector<uint8_t>{1, 1, 0, 0}));
  // Parents / children.
  auto list = [](const std::vector<int>& off, const std::vector<int>& idx, int v) {
    return std::vector<int>(idx.begin() + off[size_t(v)], idx.begin() + off[size_t(v) + 1]);
  };
  EXPECT_EQ(list(env.parent_offsets(), env.parents(), 3), (std::vector<int>{1, 2}));
  EXPECT_EQ(list(env.parent_offsets(), env.parents(), 0), (std::vector<int>{}));
  EXPECT_EQ(list(env.child_offsets(), env.children(), 0), (std::vector<int>{1, 2}));
  EXPECT_EQ(list(env.child_offsets(), env.children(), 4), (std::vector<int>{}));
  // Relations of b (node 1): a ancestor, d descendant, c and e parallel.
  const std::vector<uint8_t>& rel = env.relation();
  EXPECT_EQ(std::vector<uint8_t>(rel.begin() + 5, rel.begin() + 10),
            (std::vector<uint8_t>{1, 0, 3, 2, 3}));
  // Of d (node 3): a, b, c ancestors, e parallel.
  EXPECT_EQ(std::vector<uint8_t>(rel.begin() + 15, rel.begin() + 20),
            (std::vector<uint8_t>{1, 1, 1, 0, 3}));
  // Of a: b, c, d descendants.
  EXPECT_EQ(std::vector<uint8_t>(rel.begin(), rel.begin() + 5),
            (std::vector<uint8_t>{0, 2, 2, 2, 3}));
  // Static features: runtime = FLOPs / 1e12 (1 byte of traffic each, no overhead), mean
  // 3.2e-3 s; out bytes: only tensors read by another group (a 1000, b 2000, c 3000; d and e
  // are read by nobody), mean 1200; each column the z-score of log1p(value / mean).
  const std::vector<float>& f = env.static_features();
  auto zscores = [](std::vector<double> v, double mean) {
    double m = 0, sq = 0;
    for (double& x : v) x = std::log1p(x / mean);
    for (double x : v) m += x / 5;
    for (double x : v) sq += (x - m) * (x - m) / 5;
    for (double& x : v) x = (x - m) / std::sqrt(sq);
    return v;
  };
  const std::vector<double> rt = zscores({1, 2, 3, 4, 6}, 3.2);
  const std::vector<double> ob = zscores({1000, 2000, 3000, 0, 0}, 1200);
  for (int v = 0; v < 5; ++v) {
    EXPECT_NEAR(f[size_t(v) * 3 + 0], rt[size_t(v)], 1e-4) << v;
    EXPECT_NEAR(f[size_t(v) * 3 + 1], ob[size_t(v)], 1e-5) << v;
    EXPECT_EQ(f[size_t(v) * 3 + 2], 0.f) << v;  // no parameters anywhere: all equal
  }
  // Cost: time / reference + penalty * max(0, memory fraction - threshold).
  EXPECT_DOUBLE_EQ(env.cost_of(2 * env.reference_time(), 0.5), 2.0);
  EXPECT_DOUBLE_EQ(env.cost_of(env.reference_time(), 1.2), 1.0 + 10 * (1.2 - 0.9));
  // Reference: all on one device = 16e9 FLOPs / 1e12 = 16 ms.
  EXPECT_NEAR(env.reference_time(), 0.016, 1e-9);
  // a, b on 0; c, d, e on 1 (reset_to + four steps that keep the devices).
  env.reset_to({0, 0, 1, 1, 1});
  EXPECT_EQ(env.order(), (std::vector<int>{0, 1, 2, 3, 4}));
  const double t0 = env.current_time();
  EXPECT_GT(t0, 0.0);
  EXPECT_LT(t0, 0.016);  // e runs in parallel with a, b
}

TEST(PlacetoEnv, Errors) {
  const Graph g = diamond();
  const Cluster c = testing::make_cluster(1, 2, testing::link(1e-6, 1e10), testing::link(1e-6, 1e10));
  CostModel cost(c, default_profile());
  EXPECT_THROW(PlacetoEnv(g, c, cost, {0, 1, 2}), ValidationError);          // wrong size
  EXPECT_THROW(PlacetoEnv(g, c, cost, {0, 1, 2, 3, 5}), ValidationError);    // group 4 unused
  EXPECT_THROW(PlacetoEnv(g, c, cost, {0, 1, 2, 3, -1}), ValidationError);   // negative
  PlacetoEnvOptions o;
  o.devices = {0, 2};
  EXPECT_THROW(PlacetoEnv(g, c, cost, {0, 1, 2, 3, 4}, o), ValidationError);  // no device 2
  o.devices = {0, 0};
  EXPECT_THROW(PlacetoEnv(g, c, cost, {0, 1, 2, 3, 4}, o), ValidationError);  // twice
  o.devices = {};
  o.memory_penalty = -1;
  EXPECT_THROW(PlacetoEnv(g, c, cost, {0, 1, 2, 3, 4}, o), ValidationError);
  o.memory_penalty = 1;
  PlacetoEnv env(g, c, cost, {0, 0, 1, 1, 2}, o);
  EXPECT_EQ(env.num_nodes(), 3);
  EXPECT_THROW(env.reset_to({0, 1}), ValidationError);
  EXPECT_THROW(env.reset_to({0, 1, 3}), ValidationError);
  EXPECT_THROW(env.evaluate({0, 1}), ValidationError);
  EXPECT_THROW(env.to_plan({0, 1, 2}), ValidationError);
  PlacetoReward r;
  EXPECT_TRUE(parse_placeto_reward("final", &r));
  EXPECT_EQ(r, PlacetoReward::kFinal);
  EXPECT_FALSE(parse_placeto_reward("sometimes", &r));
  PlacetoStart s;
  EXPECT_TRUE(parse_placeto_start("single", &s));
  EXPECT_EQ(s, PlacetoStart::kSingle);
  EXPECT_FALSE(parse_placeto_start("anywhere", &s));
}

}  // namespace
}  // namespace placer
