// PlacementEnv (GDP's one-shot placement): seeded random rollouts on several graphs and
// clusters checking masks, rewards, determinism and plans; the OOM penalty, the reference
// time, units and bad options. (Every env's common checks: env_conformance_test.cpp.)
#include "env/placement_env.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
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
};

std::vector<Case> cases() {
  std::vector<Case> out;
  const std::vector<std::pair<std::string, Graph>> graphs = {
      {"mlp", mlp_step()}, {"transformer", transformer_step()}, {"random1", random_step(1)},
      {"random2", random_step(2)}};
  for (const auto& g : graphs) {
    out.push_back({g.first + "/two_gpus", g.second, two_gpus(), {}});
    out.push_back({g.first + "/dgx1x4", g.second, dgx1(), {0, 1, 2, 3}});
    out.push_back({g.first + "/dgx1x8", g.second, dgx1(), {}});
  }
  return out;
}

std::vector<int> random_action(const PlacementEnv& env, std::mt19937_64& rng) {
  std::vector<int> a(env.num_units());
  const auto& mask = env.action_mask();
  for (int u = 0; u < env.num_units(); ++u) {
    std::vector<int> ok;
    for (int d = 0; d < env.max_devices(); ++d) {
      if (mask[size_t(u) * env.max_devices() + d]) ok.push_back(d);
    }
    a[u] = ok[std::uniform_int_distribution<size_t>(0, ok.size() - 1)(rng)];
  }
  return a;
}

TEST(PlacementEnvConformance, RandomRollouts) {
  std::mt19937_64 rng(12345);
  int steps = 0, ooms = 0, slower = 0;
  for (Case& c : cases()) {
    SCOPED_TRACE(c.name);
    CostModel cost(c.cluster, default_profile());
    PlacementEnvOptions o;
    o.devices = c.devices;
    PlacementEnv env(c.graph, c.cluster, cost, o);
    const std::vector<int>& allowed = env.allowed_devices();
    const size_t expect_devices =
        c.devices.empty() ? size_t(std::min(c.cluster.num_devices(), 8)) : c.devices.size();
    ASSERT_EQ(allowed.size(), expect_devices);

    // Observation shape.
    const NodeFeatures& obs = env.observation();
    EXPECT_EQ(obs.num_nodes, int(c.graph.num_ops()));
    EXPECT_EQ(obs.x.size(), c.graph.num_ops() * size_t(obs.dim));
    for (float v : obs.x) ASSERT_TRUE(std::isfinite(v));

    // Units: backward / optimizer ops share the unit of their forward op.
    ASSERT_EQ(env.unit_of_op().size(), c.graph.num_ops());
    for (OpId i = 0; i < c.graph.num_ops(); ++i) {
      const OpId f = c.graph.op(i).forward_op;
      if (f != kNoOp) {
        EXPECT_EQ(env.unit_of_op()[i], env.unit_of_op()[f]);
      }
    }

    // Mask: exactly the allowed devices, on every unit.
    ASSERT_EQ(env.action_mask().size(), size_t(env.num_units()) * 8);
    for (int u = 0; u < env.num_units(); ++u) {
      for (int d = 0; d < 8; ++d) {
        const bool in = std::find(allowed.begin(), allowed.end(), d) != allowed.end();
        ASSERT_EQ(env.action_mask()[size_t(u) * 8 + d], in ? 1 : 0);
      }
    }

    // Single device on the reference device scores exactly -1.
    int best = -1;
    for (size_t k = 0; k < allowed.size(); ++k) {
      if (!env.single_device_oom()[k] &&
          (best < 0 || env.single_device_times()[k] < env.single_device_times()[best])) {
        best = int(k);
      }
    }
    ASSERT_GE(best, 0) << "every single-device run OOMs";
    EXPECT_EQ(env.reference_time(), env.single_device_times()[best]);
    const StepResult s1 = env.step(std::vector<int>(env.num_units(), allowed[best]));
    EXPECT_FALSE(s1.oom);
    EXPECT_TRUE(s1.done);
    EXPECT_EQ(s1.reward, -1.0);
    EXPECT_EQ(s1.step_time, env.reference_time());

    for (int rollout = 0; rollout < 8; ++rollout) {
      const std::vector<int> a = random_action(env, rng);
      const StepResult s = env.step(a);
      ++steps;
      ooms += s.oom ? 1 : 0;
      slower += !s.oom && s.reward < -1.0 ? 1 : 0;
      ASSERT_TRUE(std::isfinite(s.reward));
      ASSERT_TRUE(std::isfinite(s.step_time));
      EXPECT_TRUE(s.done);
      if (s.oom) {
        EXPECT_EQ(s.reward, -10.0);
      } else {
        EXPECT_LT(s.reward, 0.0);
        EXPECT_DOUBLE_EQ(s.reward, -std::sqrt(s.step_time / env.reference_time()));
      }
      // Determinism: the same action again, after another step in between.
      env.step(std::vector<int>(env.num_units(), allowed[0]));
      const StepResult again = env.step(a);
      EXPECT_EQ(again.reward, s.reward);
      EXPECT_EQ(again.step_time, s.step_time);
      // The plan is valid and places every op on its unit's device.
      const Plan p = env.to_plan(a);
      EXPECT_NO_THROW(p.validate(c.graph, c.cluster));
      for (OpId i = 0; i < c.graph.num_ops(); ++i) {
        ASSERT_EQ(p.placement[i], a[env.unit_of_op()[i]]);
      }
    }

    // Actions outside the mask or of the wrong size throw.
    std::vector<int> bad(env.num_units(), allowed[0]);
    bad.back() = c.devices.empty() ? 8 : 5;
    EXPECT_THROW(env.step(bad), Error);
    EXPECT_THROW(env.to_plan(bad), Error);
    bad.back() = -1;
    EXPECT_THROW(env.step(bad), Error);
    EXPECT_THROW(env.step(std::vector<int>(env.num_units() + 1, allowed[0])), Error);
  }
  EXPECT_EQ(steps, 12 * 8);
  std::printf("random rollouts: %d steps, %d OOM, %d slower than the reference\n", steps, ooms,
              slower);
  // Random op scattering is slower than one device on these small graphs (the point of
  // learning a placement).
  EXPECT_GT(slower, steps / 2);
}

TEST(PlacementEnv, OomGetsThePenaltyExactly) {
  // Two devices of 1 MiB each: the MLP's parameters alone exceed that.
  const Cluster c = testing::make_cluster(1, 2, testing::link(1e-6, 1e10),
                                          testing::link(1e-5, 1e9), 1ull << 20);
  CostModel cost(c, default_profile());
  const Graph g = mlp_step();
  PlacementEnvOptions o;
  o.oom_penalty = -7.5;
  PlacementEnv env(g, c, cost, o);
  EXPECT_TRUE(env.single_device_oom()[0]);
  EXPECT_TRUE(env.single_device_oom()[1]);
  // All OOM: the reference is the fastest single-device run anyway.
  EXPECT_EQ(env.reference_time(),
            std::min(env.single_device_times()[0], env.single_device_times()[1]));
  std::mt19937_64 rng(3);
  for (int k = 0; k < 5; ++k) {
    const StepResult s = env.step(random_action(env, rng));
    EXPECT_TRUE(s.oom);
    EXPECT_EQ(s.reward, -7.5);
  }
}

TEST(PlacementEnv, OomSingleDeviceRunsAreNotTheReference) {
  // Device 0 is big, device 1 has 1 MiB: on device 1 alone the MLP does not fit.
  Cluster c;
  c.name = "mixed";
  c.add_host("big", testing::test_spec(1ull << 40), 1);
  c.add_host("small", testing::test_spec(1ull << 20), 1);
  c.set_link(LinkLevel::kIntraHost, testing::link(1e-6, 1e10));
  c.set_link(LinkLevel::kInterHost, testing::link(1e-5, 1e9));
  CostModel cost(c, default_profile());
  const Graph g = mlp_step();
  PlacementEnv env(g, c, cost);
  EXPECT_FALSE(env.single_device_oom()[0]);
  EXPECT_TRUE(env.single_device_oom()[1]);
  EXPECT_EQ(env.reference_time(), env.single_device_times()[0]);
  EXPECT_EQ(env.step(std::vector<int>(env.num_units(), 0)).reward, -1.0);
  const StepResult s = env.step(std::vector<int>(env.num_units(), 1));
  EXPECT_TRUE(s.oom);
  EXPECT_EQ(s.reward, -10.0);
  // Random rollouts: each is OOM (penalty) or fits (-sqrt ratio), and both happen.
  std::mt19937_64 rng(9);
  int ooms = 0, fits = 0;
  for (int k = 0; k < 20; ++k) {
    const StepResult r = env.step(random_action(env, rng));
    if (r.oom) {
      ++ooms;
      EXPECT_EQ(r.reward, -10.0);
    } else {
      ++fits;
      EXPECT_DOUBLE_EQ(r.reward, -std::sqrt(r.step_time / env.reference_time()));
    }
  }
  EXPECT_GT(ooms, 0);
  EXPECT_EQ(ooms + fits, 20);
}

TEST(PlacementEnv, ReferenceBaselineAndOverride) {
  const Cluster c = two_gpus();
  CostModel cost(c, default_profile());
  const Graph g = mlp_step();
  PlacementEnv plain(g, c, cost);
  const double single = plain.reference_time();

  PlacementEnvOptions o;
  o.baseline_time = single / 4;  // a (hypothetical) 4x faster classical plan
  PlacementEnv env(g, c, cost, o);
  EXPECT_EQ(env.reference_time(), single / 4);
  const StepResult s = env.step(std::vector<int>(env.num_units(), 0));
  // Measured against the 4x faster baseline, not the single-device time.
  EXPECT_DOUBLE_EQ(s.reward, -std::sqrt(s.step_time / (single / 4)));

  env.set_reference(s.step_time);
  EXPECT_EQ(env.step(std::vector<int>(env.num_units(), 0)).reward, -1.0);
  EXPECT_THROW(env.set_reference(0), Error);
  EXPECT_THROW(env.set_reference(std::nan("")), Error);
}

TEST(PlacementEnv, ScoreReplacesTheSimulation) {
  const Graph g = mlp_step();
  const Cluster c = two_gpus();
  CostModel cost(c, default_profile());
  const double reference = PlacementEnv(g, c, cost).reference_time();

  // The score sees the placement as a plain plan (a device per op) and its time is the
  // step's; the reference is still the single-device one.
  std::vector<Plan> seen;
  PlacementEnvOptions o;
  o.score = [&](const Plan& placement) {
    seen.push_back(placement);
    SimResult r;
    r.step_time = reference / 4;
    return r;
  };
  PlacementEnv env(g, c, cost, o);
  EXPECT_EQ(env.reference_time(), reference);
  std::vector<int> action(env.num_units(), 0);
  action.back() = 1;
  const StepResult s = env.step(action);
  EXPECT_EQ(s.step_time, reference / 4);
  EXPECT_FALSE(s.oom);
  EXPECT_DOUBLE_EQ(s.reward, -0.5);  // -sqrt(1/4)
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].placement, env.to_plan(action).placement);
  EXPECT_FALSE(seen[0].pipeline.enabled());

  // A score that throws placer::Error is out of memory: the penalty, an infinite time.
  o.score = [](const Plan&) -> SimResult { throw Error("no pipeline fits"); };
  o.oom_penalty = -6;
  PlacementEnv failing(g, c, cost, o);
  const StepResult f = failing.step(action);
  EXPECT_TRUE(f.oom);
  EXPECT_EQ(f.reward, -6.0);
  EXPECT_TRUE(std::isinf(f.step_time));
}

TEST(PlacementEnv, UnitsWithoutColocationAreOps) {
  const Cluster c = two_gpus();
  CostModel cost(c, default_profile());
  const Graph g = mlp_step();
  PlacementEnvOptions o;
  o.colocate = false;
  PlacementEnv env(g, c, cost, o);
  EXPECT_EQ(env.num_units(), int(g.num_ops()));
  PlacementEnv co(g, c, cost);
  // Forward ops only: 3 linears, 2 relus and the loss (no colocation groups).
  int forward = 0;
  for (const Op& op : g.ops()) forward += op.forward_op == kNoOp ? 1 : 0;
  EXPECT_EQ(co.num_units(), forward);
  EXPECT_LT(co.num_units(), env.num_units());
}

TEST(PlacementEnv, BadOptionsThrow) {
  const Cluster c = two_gpus();
  CostModel cost(c, default_profile());
  const Graph g = mlp_step();
  PlacementEnvOptions o;
  o.devices = {0, 2};  // two_gpus has 2 devices
  EXPECT_THROW(PlacementEnv(g, c, cost, o), ValidationError);
  o.devices = {1, 1};
  EXPECT_THROW(PlacementEnv(g, c, cost, o), ValidationError);
  o.devices = {1};
  o.max_devices = 1;  // device 1 does not fit a mask of width 1
  EXPECT_THROW(PlacementEnv(g, c, cost, o), ValidationError);
}

}  // namespace
}  // namespace placer
