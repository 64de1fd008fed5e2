#pragma once
// How a mixture-of-experts layer is marked in a graph (docs/models.md, "Mixture-of-experts
// layers"): the generators set these op attributes, the simulator and the expert placers
// read them. Every forward op of an MoE layer's MLP carries
//   moe_layer = k   (0-based index among the graph's MoE layers, in graph order)
//   moe       = its role (the values below)
// and the routed-expert ops also carry experts = E (routed experts of the layer) and
// top_k = k (experts each token goes to). Backward and optimizer ops are found through
// Op::forward_op.

namespace placer {

inline constexpr const char* kMoeLayerAttr = "moe_layer";
inline constexpr const char* kMoeRoleAttr = "moe";
inline constexpr const char* kMoeExpertsAttr = "experts";
inline constexpr const char* kMoeTopKAttr = "top_k";
/// On routed-expert ops when tokens are dropped and padded to capacity (same work on every rank).
inline constexpr const char* kMoeCapacityAttr = "capacity_factor";

// Values of kMoeRoleAttr.
inline constexpr const char* kMoeRouter = "router";      ///< gate GEMM h -> E, top-k scores
inline constexpr const char* kMoeAuxLoss = "aux_loss";   ///< load-balancing loss
inline constexpr const char* kMoeDispatch = "dispatch";  ///< permute tokens to experts (all-to-all)
inline constexpr const char* kMoeExpertUp = "expert_up";      ///< grouped gate+up GEMM
inline constexpr const char* kMoeExpertAct = "expert_act";    ///< SwiGLU of the experts
inline constexpr const char* kMoeExpertDown = "expert_down";  ///< grouped down GEMM
inline constexpr const char* kMoeCombine = "combine";         ///< all-to-all back, weighted sum
inline constexpr const char* kMoeShared = "shared";           ///< shared experts (every token)

}  // namespace placer
