// The traffic of inductor's kernels in the compile and compile-blocks kernel sets.
#include "datasets/compiled_kernels.h"

#include <gtest/gtest.h>

#include <string>

#include "datasets/gpt.h"
#include "decoder_fixtures.h"
#include "src/graph/moe_attrs.h"
#include "src/graph/training_step.h"

namespace placer {
namespace {

TEST(CompiledKernels, RmsNormBackwardReadsItsGradientsAndInputAndReducesTheWeightInPartials) {
  // 32 tokens x 64 (bf16): a pass is 4096 B. Gradient, x, dx: 3 passes; the rstd 32 x 4 B;
  // the weight read and its gradient written, 2 x 128 B; 32 partial rows (no more than the
  // tokens) of 64 fp32 written and read, 2 x 8192 B.
  EXPECT_DOUBLE_EQ(compiled_rms_norm_backward(32, 64, DType::kBF16, 0),
                   3 * 4096 + 128 + 256 + 16384);
  // Two more linears' gradients summed in the kernel: 2 more passes.
  EXPECT_DOUBLE_EQ(compiled_rms_norm_backward(32, 64, DType::kBF16, 2),
                   5 * 4096 + 128 + 256 + 16384);
  // 16384 x 8192 (fused_ops.csv's larger shape): 3 x 256 MiB, rstd 64 KiB, weight and
  // gradient 32 KiB, 512 partial rows of 8192 fp32 written and read (32 MiB).
  EXPECT_DOUBLE_EQ(compiled_rms_norm_backward(16384, 8192, DType::kBF16, 0),
                   3.0 * 268435456 + 65536 + 32768 + 33554432);
}

TEST(CompiledKernels, AddRmsNormBackwardRereadsForItsWeightGradient) {
  // dx kernel: gradient(s), the sum's gradient, both addends, dx: 5 passes (6 with gate and
  // up apart); the weight gradient's pass: gradient(s) and the attention output, 2 (3).
  EXPECT_DOUBLE_EQ(compiled_add_rms_norm_backward(32, 64, DType::kBF16, 0),
                   7 * 4096 + 128 + 256 + 16384);
  EXPECT_DOUBLE_EQ(compiled_add_rms_norm_backward(32, 64, DType::kBF16, 1),
                   9 * 4096 + 128 + 256 + 16384);
}

TEST(CompiledKernels, RotaryBackwardMovesTwiceItsForward) {
  // 32 tokens x (4 + 2) heads x 16 (bf16): 6144 B rotated; cos and sin [16, 16]: 1024 B.
  const FusedBytes r = compiled_rotary(32, 16, 4, 2, 16, DType::kBF16);
  EXPECT_DOUBLE_EQ(r.forward, 2 * 6144 + 2 * 1024);
  EXPECT_DOUBLE_EQ(r.backward, 4 * 6144 + 4 * 1024);
}

TEST(CompiledKernels, CrossEntropyReadsTheLogitsTwiceForwardOnceBackward) {
  // 32 x 1024 bf16 logits (65536 B), int64 labels (256 B), fp32 max and sum per row (256 B),
  // the fp32 loss.
  const FusedBytes ce = compiled_cross_entropy(32, 1024, DType::kBF16);
  EXPECT_DOUBLE_EQ(ce.forward, 2 * 65536 + 256 + 256 + 4);
  EXPECT_DOUBLE_EQ(ce.backward, 2 * 65536 + 256 + 256);
}

// testing::small_llama_options() (h 64, a 4, kv 2, d 16, s 16, b 2: 32 tokens; vocab 1024
// padded; bf16) with `kernels`, as a training step.
Graph small_step(KernelPreset kernels) {
  LlamaOptions o = testing::small_llama_options();
  o.kernels = kernels;
  return expand_training_step(make_llama(o));
}

uint64_t grad_bytes(const Graph& step, const std::string& name) {
  return step.op_bytes(step.find_op(name + "/grad"));
}

const std::string P0 = "language_model.encoder.layers.0", P1 = "language_model.encoder.layers.1";

TEST(CompiledKernels, TheCompileSetChargesThemToItsOps) {
  const Graph step = small_step(KernelPreset::kCompile);
  // Layer 0's input norm: the plain RMSNorm, one gradient (q, k, v are one projection).
  EXPECT_EQ(step.op_bytes(step.find_op(P0 + ".input_layernorm")), 2u * 4096);
  EXPECT_EQ(grad_bytes(step, P0 + ".input_layernorm"), 3u * 4096 + 128 + 256 + 16384);
  // Every fused add + norm, the final norm's included.
  for (const std::string& add :
       {P0 + ".self_attention.bias_dropout_add", P1 + ".mlp.bias_dropout_add"}) {
    EXPECT_EQ(step.op_bytes(step.find_op(add)), 4u * 4096) << add;
    EXPECT_EQ(grad_bytes(step, add), 7u * 4096 + 128 + 256 + 16384) << add;
  }
  EXPECT_EQ(step.op_bytes(step.find_op(P0 + ".self_attention.rotary")), 2u * 6144 + 2 * 1024);
  EXPECT_EQ(grad_bytes(step, P0 + ".self_attention.rotary"), 4u * 6144 + 4 * 1024);
  EXPECT_EQ(step.op_bytes(step.find_op("loss")), 2u * 65536 + 516);
  EXPECT_EQ(grad_bytes(step, "loss"), 2u * 65536 + 512);
  // SwiGLU over 32 x 256: its tensors, read gate and up and write the product (3 x 16 KiB);
  // backward the output gradient, gate and up read and both gradients written (5 x 16 KiB).
  EXPECT_EQ(step.op_bytes(step.find_op(P0 + ".mlp.swiglu")), 3u * 16384);
  EXPECT_EQ(grad_bytes(step, P0 + ".mlp.swiglu"), 5u * 16384);
}

TEST(CompiledKernels, CompileBlocksSumsTheSeparateLinearsGradientsInItsNorms) {
  const Graph step = small_step(KernelPreset::kCompileBlocks);
  // Layer 1's input norm sums q, k and v's gradients; the post-attention norm gate and up's.
  EXPECT_EQ(grad_bytes(step, P1 + ".input_layernorm"), 5u * 4096 + 128 + 256 + 16384);
  EXPECT_EQ(grad_bytes(step, P0 + ".self_attention.bias_dropout_add"),
            9u * 4096 + 128 + 256 + 16384);
  EXPECT_EQ(grad_bytes(step, P0 + ".self_attention.rotary"), 4u * 6144 + 4 * 1024);
}

TEST(CompiledKernels, OtherSetsKeepTheirBytes) {
  // te's rotary reads and writes q and k; GPT's compiled add + LayerNorm keeps the default
  // backward (no measured kernels behind it).
  const Graph te = small_step(KernelPreset::kTe);
  EXPECT_EQ(te.op_bytes(te.find_op(P0 + ".self_attention.rotary")), 2u * 6144);
  EXPECT_EQ(find_op_attr(te.op(te.find_op(P0 + ".self_attention.rotary")), kBackwardBytesAttr),
            nullptr);
  GptOptions g;
  g.layers = 1, g.hidden = 64, g.heads = 4, g.seq_len = 16, g.batch = 2, g.vocab = 1000;
  g.kernels = KernelPreset::kCompile;
  const Graph gpt = make_gpt(g);
  const Op& add = gpt.op(gpt.find_op(P0 + ".self_attention.bias_dropout_add"));
  EXPECT_EQ(add.type, "AddLayerNormalization");
  EXPECT_EQ(find_op_attr(add, kBackwardBytesAttr), nullptr);
  EXPECT_NE(find_op_attr(gpt.op(gpt.find_op("loss")), kBackwardBytesAttr), nullptr);
}

}  // namespace
}  // namespace placer
