#pragma once
// Cost profile: the tunable numbers of the cost model (simulator/cost_model.h).
//
// Per op category, the fraction of the device's peak FLOP/s and of its memory bandwidth
// that an op of a given size achieves (efficiency curves of a roofline model); per link
// level, optional overrides of the cluster's nominal latency / bandwidth; the all-reduce
// algorithm; an optional kernel launch overhead. Defaults are shipped (default_profile(),
// datasets/clusters/default.profile.yaml); calibration fits them to a machine.
// File format: docs/formats/profile.md.
//
//   CostProfile p = load_cost_profile("datasets/clusters/default.profile.yaml");
//   p.op(OpCategory::kMatMul).compute = EfficiencyCurve::constant(0.7);
//   CostModel cost(cluster, p);

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/cluster/cluster.h"
#include "src/graph/types.h"

namespace placer {

/// Efficiency (a fraction of peak) as a piecewise-linear function of log10(size).
/// Outside the points the curve is flat (clamped to the first / last value).
struct EfficiencyCurve {
  /// (log10(size), efficiency) with strictly increasing x; a single point = a constant.
  std::vector<std::pair<double, double>> points{{0.0, 1.0}};

  static EfficiencyCurve constant(double efficiency);
  static EfficiencyCurve ramp(std::vector<std::pair<double, double>> points);

  bool is_constant() const { return points.size() == 1; }
  /// Efficiency at `size` (FLOPs or bytes); size <= 0 gives the first point's value.
  double at(double size) const;

  bool operator==(const EfficiencyCurve& o) const { return points == o.points; }
  bool operator!=(const EfficiencyCurve& o) const { return !(*this == o); }
};

/// Efficiency curves of one op category.
struct OpCostProfile {
  EfficiencyCurve compute;  ///< fraction of peak FLOP/s vs the op's FLOPs
  /// Per-dtype compute curves that replace `compute` for ops of that dtype. FP32 GEMMs run
  /// on the CUDA cores and BF16 ones on the tensor cores: a small GEMM takes about the same
  /// few microseconds in both, so its fraction of the (15x different) peaks differs, and one
  /// curve over FLOPs cannot hold both (measured on an H100: docs/results.md).
  std::map<DType, EfficiencyCurve> compute_by_dtype;
  EfficiencyCurve memory;   ///< fraction of memory bandwidth vs the op's bytes accessed
  /// Per-dtype memory curves that replace `memory` for ops of that dtype (PyTorch's bf16
  /// element-wise and normalization kernels move fewer bytes per thread than the f32 ones
  /// and reach a different fraction of the bandwidth; measured on an H100).
  std::map<DType, EfficiencyCurve> memory_by_dtype;
  /// Host time to issue one op of this category (framework dispatch: Python, autograd,
  /// the CUDA launch call), seconds. The device's host issues ops in order; an op cannot
  /// start before it is issued, so chains of small ops become host-bound.
  double dispatch = 0;
  /// Fused attention only: seconds per query-key score of a forward op and of a backward op,
  /// added to the time of its FLOPs on the compute curve. The softmax's exponentials run on
  /// the special-function units, about 1/250 of the tensor cores' rate on an SM90 GPU, once
  /// per score whatever the head dim, so at equal FLOPs a head dim of 64 takes longer than
  /// 128 (CostModel::op_time; docs/calibration.md, "Attention"). 0 = no per-score term.
  double score_time = 0;
  double backward_score_time = 0;

  /// The compute curve of ops of `dtype`: its own curve if it has one, else `compute`.
  const EfficiencyCurve& compute_for(DType dtype) const {
    const auto it = compute_by_dtype.find(dtype);
    return it == compute_by_dtype.end() ? compute : it->second;
  }

  /// The memory curve of ops of `dtype`: its own curve if it has one, else `memory`.
  const EfficiencyCurve& memory_for(DType dtype) const {
    const auto it = memory_by_dtype.find(dtype);
    return it == memory_by_dtype.end() ? memory : it->second;
  }

  bool operator==(const OpCostProfile& o) const {
    return compute == o.compute && compute_by_dtype == o.compute_by_dtype && memory == o.memory &&
           memory_by_dtype == o.memory_by_dtype && dispatch == o.dispatch &&
           score_time == o.score_time && backward_score_time == o.backward_score_time;
  }
  bool operator!=(const OpCostProfile& o) const { return !(*this == o); }
};

/// Adjusts the cluster's numbers for one link level. Effective bandwidth =
/// (bandwidth > 0 ? bandwidth : cluster's) * bandwidth_efficiency.
struct LinkOverride {
  double latency = -1;                ///< seconds; < 0 = the cluster's
  double bandwidth = -1;              ///< bytes/s; <= 0 = the cluster's
  double bandwidth_efficiency = 1.0;  ///< achievable fraction of the bandwidth, (0, 1]

  bool operator==(const LinkOverride& o) const {
    return latency == o.latency && bandwidth == o.bandwidth &&
           bandwidth_efficiency == o.bandwidth_efficiency;
  }
  bool operator!=(const LinkOverride& o) const { return !(*this == o); }
};

/// All-reduce algorithm used when a plan asks for SyncScheme::kAuto (and for the
/// collectives of partitioned operators). kAuto = the fastest for each call.
enum class CollectiveAlgorithm : uint8_t { kRing, kTree, kHierarchical, kAuto };
const char* to_string(CollectiveAlgorithm a);
/// "ring", "tree", "hierarchical", "auto".
bool parse_collective_algorithm(const std::string& s, CollectiveAlgorithm* out);

/// The collectives the cost model times (CostModel::collective_time).
/// kAllToAll: every rank sends a 1/p share of its buffer to every other rank (expert-parallel
/// dispatch and combine); without a measured curve it is timed from the link bandwidths
/// (docs/simulator.md, "Collectives").
enum class CollectiveKind : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kAllToAll
};
inline constexpr int kNumCollectiveKinds = 5;
/// "all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all".
const char* to_string(CollectiveKind k);
bool parse_collective_kind(const std::string& s, CollectiveKind* out);

/// nccl-tests' bus-bandwidth factor: busbw = algbw * factor (all_reduce 2(p-1)/p, all_gather,
/// reduce_scatter and all_to_all (p-1)/p, broadcast 1). A collective of `bytes` moves bytes *
/// factor over the busiest link.
double bus_factor(CollectiveKind kind, int ranks);

/// A measured collective (fitted by `placer calibrate fit`): for a group of p ranks and a
/// message of `bytes` (the full buffer, as nccl-tests' "size"),
///   time = latency + latency_per_rank * (p - 2)
///          + bytes * bus_factor(kind, p) / (bus_bandwidth * efficiency(bytes)).
/// An alpha-beta fit has a constant efficiency of 1; a ramp is a piecewise curve.
struct CollectiveCurve {
  double latency = 0;          ///< seconds (alpha), >= 0
  /// Seconds of latency per rank beyond two (a ring's steps grow with the group; fitted
  /// when the measurements cover several group sizes), >= 0.
  double latency_per_rank = 0;
  double bus_bandwidth = 0;    ///< bytes/s, > 0
  EfficiencyCurve efficiency;  ///< fraction of bus_bandwidth vs log10(bytes)
  int ranks = 0;               ///< group size of the measurements (informational; 0 = unknown)

  double time(CollectiveKind kind, int ranks_in_group, double bytes) const;

  bool operator==(const CollectiveCurve& o) const {
    return latency == o.latency && latency_per_rank == o.latency_per_rank &&
           bus_bandwidth == o.bus_bandwidth &&
           efficiency == o.efficiency && ranks == o.ranks;
  }
  bool operator!=(const CollectiveCurve& o) const { return !(*this == o); }
};

/// The hierarchical NCCL model (simulator/nccl_collectives.h, docs/simulator.md
/// "Hierarchical NCCL model"): the numbers NCCL's ring, tree and NVLS algorithms run at on
/// each level. Enabled when `intra.bus_bandwidth` > 0; then every collective without a
/// measured curve of its kind and level is timed by it instead of the link formulas.
struct NcclModel {
  /// One host (an NVLink domain under a topology): ring bus bandwidth between its GPUs, the
  /// latency (latency + latency_per_rank * (p - 2)) and the efficiency ramp vs message size.
  CollectiveCurve intra;
  /// Between hosts: bus_bandwidth is what ONE NIC carries; a group uses as many NICs per host
  /// as it has GPUs on distinct NICs there. Latency as above with p the group's ranks.
  CollectiveCurve inter;
  /// All-reduce algorithm bandwidth (bytes / s of the buffer) with in-switch reduction
  /// (NVLink SHARP) inside a host; 0 = the level has no NVLS.
  double nvls_bandwidth = 0;
  int gpus_per_nic = 1;  ///< GPUs of a host that share one NIC (rail)

  bool enabled() const { return intra.bus_bandwidth > 0; }
  bool operator==(const NcclModel& o) const {
    return intra == o.intra && inter == o.inter && nvls_bandwidth == o.nvls_bandwidth &&
           gpus_per_nic == o.gpus_per_nic;
  }
  bool operator!=(const NcclModel& o) const { return !(*this == o); }
};

/// How well one fitted term reproduces its measurements (relative errors |pred - meas| / meas).
struct FitError {
  double median = 0;
  double p90 = 0;
  int points = 0;

  bool operator==(const FitError& o) const {
    return median == o.median && p90 == o.p90 && points == o.points;
  }
  bool operator!=(const FitError& o) const { return !(*this == o); }
};

struct CostProfile {
  std::string name = "default";
  std::string description;
  std::array<OpCostProfile, kNumOpCategories> ops{};  ///< indexed by OpCategory
  std::array<LinkOverride, kNumLinkLevels> links{};   ///< indexed by LinkLevel (kSame unused)
  CollectiveAlgorithm all_reduce = CollectiveAlgorithm::kAuto;
  double launch_overhead = -1;  ///< seconds per op; < 0 = each device's own
  /// Compute slowdown while the device also runs a collective (shared SMs and memory
  /// bandwidth): an op that starts while a collective of its device is in flight takes this
  /// many times longer (point-to-point transfers do not count). 1 = no interference.
  double overlap_slowdown = 1.0;
  /// The host waits for each point-to-point transfer it sends or receives (Megatron's
  /// pipeline p2p synchronises after batch_isend_irecv), so later ops are issued after it.
  bool p2p_host_sync = false;
  /// Eager MoE layers (Megatron-core's token dispatchers): each MoE op's host dispatch is its
  /// count of host-issued calls (simulator/moe_host.cpp) times its category's `dispatch`, and the
  /// host waits once per MoE layer forward for the dispatch op's device work (the per-expert token
  /// counts copied to the host before the all-to-all).
  bool moe_host_sync = false;
  /// Host time between each MoE token-count sync and the next kernel launch, seconds: the
  /// framework's work after the device-to-host copy returns (the split lists, the
  /// permutation's set-up) that the device waits for. Only with moe_host_sync.
  double moe_sync_host_time = 0;
  /// Host time per micro-batch per pipeline stage outside the ops (the framework's
  /// schedule: fetching and broadcasting the batch, loss bookkeeping, p2p set-up), seconds.
  /// Charged to the host before the stage's first forward op of each micro-batch.
  double micro_batch_overhead = 0;
  /// Host time of one FSDP2 hook that issues work, seconds: each unit's pre-forward and
  /// post-backward hooks, and each block's pre-backward hook (unshard, copies, reduce). It
  /// delays the issue of the unit's next op; the device waits only when the host is not
  /// ahead (at the start of a step). Only with data_parallel.fsdp.
  double fsdp_hook_host_time = 0;
  /// Optional measured curves per collective kind and link level (kIntraHost: the group is
  /// on one host; kInterHost: it spans hosts). When present, CostModel times that collective
  /// with the curve instead of its alpha-beta formulas (docs/formats/profile.md).
  std::array<std::array<std::optional<CollectiveCurve>, kNumLinkLevels>, kNumCollectiveKinds>
      collective_curves{};
  /// The hierarchical NCCL model; disabled (the default) = curves and link formulas only.
  NcclModel nccl;
  /// Fit quality per term ("collective_curves.all_reduce.intra_host", "ops.matmul.compute",
  /// "links.inter_host", "launch_overhead", ...); informational, written by calibration.
  std::map<std::string, FitError> fit_errors;

  OpCostProfile& op(OpCategory c) { return ops[static_cast<int>(c)]; }
  const OpCostProfile& op(OpCategory c) const { return ops[static_cast<int>(c)]; }
  LinkOverride& link(LinkLevel l) { return links[static_cast<int>(l)]; }
  const LinkOverride& link(LinkLevel l) const { return links[static_cast<int>(l)]; }
  std::optional<CollectiveCurve>& curve(CollectiveKind k, LinkLevel l) {
    return collective_curves[static_cast<int>(k)][static_cast<int>(l)];
  }
  const std::optional<CollectiveCurve>& curve(CollectiveKind k, LinkLevel l) const {
    return collective_curves[static_cast<int>(k)][static_cast<int>(l)];
  }
  bool has_collective_curves() const;

  /// Throws ValidationError "<where>: <field>: ..." on a non-positive or > 2 efficiency,
  /// x values that do not increase, a negative latency, a NaN.
  void validate(const std::string& where = "cost profile") const;

  bool operator==(const CostProfile& o) const;
  bool operator!=(const CostProfile& o) const { return !(*this == o); }
};

/// The shipped defaults (also datasets/clusters/default.profile.yaml); sources in
/// cost_profile.cpp and docs/formats/profile.md.
CostProfile default_profile();
/// Every efficiency = `efficiency` (constant), no link overrides, ring all-reduce, device
/// launch overheads. Makes simulated times hand-computable (tests).
CostProfile uniform_profile(double efficiency = 1.0);

/// Reads a *.profile.yaml. Categories, link levels and keys left out keep the defaults of
/// default_profile(). Errors: FileError (cannot read), FormatError naming the file and field
/// (malformed YAML, unknown key, wrong format_version major), ValidationError (bad values).
CostProfile load_cost_profile(const std::string& path);
/// As load_cost_profile, from text; `file` names the source in errors.
CostProfile parse_cost_profile(const std::string& yaml_text, const std::string& file = "profile");
/// The profile as YAML text (format_version "1.0"), every category and level written.
std::string cost_profile_to_yaml(const CostProfile& profile);
/// Writes cost_profile_to_yaml(profile) to `path`; FileError when it cannot be written.
void save_cost_profile(const CostProfile& profile, const std::string& path);

}  // namespace placer
