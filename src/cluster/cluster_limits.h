#pragma once
// How large a cluster placer accepts, and which link levels a cluster uses (computed from
// its hosts, linear in the device count: the cluster reader and Cluster::validate must not
// walk all device pairs of a cluster they are about to refuse).

#include <array>

#include "src/cluster/cluster.h"

namespace placer {

/// The most devices a cluster may have. The simulator keeps tables per ordered device pair
/// (link level and channels, ~33 B per pair: 16384 devices took 8.8 GB for a 5-op graph), so
/// memory grows with the square of the device count; 4096 devices take ~0.55 GB. Cluster
/// files above it are refused when read, before any device is allocated.
inline constexpr int kMaxDevices = 4096;

/// Bytes of the simulator's per-pair tables for `devices` devices (the estimate behind
/// kMaxDevices).
inline double pair_table_bytes(double devices) { return 33.0 * devices * devices; }

/// Which link levels some pair of distinct devices of `c` uses.
std::array<bool, kNumLinkLevels> link_levels_in_use(const Cluster& c);

}  // namespace placer
