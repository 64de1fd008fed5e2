// Kernel presets of the GPT / LLaMA generators: megatron-2021 is the op contract, te fuses
// rotary over q and k, compile also fuses each residual add into the next norm, eager counts
// the bytes of PyTorch's eager kernels in Hugging Face's style.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "datasets/gpt.h"
#include "decoder_fixtures.h"
#include "src/graph/kernel_list.h"
#include "src/graph/training_step.h"
#include "src/plan/megatron_plan.h"
#include "src/plan/tensor_parallel.h"
#include "src/util/error.h"

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
  for (KernelPreset k : {KernelPreset::kMegatron2021, KernelPreset::kTe, KernelPreset::kCompile,
                         KernelPreset::kEager, KernelPreset::kCompileBlocks}) {
    KernelPreset back = KernelPreset::kMegatron2021;
    EXPECT_TRUE(parse_kernel_preset(to_string(k), &back) && back == k) << to_string(k);
  }
  KernelPreset none;
  EXPECT_FALSE(parse_kernel_preset("apex", &none));
}

// The forward bytes of an op and the backward_bytes its backward op reads and writes.
struct Bytes {
  uint64_t forward, backward;
};
Bytes bytes_of(const Graph& step, const std::string& name) {
  return {step.op_bytes(step.find_op(name)), step.op_bytes(step.find_op(name + "/grad"))};
}

// Small LLaMA (h 64, a 4, kv 2, d 16, ffn 256, b 2, s 16, vocab 1024 padded, bf16): 32 tokens,
// 2048 elements of [b, s, h].
TEST(KernelPresets, EagerCountsTheBytesOfHuggingFaceStyleKernels) {
  const Graph m = make_llama(small_llama(KernelPreset::kMegatron2021));
  const Graph e = make_llama(small_llama(KernelPreset::kEager));
  EXPECT_EQ(e.attr("kernels"), "eager");
  EXPECT_EQ(e.num_ops(), m.num_ops() + 2);  // a repeat_kv per layer
  EXPECT_DOUBLE_EQ(e.total_flops(), m.total_flops());
  EXPECT_EQ(e.total_param_bytes(), m.total_param_bytes());
  const Graph step = expand_training_step(e);
  // RMSNorm (N = 2048 elements, 32 rows, 64 weights): forward 8 kernels, 36 B per element
  // (x.float() 6, pow 8, mean 4, x * rsqrt 8, the cast back 6, * weight 4) and per row 4
  // (mean) + 8 + 8 (+ eps, rsqrt) + 4 (the broadcast rsqrt) B, the weight 128 B.
  EXPECT_EQ(bytes_of(step, P0 + ".input_layernorm").forward, 2048u * 36 + 32 * 24 + 128);
  // Backward 17 kernels, 96 B per element, 1536 B of rows and weights; plus 6 B per element
  // for each gradient sum of the linears that read it: q, k, v 2, gate, up 1.
  const uint64_t norm_back = 2048u * 96 + 1536;
  EXPECT_EQ(bytes_of(step, P0 + ".input_layernorm").backward, norm_back + 2 * 2048 * 6);
  EXPECT_EQ(bytes_of(step, P0 + ".post_attention_layernorm").backward, norm_back + 2048 * 6);
  EXPECT_EQ(bytes_of(step, "language_model.encoder.final_layernorm").backward, norm_back);
  const Op& norm = op(e, P0 + ".input_layernorm");
  const std::vector<KernelWork> norm_forward = listed_kernels(norm);
  ASSERT_EQ(norm_forward.size(), 8u);
  EXPECT_EQ(norm_forward[0].category, OpCategory::kDataMovement);  // the cast, unrolled
  EXPECT_EQ(norm_forward[0].dtype, DType::kF32);
  EXPECT_EQ(norm_forward[1].category, OpCategory::kElementwise);  // pow, vectorised
  EXPECT_EQ(norm_forward[2].category, OpCategory::kReduction);    // mean
  EXPECT_EQ(norm_forward[2].bytes, 2048u * 4 + 32 * 4);
  EXPECT_EQ(norm_forward[7].category, OpCategory::kDataMovement);  // * weight, broadcast
  EXPECT_EQ(norm_forward[7].dtype, DType::kBF16);
  EXPECT_EQ(listed_kernels(op(step, P0 + ".input_layernorm/grad")).size(), 17u + 2);
  // Rotary over q (2048 elements, 4096 B) and k (2048 B) with 512 B tables: forward 5
  // strided kernels each, 10 passes and both tables: 10 x 6144 + 4 x 512; backward the same
  // and the key gradient made contiguous (2 x 2048 B).
  EXPECT_EQ(bytes_of(step, P0 + ".self_attention.rotary").forward, 61440u + 2048);
  EXPECT_EQ(bytes_of(step, P0 + ".self_attention.rotary").backward, 61440u + 2048 + 4096);
  EXPECT_EQ(listed_kernels(op(e, P0 + ".self_attention.rotary")).size(), 10u);
  // repeat_kv: k and v each read 32 x 2 x 16 and write 32 x 4 x 16 elements (12288 B); the
  // backward also makes the values contiguous.
  const std::string core = P0 + ".self_attention.core_attention";
  const Op& rep = op(step, core + ".repeat_kv");
  EXPECT_EQ(rep.category, OpCategory::kDataMovement);
  EXPECT_EQ(step.tensor(rep.outputs[0]).bytes, 32u * 2 * 4 * 16 * 2);
  EXPECT_EQ(bytes_of(step, core + ".repeat_kv").forward, 12288u);
  EXPECT_EQ(bytes_of(step, core + ".repeat_kv").backward, 12288u + 1024 * 4);
  // SDPA sees 4 key / value heads: q, k, v, out 32 x 4 x 16 x 2 B each and the fp32 lse.
  const Op& flash = op(step, core + ".flash_attention");
  EXPECT_EQ(flash.inputs[1], rep.outputs[0]);
  EXPECT_EQ(step.op_bytes(step.find_op(flash.name)), 4u * 4096 + 32 * 4 * 4);
  // SwiGLU over 32 x 256: silu + mul 10 B per element, backward 18 B.
  EXPECT_EQ(bytes_of(step, P0 + ".mlp.swiglu").forward, 8192u * 10);
  EXPECT_EQ(bytes_of(step, P0 + ".mlp.swiglu").backward, 8192u * 18);
  EXPECT_EQ(listed_kernels(op(step, P0 + ".mlp.swiglu/grad")).size(), 3u);
  // Cross-entropy on fp32 logits, 32 x 1024: the cast 6 and log-softmax 8 B per logit, nll
  // 12 B per row; backward the zeroed gradient 4, log-softmax's 12, the cast back 6 B per
  // logit, nll's 12 B per row and the 4-byte seed.
  EXPECT_EQ(bytes_of(step, "loss").forward, 32768u * 14 + 32 * 12);
  EXPECT_EQ(bytes_of(step, "loss").backward, 32768u * 22 + 32 * 12 + 4);
  // The residual adds and the GEMMs are as in megatron-2021.
  for (const std::string& same :
       {P0 + ".self_attention.bias_dropout_add", P0 + ".mlp.dense_4h_to_h"}) {
    EXPECT_EQ(e.op_bytes(e.find_op(same)), m.op_bytes(m.find_op(same))) << same;
  }
}

// What eager autograd keeps for backward: an RMSNorm its fp32 input and its normalised
// value before the weight (not its input), rotary nothing (its products keep the tables),
// SwiGLU gate, up and silu(gate), the loss the fp32 log-probabilities and the logits.
TEST(KernelPresets, EagerKeepsWhatAutogradSaves) {
  const Graph step = expand_training_step(make_llama(small_llama(KernelPreset::kEager)));
  auto reads = [&](const std::string& grad, TensorId t) {
    const Op& g = op(step, grad);
    return std::find(g.inputs.begin(), g.inputs.end(), t) != g.inputs.end();
  };
  const Op& norm = op(step, P0 + ".post_attention_layernorm");
  ASSERT_EQ(norm.outputs.size(), 3u);
  EXPECT_EQ(step.tensor(norm.outputs[1]).bytes, 2048u * 2);  // normalised, bf16
  EXPECT_EQ(step.tensor(norm.outputs[2]).bytes, 2048u * 4);  // the input in fp32
  EXPECT_EQ(step.tensor(norm.outputs[2]).dtype, DType::kF32);
  for (TensorId t : norm.outputs) EXPECT_TRUE(reads(norm.name + "/grad", t));
  EXPECT_FALSE(reads(norm.name + "/grad", norm.inputs[0]));
  const Op& rotary = op(step, P0 + ".self_attention.rotary");
  EXPECT_FALSE(reads(rotary.name + "/grad", rotary.inputs[0]));
  EXPECT_FALSE(reads(rotary.name + "/grad", rotary.outputs[0]));
  const Op& swiglu = op(step, P0 + ".mlp.swiglu");
  ASSERT_EQ(swiglu.outputs.size(), 2u);
  EXPECT_EQ(step.tensor(swiglu.outputs[1]).bytes, 32u * 256 * 2);  // silu(gate)
  for (TensorId t : {swiglu.inputs[0], swiglu.outputs[0], swiglu.outputs[1]}) {
    EXPECT_TRUE(reads(swiglu.name + "/grad", t));
  }
  const Op& loss = op(step, "loss");
  ASSERT_EQ(loss.outputs.size(), 2u);
  EXPECT_EQ(step.tensor(loss.outputs[1]).bytes, 32768u * 4);  // log-softmax, fp32
  EXPECT_TRUE(reads("loss/grad", loss.outputs[1]));
  EXPECT_TRUE(reads("loss/grad", loss.inputs[0]));  // the logits
  EXPECT_EQ(loss.workspace_bytes, 2u * 32768 * 4);  // two fp32 gradients of the logits
  // Megatron-2021's norm keeps its input, as the rule by type says.
  const Graph m = expand_training_step(make_llama(small_llama(KernelPreset::kMegatron2021)));
  const Op& mnorm = op(m, P0 + ".post_attention_layernorm");
  ASSERT_EQ(mnorm.outputs.size(), 1u);
  const Op& mgrad = op(m, mnorm.name + "/grad");
  EXPECT_NE(std::find(mgrad.inputs.begin(), mgrad.inputs.end(), mnorm.inputs[0]),
            mgrad.inputs.end());
}

TEST(KernelPresets, MalformedSavedTensorsIsANamedError) {
  // The eager graph with the rotary op's saved_tensors garbled.
  const Graph bad =
      testing::with_edited_ops(make_llama(small_llama(KernelPreset::kEager)), [](Op& o) {
        for (auto& [k, v] : o.attrs) {
          if (k == kSavedTensorsAttr && o.name == P0 + ".self_attention.rotary") v = "all";
        }
      });
  try {
    expand_training_step(bad);
    ADD_FAILURE() << "accepted";
  } catch (const ValidationError& e) {
    EXPECT_EQ(std::string(e.what()), "op '" + P0 +
                                         ".self_attention.rotary': attribute saved_tensors 'all' "
                                         "is not none, inputs, outputs or inputs_outputs");
  }
}

// Each block compiled on its own: the attention's residual add is fused into the block's
// post-attention norm, the MLP's is not fused into the next block's norm; the final norm
// and the loss run eager.
TEST(KernelPresets, CompileBlocksFusesInsideABlockAndLeavesTheRestEager) {
  const Graph m = make_llama(small_llama(KernelPreset::kMegatron2021));
  const Graph c = make_llama(small_llama(KernelPreset::kCompileBlocks));
  EXPECT_EQ(c.attr("kernels"), "compile-blocks");
  // + a repeat_kv per layer, - a post-attention norm per layer.
  EXPECT_EQ(c.num_ops(), m.num_ops());
  EXPECT_EQ(c.find_op(P0 + ".post_attention_layernorm"), kNoOp);
  EXPECT_EQ(op(c, P0 + ".self_attention.bias_dropout_add").type, "AddRMSNormalization");
  EXPECT_EQ(op(c, P0 + ".mlp.bias_dropout_add").type, "Add");
  // Layer 1's input norm is one fused kernel: read and write [b, s, h] once.
  EXPECT_EQ(c.op_bytes(c.find_op(P1 + ".input_layernorm")), 2u * 2048 * 2);
  EXPECT_EQ(c.total_param_bytes(), m.total_param_bytes());
  EXPECT_DOUBLE_EQ(c.total_flops(), m.total_flops());
  const Graph step = expand_training_step(c);
  // The final norm and the loss as eager's: 36 / 84 B per element, 14 / 22 B per logit.
  EXPECT_EQ(bytes_of(step, "language_model.encoder.final_layernorm").forward, 2048u * 36);
  EXPECT_EQ(bytes_of(step, "language_model.encoder.final_layernorm").backward, 2048u * 84);
  EXPECT_EQ(bytes_of(step, "loss").forward, 32768u * 14);
  EXPECT_EQ(bytes_of(step, "loss").backward, 32768u * 22);
  // repeat_kv copies k and v both ways (no layout copy: inductor writes what SDPA reads).
  const std::string core = P0 + ".self_attention.core_attention";
  EXPECT_EQ(bytes_of(step, core + ".repeat_kv").forward, 12288u);
  EXPECT_EQ(bytes_of(step, core + ".repeat_kv").backward, 12288u);
  // Fused rotary, as compile: read and write q and k (3072 elements) and read the cos and
  // sin tables (16 x 16 each) in each of the two kernels.
  EXPECT_EQ(c.op_bytes(c.find_op(P0 + ".self_attention.rotary")), 2u * 3072 * 2 + 4 * 256 * 2);
}

TEST(KernelPresets, EagerIsForDenseLlamaOnly) {
  GptOptions g;
  g.kernels = KernelPreset::kEager;
  EXPECT_THROW(make_gpt(g), Error);
  LlamaOptions o = small_llama(KernelPreset::kEager);
  o.mtp_layers = 1;
  EXPECT_THROW(make_llama(o), Error);
  o = small_llama(KernelPreset::kCompileBlocks);
  o.moe.experts = 4, o.moe.top_k = 2, o.moe.expert_ffn = 32;
  EXPECT_THROW(make_llama(o), Error);
  o = small_llama(KernelPreset::kEager);
  o.kv_heads = 4;  // multi-head attention: nothing to repeat
  EXPECT_EQ(make_llama(o).find_op(P0 + ".self_attention.core_attention.repeat_kv"), kNoOp);
}

}  // namespace
}  // namespace placer
