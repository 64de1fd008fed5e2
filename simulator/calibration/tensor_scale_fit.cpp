// The tensor-core efficiency scales of a GPU generation (tensor_scale_fit.h).
#include "simulator/calibration/tensor_scale_fit.h"

#include <algorithm>
#include <cmath>

#include "simulator/calibration/iteration_fit.h"
#include "src/util/error.h"

namespace placer {

namespace {

void scale_curve(EfficiencyCurve& curve, double scale) {
  for (auto& point : curve.points) point.second = std::min(1.0, point.second * scale);
}

void scale_tensor_core_curves(OpCostProfile& op, double scale) {
  scale_curve(op.compute, scale);
  for (auto& [dtype, curve] : op.compute_by_dtype) {
    if (dtype != DType::kF32 && dtype != DType::kF64) scale_curve(curve, scale);
  }
}

double objective(const std::vector<ScaleResponse>& responses, const std::vector<double>& measured,
                 const TensorScales& s, double prior) {
  double sum = 0;
  for (size_t i = 0; i < responses.size(); ++i) {
    const double e = std::log(responses[i].at(s) / measured[i]);
    sum += e * e;
  }
  const double apart = std::log(s.gemm / s.attention);
  return sum + prior * apart * apart;
}

// The best scales on a grid of log-spaced steps `step` within `span` of `centre` (log
// coordinates), clamped to the bounds.
TensorScales grid_search(const std::vector<ScaleResponse>& responses,
                         const std::vector<double>& measured, double prior,
                         const TensorScales& centre, double span, double step) {
  const double lo = std::log(kMinTensorScale), hi = std::log(kMaxTensorScale);
  auto axis = [&](double c) {
    std::vector<double> v;
    for (double x = std::max(lo, std::log(c) - span); x <= std::min(hi, std::log(c) + span) + 1e-12;
         x += step) {
      v.push_back(std::exp(x));
    }
    return v;
  };
  TensorScales best = centre;
  double best_value = INFINITY;
  for (double g : axis(centre.gemm)) {
    for (double a : axis(centre.attention)) {
      const double v = objective(responses, measured, {g, a, centre.sync_host}, prior);
      if (v < best_value) {
        best_value = v;
        best = {g, a, centre.sync_host};
      }
    }
  }
  return best;
}

// The best host time per sync on a grid of `h_step` within `h_span` of `centre`'s (clamped
// to [0, kMaxSyncHost]), each with the best scales of grid_search(`s_span`, `s_step`).
TensorScales joint_search(const std::vector<ScaleResponse>& responses,
                          const std::vector<double>& measured, double prior,
                          const TensorScales& centre, double h_span, double h_step, double s_span,
                          double s_step) {
  TensorScales best = centre;
  double best_value = INFINITY;
  const double lo = std::max(0.0, centre.sync_host - h_span);
  const double hi = std::min(kMaxSyncHost, centre.sync_host + h_span);
  for (double h = lo; h <= hi + 1e-12; h += h_step) {
    TensorScales c = centre;
    c.sync_host = h;
    const TensorScales s = grid_search(responses, measured, prior, c, s_span, s_step);
    const double v = objective(responses, measured, s, prior);
    if (v < best_value) {
      best_value = v;
      best = s;
    }
  }
  return best;
}

// Scales and host time per sync together, on finer grids around the best in turn: host
// steps of 100, 10 and 0.5 us with scale steps of 2 %, 0.2 % and 0.05 %.
TensorScales fit_with_sync_host(const std::vector<ScaleResponse>& responses,
                                const std::vector<double>& measured, double prior, double whole) {
  TensorScales s =
      joint_search(responses, measured, prior, {1, 1, 0}, kMaxSyncHost, 1e-4, whole, 0.02);
  s = joint_search(responses, measured, prior, s, 3e-4, 1e-5, 0.06, 0.002);
  return joint_search(responses, measured, prior, s, 1e-5, 5e-7, 0.004, 0.0005);
}

}  // namespace

CostProfile with_tensor_scales(const CostProfile& profile, const TensorScales& s) {
  CostProfile out = profile;
  scale_tensor_core_curves(out.op(OpCategory::kMatMul), s.gemm);
  scale_tensor_core_curves(out.op(OpCategory::kAttention), s.attention);
  out.moe_sync_host_time += s.sync_host;
  return out;
}

CostProfile with_reference_compute_curves(const CostProfile& profile,
                                          const CostProfile& reference) {
  CostProfile out = profile;
  for (OpCategory c : {OpCategory::kMatMul, OpCategory::kAttention}) {
    out.op(c).compute = reference.op(c).compute;
    out.op(c).compute_by_dtype = reference.op(c).compute_by_dtype;
  }
  return out;
}

ScaleResponse scale_response(double t, double t_gemm, double t_attention) {
  // t - t_x = part_x (1 - 1 / k)  =>  part_x = (t - t_x) k / (k - 1).
  const double k = kProbeScale / (kProbeScale - 1);
  ScaleResponse r;
  r.gemm = std::clamp((t - t_gemm) * k, 0.0, t);
  r.attention = std::clamp((t - t_attention) * k, 0.0, t - r.gemm);
  r.fixed = t - r.gemm - r.attention;
  return r;
}

std::vector<ScaleResponse> scale_responses(const Cluster& cluster, const CostProfile& profile,
                                           const std::vector<IterationRun>& runs, int threads) {
  const std::vector<double> t = predict_runs(cluster, profile, runs, threads);
  const std::vector<double> tg =
      predict_runs(cluster, with_tensor_scales(profile, {kProbeScale, 1}), runs, threads);
  const std::vector<double> ta =
      predict_runs(cluster, with_tensor_scales(profile, {1, kProbeScale}), runs, threads);
  std::vector<ScaleResponse> out;
  for (size_t i = 0; i < runs.size(); ++i) out.push_back(scale_response(t[i], tg[i], ta[i]));
  return out;
}

void add_sync_host_responses(const Cluster& cluster, const CostProfile& profile,
                             const std::vector<IterationRun>& runs,
                             std::vector<ScaleResponse>* responses, int threads) {
  CostProfile probe = profile;
  probe.moe_sync_host_time += kProbeSyncHost;
  const std::vector<double> t = predict_runs(cluster, probe, runs, threads);
  for (size_t i = 0; i < runs.size(); ++i) {
    ScaleResponse& r = (*responses)[i];
    r.sync = std::max(0.0, t[i] - (r.fixed + r.gemm + r.attention)) / kProbeSyncHost;
  }
}

TensorScales fit_tensor_scales(const std::vector<ScaleResponse>& responses,
                               const std::vector<double>& measured, double prior,
                               bool fit_sync_host) {
  if (responses.empty() || responses.size() != measured.size()) {
    throw ValidationError("tensor scale fit: one measured time per response, at least one");
  }
  const double whole = std::log(kMaxTensorScale / kMinTensorScale);
  if (fit_sync_host) return fit_with_sync_host(responses, measured, prior, whole);
  const TensorScales coarse = grid_search(responses, measured, prior, {1, 1}, whole, 0.005);
  return grid_search(responses, measured, prior, coarse, 0.01, 0.0005);
}

}  // namespace placer
