#pragma once
// Small enums shared by the graph IR, the cost model and the file formats.

#include <cstdint>
#include <string>

namespace placer {

using OpId = uint32_t;
using TensorId = uint32_t;
inline constexpr OpId kNoOp = UINT32_MAX;
inline constexpr TensorId kNoTensor = UINT32_MAX;

/// Element type of a tensor (and the arithmetic precision of an op).
/// kF8 is FP8 (e4m3) as GEMM inputs: a device's `f8` peak, one byte per element.
enum class DType : uint8_t { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool, kF8 };
inline constexpr int kNumDTypes = 11;

/// Size of one element in bytes.
int dtype_bytes(DType t);
/// "f32", "f16", "bf16", "f64", "i64", "i32", "i16", "i8", "u8", "bool", "f8".
const char* to_string(DType t);
/// Parses the names above (also "fp32", "float32", "float16", "fp16", "bfloat16", "int64",
/// "fp8", "float8", "e4m3"...).
/// Returns false on an unknown name.
bool parse_dtype(const std::string& s, DType* out);

/// Coarse kind of an op; selects the cost model's efficiency curve and the
/// backward-pass FLOP multiplier.
enum class OpCategory : uint8_t {
  kMatMul,         // MatMul, Gemm, Linear
  kConv,           // Conv, ConvTranspose
  kElementwise,    // Add, Relu, Gelu, Cast, Dropout ...
  kNormalization,  // BatchNorm, LayerNorm, InstanceNorm
  kReduction,      // ReduceSum/Mean/Max, GlobalAveragePool
  kSoftmax,        // Softmax, LogSoftmax
  kPooling,        // MaxPool, AveragePool
  kEmbedding,      // Gather on a weight table
  kRecurrent,      // LSTM, GRU, RNN
  kDataMovement,   // Reshape, Transpose, Concat, Split, Slice, ...
  kOptimizer,      // parameter update (SGD, momentum, Adam)
  kCommunication,  // explicit send/recv/collective ops in the graph
  kInput,          // graph inputs, constants, parameters as nodes (no compute)
  kOther,
};
inline constexpr int kNumOpCategories = 14;
const char* to_string(OpCategory c);
bool parse_op_category(const std::string& s, OpCategory* out);
/// Category of an ONNX op_type (or of our own names like "MatMulGrad"); kOther if unknown.
OpCategory category_of_op_type(const std::string& op_type);

/// Part of a training step an op belongs to.
enum class Phase : uint8_t { kForward, kBackward, kOptimizer, kCommunication };
const char* to_string(Phase p);
bool parse_phase(const std::string& s, Phase* out);

}  // namespace placer
