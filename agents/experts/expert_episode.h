#pragma once
// The sequential decision process of the learned expert placer (expert-rl,
// docs/expert_placement.md "expert-rl"). Torch-free.
//
// One episode makes the map of one MoE layer in two phases:
//   replicas   (only when the episode chooses the copy counts) every expert starts with one
//              copy and each redundant slot goes, one step at a time, to one expert with
//              fewer copies than ranks; the observation is one row of kReplicaFeatures per
//              expert and a mask over the experts;
//   placement  the copies go one at a time, heaviest first (load / copies), each to one EP
//              rank that has a free slot and holds no copy of the same expert yet; the
//              observation is one row of kRankFeatures per rank and a mask over the ranks.
// Without the replica phase the copy counts are given (EPLB's: its replication of the
// heaviest experts by load per copy, eplb_copies). The layer's experts are described once
// per phase (kExpertFeatures per expert) for the policy's set encoder.
//
// Rank features (loads relative to an even share, so they do not depend on the scale):
//   0 the copy's load x ranks            3 the rank's node's load x nodes
//   1 the rank's load x ranks            4 1 if the node already holds a copy of the expert
//   2 the rank's free slots / slots      5 the layer's position in the model (0 .. 1)
// Expert features: share x experts, copies, the layer's position.
// Replica features (loads relative to an even share of a rank):
//   0 share x experts                    3 load per copy with one copy more x ranks
//   1 copies                             4 the layer's position in the model (0 .. 1)
//   2 load per copy x ranks

#include <cstdint>
#include <vector>

#include "src/plan/expert_balance.h"

namespace placer {

constexpr int kRankFeatures = 6;
constexpr int kExpertFeatures = 3;
constexpr int kReplicaFeatures = 5;

class ExpertEpisode {
 public:
  /// `share`: the layer's routing shares (any scale); `copies`: copies per expert (each >= 1,
  /// summing to ranks x slots_per_rank); `layer_position` in [0, 1]. With `choose_replicas`
  /// only the sum of `copies` is kept: the episode starts in the replica phase with one copy
  /// per expert and sum - experts redundant slots to give out.
  ExpertEpisode(const std::vector<double>& share, const std::vector<int>& copies,
                const ExpertTopology& topo, int slots_per_rank, double layer_position,
                bool choose_replicas = false);

  /// Decisions of both phases.
  int steps() const { return replica_steps_ + int(order_size()); }
  int step() const { return step_; }
  bool done() const { return step_ >= steps(); }
  bool choosing_replicas() const { return replicas_left_ > 0; }
  /// Replica phase: appends [experts x kReplicaFeatures] rows to `x` and one mask entry per
  /// expert to `mask` (1: it may get another copy).
  void observe_replicas(std::vector<float>* x, std::vector<uint8_t>* mask) const;
  /// Replica phase: one more copy of expert `e` (must be allowed by the mask).
  void add_replica(int e);
  const std::vector<int>& copies() const { return copies_; }
  /// Placement phase: appends the current step's [ranks x kRankFeatures] rows to `x` and one mask
  /// entry per rank to `mask` (1: the copy may go there).
  void observe(std::vector<float>* x, std::vector<uint8_t>* mask) const;
  /// Appends the layer's [experts x kExpertFeatures] rows.
  void describe_experts(std::vector<float>* x) const;
  /// Placement phase: places the current copy on `rank` (must be allowed by the mask).
  void place(int rank);
  const ExpertLayerMap& map() const { return map_; }
  const std::vector<double>& shares() const { return share_; }  ///< normalised

 private:
  std::vector<double> share_;  // normalised
  std::vector<int> copies_;
  ExpertTopology topo_;
  int slots_ = 1;
  double layer_position_ = 0;
  size_t order_size() const;
  void order_copies();  // the placement order, once the copy counts are final

  int replica_steps_ = 0, replicas_left_ = 0;
  std::vector<int> order_;  // experts of the copies, heaviest copy first
  std::vector<double> rank_load_, node_load_;
  std::vector<int> used_;
  int step_ = 0;
  ExpertLayerMap map_;
};

/// EPLB's copy counts of a layer (the replica counts of eplb_layer's map).
std::vector<int> eplb_copies(const std::vector<double>& share, const ExpertTopology& topo,
                             const EplbOptions& o);

}  // namespace placer
