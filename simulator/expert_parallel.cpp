// Expert parallelism (Simulator::Impl::prepare_expert_parallel; docs/parallelism.md, "Expert
// parallelism"). The simulated timeline holds one rank of each stage; under expert
// parallelism the ranks differ in their routed tokens, and the all-to-all of every dispatch
// and combine makes each MoE layer wait for the slowest of them. So the expert ops of the
// simulated rank run the slowest EP rank's tokens, dispatch and combine end with an
// all-to-all over the EP group, and each rank holds only its experts' weights, their
// gradients and, under ZeRO / the distributed optimizer, 1 / (expert data-parallel) of their
// optimizer state.
//
// Ranks: the devices of a pipeline stage in Megatron's order (tensor-parallel ranks
// contiguous), or the data-parallel replicas of the op's device without a pipeline. As
// Megatron-core's expert grid (order tp-ep-dp with tp = ETP), rank i of that list is ETP
// rank i % etp of EP rank (i / etp) % ep of expert-data-parallel rank i / (etp * ep).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "simulator/simulator_impl.h"
#include "src/graph/moe_attrs.h"
#include "src/util/error.h"

namespace placer {

namespace {

enum MoeRole : int8_t {
  kNoRole = -1,
  kRouter,
  kAuxLoss,
  kDispatch,
  kUp,
  kAct,
  kDown,
  kCombine,
  kShared
};
// Attribute values in MoeRole order.
constexpr const char* kRoleNames[] = {kMoeRouter,    kMoeAuxLoss,    kMoeDispatch, kMoeExpertUp,
                                      kMoeExpertAct, kMoeExpertDown, kMoeCombine,  kMoeShared};

bool is_expert(int8_t role) { return role == kUp || role == kAct || role == kDown; }

uint64_t scaled(uint64_t bytes, double factor) {
  return static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) * factor));
}

}  // namespace

void Simulator::Impl::index_moe_ops() {
  op_moe_role.assign(n_ops, kNoRole);
  op_moe_layer.assign(n_ops, -1);
  moe_experts.clear();
  moe_padded.clear();
  for (const MoeLayerInfo& layer : moe_layers(g)) {
    moe_experts.push_back(std::max(1, layer.experts));
    moe_padded.push_back(layer.padded ? 1 : 0);
  }
  for (OpId o = 0; o < n_ops; ++o) {
    const Op& op = g.op(o);
    const OpId f = op.phase == Phase::kForward ? o : op.forward_op;
    if (f == kNoOp) continue;
    const Op& fo = g.op(f);
    const std::string* role = find_op_attr(fo, kMoeRoleAttr);
    if (role == nullptr) continue;
    const auto it = std::find(std::begin(kRoleNames), std::end(kRoleNames), *role);
    if (it == std::end(kRoleNames)) {
      throw ValidationError("simulator: op '" + fo.name + "': unknown MoE role '" + *role + "'");
    }
    op_moe_role[o] = static_cast<int8_t>(it - std::begin(kRoleNames));
    op_moe_layer[o] = op_attr_int(fo, kMoeLayerAttr, static_cast<int64_t>(moe_experts.size()));
  }
}

// Per MoE layer: which EP ranks hold each expert (the plan's map, else expert e on rank
// e * ep / E: contiguous blocks), the tokens each rank computes (a replicated expert's
// tokens split evenly over its copies) and the most experts one rank holds.
void Simulator::Impl::expert_layer_loads(const Plan& p) {
  const ExpertParallelConfig& cfg = p.expert_parallel;
  const size_t layers = moe_experts.size();
  const int ep = ep_degree;
  if (!cfg.layers.empty() && cfg.layers.size() != layers) {
    throw ValidationError("plan: expert_parallel maps " + std::to_string(cfg.layers.size()) +
                          " MoE layers, the graph has " + std::to_string(layers));
  }
  const RoutingStats* rs =
      opts.routing != nullptr && !opts.routing->empty() ? opts.routing : nullptr;
  if (rs != nullptr && rs->share.size() != layers) {
    throw ValidationError("routing statistics: " + std::to_string(rs->share.size()) +
                          " MoE layers, the graph has " + std::to_string(layers));
  }
  moe_factor.assign(layers, 1.0);
  moe_keep.assign(layers, 1.0);
  expert_load.assign(layers, {});
  for (size_t l = 0; l < layers; ++l) {
    const int E = moe_experts[l];
    const std::string where = "MoE layer " + std::to_string(l);
    if (rs != nullptr && rs->share[l].size() != static_cast<size_t>(E)) {
      throw ValidationError("routing statistics: " + where + " has " +
                            std::to_string(rs->share[l].size()) + " experts, the graph " +
                            std::to_string(E));
    }
    if (!cfg.layers.empty() && cfg.layers[l].replicas.size() != static_cast<size_t>(E)) {
      throw ValidationError("plan: expert_parallel: " + where + " maps " +
                            std::to_string(cfg.layers[l].replicas.size()) +
                            " experts, the graph has " + std::to_string(E));
    }
    double total = 0;
    for (int e = 0; e < E; ++e) total += rs != nullptr ? rs->share[l][size_t(e)] : 1.0;
    if (!(total > 0) || !std::isfinite(total)) {
      throw ValidationError("routing statistics: " + where + ": shares must be >= 0 and sum > 0");
    }
    std::vector<double> load(size_t(ep), 0.0);
    std::vector<int> held(size_t(ep), 0);
    for (int e = 0; e < E; ++e) {
      const double share = (rs != nullptr ? rs->share[l][size_t(e)] : 1.0) / total;
      const std::vector<int> block{static_cast<int>(int64_t(e) * ep / E)};
      const std::vector<int>& reps = cfg.layers.empty() ? block : cfg.layers[l].replicas[size_t(e)];
      if (reps.empty() || share < 0) {
        throw ValidationError("plan: expert_parallel: " + where + " expert " + std::to_string(e) +
                              (reps.empty() ? " has no rank" : " has a negative share"));
      }
      for (int r : reps) {
        if (r < 0 || r >= ep) {
          throw ValidationError("plan: expert_parallel: " + where + " expert " + std::to_string(e) +
                                ": rank " + std::to_string(r) + " is outside [0, " +
                                std::to_string(ep) + ")");
        }
        load[size_t(r)] += share / static_cast<double>(reps.size());
        ++held[size_t(r)];
      }
    }
    // Drop-and-pad: every expert computes its full capacity whatever it is routed.
    moe_factor[l] = moe_padded[l] ? 1.0 : ep * *std::max_element(load.begin(), load.end());
    moe_keep[l] = static_cast<double>(*std::max_element(held.begin(), held.end())) / E;
    for (double& x : load) x *= ep;
    expert_load[l] = std::move(load);
  }
}

std::vector<int> Simulator::Impl::expert_ranks(OpId o) const {
  std::vector<int> ranks;
  if (pipelined) {
    ranks = plan->pipeline.stages[size_t(op_stage[o])].devices;
  } else {
    for (int r = 0; r < R; ++r) ranks.push_back(plan->replica_device(op_dev[o], r, n_dev));
  }
  const size_t grid = size_t(ep_degree) * size_t(etp_degree);
  if (ranks.size() % grid != 0) {
    throw ValidationError("plan: expert_parallel.degree (" + std::to_string(ep_degree) +
                          ") x tensor_parallel (" + std::to_string(etp_degree) +
                          ") must divide the " + std::to_string(ranks.size()) +
                          (pipelined ? " devices of pipeline stage " + std::to_string(op_stage[o])
                                     : std::string(" data-parallel replicas")) +
                          " (MoE op '" + g.op(o).name + "')");
  }
  return ranks;
}

void Simulator::Impl::set_op_collective(OpId o, CollectiveKind kind, const std::vector<int>& devs,
                                        uint64_t bytes) {
  if (devs.size() < 2) return;
  const uint32_t grp = group_index(devs);
  const double t = cost.group_collective_time(kind, groups[grp], bytes, SyncScheme::kAuto);
  if (op_coll[o] > 0) {  // the op's partition collective runs first: one reservation for both
    op_coll[o] += t;
    op_coll_bytes[o] += bytes;
    return;
  }
  op_group[o] = grp;
  op_coll[o] = t;
  op_coll_bytes[o] = bytes;
  op_coll_kind[o] = static_cast<uint8_t>(kind);
}

// The division of an expert op's work beyond its own partition. Without sequence parallelism
// every TP rank holds its group's tokens and each ETP rank computes 1/etp of every expert's
// width: etp. Under it the op is already split on the sequence over the tp ranks, and with
// ETP the ETP group gathers its ranks' tokens before the 1/etp-wide GEMMs, so a rank does
// 1/max(tp, etp) of the group's expert work in all: max(etp, tp) / tp more.
double Simulator::Impl::expert_work_split(OpId o) const {
  const double sequence_split = std::round(1.0 / (op_bdiv[o] * op_frac[o]));
  return std::max(static_cast<double>(etp_degree), sequence_split) / sequence_split;
}

// A routed-expert op: forward and backward run the slowest EP rank's tokens (1 / etp of
// each expert's width); the optimizer updates the experts the rank holds. Its weights,
// gradients and optimizer state are those of the rank's experts, its activations those of
// the slowest rank's tokens. With ETP the down GEMM's partial outputs are all-reduced over
// the expert's ETP ranks (forward), as the up GEMM's input gradients (backward).
void Simulator::Impl::apply_expert_compute(OpId o, const Plan& p, const std::vector<int>& ranks) {
  const int l = op_moe_layer[o];
  const Phase ph = op_phase[o];
  const double keep = moe_keep[size_t(l)] / etp_degree;
  const uint32_t edp = static_cast<uint32_t>(ranks.size()) / uint32_t(ep_degree * etp_degree);
  const double frac =
      op_frac[o] * (ph == Phase::kOptimizer ? keep : moe_factor[size_t(l)] / expert_work_split(o));
  bool fp8 = false;
  const DType dt = run_dtype(o, p, &fp8);
  op_dur[o] = cost.op_time(g.op(o), op_bytes[o], op_dev[o], frac, dt) +
              (fp8 ? fp8_scaling_time(o, frac) : 0.0);
  op_expert_keep[o] = keep;
  op_expert_dp[o] = std::max<uint32_t>(edp, 1);
  if (ph == Phase::kOptimizer) return;
  uint64_t act = 0;
  for (uint32_t k = out_off[o]; k < out_off[o + 1]; ++k) {
    const TensorId t = out_t[k];
    if (t_grad[t]) {
      t_sync_bytes[t] = scaled(t_sync_bytes[t], keep);
      t_bytes[t] = zero_stage >= 2 ? ceil_div(t_sync_bytes[t], op_expert_dp[o]) : t_sync_bytes[t];
    } else {
      t_bytes[t] = scaled(t_bytes[t], moe_factor[size_t(l)]);
      act += t_bytes[t];
    }
  }
  const int8_t role = op_moe_role[o];
  if (etp_degree > 1 &&
      ((role == kDown && ph == Phase::kForward) || (role == kUp && ph == Phase::kBackward))) {
    set_op_collective(o, CollectiveKind::kAllReduce,
                      std::vector<int>(ranks.begin(), ranks.begin() + etp_degree), act);
  }
}

void Simulator::Impl::apply_expert_op(OpId o, const Plan& p) {
  const int8_t role = op_moe_role[o];
  if (role != kDispatch && role != kCombine && !is_expert(role)) return;
  const std::vector<int> ranks = expert_ranks(o);
  if (is_expert(role)) return apply_expert_compute(o, p, ranks);
  if (op_phase[o] == Phase::kOptimizer) return;
  // Dispatch and combine (and their backward ops, which move the gradients the other way)
  // end with an all-to-all among the EP ranks of the simulated rank's expert grid.
  std::vector<int> group;
  for (int e = 0; e < ep_degree; ++e) group.push_back(ranks[size_t(e) * size_t(etp_degree)]);
  set_op_collective(o, CollectiveKind::kAllToAll, group, moe_a2a_bytes[size_t(op_moe_layer[o])]);
}

// The simulated rank's expert-data-parallel copies: the first rank of every etp x ep block
// of its expert grid (tp x cp x dp / (ep x etp) ranks), with their pipeline replicas.
std::vector<int> Simulator::Impl::expert_data_parallel_group(OpId o, const Plan& p) const {
  const std::vector<int> ranks = expert_ranks(o);
  std::vector<int> devs;
  for (size_t k = 0; k < ranks.size(); k += size_t(ep_degree) * size_t(etp_degree)) {
    for (int r = 0; r < (pipelined ? R : 1); ++r)
      devs.push_back(pipelined ? p.replica_device(ranks[k], r, n_dev) : ranks[k]);
  }
  std::sort(devs.begin(), devs.end());
  devs.erase(std::unique(devs.begin(), devs.end()), devs.end());
  return devs;
}

// As Megatron-core, the routed experts' gradients (the rank's experts, 1 / etp of each) are
// all-reduced over the expert-data-parallel group, the ranks that hold the same experts,
// rather than over the data-parallel group of the stage's other gradients.
void Simulator::Impl::prepare_expert_gradient_syncs(const Plan& p) {
  if (!ep_on) return;
  std::vector<std::pair<std::vector<int>, int32_t>> made;  // EDP group -> its sync
  for (TensorId t = 0; t < n_tensors; ++t) {
    if (!t_grad[t] || t_producer[t] == kNoOp || !is_expert(op_moe_role[t_producer[t]])) continue;
    if (t_sync[t] >= 0) --syncs[size_t(t_sync[t])].remaining;
    t_sync[t] = -1;
    std::vector<int> devs = expert_data_parallel_group(t_producer[t], p);
    if (devs.size() < 2) continue;
    auto it =
        std::find_if(made.begin(), made.end(), [&](const auto& m) { return m.first == devs; });
    if (it == made.end()) {
      Sync s{group_index(devs), 0, 0, kNoTensor, kNoTensor};
      syncs.push_back(s);
      made.emplace_back(std::move(devs), static_cast<int32_t>(syncs.size() - 1));
      it = made.end() - 1;
    }
    t_sync[t] = it->second;
    ++syncs[size_t(it->second)].remaining;
  }
}

void Simulator::Impl::prepare_expert_parallel(const Plan& p) {
  const ExpertParallelConfig& cfg = p.expert_parallel;
  ep_on = cfg.enabled() && !moe_experts.empty();
  expert_load.clear();
  if (!ep_on) return;
  ep_degree = std::max(1, cfg.degree);
  etp_degree = std::max(1, cfg.tensor_parallel);
  expert_layer_loads(p);
  op_expert_keep.assign(n_ops, 1.0);
  op_expert_dp.assign(n_ops, 1);
  // One dispatch's bytes: the permuted tokens of one micro-batch on this rank (its first
  // output); the rank that receives the most gets moe_factor times an even share.
  moe_a2a_bytes.assign(moe_experts.size(), 0);
  for (OpId o = 0; o < n_ops; ++o) {
    if (op_moe_role[o] != kDispatch || op_phase[o] != Phase::kForward) continue;
    const size_t l = size_t(op_moe_layer[o]);
    if (out_off[o + 1] > out_off[o])
      moe_a2a_bytes[l] = scaled(t_bytes[out_t[out_off[o]]], moe_factor[l]);
  }
  for (OpId o = 0; o < n_ops; ++o) {
    if (op_moe_role[o] != kNoRole) apply_expert_op(o, p);
  }
}

}  // namespace placer
