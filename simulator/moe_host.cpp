// The host side of eager MoE layers (CostProfile::moe_host_sync; docs/simulator.md, "MoE host
// issue and the token-count sync"). A graph's MoE op stands for several kernels that the
// framework's host issues one by one, and Megatron-core's token dispatchers copy the
// per-expert token counts to the host and synchronise once per MoE layer forward, so the host
// cannot run ahead of the device across MoE layers.

#include <algorithm>
#include "simulator/moe_host.h"
#include "simulator/simulator_impl.h"
#include "src/graph/moe_attrs.h"

namespace placer {

namespace {

// Kernels one eager Megatron-core MoE op launches (Transformer Engine modules, moe_utils'
// fused permute, NCCL collectives and device-to-host copies counted as launches), forward
// and backward, plus those per local expert (Transformer Engine's GroupedLinear issues one
// GEMM per local expert in the forward, a data and a weight gradient GEMM per expert in the
// backward). Counted from megatron/core/transformer/moe/: router.py (TopKRouter.gating: the
// input and weight cast to the router dtype and the gate GEMM; the score function, top-k and
// the scatter into the routing map; the load-balancing loss of
// switch_load_balancing_loss_func with its routing scores), token_dispatcher.py
// (MoEAlltoAllTokenDispatcher.preprocess: the routing map's sums, the count all-gather, the
// local slice and its sums, the device-to-host copies of the splits and the tokens per
// expert; permute; the token and probability all-to-alls; sort_chunks_by_idxs when a rank
// holds more than one expert), experts.py (TEGroupedMLP: two grouped linears, the activation
// and the probability weighting). The shared experts are one graph op per kernel already.
struct MoeKernels {
  const char* role;
  const char* type;  // op type within the role; nullptr = any
  int forward, backward;
  int forward_per_expert, backward_per_expert;
  int sort;  // extra kernels per pass with more than one local expert (sort_chunks_by_idxs)
};

constexpr MoeKernels kMoeKernels[] = {
    {kMoeRouter, "MatMul", 3, 4, 0, 0, 0},
    {kMoeRouter, nullptr, 5, 3, 0, 0, 0},  // score function, top-k, routing map
    {kMoeAuxLoss, nullptr, 8, 4, 0, 0, 0},
    {kMoeDispatch, nullptr, 12, 4, 0, 0, 2},
    {kMoeExpertUp, nullptr, 1, 1, 1, 2, 0},
    {kMoeExpertAct, nullptr, 2, 2, 0, 0, 0},
    {kMoeExpertDown, nullptr, 1, 1, 1, 2, 0},
    {kMoeCombine, nullptr, 3, 3, 0, 0, 2},
    {kMoeShared, nullptr, 1, 1, 0, 0, 0},
};

}  // namespace

int moe_op_kernels(const std::string& role, const std::string& type, bool backward,
                   int local_experts) {
  for (const MoeKernels& k : kMoeKernels) {
    if (role != k.role || (k.type != nullptr && type != k.type)) continue;
    const int sort = local_experts > 1 ? k.sort : 0;
    return backward ? k.backward + k.backward_per_expert * local_experts + sort
                    : k.forward + k.forward_per_expert * local_experts + sort;
  }
  return 1;
}

// Under moe_host_sync: each MoE forward / backward op's dispatch becomes its kernels times its
// category's dispatch, and every forward dispatch op makes its host wait for its end.
void Simulator::Impl::prepare_moe_host() {
  op_host_sync.assign(n_ops, 0);
  if (!cost.profile().moe_host_sync) return;
  const int ep = ep_on ? ep_degree : 1;
  for (OpId o = 0; o < n_ops; ++o) {
    const int l = op_moe_layer[o];
    const Phase ph = op_phase[o];
    if (l < 0 || (ph != Phase::kForward && ph != Phase::kBackward)) continue;
    const Op& fo = g.op(ph == Phase::kForward ? o : g.op(o).forward_op);
    const std::string* role = find_op_attr(fo, kMoeRoleAttr);
    const int local = std::max(1, moe_experts[size_t(l)] / ep);
    op_disp[o] *= moe_op_kernels(*role, fo.type, ph == Phase::kBackward, local);
    op_host_sync[o] = ph == Phase::kForward && *role == kMoeDispatch;
  }
}

// The host of each of `o`'s devices waits until `o`'s instance ends (it reads the counts).
void Simulator::Impl::host_waits_for(OpId o, double end, const int* devs, int n) {
  if (!op_host_sync[o]) return;
  for (int k = 0; k < n; ++k) host_issued[devs[k]] = std::max(host_issued[devs[k]], end);
}

}  // namespace placer
