#include "datasets/onnx_cost.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "datasets/synthetic.h"

namespace placer::onnx_import {

namespace {

// FLOPs per output element of elementwise ops (docs/import.md, "Elementwise").
const std::unordered_map<std::string, double>& elementwise_table() {
  static const std::unordered_map<std::string, double> kTable = [] {
    std::unordered_map<std::string, double> t;
    for (const char* op : {"Add",        "Sub",         "Mul",
                           "Div",        "Pow",         "Sqrt",
                           "Relu",       "Abs",         "Neg",
                           "Exp",        "Log",         "Reciprocal",
                           "Floor",      "Ceil",        "Round",
                           "Sign",       "Equal",       "Less",
                           "Greater",    "LessOrEqual", "GreaterOrEqual",
                           "Not",        "And",         "Or",
                           "Xor",        "Where",       "Cast",
                           "CastLike",   "Mod",         "BitShift",
                           "IsNaN",      "IsInf",       "Dropout",
                           "Max",        "Min",         "Sum",
                           "Mean",       "BitwiseAnd",  "BitwiseOr",
                           "BitwiseXor", "BitwiseNot"}) {
      t[op] = 1;
    }
    for (const char* op : {"LeakyRelu", "PRelu", "Clip", "ThresholdedRelu", "Shrink"}) t[op] = 2;
    for (const char* op : {"HardSigmoid", "Elu", "Softplus", "Softsign", "Celu"}) t[op] = 3;
    for (const char* op : {"Sigmoid", "Tanh", "Erf", "HardSwish", "Selu", "Sin", "Cos", "Tan",
                           "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"}) {
      t[op] = 4;
    }
    t["QuantizeLinear"] = 2;
    t["DequantizeLinear"] = 2;
    t["Mish"] = 6;
    for (const char* op : {"Gelu", "FastGelu", "BiasGelu"}) t[op] = kFlopsPerElemGelu;
    return t;
  }();
  return kTable;
}

// Ops that produce a view of their input (no data moved).
bool is_view(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
         op == "Identity";
}

// Ops that copy data without arithmetic.
bool is_data_movement(const std::string& op) {
  static const std::unordered_set<std::string> kOps = {"Transpose",
                                                       "Concat",
                                                       "Split",
                                                       "Slice",
                                                       "Expand",
                                                       "Tile",
                                                       "Pad",
                                                       "GatherElements",
                                                       "GatherND",
                                                       "ScatterND",
                                                       "ScatterElements",
                                                       "Scatter",
                                                       "OneHot",
                                                       "Trilu",
                                                       "DepthToSpace",
                                                       "SpaceToDepth",
                                                       "ReverseSequence",
                                                       "Compress",
                                                       "ConstantOfShape",
                                                       "EyeLike",
                                                       "SequenceConstruct",
                                                       "SplitToSequence",
                                                       "ConcatFromSequence",
                                                       "SequenceAt"};
  return kOps.count(op) > 0;
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t attr_i(const onnx::NodeProto& n, const char* name, int64_t dflt) {
  const auto* a = find_attr(n, name);
  return a ? a->i() : dflt;
}

std::string attr_s(const onnx::NodeProto& n, const char* name, const std::string& dflt) {
  const auto* a = find_attr(n, name);
  return a ? a->s() : dflt;
}

// Accessors that throw MissingShape when a rule needs what is not known.
const ValueDesc& need_in(const std::vector<ValueDesc>& v, int i) {
  if (i >= static_cast<int>(v.size()) || !v[i].present || !v[i].shape_known) {
    throw MissingShape(false, i);
  }
  return v[i];
}

const ValueDesc& need_out(const std::vector<ValueDesc>& v, int i) {
  if (i >= static_cast<int>(v.size()) || !v[i].present || !v[i].shape_known) {
    throw MissingShape(true, i);
  }
  return v[i];
}

bool has(const std::vector<ValueDesc>& v, int i) {
  return i < static_cast<int>(v.size()) && v[i].present;
}

double dim(const ValueDesc& v, int i) {
  const int r = static_cast<int>(v.shape.size());
  if (i < 0) i += r;
  return (i >= 0 && i < r) ? static_cast<double>(v.shape[i]) : 1.0;
}

double sum_out_elems(const std::vector<ValueDesc>& out) {
  double s = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].present) s += need_out(out, static_cast<int>(i)).elems;
  }
  return s;
}

// Einsum: 2 FLOPs per point of the iteration space over all indices (1 for one operand).
double einsum_flops(const onnx::NodeProto& n, const std::vector<ValueDesc>& in,
                    const std::vector<ValueDesc>& out, bool* ok) {
  std::string eq = attr_s(n, "equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::unordered_map<char, double> size;
  double ellipsis = 1;
  size_t start = 0;
  int k = 0;
  while (start <= lhs.size()) {
    size_t comma = lhs.find(',', start);
    if (comma == std::string::npos) comma = lhs.size();
    const std::string term = lhs.substr(start, comma - start);
    const ValueDesc& v = need_in(in, k);
    const size_t e = term.find("...");
    const int named = static_cast<int>(term.size()) - (e == std::string::npos ? 0 : 3);
    const int rank = static_cast<int>(v.shape.size());
    int axis = 0;
    for (size_t c = 0; c < term.size(); ++c) {
      if (e != std::string::npos && c == e) {
        double p = 1;
        for (int j = 0; j < rank - named; ++j) p *= dim(v, axis + j);
        ellipsis = std::max(ellipsis, p);
        axis += rank - named;
        c += 2;
        continue;
      }
      size[term[c]] = std::max(size[term[c]], dim(v, axis++));
    }
    ++k;
    start = comma + 1;
  }
  if (k == 0 || k != static_cast<int>(in.size())) {
    *ok = false;
    return 0;
  }
  double points = ellipsis;
  for (const auto& s : size) points *= s.second;
  *ok = true;
  (void)out;
  return k >= 2 ? 2 * points : points;
}

// A cost rule fills in the FLOPs and category of one node (the category starts at
// category_of_op_type's); the rules follow docs/import.md.
using Values = std::vector<ValueDesc>;
using CostRule = void (*)(const onnx::NodeProto& node, const Values& in, const Values& out,
                          NodeCost* c);

// --- Dense products ---------------------------------------------------------------

void matmul_cost(const onnx::NodeProto&, const Values& in, const Values& out, NodeCost* c) {
  const ValueDesc& a = need_in(in, 0);
  const double k = a.shape.size() == 1 ? dim(a, 0) : dim(a, -1);
  c->flops = 2 * need_out(out, 0).elems * k;
  c->category = OpCategory::kMatMul;
}

void gemm_cost(const onnx::NodeProto& node, const Values& in, const Values& out, NodeCost* c) {
  const ValueDesc& a = need_in(in, 0);
  const double k = attr_i(node, "transA", 0) ? dim(a, 0) : dim(a, 1);
  const double mn = need_out(out, 0).elems;
  c->flops = 2 * mn * k + (has(in, 2) ? mn : 0);
  c->category = OpCategory::kMatMul;
}

void einsum_cost(const onnx::NodeProto& node, const Values& in, const Values& out, NodeCost* c) {
  bool ok = false;
  c->flops = einsum_flops(node, in, out, &ok);
  c->category = OpCategory::kMatMul;
  if (ok) return;
  c->has_rule = false;
  c->flops = sum_out_elems(out);
}

void conv_cost(const onnx::NodeProto& node, const Values& in, const Values& out, NodeCost* c) {
  // MACs per output (Conv) / per input (ConvTranspose) element = W elems / W[0]: the
  // kernel volume times the channels of one group. Dilation changes only the output size.
  const ValueDesc& w = need_in(in, 1);
  const double per = w.elems / std::max(1.0, dim(w, 0));
  const double y = need_out(out, 0).elems;
  const double base = node.op_type() == "Conv" ? y : need_in(in, 0).elems;
  c->flops = 2 * base * per + (has(in, 2) ? y : 0);
  c->category = OpCategory::kConv;
}

// --- Normalization, softmax ------------------------------------------------------

void normalization_cost(const onnx::NodeProto&, const Values& in, const Values&, NodeCost* c) {
  c->flops = kFlopsPerElemLayerNorm * need_in(in, 0).elems;
  c->category = OpCategory::kNormalization;
}

void lp_normalization_cost(const onnx::NodeProto&, const Values& in, const Values&, NodeCost* c) {
  c->flops = 3 * need_in(in, 0).elems;
  c->category = OpCategory::kNormalization;
}

void softmax_cost(const onnx::NodeProto&, const Values& in, const Values&, NodeCost* c) {
  c->flops = kFlopsPerElemSoftmax * need_in(in, 0).elems;
  c->category = OpCategory::kSoftmax;
}

// --- Pooling and reductions ------------------------------------------------------

void pool_cost(const onnx::NodeProto& node, const Values&, const Values& out, NodeCost* c) {
  double k = 1;
  if (const auto* a = find_attr(node, "kernel_shape")) {
    for (int64_t d : a->ints()) k *= static_cast<double>(d);
  }
  c->flops = (node.op_type() == "LpPool" ? 2 : 1) * need_out(out, 0).elems * k;
  c->category = OpCategory::kPooling;
}

void global_pool_cost(const onnx::NodeProto& node, const Values& in, const Values& out,
                      NodeCost* c) {
  const std::string& op = node.op_type();
  const double x = need_in(in, 0).elems, y = need_out(out, 0).elems;
  c->flops = op == "GlobalMaxPool" ? x : op == "GlobalAveragePool" ? x + y : 2 * x + y;
  c->category = OpCategory::kReduction;
}

// Also the fallback of Reduce* ops without a formula (1 FLOP per output element).
void reduction_cost(const onnx::NodeProto& node, const Values& in, const Values& out, NodeCost* c) {
  const std::string& op = node.op_type();
  const double x = need_in(in, 0).elems;
  const double y = need_out(out, 0).elems;
  if (op == "ReduceMean") {
    c->flops = x + y;
  } else if (op == "ReduceSumSquare" || op == "ReduceL1") {
    c->flops = 2 * x;
  } else if (op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp") {
    c->flops = 2 * x + y;
  } else if (op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceProd" ||
             op == "ArgMax" || op == "ArgMin") {
    c->flops = x;
  } else {
    c->has_rule = false;
    c->flops = y;
  }
  c->category = OpCategory::kReduction;
}

// --- Recurrent -------------------------------------------------------------------

void recurrent_cost(const onnx::NodeProto& node, const Values& in, const Values&, NodeCost* c) {
  // Per time step and direction: the input and recurrent gate GEMMs, their sum, the
  // biases and the gate nonlinearities (docs/import.md).
  const std::string& op = node.op_type();
  const double gates = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
  const double gate_elementwise = op == "LSTM" ? 24 : op == "GRU" ? 17 : 4;
  const ValueDesc& x = need_in(in, 0);
  const ValueDesc& w = need_in(in, 1);
  const bool batch_major = attr_i(node, "layout", 0) == 1;
  const double steps = batch_major ? dim(x, 1) : dim(x, 0);
  const double batch = batch_major ? dim(x, 0) : dim(x, 1);
  const double input = dim(x, 2);
  const double dirs = dim(w, 0);
  const double hidden =
      static_cast<double>(attr_i(node, "hidden_size", static_cast<int64_t>(dim(w, 1) / gates)));
  double per_step =
      2 * gates * hidden * (input + hidden) + gates * hidden + gate_elementwise * hidden;
  if (has(in, 3)) per_step += 2 * gates * hidden;          // Wb and Rb
  if (op == "LSTM" && has(in, 7)) per_step += 6 * hidden;  // peepholes
  c->flops = dirs * steps * batch * per_step;
  c->category = OpCategory::kRecurrent;
}

// --- Lookups, data movement, views ----------------------------------------------

void gather_cost(const onnx::NodeProto&, const Values& in, const Values&, NodeCost* c) {
  c->flops = 0;
  if (has(in, 0) && in[0].is_param) {
    c->category = OpCategory::kEmbedding;
    c->rows_only = true;
  } else {
    c->category = OpCategory::kDataMovement;
  }
}

void resize_cost(const onnx::NodeProto& node, const Values&, const Values& out, NodeCost* c) {
  const std::string mode = attr_s(node, "mode", "nearest");
  const ValueDesc& y = need_out(out, 0);
  const double spatial = std::max<double>(1, static_cast<double>(y.shape.size()) - 2);
  if (mode == "nearest") {
    c->category = OpCategory::kDataMovement;
  } else {
    c->flops = y.elems * 2 * std::pow(mode == "cubic" ? 4.0 : 2.0, spatial);
    c->category = OpCategory::kElementwise;
  }
}

void shape_cost(const onnx::NodeProto&, const Values&, const Values&, NodeCost* c) {
  c->category = OpCategory::kInput;  // shape of a tensor inference could not resolve
}

void range_cost(const onnx::NodeProto&, const Values&, const Values& out, NodeCost* c) {
  c->flops = need_out(out, 0).elems;
  c->category = OpCategory::kElementwise;
}

// --- Elementwise -----------------------------------------------------------------

void elementwise_cost(const onnx::NodeProto& node, const Values& in, const Values& out,
                      double per_element, NodeCost* c) {
  const std::string& op = node.op_type();
  if (op == "Sum" || op == "Mean" || op == "Max" || op == "Min") {
    int n = 0;
    for (const auto& v : in) n += v.present ? 1 : 0;
    per_element = std::max(n - 1, 1) + (op == "Mean" ? 1 : 0);
  }
  c->flops = per_element * need_out(out, 0).elems;
  c->category = OpCategory::kElementwise;
}

// The rule of every op type with a formula of its own.
const std::unordered_map<std::string, CostRule>& cost_rules() {
  static const std::unordered_map<std::string, CostRule> kRules = {
      {"MatMul", matmul_cost},
      {"MatMulInteger", matmul_cost},
      {"Gemm", gemm_cost},
      {"Einsum", einsum_cost},
      {"Conv", conv_cost},
      {"ConvTranspose", conv_cost},
      {"BatchNormalization", normalization_cost},
      {"LayerNormalization", normalization_cost},
      {"InstanceNormalization", normalization_cost},
      {"GroupNormalization", normalization_cost},
      {"MeanVarianceNormalization", normalization_cost},
      {"LpNormalization", lp_normalization_cost},
      {"Softmax", softmax_cost},
      {"LogSoftmax", softmax_cost},
      {"MaxPool", pool_cost},
      {"AveragePool", pool_cost},
      {"LpPool", pool_cost},
      {"GlobalAveragePool", global_pool_cost},
      {"GlobalMaxPool", global_pool_cost},
      {"GlobalLpPool", global_pool_cost},
      {"ArgMax", reduction_cost},
      {"ArgMin", reduction_cost},
      {"LSTM", recurrent_cost},
      {"GRU", recurrent_cost},
      {"RNN", recurrent_cost},
      {"Gather", gather_cost},
      {"Resize", resize_cost},
      {"Upsample", resize_cost},
      {"Shape", shape_cost},
      {"Size", shape_cost},
      {"Constant", shape_cost},
      {"Range", range_cost},
  };
  return kRules;
}

}  // namespace

bool is_view_op(const std::string& op_type) { return is_view(op_type); }

bool is_elementwise_op(const std::string& op_type) {
  return elementwise_table().count(op_type) > 0;
}

NodeCost node_cost(const onnx::NodeProto& node, const std::vector<ValueDesc>& in,
                   const std::vector<ValueDesc>& out) {
  const std::string& op = node.op_type();
  NodeCost c;
  c.category = category_of_op_type(op);
  const auto rule = cost_rules().find(op);
  if (rule != cost_rules().end()) {
    rule->second(node, in, out, &c);
  } else if (op.rfind("Reduce", 0) == 0) {
    reduction_cost(node, in, out, &c);
  } else if (is_view(op)) {
    c.view = true;
    c.category = OpCategory::kDataMovement;
  } else if (is_data_movement(op)) {
    c.category = OpCategory::kDataMovement;
  } else if (const auto it = elementwise_table().find(op); it != elementwise_table().end()) {
    elementwise_cost(node, in, out, it->second, &c);
  } else {
    // No rule: 1 FLOP per output element.
    c.has_rule = false;
    c.flops = sum_out_elems(out);
  }
  return c;
}

}  // namespace placer::onnx_import
