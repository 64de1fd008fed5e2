#include "datasets/hf_config.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "src/io/json_read.h"
#include "src/io/yaml_util.h"
#include "src/util/checked_math.h"
#include "src/util/error.h"

namespace placer {

namespace {

using Json = nlohmann::json;

/// Each size on its own stays below 2^40 (as in datasets/gpt.cpp), so products of a few fit
/// int64 and are checked where they are formed.
constexpr int64_t kMaxDimension = int64_t(1) << 40;
constexpr int64_t kMaxLayers = int64_t(1) << 20;

/// Keys that leave the architecture alone: token ids, initialisation, storage dtype and
/// quantisation, inference caches, dropout (0 in every released config), routing rules and
/// loss coefficients without parameters, remote-code maps.
const std::set<std::string> kArchitectureNeutral = {"_name_or_path",
                                                    "architectures",
                                                    "auto_map",
                                                    "transformers_version",
                                                    "torch_dtype",
                                                    "quantization_config",
                                                    "bos_token_id",
                                                    "eos_token_id",
                                                    "pad_token_id",
                                                    "initializer_range",
                                                    "rms_norm_eps",
                                                    "use_cache",
                                                    "attention_dropout",
                                                    "pretraining_tp",
                                                    "_attn_implementation_autoset",
                                                    "output_router_logits",
                                                    "router_aux_loss_coef",
                                                    "router_jitter_noise",
                                                    "aux_loss_alpha",
                                                    "seq_aux",
                                                    "ep_size",
                                                    "n_group",
                                                    "topk_group",
                                                    "topk_method",
                                                    "scoring_func",
                                                    "routed_scaling_factor",
                                                    "norm_topk_prob",
                                                    "max_window_layers",
                                                    "use_sliding_window"};

enum class Family { kLlama, kMistral, kQwen2, kMixtral, kQwen2Moe, kDeepseekV3 };

const std::pair<const char*, Family> kFamilies[] = {
    {"llama", Family::kLlama},        {"mistral", Family::kMistral},
    {"qwen2", Family::kQwen2},        {"mixtral", Family::kMixtral},
    {"qwen2_moe", Family::kQwen2Moe}, {"deepseek_v3", Family::kDeepseekV3}};

/// Reads one config.json tree into an HfModel, remembering which keys it read so that the
/// rest can be refused.
class ConfigReader {
 public:
  ConfigReader(const Json& root, const std::string& file) : root_(root), r_(file) {
    r_.object(root_, "");
    m_.file = file;
  }

  HfModel read() {
    read_model_type();
    read_sizes();
    read_attention();
    read_position_settings();
    switch (family_) {
      case Family::kMixtral:
        read_mixtral_experts();
        break;
      case Family::kQwen2Moe:
        read_qwen2_moe_experts();
        break;
      case Family::kDeepseekV3:
        read_deepseek_experts();
        break;
      default:
        break;
    }
    refuse_unread_keys();
    return std::move(m_);
  }

 private:
  /// The value of `key`, marked read; nullptr when absent or null.
  const Json* get(const char* key) {
    read_.insert(key);
    const Json* v = r_.find(root_, key, "");
    return v == nullptr || v->is_null() ? nullptr : v;
  }
  int64_t size(const char* key, int64_t lo = 1, int64_t hi = kMaxDimension) {
    const Json* v = get(key);
    if (v == nullptr) r_.fail(key, "missing (model_type " + m_.model_type + " needs it)");
    return r_.integer(*v, key, lo, hi);
  }
  int64_t size_or(const char* key, int64_t fallback, int64_t lo = 0, int64_t hi = kMaxDimension) {
    const Json* v = get(key);
    return v == nullptr ? fallback : r_.integer(*v, key, lo, hi);
  }
  bool flag_or(const char* key, bool fallback) {
    const Json* v = get(key);
    return v == nullptr ? fallback : r_.boolean(*v, key);
  }
  /// A boolean key placer models only at one value (attention_bias: false).
  void require_flag(const char* key, bool modelled) {
    if (flag_or(key, modelled) != modelled) {
      r_.fail(key, std::string(modelled ? "false" : "true") +
                       " changes the architecture, which placer does not model yet");
    }
  }

  void read_model_type() {
    const Json* v = get("model_type");
    if (v == nullptr) r_.fail("model_type", "missing");
    m_.model_type = r_.string(*v, "model_type");
    for (const auto& [name, family] : kFamilies) {
      if (m_.model_type == name) {
        family_ = family;
        return;
      }
    }
    r_.fail("model_type", "unknown model type " + quote_short(m_.model_type) +
                              " (placer reads llama, mistral, qwen2, mixtral, qwen2_moe, "
                              "deepseek_v3)");
  }

  void read_sizes() {
    m_.hidden = size("hidden_size");
    m_.ffn = size("intermediate_size");
    m_.layers = static_cast<int>(size("num_hidden_layers", 1, kMaxLayers));
    m_.heads = size("num_attention_heads");
    m_.kv_heads = size_or("num_key_value_heads", m_.heads, 1);
    if (m_.heads % m_.kv_heads != 0) {
      r_.fail("num_key_value_heads", "(" + std::to_string(m_.kv_heads) +
                                         ") must divide num_attention_heads (" +
                                         std::to_string(m_.heads) + ")");
    }
    m_.vocab = size("vocab_size");
    m_.tied_embeddings = flag_or("tie_word_embeddings", false);
    m_.max_position_embeddings = size_or("max_position_embeddings", 0);
    const Json* act = get("hidden_act");
    if (act != nullptr && r_.string(*act, "hidden_act") != "silu") {
      r_.fail("hidden_act", quote_short(r_.string(*act, "hidden_act")) +
                                " is not modelled (placer's MLPs are SwiGLU: silu)");
    }
    require_flag("mlp_bias", false);
  }

  void read_attention() {
    const bool qwen = family_ == Family::kQwen2 || family_ == Family::kQwen2Moe;
    m_.qkv_bias = qwen;  // Qwen2's q, k and v projections always have biases
    if (!qwen) require_flag("attention_bias", false);
    if (family_ == Family::kDeepseekV3) return read_mla();
    const int64_t even = m_.hidden % m_.heads == 0 ? m_.hidden / m_.heads : 0;
    m_.head_dim = size_or("head_dim", even, 1);
    if (m_.head_dim == 0) {
      r_.fail("num_attention_heads", "(" + std::to_string(m_.heads) +
                                         ") must divide hidden_size (" + std::to_string(m_.hidden) +
                                         ") when head_dim is not given");
    }
  }

  void read_mla() {
    m_.mla = true;
    HfMla& a = m_.mla_ranks;
    a.q_lora_rank = size_or("q_lora_rank", 0);
    a.kv_lora_rank = size("kv_lora_rank");
    a.qk_rope_head_dim = size("qk_rope_head_dim");
    a.qk_nope_head_dim = size("qk_nope_head_dim");
    a.v_head_dim = size("v_head_dim");
    m_.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  }

  void read_position_settings() {
    if (const Json* theta = get("rope_theta")) {
      m_.rope_theta = r_.number(*theta, "rope_theta");
    }
    if (const Json* s = get("rope_scaling")) {
      r_.object(*s, "rope_scaling");
      const Json* type = r_.find(*s, "rope_type", "rope_scaling");
      if (type == nullptr) type = r_.find(*s, "type", "rope_scaling");
      if (type != nullptr) m_.rope_scaling = r_.string(*type, "rope_scaling.type");
      if (const Json* f = r_.find(*s, "factor", "rope_scaling")) {
        m_.rope_scaling_factor = r_.number(*f, "rope_scaling.factor");
      }
    }
    // Qwen2 configs carry a window even when use_sliding_window is false (it is then unused).
    const bool window_used = family_ == Family::kMistral || family_ == Family::kMixtral ||
                             flag_or("use_sliding_window", false);
    const int64_t window = size_or("sliding_window", 0);
    if (window_used) m_.sliding_window = window;
  }

  void read_mixtral_experts() {
    HfMoe& e = m_.moe;
    e.experts = size("num_local_experts", 1, kMaxLayers);
    e.experts_per_token = size("num_experts_per_tok", 1, e.experts);
    e.expert_ffn = m_.ffn;  // Mixtral's experts are intermediate_size wide
    e.moe_layer.assign(size_t(m_.layers), true);
  }

  void read_qwen2_moe_experts() {
    HfMoe& e = m_.moe;
    e.experts = size("num_experts", 1, kMaxLayers);
    e.experts_per_token = size("num_experts_per_tok", 1, e.experts);
    e.expert_ffn = size("moe_intermediate_size");
    e.shared_ffn = size_or("shared_expert_intermediate_size", 0);
    e.shared_experts = e.shared_ffn > 0 ? 1 : 0;
    e.shared_expert_gate = e.shared_ffn > 0;
    const int64_t step = size_or("decoder_sparse_step", 1, 1, kMaxLayers);
    std::set<int64_t> dense;
    if (const Json* only = get("mlp_only_layers")) {
      const Json& list = r_.array(*only, "mlp_only_layers");
      for (size_t i = 0; i < list.size(); ++i) {
        dense.insert(
            r_.integer(list[i], "mlp_only_layers[" + std::to_string(i) + "]", 0, m_.layers - 1));
      }
    }
    // As Qwen2MoeDecoderLayer: MoE unless listed dense, every decoder_sparse_step-th layer.
    for (int i = 0; i < m_.layers; ++i) {
      e.moe_layer.push_back(!dense.count(i) && (i + 1) % step == 0);
    }
  }

  void read_deepseek_experts() {
    HfMoe& e = m_.moe;
    e.experts = size("n_routed_experts", 1, kMaxLayers);
    e.experts_per_token = size("num_experts_per_tok", 1, e.experts);
    e.expert_ffn = size("moe_intermediate_size");
    e.shared_experts = size_or("n_shared_experts", 0, 0, kMaxLayers);
    e.shared_ffn = checked_mul(e.shared_experts, e.expert_ffn, "n_shared_experts");
    e.router_bias = true;  // the e_score_correction_bias of its gate
    const int64_t first_dense = size_or("first_k_dense_replace", 0, 0, m_.layers);
    const int64_t freq = size_or("moe_layer_freq", 1, 1, kMaxLayers);
    m_.mtp_layers = size_or("num_nextn_predict_layers", 0, 0, kMaxLayers);
    // As DeepseekV3DecoderLayer: dense before first_k_dense_replace, then every freq-th.
    for (int i = 0; i < m_.layers; ++i) e.moe_layer.push_back(i >= first_dense && i % freq == 0);
  }

  void refuse_unread_keys() {
    for (const auto& item : root_.items()) {
      const std::string& key = item.key();
      if (read_.count(key) || kArchitectureNeutral.count(key)) continue;
      r_.fail(key, "unknown key for model_type " + m_.model_type +
                       " (placer cannot tell whether it changes the architecture)");
    }
  }

  const Json& root_;
  JsonReader r_;
  HfModel m_;
  Family family_ = Family::kLlama;
  std::set<std::string> read_;
};

// --- parameter counts ---

int64_t mul(int64_t a, int64_t b) { return checked_mul(a, b, "parameter count"); }
int64_t add(int64_t a, int64_t b) { return checked_add(a, b, "parameter count"); }

int64_t attention_params(const HfModel& m) {
  const int64_t h = m.hidden;
  if (m.mla) {
    const HfMla& r = m.mla_ranks;
    const int64_t qk = r.qk_nope_head_dim + r.qk_rope_head_dim;
    // The q_a / kv_a layernorms of the low-rank paths are counted with the norms.
    const int64_t q = r.q_lora_rank > 0
                          ? add(mul(h, r.q_lora_rank), mul(r.q_lora_rank, mul(m.heads, qk)))
                          : mul(h, mul(m.heads, qk));
    const int64_t kv = add(mul(h, r.kv_lora_rank + r.qk_rope_head_dim),
                           mul(r.kv_lora_rank, mul(m.heads, r.qk_nope_head_dim + r.v_head_dim)));
    return add(add(q, kv), mul(mul(m.heads, r.v_head_dim), h));
  }
  const int64_t qkv_width = mul(m.heads + 2 * m.kv_heads, m.head_dim);
  const int64_t bias = m.qkv_bias ? qkv_width : 0;
  return add(add(mul(h, qkv_width), bias), mul(mul(m.heads, m.head_dim), h));
}

/// "llama3_8b" for ".../llama3_8b.config.json"; the folder's name for ".../Llama-3-8B/config.json"
/// (as the Hugging Face hub lays models out).
std::string default_graph_name(const std::string& file) {
  const std::filesystem::path p(file);
  std::string name = p.filename().string();
  for (const std::string suffix : {".json", ".config"}) {
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
      name.resize(name.size() - suffix.size());
    }
  }
  const std::string folder = p.parent_path().filename().string();
  return name == "config" && !folder.empty() ? folder : name;
}

/// A SwiGLU MLP of width f: gate and up (h x f each) and down (f x h).
int64_t swiglu_params(int64_t h, int64_t f) { return mul(3, mul(h, f)); }

}  // namespace

int HfModel::moe_layers() const {
  int n = 0;
  for (bool b : moe.moe_layer) n += b ? 1 : 0;
  return n;
}

HfModel parse_hf_config(const std::string& json_text, const std::string& file) {
  const Json root = parse_json_text(json_text, file);
  return ConfigReader(root, file).read();
}

HfModel load_hf_config(const std::string& path) {
  return parse_hf_config(read_text_file(path, "Hugging Face config"), path);
}

namespace {

/// hf_param_counts without the file in its overflow messages.
HfParamCounts count_params(const HfModel& m) {
  HfParamCounts c;
  const int64_t h = m.hidden;
  const int moe = m.moe_layers();
  const int dense = m.layers - moe;
  c.embedding = mul(m.vocab, h);
  c.output_layer = m.tied_embeddings ? 0 : c.embedding;
  c.attention = mul(m.layers, attention_params(m));
  c.norms = add(mul(2 * int64_t(m.layers), h), h);
  if (m.mla) {  // the q_a and kv_a layernorms of MLA
    c.norms = add(c.norms, mul(m.layers, m.mla_ranks.q_lora_rank + m.mla_ranks.kv_lora_rank));
  }
  c.dense_mlp = mul(dense, swiglu_params(h, m.ffn));
  const HfMoe& e = m.moe;
  const int64_t expert = swiglu_params(h, e.expert_ffn);
  c.routed_experts = mul(moe, mul(e.experts, expert));
  const int64_t shared = add(swiglu_params(h, e.shared_ffn), e.shared_expert_gate ? h : 0);
  c.shared_experts = mul(moe, shared);
  c.routers = mul(moe, add(mul(h, e.experts), e.router_bias ? e.experts : 0));
  const int64_t common = add(add(add(c.embedding, c.output_layer), add(c.attention, c.norms)),
                             add(c.dense_mlp, add(c.shared_experts, c.routers)));
  c.total = add(common, c.routed_experts);
  c.active = add(common, mul(moe, mul(e.experts_per_token, expert)));
  c.active_without_embedding = c.active - c.embedding;
  return c;
}

/// Runs `make`, prefixing its ValidationErrors (overflowing sizes) with the config's file.
template <class F>
auto naming_file(const HfModel& m, F make) {
  try {
    return make();
  } catch (const ValidationError& e) {
    throw ValidationError(m.file + ": " + e.what());
  }
}

}  // namespace

HfParamCounts hf_param_counts(const HfModel& m) {
  return naming_file(m, [&m] { return count_params(m); });
}

LlamaOptions hf_llama_options(const HfModel& m, const HfGraphOptions& o) {
  if (o.capacity_factor < 0 || (o.capacity_factor > 0 && !m.is_moe())) {
    std::ostringstream os;
    os << m.file << ": capacity_factor " << o.capacity_factor
       << (m.is_moe() ? " must be >= 0" : " needs an MoE model");
    throw ValidationError(os.str());
  }
  LlamaOptions l;
  l.name = o.name.empty() ? default_graph_name(m.file) : o.name;
  l.layers = m.layers;
  l.hidden = m.hidden;
  l.heads = m.heads;
  l.kv_heads = m.kv_heads;
  l.ffn = m.ffn;
  l.vocab = m.vocab;
  l.tied_embeddings = m.tied_embeddings;
  l.seq_len = o.seq_len;
  l.batch = o.batch;
  l.dtype = o.dtype;
  l.pad_vocab_multiple = o.pad_vocab_multiple;
  l.tp = o.tp;
  // The generator's default attention (flash) respects the window; Mistral's 4096 keys.
  l.sliding_window = m.sliding_window;
  if (m.head_dim * m.heads != m.hidden) l.head_dim = m.head_dim;
  if (m.mla) {
    const HfMla& r = m.mla_ranks;
    l.mla = {r.q_lora_rank, r.kv_lora_rank, r.qk_rope_head_dim, r.qk_nope_head_dim, r.v_head_dim};
  }
  if (m.is_moe()) {
    const HfMoe& e = m.moe;
    l.moe.experts = e.experts;
    l.moe.top_k = e.experts_per_token;
    l.moe.expert_ffn = e.expert_ffn;
    l.moe.shared_ffn = e.shared_ffn;
    l.moe.shared_expert_gate = e.shared_expert_gate;
    l.moe.router_bias = e.router_bias;
    l.moe.capacity_factor = o.capacity_factor;
    l.moe.moe_layer = e.moe_layer;
  }
  return l;
}

namespace {

/// `g` (make_llama's graph of `m`) with each layer's q/k/v biases added to its
/// query_key_value op's parameters; `g` itself when the model has no such biases.
Graph with_qkv_biases(const HfModel& m, Graph g, DType dtype) {
  if (!m.qkv_bias) return g;
  const int64_t bias_elements = mul(m.heads + 2 * m.kv_heads, m.head_dim);
  const uint64_t bias_bytes = uint64_t(mul(bias_elements, dtype_bytes(dtype)));
  GraphBuilder b(g.name());
  b.set_batch_size(g.batch_size());
  for (const Tensor& t : g.tensors()) b.add_tensor(t);
  for (Op op : g.ops()) {
    const std::string suffix = ".self_attention.query_key_value";
    const bool qkv = op.name.size() > suffix.size() &&
                     op.name.compare(op.name.size() - suffix.size(), suffix.size(), suffix) == 0;
    if (qkv) op.param_bytes += bias_bytes;
    b.add_op(std::move(op));
  }
  return b.build();
}

}  // namespace

Graph make_hf_graph(const HfModel& m, const HfGraphOptions& o) {
  const LlamaOptions options = hf_llama_options(m, o);
  return naming_file(m, [&] { return with_qkv_biases(m, make_llama(options), o.dtype); });
}

}  // namespace placer
