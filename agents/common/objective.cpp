#include "agents/common/objective.h"

#include "agents/common/prediction.h"
#include "simulator/steady_state.h"

namespace placer {

const char* to_string(Objective o) { return o == Objective::kThroughput ? "throughput" : "step"; }

Objective parse_objective(const std::string& v) {
  if (v == "step") return Objective::kStepTime;
  if (v == "throughput") return Objective::kThroughput;
  throw OptionValueError{"expected step or throughput, got '" + v + "'"};
}

double objective_time(Objective objective, const SimResult& r, const Cluster& c) {
  return objective == Objective::kThroughput ? steady_state_time(r, c) : r.step_time;
}

bool stream_whole_batches(Objective objective, Simulator& sim, const Cluster& c,
                          const SimOptions& options, Plan* plan, SimResult* r) {
  if (objective != Objective::kThroughput || plan->pipeline.micro_batches <= 1) return false;
  Plan whole = *plan;
  whole.pipeline.micro_batches = 1;
  SimResult one = sim.run(whole, options);
  if (one.oom || (!r->oom && objective_time(objective, one, c) >= objective_time(objective, *r, c)))
    return false;
  record_prediction(one, &whole);
  *plan = std::move(whole);
  *r = std::move(one);
  return true;
}

}  // namespace placer
