#pragma once
// How large a cluster placer accepts, and which link levels a cluster uses (computed from
// its hosts, linear in the device count: the cluster reader and Cluster::validate must not
// walk all device pairs of a cluster they are about to refuse).

#include <array>

#include "src/cluster/cluster.h"

namespace placer {

/// The most devices a cluster may have. The cluster and the simulator keep links per level
/// (bandwidth and latency looked up from the two devices' hosts and kinds) and channels per
/// device, per host and per pair that actually sends, so memory grows linearly with the
/// device count. Cluster files above it are refused when read, before any device is
/// allocated.
inline constexpr int kMaxDevices = 131072;

/// The most devices of a cluster with an explicit per-pair bandwidth or latency matrix: the
/// cluster and the cost model keep such a matrix whole (16 B per ordered device pair and
/// matrix), so its memory grows with the square of the device count; 4096 devices take
/// ~0.5 GB for both matrices.
inline constexpr int kMaxMatrixDevices = 4096;

/// Bytes of the per-pair tables an explicit matrix costs for `devices` devices (the
/// estimate behind kMaxMatrixDevices).
inline double matrix_table_bytes(double devices) { return 16.0 * devices * devices; }

/// Which link levels some pair of distinct devices of `c` uses.
std::array<bool, kNumLinkLevels> link_levels_in_use(const Cluster& c);

}  // namespace placer
