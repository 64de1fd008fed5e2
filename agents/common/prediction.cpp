#include "agents/common/prediction.h"

namespace placer {

void record_prediction(const SimResult& r, Plan* plan) {
  plan->predicted.valid = true;
  plan->predicted.step_time = r.step_time;
  plan->predicted.peak_memory = r.peak_memory;
  plan->predicted.oom = r.oom;
}

SimResult predict(const Problem& problem, Plan* plan) {
  SimOptions options;
  options.critical_path = false;
  const SimResult r = problem.simulator.run(*plan, options);
  record_prediction(r, plan);
  return r;
}

}  // namespace placer
