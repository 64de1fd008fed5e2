#pragma once
// `placer compare --baseline-plan P`: a user's own plan (for instance the plan of their
// Megatron-LM or DeepSpeed configuration, `placer plan from-megatron`) as one more row.

#include <string>

#include "agents/portfolio/method_run.h"

namespace placer {

/// Loads plan `path` for the problem's graph and cluster (an unreadable or invalid plan is
/// an Error naming the file, before any search runs).
Plan load_baseline_plan(const std::string& path, const ProblemSetup& s);

/// The row of a loaded baseline plan: simulated, search time 0, method "baseline (<file>)".
MethodRun run_baseline_plan(const std::string& path, const Plan& plan, const ProblemSetup& s);

}  // namespace placer
