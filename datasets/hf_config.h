#pragma once
// Model descriptions read from Hugging Face `config.json` files (the `model_type`s llama,
// mistral, qwen2, mixtral, qwen2_moe, deepseek_v3), their parameter counts, and their forward
// graphs (made by make_llama, datasets/gpt.h: GQA or MLA attention, dense or MoE MLPs).
//
// The reader follows the JSON discipline of src/io/json_read.h (size and depth limits, exact
// integers, key paths in messages). Every key of the file is either read, checked (a value
// that would change the architecture placer models, such as `attention_bias: true`, is
// refused), or known to leave the architecture alone (token ids, initialisation, dtype,
// routing details without parameters); any other key is a FormatError naming the file and
// the key, since placer cannot tell whether it changes the model.
//
//   HfModel m = load_hf_config("datasets/models/hf/mixtral_8x7b.config.json");
//   HfParamCounts c = hf_param_counts(m);  // c.total 46.70e9, c.active 12.88e9
//
// Parameter counts (docs/models.md has the derivation), with h = hidden, V = vocab,
// a = heads, kv = kv_heads, d = head_dim, f = intermediate (dense MLP width):
//   embedding V*h; output layer V*h unless tied; norms 2h per layer + h (final);
//   GQA attention h*(a + 2kv)*d + a*d*h (+ (a + 2kv)*d q/k/v biases for qwen2 / qwen2_moe);
//   MLA attention (deepseek_v3, q_lora_rank r_q > 0, kv_lora_rank r_kv, n = qk_nope_head_dim,
//     r = qk_rope_head_dim, v = v_head_dim):
//     h*r_q + r_q*a*(n + r) + h*(r_kv + r) + r_kv*a*(n + v) + a*v*h, and r_q + r_kv more
//     norm weights per layer (the layernorms of the two low-rank paths);
//   dense SwiGLU MLP 3*h*f; MoE layer: router h*E (+ E score-correction biases for
//     deepseek_v3), E experts of 3*h*f_e, shared experts 3*h*f_s (+ h for qwen2_moe's shared
//     expert gate).
// "Active" replaces E experts by the k a token is routed to; it counts the embedding table in
// full (as Mixtral's 12.9 B does); active_without_embedding leaves it out (DeepSeek-V3's
// 36.6 B, announced as 37 B).

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/gpt.h"
#include "src/graph/graph.h"

namespace placer {

/// Multi-head latent attention (DeepSeek-V2/V3): low-rank q and kv projections.
struct HfMla {
  int64_t q_lora_rank = 0;  ///< 0 = q projected directly (no low-rank q)
  int64_t kv_lora_rank = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t v_head_dim = 0;
};

/// Mixture-of-experts MLPs (experts == 0: a dense model).
struct HfMoe {
  int64_t experts = 0;              ///< routed experts per MoE layer
  int64_t experts_per_token = 0;    ///< top-k
  int64_t expert_ffn = 0;           ///< width of one routed expert's SwiGLU MLP
  int64_t shared_experts = 0;       ///< experts every token passes through
  int64_t shared_ffn = 0;           ///< width of all shared experts together (0: none)
  bool shared_expert_gate = false;  ///< qwen2_moe: a sigmoid gate h -> 1 on the shared expert
  bool router_bias = false;         ///< deepseek_v3: E score-correction biases per MoE layer
  std::vector<bool> moe_layer;      ///< per layer: MoE (true) or dense MLP of width ffn
};

struct HfModel {
  std::string file;        ///< where it was read from (error messages)
  std::string model_type;  ///< "llama", "mixtral", ...
  int layers = 0;
  int64_t hidden = 0, ffn = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
  bool tied_embeddings = false;
  bool qkv_bias = false;                ///< qwen2 / qwen2_moe: q, k and v projections have biases
  int64_t max_position_embeddings = 0;  ///< 0 = not given
  int64_t sliding_window = 0;           ///< 0 = full attention
  double rope_theta = 0;                ///< 0 = not given
  std::string rope_scaling;             ///< rope_scaling's type ("yarn", "llama3"), "" = none
  double rope_scaling_factor = 0;
  int64_t mtp_layers = 0;  ///< deepseek_v3 num_nextn_predict_layers (not counted, not modelled)
  bool mla = false;        ///< attention is HfMla, not GQA
  HfMla mla_ranks;
  HfMoe moe;

  bool is_moe() const { return moe.experts > 0; }
  int moe_layers() const;
};

/// Reads a config.json text; `file` names it in messages. FormatError
/// "<file>: <key>: ..." for a wrong type or range, an unknown model_type, an unknown key, a
/// value placer does not model (attention_bias true, hidden_act other than silu).
HfModel parse_hf_config(const std::string& json_text, const std::string& file);
/// The file at `path` (FileError when unreadable).
HfModel load_hf_config(const std::string& path);

/// Parameters by part (the formulas above), all exact.
struct HfParamCounts {
  int64_t embedding = 0, output_layer = 0, attention = 0, norms = 0;
  int64_t dense_mlp = 0;       ///< the dense layers' MLPs
  int64_t routed_experts = 0;  ///< all routed experts of all MoE layers
  int64_t shared_experts = 0;  ///< shared experts (and qwen2_moe's shared gate)
  int64_t routers = 0;
  int64_t total = 0;
  int64_t active = 0;  ///< per token: routed experts replaced by the top-k
  int64_t active_without_embedding = 0;
};
HfParamCounts hf_param_counts(const HfModel& m);

/// The sequence, batch and precision of a graph made from a description.
struct HfGraphOptions {
  std::string name;  ///< "" = the config file's stem
  int64_t seq_len = 4096;
  int64_t batch = 1;
  DType dtype = DType::kBF16;
  int64_t pad_vocab_multiple = 1;  ///< 1 = the config's vocabulary as it is
  int tp = 1;
  /// MoE models: drop-and-pad capacity factor of the experts (MoeOptions); 0 = no dropping.
  double capacity_factor = 0;
};

/// The LlamaOptions of a model: GQA or MLA attention (head_dim as the config gives it),
/// dense or MoE MLPs (dense leading layers, shared experts). ValidationError naming the file
/// for a capacity factor below 0 or on a dense model.
LlamaOptions hf_llama_options(const HfModel& m, const HfGraphOptions& o);
/// The forward graph of the model (make_llama; qwen2's q/k/v biases are added to the
/// query_key_value op's parameters, as biases are everywhere in datasets/). Its parameter
/// count equals hf_param_counts(m).total when the vocabulary is not padded.
Graph make_hf_graph(const HfModel& m, const HfGraphOptions& o);

}  // namespace placer
