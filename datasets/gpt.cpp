#include "datasets/gpt.h"

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "datasets/family_util.h"
#include "datasets/synthetic.h"
#include "src/util/checked_math.h"
#include "src/util/error.h"

namespace placer {

namespace {

double d(int64_t v) { return static_cast<double>(v); }
uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }
/// Parameters of a rows x cols weight; the byte bound is checked where the op is added.
uint64_t weight(int64_t rows, int64_t cols) {
  return checked_mul(u(rows), u(cols), "weight elements");
}
/// Each size on its own stays below 2^40, so the widths derived from them (heads x head
/// size, 8 x hidden / 3...) cannot overflow int64; products of several are checked as tensors.
constexpr int64_t kMaxDimension = int64_t(1) << 40;

std::string str(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// One builder for both families; the differences are flags.
struct Spec {
  const char* family;  // "gpt" / "llama", prefixes error messages
  std::string name;
  int layers;
  int64_t hidden, heads, kv_heads, ffn, seq_len, batch, vocab, pad_vocab_multiple;
  int tp;
  DType dtype;
  bool tied, position_embeddings, llama;
  double dropout;
};

void validate(const Spec& o) {
  const char* f = o.family;
  PLACER_CHECK(o.layers > 0, f << ": layers must be positive, got " << o.layers);
  PLACER_CHECK(o.hidden > 0, f << ": hidden must be positive, got " << o.hidden);
  PLACER_CHECK(o.heads > 0, f << ": heads must be positive, got " << o.heads);
  PLACER_CHECK(o.hidden % o.heads == 0,
               f << ": heads (" << o.heads << ") must divide hidden (" << o.hidden << ")");
  PLACER_CHECK(o.kv_heads >= 0, f << ": kv_heads must be >= 0 (0 = heads), got " << o.kv_heads);
  PLACER_CHECK(o.kv_heads == 0 || o.heads % o.kv_heads == 0,
               f << ": kv_heads (" << o.kv_heads << ") must divide heads (" << o.heads << ")");
  PLACER_CHECK(o.ffn >= 0, f << ": ffn must be >= 0 (0 = default), got " << o.ffn);
  PLACER_CHECK(o.seq_len > 0, f << ": seq_len must be positive, got " << o.seq_len);
  PLACER_CHECK(o.batch > 0, f << ": batch must be positive, got " << o.batch);
  PLACER_CHECK(o.vocab > 0, f << ": vocab must be positive, got " << o.vocab);
  PLACER_CHECK(o.pad_vocab_multiple > 0,
               f << ": pad_vocab_multiple must be positive, got " << o.pad_vocab_multiple);
  PLACER_CHECK(o.tp > 0, f << ": tp must be positive, got " << o.tp);
  for (const auto& [name, v] : {std::pair<const char*, int64_t>{"hidden", o.hidden},
                                {"ffn", o.ffn},
                                {"seq_len", o.seq_len},
                                {"batch", o.batch},
                                {"vocab", o.vocab},
                                {"pad_vocab_multiple", o.pad_vocab_multiple}}) {
    PLACER_CHECK(v <= kMaxDimension, f << ": " << name << " " << v << " is above the bound 2^40");
  }
  PLACER_CHECK(o.dtype == DType::kF32 || o.dtype == DType::kF16 || o.dtype == DType::kBF16 ||
                   o.dtype == DType::kF64,
               f << ": dtype must be floating-point (f32, f16, bf16), got " << to_string(o.dtype));
  PLACER_CHECK(o.dropout >= 0 && o.dropout < 1,
               f << ": dropout must be in [0, 1), got " << o.dropout);
}

// Builds the graph of a validated Spec: embedding, decoder layers, output layer and loss.
class DecoderBuilder {
 public:
  explicit DecoderBuilder(const Spec& o)
      : o_(o),
        b_(o.batch),
        s_(o.seq_len),
        h_(o.hidden),
        a_(o.heads),
        kv_(o.kv_heads > 0 ? o.kv_heads : a_),
        dh_(h_ / a_),
        f_(o.ffn > 0 ? o.ffn : (o.llama ? llama_ffn(h_) : 4 * h_)),
        V_(padded_vocab(o.vocab, o.pad_vocab_multiple, o.tp)),
        qkv_width_((a_ + 2 * kv_) * dh_),
        up_width_(o.llama ? 2 * f_ : f_),  // LLaMA: gate and up projections fused
        bias_(!o.llama),
        dropout_(o.dropout > 0),
        bsh_(d(b_) * d(s_) * d(h_)),
        bass_(d(b_) * d(a_) * d(s_) * d(s_)),
        bsh_shape_({b_, s_, h_}),
        bass_shape_({b_, a_, s_, s_}),
        eb_(u(dtype_bytes(o.dtype))),
        norm_type_(o.llama ? "RMSNormalization" : "LayerNormalization"),
        norm_flops_((o.llama ? kFlopsPerElemRmsNorm : kFlopsPerElemLayerNorm) * bsh_),
        norm_params_(o.llama ? u(h_) : 2 * u(h_)),  // RMSNorm has no shift
        // Fused bias + dropout + residual add (Megatron's bias_dropout_add): the bias is
        // folded into the MatMul as everywhere in datasets/, the dropout counts when enabled.
        bda_flops_((kFlopsPerElemAdd + (dropout_ ? kFlopsPerElemDropout : 0)) * bsh_),
        m_(o.name, b_, o.dtype) {}

  Graph build() {
    const TensorId tokens = m_.tensor("tokens", {b_, s_}, DType::kI64);
    const TensorId labels = m_.tensor("labels", {b_, s_}, DType::kI64);
    TensorId x = embedding(tokens);
    for (int i = 0; i < o_.layers; ++i) {
      const std::string p = "language_model.encoder.layers." + std::to_string(i);
      const TensorId res1 = attention(p, i, x);
      x = mlp(p, i, res1);
    }
    const TensorId ln =
        norm("language_model.encoder.final_layernorm", "language_model.encoder", -1, x);
    const TensorId logits = m_.op("output_layer", "MatMul", "output_layer", -1, {ln}, {b_, s_, V_},
                                  2 * bsh_ * d(V_), o_.tied ? 0 : weight(h_, V_));
    if (o_.tied) m_.last_op().attrs.emplace_back("tied_to", std::string(kEmb) + ".word_embeddings");
    m_.loss({logits}, labels, d(b_) * d(s_) * d(V_));
    return m_.build();
  }

 private:
  static constexpr const char* kEmb = "language_model.embedding";

  TensorId norm(const std::string& name, const std::string& scope, int layer, TensorId in) {
    const TensorId out =
        m_.op(name, norm_type_, scope, layer, {in}, bsh_shape_, norm_flops_, norm_params_);
    // RMSNormalization is not in category_of_op_type's table: set it so the backward
    // multiplier and the coarsening treat it as a normalization.
    m_.last_op().category = OpCategory::kNormalization;
    return out;
  }

  TensorId add_dropout(const std::string& name, const std::string& scope, int layer, TensorId in,
                       const std::vector<int64_t>& shape) {
    if (!dropout_) return in;
    const TensorId out =
        m_.op(name, "Dropout", scope, layer, {in}, shape, kFlopsPerElemDropout * elems(shape));
    m_.last_op().attrs.emplace_back("ratio", str(o_.dropout));
    return out;
  }

  // An embedding lookup: no FLOPs; reads the indices and the b*s gathered rows, writes them.
  TensorId gather(const std::string& name, const std::string& scope, TensorId ids, int64_t rows) {
    const TensorId out = m_.op(name, "Gather", scope, -1, {ids}, bsh_shape_, 0, weight(rows, h_));
    // Both terms are bounded tensor sizes (< 2^60 each): the sum cannot wrap.
    m_.last_op().bytes_accessed =
        m_.bounded_bytes(m_.tensor_ref(ids).bytes + 2 * m_.tensor_ref(out).bytes,
                         "op '" + name + "' bytes accessed");
    return out;
  }

  TensorId embedding(TensorId tokens) {
    const std::string emb = kEmb;
    TensorId x = gather(emb + ".word_embeddings", emb, tokens, V_);
    m_.last_op().attrs.emplace_back("vocab", std::to_string(o_.vocab));
    m_.last_op().attrs.emplace_back("padded_vocab", std::to_string(V_));
    if (o_.position_embeddings) {
      const TensorId pos_ids = m_.tensor("position_ids", {b_, s_}, DType::kI64);
      const TensorId pos = gather(emb + ".position_embeddings", emb, pos_ids, s_);
      x = m_.op(emb + ".add", "Add", emb, -1, {x, pos}, bsh_shape_, kFlopsPerElemAdd * bsh_);
    }
    return add_dropout(emb + ".embedding_dropout", emb, -1, x, bsh_shape_);
  }

  // Layer i's attention block up to its residual add, which it returns.
  TensorId attention(const std::string& p, int i, TensorId x) {
    const std::string att = p + ".self_attention", core = att + ".core_attention";
    const TensorId ln1 = norm(p + ".input_layernorm", p, i, x);
    const TensorId qkv =
        m_.op(att + ".query_key_value", "MatMul", att, i, {ln1}, {b_, s_, qkv_width_},
              2 * bsh_ * d(qkv_width_), weight(h_, qkv_width_) + (bias_ ? u(qkv_width_) : 0));
    TensorId qk = qkv;
    if (o_.llama) {
      const int64_t width = (a_ + kv_) * dh_;
      qk = m_.op(att + ".rotary", "RotaryEmbedding", att, i, {qkv}, {b_, s_, width},
                 kFlopsPerElemRotary * d(b_) * d(s_) * d(width));
      m_.last_op().category = OpCategory::kElementwise;
    }
    // Over b*a heads: [s, d_head] @ [d_head, s], then [s, s] @ [s, d_head].
    const double attn = 2 * bass_ * d(dh_);
    const TensorId scores = m_.op(core + ".scores", "MatMul", core, i, {qk}, bass_shape_, attn);
    TensorId probs = m_.op(core + ".scale_mask_softmax", "Softmax", core, i, {scores}, bass_shape_,
                           kFlopsPerElemSoftmax * bass_);
    probs = add_dropout(core + ".attention_dropout", core, i, probs, bass_shape_);
    // V is not rotated: the context reads it from the fused QKV output.
    const TensorId ctx =
        m_.op(core + ".context", "MatMul", core, i, {probs, qkv}, bsh_shape_, attn);
    const TensorId dense = m_.op(att + ".dense", "MatMul", att, i, {ctx}, bsh_shape_,
                                 2 * bsh_ * d(h_), weight(h_, h_) + (bias_ ? u(h_) : 0));
    return m_.op(att + ".bias_dropout_add", "Add", att, i, {x, dense}, bsh_shape_, bda_flops_);
  }

  // Layer i's MLP block after the attention's residual `res1`; returns the layer's output.
  TensorId mlp(const std::string& p, int i, TensorId res1) {
    const std::string mlp = p + ".mlp";
    const TensorId ln2 = norm(p + ".post_attention_layernorm", p, i, res1);
    const TensorId up =
        m_.op(mlp + ".dense_h_to_4h", "MatMul", mlp, i, {ln2}, {b_, s_, up_width_},
              2 * bsh_ * d(up_width_), weight(h_, up_width_) + (bias_ ? u(up_width_) : 0));
    TensorId act;
    if (o_.llama) {
      act = m_.op(mlp + ".swiglu", "Swiglu", mlp, i, {up}, {b_, s_, f_},
                  kFlopsPerElemSwiglu * d(b_) * d(s_) * d(f_));
      m_.last_op().category = OpCategory::kElementwise;
    } else {
      act = m_.op(mlp + ".bias_gelu", "Gelu", mlp, i, {up}, {b_, s_, f_},
                  kFlopsPerElemGelu * d(b_) * d(s_) * d(f_));
    }
    const TensorId down = m_.op(mlp + ".dense_4h_to_h", "MatMul", mlp, i, {act}, bsh_shape_,
                                2 * bsh_ * d(f_), weight(f_, h_) + (bias_ ? u(h_) : 0));
    return m_.op(mlp + ".bias_dropout_add", "Add", mlp, i, {res1, down}, bsh_shape_, bda_flops_);
  }

  const Spec& o_;
  const int64_t b_, s_, h_, a_, kv_, dh_, f_, V_, qkv_width_, up_width_;
  const bool bias_, dropout_;
  const double bsh_, bass_;
  const std::vector<int64_t> bsh_shape_, bass_shape_;
  const uint64_t eb_;
  const std::string norm_type_;
  const double norm_flops_;
  const uint64_t norm_params_;
  const double bda_flops_;
  GraphMaker m_;
};

Graph build(const Spec& o) {
  validate(o);
  return DecoderBuilder(o).build();
}

}  // namespace

int64_t padded_vocab(int64_t vocab, int64_t multiple, int tp) {
  PLACER_CHECK(vocab > 0, "padded_vocab: vocab must be positive, got " << vocab);
  PLACER_CHECK(multiple > 0, "padded_vocab: pad_vocab_multiple must be positive, got " << multiple);
  PLACER_CHECK(tp > 0, "padded_vocab: tp must be positive, got " << tp);
  const int64_t m = checked_mul(multiple, int64_t{tp}, "padded_vocab: pad_vocab_multiple x tp");
  return checked_add(vocab, m - 1, "padded_vocab: vocab + pad_vocab_multiple x tp") / m * m;
}

int64_t llama_ffn(int64_t hidden) {
  const int64_t f = 8 * hidden / 3;  // int(2 * (4 * hidden) / 3), as LLaMA's FeedForward
  return (f + 255) / 256 * 256;
}

Graph make_gpt(const GptOptions& o) {
  return build(Spec{"gpt", o.name, o.layers, o.hidden, o.heads, 0, o.ffn, o.seq_len, o.batch,
                    o.vocab, o.pad_vocab_multiple, o.tp, o.dtype, o.tied_embeddings,
                    o.position_embeddings, false, o.dropout});
}

Graph make_llama(const LlamaOptions& o) {
  return build(Spec{"llama", o.name, o.layers, o.hidden, o.heads, o.kv_heads, o.ffn, o.seq_len,
                    o.batch, o.vocab, o.pad_vocab_multiple, o.tp, o.dtype, o.tied_embeddings, false,
                    true, o.dropout});
}

}  // namespace placer
