#include "agents/portfolio/baseline_plan.h"

#include <filesystem>

#include "src/io/plan_io.h"

namespace placer {

Plan load_baseline_plan(const std::string& path, const ProblemSetup& s) {
  Plan p = load_plan(path, s.graph, s.cluster);
  p.validate(s.graph, s.cluster);
  return p;
}

MethodRun run_baseline_plan(const std::string& path, const Plan& plan, const ProblemSetup& s) {
  MethodRun run;
  run.method = "baseline (" + std::filesystem::path(path).filename().string() + ")";
  run.plan = plan;
  run.result = s.simulator->run(run.plan, s.sim_options());
  run.ok = true;
  return run;
}

}  // namespace placer
