// Expert maps: the classical placers and the expert layer's step (src/plan/expert_balance.h).
#include "src/plan/expert_balance.h"

#include <algorithm>
#include <array>
#include <numeric>

#include "src/util/error.h"

namespace placer {

ExpertLayerMap default_expert_layer(int experts, int ranks) {
  ExpertLayerMap m;
  const int per_rank = std::max(1, experts / std::max(ranks, 1));
  for (int e = 0; e < experts; ++e) m.replicas.push_back({std::min(e / per_rank, ranks - 1)});
  return m;
}

ExpertLayerMap round_robin_layer(int experts, int ranks) {
  // Slot s holds expert s mod experts on rank s mod ranks: with fewer experts than ranks
  // the experts are copied round the ranks until every rank holds one.
  ExpertLayerMap m;
  m.replicas.resize(experts);
  for (int s = 0; s < std::max(experts, ranks); ++s) m.replicas[s % experts].push_back(s % ranks);
  return m;
}

namespace {

/// Indices of `weights` sorted heaviest first (ties: lower index first).
std::vector<int> heaviest_first(const std::vector<double>& weights) {
  std::vector<int> order(weights.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return weights[a] > weights[b]; });
  return order;
}

/// EPLB's balanced packing: items heaviest first, each to the least loaded bin that has a
/// free slot (and, with `distinct`, does not hold the same key yet, when such a bin exists);
/// returns the bin of every item.
std::vector<int> balanced_packing(const std::vector<double>& weights, int bins, int slots_per_bin,
                                  const std::vector<int>* distinct = nullptr) {
  std::vector<double> load(bins, 0.0);
  std::vector<int> used(bins, 0), bin_of(weights.size(), -1);
  std::vector<std::vector<int>> keys(bins);
  for (int item : heaviest_first(weights)) {
    int best = -1;
    for (int pass = 0; pass < 2 && best < 0; ++pass) {
      for (int b = 0; b < bins; ++b) {
        if (used[b] >= slots_per_bin) continue;
        const bool clash = distinct && pass == 0 &&
                           std::count(keys[b].begin(), keys[b].end(), (*distinct)[item]) > 0;
        if (!clash && (best < 0 || load[b] < load[best])) best = b;
      }
    }
    bin_of[item] = best;
    load[best] += weights[item];
    ++used[best];
    if (distinct) keys[best].push_back((*distinct)[item]);
  }
  return bin_of;
}

/// EPLB's replication of `experts` (loads `load`) into `slots` copies: each extra copy goes to
/// the expert with the largest load per copy (ties: lower index) among those with fewer than
/// `max_copies`. Returns the copy count of each.
std::vector<int> replicate(const std::vector<int>& experts, const std::vector<double>& load,
                           int slots, int max_copies) {
  std::vector<int> copies(experts.size(), 1);
  for (int added = int(experts.size()); added < slots; ++added) {
    int best = -1;
    for (size_t i = 0; i < experts.size(); ++i) {
      if (copies[i] >= max_copies) continue;
      if (best < 0 || load[experts[i]] / copies[i] > load[experts[best]] / copies[best])
        best = int(i);
    }
    if (best < 0) break;  // every expert already on every rank
    ++copies[best];
  }
  return copies;
}

/// Replicates `experts` into the slots of `ranks` (consecutive rank ids from `first_rank`) and
/// packs the copies onto them; writes the copies' ranks into `map`.
void place_on_ranks(const std::vector<int>& experts, const std::vector<double>& load,
                    int first_rank, int ranks, int slots_per_rank, ExpertLayerMap* map) {
  const std::vector<int> copies = replicate(experts, load, ranks * slots_per_rank, ranks);
  std::vector<double> weight;
  std::vector<int> expert_of;
  for (size_t i = 0; i < experts.size(); ++i) {
    for (int c = 0; c < copies[i]; ++c) {
      weight.push_back(load[experts[i]] / copies[i]);
      expert_of.push_back(experts[i]);
    }
  }
  const std::vector<int> bin = balanced_packing(weight, ranks, slots_per_rank, &expert_of);
  for (size_t k = 0; k < weight.size(); ++k) {
    map->replicas[expert_of[k]].push_back(first_rank + bin[k]);
  }
}

}  // namespace

ExpertLayerMap eplb_layer(const std::vector<double>& load, const ExpertTopology& topo,
                          const EplbOptions& o) {
  const int experts = int(load.size());
  const int slots = experts + o.redundant;
  if (o.redundant < 0 || slots % topo.ranks != 0) {
    throw ValidationError("eplb: experts + redundant (" + std::to_string(slots) +
                          ") must be a multiple of the expert-parallel ranks (" +
                          std::to_string(topo.ranks) + ")");
  }
  const int per_rank = slots / topo.ranks;
  const int nodes = topo.nodes();
  const int groups = o.groups > 0 ? o.groups : nodes;
  ExpertLayerMap map;
  map.replicas.resize(experts);
  const bool hierarchical = topo.ranks % topo.ranks_per_node == 0 && groups % nodes == 0 &&
                            experts % groups == 0 && nodes > 1;
  if (!hierarchical) {
    std::vector<int> all(experts);
    std::iota(all.begin(), all.end(), 0);
    place_on_ranks(all, load, 0, topo.ranks, per_rank, &map);
  } else {
    const int per_group = experts / groups;
    std::vector<double> group_load(groups, 0.0);
    for (int e = 0; e < experts; ++e) group_load[e / per_group] += load[e];
    const std::vector<int> node_of_group = balanced_packing(group_load, nodes, groups / nodes);
    for (int n = 0; n < nodes; ++n) {
      std::vector<int> mine;
      for (int e = 0; e < experts; ++e) {
        if (node_of_group[e / per_group] == n) mine.push_back(e);
      }
      place_on_ranks(mine, load, n * topo.ranks_per_node, topo.ranks_per_node, per_rank, &map);
    }
  }
  for (std::vector<int>& r : map.replicas) std::sort(r.begin(), r.end());
  return map;
}

void validate_expert_layer(const ExpertLayerMap& map, int experts, int ranks) {
  if (int(map.replicas.size()) != experts) {
    throw ValidationError("expert map: " + std::to_string(map.replicas.size()) +
                          " experts, the layer has " + std::to_string(experts));
  }
  for (int e = 0; e < experts; ++e) {
    std::vector<int> r = map.replicas[e];
    std::sort(r.begin(), r.end());
    const bool ranks_ok = !r.empty() && r.front() >= 0 && r.back() < ranks;
    if (!ranks_ok || std::adjacent_find(r.begin(), r.end()) != r.end()) {
      throw ValidationError("expert map: expert " + std::to_string(e) +
                            " needs 1 or more copies on distinct ranks in [0, " +
                            std::to_string(ranks) + ")");
    }
  }
}

namespace {

/// flow[s][d]: assignments rank s sends to rank d (local copies first, see the header).
std::vector<std::vector<double>> token_flow(const std::vector<double>& share,
                                            const ExpertLayerMap& map, const ExpertTopology& topo,
                                            double assignments) {
  const int R = topo.ranks;
  std::vector<std::vector<double>> flow(R, std::vector<double>(R, 0.0));
  std::vector<int> local;
  for (int s = 0; s < R; ++s) {
    const double from_s = assignments / R;
    for (size_t e = 0; e < share.size(); ++e) {
      const std::vector<int>& copies = map.replicas[e];
      local.clear();
      for (int d : copies) {
        if (topo.node_of(d) == topo.node_of(s)) local.push_back(d);
      }
      const std::vector<int>& targets = local.empty() ? copies : local;
      const double each = from_s * share[e] / double(targets.size());
      for (int d : targets) flow[s][d] += each;
    }
  }
  return flow;
}

}  // namespace

ExpertLayerStep expert_layer_step(const std::vector<double>& share, const ExpertLayerMap& map,
                                  const ExpertTopology& topo, const ExpertStepCost& cost) {
  const int R = topo.ranks;
  const std::vector<std::vector<double>> flow = token_flow(share, map, topo, cost.assignments);
  ExpertLayerStep out;
  out.rank_load.assign(R, 0.0);
  // Per rank and link level (0 intra-node, 1 inter-node): assignments sent and received.
  std::vector<std::array<double, 2>> sent(R, {0.0, 0.0}), received(R, {0.0, 0.0});
  for (int s = 0; s < R; ++s) {
    for (int d = 0; d < R; ++d) {
      out.rank_load[d] += flow[s][d];
      if (s == d) continue;
      const int level = topo.node_of(s) == topo.node_of(d) ? 0 : 1;
      sent[s][level] += flow[s][d];
      received[d][level] += flow[s][d];
    }
  }
  double slowest = 0;
  for (int r = 0; r < R; ++r) {
    out.compute = std::max(out.compute, out.rank_load[r] * cost.seconds_per_assignment);
    const double intra = std::max(sent[r][0], received[r][0]) * cost.bytes_per_assignment;
    const double inter = std::max(sent[r][1], received[r][1]) * cost.bytes_per_assignment;
    const double t = std::max(intra > 0 ? intra / cost.intra_bandwidth : 0.0,
                              inter > 0 ? inter / cost.inter_bandwidth : 0.0);
    slowest = std::max(slowest, t);
  }
  out.all_to_all = cost.latency + slowest;
  out.total = 3 * out.compute + 4 * out.all_to_all;
  return out;
}

double expert_step(const RoutingStats& routing, const std::vector<ExpertLayerMap>& maps,
                   const ExpertTopology& topo, const ExpertStepCost& cost) {
  double total = 0;
  for (size_t l = 0; l < routing.share.size(); ++l) {
    const std::vector<double>& share = routing.share[l];
    const ExpertLayerMap map =
        l < maps.size() ? maps[l] : default_expert_layer(int(share.size()), topo.ranks);
    total += expert_layer_step(share, map, topo, cost).total;
  }
  return total;
}

double expert_step_bound(const RoutingStats& routing, const ExpertTopology& topo,
                         const ExpertStepCost& cost, int slots_per_rank) {
  const double per_rank = cost.assignments / topo.ranks;
  double total = 0;
  for (const std::vector<double>& row : routing.share) {
    std::vector<double> share = row;
    const double sum = std::accumulate(share.begin(), share.end(), 0.0);
    std::sort(share.begin(), share.end());  // lightest first
    const size_t held = size_t(topo.ranks_per_node) * size_t(slots_per_rank);
    double off_node = 0;
    for (size_t e = 0; topo.nodes() > 1 && e + held < share.size(); ++e) off_node += share[e] / sum;
    const double inter = per_rank * off_node * cost.bytes_per_assignment / cost.inter_bandwidth;
    total += 3 * per_rank * cost.seconds_per_assignment + 4 * (cost.latency + inter);
  }
  return total;
}

}  // namespace placer
