// PipelineEnv (Auto-MAP pipeline cuts): pivots, features, masks, plans and rewards on
// hand-built chains with known costs, brute force over all cut sets, pruning, bad options.
#include "env/pipeline_env.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;
using testing::TestGraph;

// x -> op0 -> t0 -> op1 -> ... -> op{n-1}: op i has flops[i] FLOPs (flops / 1e12 seconds on
// the test devices), param bytes params[i], scope "block.i", and writes act[i] bytes.
Graph chain(const std::vector<double>& flops, const std::vector<uint64_t>& params,
            const std::vector<uint64_t>& act) {
  TestGraph b("chain");
  TensorId in = b.tensor("x", 1000);
  for (size_t i = 0; i < flops.size(); ++i) {
    const TensorId out = b.tensor("t" + std::to_string(i), act[i]);
    const OpId o = b.op("op" + std::to_string(i), flops[i], {in}, {out});
    b.at(o).scope = "block." + std::to_string(i);
    b.at(o).param_bytes = params[i];
    in = out;
  }
  return b.build();
}

// Six ops: 1, 2, 3, 4, 5, 5 ms; 1000 parameter bytes each; op i writes (i + 1) MB.
Graph six() {
  return chain({1e9, 2e9, 3e9, 4e9, 5e9, 5e9}, std::vector<uint64_t>(6, 1000),
               {1000000, 2000000, 3000000, 4000000, 5000000, 6000000});
}

// One host of `n` devices, links of 1 GB/s without latency.
Cluster host_of(int n) { return make_cluster(1, n, link(0, 1e9), link(0, 1e9)); }

struct Fixture {
  Graph graph;
  Cluster cluster;
  CostModel cost;
  Fixture(Graph g, Cluster c)
      : graph(std::move(g)), cluster(std::move(c)), cost(cluster, uniform_profile(1.0)) {}
};

std::vector<int> allowed(const PipelineEnv& env) {
  std::vector<int> out;
  for (int i = 0; i < env.num_pivots(); ++i) {
    if (env.action_mask()[static_cast<size_t>(i)]) out.push_back(i);
  }
  return out;
}

TEST(PipelineEnvTest, PivotsAreModuleBoundaries) {
  Fixture f(six(), host_of(3));
  PipelineEnvOptions o;
  o.stages = 3;
  o.prune = false;
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  EXPECT_EQ(env.pivots(), (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(env.forward_order().size(), 6u);
  EXPECT_EQ(env.num_pivots() * env.features_per_pivot(),
            static_cast<int>(env.observation().size()));
  EXPECT_EQ(env.features_per_pivot(), 6);
  EXPECT_NEAR(env.compute_between(0, 6), 20e-3, 1e-9);
  EXPECT_EQ(env.device_groups(), (std::vector<std::vector<int>>{{0}, {1}, {2}}));
  EXPECT_EQ(env.micro_batches(), 12);  // 4 x stages (batch size unknown)
}

TEST(PipelineEnvTest, SameModuleOpsAreNotCut) {
  // Ops 0-1 in "enc.layers.0.a"/"enc.layers.0.b", op 2 unscoped, ops 3-5 in layers.1/2/2.
  TestGraph b("scoped");
  TensorId in = b.tensor("x", 8);
  const std::vector<std::string> scopes = {"enc.layers.0.a",   "enc.layers.0.b", "",
                                           "enc/layers/1/mlp", "enc.layers.2",   "enc.layers.2.x"};
  for (size_t i = 0; i < scopes.size(); ++i) {
    const TensorId out = b.tensor("t" + std::to_string(i), 8);
    const OpId o = b.op("op" + std::to_string(i), 1e9, {in}, {out});
    b.at(o).scope = scopes[i];
    b.at(o).param_bytes = 4;
    in = out;
  }
  Fixture f(b.build(), host_of(2));
  PipelineEnvOptions o;
  o.prune = false;
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  EXPECT_EQ(env.pivots(), (std::vector<int>{3, 4}));
  // One scope level deeper: sub-modules a | b | (unscoped) | 1.mlp | 2 | 2.x.
  o.scope_depth = 1;
  PipelineEnv deeper(f.graph, f.cluster, f.cost, o);
  EXPECT_EQ(deeper.pivots(), (std::vector<int>{1, 3, 4, 5}));
  o.scope_depth = -1;
  EXPECT_THROW(PipelineEnv(f.graph, f.cluster, f.cost, o), ValidationError);
  o.scope_depth = 0;
  // Without scopes: every position.
  o.use_scopes = false;
  PipelineEnv all(f.graph, f.cluster, f.cost, o);
  EXPECT_EQ(all.pivots(), (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST(PipelineEnvTest, FeaturesAfterOneCut) {
  Fixture f(six(), host_of(3));
  PipelineEnvOptions o;
  o.stages = 3;
  o.prune = false;
  o.reference_time = 1.0;  // features in seconds
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  const int FP = env.features_per_pivot();
  // Before any cut, pivot 2 (position 3): stages 6 ms, then 14 ms over two devices = 7 ms.
  const float* r = env.observation().data() + 2 * FP;
  EXPECT_NEAR(r[3], 2 * 3e6 / 1e9, 1e-7);  // t2 (3 MB) forward and backward at 1 GB/s
  EXPECT_NEAR(r[4], 6.0 / 7.0, 1e-6);
  EXPECT_EQ(r[5], 0.0f);
  EXPECT_EQ(r[0], 0.0f);  // single-device groups: no all-reduce

  env.step(1);  // cut at position 2: stage 0 = ops 0, 1 = 3 ms
  EXPECT_EQ(env.cuts(), (std::vector<int>{1}));
  // Pivot 3 (position 4): stage 1 = ops 2, 3 = 7 ms, last stage = ops 4, 5 = 10 ms.
  r = env.observation().data() + 3 * FP;
  EXPECT_NEAR(r[4], 3.0 / 10.0, 1e-6);
  EXPECT_NEAR(r[3], 2 * 4e6 / 1e9, 1e-7);  // max(t1: 4 ms, t3: 8 ms)
  EXPECT_EQ(r[5], 0.0f);
  // Pivot 2 (position 3): stage 1 = 3 ms, last = 14 ms; transfer max(4 ms, 6 ms).
  r = env.observation().data() + 2 * FP;
  EXPECT_NEAR(r[4], 3.0 / 14.0, 1e-6);
  EXPECT_NEAR(r[3], 2 * 3e6 / 1e9, 1e-7);
  // The taken pivot is flagged, its other features are 0.
  r = env.observation().data() + 1 * FP;
  EXPECT_EQ(r[5], 1.0f);
  EXPECT_EQ(r[4], 0.0f);
}

TEST(PipelineEnvTest, AllReduceFeatureOfReplicatedStage) {
  // Two hosts of two devices, S = 2: one host per stage, each stage all-reduces.
  Fixture f(six(), make_cluster(2, 2, link(1e-6, 1e10), link(1e-5, 1e9)));
  PipelineEnvOptions o;
  o.prune = false;
  o.reference_time = 1.0;
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  ASSERT_EQ(env.device_groups(), (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  const float* r = env.observation().data() + 1 * env.features_per_pivot();  // position 2
  const double first =
      f.cost.collective_time(CollectiveKind::kAllReduce, {0, 1}, 2000, SyncScheme::kAuto);
  const double second =
      f.cost.collective_time(CollectiveKind::kAllReduce, {2, 3}, 4000, SyncScheme::kAuto);
  EXPECT_GT(first, 0);
  EXPECT_NEAR(r[0], first, 1e-9);
  EXPECT_NEAR(r[1], second, 1e-9);
  // Compute per device: 3 ms / 2 vs 17 ms / 2.
  EXPECT_NEAR(r[3], 3.0 / 17.0, 1e-6);
  // Activations over the host link to a stage of two replicas: half the bytes each way.
  EXPECT_NEAR(r[2], 2 * (1e-5 + 1e6 / 1e9), 1e-8);
}

TEST(PipelineEnvTest, DeviceGroupsPreferWholeHosts) {
  Fixture three_hosts(six(), make_cluster(3, 2, link(0, 1e10), link(0, 1e9)));
  PipelineEnvOptions o;
  o.prune = false;
  PipelineEnv a(three_hosts.graph, three_hosts.cluster, three_hosts.cost, o);
  EXPECT_EQ(a.device_groups(), (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5}}));
  Fixture one_host(six(), host_of(8));
  o.stages = 3;
  PipelineEnv b(one_host.graph, one_host.cluster, one_host.cost, o);
  EXPECT_EQ(b.device_groups(), (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}, {6, 7}}));
  o.devices = {7, 5, 3};
  PipelineEnv c(one_host.graph, one_host.cluster, one_host.cost, o);
  EXPECT_EQ(c.device_groups(), (std::vector<std::vector<int>>{{7}, {5}, {3}}));
}

TEST(PipelineEnvTest, MasksLeaveRoomAndRespectOrder) {
  Fixture f(six(), host_of(4));
  PipelineEnvOptions o;
  o.stages = 4;
  o.prune = false;
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  // First of three cuts: two more must fit after it.
  EXPECT_EQ(allowed(env), (std::vector<int>{0, 1, 2}));
  env.step(1);
  EXPECT_EQ(allowed(env), (std::vector<int>{2, 3}));
  EXPECT_THROW(env.step(0), ValidationError);  // before the last cut
  EXPECT_THROW(env.step(4), ValidationError);  // no room for the last cut
  env.step(3);
  EXPECT_EQ(allowed(env), (std::vector<int>{4}));
  const PipelineStepResult r = env.step(4);
  EXPECT_TRUE(r.done);
  EXPECT_TRUE(allowed(env).empty());
  EXPECT_THROW(env.step(4), Error);
  env.reset();
  EXPECT_TRUE(env.cuts().empty());
  EXPECT_EQ(allowed(env), (std::vector<int>{0, 1, 2}));
}

TEST(PipelineEnvTest, EveryStageHoldsAParameter) {
  // Ops 1 and 4 own no parameters: a stage of op 1 alone (or op 4 alone) is forbidden.
  Graph g =
      chain({1e9, 1e9, 1e9, 1e9, 1e9, 1e9}, {8, 0, 8, 8, 0, 8}, std::vector<uint64_t>(6, 100));
  Fixture f(std::move(g), host_of(3));
  PipelineEnvOptions o;
  o.stages = 3;
  o.prune = false;
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  env.step(0);  // stage 0 = op 0
  // Position 2 would leave op 1 (no parameters) alone in stage 1; positions 3, 4, 5 are fine
  // (the last stage always keeps op 5).
  EXPECT_EQ(allowed(env), (std::vector<int>{2, 3, 4}));
  // The last stage must hold a parameter: a graph whose last op owns none cannot cut right
  // before it.
  Graph g2 = chain({1e9, 1e9, 1e9, 1e9}, {8, 8, 8, 0}, std::vector<uint64_t>(4, 100));
  Fixture f2(std::move(g2), host_of(2));
  o.stages = 2;
  PipelineEnv env2(f2.graph, f2.cluster, f2.cost, o);
  EXPECT_EQ(allowed(env2), (std::vector<int>{0, 1}));
}

TEST(PipelineEnvTest, TerminalPlanMatchesSimulator) {
  Fixture f(six(), host_of(3));
  PipelineEnvOptions o;
  o.stages = 3;
  o.prune = false;
  o.micro_batches = 4;
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  EXPECT_EQ(env.step(1).reward, 0.0);
  const PipelineStepResult r = env.step(3);
  ASSERT_TRUE(r.done);
  const Plan plan = env.to_plan({1, 3});
  EXPECT_NO_THROW(plan.validate(f.graph, f.cluster));
  ASSERT_EQ(plan.pipeline.stages.size(), 3u);
  EXPECT_EQ(plan.pipeline.stages[1].ops, (std::vector<OpId>{2, 3}));
  EXPECT_EQ(plan.pipeline.micro_batches, 4);
  Simulator sim(f.graph, f.cluster, f.cost);
  const SimResult s = sim.run(plan);
  EXPECT_DOUBLE_EQ(r.step_time, s.step_time);
  EXPECT_DOUBLE_EQ(r.reward, env.reference_time() / s.step_time);
  EXPECT_FALSE(r.oom);
  // The reference is the center solution's simulated time.
  EXPECT_DOUBLE_EQ(env.reference_time(), sim.run(env.to_plan(env.center_solution())).step_time);
}

TEST(PipelineEnvTest, BruteForceOptimumGetsTheBestReward) {
  // Uneven ops and a slow link; the balanced cuts (positions 3 and 4) carry 50 MB each, so
  // the best cuts trade balance against transfers.
  Graph g = chain({4e9, 1e9, 1e9, 6e9, 2e9, 2e9, 3e9}, std::vector<uint64_t>(7, 64),
                  {1000, 1000, 50000000, 50000000, 1000, 1000, 1000});
  Fixture f(std::move(g), make_cluster(1, 3, link(1e-5, 2e9), link(1e-5, 2e9)));
  PipelineEnvOptions o;
  o.stages = 3;
  o.prune = false;
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  Simulator sim(f.graph, f.cluster, f.cost);
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> best_cuts;
  int count = 0;
  for (int a = 0; a < env.num_pivots(); ++a) {
    for (int b = a + 1; b < env.num_pivots(); ++b) {
      const double t = sim.run(env.to_plan({a, b})).step_time;
      ++count;
      if (t < best) {
        best = t;
        best_cuts = {a, b};
      }
    }
  }
  EXPECT_EQ(count, 15);
  env.reset();
  env.step(best_cuts[0]);
  const PipelineStepResult r = env.step(best_cuts[1]);
  EXPECT_DOUBLE_EQ(r.step_time, best);
  EXPECT_DOUBLE_EQ(r.reward, env.reference_time() / best);
  // No other episode does better.
  for (int a = 0; a < env.num_pivots(); ++a) {
    for (int b = a + 1; b < env.num_pivots(); ++b) {
      EXPECT_LE(env.evaluate({a, b}).reward, r.reward);
    }
  }
  EXPECT_EQ(env.center_solution(), (std::vector<int>{2, 3}));
  EXPECT_NE(best_cuts, env.center_solution());
  EXPECT_GT(r.reward, 1.0);  // better than the center solution (the reference)
}

// Twenty ops of 1 ms on four devices, split into four stages with prune radius 1.
struct TwentyOps : Fixture {
  TwentyOps()
      : Fixture(chain(std::vector<double>(20, 1e9), std::vector<uint64_t>(20, 8),
                      std::vector<uint64_t>(20, 1000)),
                host_of(4)) {
    options.stages = 4;
    options.prune_radius = 1;
  }
  PipelineEnvOptions options;
};

TEST(PipelineEnvTest, PruningKeepsTheBalancedSolution) {
  TwentyOps f;
  PipelineEnv env(f.graph, f.cluster, f.cost, f.options);
  ASSERT_EQ(env.num_pivots(), 19);  // positions 1 .. 19
  // Balanced cuts at positions 5, 10, 15 = pivots 4, 9, 14.
  EXPECT_EQ(env.center_solution(), (std::vector<int>{4, 9, 14}));
  std::vector<int> kept;
  for (int i = 0; i < env.num_pivots(); ++i) {
    if (env.kept()[static_cast<size_t>(i)]) kept.push_back(i);
  }
  EXPECT_EQ(kept, (std::vector<int>{3, 4, 5, 8, 9, 10, 13, 14, 15}));
  // Two more cuts must fit after the first (kept pivots only).
  EXPECT_EQ(allowed(env), (std::vector<int>{3, 4, 5, 8, 9, 10, 13}));
  // The center solution is a legal episode and scores exactly 1 (it is the reference).
  env.step(4);
  EXPECT_EQ(allowed(env), (std::vector<int>{5, 8, 9, 10, 13, 14}));
  env.step(9);
  EXPECT_EQ(allowed(env), (std::vector<int>{10, 13, 14, 15}));
  const PipelineStepResult r = env.step(14);
  EXPECT_DOUBLE_EQ(r.reward, 1.0);
}

TEST(PipelineEnvTest, PerCutWindowsKeepEachCutNearItsBalancedPivot) {
  // The chain above with radius 1: the union of the windows lets the first cut go as far as
  // pivot 13; per-cut windows keep cut k within one pivot of center cut k.
  TwentyOps f;
  PipelineEnvOptions o = f.options;
  o.prune_per_cut = true;
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  ASSERT_EQ(env.center_solution(), (std::vector<int>{4, 9, 14}));
  EXPECT_EQ(allowed(env), (std::vector<int>{3, 4, 5}));
  env.step(5);
  EXPECT_EQ(allowed(env), (std::vector<int>{8, 9, 10}));
  env.step(8);
  EXPECT_EQ(allowed(env), (std::vector<int>{13, 14, 15}));
  const PipelineStepResult r = env.step(15);
  EXPECT_TRUE(r.done);
  EXPECT_EQ(env.cuts(), (std::vector<int>{5, 8, 15}));  // stages of 6, 3, 7 and 4 ops
  // With radius 0 an episode is the center solution.
  o.prune_radius = 0;
  PipelineEnv center(f.graph, f.cluster, f.cost, o);
  for (int k : {4, 9, 14}) {
    EXPECT_EQ(allowed(center), (std::vector<int>{k}));
    center.step(k);
  }
}

TEST(PipelineEnvTest, TransformerEpisodes) {
  TransformerOptions t;
  t.layers = 4;
  t.d_model = 256;
  t.heads = 4;
  t.seq_len = 64;
  t.batch = 8;
  Graph g = expand_training_step(make_transformer(t));
  Fixture f(std::move(g), make_cluster(2, 4, link(5e-6, 2e10), link(1e-5, 1e9)));
  PipelineEnvOptions o;
  o.stages = 4;
  o.prune = false;
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  // Pivots sit between modules: embedding | layers.0 | ... | layers.3 | final_layernorm | ...
  EXPECT_GE(env.num_pivots(), 5);
  for (int p : env.pivots()) {
    const std::string& a = f.graph.op(env.forward_order()[static_cast<size_t>(p) - 1]).scope;
    const std::string& b = f.graph.op(env.forward_order()[static_cast<size_t>(p)]).scope;
    EXPECT_NE(a, b) << "pivot at position " << p;
  }
  EXPECT_EQ(env.device_groups(), (std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  for (int episode = 0; episode < 3; ++episode) {
    env.reset();
    PipelineStepResult r;
    while (!env.done()) {
      const std::vector<int> ok = allowed(env);
      ASSERT_FALSE(ok.empty());
      r = env.step(ok[static_cast<size_t>(episode) % ok.size()]);
    }
    EXPECT_TRUE(r.done);
    EXPECT_GT(r.step_time, 0);
    EXPECT_TRUE(std::isfinite(r.reward));
    EXPECT_NO_THROW(env.to_plan(env.cuts()).validate(f.graph, f.cluster));
  }
}

TEST(PipelineEnvTest, OutOfMemoryGetsThePenalty) {
  Graph g = chain({1e9, 1e9, 1e9, 1e9}, std::vector<uint64_t>(4, 1 << 20),
                  std::vector<uint64_t>(4, 1000));
  Fixture f(std::move(g), make_cluster(1, 2, link(0, 1e9), link(0, 1e9), 1 << 20));
  PipelineEnvOptions o;
  o.prune = false;
  o.oom_penalty = -5;
  o.reference_time = 1;
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  const PipelineStepResult r = env.step(1);  // two ops = 2 MB of parameters on 1 MB devices
  EXPECT_TRUE(r.oom);
  EXPECT_EQ(r.reward, -5);
}

TEST(PipelineEnvTest, BadOptionsThrow) {
  Fixture f(six(), host_of(3));
  auto make = [&](PipelineEnvOptions o) { PipelineEnv env(f.graph, f.cluster, f.cost, o); };
  PipelineEnvOptions o;
  o.stages = 1;
  EXPECT_THROW(make(o), ValidationError);
  o.stages = 4;  // 3 devices
  EXPECT_THROW(make(o), ValidationError);
  o = {};
  o.devices = {0, 3};
  EXPECT_THROW(make(o), ValidationError);
  o.devices = {1, 1};
  EXPECT_THROW(make(o), ValidationError);
  o = {};
  o.prune_radius = -1;
  EXPECT_THROW(make(o), ValidationError);
  o = {};
  o.micro_batches = -2;
  EXPECT_THROW(make(o), ValidationError);
  o = {};
  o.oom_penalty = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(make(o), ValidationError);
  o = {};
  o.reference_time = -1;
  EXPECT_THROW(make(o), ValidationError);
  // No parameters at all: no stage can hold one.
  Fixture none(chain({1e9, 1e9, 1e9}, {0, 0, 0}, {8, 8, 8}), host_of(2));
  EXPECT_THROW(PipelineEnv(none.graph, none.cluster, none.cost, {}), ValidationError);
  // Bad cut sets.
  PipelineEnvOptions ok;
  ok.prune = false;
  PipelineEnv env(f.graph, f.cluster, f.cost, ok);
  EXPECT_THROW(env.to_plan({}), ValidationError);
  EXPECT_THROW(env.to_plan({9}), ValidationError);
  ok.stages = 3;
  PipelineEnv env3(f.graph, f.cluster, f.cost, ok);
  EXPECT_THROW(env3.to_plan({2, 1}), ValidationError);
  EXPECT_THROW(env3.step(-1), ValidationError);
}


// --- Layout search: explicit groups, group sizes for fixed cuts, micro-batch candidates -----

TEST(PipelineEnvTest, ExplicitGroupsAndLayouts) {
  Fixture f(six(), host_of(4));
  PipelineEnvOptions o;
  o.prune = false;
  o.groups = {{0}, {1, 2, 3}};
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  EXPECT_EQ(env.device_groups(), (std::vector<std::vector<int>>{{0}, {1, 2, 3}}));
  EXPECT_EQ(env.micro_batches(), 8);  // 4 x stages, batch unknown
  EXPECT_EQ(env.layout().groups, env.device_groups());
  EXPECT_EQ(env.layout().micro_batches, 8);
  // Another layout for the same cuts: the plan uses its groups and micro-batches, and
  // evaluate(cuts, layout) is the simulator's step time of that plan.
  const PipelineLayout other{{{0, 1}, {2, 3}}, 3};
  const Plan plan = env.to_plan({2}, other);
  EXPECT_NO_THROW(plan.validate(f.graph, f.cluster));
  EXPECT_EQ(plan.pipeline.micro_batches, 3);
  EXPECT_EQ(plan.pipeline.stages[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(plan.pipeline.stages[1].devices, (std::vector<int>{2, 3}));
  EXPECT_EQ(plan.pipeline.stages[0].ops, (std::vector<OpId>{0, 1, 2}));
  EXPECT_EQ(plan.placement[3], 2);
  Simulator sim(f.graph, f.cluster, f.cost);
  SimOptions so;
  so.critical_path = false;
  const PipelineStepResult r = env.evaluate({2}, other);
  EXPECT_DOUBLE_EQ(r.step_time, sim.run(plan, so).step_time);
  EXPECT_DOUBLE_EQ(r.reward, env.reference_time() / r.step_time);
  // evaluate(cuts) is evaluate(cuts, layout()).
  EXPECT_DOUBLE_EQ(env.evaluate({2}).step_time, env.evaluate({2}, env.layout()).step_time);

  // Bad groups and layouts.
  auto make = [&](PipelineEnvOptions x) { PipelineEnv e(f.graph, f.cluster, f.cost, x); };
  PipelineEnvOptions bad = o;
  bad.groups = {{0, 1, 2, 3}};  // one group for two stages
  EXPECT_THROW(make(bad), ValidationError);
  bad.groups = {{0}, {}};
  EXPECT_THROW(make(bad), ValidationError);
  bad.groups = {{0}, {0, 1}};
  EXPECT_THROW(make(bad), ValidationError);
  bad.groups = {{0}, {4}};
  EXPECT_THROW(make(bad), ValidationError);
  bad.groups = {{0}, {1}};
  bad.devices = {0, 2};  // not the groups' concatenation
  EXPECT_THROW(make(bad), ValidationError);
  bad.devices = {0, 1};
  EXPECT_NO_THROW(make(bad));
  EXPECT_THROW(env.to_plan({2}, PipelineLayout{{{0}, {1}}, 0}), ValidationError);
  EXPECT_THROW(env.to_plan({2}, PipelineLayout{{{0, 1, 2}}, 2}), ValidationError);
  EXPECT_THROW(env.to_plan({2}, PipelineLayout{{{0}, {0}}, 2}), ValidationError);
  EXPECT_THROW(env.to_plan({2}, PipelineLayout{{{0}, {}}, 2}), ValidationError);
  EXPECT_THROW(env.to_plan({2}, PipelineLayout{{{0}, {9}}, 2}), ValidationError);
}

TEST(PipelineEnvTest, BestGroupsMinimiseTheBottleneck) {
  // Cut at position 3 (pivot 2): stage 0 = 1 + 2 + 3 = 6 ms, stage 1 = 4 + 5 + 5 = 14 ms;
  // 3 MB of activations cross the cut; the forward graph all-reduces its 1000 parameter
  // bytes per op.
  const std::vector<int> cuts{2};
  auto allreduce = [](const Fixture& f, std::vector<int> g, uint64_t bytes) {
    return f.cost.collective_time(CollectiveKind::kAllReduce, g, bytes, SyncScheme::kAuto);
  };
  {
    // 4 devices: 1 + 3 -> max(6, 14 / 3 + all-reduce, transfer 2 x 1 MB) = 6 ms; 2 + 2 gives
    // 7 ms, 3 + 1 14 ms.
    Fixture f(six(), host_of(4));
    PipelineEnvOptions o;
    o.prune = false;
    PipelineEnv env(f.graph, f.cluster, f.cost, o);
    const auto g = env.best_groups(cuts);
    EXPECT_EQ(g, (std::vector<std::vector<int>>{{0}, {1, 2, 3}}));
    EXPECT_NEAR(env.estimate_bottleneck(cuts, g), 6e-3, 1e-12);
    const double two_two = 7e-3 + allreduce(f, {2, 3}, 3000);
    EXPECT_NEAR(env.estimate_bottleneck(cuts, {{0, 1}, {2, 3}}), two_two, 1e-12);
    // Proportional to compute: 4 x 6 / 20 = 1.2 and 2.8 devices -> 1 + 3.
    EXPECT_EQ(env.proportional_groups(cuts), g);
  }
  {
    // 5 devices: 2 + 3 -> max(3 ms + all-reduce of 3 kB on 2, 14 / 3 ms + all-reduce on 3,
    // 2 x 1 MB transfer = 2 ms); 1 + 4 -> 6 ms; 3 + 2 -> 7 ms.
    Fixture f(six(), host_of(5));
    PipelineEnvOptions o;
    o.prune = false;
    PipelineEnv env(f.graph, f.cluster, f.cost, o);
    const auto g = env.best_groups(cuts);
    EXPECT_EQ(g, (std::vector<std::vector<int>>{{0, 1}, {2, 3, 4}}));
    const double expect = 14e-3 / 3 + allreduce(f, {2, 3, 4}, 3000);
    EXPECT_NEAR(env.estimate_bottleneck(cuts, g), expect, 1e-12);
    // Shares 1.5 and 3.5: floors 1 + 3, the remaining device to the earlier tie.
    EXPECT_EQ(env.proportional_groups(cuts), (std::vector<std::vector<int>>{{0, 1}, {2, 3, 4}}));
    // Brute force over every contiguous split: none has a lower estimate.
    for (int a = 1; a < 5; ++a) {
      std::vector<std::vector<int>> split(2);
      for (int d = 0; d < 5; ++d) split[d < a ? 0 : 1].push_back(d);
      EXPECT_GE(env.estimate_bottleneck(cuts, split), expect - 1e-15) << "split " << a;
    }
  }
}

// `hosts` hosts of `per_host` test devices that carry their transfers themselves
// (`overlap: false`).
Cluster blocking_cluster(int hosts, int per_host, const LinkSpec& intra, const LinkSpec& inter) {
  DeviceSpec spec = testing::test_spec();
  spec.overlap_transfers = false;
  Cluster c;
  c.name = "blocking";
  for (int h = 0; h < hosts; ++h) c.add_host("host" + std::to_string(h), spec, per_host);
  c.set_link(LinkLevel::kIntraHost, intra);
  c.set_link(LinkLevel::kInterHost, inter);
  return c;
}

TEST(PipelineEnvTest, BestGroupsAddTheCutsOnDevicesWithoutOverlap) {
  // Cuts at positions 2 and 4 (pivots 1, 3): stages of 3, 7 and 10 ms; 2 MB and 4 MB cross
  // the cuts (4 ms and 8 ms there and back over 1 GB/s, halved into a stage of 2). On 4
  // devices, overlapped: 1 + 1 + 2 -> max(3, 7, 5 + all-reduce, 4, 4) = 7 ms (1 + 2 + 1
  // and 2 + 1 + 1 hold the 10 ms stage). Without overlap a stage adds its cut in and its
  // cut out (whole): 1 + 1 + 2 -> stage 1 = 7 + 4 + 8 = 19; 2 + 1 + 1 -> 19 too;
  // 1 + 2 + 1 -> 3 + 4, 3.5 + all-reduce + 2 + 8, 10 + 8 = 18 ms, the best.
  const std::vector<int> cuts{1, 3};
  PipelineEnvOptions o;
  o.stages = 3;
  o.prune = false;
  {
    Fixture f(six(), host_of(4));
    PipelineEnv env(f.graph, f.cluster, f.cost, o);
    const auto g = env.best_groups(cuts);
    EXPECT_EQ(g, (std::vector<std::vector<int>>{{0}, {1}, {2, 3}}));
    EXPECT_NEAR(env.estimate_bottleneck(cuts, g), 7e-3, 1e-12);
  }
  {
    Fixture f(six(), blocking_cluster(1, 4, link(0, 1e9), link(0, 1e9)));
    PipelineEnv env(f.graph, f.cluster, f.cost, o);
    const auto g = env.best_groups(cuts);
    EXPECT_EQ(g, (std::vector<std::vector<int>>{{0}, {1, 2}, {3}}));
    EXPECT_NEAR(env.estimate_bottleneck(cuts, g), 18e-3, 1e-12);
    EXPECT_NEAR(env.estimate_bottleneck(cuts, {{0}, {1}, {2, 3}}), 19e-3, 1e-12);
  }
}

// Every split of the device list into S contiguous groups, stage 0 first, where a stage may
// skip to the next host boundary (the DP's search space), with its estimated bottleneck.
void all_splits(const PipelineEnv& env, const std::vector<int>& cuts, const Cluster& c, int s,
                int d, std::vector<std::vector<int>>* groups, double* best,
                std::vector<std::vector<int>>* arg) {
  const int N = c.num_devices(), S = env.num_stages();
  if (s == S) {
    const double v = env.estimate_bottleneck(cuts, *groups);
    if (v < *best) {
      *best = v;
      *arg = *groups;
    }
    return;
  }
  std::vector<int> starts{d};
  if (s > 0 && d < N && c.device(d).host == c.device(d - 1).host) {
    int h = d + 1;
    while (h < N && c.device(h).host == c.device(h - 1).host) ++h;
    if (h < N) starts.push_back(h);
  }
  for (int first : starts) {
    for (int r = 1; first + r <= N - (S - 1 - s); ++r) {
      std::vector<int> g;
      for (int k = 0; k < r; ++k) g.push_back(first + k);
      groups->push_back(g);
      all_splits(env, cuts, c, s + 1, first + r, groups, best, arg);
      groups->pop_back();
    }
  }
}

// Parameters of 4 MB per op: replicating a stage costs a large gradient all-reduce.
Graph heavy_params() {
  return chain({1e9, 2e9, 3e9, 4e9, 5e9, 5e9}, std::vector<uint64_t>(6, 4000000),
               {1000000, 2000000, 3000000, 4000000, 5000000, 6000000});
}

TEST(PipelineEnvTest, BestGroupsMatchBruteForce) {
  // Two hosts of 3 devices (fast inside, slower between), 3 stages, devices with and without
  // overlap: for every cut set, the DP's groups have the lowest estimate over all
  // contiguous splits with host skips.
  for (int variant = 0; variant < 4; ++variant) {
    const bool heavy = variant % 2 == 1, blocking = variant >= 2;
    Fixture f(heavy ? heavy_params() : six(),
              blocking ? blocking_cluster(2, 3, link(1e-6, 1e10), link(1e-5, 1e9))
                       : make_cluster(2, 3, link(1e-6, 1e10), link(1e-5, 1e9)));
    PipelineEnvOptions o;
    o.stages = 3;
    o.prune = false;
    PipelineEnv env(f.graph, f.cluster, f.cost, o);
    int cases = 0;
    for (int a = 0; a < env.num_pivots(); ++a) {
      for (int b = a + 1; b < env.num_pivots(); ++b) {
        const std::vector<int> cuts{a, b};
        double best = std::numeric_limits<double>::infinity();
        std::vector<std::vector<int>> arg, work;
        all_splits(env, cuts, f.cluster, 0, 0, &work, &best, &arg);
        const auto dp = env.best_groups(cuts);
        EXPECT_NEAR(env.estimate_bottleneck(cuts, dp), best, best * 1e-9)
            << "heavy " << heavy << " blocking " << blocking << " cuts " << a << "," << b;
        ++cases;
      }
    }
    EXPECT_EQ(cases, 10);  // 5 pivots choose 2
  }
}

TEST(PipelineEnvTest, BestGroupsOnUnevenHosts) {
  // Host a has 4 devices, host b 2: the search space includes splits that leave devices of
  // host a idle so that a stage starts on host b; the DP matches the brute force over it.
  Cluster c;
  c.name = "uneven";
  c.add_host("a", testing::test_spec(), 4);
  c.add_host("b", testing::test_spec(), 2);
  c.set_link(LinkLevel::kIntraHost, link(1e-6, 1e10));
  c.set_link(LinkLevel::kInterHost, link(1e-5, 1e8));
  Fixture f(heavy_params(), c);
  PipelineEnvOptions o;
  o.prune = false;
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  for (int a = 0; a < env.num_pivots(); ++a) {
    const std::vector<int> cuts{a};
    double best = std::numeric_limits<double>::infinity();
    std::vector<std::vector<int>> arg, work;
    all_splits(env, cuts, f.cluster, 0, 0, &work, &best, &arg);
    const auto dp = env.best_groups(cuts);
    EXPECT_NEAR(env.estimate_bottleneck(cuts, dp), best, best * 1e-9) << "cut " << a;
  }
}

TEST(PipelineEnvTest, MicroBatchCandidates) {
  Fixture f(six(), host_of(4));
  PipelineEnvOptions o;
  o.prune = false;
  o.stages = 3;
  PipelineEnv env(f.graph, f.cluster, f.cost, o);
  // Batch unknown: cap 8 S = 24; powers of two from 2 and S, 2S, 4S, 8S.
  EXPECT_EQ(env.micro_batch_candidates({{0}, {1}, {2, 3}}),
            (std::vector<int>{2, 3, 4, 6, 8, 12, 16, 24}));
  // A batch of 8 over groups of up to 2 replicas: at most 4 micro-batches.
  TransformerOptions t;
  t.layers = 4;
  t.d_model = 64;
  t.heads = 2;
  t.seq_len = 16;
  t.batch = 8;
  Fixture tf(expand_training_step(make_transformer(t)), host_of(8));
  PipelineEnvOptions to;
  to.stages = 4;
  to.prune = false;
  PipelineEnv tenv(tf.graph, tf.cluster, tf.cost, to);
  EXPECT_EQ(tenv.micro_batch_candidates(tenv.device_groups()), (std::vector<int>{2, 4}));
  EXPECT_EQ(tenv.micro_batch_candidates({{0}, {1}, {2}, {3}}), (std::vector<int>{2, 4, 8}));
}

}  // namespace
}  // namespace placer
