#pragma once
// How a mixture-of-experts layer is marked in a graph (docs/models.md, "Mixture-of-experts
// layers"): the generators set these op attributes, the simulator and the expert placers
// read them. Every forward op of an MoE layer's MLP carries
//   moe_layer = k   (0-based index among the graph's MoE layers, in graph order)
//   moe       = its role (the values below)
// and the routed-expert ops also carry experts = E (routed experts of the layer) and
// top_k = k (experts each token goes to). Backward and optimizer ops are found through
// Op::forward_op.

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

inline constexpr const char* kMoeLayerAttr = "moe_layer";
inline constexpr const char* kMoeRoleAttr = "moe";
inline constexpr const char* kMoeExpertsAttr = "experts";
inline constexpr const char* kMoeTopKAttr = "top_k";
/// On routed-expert ops when tokens are dropped and padded to capacity (same work on every rank).
inline constexpr const char* kMoeCapacityAttr = "capacity_factor";
/// On a forward op that stands for a chain of eager kernels whose backward traffic its
/// tensors do not show (gpt-oss's expert bias and GLU clamp): the bytes its backward op
/// reads and writes, which the training-step expansion uses instead of the tensors' sum.
inline constexpr const char* kBackwardBytesAttr = "backward_bytes";

// Values of kMoeRoleAttr.
inline constexpr const char* kMoeRouter = "router";      ///< gate GEMM h -> E, top-k scores
inline constexpr const char* kMoeAuxLoss = "aux_loss";   ///< load-balancing loss
inline constexpr const char* kMoeDispatch = "dispatch";  ///< permute tokens to experts (all-to-all)
inline constexpr const char* kMoeExpertUp = "expert_up";      ///< grouped gate+up GEMM
inline constexpr const char* kMoeExpertAct = "expert_act";    ///< SwiGLU of the experts
inline constexpr const char* kMoeExpertDown = "expert_down";  ///< grouped down GEMM
inline constexpr const char* kMoeCombine = "combine";         ///< all-to-all back, weighted sum
inline constexpr const char* kMoeShared = "shared";           ///< shared experts (every token)

/// The value of attribute `key` of `op`; nullptr when it has none.
const std::string* find_op_attr(const Op& op, const char* key);
/// Attribute `key` of `op` as an integer in [0, bound); ValidationError naming the op and the
/// key when it is missing or malformed.
int op_attr_int(const Op& op, const char* key, int64_t bound);

/// One MoE layer of a graph, read from its forward ops' attributes.
struct MoeLayerInfo {
  int experts = 0;        ///< routed experts (the expert ops' `experts`)
  int top_k = 0;          ///< experts per token
  bool padded = false;    ///< drop-and-pad: the experts' inputs are padded to a capacity
  std::vector<OpId> ops;  ///< its forward ops, in graph order
};
/// The graph's MoE layers by moe_layer index (a layer without routed-expert ops has 0
/// experts). ValidationError naming the op on a malformed attribute.
std::vector<MoeLayerInfo> moe_layers(const Graph& g);

}  // namespace placer
