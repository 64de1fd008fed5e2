#pragma once
// Per-op fidelity of a cost profile on PyTorch profiler traces (`placer calibrate check
// --profiler-trace`, docs/calibration.md "Per-op check on profiler traces").
//
//   std::vector<ProfiledOp> ops = profiled_ops(load_profiler_trace("step.json.gz"));
//   (the check itself: profiler_check.h)
//
// One ProfiledOp per launching CPU-op instance (External id) with >= 1 kernel: its FLOPs
// and bytes accessed come from the op's recorded inputs (record_shapes=True: "Input Dims",
// "Input type", "Input Strides", "Concrete Inputs"), by the rules below; its measured time
// is the sum of its kernels' durations (kernel time only, no gaps). gpu_memcpy / gpu_memset
// events are their own rows (kind "memcpy DtoD", "memset", ...), one per CPU op instance
// and kind, and are summarised apart from the kernel rows.
//
// Definitions. es(t) = element size of input t's "Input type" ("float" 4, "c10::BFloat16"
// and "c10::Half" 2, "double" 8, "long int" 8, "int" 4, "short int" 2, "bool",
// "unsigned char", "signed char" and float8 types 1; anything else, e.g. "Scalar", is not a
// tensor). numel(t) = product of its dims (a 0-dim tensor has 1). The bytes read of an input
// are its stored elements x es: dims whose "Input Strides" entry is 0 (an expanded view)
// do not count, so a [1024, 1] index expanded to [1024, 1024] reads 1024 elements. A
// TensorList counts the sum over its members. The output's element size is that of the
// first floating input (else of the first tensor input). FLOPs of memory-bound ops are one
// per output element (they only feed the compute term of the roofline, which such ops
// never reach).
//
// Rules (op names without "aten::"; `bytes` = read + written):
//  - mm(A[m,k], B[k,n]): 2mnk FLOPs; reads A, B, writes m x n.
//    addmm(C, A, B): 2mnk + mn (the C add); reads C, A, B, writes m x n.
//    bmm(A[b,m,k], B[b,k,n]): 2bmnk; reads A, B, writes b x m x n.
//    baddbmm(C, A, B): 2bmnk + bmn; reads C too. linear(X[..,k], W[n,k], bias): 2Mnk (+Mn).
//  - cudnn_convolution(x, w, padding, stride, dilation, groups, ...), convolution /
//    _convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
//    output spatial o = floor((i + 2p - d(k-1) - 1) / s) + 1 (stride, padding, dilation from
//    "Concrete Inputs", defaults 1 / 0 / 1); 2 N K prod(o) (C/g) prod(k) FLOPs; reads x, w
//    (and bias), writes N x K x prod(o). Transposed: 2 N C prod(i) (K/g) prod(k).
//    convolution_backward(dy, x, w, bias_sizes, stride, padding, dilation, transposed,
//    output_padding, groups, output_mask) and cudnn_convolution_backward(x, dy, w, ...,
//    output_mask): the forward FLOPs (from dy's spatial dims) once for each of grad input
//    and grad weight in output_mask (+ numel(dy) for grad bias); reads dy, w when grad
//    input is asked for, x when grad weight is; writes x-, w-sized and K-sized gradients as
//    asked.
//  - Elementwise (the default for every op without a rule below; add, mul, div, sub, gelu,
//    gelu_backward, threshold_backward, native_dropout_backward, _softmax_backward_data,
//    where, ...): reads every tensor input, writes the broadcast shape of the tensor inputs.
//    In-place ops (name ending in '_': add_, mul_, masked_fill_, clamp_min_, ...) write their
//    first input instead. copy_ reads its source and writes its first input (it does not read
//    the destination); fill_ / zero_ / normal_ / uniform_ / bernoulli_ only write their first
//    input. native_dropout also writes a bool mask (1 byte per element).
//    _softmax / _log_softmax: reads the input, writes its shape (4-byte elements when
//    half_to_float).
//  - Normalization: native_layer_norm reads x, weight, bias, writes y and mean + rstd
//    (2 x rows x 4 bytes); native_layer_norm_backward reads every tensor input, writes grad
//    input (x-sized) and grad weight, grad bias (weight-sized) as output_mask asks.
//    native_batch_norm (training) reads x twice (a statistics pass, then the normalize
//    pass) and the C-sized inputs, writes y and 2 x C statistics; cudnn_batch_norm reads x
//    once. native_batch_norm_backward (training) reads dy and x twice (reduce pass, then
//    the elementwise pass); cudnn_batch_norm_backward once; both write dx and 2 x C.
//  - Reductions (sum, mean, amax, amin, max, min, prod, norm, var, std): read the input,
//    write input elements / the reduced dims' sizes (all dims when none are given);
//    FLOPs = input elements.
//  - nll_loss_forward(self[N,C], target[N], ...): reads target and N elements of self,
//    writes N (reduction none) or 1 element + total_weight. nll_loss_backward: reads
//    grad_output, target, total_weight, writes N elements (the kernel scatters into a
//    grad input zeroed by a separate fill_).
//  - gather(self, dim, index) / index_select(self, dim, index): reads the index and as many
//    elements of self as the output has, writes the output (index-shaped / self with dim
//    replaced by the index length). embedding_dense_backward(dy, indices, num_weights, ..):
//    reads dy and indices, writes numel(dy) elements (the touched rows; the zeroing of the
//    whole gradient is a memset row).
//  - max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode): reads x,
//    writes the pooled output and int64 indices; FLOPs = output x kernel area.
//    max_pool2d_with_indices_backward(dy, x, ..., indices): reads dy and indices, writes
//    x-sized grad input.
//  - cat(TensorList, dim): reads the members, writes their total.
//  - arange(start, end, step): writes ceil((end - start) / step) elements of its output type.
//  - _foreach_* (multi_tensor_apply, e.g. AdamW's): L TensorList inputs of E elements each
//    (E = the first list's members; when the profiler did not record TensorList dims, as
//    torch 2.11 does not for foreach ops, E = the kernels' thread blocks x 65536, PyTorch's
//    multi_tensor_apply chunk size: an upper bound, the last chunk of a tensor is partial;
//    +1% to +3% on the GPT steps of datasets/measurements/h100, +30% on ResNet-50);
//    reads L lists, writes one (in place: the first; out of place: a new one):
//    bytes = (L + 1) E es, FLOPs = E. _fused_adam_ / _fused_adamw_ write 3 of their lists.
//  - SDPA ops (_scaled_dot_product_{cudnn,flash,efficient}_attention and their _backward,
//    _{cudnn,flash,efficient}_attention_forward / _backward): FlashAttention's count,
//    forward 4 b h_q d x pairs (s_q s_k; s (s + 1) / 2 when is_causal), backward 2.5 x;
//    forward reads q, k, v, writes the output and the fp32 logsumexp; backward reads its
//    tensor inputs, writes dq, dk, dv.
//  - Inductor kernels (CPU ops named triton_*, inputs = the kernel's arguments): every
//    tensor argument moved once; FLOPs = the product of the element-count Scalars.
//
// DType: the first floating tensor input's ("float" f32, "c10::BFloat16" bf16, "c10::Half"
// f16, "double" f64; for an inductor kernel the floating dtype of most of its elements);
// else (TensorList-only ops) from the first kernel's name ("c10::BFloat16", "c10::Half",
// "double", "float" in its template arguments); else the dtype most of the trace's ops
// have; else the first tensor input's (i64, bool, ...).
// Element sizes of TensorList members follow the dtype.

#include <string>
#include <vector>

#include "simulator/calibration/profiler_trace.h"
#include "simulator/cost_profile.h"
#include "src/cluster/cluster.h"
#include "src/graph/types.h"

namespace placer {

struct ProfiledOp {
  std::string source;     ///< trace file
  long long op_id = -1;   ///< External id of the CPU op instance
  std::string op;         ///< CPU op name, "aten::mm"
  /// "kernel" (the op's kernels, cat "kernel"), or the op's "memcpy DtoD", "memcpy HtoD",
  /// "memcpy DtoH", "memcpy PtoP", "memcpy" (other), "memset" events.
  std::string kind = "kernel";
  OpCategory category = OpCategory::kOther;  ///< classify_kernel(op, first kernel's name)
  DType dtype = DType::kF32;
  double flops = 0;
  double bytes = 0;        ///< bytes read + written (memcpy DtoD: 2 x args "bytes")
  int kernels = 0;         ///< events of this kind the op launched
  double measured_s = 0;   ///< sum of their durations
  std::string rule;        ///< the rule used: "mm", "conv", "elementwise", "foreach", ...
  bool known = true;       ///< false: the op has no rule of its own (generic elementwise)
  bool has_shapes = true;  ///< false: the trace recorded no inputs for the op (bytes 0)
  Phase phase = Phase::kForward;  ///< kBackward for the SDPA backward ops
  /// Attributes of the graph op that stands for the row (attention: head_dim, v_head_dim).
  std::vector<std::pair<std::string, std::string>> attrs;
};

/// The ProfiledOps of one trace, in the order of their first event: kernel rows for ops
/// with >= 1 kernel, memcpy / memset rows after them. Kernels without a CPU op are left
/// out; `notes` (when given) gets one line per such omission and per op name that fell back
/// to the generic rule.
std::vector<ProfiledOp> profiled_ops(const ProfilerTrace& trace,
                                     std::vector<std::string>* notes = nullptr);

}  // namespace placer
