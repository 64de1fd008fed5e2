#pragma once
// GDP's placer network (Zhou et al. 2019): a Transformer-XL (Dai et al. 2019) over the
// nodes of a graph in topological order, processed in segments with segment-level
// recurrence and relative positional encoding (no absolute positional embedding).
//
// Choices (see docs/models_nn.md, "Transformer-XL"):
//  - No causal mask: a query sees its whole segment plus the memory (placement is not
//    autoregressive over nodes). An optional explicit mask is accepted for tests/ablations.
//  - Relative distances are therefore signed: R covers klen-1 .. -(qlen-1).
//  - Post-norm (LayerNorm after each residual), as in the reference Transformer-XL.

#include <cstdint>
#include <vector>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace placer {

/// Hyper-parameters of the Transformer-XL encoder.
struct TransformerXLOptions {
  /// Model width d and number of attention heads (d must be divisible by heads).
  TransformerXLOptions(int64_t d_model, int64_t heads);
  /// Width of the hidden state.
  TORCH_ARG(int64_t, d_model);
  /// Number of attention heads.
  TORCH_ARG(int64_t, heads);
  /// Number of stacked layers.
  TORCH_ARG(int64_t, layers) = 2;
  /// Inner width of the position-wise feed-forward net (default 4*d_model).
  TORCH_ARG(int64_t, ffn);
  /// Segment length used by forward_sequence.
  TORCH_ARG(int64_t, segment) = 128;
  /// Number of past hidden states kept per layer as memory.
  TORCH_ARG(int64_t, mem_len) = 128;
  /// Dropout on attention probabilities and feed-forward outputs.
  TORCH_ARG(double, dropout) = 0.0;
  /// forward_sequence batches segments per call so that one call's attention scores stay
  /// near this many floats (>= one segment per call). Bounds memory; results do not change.
  TORCH_ARG(int64_t, max_scores) = int64_t(1) << 24;
};

/// Output of one segment: hidden states and the next memories (one per layer, detached).
struct TransformerXLOutput {
  /// [T, d] output of the last layer.
  torch::Tensor out;
  /// Per layer, [M, d] inputs of that layer (M <= mem_len), gradient-stopped.
  std::vector<torch::Tensor> mems;
};

/// The rel-shift trick: x [..., qlen, klen+qlen-1] scored against R ordered by distance
/// klen-1 .. -(qlen-1) becomes [..., qlen, klen], out[i][j] at distance (klen-qlen+i) - j.
torch::Tensor rel_shift(const torch::Tensor& x, int64_t klen);

/// Sinusoid embeddings of the (signed) distances klen-1 down to -(qlen-1): [klen+qlen-1, d],
/// computed in float on options' device, returned in options' dtype (default: float, CPU).
torch::Tensor relative_sinusoids(int64_t qlen, int64_t klen, int64_t d,
                                 const torch::TensorOptions& options = {});

/// One Transformer-XL layer: relative multi-head attention + feed-forward, post-norm.
class TransformerXLLayerImpl : public torch::nn::Module {
 public:
  /// Builds the layer's parameters from the shared options.
  explicit TransformerXLLayerImpl(const TransformerXLOptions& options);
  /// h [T, d] attends over cat(mem [M, d], h); mask [T, M+T] bool (true = blocked) optional.
  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& mem,
                        const torch::Tensor& mask = {});
  /// All segments at once: h [S, T, d] (segment s = rows sT .. sT+T-1 of the sequence),
  /// mem [S, M, d] (gradient-stopped memory of each segment), key_valid [S, M+T] bool
  /// (false = padding / no memory yet). Same maths as forward() per segment.
  torch::Tensor forward_segments(const torch::Tensor& h, const torch::Tensor& mem,
                                 const torch::Tensor& key_valid);

  /// Options the layer was built with.
  TransformerXLOptions options;
  /// Query/key/value projection d -> 3*d (no bias, as in Transformer-XL).
  torch::nn::Linear qkv{nullptr};
  /// Projection of the relative sinusoids R.
  torch::nn::Linear r_net{nullptr};
  /// Attention output projection.
  torch::nn::Linear o_net{nullptr};
  /// Global content bias u [heads, d_head].
  torch::Tensor r_w_bias;
  /// Global position bias v [heads, d_head].
  torch::Tensor r_r_bias;
  /// Norm after the attention residual.
  torch::nn::LayerNorm norm1{nullptr};
  /// Feed-forward first and second linear maps.
  torch::nn::Linear ff1{nullptr}, ff2{nullptr};
  /// Norm after the feed-forward residual.
  torch::nn::LayerNorm norm2{nullptr};
  /// Dropout on attention probabilities and FFN outputs.
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(TransformerXLLayer);

/// Stack of Transformer-XL layers with segment-level recurrence.
class TransformerXLImpl : public torch::nn::Module {
 public:
  /// Builds options.layers() layers.
  explicit TransformerXLImpl(const TransformerXLOptions& options);
  /// One segment x [T, d] with memories (empty vector = no memory); mask optional,
  /// [T, M+T] bool (true = blocked), shared by all layers (all memories must have length M).
  TransformerXLOutput forward(const torch::Tensor& x, const std::vector<torch::Tensor>& mems = {},
                              const torch::Tensor& mask = {});
  /// A long sequence x [N, d] cut into segments of options.segment(), memories carried over;
  /// returns out [N, d] and the memories after the last segment.
  ///
  /// Computed layer by layer with all segments batched: with segment-level recurrence the
  /// memory of segment s at layer l is the last mem_len rows of layer l's input before
  /// segment s, which is known once layer l-1 has run over every segment. The result equals
  /// forward_sequence_stepwise() (segment after segment) up to float rounding; a graph of N
  /// nodes costs 2 x layers batched calls instead of N / segment x layers small ones.
  TransformerXLOutput forward_sequence(const torch::Tensor& x);
  /// The same, one segment after the other through forward() (the reference for tests).
  TransformerXLOutput forward_sequence_stepwise(const torch::Tensor& x);

  /// Options the network was built with.
  TransformerXLOptions options;
  /// The layers, bottom first.
  std::vector<TransformerXLLayer> layers;
};
TORCH_MODULE(TransformerXL);

/// Feature conditioning by parameter superposition (GDP): x' = relu(g(c(x0) * x)).
class SuperpositionImpl : public torch::nn::Module {
 public:
  /// d: node feature width; cond_dim: width of the graph-level conditioning vector x0.
  SuperpositionImpl(int64_t d, int64_t cond_dim);
  /// x [N, d], x0 [cond_dim] or [1, cond_dim] -> [N, d].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& x0);

  /// c: linear map of the conditioning vector to per-feature gates.
  torch::nn::Linear c{nullptr};
  /// g: linear map applied to the gated features (followed by ReLU).
  torch::nn::Linear g{nullptr};
};
TORCH_MODULE(Superposition);

/// Per-node device logits over max_devices; unavailable devices get -inf.
class DeviceHeadImpl : public torch::nn::Module {
 public:
  /// d: hidden width; max_devices: the largest device count one network serves.
  DeviceHeadImpl(int64_t d, int64_t max_devices);
  /// h [N, d], available bool [max_devices] or [N, max_devices] -> logits [N, max_devices].
  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& available);
  /// The first num_devices devices available: bool [max_devices], on `device`.
  torch::Tensor first_devices(int64_t num_devices, torch::Device device = torch::kCPU) const;

  /// Maximum device count.
  int64_t max_devices;
  /// Linear map to logits.
  torch::nn::Linear proj{nullptr};
};
TORCH_MODULE(DeviceHead);

}  // namespace placer
