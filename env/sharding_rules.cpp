// Per-op rules of the sharding propagation (docs/opp.md); the variables an op holds are
// reconstructed in sharding_variables.cpp.
#include "env/sharding_rules.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "env/sharding_attrs.h"

namespace placer {
namespace shard {

namespace {

// Builds one op's rule; every input, output and variable of the op ends up as an operand.
class Builder {
 public:
  Builder(const Graph& g, OpId id, const std::vector<int>& vars, const std::vector<VarSpec>& specs,
          int degree)
      : g_(g), o_(g.op(id)), vars_(vars), specs_(specs), degree_(degree) {}

  OpRule build() {
    if (o_.category == OpCategory::kInput) return {};
    const bool ok = dispatch();
    if (!ok) replicate("unknown op type (every input and output replicated)");
    finish();
    return std::move(rule_);
  }

 private:
  const Shape& shape(TensorId t) const { return g_.tensor(t).shape; }
  const Shape& out0() const { return shape(o_.outputs[0]); }
  const Shape& in0() const { return shape(o_.inputs[0]); }
  bool has_weight() const { return !specs_.empty() && specs_[0].suffix == "weight"; }

  int factor(Factor::Kind kind, std::string name, bool free_inner = false) {
    Factor f;
    f.kind = kind;
    f.name = std::move(name);
    f.free_inner = free_inner;
    rule_.factors.push_back(std::move(f));
    return int(rule_.factors.size()) - 1;
  }
  int pass(const std::string& name) { return factor(Factor::Kind::kPass, name); }

  void add_tensor(TensorId t, bool output, std::vector<int> f) {
    Operand op;
    op.id = t;
    op.is_output = output;
    op.factor = std::move(f);
    op.factor.resize(shape(t).size(), -1);
    rule_.operands.push_back(std::move(op));
  }
  void add_input(size_t i, std::vector<int> f) {
    added_in_.push_back(i);
    add_tensor(o_.inputs[i], false, std::move(f));
  }
  void add_output(size_t i, std::vector<int> f) {
    added_out_.push_back(i);
    add_tensor(o_.outputs[i], true, std::move(f));
  }
  void add_var(size_t local, std::vector<int> f) {
    if (local >= vars_.size()) return;
    added_var_.push_back(local);
    Operand op;
    op.is_var = true;
    op.id = uint32_t(vars_[local]);
    op.factor = std::move(f);
    op.factor.resize(specs_[local].shape.size(), -1);
    if (specs_[local].replicate_only) std::fill(op.factor.begin(), op.factor.end(), -1);
    rule_.operands.push_back(std::move(op));
  }
  // Operands not mapped by the rule: replicated whenever anything is split.
  void finish() {
    rule_.kind = rule_.kind == OpRule::Kind::kNone ? OpRule::Kind::kFactors : rule_.kind;
    auto added = [](const std::vector<size_t>& v, size_t i) {
      return std::find(v.begin(), v.end(), i) != v.end();
    };
    for (size_t i = 0; i < o_.inputs.size(); ++i) {
      if (!added(added_in_, i)) add_tensor(o_.inputs[i], false, {});
    }
    for (size_t i = 0; i < o_.outputs.size(); ++i) {
      if (!added(added_out_, i)) add_tensor(o_.outputs[i], true, {});
    }
    for (size_t i = 0; i < vars_.size(); ++i) {
      if (!added(added_var_, i)) add_var(i, {});
    }
    // A contraction the simulator cannot split (OpPartition::kReduceDim) is a conflict.
    if (!can_hold_partial(o_.category) && !allow_partial_) {
      for (Factor& f : rule_.factors) {
        if (f.kind == Factor::Kind::kContract) f.kind = Factor::Kind::kForbidden;
      }
    }
  }
  void replicate(const std::string& name) {
    rule_ = OpRule{};
    rule_.kind = OpRule::Kind::kFactors;
    rule_.name = name;
    allow_partial_ = false;
    added_in_.clear();
    added_out_.clear();
    added_var_.clear();
  }

  bool dispatch() {
    const std::string& t = o_.type;
    if (o_.outputs.empty()) return false;
    if (t == "MatMul") return matmul();
    if (t == "FlashAttention") return flash_attention();
    if (t == "RotaryEmbedding") return rotary();
    if (t == "Gemm") return gemm();
    if (t == "Conv") return conv();
    if (t == "Gather" || t == "Embedding") return gather();
    if (t == "Reshape" || t == "Flatten" || t == "Squeeze" || t == "Unsqueeze") return reshape();
    if (t == "Transpose") return transpose();
    if (t == "Softmax" || t == "LogSoftmax") {
      const int axis = norm_axis(attr_int(o_, "axis", -1), out0().size());
      return axis >= 0 && elementwise("softmax", {axis}, 1);
    }
    if (t == "SoftmaxCrossEntropy") return vocab_cross_entropy();
    if (t == "BatchNormalization") return batchnorm();
    if (t == "InstanceNormalization") return channel_norm("instance norm");
    if (t == "LayerNormalization" || t == "SimplifiedLayerNormalization" ||
        t == "RMSNormalization") {
      const int axis = norm_axis(attr_int(o_, "axis", -1), out0().size());
      if (axis < 0) return false;
      std::vector<int> forb;
      for (int d = axis; d < int(out0().size()); ++d) forb.push_back(d);
      return elementwise("layer norm", forb, 1);
    }
    if (t == "GroupNormalization") {
      std::vector<int> forb;
      for (int d = 1; d < int(out0().size()); ++d) forb.push_back(d);
      return elementwise("group norm", forb, 1);
    }
    if (t == "MaxPool" || t == "AveragePool" || t == "LpPool") return pooling();
    if (t == "GlobalAveragePool" || t == "GlobalMaxPool") return global_pool();
    if (is_reduce_type(t)) return reduction();
    if (t == "Concat") return concat();
    if (t == "Pad") return pad();
    if (t == "Slice" || t == "Split") return slice();
    if (t == "LSTM" || t == "GRU" || t == "RNN") return recurrent();
    if (t == "Expand") return elementwise("broadcast (Expand)", {}, 1);
    if (is_elementwise_type(t) || o_.category == OpCategory::kElementwise)
      return elementwise("element-wise", {}, o_.inputs.size());
    return false;
  }

  // Broadcasting element-wise rule over the first `num_inputs` inputs, the outputs and the
  // variables: dims aligned from the right with the first output; size-1 / missing dims are
  // not mapped. Dims in `forbidden` (output dims) may not be split.
  bool elementwise(const std::string& name, const std::vector<int>& forbidden, size_t num_inputs) {
    rule_.name = name;
    const Shape y = out0();
    const size_t r = y.size();
    for (size_t j = 0; j < r; ++j) {
      const bool forb = std::find(forbidden.begin(), forbidden.end(), int(j)) != forbidden.end();
      factor(forb ? Factor::Kind::kForbidden : Factor::Kind::kPass,
             (forb ? name + " axis " : std::string("dim ")) + std::to_string(j));
    }
    auto map = [&](const Shape& s, std::vector<int>* f) {
      if (s.size() > r) return false;
      f->assign(s.size(), -1);
      for (size_t i = 0; i < s.size(); ++i) {
        const size_t j = r - s.size() + i;
        const bool forb = rule_.factors[j].kind == Factor::Kind::kForbidden;
        if (s[i] == y[j] || forb) {
          if (s[i] > 1 || forb) (*f)[i] = int(j);
        } else if (s[i] != 1) {
          return false;
        }
      }
      return true;
    };
    std::vector<int> f;
    for (size_t i = 0; i < std::min(num_inputs, o_.inputs.size()); ++i) {
      if (!map(shape(o_.inputs[i]), &f)) return false;
      add_input(i, f);
    }
    for (size_t i = 0; i < o_.outputs.size(); ++i) {
      if (!map(shape(o_.outputs[i]), &f)) return false;
      add_output(i, f);
    }
    for (size_t v = 0; v < specs_.size(); ++v) {
      if (specs_[v].replicate_only) continue;
      if (!map(specs_[v].shape, &f)) continue;  // left replicated by finish()
      add_var(v, f);
    }
    return true;
  }

  // The core of multi-head attention as the GPT / Transformer generators write it, where the
  // heads are a dim of the scores but not of the [b, s, c] projections (c = heads x d_head,
  // or the fused q, k, v width):
  //   scores:  X [b, s, c] (one fused input, or q and k)  -> Y [b, a, s, s]
  //   context: P [b, a, s, t], V [b, t, c]                -> Y [b, s, h]
  // Factors: batch (b); heads (a; the projections' last dim split by heads, any stride, as
  // Megatron lays the fused q, k, v out per head; the output of context contiguous);
  // sequence (forbidden: softmax and the context mix positions). Without this rule the
  // shapes fit no matmul rule and the op is unknown (everything replicated).
  bool attention_core() {
    if (!specs_.empty() || o_.inputs.empty() || o_.inputs.size() > 2) return false;
    const Shape& y = out0();
    auto heads_split_ok = [](int64_t c, int64_t a) { return a > 0 && c > 0 && c % a == 0; };
    if (y.size() == 4) {  // scores
      const int64_t b = y[0], a = y[1], s = y[2];
      for (TensorId t : o_.inputs) {
        const Shape& x = shape(t);
        if (x.size() != 3 || x[0] != b || x[1] != s || !heads_split_ok(x[2], a)) return false;
      }
      rule_.name = "attention scores";
      const int fb = pass("batch"), fh = factor(Factor::Kind::kPass, "heads", true);
      const int fs = factor(Factor::Kind::kForbidden, "sequence");
      for (size_t i = 0; i < o_.inputs.size(); ++i) add_input(i, {fb, fs, fh});
      add_output(0, {fb, fh, fs, -1});
      return true;
    }
    if (y.size() == 3 && o_.inputs.size() == 2) {  // context
      const Shape& p = in0();
      const Shape& v = shape(o_.inputs[1]);
      if (p.size() != 4 || v.size() != 3) return false;
      const int64_t b = p[0], a = p[1];
      if (v[0] != b || y[0] != b || y[1] != p[2] || v[1] != p[3] || !heads_split_ok(v[2], a) ||
          !heads_split_ok(y[2], a)) {
        return false;
      }
      rule_.name = "attention context";
      const int fb = pass("batch"), fh = factor(Factor::Kind::kPass, "heads", true);
      const int fs = factor(Factor::Kind::kForbidden, "sequence");
      add_input(0, {fb, fh, fs, -1});
      add_input(1, {fb, -1, fh});
      add_output(0, {fb, fs, fh});
      return true;
    }
    return false;
  }

  // FlashAttention as the generators write it (one op for scores, softmax and context):
  //   q, k, v [b, s, c] (one fused input, or rotated q, k and the fused q, k, v) ->
  //   context [b, s, h], logsumexp [b, a, s].
  // Split by heads like Megatron's core attention (each rank holds a / k query heads and
  // their kv groups: k must divide the kv heads too); batch passes; the sequence is
  // forbidden (the softmax mixes positions).
  bool flash_attention() {
    if (!specs_.empty() || o_.inputs.empty() || o_.inputs.size() > 2 || o_.outputs.size() != 2) {
      return false;
    }
    const Shape& y = out0();
    const Shape& lse = shape(o_.outputs[1]);
    if (y.size() != 3 || lse.size() != 3 || lse[0] != y[0] || lse[2] != y[1]) return false;
    const int64_t b = y[0], s = y[1], a = lse[1];
    auto heads_split_ok = [](int64_t c, int64_t h) { return h > 0 && c > 0 && c % h == 0; };
    if (!heads_split_ok(y[2], a)) return false;
    for (TensorId t : o_.inputs) {
      const Shape& x = shape(t);
      if (x.size() != 3 || x[0] != b || x[1] != s || !heads_split_ok(x[2], a)) return false;
    }
    const int64_t kv = attr_int(o_, "kv_heads", a);
    const bool even = degree_ > 0 && a % degree_ == 0 && kv % degree_ == 0;
    rule_.name = "flash attention";
    const int fb = pass("batch");
    const int fh = factor(even ? Factor::Kind::kPass : Factor::Kind::kForbidden,
                          even ? "heads" : "heads (k does not divide the kv heads)", true);
    const int fs = factor(Factor::Kind::kForbidden, "sequence");
    for (size_t i = 0; i < o_.inputs.size(); ++i) add_input(i, {fb, fs, fh});
    add_output(0, {fb, fs, fh});
    add_output(1, {fb, fh, fs});
    return true;
  }

  // Rotary embedding of q and k read from the fused q, k, v: [b, s, c_in] -> [b, s, c_out],
  // position-wise, per head: batch, sequence and heads (any stride) pass.
  bool rotary() {
    if (!specs_.empty() || o_.inputs.size() != 1) return false;
    const Shape& x = in0();
    const Shape& y = out0();
    if (x.size() != 3 || y.size() != 3 || x[0] != y[0] || x[1] != y[1]) return false;
    rule_.name = "rotary embedding";
    const int fb = pass("batch"), fs = pass("sequence");
    const int fh = factor(Factor::Kind::kPass, "heads", true);
    add_input(0, {fb, fs, fh});
    for (size_t i = 0; i < o_.outputs.size(); ++i) add_output(i, {fb, fs, fh});
    return true;
  }

  // Cross-entropy of logits [..., V] against labels [...] into a scalar: a vocabulary split
  // (Megatron's vocab-parallel cross-entropy) leaves partial sums, all-reduced. Other dims of
  // the logits and the labels cannot be split (the mean over them is not modelled).
  bool vocab_cross_entropy() {
    if (o_.inputs.size() != 2 || out0().size() > 1) return false;
    const Shape& x = in0();
    if (x.size() < 2) return false;
    rule_.name = "vocab-parallel cross-entropy";
    const int v = factor(Factor::Kind::kContract, "vocabulary");
    std::vector<int> fx(x.size(), -1);
    fx.back() = v;
    add_input(0, fx);
    add_input(1, {});
    add_output(0, {});
    allow_partial_ = true;  // the validator takes a softmax loss over split logits
    return true;
  }

  // X[..., K] x W -> Y[..., N] with the op's variable 0 the weight ([K, N], or [N, K] when
  // `transposed`) and, when not transposed, variable 1 the bias [N].
  bool weighted_matmul(const std::string& n_name, bool transposed) {
    const Shape& x = in0();
    const Shape& y = out0();
    if (x.empty() || x.size() != y.size()) return false;
    const size_t r = x.size();
    std::vector<int> fx(r), fy(r);
    for (size_t j = 0; j + 1 < r; ++j) fx[j] = fy[j] = pass("batch dim " + std::to_string(j));
    const int k = factor(Factor::Kind::kContract, "contraction K");
    const int n = pass(n_name);
    fx[r - 1] = k;
    fy[r - 1] = n;
    add_input(0, fx);
    add_output(0, fy);
    add_var(0, transposed ? std::vector<int>{n, k} : std::vector<int>{k, n});
    if (!transposed) add_var(1, {n});
    return true;
  }

  bool matmul() {
    if (attention_core()) return true;
    rule_.name = "matmul";
    if (o_.inputs.size() == 1 && has_weight()) return weighted_matmul("output features N", false);
    if (o_.inputs.size() == 1 && specs_.size() == 1 && specs_[0].suffix == "table" &&
        !specs_[0].replicate_only) {
      // An output layer tied to the embedding table [V, D] (Megatron's tied lm head):
      // y[..., V] = x[..., D] table^T. Splitting the vocabulary (table dim 0, as the
      // vocab-parallel embedding does) splits the logits; splitting D leaves partial sums.
      const Shape& w = specs_[0].shape;
      if (in0().empty() || out0().empty() || w.size() != 2 || w[0] != out0().back() ||
          w[1] != in0().back()) {
        return false;
      }
      rule_.name = "matmul (tied table)";
      return weighted_matmul("vocabulary N", true);
    }
    if (o_.inputs.size() == 1) {
      // The weight is not (only) this op's: a slice of a fused projection weight owned by
      // another op (no parameters), or a fused weight larger than in x out (1-D variable).
      // It stays replicated; only the batch dims pass.
      const Shape& x = in0();
      const Shape& y = out0();
      if (x.empty() || x.size() != y.size()) return false;
      rule_.name = "matmul (unowned weight)";
      const size_t r = x.size();
      std::vector<int> fx(r), fy(r);
      for (size_t j = 0; j + 1 < r; ++j) fx[j] = fy[j] = pass("batch dim " + std::to_string(j));
      fx[r - 1] = factor(Factor::Kind::kForbidden, "contraction K of an unowned weight");
      fy[r - 1] = factor(Factor::Kind::kForbidden, "output features of an unowned weight");
      add_input(0, fx);
      add_output(0, fy);
      return true;
    }
    if (o_.inputs.size() != 2 || !specs_.empty()) return false;
    const Shape& a = in0();
    const Shape& b = shape(o_.inputs[1]);
    const Shape& y = out0();
    const size_t ra = a.size(), rb = b.size(), ry = y.size();
    if (ra < 2 || rb < 2 || ry != std::max(ra, rb)) return false;
    const size_t nb = ry - 2;
    std::vector<int> fy(ry);
    for (size_t j = 0; j < nb; ++j) fy[j] = pass("batch dim " + std::to_string(j));
    const int m = pass("rows M"), n = pass("columns N");
    const int k = factor(Factor::Kind::kContract, "contraction K");
    fy[ry - 2] = m;
    fy[ry - 1] = n;
    auto batch = [&](const Shape& s, std::vector<int>* f) {
      for (size_t i = 0; i + 2 < s.size(); ++i) {
        const size_t j = nb - (s.size() - 2) + i;
        (*f)[i] = s[i] == y[j] && s[i] > 1 ? int(j) : -1;
      }
    };
    std::vector<int> fa(ra), fb(rb);
    batch(a, &fa);
    batch(b, &fb);
    fa[ra - 2] = m;
    fa[ra - 1] = k;
    fb[rb - 2] = k;
    fb[rb - 1] = n;
    add_input(0, fa);
    add_input(1, fb);
    add_output(0, fy);
    return true;
  }

  bool gemm() {
    rule_.name = "gemm";
    const bool ta = attr_int(o_, "transA", 0) != 0, tb = attr_int(o_, "transB", 0) != 0;
    const Shape& x = in0();
    if (x.size() != 2 || out0().size() != 2) return false;
    const int m = pass("rows M"), n = pass("output features N");
    const int k = factor(Factor::Kind::kContract, "contraction K");
    add_input(0, ta ? std::vector<int>{k, m} : std::vector<int>{m, k});
    add_output(0, {m, n});
    if (o_.inputs.size() == 1 && has_weight()) {
      add_var(0, tb ? std::vector<int>{n, k} : std::vector<int>{k, n});
      add_var(1, {n});
      return true;
    }
    if (o_.inputs.size() < 2 || !specs_.empty() || shape(o_.inputs[1]).size() != 2) return false;
    add_input(1, tb ? std::vector<int>{n, k} : std::vector<int>{k, n});
    if (o_.inputs.size() >= 3) {
      const Shape& c = shape(o_.inputs[2]);
      const Shape& y = out0();
      if (c.size() > 2) return false;
      std::vector<int> fc(c.size(), -1);
      for (size_t i = 0; i < c.size(); ++i) {
        const size_t j = 2 - c.size() + i;
        if (c[i] == y[j] && c[i] > 1) fc[i] = j == 0 ? m : n;
      }
      add_input(2, fc);
    }
    return true;
  }

  bool conv() {
    rule_.name = "conv";
    if (o_.inputs.size() != 1 || !has_weight()) return false;
    const Shape& x = in0();
    const Shape& y = out0();
    if (x.size() < 3 || y.size() != x.size()) return false;
    const int64_t group = attr_int(o_, "group", 1);
    const int b = pass("batch");
    const int sp = factor(Factor::Kind::kForbidden, "spatial dims");
    std::vector<int> fx(x.size(), sp), fy(y.size(), sp);
    fx[0] = fy[0] = b;
    if (group == 1) {
      const int cout = pass("output channels");
      const int cin = factor(Factor::Kind::kContract, "input channels (contraction)");
      fx[1] = cin;
      fy[1] = cout;
      add_var(0, {cout, cin});
      add_var(1, {cout});
    } else {
      // Grouped / depthwise: channels split along whole groups (group % k == 0).
      const int ch = factor(group % degree_ == 0 ? Factor::Kind::kPass : Factor::Kind::kForbidden,
                            "channels (grouped conv, " + std::to_string(group) + " groups)", true);
      fx[1] = fy[1] = ch;
      add_var(0, {ch});
      add_var(1, {ch});
    }
    add_input(0, fx);
    add_output(0, fy);
    return true;
  }

  bool gather() {
    const Shape& y = out0();
    if (y.empty()) return false;
    if (!specs_.empty() && specs_[0].suffix == "table") {
      rule_.name = "embedding";
      const int v = factor(Factor::Kind::kContract, "vocabulary V");
      const int d = pass("embedding dim D");
      std::vector<int> fy(y.size(), -1);
      fy.back() = d;
      if (o_.inputs.size() == 1 && shape(o_.inputs[0]).size() + 1 == y.size()) {
        std::vector<int> fi(y.size() - 1);
        for (size_t i = 0; i + 1 < y.size(); ++i)
          fi[i] = fy[i] = pass("index dim " + std::to_string(i));
        add_input(0, fi);
      } else if (!o_.inputs.empty()) {
        return false;
      }
      add_output(0, fy);
      add_var(0, {v, d});
      return true;
    }
    if (!specs_.empty() || o_.inputs.empty() || o_.inputs.size() > 2) return false;
    rule_.name = "gather";
    const Shape& x = in0();
    const int a = norm_axis(attr_int(o_, "axis", 0), x.size());
    if (a < 0 || y.size() + 1 < x.size()) return false;
    // Indices folded into the op (a constant): their rank from the shapes.
    const Shape idx =
        o_.inputs.size() == 2 ? shape(o_.inputs[1]) : Shape(y.size() + 1 - x.size(), 0);
    if (y.size() != x.size() - 1 + idx.size()) return false;
    std::vector<int> fx(x.size()), fi(idx.size()), fy(y.size());
    for (size_t d = 0; d < x.size(); ++d) {
      fx[d] = int(d) == a ? factor(Factor::Kind::kForbidden, "gathered axis")
                          : pass("data dim " + std::to_string(d));
    }
    for (size_t i = 0; i < idx.size(); ++i) fi[i] = pass("index dim " + std::to_string(i));
    for (size_t j = 0; j < y.size(); ++j) {
      if (int(j) < a)
        fy[j] = fx[j];
      else if (j < size_t(a) + idx.size())
        fy[j] = fi[j - size_t(a)];
      else
        fy[j] = fx[j - idx.size() + 1];
    }
    add_input(0, fx);
    if (o_.inputs.size() == 2) add_input(1, fi);
    add_output(0, fy);
    return true;
  }

  // Pad: padded dims (output size differs) cannot be split, the others pass.
  bool pad() {
    rule_.name = "pad";
    const Shape& x = in0();
    const Shape& y = out0();
    if (x.empty() || x.size() != y.size()) return false;
    std::vector<int> f(x.size());
    for (size_t d = 0; d < x.size(); ++d) {
      f[d] = x[d] != y[d] ? factor(Factor::Kind::kForbidden, "padded axis " + std::to_string(d))
                          : pass("dim " + std::to_string(d));
    }
    add_input(0, f);
    add_output(0, f);
    return true;
  }

  bool reshape() {
    const Shape& x = in0();
    const Shape& y = out0();
    if (o_.inputs.empty() || x.empty() || y.empty() || prod(x) != prod(y)) return false;
    rule_.kind = OpRule::Kind::kReshape;
    rule_.name = "reshape";
    add_input(0, {});
    add_output(0, {});
    return true;
  }

  bool transpose() {
    rule_.name = "transpose";
    const Shape& x = in0();
    const Shape& y = out0();
    std::vector<int64_t> perm;
    if (!attr_ints(o_, "perm", &perm)) {
      for (size_t i = x.size(); i-- > 0;) perm.push_back(int64_t(i));
    }
    if (perm.size() != x.size() || y.size() != x.size()) return false;
    std::vector<int> fx(x.size()), fy(y.size());
    for (size_t d = 0; d < x.size(); ++d) fx[d] = pass("dim " + std::to_string(d));
    for (size_t e = 0; e < y.size(); ++e) {
      const int d = norm_axis(perm[e], x.size());
      if (d < 0 || x[size_t(d)] != y[e]) return false;
      fy[e] = fx[size_t(d)];
    }
    add_input(0, fx);
    add_output(0, fy);
    return true;
  }

  bool batchnorm() {
    rule_.name = "batch norm";
    const Shape& x = in0();
    if (x.size() < 2) return false;
    const int b = pass("batch"), c = pass("channels");
    const int sp = factor(Factor::Kind::kForbidden, "batch norm spatial dims");
    std::vector<int> fx(x.size(), sp);
    fx[0] = b;
    fx[1] = c;
    add_input(0, fx);
    for (size_t i = 1; i < o_.inputs.size(); ++i) {
      const Shape& s = shape(o_.inputs[i]);
      add_input(i, s.size() == 1 && s[0] == x[1] ? std::vector<int>{c} : std::vector<int>{});
    }
    add_output(0, fx);
    for (size_t i = 1; i < o_.outputs.size(); ++i) {
      const Shape& s = shape(o_.outputs[i]);
      add_output(i, s.size() == 1 && s[0] == x[1] ? std::vector<int>{c} : std::vector<int>{});
    }
    for (size_t v = 0; v < specs_.size(); ++v) add_var(v, {c});
    return true;
  }

  bool channel_norm(const std::string& name) {
    rule_.name = name;
    const Shape& x = in0();
    if (x.size() < 3 || out0() != x) return false;
    const int b = pass("batch"), c = pass("channels");
    const int sp = factor(Factor::Kind::kForbidden, name + " spatial dims");
    std::vector<int> fx(x.size(), sp);
    fx[0] = b;
    fx[1] = c;
    add_input(0, fx);
    add_output(0, fx);
    for (size_t v = 0; v < specs_.size(); ++v) add_var(v, {c});
    return true;
  }

  bool pooling() {
    rule_.name = "pooling";
    const Shape& x = in0();
    if (x.size() < 3 || out0().size() != x.size()) return false;
    const int b = pass("batch"), c = pass("channels");
    const int sp = factor(Factor::Kind::kForbidden, "pooling spatial dims");
    std::vector<int> f(x.size(), sp);
    f[0] = b;
    f[1] = c;
    add_input(0, f);
    for (size_t i = 0; i < o_.outputs.size(); ++i) add_output(i, f);
    return true;
  }

  bool global_pool() {
    rule_.name = "global pooling";
    const Shape& x = in0();
    if (x.size() < 3 || out0().size() != x.size()) return false;
    const int b = pass("batch"), c = pass("channels");
    const int sp = factor(Factor::Kind::kContract, "pooled spatial dims");
    std::vector<int> fx(x.size(), sp), fy(x.size(), -1);
    fx[0] = fy[0] = b;
    fx[1] = fy[1] = c;
    add_input(0, fx);
    add_output(0, fy);
    return true;
  }

  bool reduction() {
    const bool arg = o_.type == "ArgMax" || o_.type == "ArgMin";
    rule_.name = arg ? "arg reduction" : "reduction";
    const Shape& x = in0();
    const Shape& y = out0();
    const bool keep = attr_int(o_, "keepdims", 1) != 0;
    std::vector<char> reduced(x.size(), 0);
    std::vector<int64_t> axes;
    if (arg) {
      axes.push_back(attr_int(o_, "axis", 0));
    } else if (!attr_ints(o_, "axes", &axes) || axes.empty()) {
      axes.clear();
      if (y.size() == x.size()) {
        for (size_t d = 0; d < x.size(); ++d) {
          if (y[d] != x[d]) axes.push_back(int64_t(d));
        }
      } else if (prod(y) == 1) {
        for (size_t d = 0; d < x.size(); ++d) axes.push_back(int64_t(d));
      } else {
        return false;
      }
    }
    for (int64_t a : axes) {
      const int d = norm_axis(a, x.size());
      if (d < 0) return false;
      reduced[size_t(d)] = 1;
    }
    size_t kept = 0;
    for (char r : reduced) kept += r ? 0 : 1;
    if (keep ? y.size() != x.size() : y.size() != kept) return false;
    std::vector<int> fx(x.size()), fy(y.size(), -1);
    size_t j = 0;
    for (size_t d = 0; d < x.size(); ++d) {
      if (reduced[d]) {
        fx[d] = factor(arg ? Factor::Kind::kForbidden : Factor::Kind::kContract,
                       "reduced axis " + std::to_string(d));
        if (keep) ++j;
      } else {
        fx[d] = pass("dim " + std::to_string(d));
        if (j < fy.size()) fy[j++] = fx[d];
      }
    }
    add_input(0, fx);
    add_output(0, fy);
    return true;
  }

  bool concat() {
    rule_.name = "concat";
    const Shape& y = out0();
    const int a = norm_axis(attr_int(o_, "axis", 0), y.size());
    if (a < 0) return false;
    std::vector<int> f(y.size());
    for (size_t d = 0; d < y.size(); ++d) {
      f[d] = int(d) == a ? factor(Factor::Kind::kForbidden, "concat axis")
                         : pass("dim " + std::to_string(d));
    }
    for (size_t i = 0; i < o_.inputs.size(); ++i) {
      const Shape& s = shape(o_.inputs[i]);
      if (s.size() != y.size()) return false;
      for (size_t d = 0; d < y.size(); ++d) {
        if (int(d) != a && s[d] != y[d]) return false;
      }
      add_input(i, f);
    }
    add_output(0, f);
    return true;
  }

  bool slice() {
    rule_.name = o_.type == "Split" ? "split" : "slice";
    const Shape& x = in0();
    if (x.empty()) return false;
    std::vector<char> sliced(x.size(), 0);
    for (TensorId t : o_.outputs) {
      const Shape& s = shape(t);
      if (s.size() != x.size()) return false;
      for (size_t d = 0; d < x.size(); ++d) sliced[d] |= s[d] != x[d] ? 1 : 0;
    }
    std::vector<int> f(x.size());
    for (size_t d = 0; d < x.size(); ++d) {
      f[d] = sliced[d] ? factor(Factor::Kind::kPass, "sliced axis " + std::to_string(d), true)
                       : pass("dim " + std::to_string(d));
    }
    add_input(0, f);
    for (size_t i = 0; i < o_.outputs.size(); ++i) add_output(i, f);
    return true;
  }

  // LSTM / GRU / RNN (layout 0): only the batch dim passes.
  bool recurrent() {
    rule_.name = "recurrent";
    const Shape& x = in0();
    if (x.size() != 3 || attr_int(o_, "layout", 0) != 0) return false;
    const int b = pass("batch");
    const int64_t nb = x[1];
    auto map = [&](const Shape& s) {
      std::vector<int> f(s.size(), -1);
      if (s.size() == 4 && s[2] == nb) f[2] = b;
      if (s.size() == 3 && s[1] == nb) f[1] = b;
      return f;
    };
    for (size_t i = 0; i < o_.inputs.size(); ++i) add_input(i, map(shape(o_.inputs[i])));
    for (size_t i = 0; i < o_.outputs.size(); ++i) add_output(i, map(shape(o_.outputs[i])));
    return true;
  }

  const Graph& g_;
  const Op& o_;
  const std::vector<int>& vars_;
  const std::vector<VarSpec>& specs_;
  OpRule rule_;
  std::vector<size_t> added_in_, added_out_, added_var_;
  bool allow_partial_ = false;  ///< a contraction the category alone would forbid is allowed
  int degree_;
};

}  // namespace

bool can_hold_partial(OpCategory c) {
  return c == OpCategory::kMatMul || c == OpCategory::kConv || c == OpCategory::kReduction ||
         c == OpCategory::kEmbedding;
}

OpRule build_rule(const Graph& g, OpId id, const std::vector<int>& vars,
                  const std::vector<VarSpec>& specs, int degree) {
  return Builder(g, id, vars, specs, degree).build();
}

}  // namespace shard
}  // namespace placer
