#pragma once
// The Megatron-LM configuration space of a layered transformer, as the `megatron` grid
// (agents/classical/megatron_grid.h) and rainbow-3d (agents/rainbow/rainbow_3d.h) both
// search it: the graph's shape, the context- and expert-parallel degrees a pipeline stage
// allows, and the analytic memory and step-time estimate that prunes and orders
// configurations. Torch-free.
//
//   const MegatronEstimator est(problem);   // throws when the graph is no such transformer
//   for (int cp : context_degrees(est.shape(), ranks)) ...
//   if (est.estimate(m).memory_bytes > est.device_memory()) ...   // cannot fit

#include <memory>
#include <utility>
#include <vector>

#include "agents/api/placer.h"
#include "src/plan/megatron_plan.h"

namespace placer {

/// What the grid needs to know about a layered transformer.
struct TransformerShape {
  int layers = 0;
  int heads = 0;         ///< attention heads (dim 1 of the scores / FlashAttention's logsumexp)
  int global_batch = 0;  ///< the graph's batch
  int64_t seq = 0;       ///< tokens per sample (the attention's sequence dim)
  bool fused_attention = false;  ///< FlashAttention ops (context parallelism needs them)
  int experts = 0;               ///< routed experts per MoE layer; 0 = dense
};

/// The shape of `g`; throws Error("megatron: ...") when `g` is not a training step of a
/// layered transformer with Megatron op names.
TransformerShape transformer_shape(const Graph& g);

/// The positive divisors of n, ascending.
std::vector<int> divisors_of(int n);

/// Context-parallel degrees for `ranks` devices per TP rank: 1, and, for a fused attention,
/// every divisor that splits the sequence into 2 x cp equal chunks (causal load balancing)
/// of at least 512 tokens (1024 per rank).
std::vector<int> context_degrees(const TransformerShape& sh, int ranks);

/// Expert layouts (ep, etp) of a stage's tp x cp x dp ranks: (1, 1) for a dense model; for
/// an MoE model ep dividing cp x dp and the experts, etp 1 or tp (Megatron-core's choices).
std::vector<std::pair<int, int>> expert_layouts(const TransformerShape& sh, int tp, int cp, int dp);

struct MegatronCandidate {
  MegatronConfig config;
  double memory_bytes = 0;  ///< analytic peak of the fullest device
  double step_seconds = 0;  ///< analytic step time (ordering only)
};

/// The analytic estimates of configurations on the problem's devices (the per-op facts are
/// gathered once, in the constructor, which throws as transformer_shape does).
class MegatronEstimator {
 public:
  explicit MegatronEstimator(const Problem& problem);
  ~MegatronEstimator();
  const TransformerShape& shape() const;
  /// Memory of the fullest device and step time of configuration m.
  MegatronCandidate estimate(const MegatronConfig& m) const;
  double device_memory() const;  ///< bytes of the first device

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace placer
