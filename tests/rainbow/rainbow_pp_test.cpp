// The rainbow-pp placer: online Rainbow DQN over the pipeline-cut MDP reaches the brute-force
// optimum of a small transformer, is deterministic per seed, never loses to the balanced
// center solution, and rejects bad stage counts.
#include "agents/rainbow/rainbow_pp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include <torch/utils.h>

#include "datasets/synthetic.h"
#include "env/pipeline_env.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;

struct Instance {
  Graph graph;
  Cluster cluster;
  CostModel cost;
  Simulator sim;
  Instance(Graph g, Cluster c)
      : graph(std::move(g)),
        cluster(std::move(c)),
        cost(cluster, uniform_profile(1.0)),
        sim(graph, cluster, cost) {}
  Problem problem() { return Problem{graph, cluster, cost, sim, {}}; }
};

Graph small_transformer() {
  TransformerOptions t;
  t.layers = 4;
  t.d_model = 256;
  t.heads = 4;
  t.seq_len = 64;
  t.batch = 8;
  return expand_training_step(make_transformer(t));
}

// x -> op0 -> ... -> op9 (training step): uneven FLOPs, 64 parameter bytes per op and three
// 30-50 MB activations, so the compute-balanced center cuts pay for slow transfers.
Graph uneven_chain() {
  const std::vector<double> flops{4e9, 1e9, 1e9, 6e9, 2e9, 2e9, 3e9, 1e9, 5e9, 2e9};
  const std::vector<uint64_t> act{1000, 1000, 50000000, 50000000, 1000,
                                  1000, 1000, 30000000, 1000,     1000};
  testing::TestGraph b("chain");
  TensorId in = b.tensor("x", 1000);
  for (size_t i = 0; i < flops.size(); ++i) {
    const TensorId out = b.tensor("t" + std::to_string(i), act[i]);
    const OpId o = b.op("op" + std::to_string(i), flops[i], {in}, {out});
    b.at(o).scope = "block." + std::to_string(i);
    b.at(o).param_bytes = 64;
    in = out;
  }
  return expand_training_step(b.build());
}

// Two hosts of two devices: slow links between the hosts make the cut placement matter.
Cluster two_hosts() { return make_cluster(2, 2, link(5e-6, 2e10), link(1e-5, 1e9)); }

class RainbowPP : public ::testing::Test {
 protected:
  void SetUp() override { torch::set_num_threads(1); }
};

RainbowPPOptions unpruned(int stages) {
  RainbowPPOptions o;
  o.stages = stages;
  o.prune = false;  // the whole cut space, as the brute force below
  o.search_layout = false;  // the cut-only MDP on the env's groups, as the brute force below
  o.scope_depth = 0;        // the env's default pivots, as the brute force below
  return o;
}

// Every complete episode of `stages` stages (no pruning; cut sets the env's action mask
// allows: a parameter op in every stage): the lowest simulated step time; *count = their
// number.
void enumerate(PipelineEnv& env, std::vector<int>* prefix, double* best, int* count) {
  env.reset();
  for (int c : *prefix) env.step(c);
  const std::vector<uint8_t> mask = env.action_mask();
  for (int a = 0; a < env.num_pivots(); ++a) {
    if (!mask[static_cast<size_t>(a)]) continue;
    prefix->push_back(a);
    if (static_cast<int>(prefix->size()) == env.num_stages() - 1) {
      const PipelineStepResult r = env.evaluate(*prefix);
      ++*count;
      if (!r.oom && r.step_time < *best) *best = r.step_time;
    } else {
      enumerate(env, prefix, best, count);
    }
    prefix->pop_back();
  }
}

// Lowest simulated step time over every increasing cut tuple (legal episodes or not).
double all_cut_sets(PipelineEnv& env, int* count) {
  const int p = env.num_pivots(), k = env.num_stages() - 1;
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> cuts(static_cast<size_t>(k));
  for (int i = 0; i < k; ++i) cuts[static_cast<size_t>(i)] = i;
  *count = 0;
  while (true) {
    const PipelineStepResult r = env.evaluate(cuts);
    ++*count;
    if (!r.oom && r.step_time < best) best = r.step_time;
    int j = k - 1;
    while (j >= 0 && cuts[static_cast<size_t>(j)] == p - k + j) --j;
    if (j < 0) break;
    ++cuts[static_cast<size_t>(j)];
    for (int i = j + 1; i < k; ++i)
      cuts[static_cast<size_t>(i)] = cuts[static_cast<size_t>(i) - 1] + 1;
  }
  return best;
}

TEST_F(RainbowPP, ReachesTheBruteForceOptimum) {
  Instance in(uneven_chain(), make_cluster(1, 4, link(1e-5, 2e9), link(1e-5, 2e9)));
  PipelineEnvOptions eo;
  eo.stages = 4;
  eo.prune = false;
  PipelineEnv env(in.graph, in.cluster, in.cost, eo);
  int all = 0;
  const double optimum = all_cut_sets(env, &all);
  EXPECT_EQ(all, 84);  // C(9, 3): every cut set is a legal episode here
  const double center = env.evaluate(env.center_solution()).step_time;
  EXPECT_GT(center, 1.3 * optimum);  // 46.4 ms vs 29.3 ms: the agent has to find it
  SearchBudget budget;
  budget.seed = 1;
  budget.max_evaluations = 150;
  const Plan plan = make_rainbow_pp_placer(unpruned(4))->search(in.problem(), budget);
  // Seeds 1, 2, 3, 5, 6 reach the optimum with 150 evaluations, seed 4 ends at 34.4 ms
  // (+18 %); with 300 evaluations seeds 1..6 all reach it.
  EXPECT_DOUBLE_EQ(in.sim.run(plan).step_time, optimum);
}

// On the small transformer the env's center solution leaves the loss alone in the last stage,
// which the action mask never allows (no parameter op there), and it beats every legal
// episode: rainbow-pp returns it, within 0.2 % of the optimum over all cut sets.
TEST_F(RainbowPP, TransformerKeepsTheCenterSolution) {
  Instance in(small_transformer(), two_hosts());
  PipelineEnvOptions eo;
  eo.stages = 4;
  eo.prune = false;
  PipelineEnv env(in.graph, in.cluster, in.cost, eo);
  // What rainbow-pp can return: the center solution or a legal episode.
  int legal = 0;
  double episodes_best = std::numeric_limits<double>::infinity();
  std::vector<int> prefix;
  enumerate(env, &prefix, &episodes_best, &legal);
  const double center = env.evaluate(env.center_solution()).step_time;
  const double reachable = std::min(center, episodes_best);
  int all = 0;
  const double optimum = all_cut_sets(env, &all);
  EXPECT_EQ(legal, 20);
  EXPECT_EQ(all, 35);
  SearchBudget budget;
  budget.seed = 3;
  budget.max_evaluations = 30;
  int64_t last = 0;
  budget.progress = [&](int64_t done, int64_t total, const std::string& status) {
    EXPECT_EQ(total, 30);
    EXPECT_GE(done, last);
    last = done;
    EXPECT_EQ(status.rfind("best ", 0), 0u) << status;
  };
  const Plan plan = make_rainbow_pp_placer(unpruned(4))->search(in.problem(), budget);
  EXPECT_EQ(plan.method, "rainbow-pp");
  EXPECT_LE(last, 20);  // distinct legal episodes; then the cap on repeats (4 x 30) stops it
  EXPECT_LT(center, episodes_best);
  const SimResult r = in.sim.run(plan);
  EXPECT_FALSE(r.oom);
  // The best plan the MDP can produce, exactly; within the 2 % of the optimum over
  // all cut sets (which the env's action mask may exclude: a stage without parameters).
  EXPECT_DOUBLE_EQ(r.step_time, reachable);
  EXPECT_LE(r.step_time, optimum * 1.02);
}

TEST_F(RainbowPP, SameSeedSamePlan) {
  Instance in(uneven_chain(), make_cluster(1, 4, link(1e-5, 2e9), link(1e-5, 2e9)));
  SearchBudget budget;
  budget.seed = 11;
  budget.max_evaluations = 40;
  const Plan a = make_rainbow_pp_placer(unpruned(3))->search(in.problem(), budget);
  const Plan b = make_rainbow_pp_placer(unpruned(3))->search(in.problem(), budget);
  EXPECT_EQ(a.placement, b.placement);
  ASSERT_EQ(a.pipeline.stages.size(), b.pipeline.stages.size());
  EXPECT_DOUBLE_EQ(in.sim.run(a).step_time, in.sim.run(b).step_time);
}

TEST_F(RainbowPP, NeverWorseThanTheCenterSolution) {
  Instance in(small_transformer(), two_hosts());
  PipelineEnvOptions eo;
  eo.stages = 4;
  PipelineEnv env(in.graph, in.cluster, in.cost, eo);
  const double center = env.evaluate(env.center_solution()).step_time;
  for (uint64_t seed : {1, 2}) {
    SearchBudget budget;
    budget.seed = seed;
    budget.max_evaluations = 1;  // one episode: mostly random
    RainbowPPOptions o;
    o.stages = 4;
    o.scope_depth = 0;  // the pivots of `env` above
    const Plan plan = make_rainbow_pp_placer(o)->search(in.problem(), budget);
    EXPECT_LE(in.sim.run(plan).step_time, center) << "seed " << seed;
  }
}

TEST_F(RainbowPP, DefaultStagesAndBadStages) {
  Instance in(small_transformer(), two_hosts());
  SearchBudget budget;
  budget.max_evaluations = 2;
  // Default: min(4, devices) = 4 stages, one device each.
  const Plan plan = make_rainbow_pp_placer()->search(in.problem(), budget);
  EXPECT_EQ(plan.pipeline.stages.size(), 4u);
  for (int stages : {1, 5}) {
    RainbowPPOptions o;
    o.stages = stages;
    try {
      make_rainbow_pp_placer(o)->search(in.problem(), budget);
      ADD_FAILURE() << "stages " << stages << " accepted";
    } catch (const ValidationError& e) {
      EXPECT_NE(std::string(e.what()).find("stages must be in [2, 4]"), std::string::npos)
          << e.what();
    }
  }
  // A forward-only graph is refused.
  TransformerOptions t;
  t.layers = 2;
  Instance fwd(make_transformer(t), two_hosts());
  EXPECT_THROW(make_rainbow_pp_placer()->search(fwd.problem(), budget), ValidationError);
}

// Two ops of 1 and 9 GFLOP (one pivot, so one cut set) on one host of 4 devices, 2 stages:
// the env's equal groups (2 + 2) leave the second stage the bottleneck; the layout search
// finds 1 + 3 devices, the best contiguous split under every micro-batch count it tries.
Graph lopsided_pair() {
  testing::TestGraph b("pair");
  const TensorId x = b.tensor("x", 1000);
  const TensorId t0 = b.tensor("t0", 1000);
  const TensorId t1 = b.tensor("t1", 1000);
  const OpId a = b.op("op0", 1e9, {x}, {t0});
  const OpId c = b.op("op1", 9e9, {t0}, {t1});
  b.at(a).scope = "block.0";
  b.at(c).scope = "block.1";
  b.at(a).param_bytes = 64;
  b.at(c).param_bytes = 64;
  return expand_training_step(b.build());
}

TEST_F(RainbowPP, LayoutSearchFindsTheGroupSizes) {
  Instance in(lopsided_pair(), make_cluster(1, 4, link(1e-6, 1e10), link(1e-6, 1e10)));
  PipelineEnvOptions eo;
  eo.stages = 2;
  eo.prune = false;
  PipelineEnv env(in.graph, in.cluster, in.cost, eo);
  ASSERT_EQ(env.num_pivots(), 1);
  ASSERT_EQ(env.device_groups(), (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  // Brute force: every contiguous split of the 4 devices, every micro-batch candidate.
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::vector<int>> best_groups;
  for (int a = 1; a < 4; ++a) {
    std::vector<std::vector<int>> g(2);
    for (int d = 0; d < 4; ++d) g[d < a ? 0 : 1].push_back(d);
    for (int m : env.micro_batch_candidates(g)) {
      const PipelineStepResult r = env.evaluate({0}, PipelineLayout{g, m});
      if (!r.oom && r.step_time < best) {
        best = r.step_time;
        best_groups = g;
      }
    }
  }
  EXPECT_EQ(best_groups, (std::vector<std::vector<int>>{{0}, {1, 2, 3}}));
  EXPECT_EQ(env.best_groups({0}), best_groups);
  SearchBudget budget;
  budget.seed = 1;
  budget.max_evaluations = 4;
  RainbowPPOptions o;
  o.stages = 2;
  o.prune = false;
  const Plan plan = make_rainbow_pp_placer(o)->search(in.problem(), budget);
  ASSERT_EQ(plan.pipeline.stages.size(), 2u);
  EXPECT_EQ(plan.pipeline.stages[0].devices, (std::vector<int>{0}));
  EXPECT_EQ(plan.pipeline.stages[1].devices, (std::vector<int>{1, 2, 3}));
  const double full = in.sim.run(plan).step_time;
  EXPECT_DOUBLE_EQ(full, best);
  // Without the layout search: the env's equal groups and 4 x S = 8 micro-batches.
  o.search_layout = false;
  const Plan cuts_only = make_rainbow_pp_placer(o)->search(in.problem(), budget);
  EXPECT_EQ(cuts_only.pipeline.stages[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(cuts_only.pipeline.micro_batches, 8);
  const double equal = in.sim.run(cuts_only).step_time;
  EXPECT_DOUBLE_EQ(equal, env.evaluate({0}).step_time);
  EXPECT_GT(equal, 1.2 * full);
}

TEST_F(RainbowPP, LayoutSearchNeverLosesToCutsOnly) {
  // One round: the same episodes as the cut-only search (same seed, same agent), then the
  // layout search on the best cut sets, which only keeps plans that beat the best so far.
  Instance in(uneven_chain(), make_cluster(2, 2, link(1e-5, 2e9), link(1e-5, 5e8)));
  for (uint64_t seed : {1, 2}) {
    SearchBudget budget;
    budget.seed = seed;
    budget.max_evaluations = 12;
    RainbowPPOptions o = unpruned(3);
    const Plan cuts_only = make_rainbow_pp_placer(o)->search(in.problem(), budget);
    o.search_layout = true;
    o.layout_rounds = 1;
    const Plan full = make_rainbow_pp_placer(o)->search(in.problem(), budget);
    EXPECT_NO_THROW(full.validate(in.graph, in.cluster));
    EXPECT_LE(in.sim.run(full).step_time, in.sim.run(cuts_only).step_time) << "seed " << seed;
  }
  // Bad layout options.
  SearchBudget budget;
  budget.max_evaluations = 2;
  RainbowPPOptions o;
  o.layout_rounds = 0;
  EXPECT_THROW(make_rainbow_pp_placer(o)->search(in.problem(), budget), ValidationError);
  o.layout_rounds = 2;
  o.layout_top = 0;
  EXPECT_THROW(make_rainbow_pp_placer(o)->search(in.problem(), budget), ValidationError);
}

}  // namespace
}  // namespace placer
