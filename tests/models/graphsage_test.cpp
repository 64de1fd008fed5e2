// GraphSAGE encoder: max aggregation by hand, both edge directions, shapes, seeding, gradients.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "models/graphsage.h"
#include "src/util/error.h"

namespace placer {
namespace {

// Edges 0->1, 0->2, 1->2; node 3 is isolated.
struct TinyGraph {
  torch::Tensor in_off = torch::tensor({0, 0, 1, 3, 3}, torch::kInt);
  torch::Tensor in_idx = torch::tensor({0, 0, 1}, torch::kInt);
  torch::Tensor out_off = torch::tensor({0, 2, 3, 3, 3}, torch::kLong);
  torch::Tensor out_idx = torch::tensor({1, 2, 2}, torch::kLong);
  torch::Tensor x = torch::tensor({1.f, 2.f, 3.f, 0.f, 0.f, 5.f, 4.f, 4.f}).view({4, 2});
  torch::Tensor op_type = torch::tensor({1, 2, 0, 3}, torch::kLong);
};

std::vector<float> to_vec(const torch::Tensor& t) {
  auto c = t.contiguous().to(torch::kFloat);
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

TEST(GraphSageTest, SegmentMaxMatchesHandComputation) {
  TinyGraph g;
  auto m = torch::tensor({1.f, -2.f, 3.f, 0.5f, -1.f, 4.f, 7.f, 7.f}).view({4, 2});
  // in: node1 <- {0}, node2 <- {0,1}; negative entries survive (no clamp at the zero init).
  EXPECT_EQ(to_vec(csr_segment_max(m, g.in_off, g.in_idx)),
            (std::vector<float>{0, 0, 1, -2, 3, 0.5f, 0, 0}));
  // out: node0 -> {1,2}, node1 -> {2}; nodes 2 and 3 have no successor: zero vector.
  EXPECT_EQ(to_vec(csr_segment_max(m, g.out_off, g.out_idx)),
            (std::vector<float>{3, 4, -1, 4, 0, 0, 0, 0}));
  // No edges at all.
  auto none = csr_segment_max(m, torch::zeros({5}, torch::kLong), torch::zeros({0}, torch::kLong));
  EXPECT_EQ(to_vec(none), std::vector<float>(8, 0.f));
}

// One layer, no embedding, no normalisation; pools = identity, combine = [I | I | I], so
// h' = relu(h + max_in(h) + max_out(h)) with x >= 0.
GraphSage hand_model() {
  GraphSage model(GraphSageOptions(2, 2).layers(1).normalize(false));
  torch::NoGradGuard no_grad;
  auto eye = torch::eye(2);
  for (auto* pool : {&model->pool_in[0], &model->pool_out[0]}) {
    (*pool)->weight.copy_(eye);
    (*pool)->bias.zero_();
  }
  model->combine[0]->weight.copy_(torch::cat({eye, eye, eye}, 1));
  model->combine[0]->bias.zero_();
  return model;
}

TEST(GraphSageTest, OneLayerEqualsHandComputation) {
  TinyGraph g;
  auto model = hand_model();
  auto y = model->forward(g.x, g.op_type, g.in_off, g.in_idx, g.out_off, g.out_idx);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{4, 2}));
  // node0: [1,2] + 0 + max([3,0],[0,5]) = [4,7]; node1: [3,0] + [1,2] + [0,5] = [4,7];
  // node2: [0,5] + max([1,2],[3,0]) + 0 = [3,7]; node3 (isolated): [4,4].
  EXPECT_EQ(to_vec(y), (std::vector<float>{4, 7, 4, 7, 3, 7, 4, 4}));
  // Only the out-direction reaches node 0 from node 2: x2 = [0,9] -> a_out(0) = [3,9].
  auto x2 = g.x.clone();
  x2[2][1] = 9.f;
  auto y2 = model->forward(x2, g.op_type, g.in_off, g.in_idx, g.out_off, g.out_idx);
  EXPECT_EQ(to_vec(y2[0]), (std::vector<float>{4, 11}));
}

TEST(GraphSageTest, BothDirectionsUsedAndNonNeighboursIgnored) {
  torch::manual_seed(3);
  TinyGraph g;
  GraphSage model(GraphSageOptions(2, 16).layers(2).op_type_vocab(5).op_type_embedding(4));
  auto y = model->forward(g.x, g.op_type, g.in_off, g.in_idx, g.out_off, g.out_idx);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{4, 16}));
  auto with_x = [&](int node, float v0, float v1) {
    auto x = g.x.clone();
    x[node][0] = v0;
    x[node][1] = v1;
    return model->forward(x, g.op_type, g.in_off, g.in_idx, g.out_off, g.out_idx);
  };
  // Node 2 is only a successor of node 0 (out-direction); node 0 only a predecessor of 2.
  auto y_out = with_x(2, -3.f, 8.f);
  EXPECT_FALSE(torch::equal(y_out[0], y[0]));
  auto y_in = with_x(0, 6.f, -4.f);
  EXPECT_FALSE(torch::equal(y_in[2], y[2]));
  // Node 3 is nobody's neighbour: nodes 0..2 are bit-identical, node 3 changes.
  auto y_iso = with_x(3, -5.f, 9.f);
  EXPECT_TRUE(torch::equal(y_iso.slice(0, 0, 3), y.slice(0, 0, 3)));
  EXPECT_FALSE(torch::equal(y_iso[3], y[3]));
  // Rows are L2-normalised (unit norm, or zero).
  for (float n : to_vec(y.norm(2, 1))) {
    EXPECT_TRUE(std::abs(n - 1.f) < 1e-5f || n == 0.f) << n;
  }
}

TEST(GraphSageTest, DeterministicUnderManualSeed) {
  TinyGraph g;
  auto run = [&](uint64_t seed) {
    torch::manual_seed(seed);
    GraphSage model(GraphSageOptions(2, 8).op_type_vocab(4));
    return model->forward(g.x, g.op_type, g.in_off, g.in_idx, g.out_off, g.out_idx);
  };
  EXPECT_TRUE(torch::equal(run(11), run(11)));
  EXPECT_FALSE(torch::equal(run(11), run(12)));
}

TEST(GraphSageTest, GradientsReachEveryParameter) {
  torch::manual_seed(5);
  TinyGraph g;
  GraphSage model(GraphSageOptions(2, 8).layers(2).op_type_vocab(4).op_type_embedding(3));
  auto params = model->named_parameters();
  // embedding + 2 layers x (pool_in, pool_out, combine) x (weight, bias)
  EXPECT_EQ(params.size(), 13u);
  // A weighted sum: the plain sum of unit-norm rows has tiny, direction-only gradients.
  auto w = torch::arange(4 * 8, torch::kFloat).view({4, 8}).sin();
  auto y = model->forward(g.x, g.op_type, g.in_off, g.in_idx, g.out_off, g.out_idx);
  (y * w).sum().backward();
  for (const auto& p : params) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<float>(), 0.f) << p.key();
  }
}

TEST(GraphSageTest, RejectsBadShapes) {
  TinyGraph g;
  GraphSage model(GraphSageOptions(3, 4));
  EXPECT_THROW(model->forward(g.x, g.op_type, g.in_off, g.in_idx, g.out_off, g.out_idx),
               Error);
  EXPECT_THROW(GraphSage(GraphSageOptions(2, 0)), Error);
}

}  // namespace
}  // namespace placer
