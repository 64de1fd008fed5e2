#include "agents/portfolio/method_portfolio.h"

#include <chrono>
#include <filesystem>

#include "agents/api/methods.h"
#include "agents/common/option_table.h"
#include "agents/gdp/gdp.h"
#include "agents/staged_methods.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer {
namespace {

void log_run(const std::string& label, const MethodRun& run, const ProblemSetup& s,
             Objective objective, std::ostream& log) {
  if (!run.ok) {
    log << "placer: " << label << ": " << run.method << ": failed: " << run.error << "\n";
    return;
  }
  log << "placer: " << label << ": " << run.method << ": " << human_time(run.result.step_time);
  if (objective != Objective::kStepTime) {
    log << " (" << to_string(objective) << ": "
        << human_time(objective_time(objective, run.result, s.cluster)) << " per step)";
  }
  log << (run.result.oom ? " (OOM)" : "") << " in " << human_time(run.search_seconds) << "\n";
}

}  // namespace

MethodSettings objective_settings(const std::string& name, const PortfolioOptions& options) {
  MethodSettings settings;
  if (options.objective == Objective::kStepTime) return settings;
  // Under throughput the steady state also rewards folded stages (pipeline-dp's `fold`).
  for (const OptionSpec& o : method_info(name).options) {
    if (o.key == "objective")
      settings.sets.push_back("objective=" + std::string(to_string(options.objective)));
    if (o.key == "fold") settings.sets.push_back("fold=true");
  }
  return settings;
}

bool is_portfolio(const std::string& method) { return method == "best" || method == "auto"; }

PortfolioOptions portfolio_options(const std::string& method, const MethodSettings& settings) {
  static const OptionTable<PortfolioOptions> table = [] {
    OptionTable<PortfolioOptions> t("best, auto");
    add_objective_option(
        t, [](auto& o) -> auto& { return o.objective; });
    return t;
  }();
  PortfolioOptions options;
  table.with_owner(method).apply(&options, settings.sets, settings.flag);
  return options;
}

MethodRun run_portfolio(const std::string& method, const ProblemSetup& s,
                        const SearchBudget& budget, std::ostream& log,
                        const PortfolioOptions& options) {
  if (method == "best") return run_best(s, budget, "best", log, options);
  constexpr double kAutoSeconds = 60;  // auto's wall-clock budget without --budget-seconds
  const double seconds = budget.max_seconds > 0 ? budget.max_seconds : kAutoSeconds;
  MethodRun chosen = run_auto(s, budget, seconds, log, options);
  log << "placer: auto: chose " << chosen.method << " (" << human_time(chosen.result.step_time)
      << ")\n";
  return chosen;
}

bool better_run(const MethodRun& a, const MethodRun& b) {
  if (a.result.oom != b.result.oom) return !a.result.oom;
  return a.result.step_time < b.result.step_time;
}

bool better_run(const MethodRun& a, const MethodRun& b, const Cluster& c, Objective objective) {
  if (a.result.oom != b.result.oom) return !a.result.oom;
  return objective_time(objective, a.result, c) < objective_time(objective, b.result, c);
}

void as_compared(const ProblemSetup& s, Objective objective, MethodRun* run) {
  if (!run->ok) return;
  stream_whole_batches(objective, *s.simulator, s.cluster, s.sim_options(), &run->plan,
                       &run->result);
}

MethodRun run_best(const ProblemSetup& s, const SearchBudget& budget, const std::string& label,
                   std::ostream& log, const PortfolioOptions& options) {
  MethodRun chosen;
  bool have = false;
  for (const MethodInfo& m : placer_methods()) {
    if (!m.fast) continue;
    MethodRun run = run_method(m.name, s, budget, objective_settings(m.name, options));
    run.method = m.name;
    as_compared(s, options.objective, &run);
    log_run(label, run, s, options.objective, log);
    if (!run.ok) continue;
    if (!have || better_run(run, chosen, s.cluster, options.objective)) {
      chosen = std::move(run), have = true;
    }
  }
  if (!have) throw Error("--method " + label + ": every fast method failed (see above)");
  return chosen;
}

std::vector<std::string> auto_learned_methods() {
  std::vector<std::string> out;
  if (gdp_available() && std::filesystem::is_regular_file(default_policy_path())) {
    out.push_back("gdp+hybrid");
  }
  if (gdp_available() && std::filesystem::is_regular_file(staged_policy_path())) {
    out.push_back("gdp+stages");
  }
  for (const MethodInfo& m : placer_methods()) {
    if (m.name == "rainbow-3d") out.push_back(m.name);  // registered with LibTorch only
  }
  return out;
}

MethodRun run_auto(const ProblemSetup& s, const SearchBudget& budget, double seconds,
                   std::ostream& log, const PortfolioOptions& options) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  MethodRun chosen = run_best(s, budget, "auto", log, options);
  for (const std::string& name : auto_learned_methods()) {
    const double left =
        seconds - std::chrono::duration<double>(Clock::now() - start).count();
    if (left < 1.0) {
      log << "placer: auto: " << name << ": skipped (" << fixed(std::max(left, 0.0), 1)
          << " s of the " << fixed(seconds, 0) << " s budget left)\n";
      continue;
    }
    SearchBudget learned = budget;
    learned.max_seconds = budget.max_seconds > 0 ? std::min(budget.max_seconds, left) : left;
    MethodRun run = run_method(name, s, learned, objective_settings(name, options));
    run.method = name;
    as_compared(s, options.objective, &run);
    log_run("auto", run, s, options.objective, log);
    if (run.ok && better_run(run, chosen, s.cluster, options.objective)) chosen = std::move(run);
  }
  return chosen;
}

}  // namespace placer
