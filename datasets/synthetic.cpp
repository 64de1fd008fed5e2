#include "datasets/synthetic.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "datasets/family_util.h"
#include "src/util/error.h"

namespace placer {

namespace {

// Generators build through the shared helper of datasets/family_util.h.
using Maker = GraphMaker;

double d(int64_t v) { return static_cast<double>(v); }

// SplitMix64 (Steele et al. 2014): a self-contained PRNG so graphs are identical across
// standard libraries (std:: distributions are implementation-defined).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  /// Log-uniform in [lo, hi] (lo > 0).
  double log_uniform(double lo, double hi) {
    return std::exp(std::log(lo) + uniform() * (std::log(hi) - std::log(lo)));
  }
  /// Index drawn with the given weights.
  template <size_t N>
  size_t pick(const double (&w)[N]) {
    double total = 0;
    for (double x : w) total += x;
    double u = uniform() * total;
    for (size_t i = 0; i < N; ++i) {
      if (u < w[i]) return i;
      u -= w[i];
    }
    return N - 1;
  }

 private:
  uint64_t s_;
};

}  // namespace

Graph make_mlp(const MlpOptions& o) {
  PLACER_CHECK(o.layers >= 1, "mlp: layers must be >= 1, got " << o.layers);
  PLACER_CHECK(o.input > 0 && o.hidden > 0 && o.classes > 0 && o.batch > 0,
               "mlp: input, hidden, classes and batch must be positive");
  Maker m(o.name, o.batch, o.dtype);
  TensorId h = m.act("x", {o.batch, o.input});
  const TensorId labels = m.tensor("labels", {o.batch}, DType::kI64);
  int64_t in = o.input;
  for (int i = 0; i < o.layers; ++i) {
    const bool last = i == o.layers - 1;
    const int64_t out = last ? o.classes : o.hidden;
    const std::string scope = "layers." + std::to_string(i);
    h = m.op(scope + ".linear", "MatMul", scope, i, {h}, {o.batch, out},
             2 * d(o.batch) * d(in) * d(out), static_cast<uint64_t>(in * out + (o.bias ? out : 0)));
    if (!last) {
      h = m.op(scope + ".relu", "Relu", scope, i, {h}, {o.batch, out},
               kFlopsPerElemRelu * d(o.batch) * d(out));
    }
    in = out;
  }
  m.loss({h}, labels, d(o.batch) * d(o.classes));
  return m.build();
}

Graph make_transformer(const TransformerOptions& o) {
  PLACER_CHECK(o.layers >= 0, "transformer: layers must be >= 0, got " << o.layers);
  PLACER_CHECK(o.d_model > 0 && o.heads > 0 && o.seq_len > 0 && o.batch > 0 && o.vocab > 0,
               "transformer: d_model, heads, seq_len, batch and vocab must be positive");
  PLACER_CHECK(o.d_model % o.heads == 0,
               "transformer: heads (" << o.heads << ") must divide d_model (" << o.d_model << ")");
  const int64_t b = o.batch, s = o.seq_len, dm = o.d_model, h = o.heads, v = o.vocab;
  const int64_t f = o.ffn > 0 ? o.ffn : 4 * dm;
  const double bsd = d(b) * d(s) * d(dm);
  const std::vector<int64_t> bsd_shape = {b, s, dm};
  const uint64_t ud = static_cast<uint64_t>(dm), uf = static_cast<uint64_t>(f);

  Maker m(o.name, b, o.dtype);
  const TensorId tokens = m.tensor("tokens", {b, s}, DType::kI64);
  const TensorId labels = m.tensor("labels", {b, s}, DType::kI64);
  TensorId x = m.op("embedding", "Gather", "embedding", -1, {tokens}, bsd_shape, bsd,
                    static_cast<uint64_t>((v + s) * dm));
  for (int i = 0; i < o.layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i);
    const std::string att = p + ".attention", self = att + ".self", aout = att + ".output";
    const std::string inter = p + ".intermediate", out = p + ".output";
    const TensorId ln1 = m.op(att + ".layernorm", "LayerNormalization", att, i, {x}, bsd_shape,
                              kFlopsPerElemLayerNorm * bsd, 2 * ud);
    const double proj = 2 * bsd * d(dm);  // [b*s, d] @ [d, d]
    const TensorId q =
        m.op(self + ".query", "MatMul", self, i, {ln1}, bsd_shape, proj, ud * ud + ud);
    const TensorId k = m.op(self + ".key", "MatMul", self, i, {ln1}, bsd_shape, proj, ud * ud + ud);
    const TensorId val =
        m.op(self + ".value", "MatMul", self, i, {ln1}, bsd_shape, proj, ud * ud + ud);
    // Per head: [s, d/h] @ [d/h, s]; over b*h heads: 2*b*s^2*d.
    const double attn = 2 * d(b) * d(s) * d(s) * d(dm);
    const TensorId scores = m.op(self + ".scores", "MatMul", self, i, {q, k}, {b, h, s, s}, attn);
    const TensorId probs = m.op(self + ".softmax", "Softmax", self, i, {scores}, {b, h, s, s},
                                kFlopsPerElemSoftmax * d(b) * d(h) * d(s) * d(s));
    const TensorId ctx = m.op(self + ".context", "MatMul", self, i, {probs, val}, bsd_shape, attn);
    const TensorId dense =
        m.op(aout + ".dense", "MatMul", aout, i, {ctx}, bsd_shape, proj, ud * ud + ud);
    const TensorId res1 =
        m.op(aout + ".residual", "Add", aout, i, {x, dense}, bsd_shape, kFlopsPerElemAdd * bsd);
    const TensorId ln2 = m.op(inter + ".layernorm", "LayerNormalization", inter, i, {res1},
                              bsd_shape, kFlopsPerElemLayerNorm * bsd, 2 * ud);
    const double ffn = 2 * bsd * d(f);
    const TensorId up =
        m.op(inter + ".dense", "MatMul", inter, i, {ln2}, {b, s, f}, ffn, ud * uf + uf);
    const TensorId act = m.op(inter + ".gelu", "Gelu", inter, i, {up}, {b, s, f},
                              kFlopsPerElemGelu * d(b) * d(s) * d(f));
    const TensorId down =
        m.op(out + ".dense", "MatMul", out, i, {act}, bsd_shape, ffn, uf * ud + ud);
    x = m.op(out + ".residual", "Add", out, i, {res1, down}, bsd_shape, kFlopsPerElemAdd * bsd);
  }
  const TensorId ln = m.op("final_layernorm", "LayerNormalization", "final_layernorm", -1, {x},
                           bsd_shape, kFlopsPerElemLayerNorm * bsd, 2 * ud);
  const TensorId logits = m.op("lm_head", "MatMul", "lm_head", -1, {ln}, {b, s, v}, 2 * bsd * d(v),
                               ud * static_cast<uint64_t>(v));
  m.loss({logits}, labels, d(b) * d(s) * d(v));
  return m.build();
}

namespace {

void check_layered_random(const LayeredRandomOptions& o) {
  PLACER_CHECK(o.n_ops >= 2, "layered_random: n_ops must be >= 2, got " << o.n_ops);
  PLACER_CHECK(o.width >= 1, "layered_random: width must be >= 1, got " << o.width);
  PLACER_CHECK(o.min_fan_in >= 1 && o.max_fan_in >= o.min_fan_in,
               "layered_random: need 1 <= min_fan_in <= max_fan_in");
  PLACER_CHECK(o.max_skip >= 1, "layered_random: max_skip must be >= 1");
  PLACER_CHECK(o.min_flops > 0 && o.max_flops >= o.min_flops,
               "layered_random: need 0 < min_flops <= max_flops");
  PLACER_CHECK(o.min_bytes > 0 && o.max_bytes >= o.min_bytes,
               "layered_random: need 0 < min_bytes <= max_bytes");
  PLACER_CHECK(o.min_param_bytes > 0 && o.max_param_bytes >= o.min_param_bytes,
               "layered_random: need 0 < min_param_bytes <= max_param_bytes");
}

// Draws the layered DAG op by op from one Rng; the order of the draws is what a seed
// reproduces, so the steps below must draw in the same order.
class LayeredRandomBuilder {
 public:
  explicit LayeredRandomBuilder(const LayeredRandomOptions& o)
      : o_(o),
        rng_(o.seed),
        gb_(o.name),
        eb_(static_cast<uint64_t>(dtype_bytes(o.dtype))),
        body_(o.n_ops - 1),  // ops before the loss
        out_(static_cast<size_t>(body_)),
        read_(static_cast<size_t>(body_), 0) {
    gb_.set_batch_size(o.batch);
  }

  Graph build() {
    x_ = gb_.add_tensor("x", draw_bytes(o_.min_bytes, o_.max_bytes), o_.dtype);
    for (int k = 0; k < body_; ++k) {
      choose_inputs(k);
      add_body_op(k);
    }
    add_loss();
    return gb_.build();
  }

 private:
  uint64_t draw_bytes(uint64_t lo, uint64_t hi) {
    const double x = rng_.log_uniform(static_cast<double>(lo), static_cast<double>(hi));
    const uint64_t bytes = static_cast<uint64_t>(std::llround(x));
    return std::max<uint64_t>(eb_, bytes / eb_ * eb_);  // whole elements
  }

  // Inputs of op k (into ins_): "x" on level 0; else one op of the previous level and up to
  // max_fan_in - 1 more from the previous max_skip levels.
  void choose_inputs(int k) {
    const int level = k / o_.width, pos = k % o_.width;
    ins_.clear();
    if (level == 0) {
      ins_.push_back(x_);
      return;
    }
    // First input: a permutation of the previous level, so every op of a full level is read.
    const int prev_begin = (level - 1) * o_.width;
    if (pos == 0) {
      perm_.resize(static_cast<size_t>(o_.width));
      for (int j = 0; j < o_.width; ++j) perm_[static_cast<size_t>(j)] = j;
      for (int j = o_.width - 1; j > 0; --j) {
        std::swap(perm_[static_cast<size_t>(j)], perm_[static_cast<size_t>(rng_.range(0, j))]);
      }
    }
    const int first = prev_begin + perm_[static_cast<size_t>(pos)];
    ins_.push_back(out_[static_cast<size_t>(first)]);
    read_[static_cast<size_t>(first)] = 1;
    // More inputs from the previous max_skip levels (duplicates are dropped).
    const int lo = std::max(0, level - o_.max_skip) * o_.width;
    const int hi = level * o_.width - 1;
    const int fan_in = static_cast<int>(rng_.range(o_.min_fan_in, o_.max_fan_in));
    for (int j = 1; j < fan_in; ++j) {
      const int src = static_cast<int>(rng_.range(lo, hi));
      const TensorId t = out_[static_cast<size_t>(src)];
      if (std::find(ins_.begin(), ins_.end(), t) != ins_.end()) continue;
      ins_.push_back(t);
      read_[static_cast<size_t>(src)] = 1;
    }
  }

  void add_body_op(int k) {
    static const char* const kParamTypes[] = {"MatMul", "Conv", "LayerNormalization"};
    static const double kParamW[] = {0.6, 0.25, 0.15};
    static const char* const kMultiTypes[] = {"Add", "Concat", "MatMul"};
    static const double kMultiW[] = {0.5, 0.25, 0.25};
    static const char* const kUnaryTypes[] = {"Relu", "Softmax", "Transpose"};
    static const double kUnaryW[] = {0.5, 0.3, 0.2};

    const int level = k / o_.width;
    const bool has_param = rng_.uniform() < o_.param_fraction;
    const char* type = has_param          ? kParamTypes[rng_.pick(kParamW)]
                       : ins_.size() >= 2 ? kMultiTypes[rng_.pick(kMultiW)]
                                          : kUnaryTypes[rng_.pick(kUnaryW)];
    Op op;
    op.name = "op" + std::to_string(k);
    op.type = type;
    op.category = category_of_op_type(type);
    op.dtype = o_.dtype;
    op.scope = "level." + std::to_string(level);
    op.layer = level;
    op.flops = std::round(rng_.log_uniform(o_.min_flops, o_.max_flops));
    if (has_param) op.param_bytes = draw_bytes(o_.min_param_bytes, o_.max_param_bytes);
    out_[static_cast<size_t>(k)] =
        gb_.add_tensor(op.name + ".out", draw_bytes(o_.min_bytes, o_.max_bytes), o_.dtype);
    op.inputs = ins_;
    op.outputs = {out_[static_cast<size_t>(k)]};
    gb_.add_op(std::move(op));
  }

  // The loss reads every output nobody reads (the last level, plus any leftovers).
  void add_loss() {
    Op loss;
    loss.name = "loss";
    loss.type = "SoftmaxCrossEntropy";
    loss.category = OpCategory::kSoftmax;
    loss.dtype = o_.dtype;
    loss.scope = "loss";
    double elems = 0;
    for (int k = 0; k < body_; ++k) {
      if (read_[static_cast<size_t>(k)]) continue;
      const TensorId t = out_[static_cast<size_t>(k)];
      loss.inputs.push_back(t);
      elems += static_cast<double>(gb_.tensor(t).bytes / eb_);
    }
    loss.flops = kFlopsPerElemLoss * elems;
    Tensor lt;
    lt.name = "loss";
    lt.dtype = DType::kF32;
    lt.bytes = 4;
    lt.batch_scaled = false;
    loss.outputs = {gb_.add_tensor(std::move(lt))};
    gb_.add_op(std::move(loss));
  }

  const LayeredRandomOptions& o_;
  Rng rng_;
  GraphBuilder gb_;
  const uint64_t eb_;
  const int body_;
  TensorId x_ = kNoTensor;
  std::vector<TensorId> out_;  // output of each body op
  std::vector<char> read_;     // whether a later body op reads it
  std::vector<int> perm_;      // of the previous level, drawn at each level's first op
  std::vector<TensorId> ins_;  // of the op being added
};

}  // namespace

Graph make_layered_random(const LayeredRandomOptions& o) {
  check_layered_random(o);
  return LayeredRandomBuilder(o).build();
}

Graph make_chain(const ChainOptions& o) {
  const bool per_flops = !o.per_op_flops.empty();
  const int n = per_flops ? static_cast<int>(o.per_op_flops.size()) : o.n;
  PLACER_CHECK(n >= 1, "chain: need at least one op, got " << n);
  PLACER_CHECK(o.per_op_param_bytes.empty() || static_cast<int>(o.per_op_param_bytes.size()) == n,
               "chain: per_op_param_bytes has " << o.per_op_param_bytes.size() << " entries for "
                                                << n << " ops");
  GraphBuilder gb(o.name);
  gb.set_batch_size(o.batch);
  TensorId prev = gb.add_tensor("x", o.activation_bytes, o.dtype);
  for (int i = 0; i < n; ++i) {
    Op op;
    op.name = "chain." + std::to_string(i);
    op.type = o.op_type;
    op.category = category_of_op_type(o.op_type);
    op.dtype = o.dtype;
    op.scope = op.name;
    op.layer = i;
    op.flops = per_flops ? o.per_op_flops[static_cast<size_t>(i)] : o.flops;
    op.param_bytes =
        o.per_op_param_bytes.empty() ? o.param_bytes : o.per_op_param_bytes[static_cast<size_t>(i)];
    const TensorId t = gb.add_tensor(op.name + ".out", o.activation_bytes, o.dtype);
    op.inputs = {prev};
    op.outputs = {t};
    gb.add_op(std::move(op));
    prev = t;
  }
  return gb.build();
}

}  // namespace placer
