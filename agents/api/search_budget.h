#pragma once
// How much a search may spend (SearchBudget) and the one clock that every placer reads it
// through (BudgetClock), so that a budget means the same for every method.
//
// Meaning: `max_evaluations` counts simulator runs of candidate plans, `max_seconds` counts
// wall-clock seconds from the start of the search; a search stops at whichever comes first.
// 0 = no limit of that kind. When the budget gives neither, the method's own default applies
// (a run count, or its options, e.g. a fixed number of episodes or updates). A search checks
// the clock between its updates, so it may overshoot a limit by at most one update (a batch
// of samples, an episode).
//
// Exception, kept so that plans stay the same: rainbow-pp counts the distinct cut sets its
// agent simulates (cache hits are free); the balanced start and the layout search it runs on
// top are extra runs, and it always needs a finite count (its layout rounds split it), so
// seconds alone stop it at its `episodes` option (agents/rainbow/rainbow_pp.h).

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace placer {

/// How much a search may spend. 0 = the method's own default.
struct SearchBudget {
  int64_t max_evaluations = 0;  ///< simulator runs
  double max_seconds = 0;       ///< wall-clock seconds
  uint64_t seed = 1;            ///< every random choice derives from this
  /// Lossy gradient synchronisation a method may choose (docs/sync.md); off by default
  /// because compression and staleness change how many steps training needs.
  bool allow_compression = false;
  int max_staleness = 0;  ///< 0 = synchronous
  /// Optional progress report of long searches: (work done, total or 0 if unknown, short
  /// status). Called often; the receiver throttles (see src/util/progress.h).
  std::function<void(int64_t done, int64_t total, const std::string& status)> progress;
};

/// The budget of one search, started when constructed. Every placer reads its budget
/// through one of these.
class BudgetClock {
 public:
  /// When the method's default run count applies.
  enum class Default {
    kWithoutLimits,    ///< the budget gives neither runs nor seconds (the usual case)
    kWithoutRunLimit,  ///< the budget gives no runs (seconds may be given too; rainbow-pp)
  };
  /// Checks the limits (ValidationError "<method>: budget limits must be >= 0") and starts
  /// the clock. `default_runs`: the method's run count when the budget gives none (see
  /// `when`); 0 = none (the method's options bound the search).
  BudgetClock(const SearchBudget& budget, const std::string& method, int64_t default_runs = 0,
              Default when = Default::kWithoutLimits);

  /// Simulator runs allowed (0 = no limit on runs).
  int64_t max_runs() const { return max_runs_; }
  /// Seconds allowed (0 = no limit on time).
  double max_seconds() const { return max_seconds_; }
  /// Seconds since the search started.
  double elapsed() const;
  bool time_left() const { return max_seconds_ <= 0 || elapsed() < max_seconds_; }
  bool runs_left(int64_t runs_used) const { return max_runs_ <= 0 || runs_used < max_runs_; }
  /// Out of runs or out of time.
  bool exhausted(int64_t runs_used) const { return !runs_left(runs_used) || !time_left(); }
  /// How much of the budget is spent, in [0, inf): the larger of the runs and the time
  /// share, of the limits there are (0 when there are none).
  double fraction_spent(int64_t runs_used) const;

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
  int64_t max_runs_ = 0;
  double max_seconds_ = 0;
};

}  // namespace placer
