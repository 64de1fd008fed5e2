#include "src/graph/types.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace placer {

int dtype_bytes(DType t) {
  switch (t) {
    case DType::kF64:
    case DType::kI64: return 8;
    case DType::kF32:
    case DType::kI32: return 4;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16: return 2;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
    case DType::kF8: return 1;
  }
  return 4;
}

const char* to_string(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kF64: return "f64";
    case DType::kI64: return "i64";
    case DType::kI32: return "i32";
    case DType::kI16: return "i16";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
    case DType::kBool: return "bool";
    case DType::kF8: return "f8";
  }
  return "f32";
}

static std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool parse_dtype(const std::string& s, DType* out) {
  static const std::unordered_map<std::string, DType> kNames = {
      {"f32", DType::kF32},   {"fp32", DType::kF32},    {"float32", DType::kF32},
      {"float", DType::kF32}, {"tf32", DType::kF32},    {"f16", DType::kF16},
      {"fp16", DType::kF16},  {"float16", DType::kF16}, {"half", DType::kF16},
      {"bf16", DType::kBF16}, {"bfloat16", DType::kBF16}, {"f64", DType::kF64},
      {"fp64", DType::kF64},  {"float64", DType::kF64}, {"double", DType::kF64},
      {"i64", DType::kI64},   {"int64", DType::kI64},   {"i32", DType::kI32},
      {"int32", DType::kI32}, {"i16", DType::kI16},     {"int16", DType::kI16},
      {"i8", DType::kI8},     {"int8", DType::kI8},     {"u8", DType::kU8},
      {"uint8", DType::kU8},  {"bool", DType::kBool},   {"f8", DType::kF8},
      {"fp8", DType::kF8},    {"float8", DType::kF8},   {"e4m3", DType::kF8},
  };
  auto it = kNames.find(lower(s));
  if (it == kNames.end()) return false;
  *out = it->second;
  return true;
}

static const char* const kCategoryNames[kNumOpCategories] = {
    "matmul",    "conv",        "elementwise", "normalization", "reduction",
    "softmax",   "pooling",     "embedding",   "recurrent",     "data_movement",
    "optimizer", "communication", "input",     "other"};

const char* to_string(OpCategory c) { return kCategoryNames[static_cast<int>(c)]; }

bool parse_op_category(const std::string& s, OpCategory* out) {
  const std::string l = lower(s);
  for (int i = 0; i < kNumOpCategories; ++i) {
    if (l == kCategoryNames[i]) {
      *out = static_cast<OpCategory>(i);
      return true;
    }
  }
  return false;
}

OpCategory category_of_op_type(const std::string& op_type) {
  static const std::unordered_map<std::string, OpCategory> kTypes = {
      {"MatMul", OpCategory::kMatMul},
      {"Gemm", OpCategory::kMatMul},
      {"MatMulInteger", OpCategory::kMatMul},
      {"Linear", OpCategory::kMatMul},
      {"Einsum", OpCategory::kMatMul},
      {"Conv", OpCategory::kConv},
      {"ConvTranspose", OpCategory::kConv},
      {"BatchNormalization", OpCategory::kNormalization},
      {"LayerNormalization", OpCategory::kNormalization},
      {"InstanceNormalization", OpCategory::kNormalization},
      {"GroupNormalization", OpCategory::kNormalization},
      {"ReduceSum", OpCategory::kReduction},
      {"ReduceMean", OpCategory::kReduction},
      {"ReduceMax", OpCategory::kReduction},
      {"ReduceMin", OpCategory::kReduction},
      {"ReduceProd", OpCategory::kReduction},
      {"ReduceL2", OpCategory::kReduction},
      {"GlobalAveragePool", OpCategory::kReduction},
      {"GlobalMaxPool", OpCategory::kReduction},
      {"Softmax", OpCategory::kSoftmax},
      {"LogSoftmax", OpCategory::kSoftmax},
      {"MaxPool", OpCategory::kPooling},
      {"AveragePool", OpCategory::kPooling},
      {"Gather", OpCategory::kEmbedding},
      {"Embedding", OpCategory::kEmbedding},
      {"LSTM", OpCategory::kRecurrent},
      {"GRU", OpCategory::kRecurrent},
      {"RNN", OpCategory::kRecurrent},
      {"Reshape", OpCategory::kDataMovement},
      {"Transpose", OpCategory::kDataMovement},
      {"Flatten", OpCategory::kDataMovement},
      {"Concat", OpCategory::kDataMovement},
      {"Split", OpCategory::kDataMovement},
      {"Slice", OpCategory::kDataMovement},
      {"Squeeze", OpCategory::kDataMovement},
      {"Unsqueeze", OpCategory::kDataMovement},
      {"Expand", OpCategory::kDataMovement},
      {"Pad", OpCategory::kDataMovement},
      {"Tile", OpCategory::kDataMovement},
      {"Identity", OpCategory::kDataMovement},
      {"Shape", OpCategory::kInput},
      {"Constant", OpCategory::kInput},
      {"ConstantOfShape", OpCategory::kInput},
      {"Input", OpCategory::kInput},
      {"Parameter", OpCategory::kInput},
      {"Send", OpCategory::kCommunication},
      {"Recv", OpCategory::kCommunication},
      {"AllReduce", OpCategory::kCommunication},
      {"SGDUpdate", OpCategory::kOptimizer},
      {"MomentumUpdate", OpCategory::kOptimizer},
      {"AdamUpdate", OpCategory::kOptimizer},
  };
  auto it = kTypes.find(op_type);
  if (it != kTypes.end()) return it->second;
  // Derived names: "<Type>Grad" has the category of <Type>.
  const std::string suffix = "Grad";
  if (op_type.size() > suffix.size() &&
      op_type.compare(op_type.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return category_of_op_type(op_type.substr(0, op_type.size() - suffix.size()));
  }
  static const char* const kElementwise[] = {
      "Add",  "Sub",     "Mul",  "Div",   "Pow",     "Sqrt",    "Relu",  "LeakyRelu", "Gelu",
      "Erf",  "Sigmoid", "Tanh", "Exp",   "Log",     "Neg",     "Abs",   "Clip",      "Where",
      "Cast", "Dropout", "Max",  "Min",   "Equal",   "Less",    "Greater", "Not",     "And",
      "Or",   "Softplus", "HardSigmoid", "HardSwish", "Selu", "Elu", "PRelu", "Reciprocal",
      "Sin",  "Cos",     "Floor", "Ceil", "Round",   "Sign",    "Mish",  "BiasGelu",  "Silu"};
  for (const char* e : kElementwise) {
    if (op_type == e) return OpCategory::kElementwise;
  }
  return OpCategory::kOther;
}

const char* to_string(Phase p) {
  switch (p) {
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kOptimizer: return "optimizer";
    case Phase::kCommunication: return "communication";
  }
  return "forward";
}

bool parse_phase(const std::string& s, Phase* out) {
  const std::string l = lower(s);
  if (l == "forward") *out = Phase::kForward;
  else if (l == "backward") *out = Phase::kBackward;
  else if (l == "optimizer") *out = Phase::kOptimizer;
  else if (l == "communication") *out = Phase::kCommunication;
  else return false;
  return true;
}

}  // namespace placer
