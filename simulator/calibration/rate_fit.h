#pragma once
// Kernel latency + sustained rate: the two physical numbers behind a compute-bound op's
// time (placer calibrate fit, docs/calibration.md). A GEMM or convolution of f FLOPs that
// reads and writes b bytes takes
//     busy(f, b) = max(latency + f / rate, memory_time(b))
// on the GPU: a fixed cost (waves that do not fill the machine, prologue / epilogue, the
// tail) plus the arithmetic at the rate large shapes sustain, unless moving its bytes takes
// longer. As an efficiency curve of the roofline (fraction of peak vs FLOPs) this is
//     e(f) = f / (peak * (latency + f / rate)),
// which the cost profile stores sampled on a log grid. Two numbers per dtype fit every size
// of a sweep where a free-form curve over a decade grid overfits shapes of equal FLOPs.

#include <functional>
#include <vector>

#include "simulator/cost_profile.h"

namespace placer {

struct RatePoint {
  double flops = 0;
  double bytes = 0;
  double busy = 0;  ///< measured kernel time, seconds (launch overhead removed)
};

struct LatencyRate {
  double latency = 0;  ///< seconds, >= 0
  double rate = 0;     ///< FLOP/s, > 0
};

/// Least squares on relative errors of busy(f, b) against the points, with
/// memory_time(bytes) the category's memory-bound time (0 where unknown). A grid over the
/// latency (0 .. the fastest points' time: the median of the fastest 5%, at least one) and
/// a log grid over the rate, refined around the best.
/// Errors: ValidationError when no point has flops > 0 and busy > 0.
LatencyRate fit_latency_rate(const std::vector<RatePoint>& points,
                             const std::function<double(double)>& memory_time);

/// busy time of `flops` under `lr` (compute term only).
inline double latency_rate_time(const LatencyRate& lr, double flops) {
  return lr.latency + flops / lr.rate;
}

/// e(f) = f / (peak (latency + f / rate)) sampled every `step` decades over
/// [floor(log10 fmin), ceil(log10 fmax)] (at least two points); flat beyond, as every
/// EfficiencyCurve.
EfficiencyCurve latency_rate_curve(const LatencyRate& lr, double peak, double fmin, double fmax,
                                   double step = 0.25);

}  // namespace placer
