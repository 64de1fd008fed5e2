#pragma once
// Sequence families without recurrence cells: Transformer-XL stacks (Dai et al. 2019) and
// WaveNet stacks (van den Oord et al. 2016), both GDP benchmarks (Zhou et al. 2019).

#include <cstdint>
#include <string>

#include "src/graph/graph.h"

namespace placer {

/// Transformer-XL: one training segment of seq_len tokens attending over mem_len cached
/// hidden states of the previous segment (graph inputs "mems.<l>" [b, M, d]: the cache is
/// not differentiated, as in the paper), with relative position encodings, post-norm.
/// Per layer l (scope "layers.<l>", 19 ops):
///   attention.mem_concat (Concat mems, h -> [b, M+S, d]), attention.q (MatMul on h),
///   attention.k, attention.v (MatMul on the concatenation), attention.r (MatMul of the
///   position embeddings [M+S, d]; not batch-scaled), attention.ac (MatMul q.k: content
///   scores), attention.bd (MatMul q.r: position scores), attention.rel_shift (Slice),
///   attention.scores (Add), attention.softmax, attention.context (MatMul),
///   attention.output.dense, attention.output.residual (Add), attention.output.layernorm,
///   ff.dense1 (d -> ffn), ff.relu, ff.dense2 (ffn -> d), ff.residual, ff.layernorm.
/// Plus embedding (Gather), lm_head (MatMul to vocab) and the loss: 19 * layers + 3 ops.
/// FLOPs per layer, K = M + S: MatMuls 2bSd^2 (q) + 4bKd^2 (k, v) + 2Kd^2 (r) +
/// 6bSKd (ac, bd, context) + 2bSd^2 (output) + 4bSd*ffn; no projection biases except
/// in the feed-forward; the u, v biases (d each) are parameters of ac / bd.
struct TransformerXlOptions {
  int layers = 4;
  int64_t d_model = 512;
  int64_t heads = 8;      ///< must divide d_model
  int64_t ffn = 0;        ///< 0 = 4 * d_model
  int64_t seq_len = 128;  ///< segment length S
  int64_t mem_len = 128;  ///< memory length M (>= 0)
  int64_t batch = 16;
  int64_t vocab = 32000;
  DType dtype = DType::kF16;
  std::string name = "transformer_xl";
};
Graph make_transformer_xl(const TransformerXlOptions& options = {});

/// WaveNet: a causal input conv, stacks x layers_per_stack residual blocks with dilation
/// 2^i (i = layer in stack), a sum of the skip connections and a 1x1-conv head over
/// `quantization` classes per sample. Tensors [b, C, T]. Block (scope
/// "stacks.<s>.layers.<i>", layer s * layers_per_stack + i, 8 ops): filter and gate
/// (Conv, kernel `kernel`, R -> D, dilated), tanh, sigmoid, gated (Mul), residual.conv
/// (1x1, D -> R), residual.add, skip.conv (1x1, D -> skip). The last block has no residual
/// conv / add (nothing reads them). Head: skip.sum (Add of all skips), head.relu1,
/// head.conv1 (1x1 skip -> skip), head.relu2, head.conv2 (1x1 skip -> Q), loss.
/// Ops: 8 * blocks + 5 (input conv, head 5, loss: 1 + 8n - 2 + 5 + 1). Convs have biases.
struct WaveNetOptions {
  int stacks = 2;
  int layers_per_stack = 10;
  int64_t residual_channels = 64;  ///< R
  int64_t dilation_channels = 0;   ///< D; 0 = R
  int64_t skip_channels = 256;
  int64_t quantization = 256;  ///< Q: mu-law classes (input one-hot and output)
  int64_t kernel = 2;
  int64_t samples = 8000;  ///< T: audio samples per example
  int64_t batch = 4;
  DType dtype = DType::kF32;
  std::string name = "wavenet";
};
Graph make_wavenet(const WaveNetOptions& options = {});

}  // namespace placer
