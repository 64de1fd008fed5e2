#include "simulator/calibration/fit.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "simulator/calibration/profiler_ops.h"
#include "simulator/calibration/rate_fit.h"
#include "simulator/calibration/round_sig.h"
#include "simulator/cost_model.h"
#include "src/io/units.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer {

// ---- devices ---------------------------------------------------------------------------------

namespace {

std::vector<std::vector<int>> gpus_per_host(const Cluster& c) {
  std::vector<std::vector<int>> out(static_cast<size_t>(c.num_hosts()));
  bool any_gpu = false;
  for (const Device& d : c.devices()) any_gpu |= d.spec.kind == DeviceKind::kGpu;
  for (int i = 0; i < c.num_devices(); ++i) {
    const Device& d = c.device(i);
    if (!any_gpu || d.spec.kind == DeviceKind::kGpu) out[static_cast<size_t>(d.host)].push_back(i);
  }
  return out;
}

int first_gpu(const Cluster& c) {
  for (int i = 0; i < c.num_devices(); ++i) {
    if (c.device(i).spec.kind == DeviceKind::kGpu) return i;
  }
  return 0;
}

int max_per_host(const Cluster& c) {
  int m = 0;
  for (const auto& h : gpus_per_host(c)) m = std::max(m, static_cast<int>(h.size()));
  return m;
}

LinkLevel collective_level(const Cluster& c, const Measurement& m) {
  if (m.hosts > 1) return LinkLevel::kInterHost;
  if (m.hosts == 1) return LinkLevel::kIntraHost;
  return m.devices > max_per_host(c) ? LinkLevel::kInterHost : LinkLevel::kIntraHost;
}

bool collective_kind(const std::string& op, CollectiveKind* k) {
  return parse_collective_kind(op, k);
}

}  // namespace

std::vector<int> group_devices(const Cluster& cluster, int ranks, int hosts,
                               const std::string& where) {
  const std::vector<std::vector<int>> per = gpus_per_host(cluster);
  std::vector<int> out;
  if (ranks < 1) throw ValidationError(where + ": a group needs at least 1 device");
  if (hosts <= 0) {
    for (const auto& h : per) {
      for (int d : h) {
        if (static_cast<int>(out.size()) < ranks) out.push_back(d);
      }
    }
  } else {
    if (hosts > static_cast<int>(per.size())) {
      throw ValidationError(where + ": the measurement spans " + std::to_string(hosts) +
                            " hosts; cluster '" + cluster.name + "' has " +
                            std::to_string(per.size()));
    }
    const int each = (ranks + hosts - 1) / hosts;
    for (int h = 0; h < hosts; ++h) {
      const int want = std::min(each, ranks - static_cast<int>(out.size()));
      if (static_cast<int>(per[static_cast<size_t>(h)].size()) < want) {
        throw ValidationError(where + ": the measurement puts " + std::to_string(each) +
                              " devices on each of " + std::to_string(hosts) + " hosts; host '" +
                              cluster.host(h).name + "' of cluster '" + cluster.name + "' has " +
                              std::to_string(per[static_cast<size_t>(h)].size()));
      }
      for (int i = 0; i < want; ++i)
        out.push_back(per[static_cast<size_t>(h)][static_cast<size_t>(i)]);
    }
  }
  if (static_cast<int>(out.size()) < ranks) {
    throw ValidationError(where + ": the measurement uses " + std::to_string(ranks) +
                          " devices; cluster '" + cluster.name + "' has " +
                          std::to_string(out.size()));
  }
  return out;
}

// ---- fit_profile ------------------------------------------------------------------------------

namespace {

bool compute_bound(OpCategory c) { return c == OpCategory::kMatMul || c == OpCategory::kConv; }

// The op category and dtype of a compute row; false when the row is not an op (nothing
// counted) or its dtype has no peak (counted in *skipped, by reason).
bool compute_row_op(const Measurement& m, OpCategory* cat, DType* dtype,
                    std::map<std::string, int>* skipped) {
  if (!measure_category(m.kind, cat)) return false;
  if (m.dtype == "tf32") {
    ++(*skipped)["tf32 compute rows (the cluster format has no tf32 peak)"];
    return false;
  }
  if (!measure_dtype(m.dtype, dtype)) {
    ++(*skipped)["compute rows with dtype '" + m.dtype + "'"];
    return false;
  }
  return true;
}

std::string gbps(double bytes_per_s) { return fixed(bytes_per_s / 1e9, 1) + " GB/s"; }

struct ComputePoint {
  const Measurement* m = nullptr;  // null for trace ops
  OpCategory cat = OpCategory::kOther;
  DType dtype = DType::kF32;
  double flops = 0, bytes = 0, time = 0;
  // Launch overheads inside `time`: 1 for a CSV row (back-to-back runs: the launch gap plus
  // the kernel); 0 for profiled ops (kernel durations only, as check_profiled_ops compares).
  int kernels = 1;
};

// One latency-rate model (rate_fit.h) per dtype of a category's points: rp[i] belongs to
// pts[i] (size = FLOPs or bytes); peak(dtype) is the rate efficiency 1 means;
// memory_time the memory-bound floor of compute-bound categories (null for memory-bound
// ones). *generic gets the curve of the dtype with the most rows; *by_dtype every dtype's,
// or none when there is only one dtype and *by_dtype (the base's) held no other: the base's
// curves of dtypes without points are kept (an f8 GEMM curve under bf16 traces). A dtype
// measured at one size only gets a constant efficiency (latency and rate cannot be told
// apart).
void fit_rate_curves(const std::vector<const ComputePoint*>& pts, const std::vector<RatePoint>& rp,
                     const std::function<double(DType)>& peak,
                     const std::function<double(double)>& memory_time, bool flops,
                     EfficiencyCurve* generic, std::map<DType, EfficiencyCurve>* by_dtype,
                     std::string* summary) {
  std::map<DType, std::vector<RatePoint>> groups;
  for (size_t i = 0; i < pts.size(); ++i) groups[pts[i]->dtype].push_back(rp[i]);
  std::map<DType, EfficiencyCurve> kept;  // the base's curves of dtypes without points
  for (const auto& [dtype, curve] : *by_dtype) {
    if (!groups.count(dtype)) kept[dtype] = curve;
  }
  by_dtype->clear();
  size_t most = 0;
  for (const auto& [dtype, g] : groups) {
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    for (const RatePoint& r : g) lo = std::min(lo, r.flops), hi = std::max(hi, r.flops);
    EfficiencyCurve curve;
    std::string numbers;
    if (hi <= lo * (1 + 1e-9)) {
      std::vector<double> size, eff;
      for (const RatePoint& r : g) size.push_back(r.flops), eff.push_back(r.flops / (peak(dtype) * r.busy));
      curve = fit_efficiency_curve(size, eff, 1.0, 1e-4, 2.0);
      numbers = fixed(curve.points.front().second, 4) + (flops ? " of peak" : " of memory bw") + " (one size)";
    } else {
      const LatencyRate lr = fit_latency_rate(g, memory_time);
      curve = latency_rate_curve(lr, peak(dtype), lo, hi);
      numbers = "latency " + human_time(lr.latency) + " + " +
                (flops ? fixed(lr.rate / 1e12, 1) + " TFLOP/s" : fixed(lr.rate / 1e9, 0) + " GB/s");
    }
    (*by_dtype)[dtype] = curve;
    if (g.size() > most) most = g.size(), *generic = curve;
    *summary += std::string(summary->empty() ? "" : "; ") + to_string(dtype) + " " + numbers;
  }
  if (groups.size() == 1 && kept.empty()) by_dtype->clear();  // the category curve is the one
  for (const auto& [dtype, curve] : kept) {
    (*by_dtype)[dtype] = curve;
    *summary += std::string("; ") + to_string(dtype) + " kept from the base";
  }
}

// Median of the smallest 5% (at least one) of the values.
double floor_time(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t k = std::max<size_t>(1, v.size() / 20);
  v.resize(k);
  return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

// The steps of fit_profile: sort the measurement rows and the profiled ops into points per
// term (collective curve, link, op category), then fit each term into the profile and report
// it, in the order the report lists them (collectives, links, launch overhead, op categories).
class ProfileFit {
 public:
  ProfileFit(const Cluster& cluster, const CostProfile& base, const FitOptions& options)
      : cluster_(cluster),
        base_(base),
        options_(options),
        gpu_(first_gpu(cluster)),
        spec_(cluster.device(gpu_).spec) {
    rep_.profile = base;
  }

  void add_measurements(const std::vector<MeasurementSet>& measurements) {
    for (const MeasurementSet& set : measurements) {
      for (const Measurement& m : set.rows) {
        if (m.kind == MeasureKind::kCollective) {
          add_collective(m);
        } else if (m.kind == MeasureKind::kMemcpy) {
          add_memcpy(m);
        } else {
          add_compute(m);
        }
      }
    }
  }

  // Profiler traces: one point per CPU-op instance (its kernels' total time). Ops whose
  // inputs the trace recorded (record_shapes) get FLOPs, bytes and dtype from
  // profiled_ops(); others only when the op carries "flops" (compute-bound, trace_dtype).
  void add_traces(const std::vector<ProfilerTrace>& traces) {
    for (const ProfilerTrace& tr : traces) {
      const std::set<long long> covered = add_profiled_ops(tr);
      add_flops_only_ops(tr, covered);
      add_kernel_gaps(tr);
    }
  }

  void fit_collectives() {
    for (const auto& [key, pts] : coll_) {
      fit_collective(static_cast<CollectiveKind>(key.first), static_cast<LinkLevel>(key.second),
                     pts);
    }
  }

  void fit_links() {
    for (const auto& [lv, xt] : link_pts_)
      fit_link(static_cast<LinkLevel>(lv), xt.first, xt.second);
  }

  // Launch overhead, then one latency + rate curve per op category (and dtype).
  void fit_compute() {
    if (compute_.empty() && kernel_times_.empty()) return;
    fit_launch_overhead();
    const CostProfile& p = rep_.profile;
    const double launch = p.launch_overhead >= 0 ? p.launch_overhead : spec_.launch_overhead;
    const std::map<int, std::vector<const ComputePoint*>> by_cat = compute_by_category();
    std::map<int, std::string> rate_summary;  // category -> fitted numbers
    for (const auto& [ci, pts] : by_cat) {
      rate_summary[ci] = fit_category(static_cast<OpCategory>(ci), pts, launch);
    }
    // Errors with the whole op model (launch + roofline), as the simulator will use it.
    CostModel cost(cluster_, rep_.profile);
    for (const auto& [ci, pts] : by_cat) {
      report_category(cost, static_cast<OpCategory>(ci), pts, rate_summary[ci]);
    }
  }

  FitReport finish() {
    for (const auto& [reason, n] : skipped_) {
      rep_.notes.push_back("skipped " + std::to_string(n) + " row(s): " + reason);
    }
    if (rep_.terms.empty()) {
      throw ValidationError(
          "calibrate fit: nothing to fit (no collective, link, compute rows or profiled kernels)");
    }
    rep_.profile.validate("fitted profile");
    return std::move(rep_);
  }

 private:
  // ---- inputs

  void add_link_point(LinkLevel level, const Measurement& m) {
    link_pts_[static_cast<int>(level)].first.push_back(m.bytes);
    link_pts_[static_cast<int>(level)].second.push_back(m.time_s);
  }

  void add_collective(const Measurement& m) {
    if (m.op == "send_recv") {
      add_link_point(m.hosts > 1 ? LinkLevel::kInterHost : LinkLevel::kIntraHost, m);
      return;
    }
    CollectiveKind k;
    if (!collective_kind(m.op, &k)) {
      ++skipped_["collective '" + m.op + "' is not modelled"];
      return;
    }
    if (m.devices < 2 || !(m.bytes > 0)) {
      ++skipped_["collective rows with < 2 ranks or 0 bytes (no bus bandwidth)"];
      return;
    }
    const int level = static_cast<int>(collective_level(cluster_, m));
    coll_[{static_cast<int>(k), level}].push_back({m.bytes, m.devices, m.time_s});
  }

  void add_memcpy(const Measurement& m) {
    LinkLevel level;
    if (m.op == "p2p") {
      level = m.hosts > 1 ? LinkLevel::kInterHost : LinkLevel::kIntraHost;
    } else if (m.op == "h2d" || m.op == "d2h") {
      level = LinkLevel::kHostDevice;
    } else {
      ++skipped_["memcpy " + m.op +
                 " (device-local copies measure memory bandwidth, which the cluster file holds)"];
      return;
    }
    if (!(m.bytes > 0)) {
      ++skipped_["memcpy rows with 0 bytes"];
      return;
    }
    add_link_point(level, m);
  }

  void add_compute(const Measurement& m) {
    ComputePoint c;
    c.m = &m;
    if (!compute_row_op(m, &c.cat, &c.dtype, &skipped_)) return;
    c.flops = m.flops;
    c.bytes = m.bytes;
    c.time = m.time_s;
    if (compute_bound(c.cat) ? !(c.flops > 0) : !(c.bytes > 0)) {
      ++skipped_[std::string(to_string(m.kind)) + " rows without " +
                 (compute_bound(c.cat) ? "flops" : "bytes")];
      return;
    }
    compute_.push_back(c);
  }

  // The trace's ops with recorded inputs and a work rule; returns their op ids.
  std::set<long long> add_profiled_ops(const ProfilerTrace& tr) {
    std::set<long long> covered;
    for (const ProfiledOp& r : profiled_ops(tr)) {
      if (r.kind != "kernel" || !r.has_shapes || !r.known) continue;
      if (r.category == OpCategory::kOther || r.category == OpCategory::kInput ||
          r.category == OpCategory::kCommunication) {
        continue;
      }
      if (r.category == OpCategory::kAttention) {
        // The attention curve comes from SDPA sweeps over shapes (scripts/
        // fit_attention_curve.py), not from a step's few shapes: the base's is kept.
        ++skipped_["profiled attention ops (ops.attention is kept from the base profile)"];
        covered.insert(r.op_id);
        continue;
      }
      if (compute_bound(r.category) ? !(r.flops > 0) : !(r.bytes > 0)) continue;
      ComputePoint c;
      c.cat = r.category;
      c.dtype = r.dtype;
      c.flops = r.flops;
      c.bytes = r.bytes;
      c.time = r.measured_s;
      c.kernels = 0;  // kernel durations: no gaps between kernels in them
      compute_.push_back(c);
      covered.insert(r.op_id);
    }
    return covered;
  }

  // Every kernel's duration (for the launch overhead), and the compute-bound ops not in
  // `covered` that carry "flops".
  void add_flops_only_ops(const ProfilerTrace& tr, const std::set<long long>& covered) {
    std::map<long long, ComputePoint> per_op;
    for (const ProfiledKernel& k : tr.kernels) {
      if (k.cat != "kernel") continue;
      kernel_times_.push_back(k.dur_s);
      if (k.op_id < 0 || covered.count(k.op_id) || !(k.op_flops > 0) ||
          !compute_bound(k.category)) {
        continue;
      }
      ComputePoint& c = per_op[k.op_id];
      c.cat = k.category;
      c.dtype = options_.trace_dtype;
      c.flops = k.op_flops;
      c.time += k.dur_s;
      c.kernels = 0;  // kernel time only: no launch overheads to take off
    }
    for (auto& [id, c] : per_op) {
      if (c.time > 0) compute_.push_back(c);
    }
  }

  // The idle time between each kernel's end and the next kernel's start (in start order;
  // overlapping kernels, e.g. of two streams, give none).
  void add_kernel_gaps(const ProfilerTrace& tr) {
    std::vector<std::pair<double, double>> spans;  // start, end
    for (const ProfiledKernel& k : tr.kernels) {
      if (k.cat == "kernel") spans.emplace_back(k.start_s, k.start_s + k.dur_s);
    }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) {
      const double gap = spans[i].first - spans[i - 1].second;
      if (gap >= 0) kernel_gaps_.push_back(gap);
    }
  }

  // ---- collectives and links

  void add_term(const TermFit& tf) {
    rep_.profile.fit_errors[tf.term] = tf.error;
    rep_.terms.push_back(tf);
  }

  void fit_collective(CollectiveKind kind, LinkLevel level,
                      const std::vector<CollectivePoint>& pts) {
    TermFit tf;
    tf.term = std::string("collective_curves.") + to_string(kind) + "." + to_string(level);
    const CollectiveCurve c = fit_collective_curve(kind, pts, options_.line_tolerance, &tf.error,
                                                   &tf.model, options_.knot_step);
    rep_.profile.curve(kind, level) = c;
    tf.points = static_cast<int>(pts.size());
    tf.values = "latency " + human_time(c.latency) +
                (c.latency_per_rank > 0 ? " + " + human_time(c.latency_per_rank) + " per rank > 2"
                                        : std::string()) +
                ", bus bw " + gbps(c.bus_bandwidth) + ", ranks " + std::to_string(c.ranks);
    add_term(tf);
  }

  // Sizes within two decades do not pin the latency down (a line through large messages
  // only): the base's latency, and the bandwidth that fits best with it.
  AlphaBeta fit_bandwidth_only(LinkLevel level, const std::vector<double>& xs,
                               const std::vector<double>& ts) const {
    AlphaBeta ab;
    const LinkOverride& o = base_.link(level);
    ab.alpha = o.latency >= 0 ? o.latency : cluster_.link(level).latency;
    // min sum ((alpha + beta x_i - t_i) / t_i)^2 over beta
    double num = 0, den = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double x = xs[i], t = ts[i];
      num += x * (t - ab.alpha) / (t * t);
      den += x * x / (t * t);
    }
    if (!(num > 0 && den > 0)) {
      throw ValidationError(std::string("links.") + to_string(level) +
                            ": the measured times are below the latency; cannot fit a bandwidth");
    }
    ab.beta = num / den;
    return ab;
  }

  void fit_link(LinkLevel level, const std::vector<double>& xs, const std::vector<double>& ts) {
    TermFit tf;
    tf.term = std::string("links.") + to_string(level);
    const double xmin = *std::min_element(xs.begin(), xs.end());
    const double xmax = *std::max_element(xs.begin(), xs.end());
    AlphaBeta ab;
    if (xmax >= 100 * xmin) {
      ab = fit_alpha_beta(xs, ts);
      tf.model = "alpha-beta";
    } else {
      ab = fit_bandwidth_only(level, xs, ts);
      tf.model = "bandwidth only";
    }
    ab.alpha = round_sig(ab.alpha);
    ab.beta = 1 / round_sig(1 / ab.beta);
    LinkOverride& o = rep_.profile.link(level);
    o.latency = ab.alpha;
    o.bandwidth = 1 / ab.beta;
    o.bandwidth_efficiency = 1.0;
    std::vector<double> pred;
    for (double b : xs) pred.push_back(ab.alpha + ab.beta * b);
    tf.error = relative_errors(pred, ts);
    tf.points = static_cast<int>(xs.size());
    tf.values = "latency " + human_time(ab.alpha) + ", bandwidth " + gbps(1 / ab.beta);
    add_term(tf);
  }

  // ---- compute

  // Back-to-back microbenchmark rows define it; trace kernel durations (no gaps between
  // kernels) only when there are too few rows. The launch overhead is what the smallest
  // kernels cost (their roofline time is ~0), from enough of them; otherwise the base's (or
  // each device's own). A trace's kernel durations leave out the gap between one kernel's
  // end and the next one's start, which a back-to-back row holds: from traces the launch
  // overhead is the smallest kernels' duration plus the smallest gaps (fastest 5% each).
  void fit_launch_overhead() {
    std::vector<double> times;
    for (const ComputePoint& c : compute_) {
      if (c.m) times.push_back(c.time);
    }
    const bool from_traces = times.empty();
    if (times.size() < 8) times.insert(times.end(), kernel_times_.begin(), kernel_times_.end());
    constexpr size_t kMinLaunchSamples = 8;
    if (times.size() < kMinLaunchSamples) {
      rep_.notes.push_back("launch overhead kept (" + std::to_string(times.size()) +
                           " compute rows / kernels; at least " +
                           std::to_string(kMinLaunchSamples) + " are needed to estimate it)");
      return;
    }
    CostProfile& p = rep_.profile;
    const double kernel = floor_time(times);
    const bool gaps = from_traces && kernel_gaps_.size() >= kMinLaunchSamples;
    const double gap = gaps ? floor_time(kernel_gaps_) : 0;
    p.launch_overhead = round_sig(kernel + gap);
    TermFit tf;
    tf.term = "launch_overhead";
    tf.model = "fastest 5%";
    tf.values = human_time(p.launch_overhead) + " (median of the fastest 5% of " +
                std::to_string(times.size()) + " kernels / rows" +
                (gaps ? ", " + human_time(kernel) + ", plus that of " +
                            std::to_string(kernel_gaps_.size()) + " gaps between kernels, " +
                            human_time(gap)
                      : std::string()) +
                ")";
    tf.points = static_cast<int>(times.size());
    tf.has_error = false;
    rep_.terms.push_back(tf);
  }

  // The compute points per category. Memory-bound categories with profiled framework ops:
  // those kernels (PyTorch's vectorised element-wise, softmax, ...) are what a step runs;
  // placer-calibrate's own simple kernels of the category then stay out of its curve.
  std::map<int, std::vector<const ComputePoint*>> compute_by_category() {
    std::map<int, std::vector<const ComputePoint*>> by_cat;
    for (const ComputePoint& c : compute_) by_cat[static_cast<int>(c.cat)].push_back(&c);
    const auto from_trace = [](const ComputePoint* c) { return c->m == nullptr; };
    for (auto& [ci, pts] : by_cat) {
      if (compute_bound(static_cast<OpCategory>(ci))) continue;
      if (!std::any_of(pts.begin(), pts.end(), from_trace) ||
          std::all_of(pts.begin(), pts.end(), from_trace)) {
        continue;
      }
      const size_t before = pts.size();
      pts.erase(std::remove_if(pts.begin(), pts.end(),
                               [&](const ComputePoint* c) { return !from_trace(c); }),
                pts.end());
      rep_.notes.push_back(std::string("ops.") + to_string(static_cast<OpCategory>(ci)) +
                           ": fitted on the profiled ops only (" +
                           std::to_string(before - pts.size()) +
                           " placer-calibrate rows left out: the framework's kernels are what "
                           "a step runs)");
    }
    return by_cat;
  }

  // Fits the category's curves into the profile; returns the fitted numbers in words.
  std::string fit_category(OpCategory cat, const std::vector<const ComputePoint*>& pts,
                           double launch) {
    const bool cb = compute_bound(cat);
    const DeviceSpec& spec = spec_;
    std::vector<RatePoint> rp;
    for (const ComputePoint* c : pts) {
      const double busy = std::max(c->time - c->kernels * launch, 0.05 * c->time);
      const double s = cb ? c->flops : c->bytes;
      const double peak = cb ? spec.peak(c->dtype) : spec.memory_bandwidth;
      const double eff = s / (peak * busy);
      rp.push_back({s, cb ? c->bytes : 0, s / (peak * eff)});
    }
    OpCostProfile& op = rep_.profile.op(cat);
    std::string summary;
    if (cb) {
      const EfficiencyCurve memory = op.memory;
      const double bandwidth = spec.memory_bandwidth;
      fit_rate_curves(
          pts, rp, [&](DType d) { return spec.peak(d); },
          [&](double bytes) { return bytes / (bandwidth * memory.at(bytes)); }, true, &op.compute,
          &op.compute_by_dtype, &summary);
    } else {
      fit_rate_curves(
          pts, rp, [&](DType) { return spec.memory_bandwidth; }, nullptr, false, &op.memory,
          &op.memory_by_dtype, &summary);
    }
    return summary;
  }

  void report_category(const CostModel& cost, OpCategory cat,
                       const std::vector<const ComputePoint*>& pts, const std::string& summary) {
    std::vector<double> pred, meas;
    for (const ComputePoint* c : pts) {
      Op op;
      op.category = cat;
      op.dtype = c->dtype;
      op.flops = c->flops;
      const double t = cost.op_time(op, static_cast<uint64_t>(c->bytes), gpu_) -
                       (c->kernels == 0 ? cost.launch_overhead(gpu_) : 0);
      pred.push_back(t);
      meas.push_back(c->time);
    }
    TermFit tf;
    tf.term = std::string("ops.") + to_string(cat) +
              (compute_bound(cat) ? ".compute_efficiency" : ".memory_efficiency");
    tf.model = "latency + rate";
    tf.values = summary;
    tf.points = static_cast<int>(pts.size());
    tf.error = relative_errors(pred, meas);
    add_term(tf);
  }

  const Cluster& cluster_;
  const CostProfile& base_;
  const FitOptions& options_;
  const int gpu_;
  const DeviceSpec& spec_;
  FitReport rep_;
  std::map<std::string, int> skipped_;                                           // reason -> rows
  std::map<std::pair<int, int>, std::vector<CollectivePoint>> coll_;             // (kind, level)
  std::map<int, std::pair<std::vector<double>, std::vector<double>>> link_pts_;  // level -> x, t
  std::vector<ComputePoint> compute_;
  std::vector<double> kernel_times_;  // every profiled kernel's duration
  std::vector<double> kernel_gaps_;   // idle time between consecutive kernels of a trace
};

}  // namespace

FitReport fit_profile(const Cluster& cluster, const CostProfile& base,
                      const std::vector<MeasurementSet>& measurements,
                      const std::vector<ProfilerTrace>& traces, const FitOptions& options) {
  cluster.validate();
  ProfileFit fit(cluster, base, options);
  fit.add_measurements(measurements);
  fit.add_traces(traces);
  fit.fit_collectives();
  fit.fit_links();
  fit.fit_compute();
  return fit.finish();
}

// ---- check ------------------------------------------------------------------------------------

CheckReport check_profile(const Cluster& cluster, const CostProfile& profile,
                          const std::vector<MeasurementSet>& measurements) {
  CostModel cost(cluster, profile);
  CheckReport rep;
  const int gpu = first_gpu(cluster);
  std::map<std::string, int> skipped;
  std::vector<std::string> order;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> groups;
  std::vector<double> all_p, all_m, coll_p, coll_m, comp_p, comp_m;
  for (const MeasurementSet& set : measurements) {
    for (const Measurement& m : set.rows) {
      CheckRow row;
      row.m = &m;
      double pred = -1;
      bool is_coll = false, is_comp = false;
      if (m.kind == MeasureKind::kCollective || (m.kind == MeasureKind::kMemcpy && m.op == "p2p")) {
        if (m.op == "send_recv" || m.op == "p2p") {
          const std::vector<int> d = group_devices(cluster, 2, m.hosts > 1 ? 2 : 1, m.where());
          pred = cost.transfer_time(d[0], d[1], static_cast<uint64_t>(m.bytes));
          row.group = (m.op == "p2p" ? "memcpy p2p " : "send_recv ") +
                      std::string(to_string(cluster.level(d[0], d[1])));
          is_coll = m.op == "send_recv";
        } else {
          CollectiveKind k;
          if (!parse_collective_kind(m.op, &k)) {
            ++skipped["collective '" + m.op + "' is not modelled"];
            continue;
          }
          const std::vector<int> d = group_devices(cluster, m.devices, m.hosts, m.where());
          pred = cost.collective_time(k, d, static_cast<uint64_t>(m.bytes), SyncScheme::kAuto);
          const bool multi = cluster.device(d.front()).host != cluster.device(d.back()).host;
          row.group = m.op + " " + (multi ? "inter_host" : "intra_host");
          is_coll = true;
        }
      } else if (m.kind == MeasureKind::kMemcpy) {
        if (m.op == "h2d" || m.op == "d2h") {
          int cpu = -1;
          for (int i = 0; i < cluster.num_devices(); ++i) {
            if (cluster.device(i).spec.kind == DeviceKind::kCpu &&
                cluster.device(i).host == cluster.device(gpu).host) {
              cpu = i;
              break;
            }
          }
          if (cpu < 0) {
            ++skipped["memcpy h2d/d2h (the cluster has no CPU device on the GPU's host)"];
            continue;
          }
          pred = m.op == "h2d" ? cost.transfer_time(cpu, gpu, static_cast<uint64_t>(m.bytes))
                               : cost.transfer_time(gpu, cpu, static_cast<uint64_t>(m.bytes));
          row.group = "memcpy " + m.op;
        } else {
          ++skipped["memcpy " + m.op + " (not a link transfer)"];
          continue;
        }
      } else {
        Op op;
        if (!compute_row_op(m, &op.category, &op.dtype, &skipped)) continue;
        op.flops = m.flops;
        pred = cost.op_time(op, static_cast<uint64_t>(m.bytes), gpu);
        row.group = std::string(to_string(m.kind)) + " " + m.dtype;
        is_comp = true;
      }
      row.predicted = pred;
      row.rel_error = (pred - m.time_s) / m.time_s;
      if (!groups.count(row.group)) order.push_back(row.group);
      groups[row.group].first.push_back(pred);
      groups[row.group].second.push_back(m.time_s);
      all_p.push_back(pred);
      all_m.push_back(m.time_s);
      if (is_coll) coll_p.push_back(pred), coll_m.push_back(m.time_s);
      if (is_comp) comp_p.push_back(pred), comp_m.push_back(m.time_s);
      rep.rows.push_back(row);
    }
  }
  for (const std::string& g : order) {
    rep.groups.emplace_back(g, relative_errors(groups[g].first, groups[g].second));
  }
  rep.overall = relative_errors(all_p, all_m);
  rep.collectives = relative_errors(coll_p, coll_m);
  rep.compute = relative_errors(comp_p, comp_m);
  for (const auto& [reason, n] : skipped) {
    rep.notes.push_back("not predicted: " + std::to_string(n) + " row(s): " + reason);
  }
  return rep;
}

}  // namespace placer
