#pragma once
// The reference an environment's reward is relative to: the step time of the whole graph on
// one device, the best over the allowed devices (the fastest run that fits in memory, else
// the fastest run). One definition for PlacementEnv (env/placement_env.h) and PlacetoEnv
// (env/placeto_env.h).
#include <vector>

#include "simulator/simulator.h"
#include "src/plan/plan.h"

namespace placer {

struct SingleDeviceRuns {
  std::vector<double> times;  ///< step time with every op on devices[i]
  std::vector<bool> oom;      ///< whether that run is out of memory
  double reference = 0;       ///< the fastest run that fits, else the fastest run
};

/// Simulates `plan` (without critical path) with every op on each of `devices` in turn.
/// `plan.placement` is overwritten (it ends with every op on the last device); the rest of
/// the plan is used as it is.
SingleDeviceRuns single_device_runs(Simulator& sim, Plan& plan, const std::vector<int>& devices);

}  // namespace placer
