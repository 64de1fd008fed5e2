#pragma once
// The hierarchical NCCL model (docs/simulator.md, "Hierarchical NCCL model"): the time of a
// collective among `hosts` hosts x `local` GPUs per host under each of NCCL's algorithms,
// from per-level numbers of the profile (NcclModel), and the fastest of them by size as
// NCCL's tuner picks it.
//
//   ring      every collective; one ring per NIC the group uses on a host, so the bus
//             bandwidth is min(intra ring, rails x one NIC's)
//   tree      all-reduce across hosts: double binary tree between hosts, chains inside
//   nvls      all-reduce inside one host with in-switch reduction (NVLink SHARP)
//   nvls_tree all-reduce across hosts: NVLS inside each host, the tree between hosts
//
// All O(1): the caller (CostModel::make_group) counts hosts, GPUs per host and NICs once.

#include <cstdint>

#include "simulator/cost_profile.h"

namespace placer {

enum class NcclAlgorithm : uint8_t { kRing, kTree, kNvls, kNvlsTree };
inline constexpr int kNumNcclAlgorithms = 4;
/// "ring", "tree", "nvls", "nvls_tree".
const char* to_string(NcclAlgorithm a);

/// What the model needs to know of a group.
struct NcclShape {
  int ranks = 0;  ///< GPUs in the group
  int hosts = 0;  ///< hosts (NVLink domains) it spans
  int local = 0;  ///< most GPUs of the group on one host
  int rails = 0;  ///< fewest distinct NICs the group's GPUs use on one host
  /// Divides the NICs' bandwidth (an oversubscribed spine the group crosses); 1 = none.
  double inter_slowdown = 1.0;
};

/// Seconds for `kind` of `bytes` (the full buffer, as nccl-tests' size) under `algorithm`;
/// +infinity where NCCL does not run that algorithm (tree inside one host, NVLS without
/// in-switch reduction or for another kind than all-reduce). Groups of one rank cost 0.
double nccl_algorithm_time(const NcclModel& m, CollectiveKind kind, NcclAlgorithm algorithm,
                           const NcclShape& g, double bytes);

/// The fastest algorithm for the call (ties to the earlier of nvls, nvls_tree, ring, tree)
/// and its time in *seconds.
NcclAlgorithm nccl_fastest(const NcclModel& m, CollectiveKind kind, const NcclShape& g,
                           double bytes, double* seconds);

}  // namespace placer
