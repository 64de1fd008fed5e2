#include "datasets/compiled_kernels.h"

#include <algorithm>

namespace placer {

namespace {

double d(int64_t v) { return static_cast<double>(v); }

// An RMSNorm backward's fixed part beside its passes over [tokens, hidden]: the per-row
// rstd (fp32) and the weight read; the weight gradient as fp32 partial sums, written by the
// main kernel and read by the reduction after it (aten::sum over [512, hidden] in the FIT
// traces), and the gradient written.
double norm_backward_fixed(int64_t tokens, int64_t hidden, DType dtype) {
  const double partials = d(std::min(tokens, kNormGradPartialRows)) * d(hidden) * 4;
  return d(tokens) * 4 + 2 * d(hidden) * dtype_bytes(dtype) + 2 * partials;
}

}  // namespace

// Inductor's mix-order reduction (torch/_inductor/config.py triton.mix_order_reduction, on by
// default outside fbcode; test/inductor/test_mix_order_reduction.py test_rms_norm_bwd) makes
// the backward one kernel: it reads the output gradient(s) and x, writes dx, and reduces the
// weight gradient over its rows into partial sums.
double compiled_rms_norm_backward(int64_t tokens, int64_t hidden, DType dtype, int grad_sums) {
  const double pass = d(tokens) * d(hidden) * dtype_bytes(dtype);
  const int passes = (1 + grad_sums) + 1 + 1;  // gradient(s), x; dx
  return passes * pass + norm_backward_fixed(tokens, hidden, dtype);
}

// The FIT traces' post-attention norm (triton_red_fused_..._add_div_expand_mul_pow_sum): one
// kernel reads the output gradient(s), the gradient of the sum from later in the block and
// both addends (the sum is recomputed) and writes dx; its weight gradient is reduced later,
// fused by mix-order reduction into the next norm's backward kernel, which reads the output
// gradient(s) and the attention output again (the block input it reads anyway).
double compiled_add_rms_norm_backward(int64_t tokens, int64_t hidden, DType dtype, int grad_sums) {
  const double pass = d(tokens) * d(hidden) * dtype_bytes(dtype);
  const int dx_kernel = (1 + grad_sums) + 1 + 2 + 1;
  const int weight_gradient = (1 + grad_sums) + 1;
  return (dx_kernel + weight_gradient) * pass + norm_backward_fixed(tokens, hidden, dtype);
}

// Forward: one kernel each for q and k reads the projection and the cos / sin tables and
// writes the rotated heads in SDPA's layout. Backward (the FIT traces'
// triton_poi_fused_add_cat_mul_neg_slice and ..._transpose_view): the rotate-half gradient
// is written in SDPA's [b, heads, s, d] layout, then read again and written in the
// projection's [b s, heads d]: 4 passes, the tables read twice per tensor.
FusedBytes compiled_rotary(int64_t tokens, int64_t seq, int64_t heads, int64_t kv_heads,
                           int64_t head_dim, DType dtype) {
  const double rotated = d(tokens) * d(heads + kv_heads) * d(head_dim) * dtype_bytes(dtype);
  const double tables = 2 * d(seq) * d(head_dim) * dtype_bytes(dtype);  // cos and sin
  return {2 * rotated + 2 * tables, 4 * rotated + 4 * tables};
}

// Forward: inductor's online softmax (pytorch/pytorch#127011) takes a row's max and sum of
// exponentials in one loop over it; the log-probabilities are a second loop over the row
// (test/inductor/test_online_softmax.py: two loops for log_softmax), from which the loss
// picks each label's: the logits are read twice. The min-cut partitioner keeps the logits
// and the row statistics, so the backward reads the logits once more and writes their
// gradient in their dtype.
FusedBytes compiled_cross_entropy(int64_t tokens, int64_t vocab, DType dtype) {
  const double logits = d(tokens) * d(vocab) * dtype_bytes(dtype);
  const double labels = d(tokens) * 8, stats = 2 * d(tokens) * 4;  // int64; max, sum (fp32)
  return {2 * logits + labels + stats + 4, 2 * logits + labels + stats};
}

}  // namespace placer
