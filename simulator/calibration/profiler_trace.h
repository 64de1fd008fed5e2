#pragma once
// PyTorch profiler / Kineto Chrome traces (torch.profiler ... export_chrome_trace): per-kernel
// durations with the op name of the CPU op that launched them, and the CPU ops' recorded
// inputs (record_shapes=True). Files may be gzipped (*.json.gz, or any file starting with
// the gzip magic bytes).
//
// Kernels (cat "kernel", also "gpu_memcpy" / "gpu_memset") are tied to their CPU op
// (cat "cpu_op") through args "External id" (directly, or through the CUDA runtime call
// with the same args "correlation"). Durations ("dur") are microseconds in the file and
// seconds here.

#include <string>
#include <unordered_map>
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
  long long blocks = 0;   ///< thread blocks launched (product of args "grid"), 0 if absent
  double bytes = 0;       ///< args "bytes" (gpu_memcpy / gpu_memset), 0 if absent
};

/// One input of a CPU op as record_shapes=True writes it: the i-th entries of args
/// "Input type", "Input Dims", "Input Strides" and "Concrete Inputs". Missing or malformed
/// entries are left empty (older traces and hand-written ones have none of them).
struct ProfiledInput {
  /// "float", "c10::BFloat16", "c10::Half", "double", "long int", "int", "bool",
  /// "unsigned char", ... for a tensor; "Scalar", "ScalarList", "TensorList", or "" (None).
  std::string type;
  /// One shape for a tensor ({} = a 0-dim tensor, or no shape for a non-tensor), one shape
  /// per member for a TensorList (none when the profiler did not record them).
  std::vector<std::vector<long long>> dims;
  std::vector<std::vector<long long>> strides;  ///< same layout as dims; may be empty
  std::string value;  ///< "Concrete Inputs" entry: "[1, 1]", "0.1", "True"; "" when none
  bool list = false;  ///< a TensorList (type "TensorList" or dims given as a list of lists)
};

/// A CPU op instance (cat "cpu_op"), keyed by its External id in ProfilerTrace::ops.
struct ProfiledCpuOp {
  std::string name;                  ///< "aten::mm"
  long long id = -1;                 ///< External id
  double flops = 0;                  ///< args "flops", 0 if absent
  std::vector<ProfiledInput> inputs; ///< empty when the trace has no shapes
};

struct ProfilerTrace {
  std::string source;
  std::vector<ProfiledKernel> kernels;  ///< in file order
  int cpu_ops = 0;                      ///< cpu_op events seen
  /// CPU ops (cat "cpu_op" / "operator") with an External id. The first event of an id is
  /// kept (ids are unique per op instance in Kineto traces).
  std::unordered_map<long long, ProfiledCpuOp> ops;
};

/// Parses Chrome-trace JSON (an object with "traceEvents", or a bare array of events).
/// Errors: FormatError naming the file (malformed JSON, no traceEvents, an "X" kernel event
/// without a numeric dur / ts, named by its index: "file: traceEvents[12]: ...").
ProfilerTrace parse_profiler_trace(const std::string& json_text, const std::string& file);
/// Reads a trace file: plain JSON, or gzip (decompressed with zlib) when the file starts with
/// the gzip magic bytes 1f 8b (*.json.gz). Errors: FileError / FormatError naming the file
/// (cannot open, corrupt or truncated gzip data, then the JSON errors above).
ProfilerTrace load_profiler_trace(const std::string& path);

/// Decompresses gzip data (zlib; concatenated members are joined). Throws FormatError
/// "file: corrupt gzip data (...)" on bad or truncated input.
std::string gunzip(const std::string& data, const std::string& file);

/// Op category from a CPU op name ("aten::addmm" -> matmul, "aten::cudnn_convolution" ->
/// conv, ...) or, when that says nothing, from a kernel name ("ampere_sgemm_128x64_nn" ->
/// matmul, "...fprop_implicit_gemm..." -> conv, "vectorized_elementwise_kernel" ->
/// elementwise, "ncclKernel_AllReduce..." -> communication); kOther when neither does.
/// SDPA ops and kernels (cuDNN's "..._sdpa_..._fprop", flash_fwd, ...) are attention;
/// inductor's "triton_<kind>_fused_..." by their kind (poi element-wise, red / per
/// reduction or, squaring and normalising, normalization); PyTorch's strided element-wise
/// kernels ("elementwise_kernel<", "unrolled_elementwise_kernel") are data movement and its
/// vectorised ones element-wise, whichever op launched them.
OpCategory classify_kernel(const std::string& op_name, const std::string& kernel_name);

}  // namespace placer
