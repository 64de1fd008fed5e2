#include "simulator/cost_profile.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "src/cluster/cluster_limits.h"
#include "src/io/units.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer {

// ---- EfficiencyCurve -------------------------------------------------------------------

EfficiencyCurve EfficiencyCurve::constant(double efficiency) {
  EfficiencyCurve c;
  c.points = {{0.0, efficiency}};
  return c;
}

EfficiencyCurve EfficiencyCurve::ramp(std::vector<std::pair<double, double>> points) {
  EfficiencyCurve c;
  c.points = std::move(points);
  return c;
}

double EfficiencyCurve::at(double size) const {
  if (points.size() == 1) return points[0].second;
  if (!(size > 0)) return points.front().second;
  const double x = std::log10(size);
  if (x <= points.front().first) return points.front().second;
  if (x >= points.back().first) return points.back().second;
  // Few points (<= ~8): a linear scan beats a binary search.
  size_t i = 1;
  while (points[i].first < x) ++i;
  const auto& a = points[i - 1];
  const auto& b = points[i];
  return a.second + (b.second - a.second) * (x - a.first) / (b.first - a.first);
}

// ---- names ------------------------------------------------------------------------------

const char* to_string(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::kRing:
      return "ring";
    case CollectiveAlgorithm::kTree:
      return "tree";
    case CollectiveAlgorithm::kHierarchical:
      return "hierarchical";
    case CollectiveAlgorithm::kAuto:
      return "auto";
  }
  return "auto";
}

bool parse_collective_algorithm(const std::string& s, CollectiveAlgorithm* out) {
  for (CollectiveAlgorithm a : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree,
                                CollectiveAlgorithm::kHierarchical, CollectiveAlgorithm::kAuto}) {
    if (s == to_string(a)) {
      *out = a;
      return true;
    }
  }
  return false;
}

// ---- collectives --------------------------------------------------------------------------

const char* to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
  }
  return "all_reduce";
}

bool parse_collective_kind(const std::string& s, CollectiveKind* out) {
  for (int k = 0; k < kNumCollectiveKinds; ++k) {
    if (s == to_string(static_cast<CollectiveKind>(k))) {
      *out = static_cast<CollectiveKind>(k);
      return true;
    }
  }
  return false;
}

double bus_factor(CollectiveKind kind, int ranks) {
  const double p = ranks, pm1 = ranks - 1;
  if (ranks <= 1) return 0;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2 * pm1 / p;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return pm1 / p;
    case CollectiveKind::kBroadcast:
      return 1;
  }
  return 1;
}

double CollectiveCurve::time(CollectiveKind kind, int ranks_in_group, double bytes) const {
  if (ranks_in_group <= 1) return 0;
  const double alpha = latency + latency_per_rank * std::max(0, ranks_in_group - 2);
  const double moved = bytes * bus_factor(kind, ranks_in_group);
  if (!(moved > 0)) return alpha;
  return alpha + moved / (bus_bandwidth * efficiency.at(bytes));
}

// ---- CostProfile ------------------------------------------------------------------------

namespace {

constexpr double kMaxEfficiency = 2.0;  // > 1 allowed: nominal peaks can be below boost clocks

void validate_curve(const EfficiencyCurve& c, const std::string& where, const std::string& field) {
  if (c.points.empty()) throw ValidationError(format_context(where, field, "empty curve"));
  for (size_t i = 0; i < c.points.size(); ++i) {
    const std::string f = field_index(field, i);
    const double x = c.points[i].first, y = c.points[i].second;
    if (!std::isfinite(x)) throw ValidationError(format_context(where, f, "size is not finite"));
    if (!(y > 0 && y <= kMaxEfficiency)) {
      throw ValidationError(
          format_context(where, f, "efficiency must be in (0, 2], got " + format_double(y)));
    }
    if (i > 0 && !(x > c.points[i - 1].first)) {
      throw ValidationError(format_context(where, f,
                                           "log10(size) values must increase (got " +
                                               format_double(c.points[i - 1].first) + " then " +
                                               format_double(x) + ")"));
    }
  }
}

// The latency, bandwidth and efficiency of one collective curve (also the NCCL model's
// levels), fields named under `base`.
void validate_collective_curve(const CollectiveCurve& c, const std::string& where,
                               const std::string& base) {
  if (!(c.latency_per_rank >= 0) || std::isinf(c.latency_per_rank)) {
    throw ValidationError(
        format_context(where, base + ".latency_per_rank",
                       "must be finite and >= 0, got " + format_double(c.latency_per_rank)));
  }
  if (!(c.latency >= 0) || std::isinf(c.latency)) {
    throw ValidationError(format_context(
        where, base + ".latency", "must be finite and >= 0, got " + format_double(c.latency)));
  }
  if (!(c.bus_bandwidth > 0) || std::isinf(c.bus_bandwidth)) {
    throw ValidationError(
        format_context(where, base + ".bus_bandwidth",
                       "must be finite and > 0, got " + format_double(c.bus_bandwidth)));
  }
  validate_curve(c.efficiency, where, base + ".efficiency");
}

void validate_nccl_model(const NcclModel& m, const std::string& where) {
  validate_collective_curve(m.intra, where, "nccl.intra_host");
  validate_collective_curve(m.inter, where, "nccl.inter_host");
  if (!(m.nvls_bandwidth >= 0) || std::isinf(m.nvls_bandwidth)) {
    throw ValidationError(
        format_context(where, "nccl.intra_host.nvls_bandwidth",
                       "must be finite and >= 0, got " + format_double(m.nvls_bandwidth)));
  }
  if (m.gpus_per_nic < 1) {
    throw ValidationError(format_context(where, "nccl.inter_host.gpus_per_nic", "must be >= 1"));
  }
}

// An op category's per-score times: finite, in [0, 1 us), and only on fused attention.
void validate_score_times(const OpCostProfile& o, int category, const std::string& where) {
  const std::string base = std::string("ops.") + to_string(static_cast<OpCategory>(category));
  for (const auto& [key, value] :
       {std::pair<const char*, double>{"score_time", o.score_time},
        std::pair<const char*, double>{"backward_score_time", o.backward_score_time}}) {
    if (!(value >= 0 && value < 1e-6)) {
      throw ValidationError(format_context(where, base + "." + key,
                                           "must be in [0, 1 us), got " + format_double(value)));
    }
    if (value > 0 && category != static_cast<int>(OpCategory::kAttention)) {
      throw ValidationError(
          format_context(where, base + "." + key, "only the attention entry has scores"));
    }
  }
}

}  // namespace

void CostProfile::validate(const std::string& where) const {
  for (int c = 0; c < kNumOpCategories; ++c) {
    const std::string base = std::string("ops.") + to_string(static_cast<OpCategory>(c));
    validate_curve(ops[c].compute, where, base + ".compute_efficiency");
    for (const auto& [dtype, curve] : ops[c].compute_by_dtype) {
      validate_curve(curve, where, base + ".compute_efficiency_by_dtype." + to_string(dtype));
    }
    validate_curve(ops[c].memory, where, base + ".memory_efficiency");
    for (const auto& [dtype, curve] : ops[c].memory_by_dtype) {
      validate_curve(curve, where, base + ".memory_efficiency_by_dtype." + to_string(dtype));
    }
  }
  for (int l = 1; l < kNumLinkLevels; ++l) {
    const std::string base = std::string("links.") + to_string(static_cast<LinkLevel>(l));
    const LinkOverride& o = links[l];
    if (std::isnan(o.latency)) {
      throw ValidationError(format_context(where, base + ".latency", "is NaN"));
    }
    if (std::isnan(o.bandwidth) || std::isinf(o.bandwidth)) {
      throw ValidationError(format_context(where, base + ".bandwidth", "is not finite"));
    }
    if (!(o.bandwidth_efficiency > 0 && o.bandwidth_efficiency <= 1)) {
      throw ValidationError(
          format_context(where, base + ".bandwidth_efficiency",
                         "must be in (0, 1], got " + format_double(o.bandwidth_efficiency)));
    }
  }
  if (std::isnan(launch_overhead)) {
    throw ValidationError(format_context(where, "launch_overhead", "is NaN"));
  }
  for (int c = 0; c < kNumOpCategories; ++c) validate_score_times(ops[c], c, where);
  for (int c = 0; c < kNumOpCategories; ++c) {
    const double d = ops[c].dispatch;
    if (!(d >= 0 && d < 1)) {
      throw ValidationError(format_context(
          where, std::string("ops.") + to_string(static_cast<OpCategory>(c)) + ".dispatch",
          "must be in [0, 1 s), got " + format_double(d)));
    }
  }
  const std::pair<const char*, double> host_times[] = {
      {"micro_batch_overhead", micro_batch_overhead},
      {"moe_sync_host_time", moe_sync_host_time},
      {"fsdp_hook_host_time", fsdp_hook_host_time}};
  for (const auto& [field, t] : host_times) {
    if (!(t >= 0 && t < 1)) {
      throw ValidationError(
          format_context(where, field, "must be in [0, 1 s), got " + format_double(t)));
    }
  }
  if (!(overlap_slowdown >= 1 && overlap_slowdown <= 10)) {
    throw ValidationError(format_context(where, "overlap_slowdown",
                                         "must be in [1, 10], got " + format_double(overlap_slowdown)));
  }
  for (int k = 0; k < kNumCollectiveKinds; ++k) {
    for (int l = 0; l < kNumLinkLevels; ++l) {
      const std::optional<CollectiveCurve>& c = collective_curves[k][l];
      if (!c) continue;
      const std::string base = std::string("collective_curves.") +
                               to_string(static_cast<CollectiveKind>(k)) + "." +
                               to_string(static_cast<LinkLevel>(l));
      if (l != static_cast<int>(LinkLevel::kIntraHost) &&
          l != static_cast<int>(LinkLevel::kInterHost)) {
        throw ValidationError(
            format_context(where, base, "curves exist only for intra_host and inter_host"));
      }
      validate_collective_curve(*c, where, base);
      if (c->ranks < 0) {
        throw ValidationError(format_context(where, base + ".ranks", "must be >= 0"));
      }
    }
  }
  if (nccl.enabled()) validate_nccl_model(nccl, where);
  for (const auto& [term, e] : fit_errors) {
    if (!(e.median >= 0) || !(e.p90 >= 0) || std::isinf(e.median) || std::isinf(e.p90) ||
        e.points < 0) {
      throw ValidationError(format_context(where, "fit_errors." + term,
                                           "median and p90 must be finite and >= 0, points "
                                           ">= 0"));
    }
  }
}

bool CostProfile::has_collective_curves() const {
  for (const auto& per_kind : collective_curves) {
    for (const auto& c : per_kind) {
      if (c) return true;
    }
  }
  return false;
}

bool CostProfile::operator==(const CostProfile& o) const {
  return name == o.name && description == o.description && ops == o.ops && links == o.links &&
         all_reduce == o.all_reduce && launch_overhead == o.launch_overhead &&
         overlap_slowdown == o.overlap_slowdown && p2p_host_sync == o.p2p_host_sync &&
         moe_host_sync == o.moe_host_sync && moe_sync_host_time == o.moe_sync_host_time &&
         micro_batch_overhead == o.micro_batch_overhead &&
         fsdp_hook_host_time == o.fsdp_hook_host_time && collective_curves == o.collective_curves &&
         nccl == o.nccl && fit_errors == o.fit_errors;
}

CostProfile uniform_profile(double efficiency) {
  CostProfile p;
  p.name = "uniform";
  for (OpCostProfile& o : p.ops) {
    o.compute = EfficiencyCurve::constant(efficiency);
    o.memory = EfficiencyCurve::constant(efficiency);
  }
  p.all_reduce = CollectiveAlgorithm::kRing;
  return p;
}

CostProfile default_profile() {
  // Sources (see docs/formats/profile.md for the discussion):
  //  [1] NVIDIA, "Matrix Multiplication Background User's Guide" (docs.nvidia.com/deeplearning/
  //      performance): GEMMs are latency / wave-quantization bound when small and approach
  //      peak only for large M, N, K.
  //  [2] Baidu DeepBench GEMM results, as tabulated in the openai-gemm README: on a Pascal
  //      GPU (~11 TFLOP/s f32) a 16x1760x1760 GEMM (1e8 FLOPs) runs at ~2.2-2.5 TFLOP/s
  //      (~0.2 of peak), 128x1760x1760 (8e8) at ~7 (~0.6), 7000x1760x1760 (4e10) at ~10 (~0.9).
  //  [3] STREAM / BabelStream: streaming kernels reach ~80-90% of nominal DRAM bandwidth on
  //      large arrays; small arrays do not fill the memory pipeline.
  //  [4] nccl-tests PERFORMANCE.md: bus bandwidth of large collectives is ~80-90% of the
  //      link's nominal speed (NVLink / PCIe), ~90%+ of line rate on InfiniBand.
  CostProfile p;
  p.name = "default";
  p.description =
      "Shipped defaults: GEMM ramps to 0.8 of peak for large GEMMs [1,2]; streaming ops reach "
      "0.8 of memory bandwidth on large tensors [3]; links at 0.8-0.9 of nominal [4].";
  using C = EfficiencyCurve;
  const C stream = C::ramp({{4, 0.05}, {5, 0.2}, {6, 0.5}, {7, 0.75}, {8, 0.8}});
  const C stream_strided = C::ramp({{4, 0.05}, {5, 0.15}, {6, 0.4}, {7, 0.6}, {8, 0.65}});
  const C reduce_like = C::ramp({{4, 0.05}, {5, 0.15}, {6, 0.4}, {7, 0.6}, {8, 0.7}});
  auto set = [&](OpCategory c, C compute, C memory) {
    p.op(c).compute = std::move(compute);
    p.op(c).memory = std::move(memory);
  };
  set(OpCategory::kMatMul,
      C::ramp({{6, 0.03}, {7, 0.08}, {8, 0.2}, {9, 0.55}, {10, 0.75}, {11, 0.8}}), stream);
  set(OpCategory::kConv,
      C::ramp({{6, 0.03}, {7, 0.08}, {8, 0.2}, {9, 0.45}, {10, 0.65}, {11, 0.7}}), stream);
  set(OpCategory::kElementwise, C::constant(0.5), stream);
  set(OpCategory::kNormalization, C::constant(0.3), stream_strided);
  set(OpCategory::kReduction, C::constant(0.3), reduce_like);
  set(OpCategory::kSoftmax, C::constant(0.3), stream_strided);
  set(OpCategory::kPooling, C::constant(0.3), reduce_like);
  set(OpCategory::kEmbedding, C::constant(0.3), C::ramp({{4, 0.05}, {6, 0.3}, {8, 0.5}}));
  set(OpCategory::kRecurrent, C::ramp({{6, 0.02}, {8, 0.1}, {9, 0.3}, {10, 0.45}, {11, 0.5}}),
      stream_strided);
  set(OpCategory::kDataMovement, C::constant(0.5), stream_strided);
  set(OpCategory::kOptimizer, C::constant(0.5), stream);
  set(OpCategory::kCommunication, C::constant(0.5), stream);
  set(OpCategory::kInput, C::constant(1.0), C::constant(1.0));  // costs nothing anyway
  set(OpCategory::kOther, C::constant(0.3), reduce_like);
  // Fused attention without a measured curve runs as the GEMMs do (see read_cost_profile).
  p.op(OpCategory::kAttention) = p.op(OpCategory::kMatMul);
  p.link(LinkLevel::kIntraHost).bandwidth_efficiency = 0.8;
  p.link(LinkLevel::kHostDevice).bandwidth_efficiency = 0.8;
  p.link(LinkLevel::kInterHost).bandwidth_efficiency = 0.9;
  p.all_reduce = CollectiveAlgorithm::kAuto;
  p.launch_overhead = -1;
  return p;
}

// ---- YAML -------------------------------------------------------------------------------

namespace {

EfficiencyCurve read_curve(const YamlReader& r, const YAML::Node& n, const std::string& field) {
  if (n.IsScalar()) return EfficiencyCurve::constant(r.to_double(n, field));
  if (!n.IsSequence()) {
    r.fail(field,
           "expected a number (a constant efficiency) or a list of [log10(size), "
           "efficiency] pairs");
  }
  if (n.size() == 0) r.fail(field, "empty list (give at least one [log10(size), efficiency])");
  EfficiencyCurve c;
  c.points.clear();
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string f = field_index(field, i);
    const YAML::Node pt = n[i];
    if (!pt.IsSequence() || pt.size() != 2) {
      r.fail(f, "expected a pair [log10(size), efficiency]");
    }
    c.points.emplace_back(r.to_double(pt[0], field_index(f, 0)),
                          r.to_double(pt[1], field_index(f, 1)));
  }
  return c;
}

nlohmann::ordered_json write_curve(const EfficiencyCurve& c) {
  if (c.is_constant()) return c.points[0].second;
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const auto& p : c.points) a.push_back(nlohmann::ordered_json::array({p.first, p.second}));
  return a;
}

// Optional per-dtype curves under `key` of an op category's map.
void read_dtype_curves(const YamlReader& r, const YAML::Node& op, const std::string& field,
                       const char* key, std::map<DType, EfficiencyCurve>* out) {
  const YAML::Node by = op[key];
  if (!by) return;
  const std::string by_field = field_join(field, key);
  r.expect_map(by, by_field);
  for (auto d = by.begin(); d != by.end(); ++d) {
    const std::string name = r.scalar(d->first, by_field);
    DType dtype;
    if (!parse_dtype(name, &dtype)) {
      r.fail(field_join(by_field, name),
             "unknown dtype " + quote_short(name) + " (expected f32, f16, bf16, ...)");
    }
    (*out)[dtype] = read_curve(r, d->second, field_join(by_field, name));
  }
}

nlohmann::ordered_json write_dtype_curves(const std::map<DType, EfficiencyCurve>& curves) {
  nlohmann::ordered_json by = nlohmann::ordered_json::object();
  for (const auto& [dtype, curve] : curves) by[to_string(dtype)] = write_curve(curve);
  return by;
}

}  // namespace

namespace {

// The top-level scalars: name, description, launch overhead, overlap, host sync, micro-batch
// overhead.
void read_scalars(const YamlReader& r, const YAML::Node& root, CostProfile* p) {
  if (root["name"]) p->name = r.scalar(root["name"], "name");
  if (root["description"]) p->description = r.scalar(root["description"], "description");
  if (const YAML::Node n = root["launch_overhead"]; n && !n.IsNull()) {
    const std::string s = r.scalar(n, "launch_overhead");
    p->launch_overhead =
        s == "device" ? -1 : r.to_quantity(n, QuantityKind::kTime, "launch_overhead");
  }
  if (const YAML::Node n = root["overlap_slowdown"]) {
    p->overlap_slowdown = r.to_double(n, "overlap_slowdown");
  }
  if (const YAML::Node n = root["p2p_host_sync"]) p->p2p_host_sync = r.to_bool(n, "p2p_host_sync");
  if (const YAML::Node n = root["moe_host_sync"]) p->moe_host_sync = r.to_bool(n, "moe_host_sync");
  if (const YAML::Node n = root["moe_sync_host_time"]) {
    p->moe_sync_host_time = r.to_quantity(n, QuantityKind::kTime, "moe_sync_host_time");
  }
  if (const YAML::Node n = root["micro_batch_overhead"]) {
    p->micro_batch_overhead = r.to_quantity(n, QuantityKind::kTime, "micro_batch_overhead");
  }
  if (const YAML::Node n = root["fsdp_hook_host_time"]) {
    p->fsdp_hook_host_time = r.to_quantity(n, QuantityKind::kTime, "fsdp_hook_host_time");
  }
}

// One entry of `ops`: `key` names the category, `n` holds its curves.
void read_op(const YamlReader& r, const std::string& key, const YAML::Node& n, CostProfile* p) {
  const std::string field = field_join("ops", key);
  OpCategory cat;
  if (!parse_op_category(key, &cat)) {
    std::string all;
    for (int c = 0; c < kNumOpCategories; ++c) {
      all += std::string(c ? ", " : "") + to_string(static_cast<OpCategory>(c));
    }
    r.fail(field, "unknown op category " + quote_short(key) + " (expected one of: " + all + ")");
  }
  r.check_keys(n, field,
               {"compute_efficiency", "compute_efficiency_by_dtype", "memory_efficiency",
                "memory_efficiency_by_dtype", "dispatch", "score_time", "backward_score_time"});
  OpCostProfile& o = p->op(cat);
  if (const YAML::Node d = n["dispatch"]) {
    o.dispatch = r.to_quantity(d, QuantityKind::kTime, field_join(field, "dispatch"));
  }
  if (const YAML::Node d = n["score_time"]) {
    o.score_time = r.to_quantity(d, QuantityKind::kTime, field_join(field, "score_time"));
  }
  if (const YAML::Node d = n["backward_score_time"]) {
    o.backward_score_time =
        r.to_quantity(d, QuantityKind::kTime, field_join(field, "backward_score_time"));
  }
  if (const YAML::Node c = n["compute_efficiency"]) {
    o.compute = read_curve(r, c, field_join(field, "compute_efficiency"));
  }
  read_dtype_curves(r, n, field, "compute_efficiency_by_dtype", &o.compute_by_dtype);
  read_dtype_curves(r, n, field, "memory_efficiency_by_dtype", &o.memory_by_dtype);
  if (const YAML::Node m = n["memory_efficiency"]) {
    o.memory = read_curve(r, m, field_join(field, "memory_efficiency"));
  }
}

// One entry of `links`: `key` names the level, `n` holds its overrides.
void read_link(const YamlReader& r, const std::string& key, const YAML::Node& n, CostProfile* p) {
  const std::string field = field_join("links", key);
  int level = -1;
  for (int l = 1; l < kNumLinkLevels; ++l) {
    if (key == to_string(static_cast<LinkLevel>(l))) level = l;
  }
  if (level < 0) {
    r.fail(field, "unknown link level '" + key +
                      "' (expected one of: intra_host, host_device, inter_host)");
  }
  r.check_keys(n, field, {"latency", "bandwidth", "bandwidth_efficiency"});
  LinkOverride& o = p->links[level];
  if (const YAML::Node v = n["latency"]) {
    o.latency = r.to_quantity(v, QuantityKind::kTime, field_join(field, "latency"));
  }
  if (const YAML::Node v = n["bandwidth"]) {
    o.bandwidth = r.to_quantity(v, QuantityKind::kBandwidth, field_join(field, "bandwidth"));
    if (!(o.bandwidth > 0)) r.fail_validation(field_join(field, "bandwidth"), "must be > 0");
  }
  if (const YAML::Node v = n["bandwidth_efficiency"]) {
    o.bandwidth_efficiency = r.to_double(v, field_join(field, "bandwidth_efficiency"));
  }
}

void read_collectives(const YamlReader& r, const YAML::Node& coll, CostProfile* p) {
  r.check_keys(coll, "collectives", {"all_reduce"});
  if (const YAML::Node n = coll["all_reduce"]) {
    const std::string s = r.scalar(n, "collectives.all_reduce");
    if (!parse_collective_algorithm(s, &p->all_reduce)) {
      r.fail("collectives.all_reduce", "unknown algorithm " + quote_short(s) +
                                           " (expected ring, tree, hierarchical or auto)");
    }
  }
}

// One curve of `collective_curves.KIND` (the map `n` under `lfield`).
// `extra`, when set, names one further key the caller reads.
CollectiveCurve read_collective_curve(const YamlReader& r, const YAML::Node& n,
                                      const std::string& lfield, const char* extra = nullptr) {
  if (extra) {
    r.check_keys(n, lfield,
                 {"latency", "latency_per_rank", "bus_bandwidth", "efficiency", "ranks", extra});
  } else {
    r.check_keys(n, lfield,
                 {"latency", "latency_per_rank", "bus_bandwidth", "efficiency", "ranks"});
  }
  CollectiveCurve c;
  if (const YAML::Node lr = n["latency_per_rank"]) {
    c.latency_per_rank =
        r.to_quantity(lr, QuantityKind::kTime, field_join(lfield, "latency_per_rank"));
  }
  if (const YAML::Node v = n["latency"]) {
    c.latency = r.to_quantity(v, QuantityKind::kTime, field_join(lfield, "latency"));
  }
  const YAML::Node bw = n["bus_bandwidth"];
  if (!bw) r.fail(field_join(lfield, "bus_bandwidth"), "missing (a bandwidth, e.g. 230 GB/s)");
  c.bus_bandwidth =
      r.to_quantity(bw, QuantityKind::kBandwidth, field_join(lfield, "bus_bandwidth"));
  c.efficiency = EfficiencyCurve::constant(1.0);
  if (const YAML::Node v = n["efficiency"]) {
    c.efficiency = read_curve(r, v, field_join(lfield, "efficiency"));
  }
  if (const YAML::Node v = n["ranks"]) {
    c.ranks = static_cast<int>(r.to_int(v, field_join(lfield, "ranks"), 0, kMaxDevices));
  }
  return c;
}

// One entry of `collective_curves`: `key` names the collective, `n` maps levels to curves.
void read_collective_curves(const YamlReader& r, const std::string& key, const YAML::Node& n,
                            CostProfile* p) {
  const std::string field = field_join("collective_curves", key);
  CollectiveKind kind;
  if (!parse_collective_kind(key, &kind)) {
    r.fail(field, "unknown collective '" + key +
                      "' (expected all_reduce, all_gather, reduce_scatter or broadcast)");
  }
  r.expect_map(n, field);
  for (auto lt = n.begin(); lt != n.end(); ++lt) {
    const std::string lkey = r.scalar(lt->first, field);
    const std::string lfield = field_join(field, lkey);
    LinkLevel level;
    if (lkey == "intra_host") {
      level = LinkLevel::kIntraHost;
    } else if (lkey == "inter_host") {
      level = LinkLevel::kInterHost;
    } else {
      r.fail(lfield,
             "unknown link level " + quote_short(lkey) + " (expected intra_host or inter_host)");
    }
    p->curve(kind, level) = read_collective_curve(r, lt->second, lfield);
  }
}

// The `nccl` section: both levels required.
void read_nccl(const YamlReader& r, const YAML::Node& n, CostProfile* p) {
  r.expect_map(n, "nccl");
  r.check_keys(n, "nccl", {"intra_host", "inter_host"});
  const YAML::Node intra = n["intra_host"], inter = n["inter_host"];
  if (!intra) r.fail("nccl.intra_host", "missing (a host's ring bus bandwidth and latency)");
  if (!inter) r.fail("nccl.inter_host", "missing (one NIC's bus bandwidth and the latency)");
  r.expect_map(intra, "nccl.intra_host");
  r.expect_map(inter, "nccl.inter_host");
  p->nccl.intra = read_collective_curve(r, intra, "nccl.intra_host", "nvls_bandwidth");
  if (const YAML::Node v = intra["nvls_bandwidth"]) {
    p->nccl.nvls_bandwidth =
        r.to_quantity(v, QuantityKind::kBandwidth, "nccl.intra_host.nvls_bandwidth");
  }
  p->nccl.inter = read_collective_curve(r, inter, "nccl.inter_host", "gpus_per_nic");
  if (const YAML::Node v = inter["gpus_per_nic"]) {
    p->nccl.gpus_per_nic = static_cast<int>(r.to_int(v, "nccl.inter_host.gpus_per_nic", 1, 1024));
  }
}

// One entry of `fit_errors`: `key` names the term, `n` holds its errors.
void read_fit_error(const YamlReader& r, const std::string& key, const YAML::Node& n,
                    CostProfile* p) {
  const std::string field = field_join("fit_errors", key);
  r.check_keys(n, field, {"median", "p90", "points"});
  FitError e;
  if (const YAML::Node v = n["median"]) e.median = r.to_double(v, field_join(field, "median"));
  if (const YAML::Node v = n["p90"]) e.p90 = r.to_double(v, field_join(field, "p90"));
  if (const YAML::Node v = n["points"]) {
    e.points = static_cast<int>(r.to_int(v, field_join(field, "points"), 0, INT32_MAX));
  }
  p->fit_errors[key] = e;
}

// Calls read(r, key, value, p) for every entry of the map root[section] (absent or null:
// none).
template <typename ReadEntry>
void read_map_section(const YamlReader& r, const YAML::Node& root, const char* section,
                      CostProfile* p, ReadEntry read) {
  const YAML::Node m = root[section];
  if (!m || m.IsNull()) return;
  r.expect_map(m, section);
  for (auto it = m.begin(); it != m.end(); ++it)
    read(r, r.scalar(it->first, section), it->second, p);
}

CostProfile read_cost_profile(const YAML::Node& root, const std::string& file) {
  YamlReader r(file);
  r.check_format_version(root, 1, 0);
  r.check_keys(root, "",
               {"format_version", "name", "description", "launch_overhead", "overlap_slowdown",
                "p2p_host_sync", "moe_host_sync", "moe_sync_host_time", "micro_batch_overhead",
                "fsdp_hook_host_time", "ops", "links", "collectives", "collective_curves", "nccl",
                "fit_errors"});
  CostProfile p = default_profile();
  read_scalars(r, root, &p);
  read_map_section(r, root, "ops", &p, read_op);
  // A profile without an `attention` entry (every file written before fused attention
  // existed) runs it on its own matmul entry: FlashAttention is tensor-core GEMM work tiled
  // on chip, and the file's GEMM fit is the closest term it has (docs/formats/profile.md).
  const YAML::Node ops = root["ops"];
  if (!ops || !ops.IsMap() || !ops["attention"]) {
    p.op(OpCategory::kAttention) = p.op(OpCategory::kMatMul);
  }
  read_map_section(r, root, "links", &p, read_link);
  if (const YAML::Node coll = root["collectives"]; coll && !coll.IsNull()) {
    read_collectives(r, coll, &p);
  }
  read_map_section(r, root, "collective_curves", &p, read_collective_curves);
  if (const YAML::Node n = root["nccl"]; n && !n.IsNull()) read_nccl(r, n, &p);
  read_map_section(r, root, "fit_errors", &p, read_fit_error);
  p.validate(file);
  return p;
}

nlohmann::ordered_json write_collective_curve(const CollectiveCurve& c) {
  nlohmann::ordered_json o;
  o["latency"] = format_time(c.latency);
  if (c.latency_per_rank > 0) o["latency_per_rank"] = format_time(c.latency_per_rank);
  o["bus_bandwidth"] = format_bandwidth(c.bus_bandwidth);
  o["efficiency"] = write_curve(c.efficiency);
  if (c.ranks > 0) o["ranks"] = c.ranks;
  return o;
}

}  // namespace

CostProfile parse_cost_profile(const std::string& yaml_text, const std::string& file) {
  const YAML::Node root = parse_yaml_text(yaml_text, file);
  return with_yaml_errors(file, [&] { return read_cost_profile(root, file); });
}

CostProfile load_cost_profile(const std::string& path) {
  return parse_cost_profile(read_text_file(path, "cost profile"), path);
}

std::string cost_profile_to_yaml(const CostProfile& p) {
  nlohmann::ordered_json j;
  j["format_version"] = "1.0";
  j["name"] = p.name;
  j["description"] = p.description;
  j["launch_overhead"] =
      p.launch_overhead < 0 ? std::string("device") : format_time(p.launch_overhead);
  if (p.overlap_slowdown != 1.0) j["overlap_slowdown"] = p.overlap_slowdown;
  if (p.p2p_host_sync) j["p2p_host_sync"] = true;
  if (p.moe_host_sync) j["moe_host_sync"] = true;
  if (p.moe_sync_host_time > 0) j["moe_sync_host_time"] = format_time(p.moe_sync_host_time);
  if (p.micro_batch_overhead > 0) j["micro_batch_overhead"] = format_time(p.micro_batch_overhead);
  if (p.fsdp_hook_host_time > 0) j["fsdp_hook_host_time"] = format_time(p.fsdp_hook_host_time);
  nlohmann::ordered_json ops = nlohmann::ordered_json::object();
  for (int c = 0; c < kNumOpCategories; ++c) {
    nlohmann::ordered_json o;
    o["compute_efficiency"] = write_curve(p.ops[c].compute);
    if (!p.ops[c].compute_by_dtype.empty()) {
      o["compute_efficiency_by_dtype"] = write_dtype_curves(p.ops[c].compute_by_dtype);
    }
    o["memory_efficiency"] = write_curve(p.ops[c].memory);
    if (!p.ops[c].memory_by_dtype.empty()) {
      o["memory_efficiency_by_dtype"] = write_dtype_curves(p.ops[c].memory_by_dtype);
    }
    if (p.ops[c].dispatch > 0) o["dispatch"] = format_time(p.ops[c].dispatch);
    if (p.ops[c].score_time > 0) o["score_time"] = format_time(p.ops[c].score_time);
    if (p.ops[c].backward_score_time > 0) {
      o["backward_score_time"] = format_time(p.ops[c].backward_score_time);
    }
    ops[to_string(static_cast<OpCategory>(c))] = o;
  }
  j["ops"] = ops;
  nlohmann::ordered_json links = nlohmann::ordered_json::object();
  for (int l = 1; l < kNumLinkLevels; ++l) {
    const LinkOverride& o = p.links[l];
    nlohmann::ordered_json lo = nlohmann::ordered_json::object();
    if (o.latency >= 0) lo["latency"] = format_time(o.latency);
    if (o.bandwidth > 0) lo["bandwidth"] = format_bandwidth(o.bandwidth);
    lo["bandwidth_efficiency"] = o.bandwidth_efficiency;
    links[to_string(static_cast<LinkLevel>(l))] = lo;
  }
  j["links"] = links;
  j["collectives"] = {{"all_reduce", to_string(p.all_reduce)}};
  // Written only when present, so profiles without them read and write as before.
  if (p.has_collective_curves()) {
    nlohmann::ordered_json curves = nlohmann::ordered_json::object();
    for (int k = 0; k < kNumCollectiveKinds; ++k) {
      nlohmann::ordered_json per = nlohmann::ordered_json::object();
      for (int l = 0; l < kNumLinkLevels; ++l) {
        const std::optional<CollectiveCurve>& c = p.collective_curves[k][l];
        if (!c) continue;
        per[to_string(static_cast<LinkLevel>(l))] = write_collective_curve(*c);
      }
      if (!per.empty()) curves[to_string(static_cast<CollectiveKind>(k))] = per;
    }
    j["collective_curves"] = curves;
  }
  if (p.nccl.enabled()) {
    nlohmann::ordered_json intra = write_collective_curve(p.nccl.intra);
    if (p.nccl.nvls_bandwidth > 0)
      intra["nvls_bandwidth"] = format_bandwidth(p.nccl.nvls_bandwidth);
    nlohmann::ordered_json inter = write_collective_curve(p.nccl.inter);
    if (p.nccl.gpus_per_nic != 1) inter["gpus_per_nic"] = p.nccl.gpus_per_nic;
    j["nccl"] = {{"intra_host", intra}, {"inter_host", inter}};
  }
  if (!p.fit_errors.empty()) {
    nlohmann::ordered_json fe = nlohmann::ordered_json::object();
    for (const auto& [term, e] : p.fit_errors) {
      fe[term] = {{"median", e.median}, {"p90", e.p90}, {"points", e.points}};
    }
    j["fit_errors"] = fe;
  }
  return emit_yaml(j, "placer cost profile (docs/formats/profile.md)");
}

void save_cost_profile(const CostProfile& profile, const std::string& path) {
  write_text_file(path, cost_profile_to_yaml(profile));
}

}  // namespace placer
