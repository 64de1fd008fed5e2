#include "src/graph/graph.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/util/error.h"

namespace placer {
namespace {

std::vector<OpId> to_vec(Span<OpId> s) { return std::vector<OpId>(s.begin(), s.end()); }

Op make_op(const std::string& name, std::vector<TensorId> in, std::vector<TensorId> out,
           double flops = 0, uint64_t param_bytes = 0) {
  Op o;
  o.name = name;
  o.type = "Add";
  o.inputs = std::move(in);
  o.outputs = std::move(out);
  o.flops = flops;
  o.param_bytes = param_bytes;
  return o;
}

// x (input) -> A -> a, a2
// w (input) -> B(a, w) -> b
//              C(a, a, b) -> c      (reads `a` twice)
//              D(c, a, a2)          (two tensors from A: one edge A->D)
class SmallGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    GraphBuilder b("small");
    b.set_batch_size(16);
    b.set_training_step(true);
    x = b.add_tensor("x", 100);
    a = b.add_tensor("a", 200);
    bt = b.add_tensor("b", 300);
    c = b.add_tensor("c", 400);
    w = b.add_tensor("w", 50);
    a2 = b.add_tensor("a2", 10);
    A = b.add_op(make_op("A", {x}, {a, a2}, 1.5, 0));
    B = b.add_op(make_op("B", {a, w}, {bt}, 2.0, 50));
    C = b.add_op(make_op("C", {a, a, bt}, {c}, 4.0, 0));
    Op d = make_op("D", {c, a, a2}, {}, 0.25, 7);
    d.bytes_accessed = 12345;
    D = b.add_op(std::move(d));
    g = b.build();
  }
  Graph g;
  TensorId x, a, bt, c, w, a2;
  OpId A, B, C, D;
};

TEST_F(SmallGraph, Basics) {
  EXPECT_EQ(g.name(), "small");
  EXPECT_EQ(g.batch_size(), 16);
  EXPECT_TRUE(g.is_training_step());
  EXPECT_EQ(g.num_ops(), 4u);
  EXPECT_EQ(g.num_tensors(), 6u);
}

TEST_F(SmallGraph, PredsSuccsConsumers) {
  EXPECT_EQ(to_vec(g.preds(A)), std::vector<OpId>{});
  EXPECT_EQ(to_vec(g.preds(B)), (std::vector<OpId>{A}));
  EXPECT_EQ(to_vec(g.preds(C)), (std::vector<OpId>{A, B}));  // A once despite two reads
  EXPECT_EQ(to_vec(g.preds(D)), (std::vector<OpId>{A, C}));  // A once despite two tensors
  EXPECT_EQ(to_vec(g.succs(A)), (std::vector<OpId>{B, C, D}));
  EXPECT_EQ(to_vec(g.succs(B)), (std::vector<OpId>{C}));
  EXPECT_EQ(to_vec(g.succs(C)), (std::vector<OpId>{D}));
  EXPECT_EQ(to_vec(g.succs(D)), std::vector<OpId>{});

  EXPECT_EQ(to_vec(g.consumers(x)), (std::vector<OpId>{A}));
  EXPECT_EQ(to_vec(g.consumers(a)), (std::vector<OpId>{B, C, D}));  // C once
  EXPECT_EQ(to_vec(g.consumers(bt)), (std::vector<OpId>{C}));
  EXPECT_EQ(to_vec(g.consumers(c)), (std::vector<OpId>{D}));
  EXPECT_EQ(to_vec(g.consumers(w)), (std::vector<OpId>{B}));
  EXPECT_EQ(to_vec(g.consumers(a2)), (std::vector<OpId>{D}));
}

TEST_F(SmallGraph, Producers) {
  EXPECT_EQ(g.tensor(x).producer, kNoOp);
  EXPECT_EQ(g.tensor(w).producer, kNoOp);
  EXPECT_EQ(g.tensor(a).producer, A);
  EXPECT_EQ(g.tensor(a2).producer, A);
  EXPECT_EQ(g.tensor(bt).producer, B);
  EXPECT_EQ(g.tensor(c).producer, C);
}

TEST_F(SmallGraph, TopoOrderIsValid) {
  ASSERT_EQ(g.topo_order().size(), 4u);
  ASSERT_EQ(g.topo_rank().size(), 4u);
  // Only one valid order here: A, B, C, D.
  EXPECT_EQ(g.topo_order(), (std::vector<OpId>{A, B, C, D}));
  for (uint32_t r = 0; r < 4; ++r) EXPECT_EQ(g.topo_rank()[g.topo_order()[r]], r);
}

TEST_F(SmallGraph, FindOp) {
  EXPECT_EQ(g.find_op("A"), A);
  EXPECT_EQ(g.find_op("C"), C);
  EXPECT_EQ(g.find_op("D"), D);
  EXPECT_EQ(g.find_op("E"), kNoOp);
  EXPECT_EQ(g.find_op(""), kNoOp);
}

TEST_F(SmallGraph, OpBytesAndTotals) {
  EXPECT_EQ(g.op_bytes(A), 100u + 200u + 10u);
  EXPECT_EQ(g.op_bytes(B), 200u + 50u + 300u);
  EXPECT_EQ(g.op_bytes(D), 12345u);  // bytes_accessed overrides the tensor sum
  EXPECT_DOUBLE_EQ(g.total_flops(), 1.5 + 2.0 + 4.0 + 0.25);
  EXPECT_EQ(g.total_param_bytes(), 57u);
}

// Ops written consumers-first: the order must still put producers first.
TEST(GraphBuilder, TopoOrderWithOpsWrittenOutOfOrder) {
  GraphBuilder b("rev");
  const TensorId t0 = b.add_tensor("t0", 1), t1 = b.add_tensor("t1", 1), t2 = b.add_tensor("t2", 1);
  b.add_op(make_op("last", {t2}, {}));
  b.add_op(make_op("mid", {t1}, {t2}));
  b.add_op(make_op("first", {t0}, {t1}));
  b.add_op(make_op("lonely", {}, {}));
  const Graph g = b.build();
  const auto& order = g.topo_order();
  ASSERT_EQ(order.size(), 4u);
  for (OpId v = 0; v < g.num_ops(); ++v) {
    for (OpId p : g.preds(v)) EXPECT_LT(g.topo_rank()[p], g.topo_rank()[v]);
  }
  EXPECT_EQ(order, (std::vector<OpId>{2, 1, 0, 3}));
}

TEST(GraphBuilder, EmptyGraph) {
  GraphBuilder b("empty");
  const Graph g = b.build();
  EXPECT_EQ(g.num_ops(), 0u);
  EXPECT_TRUE(g.topo_order().empty());
  EXPECT_EQ(g.find_op("x"), kNoOp);
  EXPECT_EQ(g.total_flops(), 0.0);
}

template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const ValidationError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
  return "no exception";
}

TEST(GraphBuilder, DuplicateNameIsValidationError) {
  GraphBuilder b("dup");
  const TensorId t = b.add_tensor("t", 4);
  b.add_op(make_op("relu", {}, {t}));
  b.add_op(make_op("relu", {t}, {}));
  EXPECT_EQ(error_of([&] { b.build(); }), "graph 'dup': duplicate op name 'relu'");
}

TEST(GraphBuilder, EmptyNameIsValidationError) {
  GraphBuilder b("noname");
  b.add_op(make_op("ok", {}, {}));
  b.add_op(make_op("", {}, {}));
  EXPECT_EQ(error_of([&] { b.build(); }), "graph 'noname': op #1 has no name");
}

TEST(GraphBuilder, TwoProducersIsValidationError) {
  GraphBuilder b("two");
  const TensorId t = b.add_tensor("shared", 4);
  b.add_op(make_op("p1", {}, {t}));
  b.add_op(make_op("p2", {}, {t}));
  EXPECT_EQ(error_of([&] { b.build(); }),
            "graph 'two': tensor 'shared' is written by two ops ('p1' and 'p2')");
}

TEST(GraphBuilder, OutputListedTwiceIsValidationError) {
  GraphBuilder b("twice");
  const TensorId t = b.add_tensor("out", 4);
  b.add_op(make_op("split", {}, {t, t}));
  EXPECT_EQ(error_of([&] { b.build(); }), "graph 'twice': op 'split' lists output 'out' twice");
}

TEST(GraphBuilder, TensorOutOfRangeIsValidationError) {
  GraphBuilder b("oob");
  b.add_tensor("t", 4);
  b.add_op(make_op("reader", {5}, {}));
  EXPECT_EQ(error_of([&] { b.build(); }),
            "graph 'oob': op 'reader' reads tensor #5 which does not exist");
  GraphBuilder b2("oob");
  b2.add_op(make_op("writer", {}, {0}));
  EXPECT_EQ(error_of([&] { b2.build(); }),
            "graph 'oob': op 'writer' writes tensor #0 which does not exist");
}

TEST(GraphBuilder, SelfLoopIsValidationError) {
  GraphBuilder b("self");
  const TensorId t = b.add_tensor("t", 4);
  b.add_op(make_op("acc", {t}, {t}));
  EXPECT_EQ(error_of([&] { b.build(); }),
            "graph 'self': op 'acc' reads its own output 't' (a cycle)");
}

// src -> p -> q -> r -> p (cycle of three), written so that DFS enters the cycle at r.
TEST(GraphBuilder, CycleIsValidationErrorNamingTheCycle) {
  GraphBuilder b("cyc");
  const TensorId x = b.add_tensor("x", 4), tp = b.add_tensor("tp", 4), tq = b.add_tensor("tq", 4),
                 tr = b.add_tensor("tr", 4);
  b.add_op(make_op("src", {}, {x}));
  b.add_op(make_op("r", {tq}, {tr}));
  b.add_op(make_op("p", {x, tr}, {tp}));
  b.add_op(make_op("q", {tp}, {tq}));
  b.add_op(make_op("after", {tq}, {}));
  // Listed from the lowest op id on the cycle ('r', id 1) in data-flow direction.
  EXPECT_EQ(error_of([&] { b.build(); }),
            "graph 'cyc' has a cycle of 3 ops: 'r' -> 'p' -> 'q' -> 'r'");
}

TEST(GraphBuilder, TwoOpCycle) {
  GraphBuilder b("c2");
  const TensorId t0 = b.add_tensor("t0", 4), t1 = b.add_tensor("t1", 4);
  b.add_op(make_op("a", {t1}, {t0}));
  b.add_op(make_op("b", {t0}, {t1}));
  EXPECT_EQ(error_of([&] { b.build(); }), "graph 'c2' has a cycle of 2 ops: 'a' -> 'b' -> 'a'");
}

TEST(GraphBuilder, LongCycleIsAbbreviated) {
  GraphBuilder b("ring");
  const int n = 20;
  std::vector<TensorId> t;
  for (int i = 0; i < n; ++i) t.push_back(b.add_tensor("t" + std::to_string(i), 4));
  for (int i = 0; i < n; ++i) {
    b.add_op(make_op("op" + std::to_string(i), {t[(i + n - 1) % n]}, {t[i]}));
  }
  EXPECT_EQ(error_of([&] { b.build(); }),
            "graph 'ring' has a cycle of 20 ops: 'op0' -> 'op1' -> 'op2' -> 'op3' -> 'op4' -> "
            "'op5' -> 'op6' -> 'op7' -> ... -> 'op0'");
}

TEST(GraphBuilder, BuilderIsReusableAfterBuild) {
  GraphBuilder b("first");
  b.add_op(make_op("a", {}, {}));
  const Graph g1 = b.build();
  EXPECT_EQ(b.num_ops(), 0u);
  EXPECT_EQ(g1.num_ops(), 1u);
}

}  // namespace
}  // namespace placer
