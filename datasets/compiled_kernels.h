#pragma once
// The traffic of the kernels torch.compile (inductor) emits for the ops of the `compile` and
// `compile-blocks` kernel sets (docs/models.md, "Kernel presets"): RMSNorm, the residual add
// fused into it, rotary embedding and cross-entropy. SwiGLU needs nothing here: inductor's
// forward kernel reads gate and up and writes the product, its backward kernel reads the
// output gradient, gate and up and writes both gradients (the FIT traces'
// triton_poi_fused_mul_silu / mul_silu_silu_backward), as the op's tensors already count.
// Internal to datasets/.

#include <cstdint>

#include "src/graph/types.h"

namespace placer {

/// Bytes an op's fused kernels move, forward and backward.
struct FusedBytes {
  double forward = 0, backward = 0;
};

/// Rows of fp32 partial sums in which a norm's backward reduces its weight gradient (the
/// FIT traces: 512 x hidden at 8192 tokens, hidden 2048 and 4096; never more than the tokens).
inline constexpr int64_t kNormGradPartialRows = 512;

/// An RMSNorm's backward over [tokens, hidden] (the forward is its tensors: read x, write
/// the norm). `grad_sums`: gradients of further linears that read the norm (separate q, k, v
/// or gate, up projections), summed inside the kernel.
double compiled_rms_norm_backward(int64_t tokens, int64_t hidden, DType dtype, int grad_sums);

/// The backward of a residual add fused into the RMSNorm of its sum, as above.
double compiled_add_rms_norm_backward(int64_t tokens, int64_t hidden, DType dtype, int grad_sums);

/// Rotary embedding over the queries and keys of `tokens` tokens (`heads` query and
/// `kv_heads` key heads of head_dim) with cos / sin tables of [seq, head_dim].
FusedBytes compiled_rotary(int64_t tokens, int64_t seq, int64_t heads, int64_t kv_heads,
                           int64_t head_dim, DType dtype);

/// Cross-entropy over [tokens, vocab] logits (int64 labels, an fp32 mean).
FusedBytes compiled_cross_entropy(int64_t tokens, int64_t vocab, DType dtype);

}  // namespace placer
