// Fused attention in the GPT / LLaMA generators: FLOPs, bytes, the backward of the training
// step, saved activations against the unfused core, and the graph attributes in graph JSON.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "datasets/gpt.h"
#include "decoder_fixtures.h"
#include "src/graph/training_step.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"

namespace placer {
namespace {

const std::string kCore = "language_model.encoder.layers.0.self_attention.core_attention";

using testing::op_named;

// testing::small_llama_options() (h 64, a 4, kv 2, s 16, b 2, bf16) with `attention`.
LlamaOptions small_llama(AttentionImpl attention) {
  LlamaOptions o = testing::small_llama_options();
  o.attention = attention;
  return o;
}

const Op& op(const Graph& g, const std::string& name) { return op_named(g, name); }

TEST(FlashAttention, FlopsHandComputed) {
  AttentionShape a;
  a.batch = 2, a.seq = 16, a.heads = 4, a.kv_heads = 2, a.head_dim = 16;
  a.causal = false;
  // 4 b heads d_head s^2 = 4 * 2 * 4 * 16 * 256 (= 4 b s^2 h with h = 64).
  EXPECT_DOUBLE_EQ(attention_pairs(a), 256);
  EXPECT_DOUBLE_EQ(flash_attention_flops(a), 131072);
  a.causal = true;  // s (s + 1) / 2 = 136 pairs per head
  EXPECT_DOUBLE_EQ(attention_pairs(a), 136);
  EXPECT_DOUBLE_EQ(flash_attention_flops(a), 4.0 * 2 * 4 * 16 * 136);
  a.window = 4;  // queries 0..3 see 1..4 keys (10 pairs), the other 12 see 4 (48)
  EXPECT_DOUBLE_EQ(attention_pairs(a), 58);
  EXPECT_DOUBLE_EQ(flash_attention_flops(a), 29696);
  a.window = 16;  // a window as long as the sequence changes nothing
  EXPECT_DOUBLE_EQ(attention_pairs(a), 136);
  // GQA changes the bytes, not the FLOPs.
  a.window = 0;
  AttentionShape mha = a;
  mha.kv_heads = 4;
  EXPECT_DOUBLE_EQ(flash_attention_flops(mha), flash_attention_flops(a));
}

TEST(FlashAttention, BytesAreLinearInTheSequence) {
  AttentionShape a;
  a.batch = 2, a.seq = 16, a.heads = 4, a.kv_heads = 2, a.head_dim = 16;
  // q, k, v: 2 * 16 * (4 + 2 * 2) * 16 * 2 B = 8192; output 2 * 16 * 64 * 2 = 4096;
  // logsumexp 2 * 4 * 16 * 4 B = 512.
  EXPECT_EQ(flash_attention_bytes(a, 2), 12800u);
  AttentionShape mha = a;
  mha.kv_heads = 4;  // k and v of 4 heads: 2 * 16 * 12 * 16 * 2 = 12288
  EXPECT_EQ(flash_attention_bytes(mha, 2), 12288u + 4096 + 512);
  AttentionShape twice = a;
  twice.seq = 32;  // O(b s h): doubling s doubles the traffic (the FLOPs grow 4x)
  EXPECT_EQ(flash_attention_bytes(twice, 2), 2 * 12800u);
}

TEST(FlashAttention, OneOpReplacesTheCore) {
  const Graph g = make_llama(small_llama(AttentionImpl::kFlash));
  EXPECT_EQ(g.attr("attention"), "flash");
  for (const char* gone : {".scores", ".scale_mask_softmax", ".context"}) {
    EXPECT_EQ(g.find_op(kCore + gone), kNoOp) << gone;
  }
  const Op& f = op(g, kCore + ".flash_attention");
  EXPECT_EQ(f.type, "FlashAttention");
  EXPECT_EQ(f.category, OpCategory::kAttention);
  EXPECT_EQ(f.scope, kCore);
  EXPECT_DOUBLE_EQ(f.flops, 4.0 * 2 * 4 * 16 * 136);  // causal
  EXPECT_EQ(f.bytes_accessed, 12800u);
  // Its head dim (h 64 / 4 heads) for the cost model's score count; values as wide.
  EXPECT_EQ(f.attrs, (std::vector<std::pair<std::string, std::string>>{
                         {"causal", "1"}, {"heads", "4"}, {"kv_heads", "2"}, {"head_dim", "16"}}));
  // Reads the rotated q, k and the fused QKV output (for v).
  ASSERT_EQ(f.inputs.size(), 2u);
  EXPECT_EQ(g.tensor(f.inputs[0]).producer,
            g.find_op("language_model.encoder.layers.0.self_attention.rotary"));
  EXPECT_EQ(g.tensor(f.inputs[1]).producer,
            g.find_op("language_model.encoder.layers.0.self_attention.query_key_value"));
  ASSERT_EQ(f.outputs.size(), 2u);
  EXPECT_EQ(g.tensor(f.outputs[0]).shape, (std::vector<int64_t>{2, 16, 64}));
  const Tensor& lse = g.tensor(f.outputs[1]);
  EXPECT_EQ(lse.dtype, DType::kF32);
  EXPECT_EQ(lse.bytes, 512u);
  // The context feeds the output projection as before.
  EXPECT_EQ(
      g.tensor(op(g, "language_model.encoder.layers.0.self_attention.dense").inputs[0]).producer,
      g.find_op(kCore + ".flash_attention"));
  // The rest of the model is the unfused graph's.
  const Graph u = make_llama(small_llama(AttentionImpl::kUnfused));
  EXPECT_EQ(u.attr("attention"), "unfused");
  EXPECT_EQ(g.total_param_bytes(), u.total_param_bytes());
  double unfused_core = 0;
  for (const char* name : {".scores", ".scale_mask_softmax", ".context"}) {
    unfused_core += op(u, kCore + name).flops;
  }
  EXPECT_DOUBLE_EQ(g.total_flops() - u.total_flops(), 2 * (f.flops - unfused_core));
}

TEST(FlashAttention, BackwardIsTwoAndAHalfForwardsReadingTheLogsumexp) {
  const Graph s = expand_training_step(make_llama(small_llama(AttentionImpl::kFlash)));
  const Op& f = op(s, kCore + ".flash_attention");
  const Op& b = op(s, kCore + ".flash_attention/grad");
  EXPECT_EQ(b.type, "FlashAttentionGrad");
  EXPECT_EQ(b.category, OpCategory::kAttention);
  EXPECT_DOUBLE_EQ(b.flops, 2.5 * 69632);
  // 2 F + L: reads q, k, v, o, do, L; writes dq, dk, dv; writes and reads D (L's size).
  EXPECT_EQ(b.bytes_accessed, 2 * 12800u + 512);
  // Saved: both inputs and both outputs (the logsumexp included).
  const std::set<TensorId> in(b.inputs.begin(), b.inputs.end());
  for (TensorId t : f.inputs) EXPECT_EQ(in.count(t), 1u) << s.tensor(t).name;
  for (TensorId t : f.outputs) EXPECT_EQ(in.count(t), 1u) << s.tensor(t).name;
  // Gradients of the rotated q, k and of the QKV output (v), nothing for the logsumexp.
  ASSERT_EQ(b.outputs.size(), 2u);
  EXPECT_EQ(s.tensor(b.outputs[0]).bytes, s.tensor(f.inputs[0]).bytes);
  EXPECT_EQ(s.tensor(b.outputs[1]).bytes, s.tensor(f.inputs[1]).bytes);
  EXPECT_EQ(s.attr("attention"), "flash");  // the expansion keeps the graph attributes
}

// Bytes of the forward tensors that some backward op reads (kept alive from the forward
// pass to the backward pass: the activation memory of a training step).
uint64_t saved_bytes(const Graph& step) {
  std::set<TensorId> saved;
  for (const Op& o : step.ops()) {
    if (o.phase != Phase::kBackward) continue;
    for (TensorId t : o.inputs) {
      const OpId p = step.tensor(t).producer;
      if (p != kNoOp && step.op(p).phase == Phase::kForward) saved.insert(t);
    }
  }
  uint64_t bytes = 0;
  for (TensorId t : saved) bytes += step.tensor(t).bytes;
  return bytes;
}

TEST(FlashAttention, SavesTheLogsumexpNotTheProbabilities) {
  const Graph flash = expand_training_step(make_llama(small_llama(AttentionImpl::kFlash)));
  const Graph unfused = expand_training_step(make_llama(small_llama(AttentionImpl::kUnfused)));
  // Both keep q, k (rotated), the QKV output and the context. Per layer the unfused core also
  // keeps the softmax output (b a s^2 bf16 = 2 * 4 * 256 * 2 = 4096 B), flash the logsumexp
  // (b a s fp32 = 512 B).
  EXPECT_EQ(saved_bytes(unfused) - saved_bytes(flash), 2 * (4096u - 512u));
}

TEST(FlashAttention, GptOptionsSlidingWindowAndErrors) {
  GptOptions o;
  EXPECT_EQ(o.attention, AttentionImpl::kUnfused);
  const LlamaOptions small = testing::small_llama_options();  // the same sizes, MHA
  o.layers = 1, o.hidden = small.hidden, o.heads = small.heads, o.seq_len = small.seq_len;
  o.batch = small.batch, o.vocab = small.vocab;  // GPT's default: Megatron-LM 2021
  EXPECT_EQ(LlamaOptions().attention, AttentionImpl::kFlash);
  o.attention = AttentionImpl::kFlash;
  o.sliding_window = 4;
  const Graph g = make_gpt(o);
  EXPECT_EQ(g.attr("sliding_window"), "4");
  const Op& f = op(g, kCore + ".flash_attention");
  ASSERT_EQ(f.inputs.size(), 1u);  // GPT: q, k and v from the QKV output (no rotary)
  // f16, MHA: q, k, v 2 * 16 * 192 * 2 = 12288, output 4096, logsumexp 512.
  EXPECT_EQ(f.bytes_accessed, 12288u + 4096 + 512);
  EXPECT_DOUBLE_EQ(f.flops, 29696);  // the 58 pairs per head of a 4-key window
  // Dropout on the probabilities happens inside the kernel: no op for it.
  EXPECT_EQ(g.find_op(kCore + ".attention_dropout"), kNoOp);

  o.attention = AttentionImpl::kUnfused;
  try {
    make_gpt(o);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpt: sliding_window needs attention = flash"),
              std::string::npos)
        << e.what();
  }
  o.sliding_window = -1;
  EXPECT_THROW(make_gpt(o), Error);
  AttentionImpl a;
  EXPECT_TRUE(parse_attention_impl("flash", &a));
  EXPECT_EQ(a, AttentionImpl::kFlash);
  EXPECT_TRUE(parse_attention_impl("unfused", &a));
  EXPECT_EQ(a, AttentionImpl::kUnfused);
  EXPECT_FALSE(parse_attention_impl("sdpa", &a));
}

TEST(FlashAttention, GraphJsonRoundTrip) {
  LlamaOptions o = small_llama(AttentionImpl::kFlash);
  o.sliding_window = 8;
  const Graph g = expand_training_step(make_llama(o));
  const std::string text = graph_to_json(g);
  EXPECT_NE(text.find("\"format_version\": \"1.1\""), std::string::npos);
  EXPECT_NE(text.find("\"attrs\": {\"attention\":\"flash\",\"sliding_window\":\"8\","
                      "\"kernels\":\"megatron-2021\"}"),
            std::string::npos);
  const Graph r = parse_graph_json(text, "r.graph.json");
  EXPECT_EQ(r.attrs(), g.attrs());
  const Op& f = op(r, kCore + ".flash_attention");
  EXPECT_EQ(f.category, OpCategory::kAttention);
  EXPECT_EQ(f.bytes_accessed, op(g, kCore + ".flash_attention").bytes_accessed);
  EXPECT_EQ(op(r, kCore + ".flash_attention/grad").category, OpCategory::kAttention);
  EXPECT_EQ(graph_to_json(r), text);
}

}  // namespace
}  // namespace placer
