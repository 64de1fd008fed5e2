// The work rules of profiled PyTorch ops: an op's recorded inputs (shapes, strides, types)
// read as tensors, and a table from op name to the rule that gives its FLOPs and bytes.
#include "simulator/calibration/profiler_op_rules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "src/util/error.h"

namespace placer {

namespace {

// ---- Inputs ------------------------------------------------------------------------------

// Element size of a recorded "Input type"; 0 when it is not a tensor type.
int elem_size(const std::string& t) {
  static const std::unordered_map<std::string, int> sizes = {
      {"float", 4},          {"c10::BFloat16", 2},        {"c10::Half", 2},
      {"double", 8},         {"long int", 8},             {"long", 8},
      {"int", 4},            {"short int", 2},            {"short", 2},
      {"bool", 1},           {"unsigned char", 1},        {"signed char", 1},
      {"c10::complex<float>", 8}, {"c10::complex<double>", 16}, {"c10::complex<c10::Half>", 4},
  };
  if (auto it = sizes.find(t); it != sizes.end()) return it->second;
  if (t.rfind("c10::Float8", 0) == 0) return 1;
  return 0;
}

}  // namespace

bool floating_dtype(const std::string& t, DType* d) {
  if (t == "float") return *d = DType::kF32, true;
  if (t == "c10::BFloat16") return *d = DType::kBF16, true;
  if (t == "c10::Half") return *d = DType::kF16, true;
  if (t == "double") return *d = DType::kF64, true;
  return false;
}

bool any_dtype(const std::string& t, DType* d) {
  if (floating_dtype(t, d)) return true;
  if (t == "long int" || t == "long") return *d = DType::kI64, true;
  if (t == "int") return *d = DType::kI32, true;
  if (t == "short int" || t == "short") return *d = DType::kI16, true;
  if (t == "signed char") return *d = DType::kI8, true;
  if (t == "unsigned char") return *d = DType::kU8, true;
  if (t == "bool") return *d = DType::kBool, true;
  return false;
}
namespace {

double numel(const std::vector<long long>& shape) {
  double n = 1;
  for (long long d : shape) n *= static_cast<double>(std::max(0LL, d));
  return n;
}

// Stored elements: dims with stride 0 (expanded views) do not count.
double stored(const std::vector<long long>& shape, const std::vector<long long>* strides) {
  if (!strides || strides->size() != shape.size()) return numel(shape);
  double n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if ((*strides)[i] != 0) n *= static_cast<double>(std::max(0LL, shape[i]));
  }
  return n;
}

// "[1, 1]" / "1" / "[True, False]" -> numbers (true 1, false 0); empty on anything else.
std::vector<long long> parse_ints(const std::string& s) {
  std::vector<long long> out;
  std::string tok;
  auto flush = [&]() {
    if (tok.empty()) return true;
    if (tok == "True" || tok == "true") {
      out.push_back(1);
    } else if (tok == "False" || tok == "false") {
      out.push_back(0);
    } else {
      try {
        size_t used = 0;
        const double v = std::stod(tok, &used);
        if (used != tok.size()) return false;
        out.push_back(static_cast<long long>(v));
      } catch (...) {
        return false;
      }
    }
    tok.clear();
    return true;
  };
  for (char c : s) {
    if (c == '[' || c == ']' || c == ' ') continue;
    if (c == ',') {
      if (!flush()) return {};
      continue;
    }
    tok += c;
  }
  if (!flush()) return {};
  return out;
}

struct Tensor {
  const ProfiledInput* in = nullptr;
  int es = 0;
  const std::vector<long long>& shape() const { return in->dims.front(); }
  double elements() const { return numel(shape()); }
  double read_elements() const {
    return stored(shape(), in->strides.size() == 1 ? &in->strides.front() : nullptr);
  }
  double bytes() const { return read_elements() * es; }
};

// The op's view of its inputs for the rules.
struct Inputs {
  const std::vector<ProfiledInput>& in;
  int list_es = 0;  // element size of TensorList members (from the row's dtype)

  size_t size() const { return in.size(); }
  // Input i as a tensor (its type a tensor type and one shape), else null.
  bool tensor(size_t i, Tensor* t) const {
    if (i >= in.size()) return false;
    const ProfiledInput& p = in[i];
    const int es = elem_size(p.type);
    if (es == 0 || p.list || p.dims.size() != 1) return false;
    t->in = &p;
    t->es = es;
    return true;
  }
  std::vector<Tensor> tensors() const {
    std::vector<Tensor> out;
    for (size_t i = 0; i < in.size(); ++i) {
      Tensor t;
      if (tensor(i, &t)) out.push_back(t);
    }
    return out;
  }
  std::vector<long long> shape(size_t i) const {
    Tensor t;
    return tensor(i, &t) ? t.shape() : std::vector<long long>{};
  }
  double elements(size_t i) const {
    Tensor t;
    return tensor(i, &t) ? t.elements() : 0;
  }
  double bytes(size_t i) const {
    Tensor t;
    return tensor(i, &t) ? t.bytes() : 0;
  }
  int es(size_t i) const {
    Tensor t;
    return tensor(i, &t) ? t.es : 0;
  }
  std::vector<long long> ints(size_t i) const {
    return i < in.size() ? parse_ints(in[i].value) : std::vector<long long>{};
  }
  // Bytes of every tensor input plus every TensorList member (read).
  double read_all() const {
    double b = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      Tensor t;
      if (tensor(i, &t)) {
        b += t.bytes();
      } else if (in[i].list) {
        for (size_t m = 0; m < in[i].dims.size(); ++m) {
          const std::vector<long long>* s =
              in[i].strides.size() == in[i].dims.size() ? &in[i].strides[m] : nullptr;
          b += stored(in[i].dims[m], s) * list_es;
        }
      }
    }
    return b;
  }
  // Element size of the output: the first floating input's, else the first tensor's.
  int out_es() const {
    int first = 0;
    for (const Tensor& t : tensors()) {
      DType d;
      if (floating_dtype(t.in->type, &d)) return t.es;
      if (first == 0) first = t.es;
    }
    return first != 0 ? first : list_es;
  }
};

std::vector<long long> broadcast(const std::vector<Tensor>& ts) {
  std::vector<long long> out;
  for (const Tensor& t : ts) {
    const std::vector<long long>& s = t.shape();
    if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), 1);
    const size_t off = out.size() - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      long long& o = out[off + i];
      if (o == 1 || (s[i] != 1 && s[i] > o)) o = s[i];
    }
  }
  return out;
}

std::string strip(const std::string& name) {
  const std::string p = "aten::";
  return name.rfind(p, 0) == 0 ? name.substr(p.size()) : name;
}

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

// Value i of a per-spatial-dim list (a single value applies to every dim), else `dflt`.
long long nth(const std::vector<long long>& v, size_t i, long long dflt) {
  if (v.empty()) return dflt;
  return v.size() == 1 ? v[0] : (i < v.size() ? v[i] : dflt);
}

// ---- Rules --------------------------------------------------------------------------------

using Work = OpWork;

// What a rule sees of one op: its name without "aten::", its inputs, its kernels and the
// element size of its dtype.
struct OpCall {
  const std::string& n;
  const Inputs& in;
  const std::vector<const ProfiledKernel*>& ks;
  int es = 0;
};

// A rule fills in the op's FLOPs and bytes (and may refine the rule's name).
using Rule = void (*)(const OpCall&, Work*);

// Forward convolution FLOPs from input x, weight w, output spatial dims.
// (w[1] is C / groups already, so groups need not be known.)
double conv_flops(const std::vector<long long>& x, const std::vector<long long>& w,
                  const std::vector<long long>& out_spatial, bool transposed) {
  if (x.size() < 3 || w.size() != x.size()) return 0;
  double kernel = 1;
  for (size_t i = 2; i < w.size(); ++i) kernel *= static_cast<double>(w[i]);
  const double n = static_cast<double>(x[0]);
  if (transposed) {
    // w = [C_in, K/g, k...]: every input element meets K/g x kernel weights.
    double in_sp = 1;
    for (size_t i = 2; i < x.size(); ++i) in_sp *= static_cast<double>(x[i]);
    return 2 * n * static_cast<double>(x[1]) * in_sp * static_cast<double>(w[1]) * kernel;
  }
  return 2 * n * static_cast<double>(w[0]) * numel(out_spatial) * static_cast<double>(w[1]) *
         kernel;
}

std::vector<long long> conv_out_spatial(const std::vector<long long>& x,
                                        const std::vector<long long>& w,
                                        const std::vector<long long>& stride,
                                        const std::vector<long long>& padding,
                                        const std::vector<long long>& dilation, bool transposed,
                                        const std::vector<long long>& output_padding) {
  std::vector<long long> o;
  if (x.size() < 3 || w.size() != x.size()) return o;
  for (size_t i = 2; i < x.size(); ++i) {
    const size_t j = i - 2;
    const long long s = std::max(1LL, nth(stride, j, 1)), p = nth(padding, j, 0),
                    d = std::max(1LL, nth(dilation, j, 1)), k = w[i];
    long long v;
    if (transposed) {
      v = (x[i] - 1) * s - 2 * p + d * (k - 1) + nth(output_padding, j, 0) + 1;
    } else {
      v = (x[i] + 2 * p - d * (k - 1) - 1) / s + 1;
    }
    o.push_back(std::max(0LL, v));
  }
  return o;
}

void conv_forward(const OpCall& op, Work* w) {
  const std::string& n = op.n;
  const Inputs& in = op.in;
  Tensor x, wt;
  if (!in.tensor(0, &x) || !in.tensor(1, &wt)) return;
  std::vector<long long> stride, padding, dilation, out_pad;
  long long groups = 1;
  bool transposed = false;
  if (n == "cudnn_convolution" || n == "cudnn_convolution_transpose" ||
      n == "miopen_convolution") {
    // (x, w, [output_padding for transpose,] padding, stride, dilation, groups, ...)
    size_t i = 2;
    if (n == "cudnn_convolution_transpose") out_pad = in.ints(i++), transposed = true;
    padding = in.ints(i);
    stride = in.ints(i + 1);
    dilation = in.ints(i + 2);
    if (auto g = in.ints(i + 3); g.size() == 1) groups = g[0];
  } else {
    // convolution / _convolution (x, w, bias, stride, padding, dilation, transposed,
    // output_padding, groups, ...)
    stride = in.ints(3);
    padding = in.ints(4);
    dilation = in.ints(5);
    if (auto t = in.ints(6); t.size() == 1) transposed = t[0] != 0;
    out_pad = in.ints(7);
    if (auto g = in.ints(8); g.size() == 1) groups = g[0];
  }
  const std::vector<long long> o =
      conv_out_spatial(x.shape(), wt.shape(), stride, padding, dilation, transposed, out_pad);
  if (o.empty()) return;
  w->flops = conv_flops(x.shape(), wt.shape(), o, transposed);
  const long long k_out = transposed ? wt.shape()[1] * std::max(1LL, groups) : wt.shape()[0];
  const double out_elems = static_cast<double>(x.shape()[0]) * static_cast<double>(k_out) * numel(o);
  double bias = 0;
  if (n == "convolution" || n == "_convolution") bias = in.bytes(2);
  w->bytes = x.bytes() + wt.bytes() + bias + out_elems * in.out_es();
}

void conv_backward(const OpCall& op, Work* w) {
  const std::string& n = op.n;
  const Inputs& in = op.in;
  Tensor dy, x, wt;
  std::vector<long long> mask;
  bool transposed = false;
  if (n == "convolution_backward") {
    if (!in.tensor(0, &dy) || !in.tensor(1, &x) || !in.tensor(2, &wt)) return;
    if (auto t = in.ints(7); t.size() == 1) transposed = t[0] != 0;
    mask = in.ints(10);
  } else {  // cudnn_convolution_backward(x, dy, w, ..., output_mask)
    if (!in.tensor(0, &x) || !in.tensor(1, &dy) || !in.tensor(2, &wt)) return;
    mask = in.ints(in.size() - 1);
  }
  if (mask.size() < 2) mask = {1, 1, 0};
  if (mask.size() < 3) mask.push_back(0);
  const std::vector<long long>& ys = dy.shape();
  if (ys.size() < 3) return;
  // The forward op maps x to dy (transposed: dy to x).
  const std::vector<long long> out_sp(ys.begin() + 2, ys.end());
  std::vector<long long> in_sp(x.shape().begin() + std::min<size_t>(2, x.shape().size()),
                               x.shape().end());
  const double fwd = transposed ? conv_flops(dy.shape(), wt.shape(), in_sp, false)
                                : conv_flops(x.shape(), wt.shape(), out_sp, false);
  const int es = in.out_es();
  if (mask[0]) w->flops += fwd, w->bytes += wt.bytes() + x.elements() * es;
  if (mask[1]) w->flops += fwd, w->bytes += x.bytes() + wt.elements() * es;
  if (mask[2]) w->flops += dy.elements(), w->bytes += static_cast<double>(ys[1]) * es;
  w->bytes += dy.bytes();
}

// Elementwise: reads every input, writes the broadcast shape (in place: the first input).
void elementwise(const OpCall& op, Work* w) {
  const std::string& n = op.n;
  const Inputs& in = op.in;
  const std::vector<Tensor> ts = in.tensors();
  const bool inplace = ends_with(n, "_");
  double out = 0;
  if (inplace) {
    w->rule = "in-place";
    out = in.elements(0);
  } else if (!ts.empty()) {
    out = numel(broadcast(ts));
  } else {
    // TensorList-only ops: one output per listed element.
    for (const ProfiledInput& p : in.in) {
      if (!p.list) continue;
      for (const auto& s : p.dims) out += numel(s);
      break;
    }
  }
  w->flops = out;
  w->bytes = in.read_all() + out * in.out_es();
}

void reduction(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  Tensor x;
  if (!in.tensor(0, &x)) return;
  const std::vector<long long>& s = x.shape();
  double out = 1;
  const std::vector<long long> dims = in.ints(1);
  if (!dims.empty() && !s.empty()) {
    std::set<long long> reduced;
    for (long long d : dims) reduced.insert(d < 0 ? d + static_cast<long long>(s.size()) : d);
    for (size_t i = 0; i < s.size(); ++i) {
      if (!reduced.count(static_cast<long long>(i))) out *= static_cast<double>(s[i]);
    }
  }
  w->flops = x.elements();
  w->bytes = x.bytes() + out * in.out_es();
}

void foreach_op(const OpCall& op, Work* w) {
  const std::string& n = op.n;
  const Inputs& in = op.in;
  const std::vector<const ProfiledKernel*>& ks = op.ks;
  const int es = op.es;
  int lists = 0;
  double elems = 0;
  bool have = false;
  for (const ProfiledInput& p : in.in) {
    if (!p.list) continue;
    ++lists;
    if (!have && !p.dims.empty()) {
      for (const auto& s : p.dims) elems += numel(s);
      have = true;
    }
  }
  if (!have) {
    // torch 2.11 records no TensorList dims for foreach ops: estimate from the launches.
    long long blocks = 0;
    for (const ProfiledKernel* k : ks) blocks += k->blocks;
    elems = static_cast<double>(blocks) * 65536.0;
    w->rule = "foreach (grid)";
  }
  if (lists == 0) lists = 1;
  const int written = (n == "_fused_adam_" || n == "_fused_adamw_") ? 3 : 1;
  w->flops = elems;
  w->bytes = (lists + written) * elems * es;
}

// ---- matmuls

void matmul(const OpCall& op, Work* w) {
  const std::string& n = op.n;
  const Inputs& in = op.in;
  Tensor a, b;
  const bool add = n.rfind("add", 0) == 0 || n.rfind("badd", 0) == 0;
  const size_t ia = add ? 1 : 0;
  w->rule = n.find("bmm") != std::string::npos ? "bmm" : "mm";
  if (!in.tensor(ia, &a) || !in.tensor(ia + 1, &b)) return;
  const auto& sa = a.shape();
  const auto& sb = b.shape();
  const bool batched = w->rule == "bmm";
  const size_t rank = batched ? 3 : 2;
  if (sa.size() != rank || sb.size() != rank) return;
  const double bt = batched ? static_cast<double>(sa[0]) : 1.0;
  const double m = static_cast<double>(sa[rank - 2]), k = static_cast<double>(sa[rank - 1]),
               nn = static_cast<double>(sb[rank - 1]);
  w->flops = 2 * bt * m * nn * k + (add ? bt * m * nn : 0);
  w->bytes = a.bytes() + b.bytes() + (add ? in.bytes(0) : 0) + bt * m * nn * in.out_es();
}

void linear(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  Tensor a, b, c;
  if (!in.tensor(0, &a) || !in.tensor(1, &b) || a.shape().empty() || b.shape().size() != 2) {
    return;
  }
  const double k = static_cast<double>(a.shape().back());
  const double rows = a.elements() / std::max(1.0, k);
  const double nn = static_cast<double>(b.shape()[0]);
  const bool bias = in.tensor(2, &c);
  w->flops = 2 * rows * nn * k + (bias ? rows * nn : 0);
  w->bytes = a.bytes() + b.bytes() + (bias ? c.bytes() : 0) + rows * nn * in.out_es();
}

// ---- normalization

void layer_norm(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  Tensor a, b;
  if (!in.tensor(0, &a)) return;
  double norm = 1;
  for (long long d : in.ints(1)) norm *= static_cast<double>(d);
  if (in.ints(1).empty() && in.tensor(2, &b)) norm = b.elements();
  const double rows = a.elements() / std::max(1.0, norm);
  w->flops = a.elements();
  w->bytes = a.bytes() + in.bytes(2) + in.bytes(3) + a.elements() * a.es + 2 * rows * 4;
}

void layer_norm_backward(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  Tensor a;
  if (!in.tensor(1, &a)) return;
  std::vector<long long> mask = in.ints(7);
  if (mask.size() != 3) mask = {1, 1, 1};
  w->flops = a.elements();
  w->bytes = in.read_all() + (mask[0] ? a.elements() * a.es : 0) +
             (mask[1] ? in.elements(5) * in.es(5) : 0) + (mask[2] ? in.elements(5) * in.es(5) : 0);
}

void batch_norm(const OpCall& op, Work* w) {
  const std::string& n = op.n;
  const Inputs& in = op.in;
  Tensor a;
  if (!in.tensor(0, &a) || a.shape().size() < 2) return;
  const double ch = static_cast<double>(a.shape()[1]);
  bool training = true;
  if (auto t = in.ints(5); t.size() == 1) training = t[0] != 0;
  const int passes =
      (n == "native_batch_norm" || n == "_native_batch_norm_legit") && training ? 2 : 1;
  w->flops = a.elements();
  w->bytes = passes * a.bytes() + (in.read_all() - a.bytes()) + a.elements() * a.es +
             (training ? 2 * ch * 4 : 0);
}

void batch_norm_backward(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  const bool cudnn = op.n != "native_batch_norm_backward";
  Tensor dy, x;
  if (!(cudnn ? in.tensor(0, &x) && in.tensor(1, &dy) : in.tensor(0, &dy) && in.tensor(1, &x)) ||
      x.shape().size() < 2) {
    return;
  }
  bool training = true;
  if (!cudnn) {
    if (auto t = in.ints(7); t.size() == 1) training = t[0] != 0;
  }
  const int passes = !cudnn && training ? 2 : 1;
  const double ch = static_cast<double>(x.shape()[1]);
  w->flops = x.elements();
  w->bytes = passes * (dy.bytes() + x.bytes()) + (in.read_all() - dy.bytes() - x.bytes()) +
             x.elements() * x.es + 2 * ch * x.es;
}

void softmax(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  Tensor a;
  if (!in.tensor(0, &a)) return;
  bool to_float = false;
  if (auto t = in.ints(2); t.size() == 1) to_float = t[0] != 0;
  w->flops = a.elements();
  w->bytes = a.bytes() + a.elements() * (to_float ? 4 : a.es);
}

// ---- losses, gathers, embeddings

void nll_loss(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  Tensor a, t;
  if (!in.tensor(0, &a) || !in.tensor(1, &t)) return;
  const double rows = t.elements();
  const auto red = in.ints(3);
  const bool none = red.size() == 1 && red[0] == 0;
  w->flops = rows;
  w->bytes = t.bytes() + rows * a.es + (none ? rows : 1) * a.es + a.es;
}

void nll_loss_backward(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  Tensor a, t;
  if (!in.tensor(1, &a) || !in.tensor(2, &t)) return;
  w->flops = t.elements();
  w->bytes = in.bytes(0) + t.bytes() + in.bytes(6) + t.elements() * a.es;
}

void gather(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  Tensor a, idx;
  if (!in.tensor(0, &a) || !in.tensor(2, &idx)) return;
  double out = idx.elements();
  const std::vector<long long>& s = a.shape();
  if (op.n == "index_select" && !s.empty()) {
    const auto dim = in.ints(1);
    const long long r = static_cast<long long>(s.size());
    const long long d =
        dim.size() == 1 ? std::clamp(dim[0] < 0 ? dim[0] + r : dim[0], 0LL, r - 1) : 0;
    out = a.elements() / std::max(1.0, static_cast<double>(s[static_cast<size_t>(d)])) *
          idx.elements();
  }
  w->flops = out;
  w->bytes = idx.bytes() + 2 * out * a.es;
}

void embedding_backward(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  Tensor a;
  if (!in.tensor(0, &a)) return;
  w->flops = a.elements();
  w->bytes = a.bytes() + in.bytes(1) + a.elements() * a.es;
}

// ---- pooling

void max_pool(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  Tensor a;
  if (!in.tensor(0, &a) || a.shape().size() < 3) return;
  const std::vector<long long> kernel = in.ints(1), stride = in.ints(2), pad = in.ints(3),
                               dil = in.ints(4);
  bool ceil_mode = false;
  if (auto t = in.ints(5); t.size() == 1) ceil_mode = t[0] != 0;
  const size_t sp = op.n == "max_pool2d_with_indices" ? 2 : 3;
  if (a.shape().size() < sp) return;
  double out = a.elements(), area = 1;
  for (size_t j = 0; j < sp; ++j) {
    const long long i = a.shape()[a.shape().size() - sp + j];
    const long long k = nth(kernel, j, 1), s = std::max(1LL, nth(stride, j, k)), p = nth(pad, j, 0),
                    d = std::max(1LL, nth(dil, j, 1));
    const long long span = i + 2 * p - d * (k - 1) - 1;
    long long o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (o - 1) * s >= i + p) --o;
    out = out / static_cast<double>(std::max(1LL, i)) * static_cast<double>(std::max(0LL, o));
    area *= static_cast<double>(k);
  }
  w->flops = out * area;
  w->bytes = a.bytes() + out * a.es + out * 8;
}

void max_pool_backward(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  Tensor a, dy;
  if (!in.tensor(0, &dy) || !in.tensor(1, &a)) return;
  w->flops = dy.elements();
  w->bytes = dy.bytes() + in.bytes(in.size() - 1) + a.elements() * a.es;
}

// ---- data movement

void cat(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  const double r = in.read_all();
  w->bytes = 2 * r;
  w->flops = in.list_es > 0 ? r / in.list_es : 0;
}

void copy(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  Tensor a;
  if (!in.tensor(0, &a)) return;
  w->flops = a.elements();
  w->bytes = in.bytes(1) + a.elements() * a.es;
}

void fill(const OpCall& op, Work* w) {
  Tensor a;
  if (!op.in.tensor(0, &a)) return;
  w->flops = a.elements();
  w->bytes = a.elements() * a.es;
}

void arange(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  double start = 0, end = 0, step = 1;
  auto val = [&](size_t i, double* v) {
    if (i >= in.size()) return false;
    try {
      size_t used = 0;
      *v = std::stod(in.in[i].value, &used);
      return used == in.in[i].value.size();
    } catch (...) {
      return false;
    }
  };
  if (!val(2, &step)) step = 1;
  if (val(0, &start) && val(1, &end) && step != 0) {
    const double count = std::max(0.0, std::ceil((end - start) / step));
    int es_out = 8;
    for (size_t i = 0; i < in.size(); ++i) {
      if (elem_size(in.in[i].type) > 0) es_out = elem_size(in.in[i].type);
    }
    w->flops = count;
    w->bytes = count * es_out;
  }
}

void dropout(const OpCall& op, Work* w) {
  Tensor a;
  if (!op.in.tensor(0, &a)) return;
  w->flops = a.elements();
  w->bytes = a.bytes() + a.elements() * (a.es + 1);
}

// ---- fused attention

// Where an SDPA op keeps what its FLOPs need: the layout of q / k ([b, h, s, d] for the
// scaled_dot_product_* and cuDNN ops, [b, s, h, d] for the flash / efficient kernels' own
// ops), the input index of q (1 in a backward: grad_out comes first) and of is_causal
// (the efficient ops' custom_mask_type, 0 = none), from the ops' ATen signatures.
struct AttentionSignature {
  const char* name;
  bool bhsd;
  size_t q, causal;
  bool backward;
};

const AttentionSignature* attention_signature(const std::string& n) {
  static const AttentionSignature table[] = {
      {"_scaled_dot_product_cudnn_attention", true, 0, 6, false},
      {"_cudnn_attention_forward", true, 0, 10, false},
      {"_scaled_dot_product_cudnn_attention_backward", true, 1, 14, true},
      {"_cudnn_attention_backward", true, 1, 14, true},
      {"_scaled_dot_product_flash_attention", true, 0, 4, false},
      {"_flash_attention_forward", false, 0, 8, false},
      {"_scaled_dot_product_flash_attention_backward", true, 1, 11, true},
      {"_flash_attention_backward", false, 1, 11, true},
      {"_scaled_dot_product_efficient_attention", true, 0, 6, false},
      {"_efficient_attention_forward", false, 0, 9, false},
      {"_scaled_dot_product_efficient_attention_backward", true, 1, 11, true},
      {"_efficient_attention_backward", false, 1, 14, true},
  };
  for (const AttentionSignature& a : table) {
    if (n == a.name) return &a;
  }
  return nullptr;
}

// FlashAttention's count, as the simulator's attention op (datasets/gpt.h
// flash_attention_flops): forward 4 b h_q d x pairs, pairs = s_q s_k, or s (s + 1) / 2
// when causal with s_q = s_k; backward 2.5 x the forward. Bytes: forward reads q, k, v and
// writes the output (q-sized) and the fp32 logsumexp (b h_q s_q); backward reads its
// tensor inputs (grad_out, q, k, v, out, logsumexp, ...) and writes dq, dk, dv.
void attention(const OpCall& op, Work* w) {
  const AttentionSignature* sig = attention_signature(op.n);
  const Inputs& in = op.in;
  Tensor q, k, v;
  if (!sig || !in.tensor(sig->q, &q) || !in.tensor(sig->q + 1, &k) || !in.tensor(sig->q + 2, &v) ||
      q.shape().size() != 4 || k.shape().size() != 4) {
    return;
  }
  const size_t seq_dim = sig->bhsd ? 2 : 1;
  const double sq = static_cast<double>(q.shape()[seq_dim]);
  const double sk = static_cast<double>(k.shape()[seq_dim]);
  const std::vector<long long> flag = in.ints(sig->causal);
  const bool causal = flag.size() == 1 && flag[0] != 0 && sq == sk;
  const double pairs = causal ? sq * (sq + 1) / 2 : sq * sk;
  const double heads_dim = q.elements() / std::max(1.0, sq);  // b h_q d
  const double forward = 4 * heads_dim * pairs;
  w->flops = sig->backward ? 2.5 * forward : forward;
  w->backward = sig->backward;
  const long long d = q.shape()[3], dv = v.shape().size() == 4 ? v.shape()[3] : d;
  w->attrs = {{"head_dim", std::to_string(d)}};
  if (dv != d) w->attrs.emplace_back("v_head_dim", std::to_string(dv));
  const double lse = q.elements() / static_cast<double>(std::max(1LL, q.shape()[3])) * 4;
  w->bytes = sig->backward ? in.read_all() + q.bytes() + k.bytes() + v.bytes()
                           : q.bytes() + k.bytes() + v.bytes() + q.elements() * q.es + lse;
}

// ---- inductor's generated kernels

// A torch.compile'd kernel's launch, recorded as a CPU op named after the kernel
// (triton_poi_fused_..., triton_red_fused_...) whose inputs are the kernel's arguments:
// the buffers it reads and writes (outputs included), then the element counts as Scalars.
// Each buffer is moved once: bytes = their stored bytes; FLOPs = the element counts' product.
void triton_kernel(const OpCall& op, Work* w) {
  const Inputs& in = op.in;
  double bytes = 0;
  for (const Tensor& t : in.tensors()) bytes += t.bytes();
  w->bytes = bytes;
  double elements = 1;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::vector<long long> n = in.ints(i);
    if (in.in[i].type == "Scalar" && n.size() == 1) elements *= static_cast<double>(n[0]);
  }
  w->flops = elements;
}

// ---- the table

// Op names (without "aten::"; a trailing '*' matches any name starting so), the rule's
// name and its function. An op no pattern matches gets the elementwise rule, marked unknown.
struct RuleEntry {
  std::vector<std::string> patterns;
  const char* name;
  Rule rule;
};

const std::vector<RuleEntry>& rule_table() {
  static const std::vector<RuleEntry> table = {
      {{"mm", "addmm", "addmm_", "bmm", "baddbmm", "baddbmm_"}, "mm", matmul},
      {{"linear"}, "mm", linear},
      {{"cudnn_convolution", "convolution", "_convolution", "cudnn_convolution_transpose",
        "miopen_convolution"},
       "conv",
       conv_forward},
      {{"convolution_backward", "cudnn_convolution_backward"}, "conv backward", conv_backward},
      // multi_tensor_apply
      {{"_foreach_*", "_fused_adam_", "_fused_adamw_", "_fused_sgd_"}, "foreach", foreach_op},
      // the SDPA ops of attention_signature (others of these prefixes: no work)
      {{"_scaled_dot_product_*", "_cudnn_attention_*", "_flash_attention_*",
        "_efficient_attention_*"},
       "attention",
       attention},
      {{"triton_*"}, "triton", triton_kernel},
      {{"native_layer_norm"}, "layer_norm", layer_norm},
      {{"native_layer_norm_backward"}, "layer_norm backward", layer_norm_backward},
      {{"native_batch_norm", "cudnn_batch_norm", "_native_batch_norm_legit", "miopen_batch_norm"},
       "batch_norm",
       batch_norm},
      {{"native_batch_norm_backward", "cudnn_batch_norm_backward", "miopen_batch_norm_backward"},
       "batch_norm backward",
       batch_norm_backward},
      {{"_softmax", "_log_softmax"}, "softmax", softmax},
      {{"sum", "mean", "amax", "amin", "max", "min", "prod", "norm", "var", "std",
        "linalg_vector_norm"},
       "reduction",
       reduction},
      {{"nll_loss_forward"}, "nll_loss", nll_loss},
      {{"nll_loss_backward"}, "nll_loss backward", nll_loss_backward},
      {{"gather", "index_select"}, "gather", gather},
      {{"embedding_dense_backward"}, "embedding backward", embedding_backward},
      {{"max_pool2d_with_indices", "max_pool3d_with_indices"}, "max_pool", max_pool},
      {{"max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward"},
       "max_pool backward",
       max_pool_backward},
      {{"cat"}, "cat", cat},
      {{"copy_"}, "copy", copy},
      {{"fill_", "zero_", "normal_", "uniform_", "bernoulli_", "random_", "exponential_"},
       "fill",
       fill},
      {{"arange"}, "arange", arange},
      {{"native_dropout"}, "dropout", dropout},
      // elementwise (broadcast) ops known by name
      // clang-format off
      {{"add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "neg", "neg_", "exp", "exp_",
        "log", "log_", "sqrt", "sqrt_", "rsqrt", "rsqrt_", "pow", "pow_", "abs", "reciprocal",
        "relu", "relu_", "gelu", "gelu_", "gelu_backward", "silu", "silu_", "silu_backward",
        "sigmoid", "sigmoid_", "sigmoid_backward", "tanh", "tanh_", "tanh_backward",
        "threshold_backward", "clamp", "clamp_", "clamp_min", "clamp_min_", "clamp_max",
        "clamp_max_", "where", "masked_fill", "masked_fill_", "native_dropout_backward",
        "_softmax_backward_data", "_log_softmax_backward_data", "addcmul", "addcmul_", "addcdiv",
        "addcdiv_", "lerp", "lerp_", "eq", "ne", "lt", "le", "gt", "ge", "logical_not",
        "_to_copy", "hardtanh", "hardtanh_", "hardtanh_backward", "leaky_relu", "leaky_relu_",
        "leaky_relu_backward", "erf", "sin", "cos", "square", "maximum", "minimum", "triu",
        "tril", "_local_scalar_dense", "clone", "contiguous", "mse_loss", "mse_loss_backward",
        "threshold", "threshold_", "fmod", "remainder", "sign", "floor", "ceil", "round",
        "trunc", "frac", "copysign", "atan2", "hypot", "bitwise_and", "bitwise_or",
        "bitwise_not", "logical_and", "logical_or", "isinf", "isnan", "nan_to_num"},
       "elementwise", elementwise},
      // clang-format on
  };
  return table;
}

// The rule of an op name (without "aten::"), or null.
const RuleEntry* find_rule(const std::string& n) {
  struct Index {
    std::unordered_map<std::string, const RuleEntry*> exact;
    std::vector<std::pair<std::string, const RuleEntry*>> prefixes;
  };
  static const Index index = [] {
    Index ix;
    for (const RuleEntry& e : rule_table()) {
      for (const std::string& p : e.patterns) {
        if (!p.empty() && p.back() == '*') {
          ix.prefixes.emplace_back(p.substr(0, p.size() - 1), &e);
        } else {
          PLACER_CHECK(ix.exact.emplace(p, &e).second, "op rule table: '" << p << "' twice");
        }
      }
    }
    return ix;
  }();
  if (auto it = index.exact.find(n); it != index.exact.end()) return it->second;
  for (const auto& [prefix, entry] : index.prefixes) {
    if (n.rfind(prefix, 0) == 0) return entry;
  }
  return nullptr;
}

Work rule_for(const std::string& name, const Inputs& in,
              const std::vector<const ProfiledKernel*>& ks, int es) {
  const std::string n = strip(name);
  const OpCall op{n, in, ks, es};
  Work w;
  const RuleEntry* e = find_rule(n);
  w.rule = e ? e->name : "elementwise";
  (e ? e->rule : elementwise)(op, &w);
  w.known = e != nullptr;
  return w;
}


}  // namespace

OpWork op_work(const std::string& name, const std::vector<ProfiledInput>& inputs, int list_es,
               const std::vector<const ProfiledKernel*>& kernels, int es) {
  return rule_for(name, Inputs{inputs, list_es}, kernels, es);
}

}  // namespace placer
