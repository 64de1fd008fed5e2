#include "datasets/synthetic.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "src/graph/training_step.h"
#include "src/util/error.h"

namespace placer {
namespace {

double flops_of(const Graph& g, OpCategory c, Phase p = Phase::kForward) {
  double f = 0;
  for (const Op& o : g.ops()) f += (o.category == c && o.phase == p) ? o.flops : 0;
  return f;
}
double layer_flops(const Graph& g, int layer, bool matmul_only) {
  double f = 0;
  for (const Op& o : g.ops()) {
    if (o.layer != layer || o.phase != Phase::kForward) continue;
    if (matmul_only && o.category != OpCategory::kMatMul) continue;
    f += o.flops;
  }
  return f;
}
void expect_same(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.num_ops(), b.num_ops());
  ASSERT_EQ(a.num_tensors(), b.num_tensors());
  for (OpId i = 0; i < a.num_ops(); ++i) {
    EXPECT_EQ(a.op(i).name, b.op(i).name);
    EXPECT_EQ(a.op(i).type, b.op(i).type);
    EXPECT_EQ(a.op(i).flops, b.op(i).flops);
    EXPECT_EQ(a.op(i).param_bytes, b.op(i).param_bytes);
    EXPECT_EQ(a.op(i).inputs, b.op(i).inputs);
    EXPECT_EQ(a.op(i).outputs, b.op(i).outputs);
  }
  for (TensorId t = 0; t < a.num_tensors(); ++t) EXPECT_EQ(a.tensor(t).bytes, b.tensor(t).bytes);
}

TEST(SyntheticMlp, HandCountedCosts) {
  MlpOptions o;
  o.layers = 3;
  o.input = 8;
  o.hidden = 16;
  o.classes = 4;
  o.batch = 2;
  const Graph g = make_mlp(o);
  EXPECT_EQ(g.num_ops(), 6u);  // 3 linear + 2 relu + loss
  EXPECT_EQ(g.batch_size(), 2);
  // Parameters (weights + biases): 8*16+16 + 16*16+16 + 16*4+4 = 484 floats.
  EXPECT_EQ(g.total_param_bytes(), 484u * 4);
  // 2*2*8*16 + 32 + 2*2*16*16 + 32 + 2*2*16*4 + loss 5*2*4.
  EXPECT_DOUBLE_EQ(g.total_flops(), 512 + 32 + 1024 + 32 + 256 + 40);
  const Op& l1 = g.op(g.find_op("layers.1.linear"));
  EXPECT_EQ(l1.scope, "layers.1");
  EXPECT_EQ(l1.layer, 1);
  EXPECT_EQ(g.tensor(l1.outputs[0]).bytes, 2u * 16 * 4);
  EXPECT_EQ(g.tensor(l1.outputs[0]).shape, (std::vector<int64_t>{2, 16}));
  EXPECT_TRUE(g.succs(g.find_op("loss")).empty());
  o.bias = false;
  EXPECT_EQ(make_mlp(o).total_param_bytes(), (8u * 16 + 16 * 16 + 16 * 4) * 4);
  o.layers = 0;
  EXPECT_THROW(make_mlp(o), Error);
}

TEST(SyntheticTransformer, OneLayerHandCounted) {
  TransformerOptions o;
  o.layers = 1;
  o.d_model = 8;
  o.heads = 2;
  o.seq_len = 4;
  o.batch = 2;
  o.vocab = 10;
  o.dtype = DType::kF16;
  const Graph g = make_transformer(o);
  EXPECT_EQ(g.num_ops(), 14u + 4);
  // Layer: 12*d^2 + 13*d = 872; embedding (10 + 4) * 8 = 112; final LN 16; head 8*10 = 80.
  EXPECT_EQ(g.total_param_bytes(), (872u + 112 + 16 + 80) * 2);
  uint64_t layer_params = 0;
  for (const Op& op : g.ops()) layer_params += op.layer == 0 ? op.param_bytes : 0;
  EXPECT_EQ(layer_params, 872u * 2);
  // MatMuls of the layer: 24*b*s*d^2 + 4*b*s^2*d = 12288 + 1024.
  EXPECT_DOUBLE_EQ(layer_flops(g, 0, true), 13312);
  // Other layer ops: 2 LN 8*bsd, softmax 5*b*h*s^2, gelu 8*b*s*4d, 2 adds bsd (bsd = 64).
  EXPECT_DOUBLE_EQ(layer_flops(g, 0, false), 13312 + 1024 + 320 + 2048 + 128);
  // + embedding 64, final LN 512, head 2*64*10, loss 5*2*4*10.
  EXPECT_DOUBLE_EQ(g.total_flops(), 13312 + 3520 + 64 + 512 + 1280 + 400);

  const Op& q = g.op(g.find_op("encoder.layer.0.attention.self.query"));
  EXPECT_EQ(q.scope, "encoder.layer.0.attention.self");
  EXPECT_EQ(q.layer, 0);
  EXPECT_EQ(q.category, OpCategory::kMatMul);
  EXPECT_EQ(q.dtype, DType::kF16);
  const Op& sm = g.op(g.find_op("encoder.layer.0.attention.self.softmax"));
  EXPECT_EQ(g.tensor(sm.outputs[0]).shape, (std::vector<int64_t>{2, 2, 4, 4}));
  EXPECT_EQ(g.tensor(sm.outputs[0]).bytes, 2u * 2 * 4 * 4 * 2);
  EXPECT_EQ(g.op(g.find_op("embedding")).category, OpCategory::kEmbedding);
  const OpId loss = g.find_op("loss");
  EXPECT_TRUE(g.succs(loss).empty());
  EXPECT_EQ(g.topo_order().back(), loss);
}

TEST(SyntheticTransformer, LayerFlopsMatchNarayanan) {
  TransformerOptions o;
  o.layers = 3;
  o.d_model = 64;
  o.heads = 4;
  o.seq_len = 32;
  o.batch = 4;
  o.vocab = 100;
  const Graph g = make_transformer(o);
  EXPECT_EQ(g.num_ops(), 3u * 14 + 4);
  const double b = 4, s = 32, d = 64, V = 100;
  for (int l = 0; l < 3; ++l) {
    EXPECT_DOUBLE_EQ(layer_flops(g, l, true), 24 * b * s * d * d + 4 * b * s * s * d) << l;
  }
  // Whole training step without activation recomputation (Narayanan et al. 2021, Sec. 5.1
  // use 96 = 4x forward with recomputation; 3x forward gives 72):
  // MatMul FLOPs = 72*b*s*l*d^2 * (1 + s/(6d) + V/(12*d*l)).
  const Graph st = expand_training_step(g);
  const double matmul = flops_of(st, OpCategory::kMatMul, Phase::kForward) +
                        flops_of(st, OpCategory::kMatMul, Phase::kBackward);
  const double expect = 72 * b * s * 3 * d * d * (1 + s / (6 * d) + V / (12 * d * 3));
  EXPECT_NEAR(matmul, expect, 1e-12 * expect);
  // Every parameter owner gets an update op: embedding, 3 x (2 LN + 6 MatMul), LN, head.
  int updates = 0;
  for (const Op& op : st.ops()) updates += op.phase == Phase::kOptimizer ? 1 : 0;
  EXPECT_EQ(updates, 1 + 3 * 8 + 2);
  // All forward ops but nothing reads the integer tokens: every forward op gets a backward.
  int backward = 0;
  for (const Op& op : st.ops()) backward += op.phase == Phase::kBackward ? 1 : 0;
  EXPECT_EQ(backward, static_cast<int>(g.num_ops()));
}

TEST(SyntheticTransformer, RejectsBadHeads) {
  TransformerOptions o;
  o.d_model = 10;
  o.heads = 3;
  EXPECT_THROW(make_transformer(o), Error);
}

TEST(SyntheticChain, EqualAndGivenCosts) {
  ChainOptions o;
  o.n = 5;
  o.flops = 2e9;
  o.param_bytes = 1000;
  const Graph g = make_chain(o);
  EXPECT_EQ(g.num_ops(), 5u);
  EXPECT_DOUBLE_EQ(g.total_flops(), 1e10);
  EXPECT_EQ(g.total_param_bytes(), 5000u);
  for (OpId i = 0; i + 1 < g.num_ops(); ++i) {
    ASSERT_EQ(g.succs(i).size(), 1u);
    EXPECT_EQ(g.succs(i)[0], i + 1);
  }
  EXPECT_TRUE(g.succs(4).empty());
  EXPECT_EQ(g.op(2).name, "chain.2");
  EXPECT_EQ(g.op(2).category, OpCategory::kMatMul);

  o.per_op_flops = {1, 2, 3};
  o.per_op_param_bytes = {10, 0, 30};
  const Graph h = make_chain(o);
  EXPECT_EQ(h.num_ops(), 3u);
  EXPECT_DOUBLE_EQ(h.op(1).flops, 2);
  EXPECT_EQ(h.total_param_bytes(), 40u);
  o.per_op_param_bytes = {1};
  EXPECT_THROW(make_chain(o), Error);
}

TEST(SyntheticLayeredRandom, ShapeAndRanges) {
  LayeredRandomOptions o;
  o.n_ops = 1001;
  o.width = 10;
  o.max_fan_in = 4;
  o.max_skip = 3;
  const Graph g = make_layered_random(o);
  EXPECT_EQ(g.num_ops(), 1001u);
  int sinks = 0, with_params = 0;
  for (OpId i = 0; i < g.num_ops(); ++i) {
    sinks += g.succs(i).empty() ? 1 : 0;
    const Op& op = g.op(i);
    if (op.name == "loss") continue;
    with_params += op.param_bytes > 0 ? 1 : 0;
    EXPECT_GE(op.flops, o.min_flops);
    EXPECT_LE(op.flops, o.max_flops);
    EXPECT_GE(op.inputs.size(), 1u);
    EXPECT_LE(op.inputs.size(), 4u);
    for (TensorId t : op.inputs) {
      const OpId p = g.tensor(t).producer;
      if (p == kNoOp) continue;
      EXPECT_LT(g.op(p).layer, op.layer);
      EXPECT_GE(g.op(p).layer, op.layer - 3);
    }
    for (TensorId t : op.outputs) {
      EXPECT_GE(g.tensor(t).bytes, o.min_bytes - 4);
      EXPECT_LE(g.tensor(t).bytes, o.max_bytes);
      EXPECT_EQ(g.tensor(t).bytes % 4, 0u);
    }
  }
  EXPECT_EQ(sinks, 1);  // only the loss
  // ~30% of 1000 ops own parameters.
  EXPECT_GT(with_params, 230);
  EXPECT_LT(with_params, 370);
  // 100 full levels: the loss reads exactly the last level.
  EXPECT_EQ(g.op(g.find_op("loss")).inputs.size(), 10u);
}

TEST(SyntheticLayeredRandom, SeededAndFast) {
  LayeredRandomOptions o;
  o.n_ops = 50000;
  o.width = 64;
  o.seed = 7;
  const auto t0 = std::chrono::steady_clock::now();
  const Graph a = make_layered_random(o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("make_layered_random(50000 ops): %.3f s\n", secs);
  EXPECT_EQ(a.num_ops(), 50000u);
  EXPECT_LT(secs, 2.0);
  expect_same(a, make_layered_random(o));
  o.seed = 8;
  const Graph c = make_layered_random(o);
  EXPECT_NE(a.total_flops(), c.total_flops());
  // The expansion of a large graph also works (and stays deterministic in size).
  const auto t1 = std::chrono::steady_clock::now();
  const Graph st = expand_training_step(a);
  const double esecs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  std::printf("expand_training_step(50000 ops -> %zu ops): %.3f s\n", st.num_ops(), esecs);
  EXPECT_GT(st.num_ops(), 2 * a.num_ops());
}

TEST(Synthetic, SameOptionsSameGraph) {
  expect_same(make_mlp({}), make_mlp({}));
  TransformerOptions t;
  t.d_model = 64;
  t.heads = 4;
  expect_same(make_transformer(t), make_transformer(t));
  expect_same(make_chain({}), make_chain({}));
  expect_same(make_layered_random({}), make_layered_random({}));
}

}  // namespace
}  // namespace placer
