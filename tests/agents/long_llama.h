#pragma once
// A long-sequence Llama shared by the tests of the Megatron space's searches (the `megatron`
// grid, rainbow-3d): fused attention, 4096 tokens, 2 heads (tp <= 2) and 2 layers (pp <= 2),
// so on 4 devices only context parallelism divides the activations by 4.
#include "datasets/gpt.h"
#include "src/graph/training_step.h"

namespace placer {
namespace testing {

inline Graph long_llama() {
  LlamaOptions o;
  o.layers = 2, o.hidden = 128, o.heads = 2, o.kv_heads = 2, o.seq_len = 4096, o.batch = 4;
  o.vocab = 1000, o.dtype = DType::kF16, o.attention = AttentionImpl::kFlash;
  return expand_training_step(make_llama(o));
}

}  // namespace testing
}  // namespace placer
