// Kernel presets of the GPT / LLaMA generators: megatron-2021 is the op contract, te fuses
// rotary over q and k, compile also fuses each residual add into the next norm.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "datasets/gpt.h"
#include "decoder_fixtures.h"
#include "src/graph/training_step.h"
#include "src/plan/megatron_plan.h"
#include "src/plan/tensor_parallel.h"

namespace placer {
namespace {

// testing::small_llama_options() (h 64, a 4, kv 2, s 16, b 2, bf16) with `kernels`.
LlamaOptions small_llama(KernelPreset kernels) {
  LlamaOptions o = testing::small_llama_options();
  o.kernels = kernels;
  return o;
}

const std::string P0 = "language_model.encoder.layers.0", P1 = "language_model.encoder.layers.1";

const Op& op(const Graph& g, const std::string& name) { return testing::op_named(g, name); }

TEST(KernelPresets, MegatronIsTheOpContractTeFusesRotary) {
  const Graph m = make_llama(small_llama(KernelPreset::kMegatron2021));
  const Graph te = make_llama(small_llama(KernelPreset::kTe));
  EXPECT_EQ(m.attr("kernels"), "megatron-2021");
  EXPECT_EQ(te.attr("kernels"), "te");
  ASSERT_EQ(te.num_ops(), m.num_ops());
  const std::string rotary = P0 + ".self_attention.rotary";
  // megatron-2021: reads the QKV output 2 * 16 * 128 * 2 B, writes q, k 2 * 16 * 96 * 2 B.
  EXPECT_EQ(m.op_bytes(m.find_op(rotary)), 8192u + 6144u);
  // te: reads and writes q and k only.
  EXPECT_EQ(te.op_bytes(te.find_op(rotary)), 2 * 6144u);
  for (OpId i = 0; i < m.num_ops(); ++i) {
    EXPECT_EQ(te.op(i).name, m.op(i).name);
    if (te.op(i).name.find(".rotary") == std::string::npos) {
      EXPECT_EQ(te.op_bytes(i), m.op_bytes(i)) << te.op(i).name;
    }
  }
}

TEST(KernelPresets, CompileFusesTheResidualAddIntoTheNextNorm) {
  const Graph m = make_llama(small_llama(KernelPreset::kMegatron2021));
  const Graph c = make_llama(small_llama(KernelPreset::kCompile));
  // Gone: both post-attention norms, layer 1's input norm and the final norm (2 per layer).
  EXPECT_EQ(c.num_ops(), m.num_ops() - 4);
  for (const std::string& gone :
       {P0 + ".post_attention_layernorm", P1 + ".input_layernorm", P1 + ".post_attention_layernorm",
        std::string("language_model.encoder.final_layernorm")}) {
    EXPECT_EQ(c.find_op(gone), kNoOp) << gone;
  }
  EXPECT_NE(c.find_op(P0 + ".input_layernorm"), kNoOp);  // it reads the embedding
  const Op& f = op(c, P0 + ".self_attention.bias_dropout_add");
  EXPECT_EQ(f.type, "AddRMSNormalization");
  EXPECT_EQ(f.category, OpCategory::kNormalization);
  ASSERT_EQ(f.outputs.size(), 2u);  // the residual sum and its norm
  // Add (1 per element) + RMSNorm (4): 5 * b s h; the norm's h weights (bf16).
  EXPECT_DOUBLE_EQ(f.flops, 5.0 * 2 * 16 * 64);
  EXPECT_EQ(f.param_bytes, 128u);
  // 4 passes over [b, s, h] (read x and dense, write sum and norm) against 3 + 2 unfused.
  EXPECT_EQ(f.bytes_accessed, 4u * 2 * 16 * 64 * 2);
  EXPECT_EQ(m.op_bytes(m.find_op(P0 + ".self_attention.bias_dropout_add")) +
                m.op_bytes(m.find_op(P0 + ".post_attention_layernorm")),
            5u * 2 * 16 * 64 * 2);
  // The next block reads the normed output, the next residual add the sum.
  EXPECT_EQ(op(c, P0 + ".mlp.dense_h_to_4h").inputs[0], f.outputs[1]);
  EXPECT_EQ(op(c, P0 + ".mlp.bias_dropout_add").inputs[0], f.outputs[0]);
  // The last layer's add carries the final norm that the output layer reads.
  const Op& last = op(c, P1 + ".mlp.bias_dropout_add");
  EXPECT_EQ(op(c, "output_layer").inputs[0], last.outputs[1]);
  EXPECT_EQ(c.total_param_bytes(), m.total_param_bytes());
  EXPECT_DOUBLE_EQ(c.total_flops(), m.total_flops());
}

TEST(KernelPresets, CompiledGptTrainsAndSplitsUnderTensorParallelism) {
  const LlamaOptions small = testing::small_llama_options();  // the same sizes, MHA, b 8
  GptOptions o;
  o.layers = small.layers, o.hidden = small.hidden, o.heads = small.heads;
  o.seq_len = small.seq_len, o.vocab = small.vocab;
  o.batch = 8, o.tp = 2, o.kernels = KernelPreset::kCompile;
  const Graph g = expand_training_step(make_gpt(o));
  const Op& f = op(g, P0 + ".mlp.bias_dropout_add");
  EXPECT_EQ(f.type, "AddLayerNormalization");
  // Add 1 + dropout 2 + LayerNorm 8 per element of [8, 16, 64].
  EXPECT_DOUBLE_EQ(f.flops, 11.0 * 8 * 16 * 64);
  EXPECT_DOUBLE_EQ(op(g, P0 + ".mlp.bias_dropout_add/grad").flops, 2 * f.flops);
  EXPECT_EQ(megatron_role(f), TensorParallelRole::kReplicated);
  MegatronConfig m;
  m.tp = 2;
  m.micro_batch = 8;
  m.global_batch = 8;
  const Plan e = expand_tensor_parallel(megatron_plan(g, m), g, 2);
  int found = 0;
  for (const OpPartition& q : e.partitions) {
    if (q.op != g.find_op(f.name)) continue;
    EXPECT_TRUE(q.replicated);
    ++found;
  }
  EXPECT_EQ(found, 1);
  // Every preset's name reads back as itself; other names are refused.
  for (KernelPreset k : {KernelPreset::kMegatron2021, KernelPreset::kTe, KernelPreset::kCompile}) {
    KernelPreset back = KernelPreset::kMegatron2021;
    EXPECT_TRUE(parse_kernel_preset(to_string(k), &back) && back == k) << to_string(k);
  }
  KernelPreset none;
  EXPECT_FALSE(parse_kernel_preset("apex", &none));
}

}  // namespace
}  // namespace placer
