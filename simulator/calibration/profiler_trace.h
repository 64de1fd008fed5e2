#pragma once
// PyTorch profiler / Kineto Chrome traces (torch.profiler ... export_chrome_trace): per-kernel
// durations with the op name of the CPU op that launched them.
//
// Kernels (cat "kernel", also "gpu_memcpy" / "gpu_memset") are tied to their CPU op
// (cat "cpu_op") through args "External id" (directly, or through the CUDA runtime call
// with the same args "correlation"). Durations ("dur") are microseconds in the file and
// seconds here.

#include <string>
#include <vector>

#include "src/graph/types.h"

namespace placer {

struct ProfiledKernel {
  std::string name;      ///< kernel name
  std::string cat;       ///< "kernel", "gpu_memcpy", "gpu_memset"
  std::string op_name;   ///< launching CPU op ("aten::mm"), "" when unknown
  long long op_id = -1;  ///< External id of the CPU op instance, -1 when unknown
  double start_s = 0;    ///< ts, seconds
  double dur_s = 0;      ///< dur, seconds
  double op_flops = 0;   ///< the CPU op's args "flops" (profile_memory/with_flops), 0 if absent
  OpCategory category = OpCategory::kOther;  ///< classify_kernel(op_name, name)
};

struct ProfilerTrace {
  std::string source;
  std::vector<ProfiledKernel> kernels;  ///< in file order
  int cpu_ops = 0;                      ///< cpu_op events seen
};

/// Parses Chrome-trace JSON (an object with "traceEvents", or a bare array of events).
/// Errors: FormatError naming the file (malformed JSON, no traceEvents, an "X" kernel event
/// without a numeric dur / ts, named by its index: "file: traceEvents[12]: ...").
ProfilerTrace parse_profiler_trace(const std::string& json_text, const std::string& file);
ProfilerTrace load_profiler_trace(const std::string& path);

/// Op category from a CPU op name ("aten::addmm" -> matmul, "aten::cudnn_convolution" ->
/// conv, ...) or, when that says nothing, from a kernel name ("ampere_sgemm_128x64_nn" ->
/// matmul, "...fprop_implicit_gemm..." -> conv, "vectorized_elementwise_kernel" ->
/// elementwise, "ncclKernel_AllReduce..." -> communication); kOther when neither does.
OpCategory classify_kernel(const std::string& op_name, const std::string& kernel_name);

}  // namespace placer
