#pragma once
// `placer place --method best` and `--method auto`: several methods on one problem, the
// fastest plan that fits kept. One line per method goes to the log ("placer: LABEL: M: ...").
//
//   best: every fast method of the registry (MethodInfo::fast).
//   auto: best, then the learned placers zero-shot (auto_learned_methods()) with what is left
//         of a wall-clock budget; the fast methods always run, so auto is never worse than
//         best on the same seed.
// Both take one option, `--set objective=step|throughput` (agents/common/objective.h): what
// "fastest" means, the simulated step time (the default) or the steady-state time per step
// of pipelined execution; both pass it on to the methods that take the key (pipeline-dp's
// stage costs, gdp+stages' scoring), the others search by their own.

#include <ostream>
#include <string>
#include <vector>

#include "agents/common/objective.h"
#include "agents/portfolio/method_run.h"

namespace placer {

/// The options of `best` and `auto`.
struct PortfolioOptions {
  Objective objective = Objective::kStepTime;
};

/// The portfolio `method`'s options from `settings` (`--set KEY=VALUE`); ValidationError
/// naming the flag and key for an unknown key or a bad value.
PortfolioOptions portfolio_options(const std::string& method, const MethodSettings& settings);

/// The settings the portfolio runs method `name` with: under the throughput objective,
/// `objective=throughput` where the method takes the key (pipeline-dp, gdp+stages) and
/// `fold=true` where it takes that one (pipeline-dp); none otherwise.
MethodSettings objective_settings(const std::string& name, const PortfolioOptions& options);

/// Whether `a` is the better outcome: a plan that fits beats an OOM one, then the lower step
/// time (ties keep `b`).
bool better_run(const MethodRun& a, const MethodRun& b);

/// As above, comparing objective_time(objective) of the runs on `c`.
bool better_run(const MethodRun& a, const MethodRun& b, const Cluster& c, Objective objective);

/// `run` as the portfolio compares it under `objective`: under throughput, a pipelined plan
/// with one micro-batch when that fits and streams faster (stream_whole_batches).
void as_compared(const ProblemSetup& s, Objective objective, MethodRun* run);

/// Every fast method under `budget`; throws Error when all of them failed. `label` names the
/// portfolio in the log lines ("best", "auto").
MethodRun run_best(const ProblemSetup& s, const SearchBudget& budget, const std::string& label,
                   std::ostream& log, const PortfolioOptions& options = {});

/// The learned methods `auto` adds, in the order it runs them: "gdp+hybrid" (the shipped GDP
/// policy zero-shot, in the micro-batch and replica outer loop) and "gdp+stages" (the same
/// policy zero-shot, its placements read as pipeline stages) when LibTorch and the default
/// policy are there, then "rainbow-3d" (Auto-MAP's explorers, trained online on the graph
/// with what is left of the time) when LibTorch is there; none otherwise.
std::vector<std::string> auto_learned_methods();

/// auto: run_best, then each learned method with max_seconds = what is left of `seconds`
/// (measured from the call); a learned method is skipped, and the log says so, when less
/// than one second is left.
MethodRun run_auto(const ProblemSetup& s, const SearchBudget& budget, double seconds,
                   std::ostream& log, const PortfolioOptions& options = {});

/// Whether `method` names a portfolio ("best", "auto") rather than one registered method.
bool is_portfolio(const std::string& method);

/// Runs the portfolio `method` (best, or auto within --budget-seconds, 60 s by default; auto
/// says on `log` which method it chose).
MethodRun run_portfolio(const std::string& method, const ProblemSetup& s,
                        const SearchBudget& budget, std::ostream& log,
                        const PortfolioOptions& options = {});

}  // namespace placer
