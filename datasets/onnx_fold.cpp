// Folding of small shape computations into Constant nodes (between shape-inference passes).
//
// torch exports compute many shapes at run time (Shape -> Gather -> Div -> Mul -> Slice ends,
// Unsqueeze -> Concat -> Reshape targets). ONNX 1.12's data propagation covers Shape,
// Gather, Concat, Unsqueeze, Slice and Add/Sub/Mul but not Div, Cast, Range, Where, ..., so
// ops fed by such chains keep unknown dims. Once the inputs have static shapes every such
// value is a constant: this pass evaluates small numeric tensors and rewrites the nodes that
// produce them into Constant nodes (name kept), so the next inference pass sees the values.
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "datasets/onnx_model.h"

namespace placer::onnx_import {

namespace {

constexpr size_t kMaxElems = 4096;  // shape tensors are tiny; masks are not folded

struct Val {
  int32_t type = onnx::TensorProto::INT64;
  std::vector<int64_t> dims;
  std::vector<double> v;
};

bool is_int(int32_t t) {
  return t == onnx::TensorProto::INT64 || t == onnx::TensorProto::INT32 ||
         t == onnx::TensorProto::INT16 || t == onnx::TensorProto::INT8 ||
         t == onnx::TensorProto::UINT8 || t == onnx::TensorProto::BOOL;
}

template <typename T>
void read_raw(const std::string& raw, std::vector<double>* out) {
  const size_t n = raw.size() / sizeof(T);
  out->resize(n);
  for (size_t i = 0; i < n; ++i) {
    T x;
    std::memcpy(&x, raw.data() + i * sizeof(T), sizeof(T));
    (*out)[i] = static_cast<double>(x);
  }
}

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t attr_int(const onnx::NodeProto& n, const char* name, int64_t dflt) {
  const auto* a = attr(n, name);
  return a ? a->i() : dflt;
}

bool attr_ints(const onnx::NodeProto& n, const char* name, std::vector<int64_t>* out) {
  const auto* a = attr(n, name);
  if (!a) return false;
  out->assign(a->ints().begin(), a->ints().end());
  return true;
}

size_t count(const std::vector<int64_t>& dims) {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(std::max<int64_t>(d, 0));
  return n;
}

double cast_to(int32_t type, double x) {
  if (type == onnx::TensorProto::BOOL) return x != 0 ? 1 : 0;
  if (is_int(type)) return std::trunc(x);
  return x;
}

// Elementwise op over operands of size 1 or n (numpy broadcasting of the shapes that shape
// arithmetic uses: scalars against vectors).
bool elementwise(const std::vector<const Val*>& in, Val* out, double (*f)(double, double, bool)) {
  size_t n = 1;
  const Val* big = in[0];
  for (const Val* x : in) {
    if (x->v.size() > n) n = x->v.size(), big = x;
  }
  for (const Val* x : in) {
    if (x->v.size() != 1 && x->v.size() != n) return false;
  }
  out->type = in[0]->type;
  out->dims = big->dims;
  if (in.size() > 1 && in[1]->dims.size() > out->dims.size() && in[1]->v.size() == n) {
    out->dims = in[1]->dims;
  }
  out->v.resize(n);
  const bool ints = is_int(in[0]->type);
  for (size_t i = 0; i < n; ++i) {
    double acc = in[0]->v[in[0]->v.size() == 1 ? 0 : i];
    for (size_t k = 1; k < in.size(); ++k)
      acc = f(acc, in[k]->v[in[k]->v.size() == 1 ? 0 : i], ints);
    out->v[i] = acc;
  }
  return true;
}

int64_t norm_axis(int64_t a, int64_t rank) { return a < 0 ? a + rank : a; }

// Values are doubles; INT64_MAX-style sentinels (Slice ends) do not fit back: clamp.
int64_t to_i64(double x) {
  constexpr double kLim = 4611686018427387904.0;  // 2^62
  return static_cast<int64_t>(std::max(-kLim, std::min(kLim, x)));
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> st(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i)
    st[i] = st[i + 1] * dims[i + 1];
  return st;
}

// Calls f(out_index, in_offset) for every element of `out_dims`, where the input offset of
// output position p is sum_k (start[k] + p[k] * step[k]) * in_strides[k].
template <typename F>
void for_each_index(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& start,
                    const std::vector<int64_t>& step, const std::vector<int64_t>& in_strides, F f) {
  const size_t rank = out_dims.size();
  const size_t total = count(out_dims);
  std::vector<int64_t> pos(rank, 0);
  for (size_t i = 0; i < total; ++i) {
    int64_t off = 0;
    for (size_t k = 0; k < rank; ++k) off += (start[k] + pos[k] * step[k]) * in_strides[k];
    f(i, off);
    for (size_t k = rank; k-- > 0;) {
      if (++pos[k] < out_dims[k]) break;
      pos[k] = 0;
    }
  }
}

// Evaluation of one node whose inputs are all known, one function per op type (or per
// family of elementwise ops); each returns false when it cannot evaluate the node.
using EvalFn = bool (*)(const onnx::NodeProto& n, const std::vector<const Val*>& in, Val* out);
using ScalarFn = double (*)(double a, double b, bool ints);

// Scalar functions of the elementwise ops (`ints`: integer operands).
namespace scalar {
double add(double a, double b, bool) { return a + b; }
double sub(double a, double b, bool) { return a - b; }
double mul(double a, double b, bool) { return a * b; }
double div(double a, double b, bool i) { return b == 0 ? 0 : (i ? std::trunc(a / b) : a / b); }
double mod(double a, double b, bool) { return b == 0 ? 0 : std::fmod(a, b); }
double min(double a, double b, bool) { return std::min(a, b); }
double max(double a, double b, bool) { return std::max(a, b); }
double pow(double a, double b, bool) { return std::pow(a, b); }
double equal(double a, double b, bool) { return double(a == b); }
double less(double a, double b, bool) { return double(a < b); }
double greater(double a, double b, bool) { return double(a > b); }
double less_equal(double a, double b, bool) { return double(a <= b); }
double greater_equal(double a, double b, bool) { return double(a >= b); }
double logical_and(double a, double b, bool) { return double(a != 0 && b != 0); }
double logical_or(double a, double b, bool) { return double(a != 0 || b != 0); }
double neg(double x) { return -x; }
double abs(double x) { return std::fabs(x); }
double sqrt(double x) { return std::sqrt(x); }
double floor(double x) { return std::floor(x); }
double ceil(double x) { return std::ceil(x); }
double logical_not(double x) { return x == 0 ? 1 : 0; }
double reciprocal(double x) { return x == 0 ? 0 : 1 / x; }
}  // namespace scalar

// Arithmetic keeps the first input's type.
template <ScalarFn F>
bool eval_arithmetic(const onnx::NodeProto&, const std::vector<const Val*>& in, Val* out) {
  return elementwise(in, out, F);
}

// Comparisons and logic give bools.
template <ScalarFn F>
bool eval_comparison(const onnx::NodeProto&, const std::vector<const Val*>& in, Val* out) {
  const bool ok = elementwise(in, out, F);
  out->type = onnx::TensorProto::BOOL;
  return ok;
}

template <double (*F)(double)>
bool eval_unary(const onnx::NodeProto&, const std::vector<const Val*>& in, Val* out) {
  *out = *in[0];
  for (double& x : out->v) x = F(x);
  return true;
}

bool eval_identity(const onnx::NodeProto&, const std::vector<const Val*>& in, Val* out) {
  *out = *in[0];
  return true;
}

bool eval_cast(const onnx::NodeProto& n, const std::vector<const Val*>& in, Val* out) {
  *out = *in[0];
  out->type = static_cast<int32_t>(attr_int(n, "to", onnx::TensorProto::FLOAT));
  for (double& x : out->v) x = cast_to(out->type, x);
  return true;
}

bool eval_where(const onnx::NodeProto&, const std::vector<const Val*>& in, Val* out) {
  if (in.size() != 3) return false;
  std::vector<const Val*> xy = {in[1], in[2], in[0]};
  Val tmp;
  if (!elementwise(xy, &tmp, [](double a, double, bool) { return a; })) return false;
  *out = tmp;
  const size_t n_out = out->v.size();
  for (size_t i = 0; i < n_out; ++i) {
    const double c = in[0]->v[in[0]->v.size() == 1 ? 0 : i];
    out->v[i] =
        c != 0 ? in[1]->v[in[1]->v.size() == 1 ? 0 : i] : in[2]->v[in[2]->v.size() == 1 ? 0 : i];
  }
  return true;
}

// The axes of Squeeze / Unsqueeze: the second input (opset 13) or the attribute.
std::vector<int64_t> squeeze_axes(const onnx::NodeProto& n, const std::vector<const Val*>& in) {
  std::vector<int64_t> axes;
  if (in.size() > 1) {
    for (double a : in[1]->v) axes.push_back(to_i64(a));
  } else {
    attr_ints(n, "axes", &axes);
  }
  return axes;
}

bool eval_unsqueeze(const onnx::NodeProto& n, const std::vector<const Val*>& in, Val* out) {
  *out = *in[0];
  std::vector<int64_t> axes = squeeze_axes(n, in);
  const int64_t rank = static_cast<int64_t>(out->dims.size() + axes.size());
  for (int64_t& a : axes) a = norm_axis(a, rank);
  std::sort(axes.begin(), axes.end());
  for (int64_t a : axes) {
    if (a < 0 || a > static_cast<int64_t>(out->dims.size())) return false;
    out->dims.insert(out->dims.begin() + a, 1);
  }
  return true;
}

bool eval_squeeze(const onnx::NodeProto& n, const std::vector<const Val*>& in, Val* out) {
  *out = *in[0];
  std::vector<int64_t> axes = squeeze_axes(n, in);
  std::vector<int64_t> dims;
  const int64_t rank = static_cast<int64_t>(out->dims.size());
  for (int64_t& a : axes) a = norm_axis(a, rank);
  for (int64_t i = 0; i < rank; ++i) {
    const bool drop =
        axes.empty() ? out->dims[i] == 1 : std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!drop) dims.push_back(out->dims[i]);
  }
  out->dims = dims;
  return true;
}

bool eval_reshape(const onnx::NodeProto& n, const std::vector<const Val*>& in, Val* out) {
  if (in.size() < 2 || in[1] == nullptr) return false;
  *out = *in[0];
  out->dims.clear();
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < in[1]->v.size(); ++i) {
    int64_t d = to_i64(in[1]->v[i]);
    if (d == 0 && !attr_int(n, "allowzero", 0)) {
      if (i >= in[0]->dims.size()) return false;
      d = in[0]->dims[i];
    }
    if (d == -1) {
      if (infer >= 0) return false;
      infer = static_cast<int64_t>(i);
    } else {
      known *= d;
    }
    out->dims.push_back(d);
  }
  if (infer >= 0) {
    if (known <= 0) return false;
    out->dims[infer] = static_cast<int64_t>(out->v.size()) / known;
  }
  return count(out->dims) == out->v.size();
}

bool eval_concat(const onnx::NodeProto& n, const std::vector<const Val*>& in, Val* out) {
  const int64_t rank = static_cast<int64_t>(in[0]->dims.size());
  const int64_t ax = norm_axis(attr_int(n, "axis", 0), rank);
  if (rank == 0 || ax < 0 || ax >= rank) return false;
  out->type = in[0]->type;
  out->dims = in[0]->dims;
  out->dims[ax] = 0;
  for (const Val* x : in) {
    if (x == nullptr || static_cast<int64_t>(x->dims.size()) != rank) return false;
    out->dims[ax] += x->dims[ax];
  }
  // Outer blocks (dims before the axis) interleave the inputs' slabs.
  size_t outer = 1;
  for (int64_t k = 0; k < ax; ++k) outer *= static_cast<size_t>(out->dims[k]);
  for (size_t o = 0; o < outer; ++o) {
    for (const Val* x : in) {
      const size_t slab = outer ? x->v.size() / outer : 0;
      out->v.insert(out->v.end(), x->v.begin() + static_cast<std::ptrdiff_t>(o * slab),
                    x->v.begin() + static_cast<std::ptrdiff_t>((o + 1) * slab));
    }
  }
  return out->v.size() == count(out->dims);
}

bool eval_gather(const onnx::NodeProto& n, const std::vector<const Val*>& in, Val* out) {
  if (in[0]->dims.size() != 1 || norm_axis(attr_int(n, "axis", 0), 1) != 0) return false;
  out->type = in[0]->type;
  out->dims = in[1]->dims;
  const int64_t size = static_cast<int64_t>(in[0]->v.size());
  for (double idx : in[1]->v) {
    int64_t i = to_i64(idx);
    if (i < 0) i += size;
    if (i < 0 || i >= size) return false;
    out->v.push_back(in[0]->v[static_cast<size_t>(i)]);
  }
  return true;
}

// Slice's starts / ends / axes / steps: inputs (opset 10) or attributes; defaults filled.
// False when they do not match.
struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;
};

bool slice_args(const onnx::NodeProto& n, const std::vector<const Val*>& in, SliceArgs* s) {
  if (in.size() >= 3) {
    for (double x : in[1]->v) s->starts.push_back(to_i64(x));
    for (double x : in[2]->v) s->ends.push_back(to_i64(x));
    if (in.size() >= 4 && in[3])
      for (double x : in[3]->v) s->axes.push_back(to_i64(x));
    if (in.size() >= 5 && in[4])
      for (double x : in[4]->v) s->steps.push_back(to_i64(x));
  } else {
    attr_ints(n, "starts", &s->starts);
    attr_ints(n, "ends", &s->ends);
    attr_ints(n, "axes", &s->axes);
  }
  if (s->starts.size() != s->ends.size() || in[0]->dims.empty()) return false;
  if (s->axes.empty()) {
    for (size_t i = 0; i < s->starts.size(); ++i) s->axes.push_back(static_cast<int64_t>(i));
  }
  if (s->steps.empty()) s->steps.assign(s->starts.size(), 1);
  return s->axes.size() == s->starts.size() && s->steps.size() == s->starts.size();
}

bool eval_slice(const onnx::NodeProto& n, const std::vector<const Val*>& in, Val* out) {
  const int64_t rank = static_cast<int64_t>(in[0]->dims.size());
  SliceArgs s;
  if (!slice_args(n, in, &s)) return false;
  std::vector<int64_t> b(rank, 0), st(rank, 1), dims = in[0]->dims;
  for (size_t k = 0; k < s.axes.size(); ++k) {
    const int64_t ax = norm_axis(s.axes[k], rank);
    const int64_t step = s.steps[k];
    if (ax < 0 || ax >= rank || step == 0) return false;
    const int64_t size = in[0]->dims[ax];
    int64_t s0 = s.starts[k], e0 = s.ends[k];
    if (s0 < 0) s0 += size;
    if (e0 < 0) e0 += size;
    int64_t len;
    if (step > 0) {
      s0 = std::min(std::max<int64_t>(s0, 0), size), e0 = std::min(std::max<int64_t>(e0, 0), size);
      len = e0 > s0 ? (e0 - s0 + step - 1) / step : 0;
    } else {
      s0 = std::min(std::max<int64_t>(s0, 0), size - 1),
      e0 = std::min(std::max<int64_t>(e0, -1), size - 1);
      len = s0 > e0 ? (s0 - e0 - step - 1) / -step : 0;
    }
    b[ax] = s0, st[ax] = step, dims[ax] = len;
  }
  out->type = in[0]->type;
  out->dims = dims;
  out->v.resize(count(dims));
  for_each_index(dims, b, st, strides_of(in[0]->dims),
                 [&](size_t i, int64_t off) { out->v[i] = in[0]->v[static_cast<size_t>(off)]; });
  return true;
}

bool eval_transpose(const onnx::NodeProto& n, const std::vector<const Val*>& in, Val* out) {
  const size_t rank = in[0]->dims.size();
  std::vector<int64_t> perm;
  if (!attr_ints(n, "perm", &perm)) {
    for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  if (perm.size() != rank) return false;
  const std::vector<int64_t> in_st = strides_of(in[0]->dims);
  std::vector<int64_t> dims(rank), st(rank), zero(rank, 0), one(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    if (perm[k] < 0 || perm[k] >= static_cast<int64_t>(rank)) return false;
    dims[k] = in[0]->dims[perm[k]];
    st[k] = in_st[perm[k]];
  }
  out->type = in[0]->type;
  out->dims = dims;
  out->v.resize(count(dims));
  for_each_index(dims, zero, one, st,
                 [&](size_t i, int64_t off) { out->v[i] = in[0]->v[static_cast<size_t>(off)]; });
  return true;
}

bool eval_range(const onnx::NodeProto&, const std::vector<const Val*>& in, Val* out) {
  const double s = in[0]->v[0], l = in[1]->v[0], d = in[2]->v[0];
  if (d == 0) return false;
  const double cnt = std::max(std::ceil((l - s) / d), 0.0);
  if (cnt > static_cast<double>(kMaxElems)) return false;
  out->type = in[0]->type;
  for (int64_t i = 0; i < static_cast<int64_t>(cnt); ++i) out->v.push_back(s + d * double(i));
  out->dims = {static_cast<int64_t>(cnt)};
  return true;
}

// A tensor of shape `dims` filled with one value.
bool fill(const std::vector<int64_t>& dims, double value, Val* out) {
  for (int64_t d : dims) {
    if (d < 0) return false;
  }
  if (count(dims) > kMaxElems) return false;
  out->dims = dims;
  out->v.assign(count(dims), value);
  return true;
}

std::vector<int64_t> dims_of(const Val& shape) {
  std::vector<int64_t> dims;
  for (double x : shape.v) dims.push_back(to_i64(x));
  return dims;
}

bool eval_constant_of_shape(const onnx::NodeProto& n, const std::vector<const Val*>& in, Val* out) {
  const std::vector<int64_t> dims = dims_of(*in[0]);
  double value = 0;
  out->type = onnx::TensorProto::FLOAT;
  if (const auto* a = attr(n, "value")) {
    std::vector<double> vs;
    if (!tensor_values(a->t(), &vs, 1) || vs.empty()) return false;
    value = vs[0];
    out->type = a->t().data_type();
  }
  return fill(dims, value, out);
}

// Only a scalar expanded (the shapes that shape arithmetic broadcasts).
bool eval_expand(const onnx::NodeProto&, const std::vector<const Val*>& in, Val* out) {
  const std::vector<int64_t> dims = dims_of(*in[1]);
  out->type = onnx::TensorProto::FLOAT;
  if (in[0]->v.size() != 1) return false;
  const double value = in[0]->v[0];
  out->type = in[0]->type;
  // Broadcast against the input's rank.
  if (dims.size() < in[0]->dims.size()) return false;
  return fill(dims, value, out);
}

template <bool kProduct>
bool eval_reduce(const onnx::NodeProto& n, const std::vector<const Val*>& in, Val* out) {
  if (in[0]->dims.size() != 1 || in.size() > 1) return false;
  double acc = kProduct ? 1 : 0;
  for (double x : in[0]->v) acc = kProduct ? acc * x : acc + x;
  out->type = in[0]->type;
  out->v = {acc};
  out->dims = attr_int(n, "keepdims", 1) ? std::vector<int64_t>{1} : std::vector<int64_t>{};
  return true;
}

const std::unordered_map<std::string, EvalFn>& evaluators() {
  static const std::unordered_map<std::string, EvalFn> kTable = {
      {"Identity", eval_identity},
      {"Cast", eval_cast},
      {"Add", eval_arithmetic<scalar::add>},
      {"Sub", eval_arithmetic<scalar::sub>},
      {"Mul", eval_arithmetic<scalar::mul>},
      {"Div", eval_arithmetic<scalar::div>},
      {"Mod", eval_arithmetic<scalar::mod>},
      {"Min", eval_arithmetic<scalar::min>},
      {"Max", eval_arithmetic<scalar::max>},
      {"Pow", eval_arithmetic<scalar::pow>},
      {"Equal", eval_comparison<scalar::equal>},
      {"Less", eval_comparison<scalar::less>},
      {"Greater", eval_comparison<scalar::greater>},
      {"LessOrEqual", eval_comparison<scalar::less_equal>},
      {"GreaterOrEqual", eval_comparison<scalar::greater_equal>},
      {"And", eval_comparison<scalar::logical_and>},
      {"Or", eval_comparison<scalar::logical_or>},
      {"Neg", eval_unary<scalar::neg>},
      {"Abs", eval_unary<scalar::abs>},
      {"Sqrt", eval_unary<scalar::sqrt>},
      {"Floor", eval_unary<scalar::floor>},
      {"Ceil", eval_unary<scalar::ceil>},
      {"Not", eval_unary<scalar::logical_not>},
      {"Reciprocal", eval_unary<scalar::reciprocal>},
      {"Where", eval_where},
      {"Unsqueeze", eval_unsqueeze},
      {"Squeeze", eval_squeeze},
      {"Reshape", eval_reshape},
      {"Concat", eval_concat},
      {"Gather", eval_gather},
      {"Slice", eval_slice},
      {"Transpose", eval_transpose},
      {"Range", eval_range},
      {"ConstantOfShape", eval_constant_of_shape},
      {"Expand", eval_expand},
      {"ReduceProd", eval_reduce<true>},
      {"ReduceSum", eval_reduce<false>},
  };
  return kTable;
}

// Evaluates one node whose inputs are all known. False when unsupported.
bool eval(const onnx::NodeProto& n, const std::vector<const Val*>& in, Val* out) {
  const auto& table = evaluators();
  auto it = table.find(n.op_type());
  return it != table.end() && it->second(n, in, out);
}

void to_tensor(const Val& v, onnx::TensorProto* t) {
  t->set_data_type(v.type);
  for (int64_t d : v.dims) t->add_dims(d);
  switch (v.type) {
    case onnx::TensorProto::INT64:
      for (double x : v.v) t->add_int64_data(to_i64(x));
      break;
    case onnx::TensorProto::DOUBLE:
      for (double x : v.v) t->add_double_data(x);
      break;
    case onnx::TensorProto::FLOAT:
      for (double x : v.v) t->add_float_data(static_cast<float>(x));
      break;
    default:  // int32 and smaller ints, bool
      for (double x : v.v)
        t->add_int32_data(static_cast<int32_t>(std::max(-2147483648.0, std::min(2147483647.0, x))));
      break;
  }
}

bool foldable_type(int32_t t) {
  return is_int(t) || t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::DOUBLE;
}

}  // namespace

bool tensor_values(const onnx::TensorProto& t, std::vector<double>* out, size_t max_elems) {
  out->clear();
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  if (count(dims) > max_elems) return false;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return false;
  const std::string& raw = t.raw_data();
  switch (t.data_type()) {
    case onnx::TensorProto::INT64:
      if (t.has_raw_data())
        read_raw<int64_t>(raw, out);
      else
        out->assign(t.int64_data().begin(), t.int64_data().end());
      break;
    case onnx::TensorProto::INT32:
      if (t.has_raw_data())
        read_raw<int32_t>(raw, out);
      else
        out->assign(t.int32_data().begin(), t.int32_data().end());
      break;
    case onnx::TensorProto::INT16:
      if (t.has_raw_data())
        read_raw<int16_t>(raw, out);
      else
        out->assign(t.int32_data().begin(), t.int32_data().end());
      break;
    case onnx::TensorProto::INT8:
      if (t.has_raw_data())
        read_raw<int8_t>(raw, out);
      else
        out->assign(t.int32_data().begin(), t.int32_data().end());
      break;
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      if (t.has_raw_data())
        read_raw<uint8_t>(raw, out);
      else
        out->assign(t.int32_data().begin(), t.int32_data().end());
      break;
    case onnx::TensorProto::FLOAT:
      if (t.has_raw_data())
        read_raw<float>(raw, out);
      else
        out->assign(t.float_data().begin(), t.float_data().end());
      break;
    case onnx::TensorProto::DOUBLE:
      if (t.has_raw_data())
        read_raw<double>(raw, out);
      else
        out->assign(t.double_data().begin(), t.double_data().end());
      break;
    default:
      return false;
  }
  return out->size() == count(dims);
}

namespace {

bool static_type(const onnx::TypeProto& t) {
  if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return false;
  for (const auto& d : t.tensor_type().shape().dim()) {
    if (!d.has_dim_value()) return false;
  }
  return true;
}

// ONNX inference of one node, its inputs given as types or (when known) values. Returns
// false when the node cannot be inferred on its own.
bool infer_node(const onnx::ModelProto& m, const onnx::NodeProto& node,
                const std::unordered_map<std::string, onnx::TypeProto>& types,
                const std::unordered_map<std::string, Val>& vals,
                std::unordered_map<std::string, onnx::TypeProto>* out) {
  onnx::ModelProto tiny;
  tiny.set_ir_version(m.ir_version());
  *tiny.mutable_opset_import() = m.opset_import();
  onnx::GraphProto* g = tiny.mutable_graph();
  g->set_name("node");
  for (const auto& name : node.input()) {
    if (name.empty()) continue;
    auto v = vals.find(name);
    if (v != vals.end()) {
      onnx::TensorProto* t = g->add_initializer();
      to_tensor(v->second, t);
      t->set_name(name);
      continue;
    }
    auto t = types.find(name);
    if (t == types.end() || !t->second.has_tensor_type()) return false;
    onnx::ValueInfoProto* in = g->add_input();
    in->set_name(name);
    *in->mutable_type() = t->second;
  }
  *g->add_node() = node;
  try {
    onnx::ShapeInferenceOptions o(false, 0, true);
    onnx::shape_inference::InferShapes(tiny, onnx::OpSchemaRegistry::Instance(), o);
  } catch (const std::exception&) {
    return false;
  }
  for (const auto& vi : g->value_info()) (*out)[vi.name()] = vi.type();
  return true;
}

// The folding pass over one graph: the types (and, where known, values) of its tensors,
// updated node by node as nodes are folded or re-inferred.
class ShapeResolver {
 public:
  explicit ShapeResolver(onnx::ModelProto& m) : m_(m), g_(m.mutable_graph()) {
    for (const auto& vi : g_->input()) types_[vi.name()] = vi.type();
    for (const auto& vi : g_->value_info()) types_[vi.name()] = vi.type();
    for (const auto& vi : g_->output()) types_[vi.name()] = vi.type();
    for (const auto& t : g_->initializer()) {
      Val v;
      if (!is_int(t.data_type()) || !tensor_values(t, &v.v, kMaxElems)) continue;
      v.type = t.data_type();
      v.dims.assign(t.dims().begin(), t.dims().end());
      vals_[t.name()] = std::move(v);
    }
  }

  // Folds what it can, re-infers what is left unknown, writes the new types back.
  size_t run(size_t* reinferred) {
    for (auto& node : *g_->mutable_node()) {
      const bool std_domain = node.domain().empty() || node.domain() == "ai.onnx";
      if (std_domain && node.output_size() == 1 && !node.output(0).empty()) {
        if (node.op_type() == "Constant") {
          record_constant(node);
          continue;
        }
        if (fold(node)) continue;
      }
      if (std_domain) infer_alone(node);
    }
    write_back();
    if (reinferred) *reinferred = inferred_;
    return folded_;
  }

 private:
  bool static_shape(const std::string& name, std::vector<int64_t>* dims) const {
    auto it = types_.find(name);
    if (it == types_.end() || !static_type(it->second)) return false;
    dims->clear();
    for (const auto& d : it->second.tensor_type().shape().dim()) dims->push_back(d.dim_value());
    return true;
  }

  void set_type(const std::string& name, const Val& v) {
    onnx::TypeProto t;
    auto* tt = t.mutable_tensor_type();
    tt->set_elem_type(v.type);
    auto* shape = tt->mutable_shape();
    for (int64_t d : v.dims) shape->add_dim()->set_dim_value(d);
    types_[name] = std::move(t);
  }

  // A Constant node's value, when it is small and numeric.
  void record_constant(const onnx::NodeProto& node) {
    Val out;
    bool ok = false;
    if (const auto* a = attr(node, "value")) {
      ok = tensor_values(a->t(), &out.v, kMaxElems);
      out.type = a->t().data_type();
      out.dims.assign(a->t().dims().begin(), a->t().dims().end());
    } else if (const auto* ai = attr(node, "value_int")) {
      out.v = {static_cast<double>(ai->i())};
      ok = true;
    } else if (const auto* ais = attr(node, "value_ints")) {
      for (int64_t x : ais->ints()) out.v.push_back(static_cast<double>(x));
      out.dims = {static_cast<int64_t>(out.v.size())};
      ok = true;
    }
    if (ok && foldable_type(out.type)) vals_[node.output(0)] = std::move(out);
  }

  // Shape / Size of an input with a static shape.
  bool eval_shape(const onnx::NodeProto& node, Val* out) const {
    std::vector<int64_t> dims;
    if (node.input_size() < 1 || !static_shape(node.input(0), &dims)) return false;
    out->type = onnx::TensorProto::INT64;
    if (node.op_type() == "Size") {
      out->v = {static_cast<double>(count(dims))};
      return true;
    }
    const int64_t rank = static_cast<int64_t>(dims.size());
    int64_t s = norm_axis(attr_int(node, "start", 0), rank);
    int64_t e = norm_axis(attr_int(node, "end", rank), rank);
    s = std::min(std::max<int64_t>(s, 0), rank), e = std::min(std::max<int64_t>(e, 0), rank);
    for (int64_t i = s; i < e; ++i) out->v.push_back(static_cast<double>(dims[i]));
    out->dims = {static_cast<int64_t>(out->v.size())};
    return true;
  }

  // Any other op whose inputs all have known values.
  bool eval_known_inputs(const onnx::NodeProto& node, Val* out) const {
    std::vector<const Val*> in;
    if (node.input_size() == 0) return false;
    for (const auto& name : node.input()) {
      if (name.empty()) {
        in.push_back(nullptr);
        continue;
      }
      auto it = vals_.find(name);
      if (it == vals_.end()) return false;
      in.push_back(&it->second);
    }
    // Optional inputs may be absent only at the end (Slice axes/steps).
    if (in[0] == nullptr) return false;
    const bool gap =
        std::find(in.begin(), in.end(), nullptr) != in.end() && node.op_type() != "Slice";
    return !gap && eval(node, in, out);
  }

  // Evaluates the node and, when its value is small and numeric, rewrites it into a
  // Constant. True when it did.
  bool fold(onnx::NodeProto& node) {
    Val out;
    const std::string& op = node.op_type();
    const bool ok =
        op == "Shape" || op == "Size" ? eval_shape(node, &out) : eval_known_inputs(node, &out);
    if (!ok || !foldable_type(out.type) || out.v.size() > kMaxElems ||
        out.v.size() != count(out.dims)) {
      return false;
    }
    // Rewrite into a Constant carrying the value; the node keeps its name and output.
    onnx::TensorProto t;
    to_tensor(out, &t);
    const std::string output = node.output(0);
    node.clear_input();
    node.clear_attribute();
    node.set_op_type("Constant");
    auto* a = node.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = std::move(t);
    set_type(output, out);
    changed_.insert(output);
    vals_[output] = std::move(out);
    ++folded_;
    return true;
  }

  // Outputs the whole-graph pass left unknown: infer this node alone, now that its inputs
  // may have static shapes or known values.
  void infer_alone(const onnx::NodeProto& node) {
    bool unknown = false;
    for (const auto& o : node.output()) {
      if (o.empty()) continue;
      auto it = types_.find(o);
      unknown = unknown || it == types_.end() || !static_type(it->second);
    }
    if (!unknown) return;
    bool has_subgraph = false;
    for (const auto& a : node.attribute())
      has_subgraph = has_subgraph || a.has_g() || a.graphs_size() > 0;
    if (has_subgraph) return;
    found_.clear();
    if (!infer_node(m_, node, types_, vals_, &found_)) return;
    ++inferred_;
    for (const auto& o : node.output()) {
      auto it = found_.find(o);
      if (o.empty() || it == found_.end()) continue;
      types_[o] = it->second;
      changed_.insert(o);
    }
  }

  // Write the new types back: replace or add value_info, update graph outputs.
  void write_back() {
    for (auto& vi : *g_->mutable_value_info()) {
      if (changed_.erase(vi.name())) *vi.mutable_type() = types_[vi.name()];
    }
    for (auto& vi : *g_->mutable_output()) {
      auto it = types_.find(vi.name());
      if (changed_.erase(vi.name()) && it != types_.end()) *vi.mutable_type() = it->second;
    }
    std::vector<std::string> rest(changed_.begin(), changed_.end());
    std::sort(rest.begin(), rest.end());
    for (const std::string& name : rest) {
      auto* vi = g_->add_value_info();
      vi->set_name(name);
      *vi->mutable_type() = types_[name];
    }
  }

  onnx::ModelProto& m_;
  onnx::GraphProto* g_;
  std::unordered_map<std::string, Val> vals_;
  std::unordered_map<std::string, onnx::TypeProto> types_;
  std::unordered_set<std::string> changed_;
  size_t folded_ = 0, inferred_ = 0;
  std::unordered_map<std::string, onnx::TypeProto> found_;  // reused between nodes
};

}  // namespace

size_t resolve_shapes(onnx::ModelProto& m, size_t* reinferred) {
  return ShapeResolver(m).run(reinferred);
}

}  // namespace placer::onnx_import
