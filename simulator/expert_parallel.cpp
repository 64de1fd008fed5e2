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

#include "simulator/expert_dispatch.h"
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

}  // namespace

double routed_to_any(double q, int top_k, int experts) {
  double miss = 1.0;
  for (int i = 0; i < top_k && i < experts; ++i) {
    miss *= std::max(0.0, 1.0 - q * experts / static_cast<double>(experts - i));
  }
  return 1.0 - miss;
}

namespace {

uint64_t scaled(uint64_t bytes, double factor) {
  return static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) * factor));
}

}  // namespace

void Simulator::Impl::index_moe_ops() {
  op_moe_role.assign(n_ops, kNoRole);
  op_moe_layer.assign(n_ops, -1);
  moe_experts.clear();
  moe_topk.clear();
  moe_padded.clear();
  for (const MoeLayerInfo& layer : moe_layers(g)) {
    moe_experts.push_back(std::max(1, layer.experts));
    moe_topk.push_back(std::max(1, layer.top_k));
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

namespace {

// The map-aware all-to-all. Every EP rank dispatches n bytes (its routed tokens) with the
// layer's shares; a token for expert e goes to the copies of e on the sender's node when
// there are any (split evenly between them), else to all copies of e (split evenly): a
// replica keeps its node's tokens off the network. In units of n, per rank: what it
// computes (its load) and what it sends and receives within its node and across nodes.
struct ExpertFlow {
  std::vector<double> load, sent_intra, sent_inter, recv_intra, recv_inter;
  std::vector<int> node;  // node of each EP rank (0 .. nodes - 1)
  int nodes = 0;
  // to_rank[h][d]: the share of a routed token copy of a sender on node h that goes to rank d.
  std::vector<std::vector<double>> to_rank;

  explicit ExpertFlow(const std::vector<int>& node_of_rank)
      : load(node_of_rank.size(), 0.0),
        sent_intra(node_of_rank.size(), 0.0),
        sent_inter(node_of_rank.size(), 0.0),
        recv_intra(node_of_rank.size(), 0.0),
        recv_inter(node_of_rank.size(), 0.0),
        node(node_of_rank) {
    for (int h : node) nodes = std::max(nodes, h + 1);
    to_rank.assign(size_t(nodes), std::vector<double>(node.size(), 0.0));
  }

  // The tokens of one expert (share of every sender's n) to its copies `reps`.
  void route(double share, const std::vector<int>& reps) {
    std::vector<int> senders(size_t(nodes), 0);
    for (int h : node) ++senders[size_t(h)];
    std::vector<int> local;
    for (int h = 0; h < nodes; ++h) {
      local.clear();
      for (int d : reps) {
        if (node[size_t(d)] == h) local.push_back(d);
      }
      const std::vector<int>& targets = local.empty() ? reps : local;
      const double each = share / static_cast<double>(targets.size());
      const int count = senders[size_t(h)];
      for (int d : targets) {
        to_rank[size_t(h)][size_t(d)] += each;
        load[size_t(d)] += count * each;
        (node[size_t(d)] == h ? recv_intra : recv_inter)[size_t(d)] +=
            (node[size_t(d)] == h ? count - 1 : count) * each;
        for (size_t s = 0; s < node.size(); ++s) {
          if (node[s] != h || int(s) == d) continue;
          (node[size_t(d)] == h ? sent_intra : sent_inter)[s] += each;
        }
      }
    }
  }

  // The flex dispatcher (DeepEP / HybridEP) instead of the all-to-all: the traffic again,
  // per token. A token goes within its node once per other rank it has an expert on, to
  // another node once per node it has an expert on (to the GPU of the sender's local index
  // there), and that GPU forwards it over NVLink once per other rank of its node it has an
  // expert on. Which of the sender's k copies share a rank or node follows from the shares
  // (routed_to_any). Loads stay as routed.
  void deduplicate(int top_k, int experts) {
    for (auto* v : {&sent_intra, &sent_inter, &recv_intra, &recv_inter})
      std::fill(v->begin(), v->end(), 0.0);
    std::vector<int> ranks_on(size_t(nodes), 0);
    for (int h : node) ++ranks_on[size_t(h)];
    // What reaches each node from others, and what its relays forward, spread over its ranks.
    std::vector<double> node_in(size_t(nodes), 0.0), node_forwards(size_t(nodes), 0.0);
    const double per_copy = 1.0 / top_k;  // the units of n: k copies per token
    for (size_t s = 0; s < node.size(); ++s) {
      const std::vector<double>& q = to_rank[size_t(node[s])];
      std::vector<double> to_node(size_t(nodes), 0.0);
      for (size_t r = 0; r < node.size(); ++r) to_node[size_t(node[r])] += q[r];
      for (size_t r = 0; r < node.size(); ++r) {
        if (r == s) continue;
        const double p = routed_to_any(q[r], top_k, experts) * per_copy;
        if (node[r] == node[s]) {
          sent_intra[s] += p;
          recv_intra[r] += p;
          continue;
        }
        // Forwarded by the relay unless the relay is r itself (1 in ranks_on of the cases).
        const int there = ranks_on[size_t(node[r])];
        recv_intra[r] += p * (there - 1) / there;
        node_forwards[size_t(node[r])] += p * (there - 1) / there;
      }
      for (int d = 0; d < nodes; ++d) {
        if (d == node[s]) continue;
        const double p = routed_to_any(to_node[size_t(d)], top_k, experts) * per_copy;
        sent_inter[s] += p;
        node_in[size_t(d)] += p;
      }
    }
    for (size_t r = 0; r < node.size(); ++r) {
      const size_t h = size_t(node[r]);
      recv_inter[r] = node_in[h] / ranks_on[h];
      sent_intra[r] += node_forwards[h] / ranks_on[h];
    }
  }

  // {within a node, across nodes per rank, across nodes per node}: the most sent or received.
  std::array<double, 3> busiest() const {
    std::array<double, 3> out{0.0, 0.0, 0.0};
    std::vector<double> host_sent(size_t(nodes), 0.0), host_recv(size_t(nodes), 0.0);
    for (size_t r = 0; r < node.size(); ++r) {
      out[0] = std::max({out[0], sent_intra[r], recv_intra[r]});
      out[1] = std::max({out[1], sent_inter[r], recv_inter[r]});
      host_sent[size_t(node[r])] += sent_inter[r];
      host_recv[size_t(node[r])] += recv_inter[r];
    }
    for (int h = 0; h < nodes; ++h)
      out[2] = std::max({out[2], host_sent[size_t(h)], host_recv[size_t(h)]});
    return out;
  }
};

}  // namespace

// Per MoE layer: which EP ranks hold each expert (the plan's map, else expert e on rank
// e * ep / E: contiguous blocks), the tokens each rank computes and sends (ExpertFlow; on
// one node a replicated expert's tokens split evenly over its copies) and the most experts
// one rank holds.
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
  moe_a2a_frac.assign(layers, {0.0, 0.0, 0.0});
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
    ExpertFlow flow(rank_nodes(l));
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
        ++held[size_t(r)];
      }
      flow.route(share, reps);
    }
    // Drop-and-pad: every expert computes its full capacity whatever it is routed.
    moe_factor[l] = moe_padded[l] ? 1.0 : *std::max_element(flow.load.begin(), flow.load.end());
    moe_keep[l] = static_cast<double>(*std::max_element(held.begin(), held.end())) / E;
    if (cfg.dispatcher != ExpertDispatcher::kAllToAll) flow.deduplicate(moe_topk[l], E);
    moe_a2a_frac[l] = flow.busiest();
    expert_load[l] = std::move(flow.load);
  }
}

// The node (0, 1, ...) of each EP rank of layer l's group, in order of first appearance; all
// on node 0 when the layer has no dispatch op to take the group from.
std::vector<int> Simulator::Impl::rank_nodes(size_t l) const {
  std::vector<int> node(size_t(ep_degree), 0);
  const std::vector<int>& devs = moe_group[l];
  if (devs.size() != node.size()) return node;
  int nodes = 0;
  for (size_t r = 0; r < devs.size(); ++r) {
    size_t first = 0;
    while (cost.level(devs[first], devs[r]) == LinkLevel::kInterHost) ++first;
    node[r] = first == r ? nodes++ : node[first];
  }
  return node;
}

// One all-to-all of layer l: the busiest rank's bytes within its node and across nodes, each
// level over its links (they run at the same time: the slower sets the time), the off-node
// bytes of a whole node through one NIC under LinkSharing::kPerHost. Padded layers and
// measured all-to-all curves keep the collective's own time for the (even) bytes.
double Simulator::Impl::expert_all_to_all_time(size_t l, const CollectiveGroup& g,
                                               uint64_t bytes) const {
  const CostProfile& prof = cost.profile();
  if (moe_padded[l] || prof.curve(CollectiveKind::kAllToAll, LinkLevel::kIntraHost) ||
      prof.curve(CollectiveKind::kAllToAll, LinkLevel::kInterHost)) {
    return -1;
  }
  const double n = static_cast<double>(bytes);
  const std::array<double, 3>& f = moe_a2a_frac[l];
  if (g.hosts <= 1) return f[0] > 0 ? g.all_alpha + f[0] * n / g.all_beta : 0.0;
  const double intra = f[0] > 0 ? g.intra_alpha + f[0] * n / g.intra_beta : 0.0;
  const double off = g.inter_nic_shared ? f[2] : f[1];
  const double inter = off > 0 ? g.all_alpha + off * n / g.all_beta : 0.0;
  return std::max(intra, inter);
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
                                        uint64_t bytes, double time) {
  if (devs.size() < 2) return;
  const uint32_t grp = group_index(devs);
  const double t =
      time >= 0 ? time : cost.group_collective_time(kind, groups[grp], bytes, SyncScheme::kAuto);
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

std::vector<int> Simulator::Impl::expert_group(OpId o) const {
  const std::vector<int> ranks = expert_ranks(o);
  std::vector<int> group;
  for (int e = 0; e < ep_degree; ++e) group.push_back(ranks[size_t(e) * size_t(etp_degree)]);
  return group;
}

void Simulator::Impl::apply_expert_op(OpId o, const Plan& p) {
  const int8_t role = op_moe_role[o];
  if (role != kDispatch && role != kCombine && !is_expert(role)) return;
  if (is_expert(role)) return apply_expert_compute(o, p, expert_ranks(o));
  if (op_phase[o] == Phase::kOptimizer) return;
  // Dispatch and combine (and their backward ops, which move the gradients the other way)
  // end with an all-to-all among the EP ranks of the simulated rank's expert grid.
  const size_t l = size_t(op_moe_layer[o]);
  set_op_collective(o, CollectiveKind::kAllToAll, expert_group(o), moe_a2a_bytes[l],
                    moe_a2a_time[l]);
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
  // One dispatch's bytes: the permuted tokens of one micro-batch on this rank (its first
  // output), and the layer's EP group (that of its forward dispatch op).
  const size_t layers = moe_experts.size();
  std::vector<uint64_t> dispatch_bytes(layers, 0);
  moe_group.assign(layers, {});
  for (OpId o = 0; o < n_ops; ++o) {
    if (op_moe_role[o] != kDispatch || op_phase[o] != Phase::kForward) continue;
    const size_t l = size_t(op_moe_layer[o]);
    if (out_off[o + 1] > out_off[o]) dispatch_bytes[l] = t_bytes[out_t[out_off[o]]];
    if (moe_group[l].empty()) moe_group[l] = expert_group(o);
  }
  expert_layer_loads(p);
  op_expert_keep.assign(n_ops, 1.0);
  op_expert_dp.assign(n_ops, 1);
  // The bytes recorded per all-to-all: the rank that receives the most gets moe_factor times
  // an even share; its time follows the map (expert_all_to_all_time).
  moe_a2a_bytes.assign(layers, 0);
  moe_a2a_time.assign(layers, -1);
  for (size_t l = 0; l < layers; ++l) {
    moe_a2a_bytes[l] = scaled(dispatch_bytes[l], moe_factor[l]);
    if (moe_group[l].size() < 2) continue;
    const CollectiveGroup& g = groups[group_index(moe_group[l])];
    moe_a2a_time[l] = expert_all_to_all_time(l, g, dispatch_bytes[l]);
  }
  for (OpId o = 0; o < n_ops; ++o) {
    if (op_moe_role[o] != kNoRole) apply_expert_op(o, p);
  }
}

}  // namespace placer
