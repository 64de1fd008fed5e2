#pragma once
// Generators for architecture families that the placement literature's suites lack but
// real training fleets run: ResNet-style CNNs with bottleneck blocks (He et al. 2016),
// Vision Transformers (Dosovitskiy et al. 2021), windowed Swin Transformers (Liu et al.
// 2021), encoder-decoder Transformers with cross attention (Vaswani et al. 2017) and
// message-passing GNNs over batches of graphs (GCN / GAT-style, Kipf & Welling 2017,
// Velickovic et al. 2018). They mirror the models scripts/export_corpus_models.py exports
// (torchvision ResNets, ViT, nn.Transformer, GCNs) and torchvision's swin_t, so a corpus can
// be split by family without torch on the machine. Costs follow datasets/synthetic.h's
// conventions.

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

/// Stem (7x7 Conv stride 2, BatchNorm, Relu, MaxPool), four stages of bottleneck blocks
/// (1x1, 3x3, 1x1 Convs with BatchNorm, a projection shortcut in each stage's first block,
/// Add, Relu; stages 2-4 stride 2), GlobalAveragePool, a classifier and the loss.
/// blocks = {3, 4, 6, 3} and width 64 is ResNet-50 (25,557,032 parameters, as torchvision's).
struct ResNetOptions {
  std::vector<int> blocks = {3, 4, 6, 3};
  int64_t width = 64;  ///< bottleneck channels of stage 0 (outputs 4x, doubling per stage)
  int64_t image = 224;
  int64_t classes = 1000;
  int64_t batch = 32;
  DType dtype = DType::kF32;
  std::string name = "resnet";
};
Graph make_resnet(const ResNetOptions& options = {});

/// Patch embedding (a Conv of stride = patch), a class token and learned positions, `layers`
/// pre-norm encoder blocks (LayerNorm, Q / K / V MatMuls, scores, Softmax, context, output
/// projection, residual Add, LayerNorm, MLP with Gelu, residual Add), a final LayerNorm, the
/// class token's head and the loss. ViT-B/16: layers 12, d_model 768, heads 12, patch 16
/// (86,567,656 parameters, as torchvision's vit_b_16).
struct VitOptions {
  int layers = 12;
  int64_t d_model = 768;
  int64_t heads = 12;
  int64_t patch = 16;
  int64_t image = 224;
  int64_t classes = 1000;
  int64_t batch = 32;
  DType dtype = DType::kF32;
  std::string name = "vit";
};
Graph make_vit(const VitOptions& options = {});

/// Swin Transformer (Liu et al. 2021): a patch-embedding Conv and LayerNorm, four stages of
/// pre-norm blocks of windowed multi-head attention (Q / K / V over windows of window^2
/// tokens, a relative position bias table of (2 window - 1)^2 x heads per block, the odd
/// blocks' windows shifted) and a 4x MLP with Gelu, stages joined by patch merging (the 2x2
/// neighbours concatenated, a LayerNorm over 4 dim, a bias-free reduction to 2 dim); a final
/// LayerNorm, average pool, classifier and the loss. Swin-T: embed 96, depths {2, 2, 6, 2},
/// heads {3, 6, 12, 24}, window 7, patch 4 (28,288,354 parameters, as torchvision's swin_t).
struct SwinOptions {
  int64_t embed = 96;  ///< width of stage 0 (doubling per stage)
  std::vector<int> depths = {2, 2, 6, 2};
  std::vector<int64_t> heads = {3, 6, 12, 24};
  int64_t window = 7;
  int64_t patch = 4;
  int64_t image = 224;
  int64_t classes = 1000;
  int64_t batch = 32;
  DType dtype = DType::kF32;
  std::string name = "swin";
};
Graph make_swin(const SwinOptions& options = {});

/// Source and target embeddings, `encoder_layers` post-norm encoder blocks, then
/// `decoder_layers` decoder blocks of self attention, cross attention over the encoder's
/// output (its K / V projections read the encoder output: every decoder layer branches back
/// to it) and the FFN; the vocabulary projection and the loss.
struct EncDecOptions {
  int encoder_layers = 6;
  int decoder_layers = 6;
  int64_t d_model = 512;
  int64_t heads = 8;
  int64_t seq_len = 128;  ///< source and target length
  int64_t vocab = 32000;
  int64_t batch = 16;
  DType dtype = DType::kF32;
  std::string name = "encdec";
};
Graph make_encdec(const EncDecOptions& options = {});

/// `layers` multi-head message-passing layers (GAT / GCN style) over a batch of graphs of
/// `nodes` nodes each (features [batch, nodes, features], a dense normalised adjacency
/// [batch, nodes, nodes]): per layer `heads` parallel branches (a projection MatMul, then
/// the adjacency MatMul aggregating the neighbours), their Concat, the residual (a
/// projection MatMul when the width changes) Add and a Relu; a mean readout, the classifier
/// and the loss.
struct GnnOptions {
  int layers = 4;
  int64_t heads = 4;
  int64_t hidden = 256;
  int64_t features = 128;
  int64_t nodes = 256;
  int64_t classes = 16;
  int64_t batch = 16;
  DType dtype = DType::kF32;
  std::string name = "gnn";
};
Graph make_gnn(const GnnOptions& options = {});

}  // namespace placer
