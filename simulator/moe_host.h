#pragma once
// The host side of eager MoE layers (simulator/moe_host.cpp, CostProfile::moe_host_sync).

#include <string>

namespace placer {

/// Calls the host issues for one pass of an eager MoE op (each as costly as one eager PyTorch
/// op): `role` its forward op's `moe` attribute, `type` its forward op's type, `local_experts`
/// the routed experts one rank holds. 1 for a role the table does not know.
int moe_op_host_calls(const std::string& role, const std::string& type, bool backward,
                      int local_experts);

/// Calls the host issues for one pass of an eager decoder-layer op outside the MoE block
/// (norms, linears, rotary, the fused attention core, the loss), by its forward op's `type`,
/// under CostProfile::moe_host_sync in a graph with MoE layers. 1 for a type the table does
/// not know (residual adds among them).
int layer_op_host_calls(const std::string& type, bool backward);

}  // namespace placer
