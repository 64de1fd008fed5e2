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
  const Plan plan = a.search(f.problem(), b);
  EXPECT_EQ(plan.method, "anneal");
  ASSERT_EQ(plan.placement.size(), f.graph.num_ops());
  for (int d : plan.placement) EXPECT_TRUE(d >= 0 && d < 4) << d;
  const AnnealStats& s = a.last_stats();
  EXPECT_FALSE(s.best_oom);
  EXPECT_LE(s.best_step_time, s.start_step_time);
  // The returned plan simulates to the step time the search recorded for it.
  const SimResult r = f.sim.run(plan);
  EXPECT_DOUBLE_EQ(r.step_time, s.best_step_time);
  // The start is at least as good as everything on device 0 (one of the two candidates).
  const SimResult single = f.sim.run(Plan::single_device(f.graph, 0));
  EXPECT_LE(s.start_step_time, single.step_time);
  // ... and at least as good as the seed methods' placements when they are registered.
  for (const MethodInfo& m : placer_methods()) {
    if (m.name != "m-etf" && m.name != "tf-greedy") continue;
    const SimResult seed = f.sim.run(make_placer(m.name)->search(f.problem(), b));
    EXPECT_LE(s.start_step_time, seed.step_time) << m.name;
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
  const Plan plan = a.search(f.problem(), b);
  const SimResult start = f.sim.run(Plan(placement_plan(f.problem(), o.initial, "x")));
  EXPECT_DOUBLE_EQ(a.last_stats().start_step_time, start.step_time);
  EXPECT_EQ(a.last_stats().start, "initial");
  EXPECT_LT(a.last_stats().best_step_time, 0.9 * start.step_time);
  EXPECT_GT(a.last_stats().accepted, 0);
  EXPECT_GT(a.last_stats().improved, 0);
  (void)plan;
}

TEST(Anneal, SameSeedSamePlanOtherSeedOtherPath) {
  Fixture f;
  SearchBudget b;
  b.max_evaluations = 150;
  b.seed = 42;
  AnnealPlacer a1, a2, a3;
  const Plan p1 = a1.search(f.problem(), b);
  const Plan p2 = a2.search(f.problem(), b);
  EXPECT_EQ(p1.placement, p2.placement);
  EXPECT_EQ(a1.last_stats().accepted, a2.last_stats().accepted);
  b.seed = 43;
  const Plan p3 = a3.search(f.problem(), b);
  // A different seed takes another random walk (the plan or the acceptance count differs).
  EXPECT_TRUE(p3.placement != p1.placement || a3.last_stats().accepted != a1.last_stats().accepted);
  EXPECT_EQ(a3.last_stats().evaluations, 150);
}

TEST(Anneal, RespectsTheEvaluationBudget) {
  Fixture f;
  for (int64_t n : {1, 2, 3, 57}) {
    AnnealPlacer a;
    SearchBudget b;
    b.max_evaluations = n;
    a.search(f.problem(), b);
    EXPECT_EQ(a.last_stats().evaluations, n);
  }
  AnnealOptions o;
  o.default_evaluations = 25;
  AnnealPlacer a(o);
  a.search(f.problem(), SearchBudget{});
  EXPECT_EQ(a.last_stats().evaluations, 25);
}

TEST(Anneal, SecondsBudgetStops) {
  Fixture f;
  AnnealPlacer a;
  SearchBudget b;
  b.max_seconds = 0.2;
  a.search(f.problem(), b);
  EXPECT_GT(a.last_stats().evaluations, 2);
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
  a.search(p, b);
  EXPECT_TRUE(a.last_stats().start_oom);
  EXPECT_FALSE(a.last_stats().best_oom);
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
  const Plan plan = lenient.search(p, b);
  EXPECT_TRUE(lenient.last_stats().best_oom);
  EXPECT_EQ(plan.placement.size(), g.num_ops());
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
