#pragma once
// Megatron-LM-style GPT and LLaMA forward graphs (the layer structure of Megatron's
// GPTModel: language_model.embedding -> language_model.encoder.layers.<i> ->
// final_layernorm -> output_layer -> loss), built like make_transformer
// (datasets/synthetic.h) and with the same cost conventions.
//
// Op names, types and scopes are a contract: the tensor-parallel expansion matches ops by
// name suffix, so they follow Megatron's module names (docs/models.md has the table).
// Per layer i, with P = "language_model.encoder.layers.<i>" (ops in this order):
//   P.input_layernorm                               LayerNormalization | RMSNormalization
//   P.self_attention.query_key_value                MatMul  [b, s, (a + 2 kv) d_head]
//   P.self_attention.rotary                         RotaryEmbedding (LLaMA only)
//   P.self_attention.core_attention.scores          MatMul  [b, a, s, s]
//   P.self_attention.core_attention.scale_mask_softmax  Softmax [b, a, s, s]
//   P.self_attention.core_attention.attention_dropout   Dropout (only when dropout > 0)
//   P.self_attention.core_attention.context         MatMul  [b, s, h]
//   (with attention = flash the four core_attention ops above are one op:
//   P.self_attention.core_attention.flash_attention  FlashAttention [b, s, h], logsumexp)
//   P.self_attention.dense                          MatMul  [b, s, h]
//   P.self_attention.bias_dropout_add               Add (residual)
//   P.post_attention_layernorm                      norm
//   P.mlp.dense_h_to_4h                             MatMul  [b, s, f] (LLaMA [b, s, 2f])
//   P.mlp.bias_gelu | P.mlp.swiglu                  Gelu | Swiglu [b, s, f]
//   P.mlp.dense_4h_to_h                             MatMul  [b, s, h]
//   P.mlp.bias_dropout_add                          Add (residual)
// Each op's scope is its parent module path (e.g. P + ".self_attention.core_attention").
//
//   GptOptions o;
//   o.layers = 24; o.hidden = 2048; o.heads = 16; o.batch = 8;
//   Graph g = make_gpt(o);  // GPT-3 XL-sized forward graph, vocab padded to 50304

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

/// Per-element FLOP counts of the ops that only these generators use (the others come from
/// datasets/synthetic.h).
/// Dropout: draw-compare against the keep probability and scale the kept value by
/// 1 / (1 - p): 2 FLOPs per element (the random-number generation itself is not counted).
inline constexpr double kFlopsPerElemDropout = 2;
/// RMSNorm (Zhang & Sennrich 2019): square, sum, normalise, scale: 4 FLOPs per element
/// (LayerNorm's 8 less the mean subtraction and the shift).
inline constexpr double kFlopsPerElemRmsNorm = 4;
/// Rotary position embedding (Su et al. 2021): x * cos + rotate_half(x) * sin, 2
/// multiplications and an addition per element of q and k.
inline constexpr double kFlopsPerElemRotary = 3;
/// SwiGLU (Shazeer 2020): silu(gate) * up = gate * sigmoid(gate) * up, a sigmoid (4, as
/// kFlopsPerElemSigmoid) and two multiplications per output element.
inline constexpr double kFlopsPerElemSwiglu = 6;

/// How the attention core runs (docs/models.md, "Attention implementations").
enum class AttentionImpl : uint8_t {
  kUnfused,  ///< Megatron's core_attention: scores, softmax, dropout, context over [b, a, s, s]
  kFlash,    ///< one FlashAttention op (Dao 2023): the s x s scores are never written
};
/// "unfused", "flash".
const char* to_string(AttentionImpl a);
/// Parses the names above; false on an unknown name.
bool parse_attention_impl(const std::string& s, AttentionImpl* out);

/// Which kernels run the ops around the GEMMs (docs/models.md, "Kernel presets").
enum class KernelPreset : uint8_t {
  kMegatron2021,  ///< one op per module, as the op contract above (Megatron-LM's 2021 kernels)
  kTe,            ///< Transformer Engine (Megatron-core): rotary fused over q and k only
  kCompile,       ///< torch.compile: as te, and each residual add fused into the next norm
  /// Plain PyTorch eager in Hugging Face style (LLaMA only): the op contract above, each op's
  /// bytes those of the eager kernels it runs (RMSNorm in fp32 steps, rotate-half rotary,
  /// key/value heads repeated for SDPA in a repeat_kv op, SwiGLU as silu and mul,
  /// cross-entropy on fp32 logits).
  kEager,
  /// torch.compile of each decoder block on its own (LLaMA only, as eager's scope): inside a
  /// block as compile, except that the MLP's residual add stays apart from the next block's
  /// norm and keys / values are repeated for SDPA (repeat_kv); the final norm and the loss,
  /// outside every block, as eager.
  kCompileBlocks,
};
/// "megatron-2021", "te", "compile", "eager", "compile-blocks".
const char* to_string(KernelPreset k);
/// Parses the names above; false on an unknown name.
bool parse_kernel_preset(const std::string& s, KernelPreset* out);

/// One attention call's shape: `heads` query heads, `kv_heads` key/value heads (GQA when
/// fewer), each of `head_dim`; causal masking; a sliding window of `window` keys (each query
/// sees itself and the window - 1 keys before it; 0 = no window; causal only).
struct AttentionShape {
  int64_t batch = 1, seq = 1, heads = 1, kv_heads = 1, head_dim = 1;
  bool causal = true;
  int64_t window = 0;
};
/// Query-key pairs one head scores: s^2; causal sum over queries i < s of min(i + 1, w)
/// (s (s + 1) / 2 without a window).
double attention_pairs(const AttentionShape& a);
/// FlashAttention's forward FLOPs: q k^T and p v, 2 multiply-adds per pair and head dim:
/// 4 * b * heads * head_dim * pairs (4 b s^2 h non-causal, about half causal). Its backward
/// is 2.5x (training_step.h).
double flash_attention_flops(const AttentionShape& a);
/// FlashAttention's forward memory traffic: q, k, v read once (kv heads for k and v), the
/// output written (elem_bytes each) and the fp32 logsumexp written (b * heads * s * 4):
/// O(b s h), never O(b a s^2).
uint64_t flash_attention_bytes(const AttentionShape& a, int elem_bytes);

/// Megatron's padded vocabulary: `vocab` rounded up to a multiple of multiple * tp
/// (--make-vocab-size-divisible-by times the tensor-parallel size), so the embedding and
/// output layer split evenly over tp ranks. padded_vocab(50257, 128, 1) = 50304.
int64_t padded_vocab(int64_t vocab, int64_t multiple, int tp);

/// GPT-2 / GPT-3 as Megatron-LM builds it: learned position embeddings, LayerNorm, fused
/// QKV with biases, GeLU MLP, tied input/output embeddings. Parameters (ffn = 4h, tied,
/// biases): 12*l*h^2 + 13*l*h + V*h + s*h + 2h; MatMul FLOPs per layer
/// 24*b*s*h^2 + 4*b*s^2*h.
struct GptOptions {
  std::string name = "gpt";
  int layers = 24;
  int64_t hidden = 2048;
  int64_t heads = 16;  ///< must divide hidden
  int64_t ffn = 0;     ///< 0 = 4 * hidden
  int64_t seq_len = 1024;
  int64_t batch = 8;  ///< global batch for this graph
  int64_t vocab = 50257;
  int64_t pad_vocab_multiple = 128;  ///< vocab is padded to a multiple of this * tp
  int tp = 1;                        ///< tensor-parallel size the vocabulary is padded for
  DType dtype = DType::kF16;
  bool tied_embeddings = true;  ///< output_layer reuses word_embeddings (0 own parameters)
  bool position_embeddings = true;
  double dropout = 0.1;  ///< hidden and attention dropout; 0 omits the Dropout ops
  /// The attention core: unfused (Megatron-LM 2021, the default) or flash.
  AttentionImpl attention = AttentionImpl::kUnfused;
  /// Sliding-window attention (keys per query, 0 = none); flash only.
  int64_t sliding_window = 0;
  /// The kernels of the other ops (megatron-2021 = the op contract above).
  KernelPreset kernels = KernelPreset::kMegatron2021;
};
Graph make_gpt(const GptOptions& options = {});

/// Multi-head latent attention (DeepSeek-V2 / V3): queries through an optional low-rank
/// q_lora_rank bottleneck, keys and values through a shared kv_lora_rank latent; each head's
/// query and key are nope_head_dim wide plus rope_head_dim rotary dimensions (the rotary key
/// shared by all heads), its value v_head_dim wide. Op names as Megatron-core's MLA (P =
/// the layer's self_attention):
///   P.linear_q_down_proj [b, s, r_q], P.q_layernorm, P.linear_q_up_proj [b, s, a (n + r)]
///   (q_lora_rank 0: P.linear_q_proj [b, s, a (n + r)]);
///   P.linear_kv_down_proj [b, s, r_kv + r], P.kv_layernorm [b, s, r_kv],
///   P.linear_kv_up_proj [b, s, a (n + v)]; P.rotary over the rotary parts of q and k;
///   P.core_attention.flash_attention [b, s, a v]; P.dense [b, s, h].
struct MlaOptions {
  int64_t q_lora_rank = 0;   ///< 0 = queries projected directly
  int64_t kv_lora_rank = 0;  ///< 0 = MLA off (grouped-query attention)
  int64_t rope_head_dim = 0, nope_head_dim = 0, v_head_dim = 0;
  bool enabled() const { return kv_lora_rank > 0; }
};

/// Mixture-of-experts MLPs (docs/models.md, "Mixture-of-experts layers"). An MoE layer's MLP
/// (P = the layer's mlp, names as Megatron-core's MoE layer) is
///   P.router                 MatMul [b, s, E]: the gate's logits (h x E weights, + E biases)
///   P.router.topk            MoeTopK [b, s, k]: softmax (sigmoid) scores and the top k
///   P.aux_loss               MoeAuxLoss []: the load-balancing loss, read by the loss op
///   P.dispatch               MoeDispatch [b, s k', h]: tokens permuted to their experts
///   P.experts.linear_fc1     GroupedMatMul [b, s k', 2 f_e]: every expert's gate and up
///   P.experts.swiglu         Swiglu [b, s k', f_e]
///   P.experts.linear_fc2     GroupedMatMul [b, s k', h]
///   P.combine                MoeCombine [b, s, h]: unpermute, weighted sum of the k outputs
///   P.shared_experts.linear_fc1 / .swiglu / .linear_fc2 and P.shared_experts.add (when
///   shared_ffn > 0; qwen2_moe's sigmoid gate P.shared_experts.gate [b, s, 1])
/// with k' = k, or capacity_factor * k when tokens are dropped and padded to capacity. The
/// ops carry the attributes of src/graph/moe_attrs.h. The grouped GEMMs hold all E experts'
/// weights (E x h x 2 f_e and E x f_e x h); expert parallelism spreads them over ranks.
struct MoeOptions {
  int64_t experts = 0;              ///< routed experts per MoE layer; 0 = dense MLPs only
  int64_t top_k = 0;                ///< experts each token is routed to
  int64_t expert_ffn = 0;           ///< width of one routed expert's SwiGLU MLP
  int64_t shared_ffn = 0;           ///< width of the shared experts together (0 = none)
  bool shared_expert_gate = false;  ///< qwen2_moe: a sigmoid gate h -> 1 on the shared experts
  bool router_bias = false;         ///< deepseek_v3: E score-correction biases
  /// Drop-and-pad: each expert takes at most capacity_factor x its even share of the tokens,
  /// and its input is padded to that capacity (Megatron's --moe-expert-capacity-factor with
  /// --moe-pad-expert-input-to-capacity). 0 = no dropping.
  double capacity_factor = 0;
  /// gpt-oss: biased expert linears. fc1's bias rides in its grouped GEMM; fc2's is added
  /// after it, scaled by each row's routing probability, one local expert at a time
  /// (Megatron-core's TEGroupedMLP._apply_bias): an ExpertBias op on the routed rows.
  bool expert_bias = false;
  /// gpt-oss: the experts' GLU input clamped to this limit before the activation (gate at
  /// most +limit, linear part in [-limit, limit]; Megatron-core's activation_func_clamp_value
  /// with the quick-GeGLU): a GluClamp op on the fc1 output. 0 = no clamp.
  double glu_clamp = 0;
  /// Per layer: MoE (true) or a dense MLP of the model's ffn; empty = every layer MoE.
  std::vector<bool> moe_layer;
  bool enabled() const { return experts > 0; }
};

/// LLaMA (Touvron et al. 2023) in Megatron's module layout: no position embeddings (rotary
/// on q and k), RMSNorm, no biases, SwiGLU MLP with gate and up fused in dense_h_to_4h,
/// grouped-query attention when kv_heads < heads, untied output layer.
struct LlamaOptions {
  std::string name = "llama";
  int layers = 32;
  int64_t hidden = 4096;
  int64_t heads = 32;    ///< must divide hidden
  int64_t kv_heads = 0;  ///< 0 = heads; GQA when smaller (must divide heads)
  int64_t ffn = 0;       ///< 0 = 2/3 * 4 * hidden rounded up to a multiple of 256 (11008 at 4096)
  int64_t seq_len = 4096;
  int64_t batch = 1;  ///< global batch for this graph
  int64_t vocab = 32000;
  int64_t pad_vocab_multiple = 128;
  int tp = 1;
  DType dtype = DType::kBF16;
  bool tied_embeddings = false;
  double dropout = 0;  ///< 0 (LLaMA's) omits the Dropout ops
  /// The attention core: flash (the default, as Llama is trained today) or unfused.
  AttentionImpl attention = AttentionImpl::kFlash;
  /// Sliding-window attention (keys per query, 0 = none; Mistral's 4096); flash only.
  int64_t sliding_window = 0;
  /// Per layer: sliding-window (true) or full attention (false); empty = every layer
  /// windowed. GPT-OSS alternates, windowed first.
  std::vector<bool> window_layer;
  /// The kernels of the other ops (megatron-2021 = the op contract above).
  KernelPreset kernels = KernelPreset::kMegatron2021;
  /// Width of one attention head; 0 = hidden / heads (Qwen3 and Gemma use other widths).
  int64_t head_dim = 0;
  MlaOptions mla;  ///< multi-head latent attention instead of GQA (flash only)
  MoeOptions moe;  ///< mixture-of-experts MLPs
  /// The last mtp_layers of `layers` are multi-token-prediction blocks (DeepSeek-V3): each
  /// the next tokens' embedding and the previous hidden states normed and projected from 2h
  /// to h (eh_proj), its decoder layer, a final norm and logits from the shared output layer,
  /// a second cross-entropy term; 0 = none.
  int mtp_layers = 0;
};
Graph make_llama(const LlamaOptions& options = {});

/// LLaMA's default FFN width for `hidden`: floor(8 * hidden / 3) rounded up to a multiple
/// of 256.
int64_t llama_ffn(int64_t hidden);

}  // namespace placer
