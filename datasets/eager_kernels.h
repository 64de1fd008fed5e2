#pragma once
// The kernels PyTorch eager runs for the element-wise modules of a Hugging Face-style Llama
// (datasets/gpt.h, KernelPreset::kEager), forward and backward, as the measured eager
// traces of datasets/measurements/h200 show them: each kernel's category as the trace rules
// classify it (simulator/calibration/profiler_trace.cpp: a vectorised TensorIterator kernel
// is elementwise, a strided or broadcasting one and every copy into another dtype or layout
// data_movement, sums and means reduction, log-softmax softmax), its dtype (the op's first
// floating input) and its bytes (each input read once, each output written once, as the
// trace rules count them). Internal to datasets/.
#include <cstdint>
#include <vector>

#include "src/graph/kernel_list.h"

namespace placer {

/// An op's kernels, forward and backward.
struct EagerKernels {
  std::vector<KernelWork> forward, backward;
};

/// RMSNorm over `rows` rows of `width` in fp32 steps, x -> (x.float() * rsqrt(mean(x.float()^2)
/// + eps)).type_as(x) * w; its backward also sums the input gradients of `grad_sums` + 1
/// separate linears reading the norm (`grad_sums` additions).
EagerKernels eager_rms_norm(double rows, double width, DType dtype, int grad_sums);
/// Rotate-half rotary, x * cos + cat(-x2, x1) * sin, on q ([tokens, heads, head_dim]) and k
/// ([tokens, kv_heads, head_dim]) with [seq, head_dim] tables; backward also makes the
/// transposed key gradient contiguous for its linear.
EagerKernels eager_rotary(double tokens, double seq, double heads, double kv_heads, double head_dim,
                          DType dtype);
/// Hugging Face's repeat_kv before SDPA: keys and values copied from kv_heads to heads;
/// backward sums the copies back and makes the transposed value gradient contiguous.
EagerKernels eager_repeat_kv(double tokens, double heads, double kv_heads, double head_dim,
                             DType dtype);
/// SwiGLU over `elements` outputs, silu(gate) * up: silu and mul; backward two products and
/// silu's backward.
EagerKernels eager_swiglu(double elements, DType dtype);
/// Cross-entropy on logits.float() ([rows, vocab]): the cast, log-softmax, nll; backward the
/// zeroed gradient, nll's backward, log-softmax's backward and the cast back.
EagerKernels eager_cross_entropy(double rows, double vocab, DType dtype);

}  // namespace placer
