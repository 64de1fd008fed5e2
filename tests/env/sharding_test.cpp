// Sharding propagation (env/sharding.h): variables, per-op rules on hand-built graphs (an
// MLP, a CNN with labels, a fused layer norm), Megatron on the real transformer graph, auto
// data parallelism, linkage groups, plans and their simulated step time.
#include "env/sharding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "datasets/gpt.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"
#include "tests/env/sharding_fixtures.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

using K = Sharding::Kind;
using testing::mlp_graph;
using testing::ShapedGraph;

int var_index(const ShardingPropagator& p, const std::string& name) {
  for (size_t v = 0; v < p.variables().size(); ++v) {
    if (p.variables()[v].name == name) return int(v);
  }
  ADD_FAILURE() << "no variable " << name;
  return 0;
}

TensorId tensor_id(const Graph& g, const std::string& name) {
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    if (g.tensor(t).name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return 0;
}

const Sharding& of(const Graph& g, const PropagationResult& r, const std::string& tensor) {
  return r.tensors[tensor_id(g, tensor)];
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Graph load_model(const std::string& name) {
  return load_graph_json(std::string(PLACER_SOURCE_DIR) + "/datasets/models/" + name +
                         ".graph.json");
}

// --- the 2-layer MLP --------------------------------------------------------------------

TEST(Sharding, ToString) {
  EXPECT_EQ(Sharding::unknown().to_string(), "?");
  EXPECT_EQ(Sharding::replicated().to_string(), "R");
  EXPECT_EQ(Sharding::partial().to_string(), "P");
  EXPECT_EQ(Sharding::split(1, 64).to_string(512, 8), "S1");
  EXPECT_EQ(Sharding::split(1, 1).to_string(128, 8), "S1/1");
  EXPECT_EQ(Sharding::split(2, 0).to_string(), "S2");
}

TEST(Sharding, MlpVariablesInputsAndSlots) {
  const Graph g = mlp_graph();
  const ShardingPropagator p(g, 4);
  ASSERT_EQ(p.variables().size(), 2u);
  EXPECT_EQ(p.variables()[0].name, "mm1:weight");
  EXPECT_EQ(p.variables()[0].shape, (std::vector<int64_t>{64, 256}));
  EXPECT_EQ(p.variables()[0].bytes, 64u * 256 * 4);
  EXPECT_EQ(p.variables()[1].name, "mm2:weight");
  EXPECT_EQ(p.variables()[1].shape, (std::vector<int64_t>{256, 64}));
  ASSERT_EQ(p.data_inputs().size(), 1u);
  EXPECT_EQ(g.tensor(p.data_inputs()[0]).name, "x");
  ASSERT_EQ(p.variable_slots().size(), 4u);
  EXPECT_EQ(p.variable_slots()[3].var, 1);
  EXPECT_EQ(p.variable_slots()[3].dim, 1);
  EXPECT_EQ(p.input_slots().size(), 2u);
  // Nothing decided: only the replicated input is known.
  const PropagationResult r = p.propagate({{}, {}}, p.replicated_inputs());
  EXPECT_FALSE(r.conflict);
  EXPECT_EQ(of(g, r, "x").kind, K::kReplicated);
  EXPECT_EQ(of(g, r, "h").kind, K::kUnknown);
  // Backward tensors never take part.
  EXPECT_EQ(of(g, r, "dh").kind, K::kUnknown);
}

TEST(Sharding, MlpColumnSplitImpliesRowSplit) {
  const Graph g = mlp_graph();
  const ShardingPropagator p(g, 4);
  const PropagationResult r =
      p.propagate({Sharding::split(1, 0), Sharding::unknown()}, p.replicated_inputs());
  ASSERT_FALSE(r.conflict) << r.conflict_reason;
  EXPECT_EQ(of(g, r, "h"), Sharding::split(1, 64));
  EXPECT_EQ(of(g, r, "a"), Sharding::split(1, 64));
  EXPECT_EQ(r.variables[1].kind, K::kSplit);
  EXPECT_EQ(r.variables[1].dim, 0);  // W2 row split
  EXPECT_EQ(of(g, r, "y").kind, K::kPartial);
  EXPECT_EQ(r.inputs[0].kind, K::kReplicated);
  EXPECT_EQ(of(g, r, "da").kind, K::kUnknown);

  // The same from the other end: W2 row split implies W1 column split.
  const PropagationResult r2 =
      p.propagate({Sharding::unknown(), Sharding::split(0, 0)}, p.replicated_inputs());
  ASSERT_FALSE(r2.conflict) << r2.conflict_reason;
  EXPECT_EQ(r2.variables[0].kind, K::kSplit);
  EXPECT_EQ(r2.variables[0].dim, 1);

  // Linkage group of (W1 dim 1, 1): W1 dim 0 -> 0, W2 dim 0 -> 1, W2 dim 1 -> 0.
  const std::vector<LinkageGroup> groups = linkage_groups(p, false);
  ASSERT_EQ(groups.size(), 8u);
  const LinkageGroup& grp = groups[2 * 1];
  EXPECT_EQ(grp.slot, 1);
  EXPECT_EQ(grp.decision, 1);
  EXPECT_FALSE(grp.conflict);
  const std::vector<std::pair<int, int8_t>> expect = {{0, 0}, {2, 1}, {3, 0}};
  EXPECT_EQ(grp.implied, expect);
  // Deciding "replicate" on one dim of a 2-D weight leaves it undecided: no consequences.
  EXPECT_TRUE(groups[2 * 1 + 1].implied.empty());
  // (W2 dim 1, 1): y split on its columns needs a replicated: W1 replicated.
  const std::vector<std::pair<int, int8_t>> expect3 = {{0, 0}, {1, 0}, {2, 0}};
  EXPECT_EQ(groups[2 * 3].implied, expect3);
}

TEST(Sharding, MlpRowSplitConflictsWithReplicatedInput) {
  const Graph g = mlp_graph();
  const ShardingPropagator p(g, 4);
  const PropagationResult r =
      p.propagate({Sharding::split(0, 0), Sharding::unknown()}, p.replicated_inputs());
  ASSERT_TRUE(r.conflict);
  EXPECT_NE(r.conflict_reason.find("op 'mm1' (MatMul, matmul rule)"), std::string::npos)
      << r.conflict_reason;
  EXPECT_NE(r.conflict_reason.find("tensor 'x'"), std::string::npos) << r.conflict_reason;
  const std::vector<LinkageGroup> groups = linkage_groups(p, false);
  EXPECT_TRUE(groups[0].conflict);
  EXPECT_TRUE(groups[0].implied.empty());
  // Under auto data parallelism (input undecided) the same split is a K split: x on dim 1.
  const PropagationResult r2 =
      p.propagate({Sharding::split(0, 0), Sharding::unknown()}, std::vector<Sharding>(1));
  ASSERT_FALSE(r2.conflict) << r2.conflict_reason;
  EXPECT_EQ(r2.inputs[0], Sharding::split(1, 16));
  EXPECT_EQ(of(g, r2, "h").kind, K::kPartial);
}

TEST(Sharding, SplitMustDivideIntoEqualParts) {
  const Graph g = mlp_graph();
  const ShardingPropagator p(g, 3);  // 256 % 3 != 0
  const PropagationResult r =
      p.propagate({Sharding::split(1, 0), Sharding::unknown()}, p.replicated_inputs());
  ASSERT_TRUE(r.conflict);
  EXPECT_NE(r.conflict_reason.find("cannot be split into 3 equal parts"), std::string::npos)
      << r.conflict_reason;
  EXPECT_THROW(ShardingPropagator(g, 1), ValidationError);
  EXPECT_THROW(p.propagate({}, p.replicated_inputs()), ValidationError);
  EXPECT_THROW(p.propagate({{}, {}}, {}), ValidationError);
}

TEST(Sharding, DecisionsAndImpliedDecisions) {
  const Graph g = mlp_graph();
  const ShardingPropagator p(g, 4);
  std::vector<Sharding> s;
  ASSERT_TRUE(decisions_to_shardings(p, p.variable_slots(), {0, 1, 0, 0}, 2, &s));
  EXPECT_EQ(s[0], Sharding::split(1, 64));  // contiguous: 256 / 4
  ASSERT_TRUE(decisions_to_shardings(p, p.input_slots(), {1, 0}, 1, &s));
  EXPECT_EQ(s[0], Sharding::split(0, 2));  // x [8, 64]: 8 / 4
  EXPECT_EQ(s[1].kind, K::kReplicated);
  ASSERT_TRUE(decisions_to_shardings(p, p.variable_slots(), {0, -1, -1, 0}, 2, &s));
  EXPECT_EQ(s[0].kind, K::kUnknown);
  EXPECT_EQ(s[1].kind, K::kUnknown);
  EXPECT_FALSE(decisions_to_shardings(p, p.variable_slots(), {1, 1, -1, -1}, 2, &s));
  EXPECT_EQ(implied_decisions(p.variable_slots(), {Sharding::split(1, 64), Sharding::replicated()}),
            (std::vector<int8_t>{0, 1, 0, 0}));
  EXPECT_EQ(implied_decisions(p.variable_slots(), {Sharding::unknown(), Sharding::split(0, 64)}),
            (std::vector<int8_t>{-1, -1, 1, 0}));
}

// Megatron MLP on 4 devices: mm1 column-parallel (sharded output), relu sharded, mm2
// row-parallel (partial sums all-reduced). Step = compute / 4 + one all-reduce of y (2048 B)
// in forward + one of dx (2048 B) in backward; ring all-reduce on 4 devices at 1 MB/s without
// latency: 2 * 3/4 * 2048 / 1e6 = 3.072 ms each.
TEST(Sharding, MegatronMlpPlanAndStepTime) {
  const Graph g = mlp_graph();
  const ShardingPropagator p(g, 4);
  const PropagationResult r =
      p.propagate({Sharding::split(1, 0), Sharding::split(0, 0)}, p.replicated_inputs());
  ASSERT_FALSE(r.conflict) << r.conflict_reason;
  const Plan plan = sharding_plan(p, r, {0, 1, 2, 3});
  ASSERT_EQ(plan.partitions.size(), 3u);
  const std::vector<int> devs = {0, 1, 2, 3};
  const OpPartition& p1 = plan.partitions[0];
  EXPECT_EQ(g.op(p1.op).name, "mm1");
  EXPECT_EQ(p1.dim, 1);
  EXPECT_EQ(p1.devices, devs);
  EXPECT_TRUE(p1.sharded_output);
  EXPECT_FALSE(p1.sharded_input);  // x is a graph input
  const OpPartition& p2 = plan.partitions[1];
  EXPECT_EQ(g.op(p2.op).name, "relu");
  EXPECT_EQ(p2.dim, 1);
  EXPECT_TRUE(p2.sharded_output);
  EXPECT_TRUE(p2.sharded_input);
  const OpPartition& p3 = plan.partitions[2];
  EXPECT_EQ(g.op(p3.op).name, "mm2");
  EXPECT_EQ(p3.dim, OpPartition::kReduceDim);
  EXPECT_FALSE(p3.sharded_output);
  EXPECT_TRUE(p3.sharded_input);
  EXPECT_EQ(plan.placement, std::vector<int>(g.num_ops(), 0));

  const Cluster c = testing::make_cluster(1, 4, testing::link(0, 1e6), testing::link(0, 1e6));
  const CostModel cost(c, uniform_profile(1.0));
  plan.validate(g, c);
  Simulator sim(g, c, cost);
  const double single = sim.run(Plan::single_device(g, 0)).step_time;
  EXPECT_NEAR(single, 26e-3, 1e-9);
  const double t = sim.run(plan).step_time;
  EXPECT_NEAR(t, 26e-3 / 4 + 2 * 3.072e-3, 1e-9);

  // A conflicting result has no plan; the device list must match the degree.
  const PropagationResult bad =
      p.propagate({Sharding::split(0, 0), Sharding::unknown()}, p.replicated_inputs());
  EXPECT_THROW(sharding_plan(p, bad, devs), ValidationError);
  EXPECT_THROW(sharding_plan(p, r, {0, 1}), ValidationError);
}

// --- data parallelism on a CNN with one-hot labels ----------------------------------------

// images [8,3,8,8] -> conv (16 x 3 x 3 x 3 + bias) -> relu -> global average pool -> flatten ->
// gemm (transB, 10 x 16 + bias) -> log softmax; loss = mean(logp * labels) over all.
Graph cnn_graph() {
  ShapedGraph b("cnn");
  const TensorId img = b.tensor("images", {8, 3, 8, 8});
  const TensorId lab = b.tensor("labels", {8, 10});
  const TensorId c = b.tensor("c", {8, 16, 8, 8});
  const TensorId r = b.tensor("r", {8, 16, 8, 8});
  const TensorId gp = b.tensor("gp", {8, 16, 1, 1});
  const TensorId fl = b.tensor("fl", {8, 16});
  const TensorId lo = b.tensor("logits", {8, 10});
  const TensorId lp = b.tensor("logp", {8, 10});
  const TensorId pr = b.tensor("prod", {8, 10});
  const TensorId loss = b.tensor("loss", {});
  b.op("conv", "Conv", 1e6, {img}, {c}, (16 * 3 * 3 * 3 + 16) * 4,
       {{"group", "1"}, {"kernel_shape", "3,3"}, {"pads", "1,1,1,1"}});
  b.op("relu", "Relu", 1e3, {c}, {r});
  b.op("pool", "GlobalAveragePool", 1e3, {r}, {gp});
  b.op("flatten", "Flatten", 0, {gp}, {fl}, 0, {{"axis", "1"}});
  b.op("fc", "Gemm", 1e4, {fl}, {lo}, (10 * 16 + 10) * 4, {{"transB", "1"}});
  b.op("lsm", "LogSoftmax", 1e3, {lo}, {lp}, 0, {{"axis", "1"}});
  b.op("mul", "Mul", 1e2, {lp, lab}, {pr});
  b.op("mean", "ReduceMean", 1e2, {pr}, {loss}, 0, {{"keepdims", "0"}});
  return b.build();
}

TEST(Sharding, CnnVariables) {
  const Graph g = cnn_graph();
  const ShardingPropagator p(g, 2);
  ASSERT_EQ(p.variables().size(), 4u);
  EXPECT_EQ(p.variables()[0].name, "conv:weight");
  EXPECT_EQ(p.variables()[0].shape, (std::vector<int64_t>{16, 3, 3, 3}));
  EXPECT_EQ(p.variables()[1].name, "conv:bias");
  EXPECT_EQ(p.variables()[1].shape, (std::vector<int64_t>{16}));
  EXPECT_EQ(p.variables()[2].name, "fc:weight");
  EXPECT_EQ(p.variables()[2].shape, (std::vector<int64_t>{10, 16}));  // transB: [out, in]
  EXPECT_EQ(p.variables()[3].shape, (std::vector<int64_t>{10}));
  EXPECT_EQ(p.variable_slots().size(), 4u + 1 + 2 + 1);
  ASSERT_EQ(p.data_inputs().size(), 2u);
  EXPECT_EQ(p.input_slots().size(), 4u + 2);
}

TEST(Sharding, DataParallelBatchSplitReachesLabels) {
  const Graph g = cnn_graph();
  const ShardingPropagator p(g, 2);
  const std::vector<Sharding> vars(p.variables().size());
  std::vector<Sharding> in(2);
  in[0] = Sharding::split(0, 0);  // images batch
  const PropagationResult r = p.propagate(vars, in);
  ASSERT_FALSE(r.conflict) << r.conflict_reason;
  EXPECT_EQ(r.inputs[1], Sharding::split(0, 4));  // labels follow the batch
  for (const char* t : {"c", "r", "gp", "fl", "logits", "logp", "prod"}) {
    EXPECT_EQ(of(g, r, t), Sharding::split(0, 4)) << t;
  }
  EXPECT_EQ(of(g, r, "loss").kind, K::kPartial);  // the mean over the batch
  for (const Sharding& v : r.variables) EXPECT_EQ(v.kind, K::kReplicated);
  // Linkage group of (images dim 0, 1): images dims 1..3 -> 0, labels (1, 0).
  const std::vector<LinkageGroup> groups = linkage_groups(p, true);
  ASSERT_EQ(groups.size(), 12u);
  const std::vector<std::pair<int, int8_t>> expect = {{1, 0}, {2, 0}, {3, 0}, {4, 1}, {5, 0}};
  EXPECT_EQ(groups[0].implied, expect);
  // The plan partitions every forward op on dim 0 (the loss: its reduction).
  const Plan plan = sharding_plan(p, r, {0, 1});
  ASSERT_EQ(plan.partitions.size(), g.num_ops());
  EXPECT_EQ(plan.partitions[0].dim, 0);
  EXPECT_FALSE(plan.partitions[0].sharded_input);  // images: a graph input
  EXPECT_TRUE(plan.partitions[0].sharded_output);
  EXPECT_EQ(plan.partitions.back().dim, OpPartition::kReduceDim);
  const Cluster c = testing::make_cluster(1, 2, testing::link(0, 1e9), testing::link(0, 1e9));
  plan.validate(g, c);
}

TEST(Sharding, SpatialAndChannelSplits) {
  const Graph g = cnn_graph();
  const ShardingPropagator p(g, 2);
  const std::vector<Sharding> vars(p.variables().size());
  std::vector<Sharding> in(2);
  in[0] = Sharding::split(2, 0);  // image rows
  const PropagationResult r = p.propagate(vars, in);
  ASSERT_TRUE(r.conflict);
  EXPECT_NE(r.conflict_reason.find("op 'conv' (Conv, conv rule)"), std::string::npos)
      << r.conflict_reason;
  EXPECT_NE(r.conflict_reason.find("spatial"), std::string::npos) << r.conflict_reason;
  // Output channels: conv weight dim 0 -> bias split, c / r split on channels, the global pool
  // keeps it, fc contracts it (partial logits, so the loss sees them replicated).
  std::vector<Sharding> v2(p.variables().size());
  v2[0] = Sharding::split(0, 0);
  const PropagationResult r2 = p.propagate(v2, p.replicated_inputs());
  ASSERT_FALSE(r2.conflict) << r2.conflict_reason;
  EXPECT_EQ(r2.variables[1].kind, K::kSplit);
  EXPECT_EQ(of(g, r2, "r"), Sharding::split(1, 8));
  EXPECT_EQ(of(g, r2, "fl"), Sharding::split(1, 8));
  EXPECT_EQ(r2.variables[2].dim, 1);  // fc weight [10, 16]: its input features
  EXPECT_EQ(of(g, r2, "logits").kind, K::kPartial);
  EXPECT_EQ(of(g, r2, "logp").kind, K::kReplicated);
  // Splitting the classes reaches the log softmax axis: conflict.
  std::vector<Sharding> v3(p.variables().size());
  v3[2] = Sharding::split(0, 0);
  const PropagationResult r3 = p.propagate(v3, p.replicated_inputs());
  ASSERT_TRUE(r3.conflict);
  EXPECT_NE(r3.conflict_reason.find("op 'lsm' (LogSoftmax, softmax rule)"), std::string::npos)
      << r3.conflict_reason;
}

TEST(Sharding, FusedLayerNormAxisConflictsAndUnknownOpsReplicate) {
  ShapedGraph b("ln");
  const TensorId x = b.tensor("x", {4, 8, 32});
  const TensorId y = b.tensor("y", {4, 8, 32});
  const TensorId z = b.tensor("z", {4, 8, 32});
  const TensorId w = b.tensor("w", {4, 8, 32});
  b.op("fc", "MatMul", 1, {x}, {y}, 32 * 32 * 4);
  b.op("ln", "LayerNormalization", 1, {y}, {z}, 2 * 32 * 4, {{"axis", "-1"}});
  b.op("odd", "MyCustomOp", 1, {z}, {w});
  const Graph g = b.build();
  const ShardingPropagator p(g, 2);
  ASSERT_EQ(p.variables().size(), 3u);
  EXPECT_EQ(p.variables()[1].name, "ln:scale");
  EXPECT_EQ(p.variables()[1].shape, (std::vector<int64_t>{32}));
  std::vector<Sharding> vars(3);
  vars[0] = Sharding::split(1, 0);
  const PropagationResult r = p.propagate(vars, p.replicated_inputs());
  ASSERT_TRUE(r.conflict);
  EXPECT_NE(r.conflict_reason.find("op 'ln' (LayerNormalization, layer norm rule)"),
            std::string::npos)
      << r.conflict_reason;
  EXPECT_NE(r.conflict_reason.find("layer norm axis 2"), std::string::npos) << r.conflict_reason;
  // A split on the batch passes the layer norm and stops at the unknown op.
  std::vector<Sharding> in = {Sharding::split(0, 0)};
  const PropagationResult r2 = p.propagate(std::vector<Sharding>(3), in);
  ASSERT_TRUE(r2.conflict);
  EXPECT_NE(r2.conflict_reason.find("op 'odd' (MyCustomOp, unknown op type"), std::string::npos)
      << r2.conflict_reason;
  // Nothing split: the unknown op's tensors are replicated, the layer norm params too.
  const PropagationResult r3 = p.propagate({Sharding::replicated(), {}, {}}, p.replicated_inputs());
  ASSERT_FALSE(r3.conflict) << r3.conflict_reason;
  EXPECT_EQ(r3.tensors[w].kind, K::kReplicated);
  EXPECT_EQ(r3.variables[1].kind, K::kReplicated);
  EXPECT_EQ(r3.variables[2].kind, K::kReplicated);
}

TEST(Sharding, ConcatSlicePadGatherAndUnownedWeights) {
  ShapedGraph b("misc");
  const TensorId x = b.tensor("x", {4, 6, 8});
  const TensorId y = b.tensor("y", {4, 6, 8});
  const TensorId cat = b.tensor("cat", {4, 12, 8});
  const TensorId s1 = b.tensor("s1", {4, 12, 4});
  const TensorId s2 = b.tensor("s2", {4, 12, 2});
  const TensorId pad = b.tensor("pad", {4, 14, 8});
  const TensorId gat = b.tensor("gat", {4, 8});
  const TensorId mm = b.tensor("mm", {4, 12, 16});
  b.op("relu", "Relu", 1, {x}, {y});
  b.op("concat", "Concat", 1, {x, y}, {cat}, 0, {{"axis", "1"}});
  b.op("slice1", "Slice", 1, {cat}, {s1});
  b.op("slice2", "Slice", 1, {cat}, {s2});
  b.op("pad", "Pad", 1, {cat}, {pad}, 0, {{"mode", "constant"}});
  b.op("gather", "Gather", 1, {cat}, {gat}, 0, {{"axis", "1"}});  // x[:, 0]: index folded
  b.op("mm", "MatMul", 1, {cat}, {mm}, 8 * 16 * 4 * 3);           // a fused weight 3 x [8, 16]
  const Graph g = b.build();
  const ShardingPropagator p(g, 2);
  ASSERT_EQ(p.variables().size(), 1u);
  EXPECT_EQ(p.variables()[0].name, "mm:param");  // bytes != 8 x 16: 1-D, replicate only
  EXPECT_EQ(p.variables()[0].shape, (std::vector<int64_t>{384}));
  const std::vector<Sharding> none(1);
  // Batch split: passes concat, both slices, the pad, the gather and the matmul.
  const PropagationResult r = p.propagate(none, {Sharding::split(0, 0)});
  ASSERT_FALSE(r.conflict) << r.conflict_reason;
  for (TensorId t : {y, cat, s1, s2, pad, gat, mm}) {
    EXPECT_EQ(r.tensors[t], Sharding::split(0, 2)) << g.tensor(t).name;
  }
  EXPECT_EQ(r.variables[0].kind, K::kReplicated);
  // Split on the concat axis: conflict.
  const PropagationResult r2 = p.propagate(none, {Sharding::split(1, 0)});
  ASSERT_TRUE(r2.conflict);
  EXPECT_NE(r2.conflict_reason.find("op 'concat' (Concat, concat rule)"), std::string::npos)
      << r2.conflict_reason;
  EXPECT_NE(r2.conflict_reason.find("concat axis"), std::string::npos) << r2.conflict_reason;
  // Split on the last dim: the slices along it keep it (4 -> 2 + 2, 2 -> 1 + 1), the
  // matmul with a weight it does not own cannot contract a split K.
  const PropagationResult r3 = p.propagate(none, {Sharding::split(2, 0)});
  ASSERT_TRUE(r3.conflict);
  EXPECT_NE(r3.conflict_reason.find("op 'mm' (MatMul, matmul (unowned weight) rule)"),
            std::string::npos)
      << r3.conflict_reason;
  EXPECT_EQ(r3.tensors[s1], Sharding::split(2, 2));
}

TEST(Sharding, SlicePiecesMustDivide) {
  ShapedGraph b("slices");
  const TensorId x = b.tensor("x", {4, 12});
  const TensorId h = b.tensor("h", {4, 24});
  const TensorId q = b.tensor("q", {4, 16});
  const TensorId r = b.tensor("r", {4, 8});
  b.op("proj", "MatMul", 1, {x}, {h}, 12 * 24 * 4);
  b.op("take_q", "Slice", 1, {h}, {q});
  b.op("take_r", "Slice", 1, {h}, {r});
  const Graph g = b.build();
  std::vector<Sharding> vars = {Sharding::split(1, 0)};
  const ShardingPropagator p4(g, 4);  // 24 / 4, 16 / 4, 8 / 4: the pieces keep the split
  const PropagationResult ok = p4.propagate(vars, p4.replicated_inputs());
  ASSERT_FALSE(ok.conflict) << ok.conflict_reason;
  EXPECT_EQ(ok.tensors[q], Sharding::split(1, 4));
  EXPECT_EQ(ok.tensors[r], Sharding::split(1, 2));
  const ShardingPropagator p3(g, 3);  // 24 / 3 but 16 % 3 != 0
  const PropagationResult bad = p3.propagate(vars, p3.replicated_inputs());
  ASSERT_TRUE(bad.conflict);
  EXPECT_NE(bad.conflict_reason.find("op 'take_q' (Slice, slice rule): dim 1 of tensor 'q' "
                                     "[4,16] cannot be split into 3 equal parts"),
            std::string::npos)
      << bad.conflict_reason;
}

// --- the real transformer (PyTorch nn.TransformerEncoder, 6 layers, d 512, 8 heads) ------

std::vector<Sharding> megatron(const ShardingPropagator& p) {
  std::vector<Sharding> v(p.variables().size(), Sharding::replicated());
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string& n = p.variables()[i].name;
    if (ends_with(n, "self_attn/MatMul:weight") || ends_with(n, "linear1/MatMul:weight") ||
        ends_with(n, "self_attn/Gemm:weight")) {
      v[i] = Sharding::split(1, 0);  // qkv / linear1 columns; out-proj [out, in]: its input
    }
    if (ends_with(n, "self_attn/Add:bias") || ends_with(n, "linear1/Add:bias") ||
        ends_with(n, "linear2/MatMul:weight") || n == "/embedding/Gather:table") {
      v[i] = Sharding::split(0, 0);
    }
  }
  return v;
}

TEST(ShardingTransformer, QkvColumnSplitReachesOutProjectionRows) {
  const Graph g = load_model("transformer_enc6_d512");
  const ShardingPropagator p(g, 8);
  std::vector<Sharding> vars(p.variables().size());
  const int qkv = var_index(p, "/encoder/layers.0/self_attn/MatMul:weight");
  EXPECT_EQ(p.variables()[size_t(qkv)].shape, (std::vector<int64_t>{512, 1536}));
  vars[size_t(qkv)] = Sharding::split(1, 0);
  const PropagationResult r = p.propagate(vars, p.replicated_inputs());
  ASSERT_FALSE(r.conflict) << r.conflict_reason;
  const std::string l = "/encoder/layers.0/self_attn/";
  EXPECT_EQ(r.variables[size_t(var_index(p, l + "Add:bias"))].dim, 0);
  EXPECT_EQ(of(g, r, l + "Add_output_0"), Sharding::split(2, 192));
  // Each of q, k, v keeps 1/8 of its 512 features (per-head layout) ...
  EXPECT_EQ(of(g, r, l + "Slice_output_0"), Sharding::split(2, 64));
  EXPECT_EQ(of(g, r, l + "Slice_2_output_0"), Sharding::split(2, 64));
  // ... which the reshape to [L, batch x heads, 64] turns into heads interleaved in dim 1.
  EXPECT_EQ(of(g, r, l + "Reshape_output_0"), Sharding::split(1, 1));
  EXPECT_EQ(of(g, r, l + "Transpose_2_output_0"), Sharding::split(0, 1));
  EXPECT_EQ(of(g, r, l + "MatMul_1_output_0"), Sharding::split(0, 1));
  EXPECT_EQ(of(g, r, l + "Softmax_output_0"), Sharding::split(0, 1));
  EXPECT_EQ(of(g, r, l + "MatMul_2_output_0"), Sharding::split(0, 1));
  EXPECT_EQ(of(g, r, l + "Reshape_3_output_0"), Sharding::split(1, 64));
  const Sharding& wo = r.variables[size_t(var_index(p, l + "Gemm:weight"))];
  EXPECT_EQ(wo.kind, K::kSplit);
  EXPECT_EQ(wo.dim, 1);  // transB: [out, in], split on its input features (row parallel)
  EXPECT_EQ(r.variables[size_t(var_index(p, l + "Gemm:bias"))].kind, K::kReplicated);
  EXPECT_EQ(of(g, r, l + "Gemm_output_0").kind, K::kPartial);
  EXPECT_EQ(of(g, r, l + "Reshape_4_output_0").kind, K::kReplicated);
  // The residual Add meets the (replicated) all-reduced attention output: the residual
  // stream, the layer norm and its scale and bias are replicated.
  EXPECT_EQ(of(g, r, "/Add_output_0").kind, K::kReplicated);
  EXPECT_EQ(of(g, r, "/encoder/layers.0/norm1/ReduceMean_output_0").kind, K::kReplicated);
  EXPECT_EQ(r.variables[size_t(var_index(p, "/encoder/layers.0/norm1/Mul:scale"))].kind,
            K::kReplicated);
  EXPECT_EQ(r.variables[size_t(var_index(p, "/encoder/layers.0/norm1/Add_1:bias"))].kind,
            K::kReplicated);
  // The next layer is not decided by this one.
  EXPECT_EQ(r.variables[size_t(var_index(p, "/encoder/layers.1/self_attn/MatMul:weight"))].kind,
            K::kUnknown);
}

TEST(ShardingTransformer, MegatronDecisionHasNoConflict) {
  const Graph g = load_model("transformer_enc6_d512");
  const ShardingPropagator p(g, 8);
  const PropagationResult r = p.propagate(megatron(p), p.replicated_inputs());
  ASSERT_FALSE(r.conflict) << r.conflict_reason;
  EXPECT_EQ(of(g, r, "/embedding/Gather_output_0").kind, K::kPartial);  // vocabulary split
  EXPECT_EQ(of(g, r, "/encoder/layers.5/linear1/Add_output_0"), Sharding::split(2, 256));
  EXPECT_EQ(of(g, r, "/encoder/layers.5/linear2/MatMul_output_0").kind, K::kPartial);
  EXPECT_EQ(of(g, r, "/encoder/layers.5/norm2/ReduceMean_output_0").kind, K::kReplicated);
  const Plan plan = sharding_plan(p, r, {0, 1, 2, 3, 4, 5, 6, 7});
  // Per layer: qkv MatMul, bias Add, 3 Slice, 3 Reshape, 4 Transpose (q, k twice, v), Div,
  // MatMul_1, Softmax, Dropout, MatMul_2, Transpose_5, Reshape_3, Gemm (17 + 3 = 20 ... counted
  // below), linear1 MatMul, Add, Relu, Dropout, linear2 MatMul; plus the embedding.
  int per_layer0 = 0;
  for (const OpPartition& part : plan.partitions) {
    if (g.op(part.op).name.rfind("/encoder/layers.0/", 0) == 0) ++per_layer0;
  }
  EXPECT_EQ(per_layer0, 24);
  EXPECT_EQ(plan.partitions.size(), 6u * 24 + 1);
}

TEST(ShardingTransformer, EmbeddingDimSplitReachesLayerNormAsPartial) {
  const Graph g = load_model("transformer_enc6_d512");
  const ShardingPropagator p(g, 8);
  std::vector<Sharding> vars(p.variables().size());
  vars[size_t(var_index(p, "/embedding/Gather:table"))] = Sharding::split(1, 0);
  const PropagationResult r = p.propagate(vars, p.replicated_inputs());
  ASSERT_FALSE(r.conflict) << r.conflict_reason;
  // The hidden dim stays split along the residual stream; the layer norm's mean over the
  // split axis is a partial sum (all-reduced), its scale and bias are split.
  EXPECT_EQ(of(g, r, "/encoder/layers.0/Add_output_0"), Sharding::split(2, 64));
  EXPECT_EQ(of(g, r, "/encoder/layers.0/norm1/ReduceMean_output_0").kind, K::kPartial);
  EXPECT_EQ(r.variables[size_t(var_index(p, "/encoder/layers.0/norm1/Mul:scale"))].kind, K::kSplit);
  // ... and the qkv weight is split on its rows (K), its output partial.
  EXPECT_EQ(r.variables[size_t(var_index(p, "/encoder/layers.0/self_attn/MatMul:weight"))].dim, 0);
  EXPECT_EQ(of(g, r, "/encoder/layers.0/self_attn/MatMul_output_0").kind, K::kPartial);
  // Megatron's qkv column split on top of that conflicts: it needs a replicated qkv input
  // (the transposed residual stream, split on the hidden dim here).
  vars[size_t(var_index(p, "/encoder/layers.0/self_attn/MatMul:weight"))] = Sharding::split(1, 0);
  const PropagationResult r2 = p.propagate(vars, p.replicated_inputs());
  ASSERT_TRUE(r2.conflict);
  EXPECT_NE(r2.conflict_reason.find("'/encoder/layers.0/self_attn/Transpose_output_0' [128,16,512] "
                                    "is R but the rule needs S2"),
            std::string::npos)
      << r2.conflict_reason;
}

TEST(ShardingTransformer, DataParallelBatchPassesSequenceConflicts) {
  const Graph g = load_model("transformer_enc6_d512");
  const ShardingPropagator p(g, 8);
  ASSERT_EQ(p.data_inputs().size(), 1u);  // tokens [16, 128]
  EXPECT_EQ(g.tensor(p.data_inputs()[0]).name, "tokens");
  const std::vector<Sharding> vars(p.variables().size());
  const PropagationResult r = p.propagate(vars, {Sharding::split(0, 0)});
  ASSERT_FALSE(r.conflict) << r.conflict_reason;
  EXPECT_EQ(r.inputs[0], Sharding::split(0, 2));
  int split = 0, known = 0, forward = 0;
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    split += r.tensors[t].kind == K::kSplit;
    known += r.tensors[t].known();
    ++forward;
  }
  EXPECT_EQ(known, forward);
  EXPECT_EQ(split, forward - 1);  // all but the position embedding [1, 128, 512]
  EXPECT_EQ(of(g, r, "/position/Gather_output_0").kind, K::kReplicated);
  // Every variable is replicated, except the position table: its replicated output could
  // also be a (vocabulary-split) partial sum, so nothing decides it.
  const int pos = var_index(p, "/position/Gather:table");
  for (size_t v = 0; v < r.variables.size(); ++v) {
    EXPECT_EQ(r.variables[v].kind, int(v) == pos ? K::kUnknown : K::kReplicated)
        << p.variables()[v].name;
  }
  // The sequence dim meets itself in the attention scores Q K^T: conflict.
  const PropagationResult r2 = p.propagate(vars, {Sharding::split(1, 0)});
  ASSERT_TRUE(r2.conflict);
  EXPECT_NE(r2.conflict_reason.find("op '/encoder/layers.0/self_attn/MatMul_1' (MatMul, matmul "
                                    "rule)"),
            std::string::npos)
      << r2.conflict_reason;
  const std::vector<LinkageGroup> groups = linkage_groups(p, true);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_FALSE(groups[0].conflict);
  EXPECT_TRUE(groups[2].conflict);
}

// --- FlashAttention (the Llama generator's fused attention op) ----------------------------

// A 1-layer Llama, hidden 256, 8 query heads in 2 kv groups (head dim 32): qkv width
// (8 + 2 x 2) x 32 = 384, rotated q and k (8 + 2) x 32 = 320.
Graph small_llama() {
  LlamaOptions o;
  o.layers = 1, o.hidden = 256, o.heads = 8, o.kv_heads = 2, o.ffn = 512;
  o.seq_len = 64, o.batch = 2, o.vocab = 256;
  return make_llama(o);
}

const Sharding& output_of(const Graph& g, const PropagationResult& r, const std::string& op,
                          size_t i = 0) {
  return r.tensors[g.op(g.find_op(op)).outputs.at(i)];
}

TEST(ShardingFlashAttention, QkvColumnSplitSplitsHeadsLikeMegatron) {
  const Graph g = small_llama();
  const ShardingPropagator p(g, 2);
  const std::string a = "language_model.encoder.layers.0.self_attention.";
  std::vector<Sharding> vars(p.variables().size());
  vars[size_t(var_index(p, a + "query_key_value:weight"))] = Sharding::split(1, 0);
  const PropagationResult r = p.propagate(vars, p.replicated_inputs());
  ASSERT_FALSE(r.conflict) << r.conflict_reason;
  EXPECT_EQ(output_of(g, r, a + "query_key_value"), Sharding::split(2, 192));
  const Sharding& rotated = output_of(g, r, a + "rotary");
  EXPECT_EQ(rotated.kind, K::kSplit);
  EXPECT_EQ(rotated.dim, 2);
  // Context [2, 64, 256] split on its features (4 heads per rank), logsumexp [2, 8, 64] on
  // its heads: Megatron's core attention.
  const Sharding& ctx = output_of(g, r, a + "core_attention.flash_attention", 0);
  EXPECT_EQ(ctx.kind, K::kSplit);
  EXPECT_EQ(ctx.dim, 2);
  const Sharding& lse = output_of(g, r, a + "core_attention.flash_attention", 1);
  EXPECT_EQ(lse.kind, K::kSplit);
  EXPECT_EQ(lse.dim, 1);
  // ... which makes the output projection row-parallel: its input features split, its
  // output a partial sum (all-reduced).
  const Sharding& wo = r.variables[size_t(var_index(p, a + "dense:weight"))];
  EXPECT_EQ(wo.kind, K::kSplit);
  EXPECT_EQ(wo.dim, 0);
  EXPECT_EQ(output_of(g, r, a + "dense").kind, K::kPartial);
}

TEST(ShardingFlashAttention, SplitMustDivideTheKvHeadsAndNotTheSequence) {
  const Graph g = small_llama();
  const std::string a = "language_model.encoder.layers.0.self_attention.";
  // 4 ranks cannot share 2 kv groups: the heads split conflicts at the attention op.
  const ShardingPropagator p4(g, 4);
  std::vector<Sharding> vars(p4.variables().size());
  vars[size_t(var_index(p4, a + "query_key_value:weight"))] = Sharding::split(1, 0);
  const PropagationResult r = p4.propagate(vars, p4.replicated_inputs());
  ASSERT_TRUE(r.conflict);
  EXPECT_NE(r.conflict_reason.find("flash attention"), std::string::npos) << r.conflict_reason;
  EXPECT_NE(r.conflict_reason.find("kv heads"), std::string::npos) << r.conflict_reason;
  // A sequence split of the tokens stops at it (the softmax mixes positions).
  const ShardingPropagator p2(g, 2);
  const std::vector<Sharding> none(p2.variables().size());
  std::vector<Sharding> tokens_by_position(p2.data_inputs().size(), Sharding::replicated());
  for (size_t i = 0; i < tokens_by_position.size(); ++i) {
    if (g.tensor(p2.data_inputs()[i]).name != "labels")
      tokens_by_position[i] = Sharding::split(1, 0);
  }
  const PropagationResult seq = p2.propagate(none, tokens_by_position);
  ASSERT_TRUE(seq.conflict);
  EXPECT_NE(seq.conflict_reason.find("flash attention"), std::string::npos) << seq.conflict_reason;
}

// --- every real graph: counts and timing (printed, not asserted) --------------------------

TEST(ShardingRealGraphs, PropagateWithoutCrash) {
  struct Case {
    const char* name;
    size_t vars, slots, inputs;
  };
  // transformer: 6 layers x 12, 2 embedding tables, the final norm's scale and bias, the
  // lm_head weight and bias = 78 variables (27 of them 2-D); vgg13: 10 conv (4-D) + 3 fc (2-D)
  // weights and their biases; resnet18: 20 conv (4-D) + BN scale / bias + fc; lstm: 2 tables, 4
  // LSTM blocks (1-D, replicate-only), the projection weight and bias.
  const Case cases[] = {{"transformer_enc6_d512", 78, 105, 1},
                        {"vgg13", 26, 59, 1},
                        {"resnet18", 62, 123, 1},
                        {"lstm_seq2seq_l2_h512", 8, 11, 2}};
  for (const Case& c : cases) {
    const Graph g = load_model(c.name);
    const ShardingPropagator p(g, 8);
    EXPECT_EQ(p.variables().size(), c.vars) << c.name;
    EXPECT_EQ(p.variable_slots().size(), c.slots) << c.name;
    EXPECT_EQ(p.data_inputs().size(), c.inputs) << c.name;
    const std::vector<Sharding> none(p.variables().size());
    const PropagationResult r0 = p.propagate(none, p.replicated_inputs());
    EXPECT_FALSE(r0.conflict) << c.name << ": " << r0.conflict_reason;
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<LinkageGroup> groups = linkage_groups(p, false);
    const auto t1 = std::chrono::steady_clock::now();
    size_t largest = 0, conflicts = 0;
    for (const LinkageGroup& grp : groups) {
      largest = std::max(largest, grp.implied.size());
      conflicts += grp.conflict ? 1 : 0;
    }
    // A full propagation: the batch split of the first input reaches every tensor.
    std::vector<Sharding> batch(p.data_inputs().size());
    batch[0] = Sharding::split(0, 0);
    PropagationResult rb;
    const int reps = 20;
    const auto t2 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) rb = p.propagate(none, batch);
    const auto t3 = std::chrono::steady_clock::now();
    std::printf(
        "%s: %zu variables, %zu slots, %zu input slots, %zu linkage groups (largest "
        "%zu, %zu conflicting) in %.1f ms; batch-split propagation %.1f us: %s\n",
        c.name, p.variables().size(), p.variable_slots().size(), p.input_slots().size(),
        groups.size(), largest, conflicts,
        std::chrono::duration<double, std::milli>(t1 - t0).count(),
        std::chrono::duration<double, std::micro>(t3 - t2).count() / reps,
        rb.conflict ? rb.conflict_reason.c_str() : "no conflict");
    EXPECT_FALSE(rb.conflict) << c.name << ": " << rb.conflict_reason;
    // Splitting the first input's batch reaches the other inputs (lstm: src -> tgt through
    // the encoder state).
    for (const Sharding& in : rb.inputs) EXPECT_EQ(in.kind, K::kSplit) << c.name;
  }
}

// Encoder-decoder: the source batch reaches the target tokens through cross attention.
TEST(ShardingRealGraphs, EncoderDecoderBatchReachesTargets) {
  const Graph g = load_model("transformer_encdec6_d512");
  const ShardingPropagator p(g, 8);
  ASSERT_EQ(p.data_inputs().size(), 2u);
  EXPECT_EQ(g.tensor(p.data_inputs()[1]).name, "tgt");
  const PropagationResult r = p.propagate(std::vector<Sharding>(p.variables().size()),
                                          {Sharding::split(0, 0), Sharding::unknown()});
  ASSERT_FALSE(r.conflict) << r.conflict_reason;
  EXPECT_EQ(r.inputs[1], Sharding::split(0, 2));
}

}  // namespace
}  // namespace placer
