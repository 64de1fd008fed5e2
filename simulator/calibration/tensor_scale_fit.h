#pragma once
// Two physical parameters per GPU generation, fitted to measured training steps: how far
// its tensor cores stay from the efficiency curves of the profile, for GEMMs and for fused
// attention (docs/calibration.md, "Tensor-core efficiency per GPU generation"). Shipped
// Blackwell profiles take the op curves of an H100 as fractions of their own peaks; each
// scale multiplies the 16- and 8-bit compute curves of its op category.
//
// Fitting them costs three simulations per run: a run's step time is modelled as
// t = fixed + gemm / s_gemm + attention / s_attention (compute scales as 1 / s;
// communication, host and memory-bound time do not), from its simulated times at the
// profile's curves and with each scale at kProbeScale in turn.
//
//   std::vector<ScaleResponse> r = scale_responses(cluster, profile, runs);
//   const TensorScales s = fit_tensor_scales(r, measured);   // over the training runs
//   const CostProfile fitted = with_tensor_scales(profile, s);

#include <vector>

#include "simulator/calibration/iteration_runs.h"
#include "simulator/cost_profile.h"
#include "src/cluster/cluster.h"

namespace placer {

/// The scale each run is simulated at to measure its response.
constexpr double kProbeScale = 1.25;
/// Bounds of a fitted scale.
constexpr double kMinTensorScale = 0.4, kMaxTensorScale = 1.6;

/// Host time per MoE token-count sync added to probe a run's response to it, and the bound
/// of a fitted one (seconds).
constexpr double kProbeSyncHost = 1e-3, kMaxSyncHost = 20e-3;

/// Multipliers of the compute curves of GEMMs (category matmul) and fused attention, and the
/// host time per MoE token-count sync added to the profile's (CostProfile::moe_sync_host_time,
/// seconds; fitted only where asked, 0 otherwise).
struct TensorScales {
  double gemm = 1, attention = 1;
  double sync_host = 0;
};

/// `profile` with the compute curves of matmul multiplied by `s.gemm` and of attention by
/// `s.attention`, for the tensor-core dtypes (bf16, f16, f8, and the default curve); f32 and
/// f64 curves (CUDA cores) are kept. Efficiencies are capped at 1. `s.sync_host` is added to
/// the profile's moe_sync_host_time.
CostProfile with_tensor_scales(const CostProfile& profile, const TensorScales& s);

/// `profile` with the compute curves of matmul and attention (every dtype) of `reference`:
/// the curves a generation's scales multiply (h100.profile.yaml's for the shipped profiles).
CostProfile with_reference_compute_curves(const CostProfile& profile, const CostProfile& reference);

/// A run's step time as a function of the scales: fixed + gemm / s.gemm + attention /
/// s.attention + sync x s.sync_host (seconds; `sync` is the step time each second of host
/// work after a MoE sync adds: the syncs on the critical path, 0 for runs without them).
struct ScaleResponse {
  double fixed = 0, gemm = 0, attention = 0, sync = 0;
  double at(const TensorScales& s) const {
    return fixed + gemm / s.gemm + attention / s.attention + sync * s.sync_host;
  }
};

/// The response of a run simulated at scales (1, 1) (`t`), (kProbeScale, 1) (`t_gemm`) and
/// (1, kProbeScale) (`t_attention`); negative parts (event-ordering noise) are clamped to 0.
ScaleResponse scale_response(double t, double t_gemm, double t_attention);

/// The responses of `runs` on `cluster` from `profile` (three simulations each, on `threads`
/// threads).
std::vector<ScaleResponse> scale_responses(const Cluster& cluster, const CostProfile& profile,
                                           const std::vector<IterationRun>& runs, int threads = 2);

/// Sets each response's `sync` from one more simulation per run with the profile's
/// moe_sync_host_time raised by kProbeSyncHost (`responses` from scale_responses of the same
/// profile and runs).
void add_sync_host_responses(const Cluster& cluster, const CostProfile& profile,
                             const std::vector<IterationRun>& runs,
                             std::vector<ScaleResponse>* responses, int threads = 2);

/// The scales in [kMinTensorScale, kMaxTensorScale] minimising the squared log error of
/// responses[i].at(s) against measured[i] plus `prior` x (log s.gemm - log s.attention)^2,
/// which keeps the two together where the runs cannot tell them apart (a search over log s
/// in steps of 0.5 %, then 0.05 % around the best). With `fit_sync_host` the host time per
/// MoE sync too, in [0, kMaxSyncHost] (steps of 0.1 ms with the scales in steps of 2 %, then
/// the scales as above at the best, then the host time in steps of 5 us around it); else it
/// stays 0. Throws ValidationError when the vectors are empty or differ in size.
TensorScales fit_tensor_scales(const std::vector<ScaleResponse>& responses,
                               const std::vector<double>& measured, double prior = 0.01,
                               bool fit_sync_host = false);

}  // namespace placer
