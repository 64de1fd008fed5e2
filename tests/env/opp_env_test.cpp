// OppEnv (Auto-MAP operator partitioning / auto data parallelism): linkage ordering, episode
// mechanics, paper and simulator rewards on the hand-built MLP, conflicts, caching, errors.
#include "env/opp_env.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"
#include "tests/env/sharding_fixtures.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;
using testing::mlp_graph;

struct Fixture {
  Graph graph = mlp_graph();
  Cluster cluster = make_cluster(1, 4, link(0, 1e6), link(0, 1e6));
  CostModel cost{cluster, uniform_profile(1.0)};
};

OppEnvOptions paper() {
  OppEnvOptions o;
  o.reward = OppEnvOptions::Reward::kPaper;
  return o;
}

// Slots of the MLP: 0 (W1 dim 0), 1 (W1 dim 1), 2 (W2 dim 0), 3 (W2 dim 1).
TEST(OppEnv, LinkageGroupsAndOrder) {
  Fixture f;
  OppEnv env(f.graph, f.cluster, f.cost, paper());
  EXPECT_EQ(env.propagator().degree(), 4);
  ASSERT_EQ(env.slots().size(), 4u);
  ASSERT_EQ(env.linkage().size(), 8u);
  EXPECT_TRUE(env.linkage()[0].conflict);  // W1 row split vs the replicated input
  EXPECT_EQ(env.linkage()[2].implied.size(), 3u);
  EXPECT_EQ(env.linkage()[4].implied.size(), 3u);
  EXPECT_EQ(env.linkage()[6].implied.size(), 3u);
  // Larger linkage group first, ties in slot order; slot 0 (conflict only) last.
  EXPECT_EQ(env.order(), (std::vector<int>{1, 2, 3, 0}));
  EXPECT_EQ(env.state_dim(), 9);
  EXPECT_EQ(env.mask(), (std::vector<uint8_t>{1, 1}));

  OppEnvOptions plain = paper();
  plain.linkage = false;
  OppEnv env2(f.graph, f.cluster, f.cost, plain);
  EXPECT_EQ(env2.order(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(env2.linkage().empty());
}

TEST(OppEnv, ObservationAndOneStepMegatron) {
  Fixture f;
  OppEnv env(f.graph, f.cluster, f.cost, paper());
  EXPECT_FALSE(env.done());
  EXPECT_EQ(env.current_slot(), 1);
  EXPECT_EQ(env.observation(), (std::vector<float>{-1, -1, -1, -1, 1, 0, 0, 0, 0}));
  // Partition W1's columns: its linkage group decides everything (W2 rows).
  const OppEnv::StepResult s = env.step(1);
  EXPECT_FALSE(s.conflict);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.decided, 4);
  EXPECT_NEAR(s.reward, 2 * 0.4 + 2 * 0.1, 1e-12);
  EXPECT_EQ(env.decisions(), (std::vector<int8_t>{0, 1, 1, 0}));
  EXPECT_TRUE(env.done());
  EXPECT_EQ(env.current_slot(), -1);
  EXPECT_EQ(env.observation(), (std::vector<float>{0, 1, 1, 0, 0, 0, 0, 0, 1}));
  EXPECT_THROW(env.step(0), ValidationError);
  // The plan: Megatron's, simulated (compute / 4 + two all-reduces of 2048 B).
  const Plan plan = env.plan();
  EXPECT_EQ(plan.partitions.size(), 3u);
  EXPECT_EQ(plan.method, "opp");
  EXPECT_TRUE(plan.predicted.valid);
  EXPECT_NEAR(plan.predicted.step_time, 26e-3 / 4 + 2 * 3.072e-3, 1e-9);
  EXPECT_NEAR(env.step_time(), 26e-3 / 4 + 2 * 3.072e-3, 1e-9);
  EXPECT_NEAR(env.reference_time(), 26e-3, 1e-9);
}

TEST(OppEnv, PaperRewardsOverAnEpisode) {
  Fixture f;
  OppEnv env(f.graph, f.cluster, f.cost, paper());
  // Replicate W1 dim 1, then W2 dim 0 (both leave their weights undecided), then partition
  // W2 dim 1: its group sets W1 dim 0 (new) and agrees with the other two.
  OppEnv::StepResult s = env.step(0);
  EXPECT_NEAR(s.reward, 0.1, 1e-12);
  EXPECT_EQ(s.decided, 1);
  EXPECT_EQ(env.current_slot(), 2);
  EXPECT_EQ(env.observation()[4 + 1], 1.0f);
  EXPECT_FLOAT_EQ(env.observation()[8], 0.25f);
  s = env.step(0);
  EXPECT_NEAR(s.reward, 0.1, 1e-12);
  EXPECT_EQ(env.current_slot(), 3);
  s = env.step(1);
  EXPECT_NEAR(s.reward, 0.4 + 0.1, 1e-12);
  EXPECT_EQ(s.decided, 2);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(env.decisions(), (std::vector<int8_t>{0, 0, 0, 1}));
  EXPECT_EQ(env.propagation().variables[0].kind, Sharding::Kind::kReplicated);
  EXPECT_EQ(env.propagation().variables[1].dim, 1);
}

TEST(OppEnv, ConflictEndsTheEpisode) {
  Fixture f;
  OppEnv env(f.graph, f.cluster, f.cost, paper());
  // Replicate W1 dim 1, then partition W2 dim 0: its group needs W1 dim 1 = 1.
  env.step(0);
  const OppEnv::StepResult s = env.step(1);
  EXPECT_TRUE(s.conflict);
  EXPECT_TRUE(s.done);
  EXPECT_DOUBLE_EQ(s.reward, -1.0);
  EXPECT_TRUE(env.done());
  // The decisions and propagation stay those before the conflicting step.
  EXPECT_EQ(env.decisions(), (std::vector<int8_t>{-1, 0, -1, -1}));
  EXPECT_FALSE(env.propagation().conflict);

  // Without linkage the first slot is W1 dim 0: partitioning it conflicts at once.
  OppEnvOptions plain = paper();
  plain.linkage = false;
  plain.conflict_reward = -2;
  OppEnv env2(f.graph, f.cluster, f.cost, plain);
  const OppEnv::StepResult s2 = env2.step(1);
  EXPECT_TRUE(s2.conflict);
  EXPECT_DOUBLE_EQ(s2.reward, -2.0);
  // Replicating all four, one slot per step, is no conflict: 4 x 0.1.
  env2.reset();
  double sum = 0;
  for (int i = 0; i < 4; ++i) {
    const OppEnv::StepResult r = env2.step(0);
    EXPECT_EQ(r.decided, 1);
    sum += r.reward;
  }
  EXPECT_TRUE(env2.done());
  EXPECT_NEAR(sum, 0.4, 1e-12);
  EXPECT_EQ(env2.propagation().variables[0].kind, Sharding::Kind::kReplicated);
}

TEST(OppEnv, SimulatorRewardSumsToRelativeStepTime) {
  Fixture f;
  OppEnv env(f.graph, f.cluster, f.cost);  // simulator reward, linkage
  const double ref = env.reference_time();
  EXPECT_NEAR(ref, 26e-3, 1e-9);
  const OppEnv::StepResult s = env.step(1);
  EXPECT_TRUE(s.done);
  EXPECT_NEAR(s.reward, 1 - (26e-3 / 4 + 2 * 3.072e-3) / 26e-3, 1e-9);
  // A three-step episode: the return telescopes to 1 - T_final / T_ref.
  env.reset();
  double sum = 0;
  for (int a : {0, 0, 1}) sum += env.step(a).reward;
  EXPECT_TRUE(env.done());
  EXPECT_NEAR(sum, 1 - env.step_time() / ref, 1e-12);
  EXPECT_GT(env.step_time(), ref);  // W2 column split alone: slower than one device here
  // Plans are cached by decision vector: replaying both episodes simulates nothing new.
  const int64_t sims = env.simulations();
  env.reset();
  env.step(1);
  env.reset();
  for (int a : {0, 0, 1}) env.step(a);
  EXPECT_EQ(env.simulations(), sims);
}

TEST(OppEnv, DataParallelTask) {
  Fixture f;
  OppEnvOptions o;
  o.task = OppEnvOptions::Task::kDataParallel;
  OppEnv env(f.graph, f.cluster, f.cost, o);
  ASSERT_EQ(env.slots().size(), 2u);  // x [8, 64]
  EXPECT_EQ(env.state_dim(), 5);
  EXPECT_EQ(env.order(), (std::vector<int>{0, 1}));
  const OppEnv::StepResult s = env.step(1);  // split the batch
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.decided, 2);
  EXPECT_EQ(env.decisions(), (std::vector<int8_t>{1, 0}));
  EXPECT_EQ(env.propagation().inputs[0], Sharding::split(0, 2));
  EXPECT_EQ(env.propagation().variables[0].kind, Sharding::Kind::kReplicated);
  const Plan plan = env.plan();
  ASSERT_EQ(plan.partitions.size(), 3u);
  for (const OpPartition& p : plan.partitions) EXPECT_EQ(p.dim, 0);
  EXPECT_EQ(plan.method, "adp");
  EXPECT_NEAR(s.reward, 1 - env.step_time() / env.reference_time(), 1e-12);
}

TEST(OppEnv, BadOptions) {
  Fixture f;
  OppEnvOptions o;
  o.degree = 1;
  EXPECT_THROW(OppEnv(f.graph, f.cluster, f.cost, o), ValidationError);
  o.degree = 5;
  EXPECT_THROW(OppEnv(f.graph, f.cluster, f.cost, o), ValidationError);
  o.degree = 2;
  OppEnv env(f.graph, f.cluster, f.cost, o);
  EXPECT_EQ(env.propagator().degree(), 2);
  EXPECT_THROW(env.step(2), ValidationError);
  o.oom_penalty = NAN;
  EXPECT_THROW(OppEnv(f.graph, f.cluster, f.cost, o), ValidationError);
  OppEnvOptions::Reward r = OppEnvOptions::Reward::kSimulator;
  EXPECT_TRUE(parse_opp_reward("paper", &r));
  EXPECT_EQ(r, OppEnvOptions::Reward::kPaper);
  EXPECT_TRUE(parse_opp_reward("simulator", &r));
  EXPECT_EQ(r, OppEnvOptions::Reward::kSimulator);
  EXPECT_FALSE(parse_opp_reward("fixed", &r));
  // A graph without parameters has no operator-partitioning slots.
  testing::ShapedGraph b("noparams");
  const TensorId x = b.tensor("x", {4, 4});
  const TensorId y = b.tensor("y", {4, 4});
  b.op("relu", "Relu", 1, {x}, {y});
  const Graph g = b.build();
  EXPECT_THROW(OppEnv(g, f.cluster, f.cost), ValidationError);
}

// The real transformer on 8 devices: the Megatron decisions are a conflict-free episode of
// the paper env, and the linkage groups are largest for the hidden-dim splits.
TEST(OppEnvReal, TransformerMegatronEpisode) {
  const Graph g = load_graph_json(std::string(PLACER_SOURCE_DIR) +
                                  "/datasets/models/transformer_enc6_d512.graph.json");
  const Cluster c = make_cluster(1, 8, link(1e-6, 100e9), link(1e-6, 100e9));
  const CostModel cost(c, uniform_profile(0.5));
  OppEnv env(g, c, cost, paper());
  ASSERT_EQ(env.slots().size(), 105u);
  const ShardingPropagator& p = env.propagator();
  auto ends_with = [](const std::string& s, const std::string& suf) {
    return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
  };
  // Megatron: 1 on these (var, dim), 0 elsewhere.
  auto want = [&](int slot) {
    const ShardSlot& sl = env.slots()[size_t(slot)];
    const std::string& n = p.variables()[size_t(sl.var)].name;
    if (ends_with(n, "self_attn/MatMul:weight") || ends_with(n, "linear1/MatMul:weight") ||
        ends_with(n, "self_attn/Gemm:weight") || n == "/lm_head/MatMul:weight") {
      return sl.dim == 1 ? 1 : 0;
    }
    if (ends_with(n, "self_attn/Add:bias") || ends_with(n, "linear1/Add:bias") ||
        ends_with(n, "linear2/MatMul:weight") || n == "/embedding/Gather:table" ||
        n == "/lm_head/Add:bias") {
      return sl.dim == 0 ? 1 : 0;
    }
    return 0;
  };
  int steps = 0;
  double paper_return = 0;
  while (!env.done()) {
    const OppEnv::StepResult s = env.step(want(env.current_slot()));
    ASSERT_FALSE(s.conflict) << "step " << steps << ": " << env.propagation().conflict_reason;
    paper_return += s.reward;
    ++steps;
  }
  int ones = 0;
  for (size_t s = 0; s < env.slots().size(); ++s) {
    EXPECT_EQ(env.decisions()[s], want(int(s))) << s;
    ones += want(int(s));
  }
  // 6 x (qkv W, qkv bias, out-proj W, linear1 W, linear1 bias, linear2 W), the input
  // embedding's vocabulary, the lm_head's columns and bias (vocabulary-parallel logits).
  EXPECT_EQ(ones, 39);
  EXPECT_NEAR(paper_return, 39 * 0.4 + (105 - 39) * 0.1, 1e-9);
  const Plan plan = env.plan();
  EXPECT_EQ(plan.partitions.size(), 6u * 24 + 1 + 2);
  std::printf(
      "transformer_enc6_d512 Megatron episode (forward graph): %d steps for %zu slots, "
      "step time %.3f ms vs %.3f ms replicated (%lld simulations)\n",
      steps, env.slots().size(), plan.predicted.step_time * 1e3, env.reference_time() * 1e3,
      static_cast<long long>(env.simulations()));

  // The same decisions on the whole training step (backward and Adam ops follow their
  // forward ops), simulator reward: the return is 1 - T / T_ref, and Megatron on 8 devices
  // over 100 GB/s links is more than 5 times as fast as one device (7.5 x when written).
  const Graph step = expand_training_step(g);
  OppEnv env2(step, c, cost);
  ASSERT_EQ(env2.slots().size(), 105u);
  double ret = 0;
  while (!env2.done()) {
    const OppEnv::StepResult s = env2.step(want(env2.current_slot()));
    ASSERT_FALSE(s.conflict);
    ret += s.reward;
  }
  EXPECT_NEAR(ret, 1 - env2.step_time() / env2.reference_time(), 1e-9);
  EXPECT_LT(env2.step_time(), env2.reference_time() / 5);
  std::printf(
      "transformer_enc6_d512 Megatron episode (training step): step time %.3f ms vs "
      "%.3f ms replicated, return %.4f (%lld simulations)\n",
      env2.step_time() * 1e3, env2.reference_time() * 1e3, ret,
      static_cast<long long>(env2.simulations()));
}

}  // namespace
}  // namespace placer
