#include "simulator/calibration/rate_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/util/error.h"

namespace placer {

namespace {

double squared_relative_error(const std::vector<RatePoint>& pts, const std::vector<double>& mem,
                              double latency, double inv_rate) {
  double s = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    const double pred = std::max(latency + pts[i].flops * inv_rate, mem[i]);
    const double r = (pred - pts[i].busy) / pts[i].busy;
    s += r * r;
  }
  return s;
}

}  // namespace

LatencyRate fit_latency_rate(const std::vector<RatePoint>& points,
                             const std::function<double(double)>& memory_time) {
  std::vector<RatePoint> pts;
  for (const RatePoint& p : points) {
    if (p.flops > 0 && p.busy > 0 && std::isfinite(p.busy)) pts.push_back(p);
  }
  if (pts.empty()) throw ValidationError("latency-rate fit: no point with FLOPs and a time");
  std::vector<double> mem;
  for (const RatePoint& p : pts) mem.push_back(p.bytes > 0 && memory_time ? memory_time(p.bytes) : 0.0);
  double max_rate = 0;  // the fastest any point ran: the rate is searched up to 4x that
  std::vector<double> busy;
  for (const RatePoint& p : pts) {
    busy.push_back(p.busy);
    max_rate = std::max(max_rate, p.flops / p.busy);
  }
  // The latency is at most the fastest points' time: the median of the fastest 5% (at
  // least one), so that one kernel faster than the rest does not pin it.
  std::sort(busy.begin(), busy.end());
  const size_t k = std::max<size_t>(1, busy.size() / 20);
  const double fastest = k % 2 ? busy[k / 2] : 0.5 * (busy[k / 2 - 1] + busy[k / 2]);
  // Coarse grid: latency in [0, fastest], rate from max_rate / 1e3 to 4 max_rate (log).
  constexpr int kLat = 64, kRate = 240;
  const double lo = std::log(max_rate / 1e3), hi = std::log(4 * max_rate);
  double best = std::numeric_limits<double>::infinity(), best_lat = 0, best_log_rate = hi;
  for (int a = 0; a <= kLat; ++a) {
    const double lat = fastest * a / kLat;
    for (int b = 0; b <= kRate; ++b) {
      const double lr = lo + (hi - lo) * b / kRate;
      const double e = squared_relative_error(pts, mem, lat, std::exp(-lr));
      if (e < best) best = e, best_lat = lat, best_log_rate = lr;
    }
  }
  // Refine: shrink a box around the best point a few times.
  double dlat = fastest / kLat, dlr = (hi - lo) / kRate;
  for (int round = 0; round < 6; ++round) {
    const double c_lat = best_lat, c_lr = best_log_rate;
    for (int a = -8; a <= 8; ++a) {
      const double lat = std::max(0.0, c_lat + dlat * a / 8);
      for (int b = -8; b <= 8; ++b) {
        const double lr = c_lr + dlr * b / 8;
        const double e = squared_relative_error(pts, mem, lat, std::exp(-lr));
        if (e < best) best = e, best_lat = lat, best_log_rate = lr;
      }
    }
    dlat /= 4;
    dlr /= 4;
  }
  return {best_lat, std::exp(best_log_rate)};
}

EfficiencyCurve latency_rate_curve(const LatencyRate& lr, double peak, double fmin, double fmax,
                                   double step) {
  PLACER_CHECK(peak > 0 && lr.rate > 0 && step > 0 && fmin > 0 && fmax >= fmin,
               "latency_rate_curve: bad arguments");
  const double x0 = std::floor(std::log10(fmin) / step) * step;
  double x1 = std::ceil(std::log10(fmax) / step) * step;
  if (x1 <= x0) x1 = x0 + step;
  std::vector<std::pair<double, double>> pts;
  for (double x = x0; x <= x1 + 1e-9; x += step) {
    const double f = std::pow(10.0, x);
    pts.emplace_back(std::round(x * 1e6) / 1e6, f / (peak * latency_rate_time(lr, f)));
  }
  return EfficiencyCurve::ramp(std::move(pts));
}

}  // namespace placer
