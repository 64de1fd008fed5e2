// One guarded method run on a problem (agents/portfolio/method_run.h).
#include "agents/portfolio/method_run.h"

#include <chrono>
#include <exception>

#include "src/util/progress.h"

namespace placer {

Problem ProblemSetup::problem() const {
  return Problem{graph, cluster, *cost, *simulator, devices};
}

SimOptions ProblemSetup::sim_options() const {
  SimOptions opts;
  opts.critical_path = false;
  opts.routing = routing.empty() ? nullptr : &routing;
  return opts;
}

MethodRun run_placer(Placer& placer, const ProblemSetup& s, const SearchBudget& budget) {
  MethodRun run;
  run.method = placer.name();
  const auto t0 = std::chrono::steady_clock::now();
  auto since = [&t0] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  try {
    // Long searches report on stderr (a bar on a terminal, a line every 2 s otherwise).
    Progress progress("placer: " + run.method, 0);
    SearchBudget with_progress = budget;
    if (!with_progress.progress) {
      with_progress.progress = [&progress](int64_t done, int64_t total, const std::string& st) {
        progress.set_total(total);
        progress.update(done, st);
      };
    }
    run.plan = placer.search(s.problem(), with_progress);
    progress.finish();
    run.search_seconds = since();
    if (run.plan.method.empty()) run.plan.method = run.method;
    run.plan.validate(s.graph, s.cluster);
    run.result = s.simulator->run(run.plan, s.sim_options());
    run.plan.predicted.valid = true;
    run.plan.predicted.step_time = run.result.step_time;
    run.plan.predicted.peak_memory = run.result.peak_memory;
    run.plan.predicted.oom = run.result.oom;
    run.ok = true;
  } catch (const std::exception& e) {
    // Any failure of one method (placer::Error or a library's exception) is reported
    // in its row; the others still run.
    if (run.search_seconds == 0) run.search_seconds = since();
    run.ok = false;
    run.error = e.what();
  }
  return run;
}

MethodRun run_method(const std::string& method, const ProblemSetup& s, const SearchBudget& budget,
                     const MethodSettings& settings) {
  std::unique_ptr<Placer> placer;
  try {
    placer = settings.sets.empty() ? make_placer(method) : make_placer(method, settings);
  } catch (const std::exception& e) {
    MethodRun run;
    run.method = method;
    run.error = e.what();
    return run;
  }
  MethodRun run = run_placer(*placer, s, budget);
  run.method = method;
  return run;
}

SimResult simulate_single_device(const ProblemSetup& s) {
  const int dev = s.devices.empty() ? 0 : s.devices.front();
  return s.simulator->run(Plan::single_device(s.graph, dev), s.sim_options());
}

int max_peak_device(const SimResult& r) {
  int best = 0;
  for (size_t d = 0; d < r.peak_memory.size(); ++d) {
    if (r.peak_memory[d] > r.peak_memory[best]) best = static_cast<int>(d);
  }
  return best;
}

std::string known_methods() {
  std::string s;
  for (const MethodInfo& m : placer_methods()) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

}  // namespace placer
