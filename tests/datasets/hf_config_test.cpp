// Hugging Face config.json reader (datasets/hf_config.h): parameter counts of the shipped
// examples against their model cards, hand-computed small configs, the dense graphs against
// the formula, and the named errors.
#include "datasets/hf_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "src/util/error.h"

namespace placer {
namespace {

HfModel shipped(const std::string& name) {
  return load_hf_config(std::string(PLACER_SOURCE_DIR) + "/datasets/models/hf/" + name +
                        ".config.json");
}

/// |count - card| <= 0.5% of the model card's figure.
void expect_card(int64_t count, double card) {
  EXPECT_LE(std::abs(double(count) - card), 0.005 * card) << count << " vs " << card;
}

/// The exact total and active counts, and both within 0.5% of the card's figures.
void expect_moe_counts(const HfParamCounts& c, int64_t total, int64_t active, double card_total,
                       double card_active) {
  EXPECT_EQ(c.total, total);
  EXPECT_EQ(c.active, active);
  expect_card(c.total, card_total);
  expect_card(c.active, card_active);
}

/// A graph's parameters in elements (bf16: 2 bytes each).
int64_t graph_params(const Graph& g) { return int64_t(g.total_param_bytes() / 2); }

// A 2-layer GQA model: h 64, f 128, 4 heads of 16, 2 kv heads, vocab 100.
const char* const kTinyLlama = R"({
  "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "vocab_size": 100, "tie_word_embeddings": false, "rope_theta": 10000.0,
  "hidden_act": "silu", "torch_dtype": "bfloat16"})";

std::string tiny_with(const std::string& extra) {
  std::string t = kTinyLlama;
  return t.substr(0, t.rfind('}')) + ", " + extra + "}";
}

TEST(HfConfig, TinyLlamaByHand) {
  const HfModel m = parse_hf_config(kTinyLlama, "tiny.json");
  const HfParamCounts c = hf_param_counts(m);
  // attention 64*(4+2*2)*16 + 4*16*64 = 8192 + 4096; MLP 3*64*128; norms 2*64 per layer.
  EXPECT_EQ(c.attention, 2 * 12288);
  EXPECT_EQ(c.dense_mlp, 2 * 24576);
  EXPECT_EQ(c.norms, 2 * 128 + 64);
  EXPECT_EQ(c.embedding, 6400);
  EXPECT_EQ(c.output_layer, 6400);
  EXPECT_EQ(c.total, 2 * (12288 + 24576 + 128) + 2 * 6400 + 64);  // 86848
  EXPECT_EQ(c.active, c.total);
  EXPECT_EQ(graph_params(make_hf_graph(m, {})), 86848);
  // Tied: the output layer has no parameters of its own.
  const HfModel tied = parse_hf_config(
      std::string(kTinyLlama).replace(std::string(kTinyLlama).find("false"), 5, "true"),
      "tied.json");
  EXPECT_EQ(hf_param_counts(tied).total, 86848 - 6400);
  EXPECT_EQ(graph_params(make_hf_graph(tied, {})), 86848 - 6400);
}

TEST(HfConfig, TinyMixtralByHand) {
  std::string t = tiny_with(R"("num_local_experts": 4, "num_experts_per_tok": 2)");
  t.replace(t.find("\"llama\""), 7, "\"mixtral\"");
  const HfModel m = parse_hf_config(t, "tiny_moe.json");
  ASSERT_TRUE(m.is_moe());
  EXPECT_EQ(m.moe_layers(), 2);
  const HfParamCounts c = hf_param_counts(m);
  // Per layer: attention 12288, router 64*4, 4 experts of 3*64*128 = 24576, norms 128.
  EXPECT_EQ(c.routers, 2 * 256);
  EXPECT_EQ(c.routed_experts, 2 * 4 * 24576);
  EXPECT_EQ(c.total, 2 * (12288 + 256 + 98304 + 128) + 12800 + 64);   // 234816
  EXPECT_EQ(c.active, 2 * (12288 + 256 + 49152 + 128) + 12800 + 64);  // 136512
  EXPECT_EQ(c.active_without_embedding, c.active - 6400);
  EXPECT_EQ(graph_params(make_hf_graph(m, {})), c.total);
}

TEST(HfConfig, Llama3And8BMatchesTheCard) {
  const HfModel m = shipped("llama3_8b");
  EXPECT_EQ(m.rope_theta, 500000.0);
  EXPECT_EQ(m.kv_heads, 8);
  const HfParamCounts c = hf_param_counts(m);
  // 2*128256*4096 + 32*(4096*6144 + 4096^2 + 3*4096*14336 + 2*4096) + 4096.
  EXPECT_EQ(c.total, 8030261248);
  expect_card(c.total, 8.03e9);
  HfGraphOptions o;
  o.seq_len = 128;
  EXPECT_EQ(graph_params(make_hf_graph(m, o)), c.total);
}

TEST(HfConfig, Mistral7BMatchesTheCard) {
  const HfModel m = shipped("mistral_7b_v0.1");
  EXPECT_EQ(m.sliding_window, 4096);
  {
    // The graph's (flash) attention keeps the window: at seq 8192 each query sees at most
    // 4096 keys.
    HfGraphOptions w;
    w.seq_len = 8192;
    const HfModel one = [&] {
      HfModel x = m;
      x.layers = 1;
      return x;
    }();
    EXPECT_EQ(make_hf_graph(one, w).attr("sliding_window", ""), "4096");
  }
  const HfParamCounts c = hf_param_counts(m);
  EXPECT_EQ(c.total, 7241732096);  // Llama-3-8B's layers with a 32000 vocabulary
  expect_card(c.total, 7.24e9);
  HfGraphOptions o;
  o.seq_len = 128;
  const Graph g = make_hf_graph(m, o);
  EXPECT_EQ(g.name(), "mistral_7b_v0.1");
  EXPECT_EQ(graph_params(g), c.total);
}

TEST(HfConfig, Qwen2BiasesAreInTheGraph) {
  const HfModel m = shipped("qwen2_7b");
  EXPECT_TRUE(m.qkv_bias);
  EXPECT_EQ(m.sliding_window, 0);  // use_sliding_window is false
  const HfParamCounts c = hf_param_counts(m);
  // 28 layers of 3584*(28+8)*128 + 4608 bias + 3584^2 + 3*3584*18944 + 2*3584, vocab 152064.
  EXPECT_EQ(c.total, 7615616512);
  HfGraphOptions o;
  o.seq_len = 64;
  EXPECT_EQ(graph_params(make_hf_graph(m, o)), c.total);
}

TEST(HfConfig, Mixtral8x7BMatchesTheCard) {
  expect_moe_counts(hf_param_counts(shipped("mixtral_8x7b")), 46702792704, 12879925248, 46.7e9,
                    12.9e9);
}

TEST(HfConfig, Qwen15MoeMatchesTheCard) {
  const HfModel m = shipped("qwen1.5_moe_a2.7b");
  EXPECT_EQ(m.moe_layers(), 24);
  const HfParamCounts c = hf_param_counts(m);
  // Shared expert 3*2048*5632 and its gate 2048 per layer; 4 of 60 experts of 3*2048*1408.
  EXPECT_EQ(c.shared_experts, 24 * (34603008 + 2048));
  expect_moe_counts(c, 14315784192, 2689173504, 14.3e9, 2.7e9);
}

TEST(HfConfig, DeepSeekV3MatchesTheCard) {
  const HfModel m = shipped("deepseek_v3");
  EXPECT_TRUE(m.mla);
  EXPECT_EQ(m.moe_layers(), 58);  // first_k_dense_replace 3 of 61
  EXPECT_EQ(m.mtp_layers, 1);
  EXPECT_EQ(m.rope_scaling, "yarn");
  EXPECT_EQ(m.rope_scaling_factor, 40);
  const HfParamCounts c = hf_param_counts(m);
  // MLA per layer: 7168*1536 + 1536*128*192 + 7168*576 + 512*128*256 + 128*128*7168.
  EXPECT_EQ(c.attention, 61 * int64_t(187105280));
  EXPECT_EQ(c.total, 671026419200);
  EXPECT_EQ(c.active, 37552297472);
  expect_card(c.total, 671e9);
  // DeepSeek's 36.6 B activated leaves the input embedding out (announced as "37B").
  expect_card(c.active_without_embedding, 36.6e9);
  EXPECT_TRUE(c.active >= 37e9 && c.active < 38e9);
}

/// The message of the FormatError that parsing `text` throws ("" when none).
std::string parse_error(const std::string& text) {
  try {
    parse_hf_config(text, "m.json");
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

TEST(HfConfig, NamedErrors) {
  std::string gpt2 = kTinyLlama;
  gpt2.replace(gpt2.find("\"llama\""), 7, "\"gpt2\"");
  EXPECT_NE(parse_error(gpt2).find("m.json: model_type: unknown model type 'gpt2'"),
            std::string::npos)
      << parse_error(gpt2);
  const std::string unknown = parse_error(tiny_with(R"("parallel_residual": true)"));
  EXPECT_NE(unknown.find("m.json: parallel_residual: unknown key"), std::string::npos) << unknown;
  EXPECT_NE(parse_error(tiny_with(R"("attention_bias": true)")).find("attention_bias"),
            std::string::npos);
  EXPECT_NE(parse_error(tiny_with(R"("hidden_act": "gelu")")).find("hidden_act"),
            std::string::npos);
  std::string missing = kTinyLlama;
  missing.replace(missing.find("\"vocab_size\": 100,"), 18, "");
  EXPECT_NE(parse_error(missing).find("vocab_size: missing"), std::string::npos);
  std::string fraction = kTinyLlama;
  fraction.replace(fraction.find("64"), 2, "64.5");
  EXPECT_NE(parse_error(fraction).find("hidden_size"), std::string::npos);
  EXPECT_NE(parse_error("[1, 2]").find("m.json"), std::string::npos);
  EXPECT_NE(parse_error("{\"model_type\": ").find("malformed JSON"), std::string::npos);
}

TEST(HfConfig, OverflowingCountsNameTheFile) {
  std::string big = kTinyLlama;
  big.replace(big.find("\"intermediate_size\": 128"), 24, "\"intermediate_size\": 1099511627776");
  big.replace(big.find("\"hidden_size\": 64"), 17, "\"hidden_size\": 1099511627776");
  try {
    hf_param_counts(parse_hf_config(big, "big.json"));
    FAIL() << "no overflow";
  } catch (const ValidationError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("big.json: parameter count: ", 0), 0u) << e.what();
  }
}

TEST(HfConfig, HeadDimOtherThanHiddenOverHeads) {
  const HfModel m = parse_hf_config(tiny_with(R"("head_dim": 32)"), "wide_heads.json");
  EXPECT_EQ(hf_param_counts(m).attention, 2 * (64 * 8 * 32 + 4 * 32 * 64));
  const Graph g = make_hf_graph(m, {});
  EXPECT_EQ(graph_params(g), hf_param_counts(m).total);
  // q, k, v of 4 + 2 + 2 heads of 32; the context is 4 heads of 32 = 128 wide.
  const Op& qkv = g.op(g.find_op("language_model.encoder.layers.0.self_attention.query_key_value"));
  EXPECT_EQ(g.tensor(qkv.outputs[0]).shape.back(), 256);
  const Op& dense = g.op(g.find_op("language_model.encoder.layers.0.self_attention.dense"));
  EXPECT_EQ(g.tensor(dense.inputs[0]).shape.back(), 128);
  // head_dim equal to hidden / heads is accepted.
  EXPECT_NO_THROW(make_hf_graph(parse_hf_config(tiny_with(R"("head_dim": 16)"), "m.json"), {}));
}

TEST(HfConfig, HubFolderNamesTheGraph) {
  const Graph g = make_hf_graph(parse_hf_config(kTinyLlama, "models/Tiny-Llama/config.json"), {});
  EXPECT_EQ(g.name(), "Tiny-Llama");
}

}  // namespace
}  // namespace placer
