#include "datasets/gpt.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "datasets/synthetic.h"
#include "decoder_fixtures.h"
#include "src/graph/training_step.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"

namespace placer {
namespace {

// h = 64, a = 4 (d_head 16), 2 layers, s = 16, b = 2, vocab 1000 -> padded 1024.
GptOptions small_gpt() {
  GptOptions o;
  o.layers = 2;
  o.hidden = 64;
  o.heads = 4;
  o.seq_len = 16;
  o.batch = 2;
  o.vocab = 1000;
  return o;
}
LlamaOptions small_llama() {
  LlamaOptions o = testing::small_llama_options();
  o.attention = AttentionImpl::kUnfused;  // the op contract's core (flash: attention_test.cpp)
  return o;
}

const std::string P0 = "language_model.encoder.layers.0";

std::vector<std::string> layer_ops(const Graph& g, int layer) {
  std::vector<std::string> v;
  for (const Op& o : g.ops()) {
    if (o.layer == layer) v.push_back(o.name);
  }
  return v;
}
const Op& op(const Graph& g, const std::string& name) {
  const OpId id = g.find_op(name);
  if (id == kNoOp) throw std::runtime_error("no op " + name);
  return g.op(id);
}
const Tensor& out(const Graph& g, const std::string& name) {
  return g.tensor(op(g, name).outputs.at(0));
}
double matmul_flops(const Graph& g, int layer) {
  double f = 0;
  for (const Op& o : g.ops()) {
    if (o.layer == layer && o.type == "MatMul") f += o.flops;
  }
  return f;
}
std::string error_of(const GptOptions& o) {
  try {
    make_gpt(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
std::string error_of(const LlamaOptions& o) {
  try {
    make_llama(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PaddedVocab, Megatron) {
  EXPECT_EQ(padded_vocab(50257, 128, 1), 50304);
  EXPECT_EQ(padded_vocab(50257, 128, 2), 50432);  // a multiple of 256
  EXPECT_EQ(padded_vocab(50257, 128, 8), 51200);  // a multiple of 1024
  EXPECT_EQ(padded_vocab(32000, 128, 1), 32000);  // already a multiple
  EXPECT_EQ(padded_vocab(1, 1, 1), 1);
  EXPECT_THROW(padded_vocab(0, 128, 1), Error);
  EXPECT_THROW(padded_vocab(100, 128, 0), Error);
}

TEST(LlamaFfn, PublishedSizes) {
  EXPECT_EQ(llama_ffn(4096), 11008);  // LLaMA-7B
  EXPECT_EQ(llama_ffn(5120), 13824);  // LLaMA-13B
  EXPECT_EQ(llama_ffn(8192), 22016);  // LLaMA-65B
  EXPECT_EQ(llama_ffn(64), 256);      // floor(512 / 3) = 170 -> 256
}

TEST(Gpt, ParameterCountIsMegatronsFormula) {
  const GptOptions o = small_gpt();
  const Graph g = make_gpt(o);
  // 12 l h^2 + 13 l h + V h + s h + 2 h with l = 2, h = 64, V = 1024, s = 16:
  // 98304 + 1664 + 65536 + 1024 + 128.
  const uint64_t params = 12 * 2 * 64 * 64 + 13 * 2 * 64 + 1024 * 64 + 16 * 64 + 2 * 64;
  EXPECT_EQ(params, 166656u);
  EXPECT_EQ(g.total_param_bytes(), 2 * params);  // fp16
  EXPECT_EQ(g.name(), "gpt");
  EXPECT_EQ(g.batch_size(), 2);
  // Per layer 12 h^2 + 13 h.
  uint64_t layer0 = 0;
  for (const Op& x : g.ops()) layer0 += x.layer == 0 ? x.param_bytes : 0;
  EXPECT_EQ(layer0, 2u * (12 * 64 * 64 + 13 * 64));
}

TEST(Gpt, LayerMatMulFlops) {
  const Graph g = make_gpt(small_gpt());
  // 24 b s h^2 + 4 b s^2 h = 24*2*16*4096 + 4*2*256*64 = 3145728 + 131072.
  for (int layer : {0, 1}) EXPECT_DOUBLE_EQ(matmul_flops(g, layer), 3276800.0) << layer;
  EXPECT_DOUBLE_EQ(op(g, P0 + ".self_attention.query_key_value").flops, 2.0 * 2 * 16 * 64 * 192);
  EXPECT_DOUBLE_EQ(op(g, P0 + ".self_attention.core_attention.scores").flops,
                   2.0 * 2 * 4 * 16 * 16 * 16);
  // Head: 2 b s h V, loss 5 per logit; embeddings are pure memory.
  EXPECT_DOUBLE_EQ(op(g, "output_layer").flops, 2.0 * 2 * 16 * 64 * 1024);
  EXPECT_DOUBLE_EQ(op(g, "loss").flops, kFlopsPerElemLoss * 2 * 16 * 1024);
  EXPECT_EQ(op(g, "language_model.embedding.word_embeddings").flops, 0);
  EXPECT_EQ(op(g, "language_model.embedding.word_embeddings").bytes_accessed,
            2u * 16 * 8 + 2 * (2u * 16 * 64 * 2));  // ids + rows read + output written
}

TEST(Gpt, LayerOpNamesTypesScopes) {
  const Graph g = make_gpt(small_gpt());
  const std::string A = P0 + ".self_attention", C = A + ".core_attention", M = P0 + ".mlp";
  struct Want {
    std::string name, type, scope;
  };
  const std::vector<Want> want = {
      {P0 + ".input_layernorm", "LayerNormalization", P0},
      {A + ".query_key_value", "MatMul", A},
      {C + ".scores", "MatMul", C},
      {C + ".scale_mask_softmax", "Softmax", C},
      {C + ".attention_dropout", "Dropout", C},
      {C + ".context", "MatMul", C},
      {A + ".dense", "MatMul", A},
      {A + ".bias_dropout_add", "Add", A},
      {P0 + ".post_attention_layernorm", "LayerNormalization", P0},
      {M + ".dense_h_to_4h", "MatMul", M},
      {M + ".bias_gelu", "Gelu", M},
      {M + ".dense_4h_to_h", "MatMul", M},
      {M + ".bias_dropout_add", "Add", M},
  };
  std::vector<std::string> names;
  for (const Want& w : want) names.push_back(w.name);
  EXPECT_EQ(layer_ops(g, 0), names);
  for (const Want& w : want) {
    const Op& o = op(g, w.name);
    EXPECT_EQ(o.type, w.type) << w.name;
    EXPECT_EQ(o.scope, w.scope) << w.name;
    EXPECT_EQ(o.layer, 0) << w.name;
  }
  // Layer 1 is the same with ".1.".
  EXPECT_EQ(layer_ops(g, 1).front(), "language_model.encoder.layers.1.input_layernorm");
  EXPECT_EQ(layer_ops(g, 1).size(), names.size());

  // Embedding, head and loss (layer -1), in order.
  const std::vector<std::string> rest = {"language_model.embedding.word_embeddings",
                                         "language_model.embedding.position_embeddings",
                                         "language_model.embedding.add",
                                         "language_model.embedding.embedding_dropout",
                                         "language_model.encoder.final_layernorm",
                                         "output_layer",
                                         "loss"};
  EXPECT_EQ(layer_ops(g, -1), rest);
  EXPECT_EQ(op(g, rest[0]).type, "Gather");
  EXPECT_EQ(op(g, rest[0]).category, OpCategory::kEmbedding);
  EXPECT_EQ(op(g, rest[0]).scope, "language_model.embedding");
  EXPECT_EQ(op(g, rest[1]).type, "Gather");
  EXPECT_EQ(op(g, rest[2]).type, "Add");
  EXPECT_EQ(op(g, rest[3]).type, "Dropout");
  EXPECT_EQ(op(g, rest[4]).scope, "language_model.encoder");
  EXPECT_EQ(g.num_ops(), 2 * names.size() + rest.size());
}

TEST(Gpt, ShapesDataflowAndTiedHead) {
  const Graph g = make_gpt(small_gpt());
  using S = std::vector<int64_t>;
  EXPECT_EQ(out(g, "language_model.embedding.word_embeddings").shape, (S{2, 16, 64}));
  EXPECT_EQ(out(g, P0 + ".self_attention.query_key_value").shape, (S{2, 16, 192}));
  EXPECT_EQ(out(g, P0 + ".self_attention.core_attention.scores").shape, (S{2, 4, 16, 16}));
  EXPECT_EQ(out(g, P0 + ".self_attention.core_attention.attention_dropout").shape,
            (S{2, 4, 16, 16}));
  EXPECT_EQ(out(g, P0 + ".self_attention.core_attention.context").shape, (S{2, 16, 64}));
  EXPECT_EQ(out(g, P0 + ".mlp.dense_h_to_4h").shape, (S{2, 16, 256}));
  EXPECT_EQ(out(g, P0 + ".mlp.bias_gelu").shape, (S{2, 16, 256}));
  EXPECT_EQ(out(g, "output_layer").shape, (S{2, 16, 1024}));
  EXPECT_EQ(out(g, "output_layer").bytes, 2u * 16 * 1024 * 2);

  // Residual adds read the layer input / the attention residual.
  auto reads = [&](const std::string& o, const std::string& producer) {
    for (TensorId t : op(g, o).inputs) {
      if (t == op(g, producer).outputs[0]) return true;
    }
    return false;
  };
  const std::string A = P0 + ".self_attention";
  EXPECT_TRUE(reads(A + ".bias_dropout_add", "language_model.embedding.embedding_dropout"));
  EXPECT_TRUE(reads(A + ".bias_dropout_add", A + ".dense"));
  EXPECT_TRUE(reads(P0 + ".mlp.bias_dropout_add", A + ".bias_dropout_add"));
  EXPECT_TRUE(reads(P0 + ".mlp.bias_dropout_add", P0 + ".mlp.dense_4h_to_h"));
  EXPECT_TRUE(reads(A + ".core_attention.context", A + ".core_attention.attention_dropout"));
  EXPECT_TRUE(reads(A + ".core_attention.context", A + ".query_key_value"));
  EXPECT_TRUE(
      reads("language_model.encoder.layers.1.input_layernorm", P0 + ".mlp.bias_dropout_add"));

  const Op& head = op(g, "output_layer");
  EXPECT_EQ(head.param_bytes, 0u);
  ASSERT_EQ(head.attrs.size(), 1u);
  EXPECT_EQ(head.attrs[0].first, "tied_to");
  EXPECT_EQ(head.attrs[0].second, "language_model.embedding.word_embeddings");
}

TEST(Gpt, OptionsVariants) {
  GptOptions o = small_gpt();
  o.tied_embeddings = false;
  o.position_embeddings = false;
  o.dropout = 0;
  o.tp = 4;        // pad to a multiple of 128 * 4 = 512
  o.vocab = 1025;  // -> 1536
  o.ffn = 128;
  o.dtype = DType::kF32;
  o.name = "g";
  const Graph g = make_gpt(o);
  EXPECT_EQ(g.name(), "g");
  EXPECT_EQ(op(g, "output_layer").param_bytes, 64u * 1536 * 4);
  EXPECT_TRUE(op(g, "output_layer").attrs.empty());
  EXPECT_EQ(g.find_op("language_model.embedding.position_embeddings"), kNoOp);
  EXPECT_EQ(g.find_op("language_model.embedding.add"), kNoOp);
  EXPECT_EQ(g.find_op("language_model.embedding.embedding_dropout"), kNoOp);
  EXPECT_EQ(g.find_op(P0 + ".self_attention.core_attention.attention_dropout"), kNoOp);
  EXPECT_EQ(layer_ops(g, 0).size(), 12u);
  // Params: l (4 h^2 + 2 h f + 9 h + f) + 2 V h + 2 h (no positions, untied).
  const uint64_t params = 2 * (4 * 64 * 64 + 2 * 64 * 128 + 9 * 64 + 128) + 2 * 1536 * 64 + 2 * 64;
  EXPECT_EQ(g.total_param_bytes(), 4 * params);
}

TEST(Llama, GqaWidthsAndOpNames) {
  const Graph g = make_llama(small_llama());
  using S = std::vector<int64_t>;
  const std::string A = P0 + ".self_attention", C = A + ".core_attention", M = P0 + ".mlp";
  // (a + 2 kv) d_head = (4 + 2*2) * 16 = 128; rotary on q and k: (4 + 2) * 16 = 96.
  EXPECT_EQ(out(g, A + ".query_key_value").shape, (S{2, 16, 128}));
  EXPECT_EQ(op(g, A + ".query_key_value").param_bytes, 64u * 128 * 2);  // no bias, bf16
  EXPECT_EQ(out(g, A + ".rotary").shape, (S{2, 16, 96}));
  EXPECT_EQ(out(g, C + ".scores").shape, (S{2, 4, 16, 16}));  // query heads
  // ffn = 256: gate and up fused.
  EXPECT_EQ(out(g, M + ".dense_h_to_4h").shape, (S{2, 16, 512}));
  EXPECT_EQ(out(g, M + ".swiglu").shape, (S{2, 16, 256}));
  EXPECT_EQ(g.tensor(op(g, A + ".query_key_value").outputs[0]).dtype, DType::kBF16);

  const std::vector<std::string> names = {P0 + ".input_layernorm",
                                          A + ".query_key_value",
                                          A + ".rotary",
                                          C + ".scores",
                                          C + ".scale_mask_softmax",
                                          C + ".context",
                                          A + ".dense",
                                          A + ".bias_dropout_add",
                                          P0 + ".post_attention_layernorm",
                                          M + ".dense_h_to_4h",
                                          M + ".swiglu",
                                          M + ".dense_4h_to_h",
                                          M + ".bias_dropout_add"};
  EXPECT_EQ(layer_ops(g, 0), names);
  EXPECT_EQ(layer_ops(g, -1), (std::vector<std::string>{"language_model.embedding.word_embeddings",
                                                        "language_model.encoder.final_layernorm",
                                                        "output_layer", "loss"}));
  EXPECT_EQ(op(g, P0 + ".input_layernorm").type, "RMSNormalization");
  EXPECT_EQ(op(g, P0 + ".input_layernorm").category, OpCategory::kNormalization);
  EXPECT_EQ(op(g, P0 + ".input_layernorm").param_bytes, 64u * 2);
  EXPECT_EQ(op(g, A + ".rotary").type, "RotaryEmbedding");
  EXPECT_EQ(op(g, A + ".rotary").category, OpCategory::kElementwise);
  EXPECT_EQ(op(g, M + ".swiglu").type, "Swiglu");
  EXPECT_EQ(op(g, M + ".swiglu").category, OpCategory::kElementwise);
  EXPECT_EQ(op(g, A + ".dense").param_bytes, 64u * 64 * 2);

  // Params: l (2h + h (a + 2kv) d_head + h^2 + 3 h f) + V h + h + h V.
  const uint64_t params =
      2 * (2 * 64 + 64 * 128 + 64 * 64 + 3 * 64 * 256) + 1024 * 64 + 64 + 64 * 1024;
  EXPECT_EQ(params, 254272u);
  EXPECT_EQ(g.total_param_bytes(), 2 * params);
  // MatMul FLOPs of a layer: 2 b s h (128 + 64 + 512) + 2 b s f h + 4 b s^2 h.
  EXPECT_DOUBLE_EQ(matmul_flops(g, 0), 2.0 * 2 * 16 * 64 * (128 + 64 + 512) +
                                           2.0 * 2 * 16 * 256 * 64 + 4.0 * 2 * 16 * 16 * 64);
}

TEST(Llama, DefaultsAndMha) {
  LlamaOptions o = small_llama();
  o.kv_heads = 0;  // = heads
  o.tied_embeddings = true;
  o.dropout = 0.1;
  const Graph g = make_llama(o);
  EXPECT_EQ(out(g, P0 + ".self_attention.query_key_value").shape,
            (std::vector<int64_t>{2, 16, 192}));
  EXPECT_EQ(op(g, "output_layer").param_bytes, 0u);
  EXPECT_NE(g.find_op("language_model.embedding.embedding_dropout"), kNoOp);
  EXPECT_NE(g.find_op(P0 + ".self_attention.core_attention.attention_dropout"), kNoOp);
  const LlamaOptions d;
  EXPECT_EQ(d.dtype, DType::kBF16);
  EXPECT_EQ(d.dropout, 0);
  EXPECT_FALSE(d.tied_embeddings);
}

TEST(Gpt, Errors) {
  GptOptions o = small_gpt();
  o.heads = 5;
  const std::string e = error_of(o);
  EXPECT_NE(e.find("gpt: heads (5) must divide hidden (64)"), std::string::npos) << e;
  for (auto set : std::vector<void (*)(GptOptions&)>{
           [](GptOptions& x) { x.layers = 0; }, [](GptOptions& x) { x.hidden = -1; },
           [](GptOptions& x) { x.seq_len = 0; }, [](GptOptions& x) { x.batch = 0; },
           [](GptOptions& x) { x.vocab = 0; }, [](GptOptions& x) { x.tp = 0; },
           [](GptOptions& x) { x.pad_vocab_multiple = 0; }, [](GptOptions& x) { x.ffn = -1; },
           [](GptOptions& x) { x.dropout = 1; }}) {
    GptOptions bad = small_gpt();
    set(bad);
    EXPECT_THROW(make_gpt(bad), Error);
  }
  GptOptions i = small_gpt();
  i.dtype = DType::kI64;
  EXPECT_NE(error_of(i).find("gpt: dtype must be floating-point"), std::string::npos);
  GptOptions l = small_gpt();
  l.layers = 0;
  EXPECT_NE(error_of(l).find("layers"), std::string::npos);

  LlamaOptions q = small_llama();
  q.kv_heads = 3;
  EXPECT_NE(error_of(q).find("llama: kv_heads (3) must divide heads (4)"), std::string::npos)
      << error_of(q);
  q = small_llama();
  q.hidden = 66;
  EXPECT_NE(error_of(q).find("heads (4) must divide hidden (66)"), std::string::npos);
}

TEST(Gpt, TrainingStepWithMasterWeightsAndJsonRoundTrip) {
  const Graph f = make_llama(small_llama());
  TrainingOptions opts;
  opts.master_weights = true;
  const Graph s = expand_training_step(f, opts);
  uint64_t state = 0;
  for (const Op& o : s.ops()) state += o.state_bytes;
  EXPECT_EQ(state, 12 * (f.total_param_bytes() / 2));  // Adam, bf16: 12 B per parameter
  // The untied output layer and every norm get an update; normalization backward is 2x.
  EXPECT_NE(s.find_op("output_layer/update"), kNoOp);
  EXPECT_DOUBLE_EQ(op(s, P0 + ".input_layernorm/grad").flops,
                   2 * op(s, P0 + ".input_layernorm").flops);
  // Categories not derivable from the type survive a JSON round trip.
  const Graph r = parse_graph_json(graph_to_json(f));
  EXPECT_EQ(op(r, P0 + ".input_layernorm").category, OpCategory::kNormalization);
  EXPECT_EQ(op(r, P0 + ".self_attention.rotary").category, OpCategory::kElementwise);
  EXPECT_EQ(op(r, P0 + ".mlp.swiglu").category, OpCategory::kElementwise);
  EXPECT_EQ(r.total_param_bytes(), f.total_param_bytes());
  EXPECT_EQ(r.total_flops(), f.total_flops());
}

}  // namespace
}  // namespace placer
