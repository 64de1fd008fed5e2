#include "datasets/gpt.h"

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "datasets/family_util.h"
#include "datasets/synthetic.h"
#include "src/util/error.h"

namespace placer {

namespace {

double d(int64_t v) { return static_cast<double>(v); }
uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }

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
  PLACER_CHECK(o.dtype == DType::kF32 || o.dtype == DType::kF16 || o.dtype == DType::kBF16 ||
                   o.dtype == DType::kF64,
               f << ": dtype must be floating-point (f32, f16, bf16), got " << to_string(o.dtype));
  PLACER_CHECK(o.dropout >= 0 && o.dropout < 1,
               f << ": dropout must be in [0, 1), got " << o.dropout);
}

Graph build(const Spec& o) {
  validate(o);
  const int64_t b = o.batch, s = o.seq_len, h = o.hidden, a = o.heads;
  const int64_t kv = o.kv_heads > 0 ? o.kv_heads : a;
  const int64_t dh = h / a;
  const int64_t f = o.ffn > 0 ? o.ffn : (o.llama ? llama_ffn(h) : 4 * h);
  const int64_t V = padded_vocab(o.vocab, o.pad_vocab_multiple, o.tp);
  const int64_t qkv_width = (a + 2 * kv) * dh;
  const int64_t up_width = o.llama ? 2 * f : f;  // LLaMA: gate and up projections fused
  const bool bias = !o.llama;
  const bool dropout = o.dropout > 0;
  const double bsh = d(b) * d(s) * d(h), bass = d(b) * d(a) * d(s) * d(s);
  const std::vector<int64_t> bsh_shape = {b, s, h}, bass_shape = {b, a, s, s};
  const uint64_t eb = u(dtype_bytes(o.dtype));
  const std::string norm_type = o.llama ? "RMSNormalization" : "LayerNormalization";
  const double norm_flops = (o.llama ? kFlopsPerElemRmsNorm : kFlopsPerElemLayerNorm) * bsh;
  const uint64_t norm_params = o.llama ? u(h) : 2 * u(h);  // RMSNorm has no shift

  GraphMaker m(o.name, b, o.dtype);
  const TensorId tokens = m.tensor("tokens", {b, s}, DType::kI64);
  const TensorId labels = m.tensor("labels", {b, s}, DType::kI64);

  auto norm = [&](const std::string& name, const std::string& scope, int layer, TensorId in) {
    const TensorId out =
        m.op(name, norm_type, scope, layer, {in}, bsh_shape, norm_flops, norm_params);
    // RMSNormalization is not in category_of_op_type's table: set it so the backward
    // multiplier and the coarsening treat it as a normalization.
    m.last_op().category = OpCategory::kNormalization;
    return out;
  };
  auto add_dropout = [&](const std::string& name, const std::string& scope, int layer, TensorId in,
                         const std::vector<int64_t>& shape) {
    if (!dropout) return in;
    const TensorId out =
        m.op(name, "Dropout", scope, layer, {in}, shape, kFlopsPerElemDropout * elems(shape));
    m.last_op().attrs.emplace_back("ratio", str(o.dropout));
    return out;
  };
  // An embedding lookup: no FLOPs; reads the indices and the b*s gathered rows, writes them.
  auto gather = [&](const std::string& name, const std::string& scope, TensorId ids, int64_t rows) {
    const TensorId out = m.op(name, "Gather", scope, -1, {ids}, bsh_shape, 0, u(rows) * u(h));
    m.last_op().bytes_accessed = m.tensor_ref(ids).bytes + 2 * u(b) * u(s) * u(h) * eb;
    return out;
  };

  // Embedding.
  const std::string emb = "language_model.embedding";
  TensorId x = gather(emb + ".word_embeddings", emb, tokens, V);
  m.last_op().attrs.emplace_back("vocab", std::to_string(o.vocab));
  m.last_op().attrs.emplace_back("padded_vocab", std::to_string(V));
  if (o.position_embeddings) {
    const TensorId pos_ids = m.tensor("position_ids", {b, s}, DType::kI64);
    const TensorId pos = gather(emb + ".position_embeddings", emb, pos_ids, s);
    x = m.op(emb + ".add", "Add", emb, -1, {x, pos}, bsh_shape, kFlopsPerElemAdd * bsh);
  }
  x = add_dropout(emb + ".embedding_dropout", emb, -1, x, bsh_shape);

  // Fused bias + dropout + residual add (Megatron's bias_dropout_add): the bias is folded
  // into the MatMul as everywhere in datasets/, the dropout counts when enabled.
  const double bda_flops = (kFlopsPerElemAdd + (dropout ? kFlopsPerElemDropout : 0)) * bsh;

  for (int i = 0; i < o.layers; ++i) {
    const std::string p = "language_model.encoder.layers." + std::to_string(i);
    const std::string att = p + ".self_attention", core = att + ".core_attention";
    const std::string mlp = p + ".mlp";
    const TensorId ln1 = norm(p + ".input_layernorm", p, i, x);
    const TensorId qkv =
        m.op(att + ".query_key_value", "MatMul", att, i, {ln1}, {b, s, qkv_width},
             2 * bsh * d(qkv_width), u(h) * u(qkv_width) + (bias ? u(qkv_width) : 0));
    TensorId qk = qkv;
    if (o.llama) {
      const int64_t width = (a + kv) * dh;
      qk = m.op(att + ".rotary", "RotaryEmbedding", att, i, {qkv}, {b, s, width},
                kFlopsPerElemRotary * d(b) * d(s) * d(width));
      m.last_op().category = OpCategory::kElementwise;
    }
    // Over b*a heads: [s, d_head] @ [d_head, s], then [s, s] @ [s, d_head].
    const double attn = 2 * bass * d(dh);
    const TensorId scores = m.op(core + ".scores", "MatMul", core, i, {qk}, bass_shape, attn);
    TensorId probs = m.op(core + ".scale_mask_softmax", "Softmax", core, i, {scores}, bass_shape,
                          kFlopsPerElemSoftmax * bass);
    probs = add_dropout(core + ".attention_dropout", core, i, probs, bass_shape);
    // V is not rotated: the context reads it from the fused QKV output.
    const TensorId ctx = m.op(core + ".context", "MatMul", core, i, {probs, qkv}, bsh_shape, attn);
    const TensorId dense = m.op(att + ".dense", "MatMul", att, i, {ctx}, bsh_shape, 2 * bsh * d(h),
                                u(h) * u(h) + (bias ? u(h) : 0));
    const TensorId res1 =
        m.op(att + ".bias_dropout_add", "Add", att, i, {x, dense}, bsh_shape, bda_flops);
    const TensorId ln2 = norm(p + ".post_attention_layernorm", p, i, res1);
    const TensorId up = m.op(mlp + ".dense_h_to_4h", "MatMul", mlp, i, {ln2}, {b, s, up_width},
                             2 * bsh * d(up_width), u(h) * u(up_width) + (bias ? u(up_width) : 0));
    TensorId act;
    if (o.llama) {
      act = m.op(mlp + ".swiglu", "Swiglu", mlp, i, {up}, {b, s, f},
                 kFlopsPerElemSwiglu * d(b) * d(s) * d(f));
      m.last_op().category = OpCategory::kElementwise;
    } else {
      act = m.op(mlp + ".bias_gelu", "Gelu", mlp, i, {up}, {b, s, f},
                 kFlopsPerElemGelu * d(b) * d(s) * d(f));
    }
    const TensorId down = m.op(mlp + ".dense_4h_to_h", "MatMul", mlp, i, {act}, bsh_shape,
                               2 * bsh * d(f), u(f) * u(h) + (bias ? u(h) : 0));
    x = m.op(mlp + ".bias_dropout_add", "Add", mlp, i, {res1, down}, bsh_shape, bda_flops);
  }

  const TensorId ln =
      norm("language_model.encoder.final_layernorm", "language_model.encoder", -1, x);
  const TensorId logits = m.op("output_layer", "MatMul", "output_layer", -1, {ln}, {b, s, V},
                               2 * bsh * d(V), o.tied ? 0 : u(h) * u(V));
  if (o.tied) m.last_op().attrs.emplace_back("tied_to", emb + ".word_embeddings");
  m.loss({logits}, labels, d(b) * d(s) * d(V));
  return m.build();
}

}  // namespace

int64_t padded_vocab(int64_t vocab, int64_t multiple, int tp) {
  PLACER_CHECK(vocab > 0, "padded_vocab: vocab must be positive, got " << vocab);
  PLACER_CHECK(multiple > 0, "padded_vocab: pad_vocab_multiple must be positive, got " << multiple);
  PLACER_CHECK(tp > 0, "padded_vocab: tp must be positive, got " << tp);
  const int64_t m = multiple * tp;
  return (vocab + m - 1) / m * m;
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
