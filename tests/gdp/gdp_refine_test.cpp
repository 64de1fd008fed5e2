// Block moves around the best placement (agents/gdp/gdp_refine.h).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "agents/gdp/gdp_refine.h"
#include "src/graph/graph.h"

namespace placer {
namespace {

/// a -> {b, c} -> d (forward only).
Graph diamond() {
  GraphBuilder b("diamond");
  const TensorId x = b.add_tensor("x", 1000);
  std::vector<TensorId> out;
  for (const char* n : {"a", "b", "c", "d"})
    out.push_back(b.add_tensor(std::string(n) + ".out", 1000));
  auto op = [&](const std::string& name, std::vector<TensorId> in, TensorId o) {
    Op op;
    op.name = name;
    op.type = "MatMul";
    op.category = OpCategory::kMatMul;
    op.flops = 1e9;
    op.inputs = std::move(in);
    op.outputs = {o};
    b.add_op(op);
  };
  op("a", {x}, out[0]);
  op("b", {out[0]}, out[1]);
  op("c", {out[0]}, out[2]);
  op("d", {out[1], out[2]}, out[3]);
  return b.build();
}

TEST(GdpRefine, UnitNeighboursJoinPredecessorsAndSuccessors) {
  const Graph g = diamond();
  // One unit per op.
  EXPECT_EQ(unit_neighbours(g, {0, 1, 2, 3}, 4),
            (std::vector<std::vector<int>>{{1, 2}, {0, 3}, {0, 3}, {1, 2}}));
  // a and b one unit: its neighbours are c (a's successor) and d (b's successor).
  EXPECT_EQ(unit_neighbours(g, {0, 0, 1, 2}, 3),
            (std::vector<std::vector<int>>{{1, 2}, {0, 2}, {0, 1}}));
}

TEST(GdpRefine, BlockMovesFollowTheChainOnTheOldDevice) {
  // A chain 0 - 1 - 2 - 3 on devices 0, 0, 0, 1; every row allows devices 0 and 2 only
  // (device 1 masked), and unit 3's row allows device 1 alone.
  const std::vector<std::vector<int>> chain{{1}, {0, 2}, {1, 3}, {2}};
  const std::vector<int> best{0, 0, 0, 1};
  const std::vector<float> probs{0.9f, 0, 0.1f, 0.9f, 0, 0.1f, 0.9f, 0, 0.1f, 0, 1, 0};
  int whole_chain = 0, single = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    std::mt19937_64 rng(seed);
    const std::vector<int> a = propose_block_move(best, probs, 3, chain, rng);
    ASSERT_EQ(a[3], 1) << "unit 3 has no other device";
    int moved = 0, first = -1, last = -1;
    for (int u = 0; u < 3; ++u) {
      if (a[size_t(u)] == best[size_t(u)]) continue;
      ASSERT_EQ(a[size_t(u)], 2) << "the only other device with probability > 0";
      ++moved;
      if (first < 0) first = u;
      last = u;
    }
    ASSERT_GE(moved, 1);
    ASSERT_EQ(last - first + 1, moved) << "a block moves as a connected run of the chain";
    whole_chain += moved == 3;
    single += moved == 1;
  }
  // Seeded at a uniform unit of 0-2 and followed with probability 1/2 per neighbour:
  // P(one unit) = 1/3 (1/2) + 1/3 (1/4) + 1/3 (1/2) = 5/12, P(all three) = 1/3 (1/4) +
  // 1/3 (1/4) + 1/3 (1/4) = 1/4.
  EXPECT_NEAR(single / 400.0, 5.0 / 12, 0.08);
  EXPECT_NEAR(whole_chain / 400.0, 0.25, 0.08);
}

TEST(GdpRefine, NoMoveWhenEveryUnitHasOneDevice) {
  const std::vector<std::vector<int>> pair{{1}, {0}};
  std::mt19937_64 rng(7);
  EXPECT_EQ(propose_block_move({1, 0}, {0, 1, 1, 0}, 2, pair, rng), (std::vector<int>{1, 0}));
}

TEST(GdpRefine, KicksChainBlockMovesEachFromThePreviousOne) {
  // One unit on two devices, both allowed: every block move flips it, so k moves in a row
  // leave it where it was when k is even and on the other device when k is odd.
  const std::vector<std::vector<int>> alone{{}};
  const std::vector<float> both{0.5f, 0.5f};
  for (int k = 0; k <= 5; ++k) {
    std::mt19937_64 rng(3);
    EXPECT_EQ(propose_block_moves({0}, both, 2, alone, k, rng), (std::vector<int>{k % 2}));
  }
  // On the chain of BlockMovesFollowTheChainOnTheOldDevice: two kicked moves are the second
  // block move drawn from the first's placement, with the same draws.
  const std::vector<std::vector<int>> chain{{1}, {0, 2}, {1, 3}, {2}};
  const std::vector<float> probs{0.9f, 0, 0.1f, 0.9f, 0, 0.1f, 0.9f, 0, 0.1f, 0, 1, 0};
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 one(seed), two(seed);
    const std::vector<int> first = propose_block_move({0, 0, 0, 1}, probs, 3, chain, one);
    EXPECT_EQ(propose_block_moves({0, 0, 0, 1}, probs, 3, chain, 2, two),
              propose_block_move(first, probs, 3, chain, one));
  }
}

}  // namespace
}  // namespace placer
