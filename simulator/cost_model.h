#pragma once
// Cost model: how long an op, a point-to-point transfer and a collective take.
//
//  - Ops: roofline with efficiency curves (CostProfile):
//      t = launch + max(flops / (peak(dtype) * eff_c(flops)), bytes / (mem_bw * eff_m(bytes)))
//    with flops and bytes scaled by the work fraction first. Category kInput costs 0; an op
//    with no FLOPs and no bytes costs only the launch overhead. A fused attention op adds
//    its query-key scores times the profile's score_time (backward_score_time for a backward
//    op) to the FLOP term: scores = attention_scores(op).
//  - Transfers: latency + bytes / bandwidth of the pair (cluster numbers, profile overrides).
//  - Collectives: alpha-beta formulas for ring, tree, hierarchical and parameter server
//    (docs/simulator.md lists them); a measured curve of the profile
//    (CostProfile::collective_curves) replaces them for its kind and link level, and else
//    the profile's hierarchical NCCL model (CostProfile::nccl, simulator/nccl_collectives.h)
//    when it has one.
//
// The model copies what it needs from the cluster, so it does not depend on the Cluster's
// lifetime. It is immutable after construction and safe to share between threads.

#include <array>
#include <cstdint>
#include <vector>

#include "simulator/cost_profile.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {

/// Query-key scores (one per query, key and head) a fused attention op computes, from its
/// FLOPs and its `head_dim` attribute (`v_head_dim` when the values are narrower or wider):
/// a forward op spends 2 (head_dim + v_head_dim) FLOPs per score (q k^T and p v), a backward
/// op the attention backward multiplier (training_step.h, 2.5) times that. 0 when the op has
/// no head_dim attribute (a graph written without one: no per-score term).
double attention_scores(const Op& op);

/// The alpha / beta numbers of a device group, precomputed once so that collective times
/// cost O(1) (CostModel::make_group).
struct CollectiveGroup {
  int size = 0;
  // Ring over the devices in the given order: slowest link, largest latency.
  double ring_alpha = 0, ring_beta = 0;
  // Over all ordered pairs: slowest link, largest latency (tree, parameter server).
  double all_alpha = 0, all_beta = 0;
  // Hierarchical: hosts in the group, devices per host (max and min), intra-host ring
  // (slowest over hosts) and the ring of host leaders (first device of each host).
  int hosts = 0, local_max = 0, local_min = 0;
  double intra_alpha = 0, intra_beta = 0;
  double inter_alpha = 0, inter_beta = 0;
  bool inter_nic_shared = false;  ///< inter-host links shared per host (LinkSharing::kPerHost)
  /// Fewest distinct NICs the group's devices use on one host (NcclModel::gpus_per_nic GPUs
  /// share one), for the hierarchical NCCL model.
  int rails = 0;
};

class CostModel {
 public:
  CostModel(const Cluster& cluster, CostProfile profile);

  const CostProfile& profile() const { return profile_; }
  int num_devices() const { return n_; }

  /// Seconds for `work_fraction` of op `op` on `device`, reading/writing `bytes` in total
  /// (pass Graph::op_bytes; the fraction scales both flops and bytes).
  double op_time(const Op& op, uint64_t bytes, int device, double work_fraction = 1.0) const;
  /// As above, computing in `dtype` instead of the op's own (a plan's precision.compute).
  double op_time(const Op& op, uint64_t bytes, int device, double work_fraction,
                 DType dtype) const;
  /// Launch overhead of `device` (the profile's when set).
  double launch_overhead(int device) const { return launch_[device]; }

  /// The kind of path from a to b (Cluster::level, from per-device facts).
  LinkLevel level(int a, int b) const {
    if (a == b) return LinkLevel::kSame;
    if (host_[a] != host_[b]) {
      return has_topology_ && topology_.same_domain(host_[a], host_[b]) ? LinkLevel::kIntraHost
                                                                        : LinkLevel::kInterHost;
    }
    return kind_[a] != kind_[b] ? LinkLevel::kHostDevice : LinkLevel::kIntraHost;
  }
  /// Whether the path from a to b crosses the spine (Cluster::crosses_spine).
  bool crosses_spine(int a, int b) const {
    return has_topology_ && level(a, b) == LinkLevel::kInterHost &&
           topology_.crosses_spine(host_[a], local_[a], host_[b], local_[b]);
  }
  /// Effective bandwidth (B/s) and latency (s) from a to b (profile overrides applied).
  double bandwidth(int a, int b) const {
    if (!pair_bw_.empty()) return pair_bw_[static_cast<size_t>(a) * n_ + b];
    const double bw = level_bw_[static_cast<int>(level(a, b))];
    return crosses_spine(a, b) ? bw / topology_.oversubscription : bw;
  }
  double latency(int a, int b) const {
    if (!pair_lat_.empty()) return pair_lat_[static_cast<size_t>(a) * n_ + b];
    const double lat = level_lat_[static_cast<int>(level(a, b))];
    return crosses_spine(a, b) ? lat + topology_.spine_latency : lat;
  }
  /// Whether the cluster has a non-trivial Topology.
  bool has_topology() const { return has_topology_; }
  /// latency + bytes / bandwidth; 0 when src == dst.
  double transfer_time(int src, int dst, uint64_t bytes) const {
    if (src == dst) return 0;
    return latency(src, dst) + static_cast<double>(bytes) / bandwidth(src, dst);
  }

  /// Precomputes the alpha / beta numbers of `devices` (ring order = the given order).
  CollectiveGroup make_group(const std::vector<int>& devices) const;
  /// Seconds for a collective of `bytes` (the full buffer: the all-reduced gradient, the
  /// gathered output) among `devices`. scheme kAuto = the profile's all_reduce choice
  /// (itself possibly auto = the fastest). Groups of one device cost 0. When the profile has
  /// a curve for (kind, intra_host or inter_host as the group spans hosts), the curve's
  /// time is used for every scheme except kParameterServer.
  double collective_time(CollectiveKind kind, const std::vector<int>& devices, uint64_t bytes,
                         SyncScheme scheme) const;
  /// As above, for a group from make_group (O(1), no allocation).
  double group_collective_time(CollectiveKind kind, const CollectiveGroup& group, uint64_t bytes,
                               SyncScheme scheme) const;
  /// The scheme collective_time uses for kAuto (or `scheme` itself when it is not kAuto).
  SyncScheme resolve_scheme(CollectiveKind kind, const CollectiveGroup& group, uint64_t bytes,
                            SyncScheme scheme) const;

 private:
  double scheme_time(CollectiveKind kind, const CollectiveGroup& g, double n, SyncScheme s) const;
  /// The hierarchical NCCL model's time (profile_.nccl enabled).
  double nccl_time(CollectiveKind kind, const CollectiveGroup& g, double n, SyncScheme s) const;
  /// How much slower the inter-host bandwidth is for `g`: the spine's oversubscription when
  /// level_bounds gave the group exactly the spine's bandwidth, else 1.
  double spine_slowdown(const CollectiveGroup& g) const;
  /// Worst latency and bandwidth over all pairs of `devices`, from the levels they cross.
  void level_bounds(const std::vector<int>& devices, double* alpha, double* beta) const;

  CostProfile profile_;
  int n_ = 0;
  std::vector<int> host_;      // per device
  std::vector<uint8_t> kind_;  // per device: DeviceKind
  std::vector<int> local_;     // per device: index among its host's devices (its rail)
  Topology topology_;
  bool has_topology_ = false;
  std::vector<double> launch_, mem_bw_;
  std::vector<std::array<double, kNumDTypes>> peak_;  // per device, fallbacks resolved
  // Per link level (memory O(devices)); per ordered pair (n x n, row-major) only where the
  // cluster gives an explicit matrix (Cluster::bandwidth_matrix / latency_matrix).
  std::array<double, kNumLinkLevels> level_bw_{}, level_lat_{};
  std::vector<double> pair_bw_, pair_lat_;
  LinkSharing inter_sharing_ = LinkSharing::kPerPair;
  bool has_curves_ = false;
};

}  // namespace placer
