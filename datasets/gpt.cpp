#include "datasets/gpt.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "datasets/compiled_kernels.h"
#include "datasets/decoder_blocks.h"
#include "datasets/eager_kernels.h"
#include "datasets/family_util.h"
#include "datasets/synthetic.h"
#include "src/graph/moe_attrs.h"
#include "src/util/checked_math.h"
#include "src/util/error.h"

namespace placer {

namespace {

using namespace decoder_sizes;  // NOLINT: d, u, weight, str

/// Each size on its own stays below 2^40, so the widths derived from them (heads x head
/// size, 8 x hidden / 3...) cannot overflow int64; products of several are checked as tensors.
constexpr int64_t kMaxDimension = int64_t(1) << 40;

// One builder for both families; the differences are flags.
struct Spec {
  const char* family = "";  // "gpt" / "llama", prefixes error messages
  std::string name;
  int layers = 0;
  int64_t hidden = 0, heads = 0, kv_heads = 0, ffn = 0, seq_len = 0, batch = 0, vocab = 0,
          pad_vocab_multiple = 0;
  int tp = 1;
  DType dtype = DType::kF32;
  bool tied = false, position_embeddings = false, llama = false;
  double dropout = 0;
  AttentionImpl attention = AttentionImpl::kUnfused;
  int64_t sliding_window = 0;
  KernelPreset kernels = KernelPreset::kMegatron2021;
  int64_t head_dim = 0;  // 0 = hidden / heads
  std::vector<bool> window_layer;  // empty = every layer windowed
  MlaOptions mla;
  MoeOptions moe;
  int mtp_layers = 0;  // the last mtp_layers of `layers` are multi-token-prediction blocks
};

// The fields GptOptions and LlamaOptions share.
template <class Options>
Spec shared_spec(const char* family, const Options& o) {
  Spec s;
  s.family = family;
  s.name = o.name;
  s.layers = o.layers;
  s.hidden = o.hidden;
  s.heads = o.heads;
  s.ffn = o.ffn;
  s.seq_len = o.seq_len;
  s.batch = o.batch;
  s.vocab = o.vocab;
  s.pad_vocab_multiple = o.pad_vocab_multiple;
  s.tp = o.tp;
  s.dtype = o.dtype;
  s.tied = o.tied_embeddings;
  s.dropout = o.dropout;
  s.attention = o.attention;
  s.sliding_window = o.sliding_window;
  s.kernels = o.kernels;
  return s;
}

// Names of an enum's values, indexed by value.
const char* const kAttentionNames[] = {"unfused", "flash"};
const char* const kKernelNames[] = {"megatron-2021", "te", "compile", "eager", "compile-blocks"};

// What compile-blocks runs eager outside its compiled blocks (the final norm and the loss;
// docs/models.md, "Kernel presets"): passes over an op's elements of the kernels PyTorch
// runs for it, as Hugging Face's Llama writes the module. A pass reads or writes every
// element once; `model` passes are in the graph's dtype, `fp32` passes in float32. The eager
// set lists the kernels themselves (datasets/eager_kernels.h).
struct EagerPasses {
  int model, fp32;
};
// RMSNorm in fp32 steps, x -> (x.float() * rsqrt(mean(x.float()^2) + eps)).type_as(x) * w:
// forward to-fp32 (1 + 1), pow (2), mean (1), scale (2), back to the dtype (1 + 1), times
// the weight (2); backward the weight's gradient (mul 3, sum 1), times the weight (2), the
// cast back (1 + 1), the scale's two products (3, 2) and sum (1), mean's division (1),
// pow's (2, 3), the two gradient paths summed (3), the cast to the dtype (1 + 1).
constexpr EagerPasses kEagerNormForward{4, 7}, kEagerNormBackward{8, 17};
// A gradient sum (3) of two linears reading the same tensor (q, k, v and gate, up are
// separate linears in eager: 2 and 1 sums).
constexpr EagerPasses kEagerGradSum{3, 0};
// Cross-entropy on logits.float(): the cast (1 + 1), log-softmax (2); backward the zeroed
// gradient (1), log-softmax's (3) and the cast back (1 + 1).
constexpr EagerPasses kEagerLossForward{1, 3}, kEagerLossBackward{1, 5};

double eager_bytes(EagerPasses p, double elements, DType dtype) {
  return elements * (p.model * d(dtype_bytes(dtype)) + p.fp32 * 4.0);
}

template <class E, size_t N>
bool parse_name(const std::string& s, const char* const (&names)[N], E* out) {
  for (size_t i = 0; i < N; ++i) {
    if (s == names[i]) {
      *out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}

void validate_mla(const Spec& o) {
  const char* f = o.family;
  const MlaOptions& m = o.mla;
  if (!m.enabled()) return;
  PLACER_CHECK(o.attention == AttentionImpl::kFlash, f << ": mla needs attention = flash");
  for (const auto& [name, v] : {std::pair<const char*, int64_t>{"q_lora_rank", m.q_lora_rank},
                                {"kv_lora_rank", m.kv_lora_rank},
                                {"rope_head_dim", m.rope_head_dim},
                                {"nope_head_dim", m.nope_head_dim},
                                {"v_head_dim", m.v_head_dim}}) {
    PLACER_CHECK(v >= 0 && v <= kMaxDimension,
                 f << ": mla " << name << " " << v << " must be in [0, 2^40]");
  }
  PLACER_CHECK(m.nope_head_dim + m.rope_head_dim > 0 && m.v_head_dim > 0,
               f << ": mla needs a positive query / key head width and v_head_dim");
}

void validate_moe(const Spec& o) {
  const char* f = o.family;
  const MoeOptions& m = o.moe;
  if (!m.enabled()) return;
  PLACER_CHECK(m.experts <= (int64_t(1) << 24),
               f << ": moe experts " << m.experts << " is above the bound 2^24");
  PLACER_CHECK(m.top_k >= 1 && m.top_k <= m.experts,
               f << ": moe top_k must be in [1, experts], got " << m.top_k);
  PLACER_CHECK(m.expert_ffn > 0 && m.expert_ffn <= kMaxDimension,
               f << ": moe expert_ffn must be in [1, 2^40], got " << m.expert_ffn);
  PLACER_CHECK(m.shared_ffn >= 0 && m.shared_ffn <= kMaxDimension,
               f << ": moe shared_ffn must be in [0, 2^40], got " << m.shared_ffn);
  PLACER_CHECK(m.capacity_factor == 0 || (m.capacity_factor > 0 && m.capacity_factor <= m.experts),
               f << ": moe capacity_factor must be 0 (no dropping) or in (0, experts], got "
                 << m.capacity_factor);
  // The experts' rows per sequence, seq_len x top_k (x capacity_factor), stay below 2^40.
  PLACER_CHECK(double(o.seq_len) * double(m.top_k) * std::max(1.0, m.capacity_factor) <=
                   double(kMaxDimension),
               f << ": moe seq_len x top_k x capacity_factor is above the bound 2^40");
  PLACER_CHECK(
      m.moe_layer.empty() || m.moe_layer.size() == static_cast<size_t>(o.layers),
      f << ": moe_layer has " << m.moe_layer.size() << " entries for " << o.layers << " layers");
}

void validate(const Spec& o) {
  const char* f = o.family;
  PLACER_CHECK(o.layers > 0, f << ": layers must be positive, got " << o.layers);
  PLACER_CHECK(o.hidden > 0, f << ": hidden must be positive, got " << o.hidden);
  PLACER_CHECK(o.heads > 0, f << ": heads must be positive, got " << o.heads);
  PLACER_CHECK(o.head_dim >= 0 && o.head_dim <= kMaxDimension,
               f << ": head_dim must be in [0, 2^40] (0 = hidden / heads), got " << o.head_dim);
  PLACER_CHECK(o.head_dim > 0 || o.mla.enabled() || o.hidden % o.heads == 0,
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
  PLACER_CHECK(o.sliding_window >= 0,
               f << ": sliding_window must be >= 0 (0 = none), got " << o.sliding_window);
  PLACER_CHECK(o.sliding_window == 0 || o.attention == AttentionImpl::kFlash,
               f << ": sliding_window needs attention = flash (the unfused core scores every "
                    "pair and masks)");
  PLACER_CHECK(o.window_layer.empty() || o.window_layer.size() == static_cast<size_t>(o.layers),
               f << ": window_layer has " << o.window_layer.size() << " entries for " << o.layers
                 << " layers");
  PLACER_CHECK(
      o.mtp_layers >= 0 && o.mtp_layers < o.layers,
      f << ": mtp_layers must be in [0, layers), got " << o.mtp_layers << " of " << o.layers);
  validate_mla(o);
  validate_moe(o);
  const bool hf_style =
      o.kernels == KernelPreset::kEager || o.kernels == KernelPreset::kCompileBlocks;
  PLACER_CHECK(!hf_style || (o.llama && !o.mla.enabled() && !o.moe.enabled() && o.mtp_layers == 0),
               f << ": kernels " << to_string(o.kernels)
                 << " is for dense LLaMA models (no moe, mla or mtp layers)");
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
        dh_(o.mla.enabled()  ? o.mla.nope_head_dim + o.mla.rope_head_dim
            : o.head_dim > 0 ? o.head_dim
                             : h_ / a_),
        ctx_width_(o.mla.enabled() ? a_ * o.mla.v_head_dim : a_ * dh_),
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
        norm_type_(o.llama ? "RMSNormalization" : "LayerNormalization"),
        norm_flops_((o.llama ? kFlopsPerElemRmsNorm : kFlopsPerElemLayerNorm) * bsh_),
        norm_params_(o.llama ? u(h_) : 2 * u(h_)),  // RMSNorm has no shift
        // Fused bias + dropout + residual add (Megatron's bias_dropout_add): the bias is
        // folded into the MatMul as everywhere in datasets/, the dropout counts when enabled.
        bda_flops_((kFlopsPerElemAdd + (dropout_ ? kFlopsPerElemDropout : 0)) * bsh_),
        m_(o.name, b_, o.dtype),
        blocks_{m_, b_, s_, h_, o.dtype, o.dropout} {}

  Graph build() {
    m_.set_graph_attr("attention", to_string(o_.attention));
    if (o_.sliding_window > 0) {
      m_.set_graph_attr("sliding_window", std::to_string(o_.sliding_window));
    }
    m_.set_graph_attr("kernels", to_string(o_.kernels));
    const TensorId tokens = m_.tensor("tokens", {b_, s_}, DType::kI64);
    const TensorId labels = m_.tensor("labels", {b_, s_}, DType::kI64);
    TensorId x = embedding(tokens);
    TensorId ln = norm(input_norm_site(0), x);
    std::vector<TensorId> aux_losses;
    int moe_index = 0;
    for (int i = 0; i < main_layers(); ++i) {
      const Residual att = attention(layer_prefix(i), i, x, ln);
      const Residual out = is_moe_layer(i)
                               ? moe_mlp(layer_prefix(i), i, moe_index++, att, &aux_losses)
                               : mlp(layer_prefix(i), i, att);
      x = out.sum;
      ln = out.normed;
    }
    const TensorId logits = m_.op("output_layer", "MatMul", "output_layer", -1, {ln}, {b_, s_, V_},
                                  2 * bsh_ * d(V_), o_.tied ? 0 : weight(h_, V_));
    if (o_.tied) m_.last_op().attrs.emplace_back("tied_to", std::string(kEmb) + ".word_embeddings");
    std::vector<TensorId> loss_inputs{logits};
    for (int j = 0; j < o_.mtp_layers; ++j) {
      x = mtp_block(j, tokens, x, &moe_index, &aux_losses, &loss_inputs);
    }
    loss_inputs.insert(loss_inputs.end(), aux_losses.begin(), aux_losses.end());
    m_.loss(std::move(loss_inputs), labels, d(b_) * d(s_) * d(V_) * (1 + o_.mtp_layers));
    if (eager()) {
      set_kernels(eager_cross_entropy(d(b_) * d(s_), d(V_), o_.dtype));
      eager_loss_memory();
    } else if (outside_blocks_eager()) {
      const double logits_elems = d(b_) * d(s_) * d(V_);
      set_op_bytes(eager_bytes(kEagerLossForward, logits_elems, o_.dtype),
                      eager_bytes(kEagerLossBackward, logits_elems, o_.dtype));
    } else if (o_.kernels == KernelPreset::kCompile) {
      const FusedBytes ce = compiled_cross_entropy(b_ * s_ * (1 + o_.mtp_layers), V_, o_.dtype);
      set_op_bytes(ce.forward, ce.backward);
    }
    return m_.build();
  }

 private:
  static constexpr const char* kEmb = "language_model.embedding";

  // Where a norm op goes: its name, scope and layer.
  struct NormSite {
    std::string name, scope;
    int layer;
    int grad_sums = 0;  // eager: gradient sums of the separate linears that read the norm
  };
  // A residual sum and the norm of it that the next block reads.
  struct Residual {
    TensorId sum, normed;
  };

  static std::string layer_prefix(int i) {
    return "language_model.encoder.layers." + std::to_string(i);
  }
  int main_layers() const { return o_.layers - o_.mtp_layers; }
  static std::string mtp_prefix(int j) { return "language_model.mtp.layers." + std::to_string(j); }
  // Layer i's input_layernorm; past the last decoder layer, the final layernorm; past a
  // multi-token-prediction block's layer, the block's final layernorm.
  NormSite input_norm_site(int i) const {
    if (i == main_layers()) {
      return {"language_model.encoder.final_layernorm", "language_model.encoder", -1};
    }
    if (i > main_layers()) {
      const std::string p = mtp_prefix(i - 1 - main_layers());
      return {p + ".final_layernorm", p, i - 1};
    }
    return {layer_prefix(i) + ".input_layernorm", layer_prefix(i), i, 2};  // q, k, v
  }

  // Multi-token-prediction block j (DeepSeek-V3, arXiv 2412.19437 Sec. 2.2; Megatron-core's
  // MultiTokenPredictionLayer): the next tokens' embedding and the previous depth's hidden
  // states, each RMS-normed, concatenated and projected from 2h to h (eh_proj), one decoder
  // layer (layer main + j), its final norm and logits from the output layer, whose weights
  // (as the embedding's) are the main model's: no parameters of their own. Every op carries
  // the block's layer index, so a pipeline places the block whole on the last stage. Adds the
  // logits to `loss_inputs` and returns the block's hidden states (before the final norm).
  TensorId mtp_block(int j, TensorId tokens, TensorId hidden, int* moe_index,
                     std::vector<TensorId>* aux_losses, std::vector<TensorId>* loss_inputs) {
    const std::string p = mtp_prefix(j);
    const int i = main_layers() + j;
    const TensorId emb =
        m_.op(p + ".word_embeddings", "Gather", p, i, {tokens}, bsh_shape_, 0, 0);
    m_.last_op().bytes_accessed = m_.bounded_bytes(
        m_.tensor_ref(tokens).bytes + 2 * m_.tensor_ref(emb).bytes, "op '" + p + "' bytes");
    const TensorId e = norm({p + ".enorm", p, i}, emb);
    const TensorId h = norm({p + ".hnorm", p, i}, hidden);
    const TensorId eh = m_.op(p + ".eh_proj", "MatMul", p, i, {e, h}, bsh_shape_,
                              2 * bsh_ * d(2 * h_), weight(2 * h_, h_));
    const std::string lp = p + ".transformer_layer";
    const Residual att = attention(lp, i, eh, norm({lp + ".input_layernorm", lp, i}, eh));
    const Residual out =
        is_moe_layer(i) ? moe_mlp(lp, i, (*moe_index)++, att, aux_losses) : mlp(lp, i, att);
    loss_inputs->push_back(m_.op(p + ".output_layer", "MatMul", p, i, {out.normed}, {b_, s_, V_},
                                 2 * bsh_ * d(V_), 0));
    return out.sum;
  }

  // A residual add (Megatron's bias_dropout_add, `name`) and the norm at `site` that reads
  // it. With kernels = compile they are one op (inductor fuses the add into the norm's
  // kernel): it reads both addends once and writes the sum and its norm, 4 passes over
  // [b, s, h] where the two ops make 5 (3 + 2). With compile-blocks only when the norm is in
  // the add's block (each block is compiled on its own).
  Residual add_norm(const std::string& name, const std::string& scope, int layer, TensorId a,
                    TensorId b, const NormSite& site) {
    const bool fused = o_.kernels == KernelPreset::kCompile ||
                       (o_.kernels == KernelPreset::kCompileBlocks && site.layer == layer);
    if (!fused) {
      const TensorId sum = m_.op(name, "Add", scope, layer, {a, b}, bsh_shape_, bda_flops_);
      return {sum, norm(site, sum)};
    }
    const std::vector<TensorId> out =
        m_.op_multi(name, o_.llama ? "AddRMSNormalization" : "AddLayerNormalization", scope, layer,
                    {a, b}, {bsh_shape_, bsh_shape_}, bda_flops_ + norm_flops_, norm_params_);
    Op& op = m_.last_op();
    op.category = OpCategory::kNormalization;
    op.bytes_accessed =
        m_.bounded_bytes(4 * m_.tensor_ref(out[0]).bytes, "op '" + name + "' bytes accessed");
    op.attrs.emplace_back("fused_norm", site.name);
    if (o_.llama) {
      set_op_bytes(d(op.bytes_accessed), compiled_add_rms_norm_backward(
                                                b_ * s_, h_, o_.dtype, compiled_grad_sums(site)));
    }
    return {out[0], out[1]};
  }

  TensorId norm(const NormSite& site, TensorId in) {
    if (eager()) return eager_norm(site, in);
    const TensorId out = m_.op(site.name, norm_type_, site.scope, site.layer, {in}, bsh_shape_,
                               norm_flops_, norm_params_);
    // RMSNormalization is not in category_of_op_type's table: set it so the backward
    // multiplier and the coarsening treat it as a normalization.
    m_.last_op().category = OpCategory::kNormalization;
    if (outside_blocks_eager() && site.layer < 0) {
      const double back = eager_bytes(kEagerNormBackward, bsh_, o_.dtype) +
                          site.grad_sums * eager_bytes(kEagerGradSum, bsh_, o_.dtype);
      set_op_bytes(eager_bytes(kEagerNormForward, bsh_, o_.dtype), back);
    } else if (compiled() && o_.llama) {
      set_op_bytes(d(m_.tensor_ref(in).bytes + m_.tensor_ref(out).bytes),
                      compiled_rms_norm_backward(b_ * s_, h_, o_.dtype, compiled_grad_sums(site)));
    }
    return out;
  }

  // compile, compile-blocks: inductor's kernels (datasets/compiled_kernels.h).
  bool compiled() const {
    return o_.kernels == KernelPreset::kCompile || o_.kernels == KernelPreset::kCompileBlocks;
  }
  // Gradients of separate linears summed inside a compiled norm's backward: compile-blocks
  // compiles Hugging Face-style blocks (q, k, v and gate, up apart), compile fused ones.
  int compiled_grad_sums(const NormSite& site) const {
    return o_.kernels == KernelPreset::kCompileBlocks ? site.grad_sums : 0;
  }

  // An eager RMSNorm: its kernels, and what autograd keeps of it: the normalised fp32 input
  // and the normalised value before the weight (the weight's product saves it), both as
  // outputs besides the norm itself; not the input (its cast to fp32 saves nothing).
  TensorId eager_norm(const NormSite& site, TensorId in) {
    const std::vector<TensorId> out =
        m_.op_multi(site.name, norm_type_, site.scope, site.layer, {in},
                    {bsh_shape_, bsh_shape_, bsh_shape_}, norm_flops_, norm_params_);
    m_.last_op().category = OpCategory::kNormalization;
    set_kernels(eager_rms_norm(d(b_) * d(s_), d(h_), o_.dtype, site.grad_sums));
    set_fp32(out[2]);
    m_.last_op().attrs.emplace_back(kSavedTensorsAttr, "outputs");
    return out[0];
  }

  // Tensor t holds fp32 values (a tensor of the graph's dtype until now).
  void set_fp32(TensorId t) {
    Tensor& ten = m_.tensor_ref(t);
    ten.bytes = m_.bounded_bytes(ten.bytes / u(dtype_bytes(ten.dtype)) * 4,
                                 "tensor '" + ten.name + "' bytes");
    ten.dtype = DType::kF32;
  }

  bool eager() const { return o_.kernels == KernelPreset::kEager; }
  // compile-blocks: what is not in a decoder block (the final norm, the loss) runs eager.
  bool outside_blocks_eager() const {
    return eager() || o_.kernels == KernelPreset::kCompileBlocks;
  }

  // The last op's forward bytes and its backward's (the kBackwardBytesAttr attribute), for
  // the eager and the compiled kernel sets.
  void set_op_bytes(double forward, double backward) {
    Op& op = m_.last_op();
    const std::string what = "op '" + op.name + "' bytes accessed";
    op.bytes_accessed = m_.bounded_bytes(static_cast<uint64_t>(forward), what);
    const uint64_t back = m_.bounded_bytes(static_cast<uint64_t>(backward), what);
    op.attrs.emplace_back(kBackwardBytesAttr, std::to_string(back));
  }

  // The last op's kernels (eager): the lists the cost model reads, their bytes as the op's
  // forward and backward traffic.
  void set_kernels(const EagerKernels& k) {
    set_op_bytes(d(kernel_list_bytes(k.forward)), d(kernel_list_bytes(k.backward)));
    Op& op = m_.last_op();
    op.attrs.emplace_back(kKernelListAttr, format_kernel_list(k.forward));
    op.attrs.emplace_back(kBackwardKernelListAttr, format_kernel_list(k.backward));
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

  // Layer i's attention block on its input x and ln1 = input_layernorm(x), up to the residual
  // add and the post-attention norm, which it returns.
  Residual attention(const std::string& p, int i, TensorId x, TensorId ln1) {
    const std::string att = p + ".self_attention";
    const TensorId ctx = o_.mla.enabled()
                             ? add_mla_core(blocks_, o_.mla, a_, window(i), att, i, ln1)
                             : gqa_core(att, i, ln1);
    const TensorId dense = m_.op(att + ".dense", "MatMul", att, i, {ctx}, bsh_shape_,
                                 2 * (d(b_) * d(s_) * d(ctx_width_)) * d(h_),
                                 weight(ctx_width_, h_) + (bias_ ? u(h_) : 0));
    return add_norm(att + ".bias_dropout_add", att, i, x, dense,
                    {p + ".post_attention_layernorm", p, i, 1});  // gate, up
  }

  // Grouped-query attention from the input norm to the context [b, s, a d_head].
  TensorId gqa_core(const std::string& att, int i, TensorId ln1) {
    const std::string core = att + ".core_attention";
    const TensorId qkv =
        m_.op(att + ".query_key_value", "MatMul", att, i, {ln1}, {b_, s_, qkv_width_},
              2 * bsh_ * d(qkv_width_), weight(h_, qkv_width_) + (bias_ ? u(qkv_width_) : 0));
    TensorId qk = qkv;
    if (o_.llama) {
      const int64_t width = (a_ + kv_) * dh_;
      qk = m_.op(att + ".rotary", "RotaryEmbedding", att, i, {qkv}, {b_, s_, width},
                 kFlopsPerElemRotary * d(b_) * d(s_) * d(width));
      m_.last_op().category = OpCategory::kElementwise;
      // Fused RoPE (te, compile, compile-blocks) reads and writes q and k only: 2 b s (a + kv) d
      // elements (the compiled sets also their cos / sin tables, and backward twice that);
      // megatron-2021's op reads the whole QKV output.
      if (eager()) {
        set_kernels(eager_rotary(d(b_) * d(s_), d(s_), d(a_), d(kv_), d(dh_), o_.dtype));
        // Its products keep only the cos / sin tables: the projections are not saved.
        m_.last_op().attrs.emplace_back(kSavedTensorsAttr, "none");
      } else if (compiled()) {
        const FusedBytes r = compiled_rotary(b_ * s_, s_, a_, kv_, dh_, o_.dtype);
        set_op_bytes(r.forward, r.backward);
      } else if (o_.kernels != KernelPreset::kMegatron2021) {
        m_.last_op().bytes_accessed =
            m_.bounded_bytes(2 * m_.tensor_ref(qk).bytes, "op '" + att + ".rotary' bytes accessed");
      }
    }
    return o_.attention == AttentionImpl::kFlash ? flash_core(core, i, qk, qkv)
                                                 : unfused_core(core, i, qk, qkv);
  }

  // Megatron's core_attention: the s x s scores and probabilities are written.
  TensorId unfused_core(const std::string& core, int i, TensorId qk, TensorId qkv) {
    // Over b*a heads: [s, d_head] @ [d_head, s], then [s, s] @ [s, d_head].
    const double attn = 2 * bass_ * d(dh_);
    const TensorId scores = m_.op(core + ".scores", "MatMul", core, i, {qk}, bass_shape_, attn);
    TensorId probs = m_.op(core + ".scale_mask_softmax", "Softmax", core, i, {scores}, bass_shape_,
                           kFlopsPerElemSoftmax * bass_);
    probs = add_dropout(core + ".attention_dropout", core, i, probs, bass_shape_);
    // V is not rotated: the context reads it from the fused QKV output.
    return m_.op(core + ".context", "MatMul", core, i, {probs, qkv}, {b_, s_, ctx_width_}, attn);
  }

  // One FlashAttention op: reads q, k (rotated for LLaMA) and v, writes the context and the
  // fp32 logsumexp its backward needs; dropout on the probabilities happens inside it.
  TensorId flash_core(const std::string& core, int i, TensorId qk, TensorId qkv) {
    AttentionShape shape{b_, s_, a_, kv_, dh_, true, window(i)};
    std::vector<TensorId> in{qkv};
    if (qk != qkv) in = {qk, qkv};
    if (outside_blocks_eager() && kv_ < a_) {
      in = {qk, repeat_kv(core, i, qk, qkv)};
      shape.kv_heads = a_;  // SDPA sees as many key / value heads as query heads
    }
    return add_flash_attention(blocks_, core + ".flash_attention", core, i, std::move(in),
                               ctx_width_, shape, flash_attention_flops(shape),
                               flash_attention_bytes(shape, dtype_bytes(o_.dtype)));
  }

  // Hugging Face's repeat_kv: the rotated keys and the values repeated to the query heads,
  // [b, s, 2 a d], before SDPA (inductor materializes them too); the backward sums the
  // copies and, in eager, makes the transposed value projection contiguous.
  TensorId repeat_kv(const std::string& core, int i, TensorId qk, TensorId qkv) {
    const TensorId out =
        m_.op(core + ".repeat_kv", "RepeatKV", core, i, {qk, qkv}, {b_, s_, 2 * a_ * dh_}, 0);
    m_.last_op().category = OpCategory::kDataMovement;
    const double eb = d(dtype_bytes(o_.dtype)), tokens = d(b_) * d(s_);
    if (eager()) {
      set_kernels(eager_repeat_kv(tokens, d(a_), d(kv_), d(dh_), o_.dtype));
      return out;
    }
    const double copies = 2 * tokens * d(dh_) * d(kv_ + a_) * eb;  // k and v: read kv, write a
    set_op_bytes(copies, copies);
    return out;
  }

  // Layer i's sliding window (0 = full attention).
  int64_t window(int i) const {
    return o_.window_layer.empty() || o_.window_layer[size_t(i)] ? o_.sliding_window : 0;
  }

  bool is_moe_layer(int i) const {
    return o_.moe.enabled() && (o_.moe.moe_layer.empty() || o_.moe.moe_layer[size_t(i)]);
  }

  // Layer i's MoE MLP (datasets/decoder_blocks.h) and its residual, as mlp().
  Residual moe_mlp(const std::string& p, int i, int moe_index, const Residual& att,
                   std::vector<TensorId>* aux_losses) {
    const std::string mlp = p + ".mlp";
    const TensorId out = add_moe_mlp(blocks_, o_.moe, mlp, i, moe_index, att.normed, aux_losses);
    return add_norm(mlp + ".bias_dropout_add", mlp, i, att.sum, out, input_norm_site(i + 1));
  }

  // Layer i's MLP block after the attention's residual; returns the layer's output and the
  // next layer's input norm of it (past the last layer, the final norm).
  Residual mlp(const std::string& p, int i, const Residual& att) {
    const std::string mlp = p + ".mlp";
    const TensorId up =
        m_.op(mlp + ".dense_h_to_4h", "MatMul", mlp, i, {att.normed}, {b_, s_, up_width_},
              2 * bsh_ * d(up_width_), weight(h_, up_width_) + (bias_ ? u(up_width_) : 0));
    TensorId act;
    if (o_.llama && eager()) {
      act = eager_swiglu_op(mlp, i, up);
    } else if (o_.llama) {
      act = m_.op(mlp + ".swiglu", "Swiglu", mlp, i, {up}, {b_, s_, f_},
                  kFlopsPerElemSwiglu * d(b_) * d(s_) * d(f_));
      m_.last_op().category = OpCategory::kElementwise;
    } else {
      act = m_.op(mlp + ".bias_gelu", "Gelu", mlp, i, {up}, {b_, s_, f_},
                  kFlopsPerElemGelu * d(b_) * d(s_) * d(f_));
    }
    const TensorId down = m_.op(mlp + ".dense_4h_to_h", "MatMul", mlp, i, {act}, bsh_shape_,
                                2 * bsh_ * d(f_), weight(f_, h_) + (bias_ ? u(h_) : 0));
    return add_norm(mlp + ".bias_dropout_add", mlp, i, att.sum, down, input_norm_site(i + 1));
  }

  // Eager SwiGLU, silu(gate) * up: silu keeps gate, the product keeps silu(gate) and up, so
  // the op keeps its input (gate and up) and a second output, silu(gate).
  TensorId eager_swiglu_op(const std::string& mlp, int i, TensorId up) {
    const std::vector<TensorId> out =
        m_.op_multi(mlp + ".swiglu", "Swiglu", mlp, i, {up}, {{b_, s_, f_}, {b_, s_, f_}},
                    kFlopsPerElemSwiglu * d(b_) * d(s_) * d(f_));
    m_.last_op().category = OpCategory::kElementwise;
    set_kernels(eager_swiglu(d(b_) * d(s_) * d(f_), o_.dtype));
    m_.last_op().attrs.emplace_back(kSavedTensorsAttr, "inputs_outputs");
    return out[0];
  }

  // The eager loss's memory: log_softmax keeps its fp32 output (an output of the loss op
  // here), the step keeps the logits until backward ends, and backward holds two fp32
  // buffers of the logits' size (the zeroed gradient, log-softmax's input gradient).
  void eager_loss_memory() {
    const TensorId log_probs = m_.tensor("loss.log_probs", {b_, s_, V_}, DType::kF32);
    Op& op = m_.last_op();
    op.outputs.push_back(log_probs);
    op.attrs.emplace_back(kSavedTensorsAttr, "inputs_outputs");
    op.workspace_bytes =
        m_.bounded_bytes(2 * m_.tensor_ref(log_probs).bytes, "op 'loss' workspace bytes");
  }

  const Spec& o_;
  const int64_t b_, s_, h_, a_, kv_, dh_, ctx_width_, f_, V_, qkv_width_, up_width_;
  const bool bias_, dropout_;
  const double bsh_, bass_;
  const std::vector<int64_t> bsh_shape_, bass_shape_;
  const std::string norm_type_;
  const double norm_flops_;
  const uint64_t norm_params_;
  const double bda_flops_;
  GraphMaker m_;
  BlockContext blocks_;
};

Graph build(const Spec& o) {
  validate(o);
  return DecoderBuilder(o).build();
}

}  // namespace

const char* to_string(KernelPreset k) { return kKernelNames[static_cast<int>(k)]; }

bool parse_kernel_preset(const std::string& s, KernelPreset* out) {
  return parse_name(s, kKernelNames, out);
}

const char* to_string(AttentionImpl a) { return kAttentionNames[static_cast<int>(a)]; }

bool parse_attention_impl(const std::string& s, AttentionImpl* out) {
  return parse_name(s, kAttentionNames, out);
}

double attention_pairs(const AttentionShape& a) {
  const double s = d(a.seq);
  if (!a.causal) return s * s;
  if (a.window <= 0 || a.window >= a.seq) return s * (s + 1) / 2;
  const double w = d(a.window);
  return w * (w + 1) / 2 + (s - w) * w;  // the first w queries see i + 1 keys, the rest w
}

double flash_attention_flops(const AttentionShape& a) {
  return 4 * d(a.batch) * d(a.heads) * d(a.head_dim) * attention_pairs(a);
}

uint64_t flash_attention_bytes(const AttentionShape& a, int elem_bytes) {
  const uint64_t tokens = u(a.batch) * u(a.seq), eb = u(elem_bytes);
  const uint64_t qkv = tokens * u(a.heads + 2 * a.kv_heads) * u(a.head_dim) * eb;
  const uint64_t out = tokens * u(a.heads) * u(a.head_dim) * eb;
  const uint64_t lse = tokens * u(a.heads) * 4;
  return qkv + out + lse;
}

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
  Spec s = shared_spec("gpt", o);
  s.position_embeddings = o.position_embeddings;
  return build(s);
}

Graph make_llama(const LlamaOptions& o) {
  Spec s = shared_spec("llama", o);
  s.kv_heads = o.kv_heads;
  s.head_dim = o.head_dim;
  s.window_layer = o.window_layer;
  s.mla = o.mla;
  s.moe = o.moe;
  s.mtp_layers = o.mtp_layers;
  s.llama = true;
  return build(s);
}

}  // namespace placer
