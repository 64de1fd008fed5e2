#pragma once
// Fitting a CostProfile to measurements (`placer calibrate fit`) and checking a profile
// against them (`placer calibrate check`). Method: docs/calibration.md.
//
//   std::vector<MeasurementSet> m = {load_measurements("ar.log")};
//   FitReport r = fit_profile(cluster, default_profile(), m, {});
//   save_cost_profile(r.profile, "fitted.profile.yaml");
//   CheckReport c = check_profile(cluster, r.profile, m);   // c.overall.median ...

#include <string>
#include <utility>
#include <vector>

#include "simulator/calibration/measurements.h"
#include "simulator/calibration/profiler_trace.h"
#include "simulator/cost_profile.h"
#include "src/cluster/cluster.h"

namespace placer {

/// t = alpha + beta * x.
struct AlphaBeta {
  double alpha = 0;
  double beta = 0;
};

/// Least squares of t = alpha + beta * x minimising the relative residuals
/// ((alpha + beta x_i - t_i) / t_i); alpha is refitted at 0 when it comes out negative.
/// Needs >= 1 point (alpha = 0 with 1 point or one distinct x). Throws ValidationError when
/// sizes differ, a t_i <= 0 or beta comes out <= 0.
AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t);

/// Median and 90th percentile of |pred - meas| / meas (nearest-rank percentile).
FitError relative_errors(const std::vector<double>& predicted, const std::vector<double>& measured);

/// Piecewise-linear efficiency vs log10(size) with knots every `knot_step` decades over the
/// data's range, values by least squares of the relative residuals (e_model - e_i) / e_i
/// plus a small smoothness penalty; made non-decreasing (pool adjacent violators) when
/// `monotone`; clamped to [min_eff, max_eff]; values rounded to 4 significant digits.
/// One distinct size = a constant.
EfficiencyCurve fit_efficiency_curve(const std::vector<double>& size,
                                     const std::vector<double>& eff, double knot_step = 0.5,
                                     double min_eff = 1e-6, double max_eff = 2.0,
                                     bool monotone = true);

/// One measured collective point: nccl-tests size, ranks, seconds.
struct CollectivePoint {
  double bytes = 0;
  int ranks = 0;
  double time_s = 0;
};

/// Fits a collective's curve (knots every `knot_step` decades): first alpha-beta (latency + bytes *
/// bus_factor / bus_bandwidth); if its median relative error exceeds `line_tolerance`, a ramp:
/// bus_bandwidth = the best measured bus bandwidth, latency a fraction of the fastest time,
/// efficiency vs log10(bytes) by fit_efficiency_curve (the candidate with the lowest median error
/// wins). `model` gets "alpha-beta" or "curve(K knots)"; `error` the fit's relative errors on the
/// points.
CollectiveCurve fit_collective_curve(CollectiveKind kind,
                                     const std::vector<CollectivePoint>& points,
                                     double line_tolerance, FitError* error, std::string* model,
                                     double knot_step = 1.0);

struct FitOptions {
  double line_tolerance = 0.05;     ///< collectives: largest median error for a straight line
  double knot_step = 1.0;           ///< decades between curve knots
  DType trace_dtype = DType::kF32;  ///< dtype of profiler-trace ops (traces do not say)
};

/// One fitted term, as printed by `placer calibrate fit`.
struct TermFit {
  std::string term;    ///< "collective_curves.all_reduce.intra_host", "ops.matmul.compute", ...
  std::string model;   ///< "alpha-beta", "curve(7 knots)", "efficiency curve", "minimum", ...
  std::string values;  ///< human summary ("latency 12.3 us, bus bw 229 GB/s")
  int points = 0;
  FitError error;
  bool has_error = true;
};

struct FitReport {
  CostProfile profile;
  std::vector<TermFit> terms;
  std::vector<std::string> notes;  ///< rows skipped and why (one line per reason)
};

/// Fits every term the measurements cover, starting from `base` (terms without data keep
/// the base's values): collective curves per (kind, intra_host / inter_host), link latency
/// and bandwidth from send_recv / memcpy p2p / h2d / d2h rows, per-category compute
/// (gemm, conv) or memory (elementwise, reduction, softmax) efficiency curves, the launch
/// overhead (fastest compute row or kernel), and from profiler traces per-category compute
/// efficiency where ops carry FLOPs. The device numbers (peak FLOP/s, memory bandwidth)
/// are the cluster's first GPU's. Errors: ValidationError when nothing can be fitted.
FitReport fit_profile(const Cluster& cluster, const CostProfile& base,
                      const std::vector<MeasurementSet>& measurements,
                      const std::vector<ProfilerTrace>& traces, const FitOptions& options = {});

/// Devices of `cluster` for a group of `ranks` over `hosts` hosts (0 = as few hosts as
/// hold them): the first devices of the first hosts, ranks / hosts on each. Throws
/// ValidationError naming `where` when the cluster is too small.
std::vector<int> group_devices(const Cluster& cluster, int ranks, int hosts,
                               const std::string& where);

struct CheckRow {
  const Measurement* m = nullptr;
  std::string group;  ///< "all_reduce intra_host", "gemm fp16", "memcpy p2p", ...
  double predicted = 0;
  double rel_error = 0;  ///< (predicted - measured) / measured
};

struct CheckReport {
  std::vector<CheckRow> rows;
  std::vector<std::pair<std::string, FitError>> groups;  ///< per group, in first-seen order
  FitError overall;
  FitError collectives;            ///< collective rows only (points = 0 when none)
  FitError compute;                ///< compute rows only
  std::vector<std::string> notes;  ///< rows not predicted and why
};

/// Predicts every row with CostModel(cluster, profile): collectives with collective_time
/// on group_devices(...), send_recv / memcpy p2p with transfer_time, compute rows with
/// op_time of an op of the row's category, dtype, FLOPs and bytes on the first GPU.
CheckReport check_profile(const Cluster& cluster, const CostProfile& profile,
                          const std::vector<MeasurementSet>& measurements);

}  // namespace placer
