#pragma once
// One way for a method to fill its SearchOutcome (agents/api/search_outcome.h) from its own
// counts: the fields every method shares, then its own numbers by name; and the base of the
// placers whose search is their search_outcome.

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "agents/api/placer.h"
#include "agents/api/search_outcome.h"

namespace placer {

/// `plan` with the simulator runs the search used (0 = not counted), the run that found the
/// plan (0 = unknown), its wall time (0 = not measured) and the method's named values, in
/// the order given.
inline SearchOutcome search_outcome_of(
    Plan plan, int64_t runs, int64_t best_run, double seconds,
    std::initializer_list<std::pair<const char*, double>> values) {
  SearchOutcome out{std::move(plan), {}};
  out.stats.runs = runs;
  out.stats.best_run = best_run;
  out.stats.seconds = seconds;
  for (const auto& [name, value] : values) out.stats.add(name, value);
  return out;
}

/// A placer that searches in search_outcome (which it must override); search() returns that
/// outcome's plan.
class OutcomePlacer : public Placer {
 public:
  Plan search(const Problem& problem, const SearchBudget& budget) final {
    return search_outcome(problem, budget).plan;
  }
  SearchOutcome search_outcome(const Problem& problem, const SearchBudget& budget) override = 0;
};

}  // namespace placer
