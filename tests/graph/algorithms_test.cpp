#include "src/graph/algorithms.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "src/util/error.h"

namespace placer {
namespace {

// Adds an op that reads `in` and writes one new tensor named after it (returned via out).
OpId add(GraphBuilder& b, const std::string& name, std::vector<TensorId> in,
         TensorId* out = nullptr) {
  Op o;
  o.name = name;
  o.type = "Relu";
  o.inputs = std::move(in);
  const TensorId t = b.add_tensor(name + ":0", 4);
  o.outputs = {t};
  if (out) *out = t;
  return b.add_op(std::move(o));
}

//      A
//    /   \         A=1, B=5, C=3, D=2
//   B     C        longest by op cost: A,B,D = 8
//    \   /
//      D
struct Diamond {
  Graph g;
  OpId A, B, C, D;
  TensorId tA, tB, tC, tD;
  Diamond() {
    GraphBuilder b("diamond");
    A = add(b, "A", {}, &tA);
    B = add(b, "B", {tA}, &tB);
    C = add(b, "C", {tA}, &tC);
    D = add(b, "D", {tB, tC}, &tD);
    g = b.build();
  }
};

TEST(CriticalPath, DiamondOpCostsOnly) {
  Diamond d;
  const CriticalPath cp = critical_path(d.g, {1, 5, 3, 2});
  EXPECT_DOUBLE_EQ(cp.length, 8.0);
  EXPECT_EQ(cp.ops, (std::vector<OpId>{d.A, d.B, d.D}));
}

TEST(CriticalPath, DiamondOtherBranchWins) {
  Diamond d;
  const CriticalPath cp = critical_path(d.g, {1, 2, 3.5, 2});
  EXPECT_DOUBLE_EQ(cp.length, 6.5);
  EXPECT_EQ(cp.ops, (std::vector<OpId>{d.A, d.C, d.D}));
}

// Tensor costs: A->B 1, A->C 1 (same tensor tA), B->D 0.5, C->D 4.
// A,B,D = 1+1+5+0.5+2 = 9.5; A,C,D = 1+1+3+4+2 = 11.
TEST(CriticalPath, DiamondWithTensorCosts) {
  Diamond d;
  std::vector<double> tensor_cost(d.g.num_tensors(), 0.0);
  tensor_cost[d.tA] = 1;
  tensor_cost[d.tB] = 0.5;
  tensor_cost[d.tC] = 4;
  tensor_cost[d.tD] = 100;  // D's output has no consumer: never on an edge
  const CriticalPath cp = critical_path(d.g, {1, 5, 3, 2}, tensor_cost);
  EXPECT_DOUBLE_EQ(cp.length, 11.0);
  EXPECT_EQ(cp.ops, (std::vector<OpId>{d.A, d.C, d.D}));
}

TEST(CriticalPath, DiamondWithEdgeCallback) {
  Diamond d;
  const CriticalPath cp = critical_path(
      d.g, {1, 5, 3, 2}, [&](OpId from, OpId to) { return from == d.C && to == d.D ? 10.0 : 0.0; });
  EXPECT_DOUBLE_EQ(cp.length, 16.0);  // 1 + 3 + 10 + 2
  EXPECT_EQ(cp.ops, (std::vector<OpId>{d.A, d.C, d.D}));
}

// Two tensors on the same op edge: their costs add up.
TEST(CriticalPath, TensorCostsOnOneEdgeAreSummed) {
  GraphBuilder b("two_tensors");
  const TensorId t1 = b.add_tensor("t1", 4), t2 = b.add_tensor("t2", 4);
  Op p;
  p.name = "p";
  p.outputs = {t1, t2};
  b.add_op(p);
  Op c;
  c.name = "c";
  c.inputs = {t1, t2, t1};  // t1 read twice still counts once
  b.add_op(c);
  const Graph g = b.build();
  const CriticalPath cp = critical_path(g, {1, 1}, std::vector<double>{2, 3});
  EXPECT_DOUBLE_EQ(cp.length, 7.0);
  EXPECT_EQ(cp.ops, (std::vector<OpId>{0, 1}));
}

// Two chains: a0 -> a1 -> a2 (cost 3) and b0 -> b1 (cost 10); plus an isolated op (cost 4).
TEST(CriticalPath, DisconnectedGraphPicksLongestChain) {
  GraphBuilder b("chains");
  TensorId t;
  add(b, "a0", {}, &t);
  add(b, "a1", {t}, &t);
  add(b, "a2", {t}, &t);
  const OpId b0 = add(b, "b0", {}, &t);
  const OpId b1 = add(b, "b1", {t}, &t);
  add(b, "iso", {});
  const Graph g = b.build();
  const CriticalPath cp = critical_path(g, {1, 1, 1, 4, 6, 4});
  EXPECT_DOUBLE_EQ(cp.length, 10.0);
  EXPECT_EQ(cp.ops, (std::vector<OpId>{b0, b1}));
  const CriticalPath iso = critical_path(g, {1, 1, 1, 4, 6, 11});
  EXPECT_DOUBLE_EQ(iso.length, 11.0);
  EXPECT_EQ(iso.ops, (std::vector<OpId>{5}));
}

TEST(CriticalPath, ZeroCostsStillGiveASourceToSinkPath) {
  Diamond d;
  const CriticalPath cp = critical_path(d.g, {0, 0, 0, 0});
  EXPECT_EQ(cp.length, 0.0);
  ASSERT_EQ(cp.ops.size(), 3u);
  EXPECT_EQ(cp.ops.front(), d.A);
  EXPECT_EQ(cp.ops.back(), d.D);
}

TEST(CriticalPath, EmptyAndSingleOp) {
  GraphBuilder e("empty");
  const Graph empty = e.build();
  const CriticalPath cp0 = critical_path(empty, {});
  EXPECT_EQ(cp0.length, 0.0);
  EXPECT_TRUE(cp0.ops.empty());

  GraphBuilder b("one");
  add(b, "only", {});
  const Graph g = b.build();
  const CriticalPath cp1 = critical_path(g, {2.5});
  EXPECT_DOUBLE_EQ(cp1.length, 2.5);
  EXPECT_EQ(cp1.ops, (std::vector<OpId>{0}));
}

// A long chain checks that nothing recurses per op.
TEST(CriticalPath, LongChain) {
  GraphBuilder b("chain");
  TensorId t = kNoTensor;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    add(b, "op" + std::to_string(i), i == 0 ? std::vector<TensorId>{} : std::vector<TensorId>{t},
        &t);
  }
  const Graph g = b.build();
  const CriticalPath cp = critical_path(g, std::vector<double>(n, 0.5));
  EXPECT_DOUBLE_EQ(cp.length, n * 0.5);
  ASSERT_EQ(cp.ops.size(), static_cast<size_t>(n));
  EXPECT_EQ(cp.ops.back(), static_cast<OpId>(n - 1));
  const std::vector<int> depth = topo_depth(g);
  EXPECT_EQ(depth.back(), n - 1);
}

TEST(CriticalPath, RejectsBadCosts) {
  Diamond d;
  EXPECT_THROW(critical_path(d.g, {1, 2, 3}), Error);
  EXPECT_THROW(critical_path(d.g, {1, -2, 3, 4}), Error);
  EXPECT_THROW(critical_path(d.g, {1, std::nan(""), 3, 4}), Error);
  EXPECT_THROW(critical_path(d.g, {1, 2, 3, 4}, std::vector<double>{1, 2}), Error);
  EXPECT_THROW(critical_path(d.g, {1, 2, 3, 4},
                             [](OpId, OpId) { return std::numeric_limits<double>::infinity(); }),
               Error);
}

// Components: {a, b, c} (a -> c <- b: weakly but not strongly connected), {d, e}, {f},
// and {g}: g reads the same graph input x as a, which does not connect them.
TEST(Components, WeaklyConnected) {
  GraphBuilder b("comps");
  const TensorId x = b.add_tensor("x", 4);
  TensorId ta, tb, td;
  add(b, "a", {x}, &ta);
  add(b, "b", {}, &tb);
  add(b, "c", {ta, tb});
  add(b, "d", {}, &td);
  add(b, "e", {td});
  add(b, "f", {});
  add(b, "g", {x});
  const Graph g = b.build();
  int count = -1;
  const std::vector<int> comp = weakly_connected_components(g, &count);
  EXPECT_EQ(count, 4);
  EXPECT_EQ(comp, (std::vector<int>{0, 0, 0, 1, 1, 2, 3}));
  EXPECT_EQ(weakly_connected_components(g), comp);  // count is optional
}

// Numbering follows the lowest op id of each component even when ids interleave.
TEST(Components, InterleavedIds) {
  GraphBuilder b("interleaved");
  TensorId t0, t1;
  add(b, "p0", {}, &t0);  // 0: component 0
  add(b, "q0", {}, &t1);  // 1: component 1
  add(b, "p1", {t0});     // 2: component 0
  add(b, "q1", {t1});     // 3: component 1
  const Graph g = b.build();
  int count = 0;
  EXPECT_EQ(weakly_connected_components(g, &count), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(count, 2);

  GraphBuilder e("empty");
  const Graph empty = e.build();
  EXPECT_TRUE(weakly_connected_components(empty, &count).empty());
  EXPECT_EQ(count, 0);
}

//  A -> B ------> D          depths: A 0, B 1, C 1, C2 2, D 3, S 0 (a second source), iso 0
//  A -> C -> C2 -> D
//       S ------> D
TEST(TopoDepth, LongestHopsFromAnySource) {
  GraphBuilder b("depth");
  TensorId ta, tb, tc, tc2, ts;
  add(b, "S", {}, &ts);
  add(b, "A", {}, &ta);
  add(b, "B", {ta}, &tb);
  add(b, "C", {ta}, &tc);
  add(b, "C2", {tc}, &tc2);
  add(b, "D", {tb, tc2, ts});
  add(b, "iso", {});
  const Graph g = b.build();
  EXPECT_EQ(topo_depth(g), (std::vector<int>{0, 0, 1, 1, 2, 3, 0}));

  Diamond d;
  EXPECT_EQ(topo_depth(d.g), (std::vector<int>{0, 1, 1, 2}));
  GraphBuilder e("empty");
  EXPECT_TRUE(topo_depth(e.build()).empty());
}

}  // namespace
}  // namespace placer
