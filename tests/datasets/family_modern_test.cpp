// The modern families: parameter counts of the reference models (torchvision's resnet50,
// vit_b_16 and swin_t), op counts by hand, the FLOPs of ResNet-50 and of Swin's windowed
// scores, the branches of the GNN and of the encoder-decoder's cross attention.

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

TEST(FamilyModern, SwinTMatchesTorchvision) {
  // By hand: the patch Conv (3 x 4 x 4 x 96 + 96) and its LayerNorm (2 x 96); per block of
  // width c with h heads 12 c^2 + 13 c + 169 h (Q, K, V, output and the 4x MLP with biases,
  // two LayerNorms, a 13 x 13 bias table per head); per merge 8 c^2 + 8 c (LayerNorm over
  // 4 c, bias-free reduction to 2 c); the final LayerNorm over 768 and the 1000-way head.
  const int64_t depths[] = {2, 2, 6, 2}, heads[] = {3, 6, 12, 24};
  int64_t want = 3 * 16 * 96 + 96 + 2 * 96, c = 96;
  for (int s = 0; s < 4; ++s) {
    want += depths[s] * (12 * c * c + 13 * c + 169 * heads[s]);
    if (s < 3) {
      want += 8 * c * c + 8 * c;
      c *= 2;
    }
  }
  want += 2 * c + c * 1000 + 1000;
  EXPECT_EQ(want, 28288354);  // torchvision's swin_t
  const Graph g = make_swin();
  EXPECT_EQ(params(g), static_cast<uint64_t>(want));
  // Patch Conv and norm; 14 ops a block; 3 ops a merge; final norm, pool, fc, loss.
  EXPECT_EQ(g.num_ops(), 2u + 12 * 14 + 3 * 3 + 4);
  // Stage 0's scores: 64 windows of 49 tokens per image, 3 heads.
  const OpId sc = g.find_op("stages.0.blocks.0.attn.scores");
  ASSERT_NE(sc, kNoOp);
  EXPECT_DOUBLE_EQ(g.op(sc).flops, 2.0 * 32 * 56 * 56 * 49 * 96);
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
