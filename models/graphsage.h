#pragma once
// GraphSAGE encoder of GDP (Zhou et al. 2019), after Hamilton et al. 2017 with the max-pool
// aggregator, over both edge directions of the op graph. Formulas and shapes: docs/models_nn.md.
//
// Per layer k, for every node v:
//   p_in(u)  = relu(W_pool_in  h_u + b_in)        p_out(u) = relu(W_pool_out h_u + b_out)
//   a_in(v)  = max_{u in pred(v)} p_in(u)          a_out(v) = max_{u in succ(v)} p_out(u)
//              (element-wise; the zero vector when v has no such neighbour)
//   h_v'     = l2_normalize(relu(W [h_v ; a_in(v) ; a_out(v)] + b))
// Layer 0 input: h_v = [embedding(op_type_v) ; x_v].
#include <cstdint>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <vector>

namespace placer {

struct GraphSageOptions {
  GraphSageOptions(int64_t in_dim, int64_t hidden) : in_dim_(in_dim), hidden_(hidden) {}
  /// Width F of the dense node features x.
  TORCH_ARG(int64_t, in_dim);
  /// Width of every layer's output (and of the pooling MLPs).
  TORCH_ARG(int64_t, hidden);
  /// Number of GraphSAGE layers (>= 1).
  TORCH_ARG(int64_t, layers) = 2;
  /// Op-type vocabulary size; 0 disables the op-type embedding (op_type is then ignored).
  TORCH_ARG(int64_t, op_type_vocab) = 0;
  /// Width of the op-type embedding (used only when op_type_vocab > 0).
  TORCH_ARG(int64_t, op_type_embedding) = 16;
  /// L2-normalise every layer's output row (Hamilton et al., Algorithm 1, line 7).
  TORCH_ARG(bool, normalize) = true;
};

/// Element-wise max of `messages` [N, D] over each node's CSR neighbour list: row v of the
/// result is max over idx[off[v] .. off[v+1]) of messages[idx[j]], or zeros if the list is
/// empty. off: [N+1], idx: [E], integer tensors (int32 or int64). Loop-free: index_select of
/// the flattened list + scatter_reduce("amax") by segment id. Differentiable.
torch::Tensor csr_segment_max(const torch::Tensor& messages, const torch::Tensor& off,
                              const torch::Tensor& idx);

class GraphSageImpl : public torch::nn::Module {
 public:
  /// Builds all layers; parameters are drawn from the torch RNG (seed with manual_seed).
  explicit GraphSageImpl(const GraphSageOptions& options);

  /// x: [N, in_dim] float; op_type: [N] integer (ignored without an embedding);
  /// in_off/in_idx: predecessors in CSR, out_off/out_idx: successors in CSR ([N+1], [E]).
  /// Returns the node embeddings [N, hidden].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& op_type,
                        const torch::Tensor& in_off, const torch::Tensor& in_idx,
                        const torch::Tensor& out_off, const torch::Tensor& out_idx);

  /// The options this module was built with.
  GraphSageOptions options;
  /// Op-type embedding table [op_type_vocab, op_type_embedding]; empty holder if disabled.
  torch::nn::Embedding op_embedding{nullptr};
  /// Per layer: pooling MLP applied to predecessors' states (in-edges).
  std::vector<torch::nn::Linear> pool_in;
  /// Per layer: pooling MLP applied to successors' states (out-edges).
  std::vector<torch::nn::Linear> pool_out;
  /// Per layer: combine [h_v ; a_in ; a_out] -> hidden.
  std::vector<torch::nn::Linear> combine;
};
TORCH_MODULE(GraphSage);

}  // namespace placer
