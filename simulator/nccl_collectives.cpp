#include "simulator/nccl_collectives.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace placer {

const char* to_string(NcclAlgorithm a) {
  switch (a) {
    case NcclAlgorithm::kRing:
      return "ring";
    case NcclAlgorithm::kTree:
      return "tree";
    case NcclAlgorithm::kNvls:
      return "nvls";
    case NcclAlgorithm::kNvlsTree:
      return "nvls_tree";
  }
  return "?";
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Bandwidth (bytes/s) of the NICs a group uses on one host for a message of n bytes: one
// NIC's bus bandwidth times the rails, at the inter level's efficiency for the size.
double nics_bandwidth(const NcclModel& m, const NcclShape& g, double n) {
  return m.inter.bus_bandwidth * m.inter.efficiency.at(n) * g.rails / g.inter_slowdown;
}

// Ring bus bandwidth inside one host (NVLink) for n bytes.
double host_ring_bandwidth(const NcclModel& m, double n) {
  return m.intra.bus_bandwidth * m.intra.efficiency.at(n);
}

// Latency of a collective across hosts that takes `extra_steps` steps beyond the first.
double inter_alpha(const NcclModel& m, double extra_steps) {
  return m.inter.latency + m.inter.latency_per_rank * std::max(0.0, extra_steps);
}

// Across hosts every rank's off-host shares, (p - local) / p of its buffer, leave through the
// host's NICs (local ranks' worth over `rails` NICs) while the on-host shares go over NVLink;
// the slower level sets the time.
double all_to_all_across(const NcclModel& m, const NcclShape& g, double n) {
  const double p = g.ranks, l = g.local;
  const double off = l * (p - l) / p * n / nics_bandwidth(m, g, n);
  const double on = l > 1 ? (l - 1) / p * n / host_ring_bandwidth(m, n) : 0.0;
  return inter_alpha(m, p - 2) + std::max(off, on);
}

// Ring: inside one host the intra level's curve; across hosts `rails` rings, each through one
// NIC, so the slowest hop is min(rails x NIC, the host's ring).
double ring_time(const NcclModel& m, CollectiveKind kind, const NcclShape& g, double n) {
  if (g.hosts <= 1) return m.intra.time(kind, g.ranks, n);
  if (kind == CollectiveKind::kAllToAll) return all_to_all_across(m, g, n);
  double bw = nics_bandwidth(m, g, n);
  if (g.local > 1) bw = std::min(bw, host_ring_bandwidth(m, n));
  return inter_alpha(m, g.ranks - 2) + n * bus_factor(kind, g.ranks) / bw;
}

// Double binary tree between hosts (chains, or NVLS with `host_bw` its bandwidth, inside):
// a host is inner node of one tree and leaf of the other, so each NIC carries `per_nic` x n /
// rails per direction (2; NCCL's tuner assumes the same). Reduction up and broadcast down are
// pipelined, so the slower level sets the time.
double tree_time(const NcclModel& m, const NcclShape& g, double n, double host_bw,
                 double per_nic) {
  const double depth = std::ceil(std::log2(static_cast<double>(g.hosts)));
  double t = per_nic * n / nics_bandwidth(m, g, n);
  if (g.local > 1) t = std::max(t, n / host_bw);
  return inter_alpha(m, 2 * (depth - 1)) + t;
}

}  // namespace

double nccl_algorithm_time(const NcclModel& m, CollectiveKind kind, NcclAlgorithm algorithm,
                           const NcclShape& g, double bytes) {
  if (g.ranks <= 1) return 0;
  const bool all_reduce = kind == CollectiveKind::kAllReduce;
  const bool nvls = m.nvls_bandwidth > 0 && g.local > 1 && all_reduce;
  const double nvls_bw = m.nvls_bandwidth * m.intra.efficiency.at(bytes);
  switch (algorithm) {
    case NcclAlgorithm::kRing:
      return ring_time(m, kind, g, bytes);
    case NcclAlgorithm::kTree:
      if (!all_reduce || g.hosts <= 1) return kInf;
      return tree_time(m, g, bytes, host_ring_bandwidth(m, bytes), 2.0);
    case NcclAlgorithm::kNvls:
      if (!nvls || g.hosts > 1) return kInf;
      return m.intra.latency + m.intra.latency_per_rank * std::max(0, g.ranks - 2) +
             bytes / nvls_bw;
    case NcclAlgorithm::kNvlsTree:
      if (!nvls || g.hosts <= 1) return kInf;
      // Between two hosts each tree is one edge, so each NIC carries n / rails per direction,
      // as the published two-node NVLS runs show (docs/calibration.md); with more hosts the
      // double tree's 2 n / rails.
      return tree_time(m, g, bytes, nvls_bw, g.hosts == 2 ? 1.0 : 2.0);
  }
  return kInf;
}

NcclAlgorithm nccl_fastest(const NcclModel& m, CollectiveKind kind, const NcclShape& g,
                           double bytes, double* seconds) {
  NcclAlgorithm best = NcclAlgorithm::kRing;
  double best_t = nccl_algorithm_time(m, kind, best, g, bytes);
  for (int a = 1; a < kNumNcclAlgorithms; ++a) {
    const double t = nccl_algorithm_time(m, kind, static_cast<NcclAlgorithm>(a), g, bytes);
    if (t < best_t) best_t = t, best = static_cast<NcclAlgorithm>(a);
  }
  *seconds = best_t;
  return best;
}

}  // namespace placer
