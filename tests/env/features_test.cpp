#include "env/features.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "datasets/synthetic.h"
#include "src/graph/training_step.h"

namespace placer {
namespace {

// a (MatMul, fwd) -> b (Relu, fwd) -> c (AdamUpdate, optimizer); a -> c too.
Graph three_ops() {
  GraphBuilder b("three");
  Tensor x;
  x.name = "x";
  x.bytes = 4096;
  x.shape = {32, 32};
  const TensorId tx = b.add_tensor(x);
  Tensor ta;
  ta.name = "a.out";
  ta.bytes = 32 * 1024 * 4;
  ta.shape = {32, 1024};
  const TensorId t_a = b.add_tensor(ta);
  Tensor tb = ta;
  tb.name = "b.out";
  const TensorId t_b = b.add_tensor(tb);
  Tensor tc;
  tc.name = "c.out";
  tc.bytes = 16;
  tc.shape = {4, 2, 7};
  const TensorId t_c = b.add_tensor(tc);

  Op a;
  a.name = "a";
  a.type = "MatMul";
  a.category = OpCategory::kMatMul;
  a.flops = 1e9;
  a.param_bytes = 4096;
  a.inputs = {tx};
  a.outputs = {t_a};
  b.add_op(a);
  Op r;
  r.name = "b";
  r.type = "Relu";
  r.category = OpCategory::kElementwise;
  r.flops = 1e6;
  r.inputs = {t_a};
  r.outputs = {t_b};
  b.add_op(r);
  Op c;
  c.name = "c";
  c.type = "AdamUpdate";
  c.category = OpCategory::kOptimizer;
  c.phase = Phase::kOptimizer;
  c.batch_scaled = false;
  c.flops = 0;
  c.inputs = {t_a, t_b};
  c.outputs = {t_c};
  b.add_op(c);
  return b.build();
}

TEST(Features, VocabularyAndVersion) {
  EXPECT_EQ(kFeatureVersion, 1);
  const auto& v = op_type_vocabulary();
  EXPECT_EQ(v[0], "other");
  EXPECT_EQ(v[op_type_index("MatMul")], "MatMul");
  EXPECT_EQ(op_type_index("MatMulGrad"), op_type_index("MatMul"));
  EXPECT_EQ(op_type_index("NoSuchOp"), 0);
  EXPECT_EQ(op_type_index("NoSuchOpGrad"), 0);
  EXPECT_NE(op_type_index("Relu"), 0);
  EXPECT_NE(op_type_index("Relu"), op_type_index("MatMul"));
}

TEST(Features, HandCheckedThreeOpGraph) {
  const Graph g = three_ops();
  FeatureOptions raw;
  raw.standardize = false;
  const NodeFeatures f = compute_node_features(g, raw);
  ASSERT_EQ(f.num_nodes, 3);
  ASSERT_EQ(f.dim, feat::kDim);
  ASSERT_EQ(f.x.size(), 3u * feat::kDim);
  EXPECT_EQ(f.version, kFeatureVersion);
  EXPECT_EQ(f.op_type[0], op_type_index("MatMul"));
  EXPECT_EQ(f.op_type[1], op_type_index("Relu"));
  EXPECT_EQ(f.op_type[2], op_type_index("AdamUpdate"));
  EXPECT_EQ(f.order, (std::vector<uint32_t>{0, 1, 2}));

  // Depth 0, 1, 2 over max 2.
  EXPECT_FLOAT_EQ(f.at(0, feat::kDepth), 0.0f);
  EXPECT_FLOAT_EQ(f.at(1, feat::kDepth), 0.5f);
  EXPECT_FLOAT_EQ(f.at(2, feat::kDepth), 1.0f);
  // Degrees: a in 0 out 2, b in 1 out 1, c in 2 out 0 (graph input x is no edge).
  EXPECT_FLOAT_EQ(f.at(0, feat::kInDegree), 0.0f);
  EXPECT_FLOAT_EQ(f.at(0, feat::kOutDegree), float(std::log(3.0)));
  EXPECT_FLOAT_EQ(f.at(1, feat::kInDegree), float(std::log(2.0)));
  EXPECT_FLOAT_EQ(f.at(1, feat::kOutDegree), float(std::log(2.0)));
  EXPECT_FLOAT_EQ(f.at(2, feat::kInDegree), float(std::log(3.0)));
  EXPECT_FLOAT_EQ(f.at(2, feat::kOutDegree), 0.0f);
  // Raw magnitudes.
  EXPECT_FLOAT_EQ(f.at(0, feat::kLogFlops), float(std::log1p(1e9)));
  EXPECT_FLOAT_EQ(f.at(2, feat::kLogFlops), 0.0f);
  EXPECT_FLOAT_EQ(f.at(0, feat::kLogOutBytes), float(std::log1p(131072.0)));
  EXPECT_FLOAT_EQ(f.at(0, feat::kLogParamBytes), float(std::log1p(4096.0)));
  EXPECT_FLOAT_EQ(f.at(1, feat::kLogParamBytes), 0.0f);
  // Shape summary: rank / 8, two largest dims.
  EXPECT_FLOAT_EQ(f.at(0, feat::kRank), 2.0f / 8.0f);
  EXPECT_FLOAT_EQ(f.at(0, feat::kLogDim0), float(std::log1p(1024.0)));
  EXPECT_FLOAT_EQ(f.at(0, feat::kLogDim1), float(std::log1p(32.0)));
  EXPECT_FLOAT_EQ(f.at(2, feat::kRank), 3.0f / 8.0f);
  EXPECT_FLOAT_EQ(f.at(2, feat::kLogDim0), float(std::log1p(7.0)));
  EXPECT_FLOAT_EQ(f.at(2, feat::kLogDim1), float(std::log1p(4.0)));
  // One-hots.
  for (int i = 0; i < 3; ++i) {
    float phase_sum = 0, cat_sum = 0;
    for (int k = 0; k < 4; ++k) phase_sum += f.at(i, feat::kPhase + k);
    for (int k = 0; k < feat::kBatchScaled - feat::kCategory; ++k) {
      cat_sum += f.at(i, feat::kCategory + k);
    }
    EXPECT_FLOAT_EQ(phase_sum, 1.0f);
    EXPECT_FLOAT_EQ(cat_sum, 1.0f);
  }
  EXPECT_FLOAT_EQ(f.at(0, feat::kPhase + int(Phase::kForward)), 1.0f);
  EXPECT_FLOAT_EQ(f.at(2, feat::kPhase + int(Phase::kOptimizer)), 1.0f);
  EXPECT_FLOAT_EQ(f.at(0, feat::kCategory + int(OpCategory::kMatMul)), 1.0f);
  EXPECT_FLOAT_EQ(f.at(1, feat::kCategory + int(OpCategory::kElementwise)), 1.0f);
  EXPECT_FLOAT_EQ(f.at(2, feat::kCategory + int(OpCategory::kOptimizer)), 1.0f);
  EXPECT_FLOAT_EQ(f.at(0, feat::kBatchScaled), 1.0f);
  EXPECT_FLOAT_EQ(f.at(2, feat::kBatchScaled), 0.0f);
}

TEST(Features, CsrNeighboursBothDirections) {
  const NodeFeatures f = compute_node_features(three_ops());
  EXPECT_EQ(f.in_off, (std::vector<int32_t>{0, 0, 1, 3}));
  EXPECT_EQ(f.in_idx, (std::vector<int32_t>{0, 0, 1}));
  EXPECT_EQ(f.out_off, (std::vector<int32_t>{0, 2, 3, 3}));
  EXPECT_EQ(f.out_idx, (std::vector<int32_t>{1, 2, 2}));
}

TEST(Features, StandardizedColumnsHaveZeroMeanUnitStd) {
  const Graph g = three_ops();
  const NodeFeatures f = compute_node_features(g);
  // log1p flops: l0 = log1p(1e9), l1 = log1p(1e6), l2 = 0; z-scored by hand.
  const double l[3] = {std::log1p(1e9), std::log1p(1e6), 0.0};
  const double mean = (l[0] + l[1] + l[2]) / 3;
  double var = 0;
  for (double v : l) var += (v - mean) * (v - mean);
  const double sd = std::sqrt(var / 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(f.at(i, feat::kLogFlops), (l[i] - mean) / sd, 1e-5);
  }
  // Equal raw values stay equal; the smaller one falls below the mean.
  EXPECT_FLOAT_EQ(f.at(0, feat::kLogOutBytes), f.at(1, feat::kLogOutBytes));
  EXPECT_LT(f.at(2, feat::kLogOutBytes), 0.0f);
}

// The same graph with every op's FLOPs and every tensor / parameter byte count scaled.
Graph scaled(const Graph& g, double flop_factor, uint64_t byte_factor) {
  GraphBuilder b(g.name());
  b.set_batch_size(g.batch_size());
  b.set_training_step(g.is_training_step());
  for (const Tensor& t0 : g.tensors()) {
    Tensor t = t0;
    t.producer = kNoOp;
    t.bytes *= byte_factor;
    b.add_tensor(t);
  }
  for (const Op& o0 : g.ops()) {
    Op o = o0;
    o.flops *= flop_factor;
    o.param_bytes *= byte_factor;
    b.add_op(o);
  }
  return b.build();
}

TEST(Features, InvariantToScalingFlops) {
  LayeredRandomOptions o;
  o.n_ops = 300;
  o.seed = 5;
  const Graph g = expand_training_step(make_layered_random(o));
  const Graph g10 = scaled(g, 10.0, 1);
  const NodeFeatures a = compute_node_features(g);
  const NodeFeatures b = compute_node_features(g10);
  ASSERT_EQ(a.x.size(), b.x.size());
  // Scaled bytes are not checked: a training step holds tiny tensors (the 4-byte loss) where
  // the +1 of log1p matters. log1p(0) stays 0 while the others shift, so zero-FLOP ops would break the invariance.
  for (const Op& op : g.ops()) ASSERT_GT(op.flops, 0) << op.name;
  for (int i = 0; i < a.num_nodes; ++i) {
    EXPECT_NEAR(a.at(i, feat::kLogFlops), b.at(i, feat::kLogFlops), 1e-4) << "op " << i;
    for (int col = feat::kLogOutBytes; col < feat::kDim; ++col) {
      EXPECT_EQ(a.at(i, col), b.at(i, col)) << "op " << i << " col " << col;
    }
  }
  // Without standardisation the FLOP column moves by log(10).
  FeatureOptions raw;
  raw.standardize = false;
  const NodeFeatures ra = compute_node_features(g, raw);
  const NodeFeatures rb = compute_node_features(g10, raw);
  ASSERT_GT(g.op(0).flops, 1e5);
  EXPECT_NEAR(rb.at(0, feat::kLogFlops) - ra.at(0, feat::kLogFlops), std::log(10.0), 1e-3);
}

TEST(Features, FiftyThousandOpsFast) {
  LayeredRandomOptions o;
  o.n_ops = 50000;
  o.width = 64;
  const Graph g = make_layered_random(o);
  const auto t0 = std::chrono::steady_clock::now();
  const NodeFeatures f = compute_node_features(g);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("compute_node_features: %d ops in %.1f ms\n", f.num_nodes, ms);
  EXPECT_EQ(f.num_nodes, 50000);
  EXPECT_LT(ms, 1000.0);  // generous for a loaded 2-core machine; typical figure printed
}

}  // namespace
}  // namespace placer
