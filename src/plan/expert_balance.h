#pragma once
// Expert maps of mixture-of-experts layers (which expert-parallel rank holds which expert and
// which hot experts get replicas, moe_layout.h ExpertLayerMap), the classical placers that
// make them, and the expert layer's step under a map (docs/expert_placement.md).
//
// Placers:
//   default_expert_layer  expert e on rank e / (experts / ranks), no replicas (Megatron-core's
//                         layout, what an empty map means)
//   round_robin_layer     expert e on rank e mod ranks (copies fill the ranks when the
//                         experts are fewer)
//   eplb_layer            DeepSeek's Expert Parallelism Load Balancer (EPLB, github.com/
//                         deepseek-ai/EPLB, re-implemented from its README): hierarchical when
//                         the node count divides the group count (expert groups packed onto
//                         nodes balanced, then within each node the heaviest expert by load per
//                         copy replicated until the node's slots are full, then the copies
//                         packed onto the node's ranks balanced, heaviest first, each to the
//                         least loaded rank with a free slot); otherwise the same replication
//                         and packing over all ranks at once (EPLB's global policy)
//
// The step model (expert_layer_step), documented in docs/expert_placement.md: each rank routes
// assignments / ranks token assignments with the layer's shares; a token for expert e goes
// to the copies of e on its own node when there are any (split evenly), else to all copies;
// a rank's load is the assignments it receives; the layer's time is 3 x the slowest rank's
// expert compute (forward + backward) plus 4 all-to-alls (dispatch and combine, forward and
// backward), each latency + the slowest rank's max(sent, received) bytes per link level over
// that level's bandwidth (intra-node and inter-node links run in parallel).

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "src/graph/routing_stats.h"
#include "src/plan/moe_layout.h"

namespace placer {

/// The expert-parallel ranks of one MoE layer: rank r is on node r / ranks_per_node.
struct ExpertTopology {
  int ranks = 1;
  int ranks_per_node = 1;
  int nodes() const { return (ranks + ranks_per_node - 1) / ranks_per_node; }
  int node_of(int rank) const { return rank / ranks_per_node; }
};

ExpertLayerMap default_expert_layer(int experts, int ranks);
ExpertLayerMap round_robin_layer(int experts, int ranks);

struct EplbOptions {
  int redundant = 0;  ///< extra copies per layer; (experts + redundant) % ranks must be 0
  int groups = 0;     ///< expert groups (contiguous blocks of experts); 0 = one per node
};

/// EPLB's map of one layer with expert loads `load` (any scale). ValidationError when the
/// slots do not divide evenly over the ranks.
ExpertLayerMap eplb_layer(const std::vector<double>& load, const ExpertTopology& topo,
                          const EplbOptions& o);

/// The layer's costs, per token assignment (one token routed to one expert).
struct ExpertStepCost {
  double assignments = 0;             ///< token assignments per step in the layer (all ranks)
  double seconds_per_assignment = 0;  ///< expert compute of one assignment (forward)
  double bytes_per_assignment = 0;    ///< bytes one assignment moves in an all-to-all
  double intra_bandwidth = 0;         ///< B/s per rank within a node
  double inter_bandwidth = 0;         ///< B/s per rank across nodes
  double latency = 0;                 ///< s per all-to-all
};

struct ExpertLayerStep {
  std::vector<double> rank_load;  ///< assignments each rank computes
  double compute = 0;             ///< slowest rank's forward expert compute, s
  double all_to_all = 0;          ///< one all-to-all, s
  double total = 0;               ///< 3 x compute + 4 x all_to_all
};

ExpertLayerStep expert_layer_step(const std::vector<double>& share, const ExpertLayerMap& map,
                                  const ExpertTopology& topo, const ExpertStepCost& cost);
/// The sum of the layers' steps (an empty `maps` is the default layout everywhere).
double expert_step(const RoutingStats& routing, const std::vector<ExpertLayerMap>& maps,
                   const ExpertTopology& topo, const ExpertStepCost& cost);

/// A lower bound on expert_step(routing, maps, topo, cost) over every map that holds
/// `slots_per_rank` copies on each rank: per layer, 3 x the compute of an even share (each
/// rank assignments / ranks) + 4 x (latency + the inter-node time of the tokens a rank must
/// send off its node: a node holds at most ranks_per_node x slots_per_rank distinct experts,
/// at best the heaviest, so each rank's tokens for the others cross).
double expert_step_bound(const RoutingStats& routing, const ExpertTopology& topo,
                         const ExpertStepCost& cost, int slots_per_rank);

/// ValidationError unless every expert has 1 .. ranks copies on distinct ranks in [0, ranks).
void validate_expert_layer(const ExpertLayerMap& map, int experts, int ranks);

}  // namespace placer
