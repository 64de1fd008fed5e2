// Profiled ops of a current Llama step (torch 2.11 on an H200): cuDNN / FlashAttention SDPA
// ops, inductor's generated kernels, PyTorch's vectorised against strided element-wise
// kernels. Hand-made trace snippets with the argument layouts of the measured traces
// (datasets/measurements/h200/traces); every number hand-computed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "simulator/calibration/fit.h"
#include "simulator/calibration/profiler_ops.h"
#include "simulator/calibration/profiler_trace.h"
#include "simulator/cost_profile.h"
#include "src/io/cluster_yaml.h"

namespace placer {
namespace {

const ProfiledOp& row(const std::vector<ProfiledOp>& rows, const std::string& op) {
  for (const ProfiledOp& r : rows) {
    if (r.op == op && r.kind == "kernel") return r;
  }
  ADD_FAILURE() << "no kernel row for " << op;
  static const ProfiledOp none;
  return none;
}

// cuDNN attention forward and backward (causal, GQA: 8 query heads, 2 kv heads, s 4, d 16,
// batch 2, [b, h, s, d]), FlashAttention's own forward ([b, s, h, d], not causal), an
// inductor RMSNorm reduction and rotary pointwise kernel, aten::mul through the vectorised
// and the strided kernel, aten::neg through the strided one.
const char* const kLlamaTrace = R"json({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::_cudnn_attention_forward", "ts": 1, "dur": 1,
   "args": {"External id": 1,
    "Input Dims": [[2, 8, 4, 16], [2, 2, 4, 16], [2, 2, 4, 16], [], [], [], [], [], [], [], [], [], []],
    "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", "", "Scalar", "Scalar",
                   "Scalar", "Scalar", "Scalar", "Scalar", ""],
    "Concrete Inputs": ["", "", "", "", "", "", "4", "4", "True", "0.", "True", "False", ""]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::_cudnn_attention_backward", "ts": 1, "dur": 1,
   "args": {"External id": 2,
    "Input Dims": [[2, 8, 4, 16], [2, 8, 4, 16], [2, 2, 4, 16], [2, 2, 4, 16], [2, 8, 4, 16],
                   [2, 8, 4, 1], [], [], [], [], [], [], [], [], [], []],
    "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16",
                   "c10::BFloat16", "float", "long int", "long int", "", "", "", "Scalar",
                   "Scalar", "Scalar", "Scalar", ""],
    "Concrete Inputs": ["", "", "", "", "", "", "", "", "", "", "", "4", "4", "0.", "True", ""]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::_flash_attention_forward", "ts": 1, "dur": 1,
   "args": {"External id": 3,
    "Input Dims": [[1, 8, 2, 16], [1, 8, 2, 16], [1, 8, 2, 16], [], [], [], [], [], [], [], []],
    "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", "Scalar", "Scalar",
                   "Scalar", "Scalar", "Scalar", ""],
    "Concrete Inputs": ["", "", "", "", "", "8", "8", "0.", "False", "False", ""]}},
  {"ph": "X", "cat": "cpu_op", "name": "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0",
   "ts": 1, "dur": 1, "args": {"External id": 4,
    "Input Dims": [[4, 1], [4, 8], [8], [4, 8], [], []],
    "Input type": ["float", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"],
    "Concrete Inputs": ["", "", "", "", "4", "8"]}},
  {"ph": "X", "cat": "cpu_op", "name": "triton_poi_fused_add_cat_mul_neg_slice_transpose_5",
   "ts": 1, "dur": 1, "args": {"External id": 5,
    "Input Dims": [[2, 4], [2, 4], []], "Input type": ["c10::BFloat16", "c10::BFloat16", "Scalar"],
    "Concrete Inputs": ["", "", "8"]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "ts": 1, "dur": 1, "args": {"External id": 6,
    "Input Dims": [[64], [64]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "ts": 1, "dur": 1, "args": {"External id": 7,
    "Input Dims": [[64], [64]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::neg", "ts": 1, "dur": 1, "args": {"External id": 8,
    "Input Dims": [[64]], "Input type": ["c10::BFloat16"]}},
  {"ph": "X", "cat": "kernel", "name": "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0",
   "ts": 10, "dur": 10, "args": {"External id": 1}},
  {"ph": "X", "cat": "kernel", "name": "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x128_1x4x1_cga1x1x1_kernel0_0",
   "ts": 20, "dur": 20, "args": {"External id": 2}},
  {"ph": "X", "cat": "kernel", "name": "void cudnn::fusion::compute_dot_do_o_specialized<true, 128>(void const*)",
   "ts": 40, "dur": 2, "args": {"External id": 2}},
  {"ph": "X", "cat": "kernel", "name": "void cudnn::fusion::convert_dq_to_16bits<true>(void const*, void*)",
   "ts": 42, "dur": 1, "args": {"External id": 2}},
  {"ph": "X", "cat": "kernel", "name": "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128>>(Flash_fwd_params)",
   "ts": 43, "dur": 5, "args": {"External id": 3}},
  {"ph": "X", "cat": "kernel", "name": "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0",
   "ts": 48, "dur": 2, "args": {"External id": 4}},
  {"ph": "X", "cat": "kernel", "name": "triton_poi_fused_add_cat_mul_neg_slice_transpose_5",
   "ts": 50, "dur": 2, "args": {"External id": 5}},
  {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<8, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >(int)",
   "ts": 52, "dur": 2, "args": {"External id": 6}},
  {"ph": "X", "cat": "kernel", "name": "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >(int)",
   "ts": 54, "dur": 3, "args": {"External id": 7}},
  {"ph": "X", "cat": "kernel", "name": "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::neg_kernel_cuda(at::TensorIteratorBase&)> >(int)",
   "ts": 57, "dur": 3, "args": {"External id": 8}}]})json";

TEST(ProfiledLlamaOps, KernelNamesToCategories) {
  // cuDNN's SDPA kernels say "fprop" / "bprop" as its convolutions do: attention first.
  EXPECT_EQ(classify_kernel("", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16"),
            OpCategory::kAttention);
  EXPECT_EQ(classify_kernel("aten::_cudnn_attention_backward", "cudnn::fusion::convert_dq"),
            OpCategory::kAttention);
  EXPECT_EQ(classify_kernel("", "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"),
            OpCategory::kAttention);
  EXPECT_EQ(classify_kernel("", "sm80_xmma_fprop_implicit_gemm_indexed_f16f16"), OpCategory::kConv);
  // Inductor's kernels by their kind, not by the ops fused into them.
  EXPECT_EQ(
      classify_kernel("triton_poi_fused__unsafe_view_add_cat_mul_neg_split_transpose_view_1", ""),
      OpCategory::kElementwise);
  EXPECT_EQ(classify_kernel("triton_per_fused__to_copy_add_div_expand_mul_pow_sum_view_7", ""),
            OpCategory::kNormalization);
  EXPECT_EQ(classify_kernel("triton_red_fused_sum_3", ""), OpCategory::kReduction);
  EXPECT_EQ(classify_kernel("triton_per_fused__softmax_2", ""), OpCategory::kSoftmax);
  EXPECT_EQ(classify_kernel("triton_tem_fused_mm_0", ""), OpCategory::kMatMul);
  // PyTorch's element-wise kernels: vectorised = element-wise, strided = data movement,
  // whichever op launched them (copy_ too).
  EXPECT_EQ(
      classify_kernel("aten::copy_", "at::native::vectorized_elementwise_kernel<8, bf16_copy>"),
      OpCategory::kElementwise);
  EXPECT_EQ(classify_kernel("aten::add", "void at::native::elementwise_kernel<128, 2, f>"),
            OpCategory::kDataMovement);
  EXPECT_EQ(classify_kernel("aten::copy_", "void at::native::unrolled_elementwise_kernel<copy>"),
            OpCategory::kDataMovement);
  // cuBLAS's sm90 GEMMs and multi-tensor AdamW stay as they were.
  EXPECT_EQ(classify_kernel("aten::mm", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"),
            OpCategory::kMatMul);
  EXPECT_EQ(classify_kernel("aten::_foreach_addcdiv_", "multi_tensor_apply_kernel<float>"),
            OpCategory::kOptimizer);
}

TEST(ProfiledLlamaOps, AttentionWorkFromTheRecordedShapes) {
  const std::vector<ProfiledOp> rows = profiled_ops(parse_profiler_trace(kLlamaTrace, "t.json"));
  // Forward, causal: 4 b h_q d x s (s + 1) / 2 = 4 x (2 x 8 x 16) x 10; reads q (1024
  // elements), k and v (256 each), writes the output (1024) in bf16 and the fp32
  // logsumexp (2 x 8 x 4 = 64 values).
  const ProfiledOp& fwd = row(rows, "aten::_cudnn_attention_forward");
  EXPECT_EQ(fwd.category, OpCategory::kAttention);
  EXPECT_EQ(fwd.dtype, DType::kBF16);
  EXPECT_EQ(fwd.rule, "attention");
  EXPECT_DOUBLE_EQ(fwd.flops, 10240);
  EXPECT_DOUBLE_EQ(fwd.bytes, (1024 + 256 + 256 + 1024) * 2 + 64 * 4);
  EXPECT_DOUBLE_EQ(fwd.measured_s, 10e-6);
  // Backward: 2.5 x the forward; reads grad_out, q, k, v, out (bf16), the logsumexp and
  // two 0-dim int64 philox values, writes dq, dk, dv. Its three kernels are one row.
  const ProfiledOp& bwd = row(rows, "aten::_cudnn_attention_backward");
  EXPECT_EQ(bwd.category, OpCategory::kAttention);
  EXPECT_DOUBLE_EQ(bwd.flops, 25600);
  EXPECT_DOUBLE_EQ(bwd.bytes, (3 * 1024 + 2 * 256) * 2 + 64 * 4 + 2 * 8 + (1024 + 2 * 256) * 2);
  EXPECT_EQ(bwd.kernels, 3);
  EXPECT_DOUBLE_EQ(bwd.measured_s, 23e-6);
  // FlashAttention's own op, [b, s, h, d] and not causal: 4 x (1 x 2 x 16) x 8 x 8.
  const ProfiledOp& flash = row(rows, "aten::_flash_attention_forward");
  EXPECT_EQ(flash.category, OpCategory::kAttention);
  EXPECT_DOUBLE_EQ(flash.flops, 8192);
}

TEST(ProfiledLlamaOps, InductorKernelsMoveTheirArgumentsOnce) {
  const std::vector<ProfiledOp> rows = profiled_ops(parse_profiler_trace(kLlamaTrace, "t.json"));
  // RMSNorm: rstd out (4 fp32), x in and y out (32 bf16 each), weight (8 bf16); the
  // elements are the Scalars' product, 4 x 8; the dtype is the bulk's, bf16, not the
  // fp32 of the first argument.
  const ProfiledOp& norm = row(rows, "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0");
  EXPECT_EQ(norm.category, OpCategory::kNormalization);
  EXPECT_EQ(norm.dtype, DType::kBF16);
  EXPECT_EQ(norm.rule, "triton");
  EXPECT_DOUBLE_EQ(norm.bytes, 4 * 4 + 32 * 2 + 8 * 2 + 32 * 2);
  EXPECT_DOUBLE_EQ(norm.flops, 32);
  const ProfiledOp& rope = row(rows, "triton_poi_fused_add_cat_mul_neg_slice_transpose_5");
  EXPECT_EQ(rope.category, OpCategory::kElementwise);
  EXPECT_DOUBLE_EQ(rope.bytes, 2 * 8 * 2);
  EXPECT_DOUBLE_EQ(rope.flops, 8);
}

TEST(ProfiledLlamaOps, StridedKernelsAreDataMovement) {
  const std::vector<ProfiledOp> rows = profiled_ops(parse_profiler_trace(kLlamaTrace, "t.json"));
  int vectorised = 0, strided = 0;
  for (const ProfiledOp& r : rows) {
    if (r.op != "aten::mul" && r.op != "aten::neg") continue;
    EXPECT_DOUBLE_EQ(r.bytes, r.op == "aten::mul" ? 3 * 64 * 2 : 2 * 64 * 2);
    vectorised += r.category == OpCategory::kElementwise;
    strided += r.category == OpCategory::kDataMovement;
  }
  EXPECT_EQ(vectorised, 1);  // the mul through vectorized_elementwise_kernel
  EXPECT_EQ(strided, 2);     // the mul and the neg through elementwise_kernel<128, 4>
}

TEST(ProfiledLlamaOps, TheFitKeepsTheBaseAttentionCurve) {
  // The attention rows are left out of the fit (the curve comes from SDPA sweeps); the
  // memory-bound rows are fitted as before.
  const Cluster c = load_cluster_yaml(std::string(PLACER_TEST_DATA_DIR) + "/two_gpus.cluster.yaml");
  CostProfile base = uniform_profile(1.0);
  base.op(OpCategory::kAttention).compute = EfficiencyCurve::constant(0.6);
  base.op(OpCategory::kNormalization).memory_by_dtype[DType::kF32] = EfficiencyCurve::constant(0.3);
  const FitReport r = fit_profile(c, base, {}, {parse_profiler_trace(kLlamaTrace, "t.json")});
  EXPECT_EQ(r.profile.op(OpCategory::kAttention).compute.at(1e4), 0.6);
  bool noted = false;
  for (const std::string& n : r.notes) {
    noted |= n ==
             "skipped 3 row(s): profiled attention ops (ops.attention is kept from the "
             "base profile)";
  }
  EXPECT_TRUE(noted);
  EXPECT_FALSE(r.profile.fit_errors.count("ops.attention.memory_efficiency"));
  EXPECT_TRUE(r.profile.fit_errors.count("ops.normalization.memory_efficiency"));
  // The one normalization row is bf16: its curve is fitted, the base's f32 curve is kept.
  const OpCostProfile& norm = r.profile.op(OpCategory::kNormalization);
  ASSERT_EQ(norm.memory_by_dtype.size(), 2u);
  EXPECT_EQ(norm.memory_by_dtype.at(DType::kF32).at(1e3), 0.3);
  EXPECT_NE(norm.memory_by_dtype.at(DType::kBF16).at(1e3), 0.3);
}

}  // namespace
}  // namespace placer
