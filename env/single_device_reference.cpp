#include "env/single_device_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace placer {

SingleDeviceRuns single_device_runs(Simulator& sim, Plan& plan, const std::vector<int>& devices) {
  SimOptions so;
  so.critical_path = false;
  SingleDeviceRuns out;
  double best_fit = std::numeric_limits<double>::infinity();
  double best_any = std::numeric_limits<double>::infinity();
  for (int d : devices) {
    std::fill(plan.placement.begin(), plan.placement.end(), d);
    const SimResult r = sim.run(plan, so);
    out.times.push_back(r.step_time);
    out.oom.push_back(r.oom);
    best_any = std::min(best_any, r.step_time);
    if (!r.oom) best_fit = std::min(best_fit, r.step_time);
  }
  out.reference = std::isfinite(best_fit) ? best_fit : best_any;
  return out;
}

}  // namespace placer
