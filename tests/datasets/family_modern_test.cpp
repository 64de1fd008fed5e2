// The modern families: parameter counts of the reference models (torchvision's resnet50 and
// vit_b_16), op counts by hand, the FLOPs of ResNet-50, the branches of the GNN and of the
// encoder-decoder's cross attention.

#include "datasets/family_modern.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace placer {
namespace {

uint64_t params(const Graph& g) {
  uint64_t bytes = 0;
  for (OpId o = 0; o < g.num_ops(); ++o) bytes += g.op(o).param_bytes;
  return bytes / 4;  // f32
}

TEST(FamilyModern, ResNet50MatchesTorchvision) {
  const Graph g = make_resnet();
  EXPECT_EQ(params(g), 25557032u);
  // Stem 4 ops, 16 blocks of 10 (+2 for the projection of each stage's first), pool, fc, loss.
  EXPECT_EQ(g.num_ops(), 4u + 16 * 10 + 4 * 2 + 2 + 1);
  double conv = 0;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    if (g.op(o).type == "Conv") conv += g.op(o).flops;
  }
  // About 4.1 G multiply-adds per 224 x 224 image.
  EXPECT_NEAR(conv / 32 / 8.18e9, 1.0, 0.02);
}

TEST(FamilyModern, VitB16MatchesTorchvision) {
  const Graph g = make_vit();
  EXPECT_EQ(params(g), 86567656u);
  // Class token, patch Conv, Concat, positions; 14 ops a block; final norm, Slice, fc, loss.
  EXPECT_EQ(g.num_ops(), 4u + 12 * 14 + 4);
}

TEST(FamilyModern, EncoderDecoderCrossAttendsTheEncoderOutput) {
  EncDecOptions o;
  o.encoder_layers = 2;
  o.decoder_layers = 3;
  const Graph g = make_encdec(o);
  // Embeddings 2; encoder blocks 14 ops, decoder blocks 23; generator and loss.
  EXPECT_EQ(g.num_ops(), 2u + 2 * 14 + 3 * 23 + 2);
  // The last encoder norm feeds every decoder layer's cross-attention K and V.
  const OpId memory = g.find_op("encoder.layers.1.ff.layernorm");
  ASSERT_NE(memory, kNoOp);
  EXPECT_EQ(g.succs(memory).size(), 2u * 3);
}

TEST(FamilyModern, GnnHasParallelHeadBranches) {
  GnnOptions o;
  o.layers = 3;
  o.heads = 4;
  o.features = 64;
  o.hidden = 128;
  const Graph g = make_gnn(o);
  // Per layer 2 x heads + Concat, Add, Relu (+ the skip projection in the first); readout
  // 2; loss.
  EXPECT_EQ(g.num_ops(), 3u * (2 * 4 + 3) + 1 + 2 + 1);
  EXPECT_EQ(g.op(g.find_op("layers.1.concat")).inputs.size(), 4u);
  EXPECT_EQ(g.succs(g.find_op("layers.0.relu")).size(), 4u + 1);  // the heads and the residual
}

}  // namespace
}  // namespace placer
