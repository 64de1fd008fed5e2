#include "datasets/family_seq.h"

#include <gtest/gtest.h>

#include "src/util/error.h"
#include "tests/datasets/family_test_util.h"

namespace placer {
namespace {

using testing::count_type;
using testing::expect_well_formed;
using testing::fp;

TEST(FamilyTransformerXl, HandCountedOneLayer) {
  TransformerXlOptions o;
  o.layers = 1;
  o.d_model = 4;
  o.heads = 2;
  o.ffn = 8;
  o.seq_len = 2;
  o.mem_len = 3;  // K = 5 keys per query
  o.batch = 1;
  o.vocab = 10;
  const Graph g = make_transformer_xl(o);
  EXPECT_EQ(g.num_ops(), 19u + 3);
  // Embedding 40; q, k, v, r 4*16; u, v biases 4 + 4; output 16; 2 layernorms 8 + 8;
  // ff 40 + 36; lm_head 40 (f16).
  EXPECT_EQ(g.total_param_bytes(), 260u * 2);
  // embedding 8, q 64, k + v 320, r 160, ac + bd + context 240, scores 20, softmax 100,
  // output 64, residual 8, layernorm 64, ff1 128, relu 16, ff2 128, residual 8,
  // layernorm 64, lm_head 160, loss 100.
  EXPECT_DOUBLE_EQ(g.total_flops(), 1652);
  const Op& r = g.op(g.find_op("layers.0.attention.r"));
  EXPECT_FALSE(r.batch_scaled);
  EXPECT_FALSE(g.tensor(r.outputs[0]).batch_scaled);
  const Op& cat = g.op(g.find_op("layers.0.attention.mem_concat"));
  EXPECT_EQ(g.tensor(cat.outputs[0]).shape, (std::vector<int64_t>{1, 5, 4}));
  EXPECT_EQ(g.tensor(g.op(g.find_op("layers.0.attention.ac")).outputs[0]).shape,
            (std::vector<int64_t>{1, 2, 2, 5}));
  expect_well_formed(g);
}

TEST(FamilyTransformerXl, LayersScaleAndChecks) {
  TransformerXlOptions o;
  o.layers = 16;
  const Graph g = make_transformer_xl(o);
  EXPECT_EQ(g.num_ops(), 19u * 16 + 3);
  EXPECT_EQ(count_type(g, "Softmax"), 16u);
  EXPECT_EQ(fp(g), fp(make_transformer_xl(o)));
  o.mem_len = 256;
  EXPECT_NE(fp(g), fp(make_transformer_xl(o)));
  o.heads = 7;
  EXPECT_THROW(make_transformer_xl(o), Error);
}

TEST(FamilyWaveNet, HandCountedTwoBlocks) {
  WaveNetOptions o;
  o.stacks = 1;
  o.layers_per_stack = 2;
  o.residual_channels = 2;
  o.skip_channels = 3;
  o.quantization = 4;
  o.kernel = 2;
  o.samples = 5;
  o.batch = 1;
  const Graph g = make_wavenet(o);
  EXPECT_EQ(g.num_ops(), 8u * 2 + 5);
  // Input conv 18; block 0: filter 10, gate 10, residual 6, skip 9; block 1 (last): no
  // residual conv; head convs 12 + 16.
  EXPECT_EQ(g.total_param_bytes(), 110u * 4);
  // Input conv 160; block 0 360, block 1 310; head 15 + 15 + 90 + 15 + 120, loss 100.
  EXPECT_DOUBLE_EQ(g.total_flops(), 160 + 360 + 310 + 355);
  EXPECT_EQ(g.find_op("stacks.0.layers.1.residual.conv"), kNoOp);
  const Op& f1 = g.op(g.find_op("stacks.0.layers.1.filter"));
  ASSERT_EQ(f1.attrs.size(), 1u);
  EXPECT_EQ(f1.attrs[0].second, "2");  // dilation 2^1
  EXPECT_EQ(g.op(g.find_op("head.skip.sum")).inputs.size(), 2u);
  expect_well_formed(g);
}

TEST(FamilyWaveNet, StacksAndChecks) {
  WaveNetOptions o;
  o.stacks = 3;
  o.layers_per_stack = 10;
  const Graph g = make_wavenet(o);
  EXPECT_EQ(g.num_ops(), 8u * 30 + 5);
  const Op& last = g.op(g.find_op("stacks.2.layers.9.gate"));
  EXPECT_EQ(last.attrs[0].second, "512");
  EXPECT_EQ(last.layer, 29);
  EXPECT_EQ(fp(g), fp(make_wavenet(o)));
  o.samples = 0;
  EXPECT_THROW(make_wavenet(o), Error);
}

}  // namespace
}  // namespace placer
