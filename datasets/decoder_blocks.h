#pragma once
// Blocks of the decoder generator (datasets/gpt.cpp) that not every model has: the
// FlashAttention op, multi-head latent attention and the mixture-of-experts MLP (their op
// contracts are in datasets/gpt.h). Internal to datasets/.

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/family_util.h"
#include "datasets/gpt.h"

namespace placer {

/// Size arithmetic the decoder generator's files share.
namespace decoder_sizes {
inline double d(int64_t v) { return static_cast<double>(v); }
inline uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }
/// Parameters of a rows x cols weight (checked); the byte bound is checked where the op is
/// added.
uint64_t weight(int64_t rows, int64_t cols);
/// `v` as a stream prints it (attribute values).
std::string str(double v);
}  // namespace decoder_sizes

/// What every block needs: the graph under construction and the step's shape.
struct BlockContext {
  GraphMaker& m;
  int64_t b = 1, s = 1, h = 1;
  DType dtype = DType::kBF16;
  double dropout = 0;
};

/// One FlashAttention op `name` reading `inputs`, writing the context [b, s, out_width] and
/// the fp32 logsumexp [b, heads, s]; `flops` and `bytes` as flash_attention_flops / _bytes.
TensorId add_flash_attention(const BlockContext& c, const std::string& name,
                             const std::string& scope, int layer, std::vector<TensorId> inputs,
                             int64_t out_width, const AttentionShape& shape, double flops,
                             uint64_t bytes);

/// Multi-head latent attention of layer `layer` from its input norm `ln` up to the context
/// [b, s, heads * v_head_dim] (the output projection is the caller's); `att` is the
/// self_attention prefix.
TensorId add_mla_core(const BlockContext& c, const MlaOptions& mla, int64_t heads, int64_t window,
                      const std::string& att, int layer, TensorId ln);

/// An MoE MLP of layer `layer` (the moe_index-th MoE layer) on its post-attention norm `in`;
/// returns its output [b, s, h] and appends the load-balancing loss to *aux_losses.
TensorId add_moe_mlp(const BlockContext& c, const MoeOptions& moe, const std::string& mlp,
                     int layer, int moe_index, TensorId in, std::vector<TensorId>* aux_losses);

}  // namespace placer
