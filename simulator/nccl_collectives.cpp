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

// Latency of a collective across hosts with `extra_hops` host-to-host hops beyond those of
// two hosts (the inter level's latency_per_rank is per such hop, as NCCL's tuner charges a
// network step).
double inter_alpha(const NcclModel& m, double extra_hops) {
  return m.inter.latency + m.inter.latency_per_rank * std::max(0.0, extra_hops);
}

// A ring's extra host hops: all-reduce crosses every host boundary twice (reduce-scatter,
// then all-gather), the others once.
double ring_hops(CollectiveKind kind, const NcclShape& g) {
  return (kind == CollectiveKind::kAllReduce ? 2.0 : 1.0) * (g.hosts - 2);
}

// Across hosts every rank's off-host shares, (p - local) / p of its buffer, leave through the
// host's NICs (local ranks' worth over `rails` NICs) while the on-host shares go over NVLink;
// the slower level sets the time.
double all_to_all_across(const NcclModel& m, const NcclShape& g, double n) {
  const double p = g.ranks, l = g.local;
  const double off = l * (p - l) / p * n / nics_bandwidth(m, g, n);
  const double on = l > 1 ? (l - 1) / p * n / host_ring_bandwidth(m, n) : 0.0;
  return inter_alpha(m, g.hosts - 2) + std::max(off, on);
}

// Ring: inside one host the intra level's curve; across hosts `rails` rings, each through one
// NIC, so the slowest hop is min(rails x NIC, the host's ring).
double ring_time(const NcclModel& m, CollectiveKind kind, const NcclShape& g, double n) {
  if (g.hosts <= 1) return m.intra.time(kind, g.ranks, n);
  if (kind == CollectiveKind::kAllToAll) return all_to_all_across(m, g, n);
  double bw = nics_bandwidth(m, g, n);
  if (g.local > 1) bw = std::min(bw, host_ring_bandwidth(m, n));
  return inter_alpha(m, ring_hops(kind, g)) + n * bus_factor(kind, g.ranks) / bw;
}

// Double binary tree between hosts, `host_time` the seconds of the part inside each host:
// a host is inner node of one tree and leaf of the other, so each NIC carries 2 n / rails per
// direction; between two hosts each tree is one edge and a NIC carries n / rails, which is how
// two-node trees pass the network's ring bound (NVIDIA, nccl-tests issue 196; the published
// two-node runs, docs/calibration.md). Reduction up and broadcast down are pipelined, so the
// slower level sets the time.
double tree_time(const NcclModel& m, const NcclShape& g, double n, double host_time) {
  const double depth = std::ceil(std::log2(static_cast<double>(g.hosts)));
  const double per_nic = g.hosts == 2 ? 1.0 : 2.0;
  double t = per_nic * n / nics_bandwidth(m, g, n);
  if (g.local > 1) t = std::max(t, host_time);
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
      // The chain inside a host carries the reduction up and the broadcast down through the
      // same links: 2 n per direction.
      return tree_time(m, g, bytes, 2 * bytes / host_ring_bandwidth(m, bytes));
    case NcclAlgorithm::kNvls:
      if (!nvls || g.hosts > 1) return kInf;
      return m.intra.latency + m.intra.latency_per_rank * std::max(0, g.ranks - 2) +
             bytes / nvls_bw;
    case NcclAlgorithm::kNvlsTree:
      if (!nvls || g.hosts <= 1) return kInf;
      return tree_time(m, g, bytes, bytes / nvls_bw);
  }
  return kInf;
}

NcclAlgorithm nccl_fastest(const NcclModel& m, CollectiveKind kind, const NcclShape& g,
                           double bytes, double* seconds) {
  // Ties go to the in-switch algorithms (NCCL prefers them: they need fewer SMs), then the
  // ring.
  constexpr NcclAlgorithm kOrder[] = {NcclAlgorithm::kNvls, NcclAlgorithm::kNvlsTree,
                                      NcclAlgorithm::kRing, NcclAlgorithm::kTree};
  NcclAlgorithm best = NcclAlgorithm::kRing;
  double best_t = std::numeric_limits<double>::infinity();
  for (NcclAlgorithm a : kOrder) {
    const double t = nccl_algorithm_time(m, kind, a, g, bytes);
    if (t < best_t) best_t = t, best = a;
  }
  *seconds = best_t;
  return best;
}

}  // namespace placer
