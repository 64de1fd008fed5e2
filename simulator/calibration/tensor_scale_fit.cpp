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
      const double v = objective(responses, measured, {g, a}, prior);
      if (v < best_value) {
        best_value = v;
        best = {g, a};
      }
    }
  }
  return best;
}

}  // namespace

CostProfile with_tensor_scales(const CostProfile& profile, const TensorScales& s) {
  CostProfile out = profile;
  scale_tensor_core_curves(out.op(OpCategory::kMatMul), s.gemm);
  scale_tensor_core_curves(out.op(OpCategory::kAttention), s.attention);
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

TensorScales fit_tensor_scales(const std::vector<ScaleResponse>& responses,
                               const std::vector<double>& measured, double prior) {
  if (responses.empty() || responses.size() != measured.size()) {
    throw ValidationError("tensor scale fit: one measured time per response, at least one");
  }
  const double whole = std::log(kMaxTensorScale / kMinTensorScale);
  const TensorScales coarse = grid_search(responses, measured, prior, {1, 1}, whole, 0.005);
  return grid_search(responses, measured, prior, coarse, 0.01, 0.0005);
}

}  // namespace placer
