#include "datasets/coarsen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/graph_json.h"
#include "src/io/plan_io.h"
#include "src/util/error.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

using testing::make_cluster;

// ---- Invariants every coarsening must satisfy --------------------------------------------

/// Every op in exactly one group; group / coarse-op maps consistent; every fine edge
/// between coarse ops is a coarse edge; totals preserved. (The coarse graph is a DAG by
/// construction: GraphBuilder::build() would have thrown.)
void expect_valid(const Graph& g, const Coarsening& c, bool colocated = true) {
  ASSERT_EQ(c.group_of_op.size(), g.num_ops());
  ASSERT_EQ(c.coarse_op_of_op.size(), g.num_ops());
  ASSERT_EQ(c.group_names.size(), c.num_groups());
  ASSERT_EQ(c.coarse_ops_of_group.size(), c.num_groups());
  ASSERT_EQ(c.group_of_coarse_op.size(), c.coarse.num_ops());
  EXPECT_EQ(c.stats.groups, c.num_groups());
  std::vector<int> seen(g.num_ops(), 0);
  for (size_t k = 0; k < c.num_groups(); ++k) {
    ASSERT_FALSE(c.ops_of_group[k].empty());
    for (OpId i : c.ops_of_group[k]) {
      ++seen[i];
      EXPECT_EQ(c.group_of_op[i], int(k));
      EXPECT_EQ(c.group_of_coarse_op[c.coarse_op_of_op[i]], int(k));
    }
    for (OpId co : c.coarse_ops_of_group[k]) {
      EXPECT_EQ(c.group_of_coarse_op[co], int(k));
      EXPECT_EQ(c.coarse.op(co).group, c.group_names[k]);
    }
  }
  for (OpId i = 0; i < g.num_ops(); ++i) EXPECT_EQ(seen[i], 1) << g.op(i).name;
  std::set<std::string> names(c.group_names.begin(), c.group_names.end());
  EXPECT_EQ(names.size(), c.num_groups());
  for (OpId i = 0; i < g.num_ops(); ++i) {
    for (OpId s : g.succs(i)) {
      const OpId a = c.coarse_op_of_op[i], b = c.coarse_op_of_op[s];
      if (a == b) continue;
      const auto succ = c.coarse.succs(a);
      EXPECT_TRUE(std::find(succ.begin(), succ.end(), b) != succ.end())
          << g.op(i).name << " -> " << g.op(s).name;
    }
  }
  EXPECT_NEAR(c.coarse.total_flops(), g.total_flops(), 1e-12 * g.total_flops());
  EXPECT_EQ(c.coarse.total_param_bytes(), g.total_param_bytes());
  uint64_t state = 0, coarse_state = 0;
  for (const Op& o : g.ops()) state += o.state_bytes;
  for (const Op& o : c.coarse.ops()) coarse_state += o.state_bytes;
  EXPECT_EQ(coarse_state, state);
  // Backward / optimizer coarse ops point at a forward coarse op (under colocation, their
  // group's).
  for (OpId co = 0; co < c.coarse.num_ops(); ++co) {
    const OpId f = c.coarse.op(co).forward_op;
    if (f == kNoOp) continue;
    EXPECT_EQ(c.coarse.op(f).phase, Phase::kForward);
    if (colocated) {
      EXPECT_EQ(c.group_of_coarse_op[f], c.group_of_coarse_op[co]);
    }
  }
}

/// Forward op + its "/grad" + its "/update" share a group.
void expect_colocated(const Graph& g, const Coarsening& c) {
  size_t checked = 0;
  for (OpId i = 0; i < g.num_ops(); ++i) {
    const OpId f = g.op(i).forward_op;
    if (f == kNoOp) continue;
    EXPECT_EQ(c.group_of_op[i], c.group_of_op[f]) << g.op(i).name;
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

Graph mlp_step(int layers = 3) {
  MlpOptions o;
  o.layers = layers;
  o.input = 64;
  o.hidden = 128;
  o.classes = 10;
  o.batch = 16;
  return expand_training_step(make_mlp(o));
}

Graph transformer_step(int layers = 2) {
  TransformerOptions t;
  t.layers = layers;
  t.d_model = 64;
  t.heads = 4;
  t.seq_len = 16;
  t.batch = 4;
  t.vocab = 256;
  return expand_training_step(make_transformer(t));
}

TEST(CommonScope, ComponentWise) {
  EXPECT_EQ(common_scope("encoder.layer.3.attn", "encoder.layer.3.ffn"), "encoder.layer.3");
  EXPECT_EQ(common_scope("a.b", "a.bc"), "a");
  EXPECT_EQ(common_scope("a.b", "a.b.c"), "a.b");
  EXPECT_EQ(common_scope("a.b", "a.b"), "a.b");
  EXPECT_EQ(common_scope("a/b/c", "a/b/d"), "a/b");
  EXPECT_EQ(common_scope("x", "y"), "");
  EXPECT_EQ(common_scope("", "a"), "");
}

// ---- Step 1: colocation ---------------------------------------------------------------------

TEST(Coarsen, ColocationOnlyKeepsEveryLayerAndItsNames) {
  const Graph g = mlp_step(3);
  CoarsenOptions o;
  o.fuse_elementwise = false;
  const Coarsening c = coarsen(g, o);
  expect_valid(g, c);
  expect_colocated(g, c);
  // 6 forward ops (3 linear, 2 relu, loss), each with its gradient and update.
  EXPECT_EQ(c.num_groups(), 6u);
  EXPECT_EQ(c.stats.groups_after_colocation, 6u);
  // Nothing was merged across layers: the coarse graph is the fine graph, names included.
  ASSERT_EQ(c.coarse.num_ops(), g.num_ops());
  for (OpId i = 0; i < g.num_ops(); ++i) {
    EXPECT_EQ(c.coarse.op(c.coarse_op_of_op[i]).name, g.op(i).name);
    EXPECT_EQ(c.coarse.op(c.coarse_op_of_op[i]).flops, g.op(i).flops);
  }
  const int l0 = c.group_of_op[g.find_op("layers.0.linear")];
  EXPECT_EQ(c.group_names[l0], "layers.0.linear");
  EXPECT_EQ(c.group_of_op[g.find_op("layers.0.linear/grad")], l0);
  EXPECT_EQ(c.group_of_op[g.find_op("layers.0.linear/update")], l0);
  EXPECT_EQ(c.coarse_ops_of_group[l0].size(), 3u);  // forward, backward, optimizer
  const Op& grad = c.coarse.op(c.coarse.find_op("layers.0.linear/grad"));
  EXPECT_EQ(grad.forward_op, c.coarse.find_op("layers.0.linear"));
  EXPECT_EQ(grad.phase, Phase::kBackward);
}

TEST(Coarsen, NoColocationIsTheIdentity) {
  const Graph g = mlp_step(2);
  CoarsenOptions o;
  o.colocate = false;
  o.fuse_elementwise = false;
  const Coarsening c = coarsen(g, o);
  expect_valid(g, c, false);
  EXPECT_EQ(c.num_groups(), g.num_ops());
  ASSERT_EQ(c.coarse.num_ops(), g.num_ops());
  EXPECT_EQ(c.coarse.num_tensors(), g.num_tensors());
  for (OpId i = 0; i < g.num_ops(); ++i) {
    EXPECT_EQ(c.coarse_op_of_op[i], i);
    EXPECT_EQ(c.coarse.op(i).name, g.op(i).name);
    EXPECT_EQ(c.coarse.op(i).forward_op, g.op(i).forward_op);
  }
}

/// x -> a -> y -> b with a, b in group "G" and y not: keeping G together would close the
/// cycle G -> y -> G, so y joins G.
TEST(Coarsen, GroupThatWouldCloseACycleAbsorbsThePath) {
  testing::TestGraph t("detour");
  const TensorId x = t.tensor("x", 8), ta = t.tensor("a.out", 8), ty = t.tensor("y.out", 8),
                 tb = t.tensor("b.out", 8), tz = t.tensor("z.out", 8);
  const OpId a = t.op("a", 10, {x}, {ta});
  const OpId y = t.op("y", 20, {ta}, {ty});
  const OpId b = t.op("b", 30, {ty}, {tb});
  const OpId z = t.op("z", 40, {tb}, {tz});
  t.at(a).group = "G";
  t.at(b).group = "G";
  const Graph g = t.build();
  CoarsenOptions o;
  o.fuse_elementwise = false;
  const Coarsening c = coarsen(g, o);
  expect_valid(g, c);
  EXPECT_EQ(c.num_groups(), 2u);
  EXPECT_EQ(c.group_of_op[a], c.group_of_op[y]);
  EXPECT_EQ(c.group_of_op[a], c.group_of_op[b]);
  EXPECT_NE(c.group_of_op[a], c.group_of_op[z]);
  // No shared Op::group, no scopes: the first and last forward op.
  EXPECT_EQ(c.group_names[c.group_of_op[a]], "a..b");
  EXPECT_EQ(c.coarse.op(c.coarse_op_of_op[a]).flops, 60);
  EXPECT_EQ(c.coarse.num_ops(), 2u);
  EXPECT_EQ(c.coarse.num_tensors(), 3u);  // x, b.out, z.out (a.out, y.out are internal)
}

/// A cycle through two phases of one group (forward a -> y -> backward b -> x -> forward
/// a2, with a, a2, b in "G") cannot be fixed by merging groups phase by phase: the group's
/// phases merge into one coarse op.
TEST(Coarsen, CycleThroughPhasesMergesThePhases) {
  testing::TestGraph t("phases");
  const TensorId in = t.tensor("in", 8), ta = t.tensor("a.out", 8), ty = t.tensor("y.out", 8),
                 tb = t.tensor("b.out", 8), tx = t.tensor("x.out", 8), t2 = t.tensor("a2.out", 8);
  const OpId a = t.op("a", 1, {in}, {ta});
  t.op("y", 2, {ta}, {ty});
  const OpId b = t.op("b", 3, {ty}, {tb}, Phase::kBackward);
  t.op("x", 4, {tb}, {tx});
  const OpId a2 = t.op("a2", 5, {tx}, {t2});
  for (OpId i : {a, b, a2}) t.at(i).group = "G";
  const Graph g = t.build();
  CoarsenOptions o;
  o.fuse_elementwise = false;
  const Coarsening c = coarsen(g, o);
  expect_valid(g, c);
  ASSERT_EQ(c.num_groups(), 1u);
  ASSERT_EQ(c.coarse.num_ops(), 1u);
  EXPECT_EQ(c.group_names[0], "a..a2");              // x and y are not in "G"
  EXPECT_EQ(c.coarse.op(0).phase, Phase::kForward);  // 12 of 15 FLOPs are forward
  EXPECT_EQ(c.coarse.op(0).flops, 15);
}

// ---- Step 2: fusion -------------------------------------------------------------------------

/// x -> A (MatMul) -> B (Add) -> C (Relu) -> D (Reshape) -> E (MatMul) -> F (loss), plus a
/// fan-out: A2 (Relu) on x feeding E and F is left alone (two consumers).
TEST(Coarsen, ElementwiseChainFusesIntoOneGroup) {
  GraphBuilder b("chain");
  auto tensor = [&](const std::string& n) { return b.add_tensor(n, 1024); };
  auto op = [&](const std::string& n, const std::string& type, std::vector<TensorId> in,
                std::vector<TensorId> out) {
    Op o;
    o.name = n;
    o.type = type;
    o.category = category_of_op_type(type);
    o.flops = 100;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    return b.add_op(std::move(o));
  };
  const TensorId x = tensor("x"), ta = tensor("A.out"), tb = tensor("B.out"), tc = tensor("C.out"),
                 td = tensor("D.out"), te = tensor("E.out"), tf = tensor("F.out"),
                 t2 = tensor("A2.out");
  const OpId A = op("A", "MatMul", {x}, {ta});
  const OpId B = op("B", "Add", {ta}, {tb});
  const OpId C = op("C", "Relu", {tb}, {tc});
  const OpId D = op("D", "Reshape", {tc}, {td});
  const OpId A2 = op("A2", "Relu", {x}, {t2});
  const OpId E = op("E", "MatMul", {td, t2}, {te});
  const OpId F = op("F", "SoftmaxCrossEntropy", {te, t2}, {tf});
  const Graph g = b.build();

  const Coarsening c = coarsen(g);
  expect_valid(g, c);
  EXPECT_EQ(c.stats.groups_after_colocation, 7u);
  EXPECT_EQ(c.num_groups(), 4u);  // {A, B, C, D}, {A2}, {E}, {F}
  for (OpId i : {B, C, D}) EXPECT_EQ(c.group_of_op[i], c.group_of_op[A]);
  EXPECT_NE(c.group_of_op[A2], c.group_of_op[E]);
  EXPECT_NE(c.group_of_op[E], c.group_of_op[A]);
  EXPECT_NE(c.group_of_op[F], c.group_of_op[E]);
  const Op& fused = c.coarse.op(c.coarse_op_of_op[A]);
  EXPECT_EQ(fused.name, "A..D");  // no scope: the first and last op
  EXPECT_EQ(fused.type, "Group");
  // Work max(FLOPs, bytes) per category: MatMul 2 KiB, elementwise 4 KiB, data movement 2 KiB.
  EXPECT_EQ(fused.category, OpCategory::kElementwise);
  EXPECT_EQ(fused.flops, 400);
  EXPECT_EQ(fused.bytes_accessed, 4u * 2048);  // each op reads and writes 1 KiB
  ASSERT_EQ(fused.inputs.size(), 1u);
  EXPECT_EQ(c.coarse.tensor(fused.inputs[0]).name, "x");
  ASSERT_EQ(fused.outputs.size(), 1u);
  EXPECT_EQ(c.coarse.tensor(fused.outputs[0]).name, "D.out");
}

TEST(Coarsen, FusionInATrainingStepMergesLinearWithItsRelu) {
  const Graph g = mlp_step(3);
  const Coarsening c = coarsen(g);
  expect_valid(g, c);
  expect_colocated(g, c);
  // {layers.0.linear, layers.0.relu}, {layers.1.*}, {layers.2.linear}, {loss}.
  EXPECT_EQ(c.num_groups(), 4u);
  const int l0 = c.group_of_op[g.find_op("layers.0.linear")];
  EXPECT_EQ(c.group_of_op[g.find_op("layers.0.relu/grad")], l0);
  EXPECT_EQ(c.group_names[l0], "layers.0");  // the group's scope, unique
  EXPECT_NE(c.coarse.find_op("layers.0"), kNoOp);
  EXPECT_NE(c.coarse.find_op("layers.0/grad"), kNoOp);
  EXPECT_NE(c.coarse.find_op("layers.0/update"), kNoOp);
  EXPECT_EQ(c.coarse.num_ops(), 4u + 4u + 3u);  // forward, backward per group; 3 updates
}

// ---- Step 3: merging to a target ------------------------------------------------------------

TEST(Coarsen, TransformerStepMergesToTheTarget) {
  const Graph g = transformer_step(2);
  for (int target : {1, 2, 3, 5, 8, 12}) {
    CoarsenOptions o;
    o.target_groups = target;
    const Coarsening c = coarsen(g, o);
    SCOPED_TRACE("target " + std::to_string(target));
    expect_valid(g, c);
    expect_colocated(g, c);
    EXPECT_EQ(c.num_groups(), size_t(target));
  }
}

/// Merging follows the module tree: an 8-layer transformer merged to 12 groups gives one
/// group per layer (named by its scope, which it holds whole) and the 4 top-level ops;
/// to 10, the two smallest top-level neighbours join; to 4, spans of 4 layers.
TEST(Coarsen, MergingFollowsTheModuleScopes) {
  const Graph g = transformer_step(8);
  CoarsenOptions o;
  o.target_groups = 12;
  std::vector<std::string> want = {"embedding"};
  for (int l = 0; l < 8; ++l) want.push_back("encoder.layer." + std::to_string(l));
  for (const char* n : {"final_layernorm", "lm_head", "loss"}) want.push_back(n);
  Coarsening c = coarsen(g, o);
  EXPECT_EQ(c.group_names, want);
  for (size_t k = 1; k <= 8; ++k) {
    for (OpId i : c.ops_of_group[k]) EXPECT_EQ(g.op(i).layer, int(k) - 1) << g.op(i).name;
  }
  o.target_groups = 10;
  want.resize(9);
  want.push_back("final_layernorm..loss");
  EXPECT_EQ(coarsen(g, o).group_names, want);
  o.target_groups = 4;
  EXPECT_EQ(coarsen(g, o).group_names,
            (std::vector<std::string>{
                "embedding", "encoder.layer.0.attention..encoder.layer.3.output",
                "encoder.layer.4.attention..encoder.layer.7.output", "final_layernorm..loss"}));
}

TEST(Coarsen, RandomGraphsNeverGetACycleAndReachTheTarget) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    LayeredRandomOptions r;
    r.n_ops = 60 + int(seed * 7 % 140);
    r.width = 1 + int(seed % 9);
    r.max_fan_in = 1 + int(seed % 4);
    r.max_skip = 1 + int(seed % 3);
    r.seed = seed;
    const Graph fwd = make_layered_random(r);
    const Graph g = seed % 2 ? expand_training_step(fwd) : fwd;
    CoarsenOptions o;
    o.target_groups = 1 + int(seed * 13 % 37);
    o.fuse_elementwise = seed % 3 != 0;
    const Coarsening c = coarsen(g, o);
    SCOPED_TRACE("seed " + std::to_string(seed));
    expect_valid(g, c);
    if (g.is_training_step()) expect_colocated(g, c);
    EXPECT_EQ(c.num_groups(), std::min<size_t>(o.target_groups, c.stats.groups_after_fusion));
  }
}

/// Groups U = {u, u'} and V = {v, v'} (by Op::group, no forward_op links) with u -> v,
/// u -> u' and a backward op v' feeding the forward op v. Merging U and V phase by phase
/// would close the cycle {u, v} -> {u', v'} -> {u, v}: the merge is refused and 2 groups,
/// the fewest without a cycle, remain.
TEST(Coarsen, TargetBelowTheFewestAcyclicGroupsStopsThere) {
  testing::TestGraph t("twisted");
  const TensorId in = t.tensor("in", 8), tu = t.tensor("u.out", 8), tv = t.tensor("v.out", 8),
                 tu2 = t.tensor("u2.out", 8), tv2 = t.tensor("v2.out", 8);
  const OpId v2 = t.op("v2", 1, {in}, {tv2}, Phase::kBackward);
  const OpId u = t.op("u", 1, {in}, {tu});
  const OpId v = t.op("v", 1, {tu, tv2}, {tv});
  const OpId u2 = t.op("u2", 1, {tu}, {tu2}, Phase::kBackward);
  t.at(u).group = t.at(u2).group = "U";
  t.at(v).group = t.at(v2).group = "V";
  const Graph g = t.build();
  CoarsenOptions o;
  o.target_groups = 1;
  const Coarsening c = coarsen(g, o);
  expect_valid(g, c);
  EXPECT_EQ(c.num_groups(), 2u);
  EXPECT_EQ(c.coarse.num_ops(), 4u);
  EXPECT_GE(c.stats.rejected_merges, 1u);
  EXPECT_EQ(c.group_names, (std::vector<std::string>{"V", "U"}));  // by lowest op id
}

TEST(Coarsen, Deterministic) {
  LayeredRandomOptions r;
  r.n_ops = 300;
  r.seed = 5;
  const Graph g = expand_training_step(make_layered_random(r));
  CoarsenOptions o;
  o.target_groups = 17;
  const Coarsening a = coarsen(g, o), b = coarsen(g, o);
  EXPECT_EQ(a.group_of_op, b.group_of_op);
  EXPECT_EQ(a.group_names, b.group_names);
  EXPECT_EQ(graph_to_json(a.coarse), graph_to_json(b.coarse));
}

TEST(Coarsen, BadOptions) {
  const Graph g = mlp_step(1);
  CoarsenOptions o;
  o.target_groups = -1;
  EXPECT_THROW(coarsen(g, o), ValidationError);
  o.target_groups = 0;
  o.balance = 0;
  EXPECT_THROW(coarsen(g, o), ValidationError);
}

// ---- Plans on groups ------------------------------------------------------------------------

Cluster four_gpus() {
  return make_cluster(1, 4, testing::link(2e-6, 20e9), testing::link(10e-6, 5e9));
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("''") : std::string(1, ch);
  return q + "'";
}

/// THE required property: a placement of groups, expanded to ops, simulates exactly like
/// the same placement written as `placement.groups` in a plan file on the group-annotated
/// graph and loaded back.
TEST(CoarsenPlan, GroupPlacementSimulatesLikeTheOpPlacementItExpandsTo) {
  const Graph g = transformer_step(2);
  const Cluster cluster = four_gpus();
  const CostModel cost(cluster, uniform_profile(0.5));
  for (int devices : {2, 3, 4}) {
    SCOPED_TRACE(std::to_string(devices) + " devices");
    CoarsenOptions o;
    o.target_groups = 10;
    const Coarsening c = coarsen(g, o);
    std::vector<int> dev(c.num_groups());
    for (size_t k = 0; k < dev.size(); ++k) dev[k] = int(k) % devices;
    const Plan coarse_plan = plan_from_group_devices(c, dev);
    const Plan op_plan = expand_group_plan(c, g, coarse_plan);
    ASSERT_NO_THROW(op_plan.validate(g, cluster));
    for (OpId i = 0; i < g.num_ops(); ++i) EXPECT_EQ(op_plan.placement[i], dev[c.group_of_op[i]]);

    // (b) placement.groups on the annotated graph.
    const Graph annotated = with_group_names(g, c);
    std::string text = "format_version: \"1.0\"\nplacement:\n  groups:\n";
    for (size_t k = 0; k < c.num_groups(); ++k) {
      text += "    " + quoted(c.group_names[k]) + ": " + std::to_string(dev[k]) + "\n";
    }
    const Plan file_plan = parse_plan_yaml(text, "groups.plan.yaml", annotated, cluster);
    EXPECT_EQ(file_plan.placement, op_plan.placement);

    Simulator fine_sim(g, cluster, cost), annotated_sim(annotated, cluster, cost);
    const SimResult a = fine_sim.run(op_plan);
    const SimResult b = annotated_sim.run(file_plan);
    EXPECT_GT(a.step_time, 0);
    EXPECT_EQ(a.step_time, b.step_time);
    EXPECT_EQ(a.peak_memory, b.peak_memory);
    EXPECT_EQ(a.compute_time, b.compute_time);

    // The writer puts whole groups under placement.groups and reads back the same plan.
    const std::string written = plan_to_yaml(op_plan, annotated, cluster);
    EXPECT_NE(written.find("groups:"), std::string::npos);
    EXPECT_EQ(parse_plan_yaml(written, "w.plan.yaml", annotated, cluster).placement,
              op_plan.placement);
  }
}

TEST(CoarsenPlan, PipelineDataParallelAndPartitionsMapToOps) {
  const Graph g = transformer_step(2);
  const Cluster cluster = four_gpus();
  CoarsenOptions o;
  o.target_groups = 6;
  const Coarsening c = coarsen(g, o);
  Plan cp = plan_from_group_devices(c, std::vector<int>(c.num_groups(), 0));
  // Two stages over the coarse forward ops, in coarse topological order.
  std::vector<OpId> fwd;
  for (OpId co : c.coarse.topo_order()) {
    if (c.coarse.op(co).phase == Phase::kForward) fwd.push_back(co);
  }
  ASSERT_GE(fwd.size(), 2u);
  const size_t half = fwd.size() / 2;
  cp.pipeline.stages.push_back({{fwd.begin(), fwd.begin() + half}, {0}});
  cp.pipeline.stages.push_back({{fwd.begin() + half, fwd.end()}, {1}});
  cp.pipeline.micro_batches = 2;
  cp.data_parallel.sync = SyncScheme::kTree;
  ASSERT_NO_THROW(cp.validate(c.coarse, cluster));
  const Plan p = expand_group_plan(c, g, cp);
  EXPECT_EQ(p.placement, std::vector<int>(g.num_ops(), 0));
  EXPECT_EQ(p.pipeline.micro_batches, 2);
  EXPECT_EQ(p.data_parallel.sync, SyncScheme::kTree);
  ASSERT_EQ(p.pipeline.stages.size(), 2u);
  size_t forward_ops = 0;
  for (const Op& op : g.ops()) forward_ops += op.phase == Phase::kForward;
  EXPECT_EQ(p.pipeline.stages[0].ops.size() + p.pipeline.stages[1].ops.size(), forward_ops);
  for (size_t s = 0; s < 2; ++s) {
    for (OpId i : p.pipeline.stages[s].ops) {
      const auto& st = cp.pipeline.stages[s].ops;
      EXPECT_TRUE(std::find(st.begin(), st.end(), c.coarse_op_of_op[i]) != st.end());
    }
  }
  ASSERT_NO_THROW(p.validate(g, cluster));
  Simulator sim(g, cluster, CostModel(cluster, uniform_profile()));
  EXPECT_GT(sim.run(p).step_time, 0);

  // Partitions: a batch split of a multi-op group splits each of its forward ops.
  Plan part = plan_from_group_devices(c, std::vector<int>(c.num_groups(), 0));
  OpId multi = kNoOp;
  for (OpId co : fwd) {
    if (c.coarse.op(co).type == "Group") multi = co;
  }
  ASSERT_NE(multi, kNoOp);
  part.partitions.push_back({multi, 0, {0, 1}});
  const Plan pp = expand_group_plan(c, g, part);
  size_t members = 0;  // forward ops whose first output has a batch dim of >= 2 (or none)
  for (OpId i = 0; i < g.num_ops(); ++i) {
    if (c.coarse_op_of_op[i] != multi || g.op(i).phase != Phase::kForward) continue;
    const auto& shape = g.tensor(g.op(i).outputs[0]).shape;
    members += shape.empty() || shape[0] >= 2;
  }
  EXPECT_GT(members, 1u);
  EXPECT_EQ(pp.partitions.size(), members);
  ASSERT_NO_THROW(pp.validate(g, cluster));
  part.partitions[0].dim = 1;
  EXPECT_THROW(expand_group_plan(c, g, part), ValidationError);
  // A group of one forward op maps any split exactly.
  CoarsenOptions none;
  none.fuse_elementwise = false;
  const Coarsening id = coarsen(g, none);
  Plan single = plan_from_group_devices(id, std::vector<int>(id.num_groups(), 0));
  const OpId mm = id.coarse.find_op("encoder.layer.0.intermediate.dense");
  ASSERT_NE(mm, kNoOp);
  single.partitions.push_back({mm, 1, {0, 1, 2}});
  const Plan sp = expand_group_plan(id, g, single);
  ASSERT_EQ(sp.partitions.size(), 1u);
  EXPECT_EQ(sp.partitions[0].op, g.find_op("encoder.layer.0.intermediate.dense"));
  EXPECT_EQ(sp.partitions[0].dim, 1);
  EXPECT_THROW(plan_from_group_devices(c, {0}), ValidationError);
  EXPECT_THROW(expand_group_plan(c, mlp_step(1), cp), ValidationError);
}

/// Groups named by whole module scopes work as pipeline stages: a 2-stage pipeline over the
/// coarse graph of an 8-layer transformer (one group per layer) expands to the same stages
/// as a plan file with `scopes:` and simulates identically.
TEST(CoarsenPlan, PipelineOnScopeGroupsMatchesAScopesPlanFile) {
  const Graph g = transformer_step(8);
  const Cluster cluster = four_gpus();
  CoarsenOptions o;
  o.target_groups = 12;
  const Coarsening c = coarsen(g, o);
  ASSERT_EQ(c.group_names[4], "encoder.layer.3");
  Plan cp = plan_from_group_devices(c, std::vector<int>(c.num_groups(), 0));
  cp.pipeline.micro_batches = 4;
  cp.pipeline.stages.resize(2);
  cp.pipeline.stages[0].devices = {0};
  cp.pipeline.stages[1].devices = {1};
  for (size_t k = 0; k < c.num_groups(); ++k) {
    cp.pipeline.stages[k <= 4 ? 0 : 1].ops.push_back(c.coarse_ops_of_group[k][0]);
  }
  const Plan expanded = expand_group_plan(c, g, cp);
  std::string text =
      "format_version: \"1.0\"\nplacement: {default: 0}\npipeline:\n  micro_batches: 4\n"
      "  stages:\n";
  for (int s = 0; s < 2; ++s) {
    text += "    - devices: [" + std::to_string(s) + "]\n      scopes: [";
    for (size_t k = s == 0 ? 0 : 5; k < (s == 0 ? 5u : c.num_groups()); ++k) {
      text += (k == 0 || k == 5 ? "" : ", ") + c.group_names[k];
    }
    text += "]\n";
  }
  const Plan file = parse_plan_yaml(text, "scopes.plan.yaml", g, cluster);
  ASSERT_EQ(file.pipeline.stages.size(), 2u);
  EXPECT_EQ(file.pipeline.stages[0].ops, expanded.pipeline.stages[0].ops);
  EXPECT_EQ(file.pipeline.stages[1].ops, expanded.pipeline.stages[1].ops);
  const CostModel cost(cluster, uniform_profile(0.5));
  Simulator sim(g, cluster, cost);
  const SimResult a = sim.run(expanded), b = sim.run(file);
  EXPECT_GT(a.step_time, 0);
  EXPECT_EQ(a.step_time, b.step_time);
  EXPECT_EQ(a.peak_memory, b.peak_memory);
}

TEST(Coarsen, EmptyGraph) {
  const Graph g = GraphBuilder("empty").build();
  const Coarsening c = coarsen(g);
  EXPECT_EQ(c.num_groups(), 0u);
  EXPECT_EQ(c.coarse.num_ops(), 0u);
}

// ---- The coarse graph simulated -------------------------------------------------------------

Cluster one_gpu(double launch) {
  Cluster c;
  c.name = "one";
  DeviceSpec s = testing::test_spec();
  s.launch_overhead = launch;
  c.add_host("host0", s, 1);
  return c;
}

/// A chain on one device runs its ops back to back. Fused into one coarse op it costs one
/// launch + max(sum FLOPs / peak, sum bytes / bandwidth) instead of n launches + the sum of
/// each op's max(): with every op memory-bound the two differ by exactly (n - 1) launches.
TEST(CoarsenSim, FusedChainSavesExactlyTheLaunches) {
  ChainOptions co;
  co.n = 4;
  co.flops = 1;
  co.activation_bytes = 1 << 20;
  co.op_type = "Relu";
  const Graph g = make_chain(co);
  const Coarsening c = coarsen(g);
  ASSERT_EQ(c.num_groups(), 1u);
  ASSERT_EQ(c.coarse.num_ops(), 1u);
  const double launch = 5e-6;
  const Cluster cl = one_gpu(launch);
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator fine(g, cl, cost), coarse(c.coarse, cl, cost);
  const double f = fine.run(Plan::single_device(g)).step_time;
  const double k = coarse.run(Plan::single_device(c.coarse)).step_time;
  const double op = launch + double(2 << 20) / 1e12;  // reads 1 MiB, writes 1 MiB
  EXPECT_NEAR(f, 4 * op, 1e-15);
  EXPECT_NEAR(k, launch + 4 * double(2 << 20) / 1e12, 1e-15);
  EXPECT_NEAR(f - k, 3 * launch, 1e-15);
}

/// Mixed regimes do not add up: a compute-bound MatMul (4 us of FLOPs, 1 us of bytes)
/// fused with a memory-bound Relu (3 us of bytes) takes max(4, 1 + 3) us in one op, not
/// 4 + 3 us: the roofline of the group overlaps one op's compute with the other's traffic.
TEST(CoarsenSim, MixedRegimesOverlapInTheFusedOp) {
  ChainOptions co;
  co.per_op_flops = {4e6, 0};
  co.activation_bytes = 0;
  const Graph base = make_chain(co);
  GraphBuilder b("mixed");
  for (const Tensor& t : base.tensors()) b.add_tensor(t);
  for (OpId i = 0; i < base.num_ops(); ++i) {
    Op o = base.op(i);
    o.bytes_accessed = i == 0 ? 1000000 : 3000000;
    if (i == 1) o.type = "Relu", o.category = OpCategory::kElementwise;
    b.add_op(o);
  }
  const Graph g = b.build();
  const Coarsening c = coarsen(g);
  ASSERT_EQ(c.coarse.num_ops(), 1u);
  const double launch = 1e-6;
  const Cluster cl = one_gpu(launch);
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator fine(g, cl, cost), coarse(c.coarse, cl, cost);
  EXPECT_NEAR(fine.run(Plan::single_device(g)).step_time, 2 * launch + 4e-6 + 3e-6, 1e-15);
  EXPECT_NEAR(coarse.run(Plan::single_device(c.coarse)).step_time, launch + 4e-6, 1e-15);
}

TEST(CoarsenPlan, WithGroupNamesKeepsEverythingElse) {
  const Graph g = mlp_step(2);
  const Coarsening c = coarsen(g);
  const Graph a = with_group_names(g, c);
  ASSERT_EQ(a.num_ops(), g.num_ops());
  for (OpId i = 0; i < g.num_ops(); ++i) {
    EXPECT_EQ(a.op(i).name, g.op(i).name);
    EXPECT_EQ(a.op(i).forward_op, g.op(i).forward_op);
    EXPECT_EQ(a.op(i).group, c.group_names[c.group_of_op[i]]);
  }
  EXPECT_EQ(a.topo_order(), g.topo_order());
  EXPECT_THROW(with_group_names(mlp_step(1), c), ValidationError);
}

}  // namespace
}  // namespace placer
