#include "agents/common/objective.h"

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

}  // namespace placer
