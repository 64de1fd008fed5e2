#include "agents/api/search_budget.h"

#include <algorithm>

#include "src/util/error.h"

namespace placer {

BudgetClock::BudgetClock(const SearchBudget& budget, const std::string& method,
                         int64_t default_runs, Default when)
    : start_(Clock::now()), max_seconds_(budget.max_seconds) {
  if (budget.max_evaluations < 0 || budget.max_seconds < 0) {
    throw ValidationError(method + ": budget limits must be >= 0");
  }
  const bool default_applies =
      when == Default::kWithoutRunLimit || budget.max_seconds <= 0;
  max_runs_ = budget.max_evaluations > 0 ? budget.max_evaluations
              : default_applies          ? default_runs
                                         : 0;
}

double BudgetClock::elapsed() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

double BudgetClock::fraction_spent(int64_t runs_used) const {
  double f = 0;
  if (max_runs_ > 0) f = double(runs_used) / double(max_runs_);
  if (max_seconds_ > 0) f = std::max(f, elapsed() / max_seconds_);
  return f;
}

}  // namespace placer
