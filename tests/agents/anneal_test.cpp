#include "agents/classical/anneal.h"

#include <gtest/gtest.h>

#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

namespace placer {
namespace {

Graph transformer_step() {
  TransformerOptions t;
  t.layers = 4;
  t.d_model = 512;
  t.heads = 8;
  t.seq_len = 128;
  t.batch = 8;
  return expand_training_step(make_transformer(t));
}

struct Fixture {
  Graph graph = transformer_step();
  Cluster cluster =
      load_cluster_yaml(PLACER_SOURCE_DIR "/datasets/clusters/dgx1_p100.cluster.yaml");
  CostModel cost{cluster, default_profile()};
  Simulator sim{graph, cluster, cost};
  Problem problem() { return Problem{graph, cluster, cost, sim, {0, 1, 2, 3}}; }
};

TEST(ColocationUnits, BackwardAndUpdateOpsFollowTheirForwardOp) {
  const Graph g = transformer_step();
  int units = 0;
  const std::vector<int> unit = colocation_units(g, &units);
  // 4 layers x 14 ops + 4 forward ops, no groups: one unit per forward op.
  EXPECT_EQ(units, 4 * 14 + 4);
  for (OpId i = 0; i < g.num_ops(); ++i) {
    if (g.op(i).forward_op != kNoOp) {
      EXPECT_EQ(unit[i], unit[g.op(i).forward_op]) << g.op(i).name;
    }
  }
}

TEST(Anneal, NeverWorseThanItsStartAndReproducesItsPrediction) {
  Fixture f;
  AnnealPlacer a;
  SearchBudget b;
  b.max_evaluations = 300;
  b.seed = 7;
  const SearchOutcome out = a.search_outcome(f.problem(), b);
  const Plan& plan = out.plan;
  EXPECT_EQ(plan.method, "anneal");
  ASSERT_EQ(plan.placement.size(), f.graph.num_ops());
  for (int d : plan.placement) EXPECT_TRUE(d >= 0 && d < 4) << d;
  const SearchStats& s = out.stats;
  EXPECT_EQ(s.value("best_oom"), 0.0);
  EXPECT_LE(s.value("best_step_time"), s.value("start_step_time"));
  // The returned plan simulates to the step time the search recorded for it.
  const SimResult r = f.sim.run(plan);
  EXPECT_DOUBLE_EQ(r.step_time, s.value("best_step_time"));
  // The start is at least as good as everything on device 0 (one of the two candidates).
  const SimResult single = f.sim.run(Plan::single_device(f.graph, 0));
  EXPECT_LE(s.value("start_step_time"), single.step_time);
  // ... and at least as good as the seed methods' placements when they are registered.
  for (const MethodInfo& m : placer_methods()) {
    if (m.name != "m-etf" && m.name != "tf-greedy") continue;
    const SimResult seed = f.sim.run(make_placer(m.name)->search(f.problem(), b));
    EXPECT_LE(s.value("start_step_time"), seed.step_time) << m.name;
  }
}

TEST(Anneal, ImprovesAPoorGivenStart) {
  // Start with ops alternating over 4 devices: every edge crosses devices, so moving
  // units together must pay off.
  Fixture f;
  AnnealOptions o;
  o.initial.resize(f.graph.num_ops());
  int units = 0;
  const std::vector<int> unit = colocation_units(f.graph, &units);
  for (OpId i = 0; i < f.graph.num_ops(); ++i) o.initial[i] = unit[i] % 4;
  AnnealPlacer a(o);
  SearchBudget b;
  b.max_evaluations = 400;
  b.seed = 3;
  const SearchStats s = a.search_outcome(f.problem(), b).stats;
  const SimResult start = f.sim.run(Plan(placement_plan(f.problem(), o.initial, "x")));
  EXPECT_DOUBLE_EQ(s.value("start_step_time"), start.step_time);
  EXPECT_EQ(s.note("start"), "initial");
  EXPECT_LT(s.value("best_step_time"), 0.9 * start.step_time);
  EXPECT_GT(s.value("accepted"), 0);
  EXPECT_GT(s.value("improved"), 0);
}

TEST(Anneal, SameSeedSamePlanOtherSeedOtherPath) {
  Fixture f;
  SearchBudget b;
  b.max_evaluations = 150;
  b.seed = 42;
  AnnealPlacer a1, a2, a3;
  const SearchOutcome o1 = a1.search_outcome(f.problem(), b);
  const SearchOutcome o2 = a2.search_outcome(f.problem(), b);
  EXPECT_EQ(o1.plan.placement, o2.plan.placement);
  EXPECT_EQ(o1.stats.value("accepted"), o2.stats.value("accepted"));
  b.seed = 43;
  const SearchOutcome o3 = a3.search_outcome(f.problem(), b);
  // A different seed takes another random walk (the plan or the acceptance count differs).
  EXPECT_TRUE(o3.plan.placement != o1.plan.placement ||
              o3.stats.value("accepted") != o1.stats.value("accepted"));
  EXPECT_EQ(o3.stats.runs, 150);
}

TEST(Anneal, RespectsTheEvaluationBudget) {
  Fixture f;
  for (int64_t n : {1, 2, 3, 57}) {
    AnnealPlacer a;
    SearchBudget b;
    b.max_evaluations = n;
    EXPECT_EQ(a.search_outcome(f.problem(), b).stats.runs, n);
  }
  AnnealOptions o;
  o.default_evaluations = 25;
  AnnealPlacer a(o);
  EXPECT_EQ(a.search_outcome(f.problem(), SearchBudget{}).stats.runs, 25);
}

TEST(Anneal, SecondsBudgetStops) {
  Fixture f;
  AnnealPlacer a;
  SearchBudget b;
  b.max_seconds = 0.2;
  EXPECT_GT(a.search_outcome(f.problem(), b).stats.runs, 2);
}

TEST(Anneal, PlacesOnlyOnTheAllowedDevices) {
  Fixture f;
  Problem p = f.problem();
  p.devices = {2, 5};
  AnnealPlacer a;
  SearchBudget b;
  b.max_evaluations = 100;
  const Plan plan = a.search(p, b);
  for (int d : plan.placement) EXPECT_TRUE(d == 2 || d == 5) << d;
}

TEST(Anneal, AvoidsOutOfMemory) {
  // Four ops with 1.5 GiB of parameters each: parameters + gradients + Adam state = 6 GiB
  // per op, 24 GiB on one 16 GiB device (OOM), 12 GiB per device when split 2 + 2.
  ChainOptions c;
  c.n = 4;
  c.flops = 1e9;
  c.param_bytes = 3ull << 29;
  const Graph g = expand_training_step(make_chain(c));
  const Cluster cl = load_cluster_yaml(PLACER_TEST_DATA_DIR "/two_gpus.cluster.yaml");
  CostModel cost(cl, default_profile());
  Simulator sim(g, cl, cost);
  Problem p{g, cl, cost, sim, {}};
  const SimResult single = sim.run(Plan::single_device(g, 0));
  ASSERT_TRUE(single.oom);
  AnnealOptions o;
  o.initial.assign(g.num_ops(), 0);
  AnnealPlacer a(o);
  SearchBudget b;
  b.max_evaluations = 200;
  const SearchStats s = a.search_outcome(p, b).stats;
  EXPECT_EQ(s.value("start_oom"), 1.0);
  EXPECT_EQ(s.value("best_oom"), 0.0);
}

TEST(Anneal, GraphThatFitsNowhereIsAnErrorUnlessOomAllowed) {
  // 8 GiB of parameters per op: with gradients and Adam state 32 GiB per op > 16 GiB.
  ChainOptions c;
  c.n = 2;
  c.param_bytes = 8ull << 30;
  const Graph g = expand_training_step(make_chain(c));
  const Cluster cl = load_cluster_yaml(PLACER_TEST_DATA_DIR "/two_gpus.cluster.yaml");
  CostModel cost(cl, default_profile());
  Simulator sim(g, cl, cost);
  Problem p{g, cl, cost, sim, {}};
  SearchBudget b;
  b.max_evaluations = 20;
  AnnealPlacer strict;
  EXPECT_THROW(strict.search(p, b), Error);
  AnnealOptions o;
  o.allow_oom = true;
  AnnealPlacer lenient(o);
  const SearchOutcome out = lenient.search_outcome(p, b);
  EXPECT_EQ(out.stats.value("best_oom"), 1.0);
  EXPECT_EQ(out.plan.placement.size(), g.num_ops());
}

TEST(Anneal, RejectsAMisSizedInitialPlacement) {
  Fixture f;
  AnnealOptions o;
  o.initial = {0, 1};
  AnnealPlacer a(o);
  EXPECT_THROW(a.search(f.problem(), SearchBudget{}), Error);
}

TEST(Anneal, IsRegistered) {
  auto p = make_placer("anneal");
  EXPECT_EQ(p->name(), "anneal");
}

}  // namespace
}  // namespace placer
