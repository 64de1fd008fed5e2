#include "simulator/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>
#include <utility>

#include "simulator/nccl_collectives.h"
#include "src/graph/kernel_list.h"
#include "src/graph/moe_attrs.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"

namespace placer {

namespace {

// The link levels that some pair of distinct devices of `devices` crosses (Cluster::level:
// other host, same host other kind, same host same kind).
std::array<bool, kNumLinkLevels> levels_between(const std::vector<int>& devices,
                                                const std::vector<int>& host,
                                                const std::vector<uint8_t>& kind) {
  std::vector<int> d = devices;
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  std::sort(d.begin(), d.end(), [&](int a, int b) {
    return std::make_pair(host[a], kind[a]) < std::make_pair(host[b], kind[b]);
  });
  // Sorted by (host, kind), some pair crosses a level iff some neighbouring pair does.
  std::array<bool, kNumLinkLevels> present{};
  for (size_t k = 1; k < d.size(); ++k) {
    const int a = d[k - 1], b = d[k];
    const LinkLevel l = host[a] != host[b]   ? LinkLevel::kInterHost
                        : kind[a] != kind[b] ? LinkLevel::kHostDevice
                                             : LinkLevel::kIntraHost;
    present[static_cast<int>(l)] = true;
  }
  return present;
}

// The tiers some pair of `devices` crosses under a topology (GPUs only): one NVLink domain
// (intra_host), two domains (inter_host), two domains across the spine. A pair of different
// domains with different (leaf, rail) keys exists iff the devices span at least two domains
// and at least two keys: take b; if every device outside b's domain had b's key and so did
// b's domain, there would be one key.
struct TopologyTiers {
  bool intra = false, inter = false, spine = false;
};
TopologyTiers topology_tiers(const std::vector<int>& devices, const std::vector<int>& host,
                             const std::vector<int>& local, const Topology& t) {
  auto domain = [&](int x) { return host[x] / t.nvlink_domain_hosts; };
  auto key = [&](int x) {
    return std::make_pair(t.hosts_per_leaf > 0 ? host[x] / t.hosts_per_leaf : 0,
                          t.rails ? local[x] : 0);
  };
  std::vector<int> d = devices;
  std::sort(d.begin(), d.end(), [&](int a, int b) {
    return std::make_pair(domain(a), a) < std::make_pair(domain(b), b);
  });
  d.erase(std::unique(d.begin(), d.end()), d.end());
  TopologyTiers tiers;
  if (d.size() < 2) return tiers;
  // Sorted by domain: some pair shares a domain iff some neighbouring pair does.
  bool two_keys = false;
  for (size_t k = 1; k < d.size(); ++k) {
    (domain(d[k]) == domain(d[k - 1]) ? tiers.intra : tiers.inter) = true;
    two_keys = two_keys || key(d[k]) != key(d[0]);
  }
  tiers.spine = tiers.inter && two_keys;
  return tiers;
}

// The NCCL algorithm family a plan's explicit scheme names (kParameterServer never gets here).
CollectiveAlgorithm to_collective_algorithm(SyncScheme s) {
  switch (s) {
    case SyncScheme::kTree:
      return CollectiveAlgorithm::kTree;
    case SyncScheme::kHierarchical:
      return CollectiveAlgorithm::kHierarchical;
    case SyncScheme::kAuto:
      return CollectiveAlgorithm::kAuto;
    default:
      return CollectiveAlgorithm::kRing;
  }
}

// The NICs `devices` (one host's, or one NVLink domain's) use: distinct (host, local index /
// gpus_per_nic).
int distinct_nics(const std::vector<int>& devices, const std::vector<int>& host,
                  const std::vector<int>& local, int gpus_per_nic) {
  std::vector<std::pair<int, int>> nics;
  nics.reserve(devices.size());
  for (int d : devices) nics.emplace_back(host[d], local[d] / gpus_per_nic);
  std::sort(nics.begin(), nics.end());
  return static_cast<int>(std::unique(nics.begin(), nics.end()) - nics.begin());
}

// The number attribute `key` of `op`; 0 when it is absent or not a number.
double number_attr(const Op& op, const char* key) {
  const std::string* v = find_op_attr(op, key);
  return v ? std::strtod(v->c_str(), nullptr) : 0;
}

}  // namespace

double attention_scores(const Op& op) {
  const double qk = number_attr(op, "head_dim");
  if (!(qk > 0)) return 0;
  const double v = number_attr(op, "v_head_dim");
  double flops_per_score = 2 * (qk + (v > 0 ? v : qk));
  if (op.phase == Phase::kBackward) {
    flops_per_score *= default_backward_multipliers()[static_cast<int>(OpCategory::kAttention)];
  }
  return op.flops / flops_per_score;
}

CostModel::CostModel(const Cluster& cluster, CostProfile profile) : profile_(std::move(profile)) {
  cluster.validate();
  profile_.validate("cost profile '" + profile_.name + "'");
  has_curves_ = profile_.has_collective_curves();
  n_ = cluster.num_devices();
  host_.resize(n_);
  kind_.resize(n_);
  launch_.resize(n_);
  mem_bw_.resize(n_);
  peak_.resize(n_);
  for (int d = 0; d < n_; ++d) {
    const Device& dev = cluster.device(d);
    host_[d] = dev.host;
    kind_[d] = static_cast<uint8_t>(dev.spec.kind);
    launch_[d] =
        profile_.launch_overhead >= 0 ? profile_.launch_overhead : dev.spec.launch_overhead;
    mem_bw_[d] = dev.spec.memory_bandwidth;
    for (int t = 0; t < kNumDTypes; ++t) peak_[d][t] = dev.spec.peak(static_cast<DType>(t));
  }
  local_.resize(n_);
  for (int d = 0; d < n_; ++d) local_[d] = cluster.device(d).local_index;
  topology_ = cluster.topology();
  has_topology_ = !topology_.trivial();
  const bool bw_matrix = !cluster.bandwidth_matrix().empty();
  const bool lat_matrix = !cluster.latency_matrix().empty();
  // Absolute overrides replace the level's numbers, not an explicit per-pair matrix; the
  // efficiency factor applies to both.
  level_bw_[0] = std::numeric_limits<double>::infinity();
  level_lat_[0] = 0.0;
  for (int l = 1; l < kNumLinkLevels; ++l) {
    const LinkOverride& ov = profile_.link(static_cast<LinkLevel>(l));
    const LinkSpec& link = cluster.link(static_cast<LinkLevel>(l));
    level_bw_[l] = (ov.bandwidth > 0 ? ov.bandwidth : link.bandwidth) * ov.bandwidth_efficiency;
    level_lat_[l] = ov.latency >= 0 ? ov.latency : link.latency;
  }
  if (bw_matrix) pair_bw_.assign(static_cast<size_t>(n_) * n_, level_bw_[0]);
  if (lat_matrix) pair_lat_.assign(static_cast<size_t>(n_) * n_, level_lat_[0]);
  for (int a = 0; a < n_ && (bw_matrix || lat_matrix); ++a) {
    for (int b = 0; b < n_; ++b) {
      if (a == b) continue;
      const size_t i = static_cast<size_t>(a) * n_ + b;
      const LinkOverride& ov = profile_.link(level(a, b));
      if (bw_matrix) pair_bw_[i] = cluster.bandwidth(a, b) * ov.bandwidth_efficiency;
      if (lat_matrix) pair_lat_[i] = cluster.latency(a, b);
    }
  }
  inter_sharing_ = bw_matrix ? LinkSharing::kPerPair : cluster.link(LinkLevel::kInterHost).sharing;
}

namespace {

// Memory time of the kernels an op lists (src/graph/kernel_list.h), each at its own
// category's and dtype's curve for its own size; `bytes` (the op's share of the work) scales
// every kernel alike.
double listed_memory_time(const CostProfile& profile, const std::vector<KernelWork>& kernels,
                          double bytes, double bandwidth) {
  const double listed = static_cast<double>(kernel_list_bytes(kernels));
  if (listed <= 0) return 0;
  double t = 0;
  for (const KernelWork& k : kernels) {
    const double b = static_cast<double>(k.bytes) * bytes / listed;
    if (b > 0) t += b / (bandwidth * profile.op(k.category).memory_for(k.dtype).at(b));
  }
  return t;
}

}  // namespace

double CostModel::op_time(const Op& op, uint64_t bytes, int device, double work_fraction) const {
  return op_time(op, bytes, device, work_fraction, op.dtype);
}

double CostModel::op_time(const Op& op, uint64_t bytes, int device, double work_fraction,
                          DType dtype) const {
  if (op.category == OpCategory::kInput) return 0;
  const OpCostProfile& prof = profile_.op(op.category);
  const double f = op.flops * work_fraction;
  const double b = static_cast<double>(bytes) * work_fraction;
  double t = 0;
  if (f > 0) t = f / (peak_[device][static_cast<int>(dtype)] * prof.compute_for(dtype).at(f));
  // Fused attention's per-score work (the softmax's exponentials) adds to its FLOP time.
  const double per_score =
      op.phase == Phase::kBackward ? prof.backward_score_time : prof.score_time;
  if (per_score > 0) t += attention_scores(op) * work_fraction * per_score;
  // An op that lists its kernels: one launch each, each pass at its own memory rate.
  const std::vector<KernelWork> kernels =
      op.attrs.empty() ? std::vector<KernelWork>{} : listed_kernels(op);
  if (!kernels.empty()) {
    t = std::max(t, listed_memory_time(profile_, kernels, b, mem_bw_[device]));
    return static_cast<double>(kernels.size()) * launch_[device] + t;
  }
  if (b > 0) t = std::max(t, b / (mem_bw_[device] * prof.memory_for(dtype).at(b)));
  return launch_[device] + t;
}

CollectiveGroup CostModel::make_group(const std::vector<int>& devices) const {
  CollectiveGroup g;
  const int p = static_cast<int>(devices.size());
  g.size = p;
  for (int d : devices) {
    PLACER_CHECK(d >= 0 && d < n_, "collective group: device " << d
                                                               << " out of range (the "
                                                                  "cluster has "
                                                               << n_ << ")");
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto ring = [&](const std::vector<int>& r, double* alpha, double* beta) {
    *alpha = 0;
    *beta = kInf;
    if (r.size() < 2) return;
    for (size_t i = 0; i < r.size(); ++i) {
      const int a = r[i], b = r[(i + 1) % r.size()];
      *alpha = std::max(*alpha, latency(a, b));
      *beta = std::min(*beta, bandwidth(a, b));
    }
  };
  ring(devices, &g.ring_alpha, &g.ring_beta);
  level_bounds(devices, &g.all_alpha, &g.all_beta);
  // Hosts in order of first appearance; under a topology a whole NVLink domain counts as
  // one host (its GPUs reach each other over the intra-host link).
  std::unordered_map<int, size_t> host_index;
  std::vector<std::vector<int>> per_host;
  for (int d : devices) {
    const int node = has_topology_ ? host_[d] / topology_.nvlink_domain_hosts : host_[d];
    const auto [it, added] = host_index.emplace(node, per_host.size());
    if (added) per_host.emplace_back();
    per_host[it->second].push_back(d);
  }
  g.hosts = static_cast<int>(per_host.size());
  g.local_max = 0;
  g.local_min = p > 0 ? p : 0;
  g.intra_alpha = 0;
  g.intra_beta = kInf;
  std::vector<int> leaders;
  g.rails = per_host.empty() ? 0 : p;
  for (const std::vector<int>& h : per_host) {
    g.rails = std::min(g.rails, distinct_nics(h, host_, local_, profile_.nccl.gpus_per_nic));
    g.local_max = std::max(g.local_max, static_cast<int>(h.size()));
    g.local_min = std::min(g.local_min, static_cast<int>(h.size()));
    double a = 0, b = kInf;
    ring(h, &a, &b);
    g.intra_alpha = std::max(g.intra_alpha, a);
    g.intra_beta = std::min(g.intra_beta, b);
    leaders.push_back(h.front());
  }
  ring(leaders, &g.inter_alpha, &g.inter_beta);
  g.inter_nic_shared = inter_sharing_ == LinkSharing::kPerHost;
  return g;
}

namespace {

// All-to-all from the link bandwidths (the same for every scheme): each rank sends (p - 1) / p
// of its n bytes, one share to every other rank at once. On one host that is latency +
// (p - 1) / p * n over the slowest pair. Across hosts the shares to the own host's devices and
// those to other hosts go at the same time; the ones off the host, (p - local) / p of n, go
// through the device's own NIC, or through one NIC per host (LinkSharing::kPerHost) that
// carries the traffic of all its local ranks.
double all_to_all_time(const CollectiveGroup& g, double n) {
  const double p = g.size;
  if (g.hosts <= 1) return g.all_alpha + (p - 1) / p * n / g.all_beta;
  const double local = g.local_max;
  const double intra = local > 1 ? g.intra_alpha + (local - 1) / p * n / g.intra_beta : 0;
  const double off_host = (p - g.local_min) / p * n * (g.inter_nic_shared ? local : 1);
  return std::max(intra, g.all_alpha + off_host / g.all_beta);
}

}  // namespace

void CostModel::level_bounds(const std::vector<int>& devices, double* alpha, double* beta) const {
  *alpha = 0;
  *beta = std::numeric_limits<double>::infinity();
  auto take = [&](double lat, double bw) {
    *alpha = std::max(*alpha, lat);
    *beta = std::min(*beta, bw);
  };
  constexpr int kIntra = static_cast<int>(LinkLevel::kIntraHost);
  constexpr int kInter = static_cast<int>(LinkLevel::kInterHost);
  if (!pair_bw_.empty() || !pair_lat_.empty()) {
    for (int a : devices) {
      for (int b : devices) {
        if (a != b) take(latency(a, b), bandwidth(a, b));
      }
    }
  } else if (has_topology_) {
    // Per tier: across the spine is the slowest inter_host pair (latency added, bandwidth
    // divided by the oversubscription).
    const TopologyTiers t = topology_tiers(devices, host_, local_, topology_);
    if (t.intra) take(level_lat_[kIntra], level_bw_[kIntra]);
    if (t.inter) take(level_lat_[kInter], level_bw_[kInter]);
    if (t.spine) {
      take(level_lat_[kInter] + topology_.spine_latency,
           level_bw_[kInter] / topology_.oversubscription);
    }
  } else {
    // Per level: the worst pair is the worst level any pair crosses (O(p), not O(p^2)).
    const std::array<bool, kNumLinkLevels> present = levels_between(devices, host_, kind_);
    for (int l = 1; l < kNumLinkLevels; ++l) {
      if (present[l]) take(level_lat_[l], level_bw_[l]);
    }
  }
}

double CostModel::scheme_time(CollectiveKind kind, const CollectiveGroup& g, double n,
                              SyncScheme s) const {
  if (kind == CollectiveKind::kAllToAll) return all_to_all_time(g, n);
  const double p = g.size;
  const double pm1 = p - 1;
  if (kind != CollectiveKind::kAllReduce && s == SyncScheme::kParameterServer) {
    s = SyncScheme::kRing;  // a parameter server only changes how gradients are summed
  }
  switch (s) {
    case SyncScheme::kRing:
    case SyncScheme::kAuto: {
      const double a = g.ring_alpha, b = g.ring_beta;
      switch (kind) {
        case CollectiveKind::kAllReduce:
          return 2 * pm1 / p * n / b + 2 * pm1 * a;
        case CollectiveKind::kAllGather:
        case CollectiveKind::kReduceScatter:
          return pm1 / p * n / b + pm1 * a;
        case CollectiveKind::kBroadcast:
          return n / b + pm1 * a;  // pipelined chain
        case CollectiveKind::kAllToAll:
          break;  // all_to_all_time
      }
      return 0;
    }
    case SyncScheme::kTree: {
      const double levels = std::ceil(std::log2(p));
      const double a = g.all_alpha, b = g.all_beta;
      switch (kind) {
        case CollectiveKind::kAllReduce:
          return 2 * levels * a + 2 * n / b;  // double binary tree
        case CollectiveKind::kBroadcast:
          return levels * a + n / b;  // pipelined tree
        default:
          return scheme_time(kind, g, n, SyncScheme::kRing);  // no tree variant
      }
    }
    case SyncScheme::kHierarchical: {
      const double l = g.local_max, h = g.hosts;
      const double lm1 = l - 1, hm1 = h - 1;
      // Inter-host phase: one ring per local index on n / local_min each, unless the hosts'
      // devices share one NIC, which then carries all of n.
      const double m = g.inter_nic_shared ? n : n / std::max(1, g.local_min);
      const double intra = l > 1 ? lm1 / l * n / g.intra_beta + lm1 * g.intra_alpha : 0;
      switch (kind) {
        case CollectiveKind::kAllReduce: {
          const double inter = h > 1 ? 2 * hm1 / h * m / g.inter_beta + 2 * hm1 * g.inter_alpha : 0;
          return 2 * intra + inter;
        }
        case CollectiveKind::kAllGather:
        case CollectiveKind::kReduceScatter: {
          const double inter = h > 1 ? hm1 / h * m / g.inter_beta + hm1 * g.inter_alpha : 0;
          return intra + inter;
        }
        case CollectiveKind::kAllToAll:
          break;  // all_to_all_time
        case CollectiveKind::kBroadcast: {
          const double inter = h > 1 ? n / g.inter_beta + hm1 * g.inter_alpha : 0;
          const double in = l > 1 ? n / g.intra_beta + lm1 * g.intra_alpha : 0;
          return inter + in;
        }
      }
      return 0;
    }
    case SyncScheme::kParameterServer:
      // Sharded over the p devices: each pushes (p - 1) shards of n / p and pulls them back,
      // one message at a time through its port.
      return 2 * pm1 / p * n / g.all_beta + 2 * pm1 * g.all_alpha;
  }
  return 0;
}

SyncScheme CostModel::resolve_scheme(CollectiveKind kind, const CollectiveGroup& group,
                                     uint64_t bytes, SyncScheme scheme) const {
  if (scheme != SyncScheme::kAuto) return scheme;
  switch (profile_.all_reduce) {
    case CollectiveAlgorithm::kRing:
      return SyncScheme::kRing;
    case CollectiveAlgorithm::kTree:
      return SyncScheme::kTree;
    case CollectiveAlgorithm::kHierarchical:
      return SyncScheme::kHierarchical;
    case CollectiveAlgorithm::kAuto:
      break;
  }
  const double n = static_cast<double>(bytes);
  SyncScheme best = SyncScheme::kRing;
  double best_t = scheme_time(kind, group, n, SyncScheme::kRing);
  for (SyncScheme s :
       {SyncScheme::kTree, SyncScheme::kHierarchical, SyncScheme::kParameterServer}) {
    if (s == SyncScheme::kParameterServer && kind != CollectiveKind::kAllReduce) continue;
    const double t = scheme_time(kind, group, n, s);
    if (t < best_t) best_t = t, best = s;
  }
  return best;
}

double CostModel::group_collective_time(CollectiveKind kind, const CollectiveGroup& group,
                                        uint64_t bytes, SyncScheme scheme) const {
  if (group.size <= 1) return 0;
  if (has_curves_ && scheme != SyncScheme::kParameterServer) {
    // A measured curve (NCCL picks its own algorithm) replaces the formulas; an explicit
    // parameter server is not what the measurements ran, so it keeps its formula.
    const LinkLevel level = group.hosts > 1 ? LinkLevel::kInterHost : LinkLevel::kIntraHost;
    if (const auto& c = profile_.curve(kind, level)) {
      const double t = c->time(kind, group.size, static_cast<double>(bytes));
      // Across an oversubscribed spine the bandwidth term, the curve's time less that of 0
      // bytes, grows by the oversubscription.
      const double r = spine_slowdown(group);
      if (r == 1) return t;
      return r * t - (r - 1) * c->time(kind, group.size, 0.0);
    }
  }
  if (profile_.nccl.enabled() && scheme != SyncScheme::kParameterServer) {
    return nccl_time(kind, group, static_cast<double>(bytes), scheme);
  }
  const SyncScheme s = resolve_scheme(kind, group, bytes, scheme);
  return scheme_time(kind, group, static_cast<double>(bytes), s);
}

double CostModel::spine_slowdown(const CollectiveGroup& g) const {
  const double r = topology_.oversubscription;
  const double spine_bw = level_bw_[static_cast<int>(LinkLevel::kInterHost)] / r;
  return has_topology_ && r != 1 && g.all_beta == spine_bw ? r : 1.0;
}

double CostModel::nccl_time(CollectiveKind kind, const CollectiveGroup& g, double n,
                            SyncScheme s) const {
  const NcclModel& m = profile_.nccl;
  const NcclShape shape{g.size, g.hosts, g.local_max, g.rails, spine_slowdown(g)};
  // An explicit scheme names NCCL's algorithm (hierarchical: NVLS inside the hosts where they
  // have it, else the tree); one that does not run this call falls back to the ring.
  const CollectiveAlgorithm choice =
      s != SyncScheme::kAuto ? to_collective_algorithm(s) : profile_.all_reduce;
  NcclAlgorithm a = NcclAlgorithm::kRing;
  switch (choice) {
    case CollectiveAlgorithm::kAuto: {
      double t = 0;
      nccl_fastest(m, kind, shape, n, &t);
      return t;
    }
    case CollectiveAlgorithm::kRing:
      break;
    case CollectiveAlgorithm::kTree:
      a = NcclAlgorithm::kTree;
      break;
    case CollectiveAlgorithm::kHierarchical:
      a = m.nvls_bandwidth > 0 ? (g.hosts > 1 ? NcclAlgorithm::kNvlsTree : NcclAlgorithm::kNvls)
                               : NcclAlgorithm::kTree;
      break;
  }
  const double t = nccl_algorithm_time(m, kind, a, shape, n);
  return std::isinf(t) ? nccl_algorithm_time(m, kind, NcclAlgorithm::kRing, shape, n) : t;
}

double CostModel::collective_time(CollectiveKind kind, const std::vector<int>& devices,
                                  uint64_t bytes, SyncScheme scheme) const {
  if (devices.size() <= 1) return 0;
  return group_collective_time(kind, make_group(devices), bytes, scheme);
}

}  // namespace placer
