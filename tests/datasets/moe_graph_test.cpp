// Mixture-of-experts layers and multi-head latent attention in the decoder generator
// (datasets/gpt.h, datasets/decoder_blocks.h): FLOPs and parameters of small configs computed
// by hand, the MoE attributes the simulator reads, and the shipped MoE configs' graphs against
// their parameter counts (which the model cards confirm, hf_config_test.cpp).
#include <gtest/gtest.h>

#include <string>

#include "datasets/gpt.h"
#include "datasets/hf_config.h"
#include "datasets/synthetic.h"
#include "decoder_fixtures.h"
#include "src/graph/moe_attrs.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"

namespace placer {
namespace {

// 2 layers, h 64, 4 heads of 16 (2 kv heads), vocab 100, 4 experts of width 128, top-2.
const char* const kTinyMixtral = R"({
  "model_type": "mixtral", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "vocab_size": 100, "num_local_experts": 4, "num_experts_per_tok": 2})";

// 2 layers (the first dense), MLA with q rank 32, kv rank 16, rope 8, nope 16, v 16; 4 routed
// experts of 32 (top-2) and one shared expert of 32.
const char* const kTinyDeepseek = R"({
  "model_type": "deepseek_v3", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
  "q_lora_rank": 32, "kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16,
  "v_head_dim": 16, "n_routed_experts": 4, "num_experts_per_tok": 2,
  "moe_intermediate_size": 32, "n_shared_experts": 1, "first_k_dense_replace": 1})";

std::string attr(const Op& op, const char* key) {
  for (const auto& [k, v] : op.attrs) {
    if (k == key) return v;
  }
  return "";
}

int64_t graph_params(const Graph& g) { return int64_t(g.total_param_bytes() / 2); }

Graph tiny_graph(const char* json, int64_t seq, double capacity = 0) {
  HfGraphOptions o;
  o.seq_len = seq;
  o.capacity_factor = capacity;
  return make_hf_graph(parse_hf_config(json, "tiny.json"), o);
}

const Op& op_named(const Graph& g, const std::string& name) {
  const OpId id = g.find_op(name);
  EXPECT_NE(id, kNoOp) << name;
  return g.op(id);
}

TEST(MoeGraph, TwoLayerMixtralFlopsAndParametersByHand) {
  const Graph g = tiny_graph(kTinyMixtral, 8);
  // Per layer: attention 12288, router 64*4, 4 experts of 3*64*128, norms 128; embedding and
  // output layer 6400 each, final norm 64.
  EXPECT_EQ(graph_params(g), 2 * (12288 + 256 + 98304 + 128) + 12800 + 64);
  const std::string p = "language_model.encoder.layers.1.mlp";
  // T = 8 tokens, k = 2: router 2*8*64*4, top-k 5*8*4, aux loss 3*8*4, dispatch 0,
  // fc1 2*16*64*256, swiglu 6*16*128, fc2 2*16*128*64, combine 2*8*64*2.
  const std::pair<const char*, double> expected[] = {{".router", 4096},
                                                     {".router.topk", 160},
                                                     {".aux_loss", 96},
                                                     {".dispatch", 0},
                                                     {".experts.linear_fc1", 524288},
                                                     {".experts.swiglu", 12288},
                                                     {".experts.linear_fc2", 262144},
                                                     {".combine", 2048}};
  double moe_flops = 0;
  for (const auto& [suffix, flops] : expected) {
    const Op& op = op_named(g, p + suffix);
    EXPECT_EQ(op.flops, flops) << suffix;
    EXPECT_EQ(attr(op, kMoeLayerAttr), "1") << suffix;
    moe_flops += op.flops;
  }
  EXPECT_EQ(moe_flops, 805120);
  // The expert GEMMs: 2 FLOPs per token and active expert parameter (2 x 3*64*128).
  EXPECT_EQ(
      op_named(g, p + ".experts.linear_fc1").flops + op_named(g, p + ".experts.linear_fc2").flops,
      2.0 * 8 * 2 * 3 * 64 * 128);
  const Op& up = op_named(g, p + ".experts.linear_fc1");
  EXPECT_EQ(attr(up, kMoeRoleAttr), kMoeExpertUp);
  EXPECT_EQ(attr(up, kMoeExpertsAttr), "4");
  EXPECT_EQ(attr(up, kMoeTopKAttr), "2");
  EXPECT_EQ(up.param_bytes, uint64_t(2 * 4 * 64 * 256));
  EXPECT_EQ(g.tensor(op_named(g, p + ".dispatch").outputs[0]).shape,
            (std::vector<int64_t>{1, 16, 64}));
  // The layers as the simulator and the expert placers read them.
  const std::vector<MoeLayerInfo> layers = moe_layers(g);
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[1].experts, 4);
  EXPECT_EQ(layers[1].top_k, 2);
  EXPECT_FALSE(layers[1].padded);
  EXPECT_EQ(layers[1].ops.size(), 8u);
  // Both layers' load-balancing losses reach the loss op.
  EXPECT_EQ(op_named(g, "loss").inputs.size(), 4u);  // logits, 2 aux losses, labels
}

TEST(MoeGraph, CapacityFactorPadsTheExpertsInput) {
  const Graph g = tiny_graph(kTinyMixtral, 8, 1.5);
  const Op& up = op_named(g, "language_model.encoder.layers.0.mlp.experts.linear_fc1");
  // ceil(8 * 2 * 1.5) = 24 rows per sequence.
  EXPECT_EQ(up.flops, 2.0 * 24 * 64 * 256);
  EXPECT_EQ(attr(up, kMoeCapacityAttr), "1.5");
  EXPECT_TRUE(moe_layers(g)[0].padded);
  EXPECT_THROW(tiny_graph(kTinyMixtral, 8, -1), ValidationError);
  // Rows beyond the generator's bound are an error, not an overflow.
  EXPECT_THROW(tiny_graph(kTinyMixtral, int64_t(1) << 39, 4), Error);
}

TEST(MoeGraph, TinyDeepseekMlaDenseFirstLayerAndSharedExpert) {
  const HfModel m = parse_hf_config(kTinyDeepseek, "tiny.json");
  const Graph g = tiny_graph(kTinyDeepseek, 8);
  EXPECT_EQ(graph_params(g), hf_param_counts(m).total);
  // MLA by hand: q 64*32 + 32*4*24, kv 64*(16+8) + 16*4*(16+16), output 4*16*64.
  const std::string a0 = "language_model.encoder.layers.0.self_attention";
  EXPECT_EQ(op_named(g, a0 + ".linear_q_up_proj").param_bytes, uint64_t(2 * 32 * 96));
  EXPECT_EQ(op_named(g, a0 + ".linear_kv_down_proj").param_bytes, uint64_t(2 * 64 * 24));
  EXPECT_EQ(op_named(g, a0 + ".linear_kv_up_proj").param_bytes, uint64_t(2 * 16 * 128));
  EXPECT_EQ(op_named(g, a0 + ".dense").param_bytes, uint64_t(2 * 64 * 64));
  // Causal pairs 8*9/2 = 36; per pair and head 2*(16+8) + 2*16 FLOPs: 4 heads -> 11520.
  EXPECT_EQ(op_named(g, a0 + ".core_attention.flash_attention").flops, 11520);
  // The query / key heads are 16 + 8 wide, the value heads 16 (the cost model's score count).
  EXPECT_EQ(attr(op_named(g, a0 + ".core_attention.flash_attention"), "head_dim"), "24");
  EXPECT_EQ(attr(op_named(g, a0 + ".core_attention.flash_attention"), "v_head_dim"), "16");
  // Layer 0 is dense (first_k_dense_replace 1), layer 1 MoE with its shared expert.
  EXPECT_NE(g.find_op("language_model.encoder.layers.0.mlp.dense_h_to_4h"), kNoOp);
  EXPECT_EQ(g.find_op("language_model.encoder.layers.0.mlp.router"), kNoOp);
  const Op& router = op_named(g, "language_model.encoder.layers.1.mlp.router");
  EXPECT_EQ(attr(router, kMoeLayerAttr), "0");  // the first MoE layer
  ASSERT_EQ(moe_layers(g).size(), 1u);
  EXPECT_EQ(moe_layers(g)[0].ops.size(), 12u);  // 8 routed-path ops and 4 of the shared expert
  EXPECT_EQ(router.param_bytes, uint64_t(2 * (64 * 4 + 4)));  // + score-correction biases
  EXPECT_EQ(
      op_named(g, "language_model.encoder.layers.1.mlp.shared_experts.linear_fc1").param_bytes,
      uint64_t(2 * 64 * 64));
}

// Bytes of the forward outputs of `scope`'s ops that some backward op reads (kept alive from
// the forward pass to the backward pass).
uint64_t saved_bytes(const Graph& step, const std::string& scope) {
  uint64_t bytes = 0;
  for (const Op& op : step.ops()) {
    if (op.phase != Phase::kForward || op.scope != scope) continue;
    for (TensorId t : op.outputs) {
      bool read = false;
      for (OpId c : step.consumers(t)) read = read || step.op(c).phase == Phase::kBackward;
      if (read) bytes += step.tensor(t).bytes;
    }
  }
  return bytes;
}

TEST(MoeGraph, RoutedExpertOutputsAreNotKeptForBackward) {
  const Graph step = expand_training_step(tiny_graph(kTinyDeepseek, 8));
  const std::string mlp = "language_model.encoder.layers.1.mlp";
  // As Megatron-core, the probabilities weight the experts' activation, so the combine's
  // backward reads no expert output: fc2's output [16 rows, 64] is read by no backward op.
  const OpId fc2 = step.find_op(mlp + ".experts.linear_fc2");
  ASSERT_NE(fc2, kNoOp);
  for (OpId c : step.consumers(step.op(fc2).outputs[0]))
    EXPECT_NE(step.op(c).phase, Phase::kBackward) << step.op(c).name;
  // Kept, in bf16 (8 tokens, k 2 -> 16 rows): router logits 8x4 (the top-k and aux loss
  // read them), top-k 8x2, the aux loss (a loss: its backward reads it), dispatched rows
  // 16x64 (fc1's input), fc1 output 16x64 (the activation's), activation 16x32 (fc2's);
  // shared expert fc1 output 8x64 and its activation 8x32; the residual sum 8x64 (the next
  // norm's input). The MLP's input belongs to the attention block's scope.
  EXPECT_EQ(saved_bytes(step, mlp), uint64_t(2 * (8 * 4 + 8 * 2 + 1 + 16 * 64 + 16 * 64 + 16 * 32 +
                                                  8 * 64 + 8 * 32 + 8 * 64)));
}

// gpt-oss's expert MLP on one MoE layer: h 64, 4 heads, seq 8, 4 experts of 32, top-2 (16
// routed rows), bf16, biased expert linears and the GLU input clamped at 7.
Graph tiny_gpt_oss_layer(bool bias, double clamp) {
  LlamaOptions o;
  o.layers = 1;
  o.hidden = 64;
  o.heads = 4;
  o.seq_len = 8;
  o.vocab = 100;
  o.moe.experts = 4;
  o.moe.top_k = 2;
  o.moe.expert_ffn = 32;
  o.moe.expert_bias = bias;
  o.moe.glu_clamp = clamp;
  return make_llama(o);
}

TEST(MoeGraph, GptOssExpertBiasAndGluClampByHand) {
  const Graph g = tiny_gpt_oss_layer(true, 7), plain = tiny_gpt_oss_layer(false, 0);
  const std::string p = "language_model.encoder.layers.0.mlp.experts";
  // The clamp: 16 rows x 64 (gate and linear halves) = 1024 elements, 1 FLOP each; forward 4
  // element sizes (two clamps, one concatenation), backward 5 (clamp gradients, the halves'
  // concatenation): 8192 and 10240 bytes.
  const Op& clamp = op_named(g, p + ".glu_clamp");
  EXPECT_EQ(clamp.type, "GluClamp");
  EXPECT_EQ(clamp.flops, 1024.0);
  EXPECT_EQ(clamp.bytes_accessed, 8192u);
  EXPECT_EQ(attr(clamp, kBackwardBytesAttr), "10240");
  EXPECT_EQ(attr(clamp, kMoeRoleAttr), kMoeExpertAct);
  EXPECT_EQ(g.tensor(op_named(g, p + ".swiglu").inputs[0]).producer, g.find_op(p + ".glu_clamp"));
  // fc2's bias: 16 rows x 64 = 1024 elements, a product and a sum (2 FLOPs) each; forward 6
  // element sizes, backward 8: 12288 and 16384 bytes; 4 experts' biases of 64.
  const Op& bias = op_named(g, p + ".linear_fc2_bias");
  EXPECT_EQ(bias.flops, 2048.0);
  EXPECT_EQ(bias.bytes_accessed, 12288u);
  EXPECT_EQ(attr(bias, kBackwardBytesAttr), "16384");
  EXPECT_EQ(attr(bias, kMoeRoleAttr), kMoeExpertDown);
  EXPECT_EQ(bias.param_bytes, uint64_t(2 * 4 * 64));
  // fc1's biases (4 x 64) ride in its GEMM; the graph gains 4 x 64 + 4 x 64 parameters.
  EXPECT_EQ(op_named(g, p + ".linear_fc1").param_bytes, uint64_t(2 * (4 * 64 * 64 + 4 * 64)));
  EXPECT_EQ(graph_params(g) - graph_params(plain), 4 * 64 + 4 * 64);
  EXPECT_EQ(g.find_op(p + ".glu_clamp") == kNoOp, false);
  EXPECT_EQ(plain.find_op(p + ".glu_clamp"), kNoOp);
  EXPECT_EQ(plain.find_op(p + ".linear_fc2_bias"), kNoOp);
  // The backward ops take the stated traffic; the bias keeps no rows for its backward (the
  // probabilities and the bias suffice), the clamp keeps fc1's output (16 x 64 bf16).
  const Graph step = expand_training_step(g);
  EXPECT_EQ(op_named(step, p + ".glu_clamp/grad").bytes_accessed, 10240u);
  EXPECT_EQ(op_named(step, p + ".linear_fc2_bias/grad").bytes_accessed, 16384u);
  const Graph plain_step = expand_training_step(plain);
  const std::string mlp = "language_model.encoder.layers.0.mlp";
  EXPECT_EQ(saved_bytes(step, mlp) - saved_bytes(plain_step, mlp), uint64_t(2 * 16 * 64));
}

TEST(MoeGraph, MalformedBackwardBytesIsANamedError) {
  // The same graph with the clamp's stated backward traffic garbled.
  const Graph bad = testing::with_edited_ops(tiny_gpt_oss_layer(false, 7), [](Op& op) {
    for (auto& [k, v] : op.attrs) {
      if (k == kBackwardBytesAttr) v = "12x";
    }
  });
  try {
    expand_training_step(bad);
    ADD_FAILURE() << "accepted";
  } catch (const ValidationError& e) {
    EXPECT_EQ(std::string(e.what()),
              "op 'language_model.encoder.layers.0.mlp.experts.glu_clamp': attribute "
              "backward_bytes '12x' is not a byte count");
  }
}

// 3 layers of which the last is a multi-token-prediction block: h 64, 4 heads, ffn 128,
// vocab 100 (padded to 128), seq 8, bf16.
Graph tiny_llama(int mtp_layers) {
  LlamaOptions o;
  o.layers = 3;
  o.hidden = 64;
  o.heads = 4;
  o.ffn = 128;
  o.seq_len = 8;
  o.vocab = 100;
  o.mtp_layers = mtp_layers;
  return make_llama(o);
}

TEST(MoeGraph, MultiTokenPredictionBlockByHand) {
  const Graph mtp = tiny_llama(1), plain = tiny_llama(0);
  const std::string p = "language_model.mtp.layers.0";
  // eh_proj: [8, 2 x 64] x [128, 64]; logits from the shared output layer: 8 x 64 x 128.
  EXPECT_EQ(op_named(mtp, p + ".eh_proj").flops, 2.0 * 8 * 128 * 64);
  EXPECT_EQ(op_named(mtp, p + ".eh_proj").param_bytes, uint64_t(2 * 128 * 64));
  EXPECT_EQ(op_named(mtp, p + ".output_layer").flops, 2.0 * 8 * 64 * 128);
  EXPECT_EQ(op_named(mtp, p + ".output_layer").param_bytes, 0u);
  EXPECT_EQ(op_named(mtp, p + ".word_embeddings").param_bytes, 0u);
  // Beyond the plain 3-layer model: eh_proj (2h x h) and the enorm, hnorm and final norm.
  EXPECT_EQ(graph_params(mtp) - graph_params(plain), 2 * 64 * 64 + 3 * 64);
  // The loss reads both logits (and the labels): twice the cross-entropy work.
  const Op& loss = op_named(mtp, "loss");
  EXPECT_EQ(loss.inputs.size(), 3u);
  EXPECT_EQ(loss.flops, 2 * op_named(plain, "loss").flops);
  EXPECT_EQ(loss.flops, kFlopsPerElemLoss * 2 * 8 * 128);
  // Every op of the block is on its layer (2), so a pipeline keeps it on the last stage.
  int block_ops = 0;
  for (const Op& op : mtp.ops()) {
    if (op.name.rfind("language_model.mtp.", 0) != 0) continue;
    ++block_ops;
    EXPECT_EQ(op.layer, 2) << op.name;
  }
  EXPECT_GT(block_ops, 10);
  LlamaOptions bad;
  bad.layers = 2;
  bad.mtp_layers = 2;
  EXPECT_THROW(make_llama(bad), Error);
}

HfModel shipped(const std::string& name) {
  return load_hf_config(std::string(PLACER_SOURCE_DIR) + "/datasets/models/hf/" + name +
                        ".config.json");
}

TEST(MoeGraph, ShippedMoeConfigsBuildGraphsWithTheirParameterCounts) {
  HfGraphOptions o;
  o.seq_len = 16;
  for (const char* name : {"mixtral_8x7b", "qwen1.5_moe_a2.7b", "deepseek_v3"}) {
    const HfModel m = shipped(name);
    const Graph g = make_hf_graph(m, o);
    EXPECT_EQ(graph_params(g), hf_param_counts(m).total) << name;
  }
}

}  // namespace
}  // namespace placer
