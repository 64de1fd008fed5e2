// The host side of eager MoE layers (CostProfile::moe_host_sync; docs/simulator.md, "MoE host
// issue and the token-count sync"). A graph's MoE op stands for several calls that the
// framework's host issues one by one, and Megatron-core's token dispatchers copy the
// per-expert token counts to the host and synchronise once per MoE layer forward, so the host
// cannot run ahead of the device across MoE layers.

#include "simulator/moe_host.h"

#include <algorithm>

#include "simulator/simulator_impl.h"
#include "src/graph/moe_attrs.h"

namespace placer {

namespace {

// Host-issued calls of one eager Megatron-core MoE op, forward and backward: each PyTorch or
// Transformer Engine call from Python, NCCL collective and device-to-host copy counts once,
// the unit the profile's per-op `dispatch` was measured in (an eager PyTorch op). Counted from
// megatron/core/transformer/moe/: router.py (TopKRouter.gating: the input and weight cast to
// the router dtype and the gate GEMM; the score function, top-k and the scatter into the
// routing map; the load-balancing loss of switch_load_balancing_loss_func with its routing
// scores), token_dispatcher.py (MoEAlltoAllTokenDispatcher.preprocess: the routing map's
// sums, the count all-gather, the local slice and its sums, the device-to-host copies of the
// splits and the tokens per expert; permute; the token and probability all-to-alls;
// sort_chunks_by_idxs when a rank holds more than one expert), experts.py (TEGroupedMLP: two
// grouped linears, the activation and the probability weighting). A grouped linear is one
// call from Python however many local experts it holds (Transformer Engine loops over the
// experts' GEMMs in C++): its split, GEMMs and (backward) weight-gradient GEMMs count as 2
// forward and 3 backward calls. The measured rows agree: their unexplained time does not
// grow with the local experts (docs/results.md, "MoE host issue"). The shared experts are one
// graph op per call already. gpt-oss's expert ops (experts.py, fused_bias_geglu.py): the GLU
// clamp is a chunk, two clamps, a concatenation and the offset tensor built from a Python
// float (a blocking host-to-device copy), backward two clamp gradients and a concatenation;
// fc2's bias (TEGroupedMLP._apply_bias) splits the rows and the probabilities, multiplies and
// adds per local expert and concatenates, backward two products and two reductions per
// expert, the splits' concatenations and the gradient hooks of each expert's two biases.
struct MoeCalls {
  const char* role;
  const char* type;  // op type within the role; nullptr = any
  int forward, backward;
  int sort;  // extra calls per pass with more than one local expert (sort_chunks_by_idxs)
  int expert_forward = 0, expert_backward = 0;  // calls per local expert
};

constexpr MoeCalls kMoeCalls[] = {
    {kMoeRouter, "MatMul", 3, 4, 0},
    {kMoeRouter, nullptr, 5, 3, 0},  // score function, top-k, routing map
    {kMoeAuxLoss, nullptr, 8, 4, 0},
    {kMoeDispatch, nullptr, 12, 4, 2},
    {kMoeExpertUp, nullptr, 2, 3, 0},
    {kMoeExpertAct, "GluClamp", 5, 3, 0},
    {kMoeExpertAct, nullptr, 2, 2, 0},
    {kMoeExpertDown, "ExpertBias", 3, 2, 0, 2, 6},
    {kMoeExpertDown, nullptr, 2, 3, 0},
    {kMoeCombine, nullptr, 3, 3, 2},
    {kMoeShared, nullptr, 1, 1, 0},
};

// Host-issued calls of the other ops of an eager Megatron-core decoder layer built from
// Transformer Engine modules (the same unit), by forward op type. Counted from
// megatron/core/transformer/transformer_layer.py, attention.py and TE's
// pytorch/module/layernorm_linear.py, linear.py and attention/dot_product_attention:
// - a norm: its module entry (the autograd Function, or TE's RMSNorm module) and the
//   rmsnorm kernel; backward the kernel and the autograd node. The input norm rides in
//   linear_qkv (TELayerNormColumnParallelLinear), whose norm and GEMM the graph holds as two
//   ops: a norm and a linear.
// - a linear: the GEMM and the output view; backward the data- and weight-gradient GEMMs
//   (the latter accumulating into main_grad) and the grad output's reshape. As the MoE
//   table's grouped linear.
// - rotary: the QKV view, split and query reshape of get_query_key_value_tensors, then the
//   fused RoPE of q and of k; backward the two RoPE gradients and the split's concatenation.
// - the fused attention core: the Megatron wrapper's format handling, the dropout RNG
//   tracker's state swap (get and set), the FusedAttnFunc call and the output view;
//   backward the fused backward and the gradients' two reshapes.
// - the loss: Megatron's vocab-parallel cross entropy (the max and its all-reduce, the
//   subtraction, the target mask and masked gather, the exp and sum and their all-reduce,
//   the log) and the loss mask's product and sums; backward the softmax, the one-hot
//   subtraction and the scaling.
// Residual adds (one fused bias-dropout-add script) and every op type not listed: 1.
struct LayerCalls {
  const char* type;
  int forward, backward;
};

constexpr LayerCalls kLayerCalls[] = {
    {"RMSNormalization", 2, 2}, {"LayerNormalization", 2, 2}, {"MatMul", 2, 3},
    {"RotaryEmbedding", 5, 3},  {"FlashAttention", 5, 3},     {"SoftmaxCrossEntropy", 18, 6},
};

// Forward ops after which the host waits for the device: the token dispatcher's count copy
// and the GLU clamp's offset tensor.
bool syncs_host(const std::string& role, const std::string& type) {
  return role == kMoeDispatch || (role == kMoeExpertAct && type == "GluClamp");
}

}  // namespace

int moe_op_host_calls(const std::string& role, const std::string& type, bool backward,
                      int local_experts) {
  for (const MoeCalls& k : kMoeCalls) {
    if (role != k.role || (k.type != nullptr && type != k.type)) continue;
    const int per_expert = backward ? k.expert_backward : k.expert_forward;
    return (backward ? k.backward : k.forward) + (local_experts > 1 ? k.sort : 0) +
           per_expert * local_experts;
  }
  return 1;
}

int layer_op_host_calls(const std::string& type, bool backward) {
  for (const LayerCalls& k : kLayerCalls) {
    if (type == k.type) return backward ? k.backward : k.forward;
  }
  return 1;
}

// Under moe_host_sync, in a graph with MoE layers: each forward / backward op's dispatch
// becomes its calls times its category's dispatch (MoE ops by role, the others by type; a
// backward op other than its forward op's gradient, such as a gradient sum, stays one call),
// and every forward op that syncs makes its host wait for its end.
void Simulator::Impl::prepare_moe_host() {
  op_host_sync.assign(n_ops, 0);
  if (!cost.profile().moe_host_sync || moe_experts.empty()) return;
  const int ep = ep_on ? ep_degree : 1;
  for (OpId o = 0; o < n_ops; ++o) {
    const int l = op_moe_layer[o];
    const Phase ph = op_phase[o];
    if (ph != Phase::kForward && ph != Phase::kBackward) continue;
    const Op& fo = g.op(ph == Phase::kForward ? o : g.op(o).forward_op);
    if (l < 0) {
      const bool own = ph == Phase::kForward || g.op(o).type == fo.type + "Grad";
      if (own) op_disp[o] *= layer_op_host_calls(fo.type, ph == Phase::kBackward);
      continue;
    }
    const std::string* role = find_op_attr(fo, kMoeRoleAttr);
    const int local = std::max(1, moe_experts[size_t(l)] / ep);
    op_disp[o] *= moe_op_host_calls(*role, fo.type, ph == Phase::kBackward, local);
    op_host_sync[o] = ph == Phase::kForward && syncs_host(*role, fo.type);
  }
}

// The host of each of `o`'s devices waits until `o`'s instance ends (it reads the counts),
// then works moe_sync_host_time before it can issue the next call: the device, drained by
// the sync, waits for all of it.
void Simulator::Impl::host_waits_for(OpId o, double end, const int* devs, int n) {
  if (!op_host_sync[o]) return;
  const double ready = end + cost.profile().moe_sync_host_time;
  for (int k = 0; k < n; ++k) host_issued[devs[k]] = std::max(host_issued[devs[k]], ready);
}

}  // namespace placer
