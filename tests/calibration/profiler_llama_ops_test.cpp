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
const char* const kCpuOps = R"json(
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
    "Input Dims": [[64]], "Input type": ["c10::BFloat16"]}}
  )json";

// The kernels of kCpuOps: (name, start us, duration us, launching op's External id).
struct Kernel {
  const char* name;
  int ts, dur, op;
};
const Kernel kKernels[] = {
    {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_"
     "cga1x1x1_kernel0_0",
     10, 10, 1},
    {"cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x128_1x4x1_"
     "cga1x1x1_kernel0_0",
     20, 20, 2},
    {"void cudnn::fusion::compute_dot_do_o_specialized<true, 128>(void const*)", 40, 2, 2},
    {"void cudnn::fusion::convert_dq_to_16bits<true>(void const*, void*)", 42, 1, 2},
    {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128>>(Flash_fwd_params)", 43, 5, 3},
    {"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", 48, 2, 4},
    {"triton_poi_fused_add_cat_mul_neg_slice_transpose_5", 50, 2, 5},
    {"void at::native::vectorized_elementwise_kernel<8, at::native::BinaryFunctor<c10::BFloat16, "
     "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> > >(int)",
     52, 2, 6},
    {"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
     "BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
     "at::native::binary_internal::MulFunctor<float> > >(int)",
     54, 3, 7},
    {"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
     "neg_kernel_cuda(at::TensorIteratorBase&)> >(int)",
     57, 3, 8},
};

// The trace: the CPU ops, then one kernel event per kKernels entry.
ProfilerTrace llama_trace() {
  std::string json = std::string("{\"traceEvents\": [") + kCpuOps;
  for (const Kernel& k : kKernels) {
    json += ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + std::string(k.name) +
            "\", \"ts\": " + std::to_string(k.ts) + ", \"dur\": " + std::to_string(k.dur) +
            ", \"args\": {\"External id\": " + std::to_string(k.op) + "}}";
  }
  return parse_profiler_trace(json + "]}", "t.json");
}

TEST(ProfiledLlamaOps, KernelNamesToCategories) {
  struct Case {
    const char* op;
    const char* kernel;
    OpCategory category;
  };
  const Case cases[] = {
      // cuDNN's SDPA kernels say "fprop" / "bprop" as its convolutions do: attention first.
      {"", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16", OpCategory::kAttention},
      {"aten::_cudnn_attention_backward", "cudnn::fusion::convert_dq", OpCategory::kAttention},
      {"", "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", OpCategory::kAttention},
      {"", "sm80_xmma_fprop_implicit_gemm_indexed_f16f16", OpCategory::kConv},
      // Inductor's kernels by their kind, not by the ops fused into them.
      {"triton_poi_fused__unsafe_view_add_cat_mul_neg_split_transpose_view_1", "",
       OpCategory::kElementwise},
      {"triton_per_fused__to_copy_add_div_expand_mul_pow_sum_view_7", "",
       OpCategory::kNormalization},
      {"triton_red_fused_sum_3", "", OpCategory::kReduction},
      {"triton_per_fused__softmax_2", "", OpCategory::kSoftmax},
      {"triton_tem_fused_mm_0", "", OpCategory::kMatMul},
      // PyTorch's element-wise kernels: vectorised = element-wise, strided = data movement,
      // whichever op launched them (copy_ too).
      {"aten::copy_", "at::native::vectorized_elementwise_kernel<8, bf16_copy>",
       OpCategory::kElementwise},
      {"aten::add", "void at::native::elementwise_kernel<128, 2, f>", OpCategory::kDataMovement},
      {"aten::copy_", "void at::native::unrolled_elementwise_kernel<copy>",
       OpCategory::kDataMovement},
      // cuBLAS's sm90 GEMMs and multi-tensor AdamW stay as they were.
      {"aten::mm", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", OpCategory::kMatMul},
      {"aten::_foreach_addcdiv_", "multi_tensor_apply_kernel<float>", OpCategory::kOptimizer},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.op) + " / " + c.kernel);
    EXPECT_EQ(classify_kernel(c.op, c.kernel), c.category);
  }
}

// The row's category, dtype, rule, FLOPs and bytes.
void expect_row(const ProfiledOp& r, OpCategory category, const std::string& rule, double flops,
                double bytes) {
  EXPECT_EQ(r.category, category);
  EXPECT_EQ(r.dtype, DType::kBF16);
  EXPECT_EQ(r.rule, rule);
  EXPECT_DOUBLE_EQ(r.flops, flops);
  EXPECT_DOUBLE_EQ(r.bytes, bytes);
}

TEST(ProfiledLlamaOps, AttentionWorkFromTheRecordedShapes) {
  const std::vector<ProfiledOp> rows = profiled_ops(llama_trace());
  // Forward, causal: 4 b h_q d x s (s + 1) / 2 = 4 x (2 x 8 x 16) x 10; reads q (1024
  // elements), k and v (256 each), writes the output (1024) in bf16 and the fp32
  // logsumexp (2 x 8 x 4 = 64 values).
  const ProfiledOp& fwd = row(rows, "aten::_cudnn_attention_forward");
  expect_row(fwd, OpCategory::kAttention, "attention", 10240,
             (1024 + 256 + 256 + 1024) * 2 + 64 * 4);
  EXPECT_DOUBLE_EQ(fwd.measured_s, 10e-6);
  // Backward: 2.5 x the forward; reads grad_out, q, k, v, out (bf16), the logsumexp and
  // two 0-dim int64 philox values, writes dq, dk, dv. Its three kernels are one row.
  const ProfiledOp& bwd = row(rows, "aten::_cudnn_attention_backward");
  expect_row(bwd, OpCategory::kAttention, "attention", 25600,
             (3 * 1024 + 2 * 256) * 2 + 64 * 4 + 2 * 8 + (1024 + 2 * 256) * 2);
  EXPECT_EQ(bwd.kernels, 3);
  // The graph op's phase and head dim, which the cost model may read.
  EXPECT_EQ(bwd.phase, Phase::kBackward);
  EXPECT_EQ(fwd.phase, Phase::kForward);
  const std::vector<std::pair<std::string, std::string>> head_dim = {{"head_dim", "16"}};
  EXPECT_EQ(fwd.attrs, head_dim);
  EXPECT_DOUBLE_EQ(bwd.measured_s, 23e-6);
  // FlashAttention's own op, [b, s, h, d] and not causal: 4 x (1 x 2 x 16) x 8 x 8.
  expect_row(row(rows, "aten::_flash_attention_forward"), OpCategory::kAttention, "attention", 8192,
             3 * 256 * 2 + 256 * 2 + 16 * 4);
}

TEST(ProfiledLlamaOps, InductorKernelsMoveTheirArgumentsOnce) {
  const std::vector<ProfiledOp> rows = profiled_ops(llama_trace());
  // RMSNorm: rstd out (4 fp32), x in and y out (32 bf16 each), weight (8 bf16); the
  // elements are the Scalars' product, 4 x 8; the dtype is the bulk's, bf16, not the
  // fp32 of the first argument.
  expect_row(row(rows, "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0"),
             OpCategory::kNormalization, "triton", 32, 4 * 4 + 32 * 2 + 8 * 2 + 32 * 2);
  expect_row(row(rows, "triton_poi_fused_add_cat_mul_neg_slice_transpose_5"),
             OpCategory::kElementwise, "triton", 8, 2 * 8 * 2);
}

TEST(ProfiledLlamaOps, StridedKernelsAreDataMovement) {
  const std::vector<ProfiledOp> rows = profiled_ops(llama_trace());
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
  const FitReport r = fit_profile(c, base, {}, {llama_trace()});
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

TEST(ProfiledLlamaOps, LaunchOverheadFromTracesAddsTheGapBetweenKernels) {
  // 20 kernels of 3 us, 2 us apart, and one of 1 us that overlaps the first (another
  // stream: no gap). Kernel durations hold no launch gap: the launch overhead is the
  // fastest kernels' 1 us (the fastest 5% of 21: one) plus the fastest gaps' 2 us.
  std::string json = R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {}})";
  for (int i = 0; i < 20; ++i) {
    json += ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": " +
            std::to_string(5 * i) + ", \"dur\": 3, \"args\": {}}";
  }
  const Cluster c = load_cluster_yaml(std::string(PLACER_TEST_DATA_DIR) + "/two_gpus.cluster.yaml");
  const FitReport r =
      fit_profile(c, uniform_profile(1.0), {}, {parse_profiler_trace(json + "]}", "t.json")});
  EXPECT_NEAR(r.profile.launch_overhead, 3e-6, 1e-12);
}

}  // namespace
}  // namespace placer
