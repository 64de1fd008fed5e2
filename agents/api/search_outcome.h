#pragma once
// What a search returns through the Placer interface: the plan and how the search went, the
// same fields for every method, plus the numbers (and words) only one method has, by name.

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/plan/plan.h"

namespace placer {

struct SearchStats {
  int64_t runs = 0;      ///< simulator runs the search used (0 = the method does not count them)
  int64_t best_run = 0;  ///< 1-based run that found the returned plan (0 = unknown)
  double seconds = 0;    ///< wall time of the search
  /// Best step time (s) so far, one point per update / episode / round of the method.
  std::vector<double> best_curve;
  /// Method-specific numbers ("updates", "reference_time", ...), in the order they were added.
  std::vector<std::pair<std::string, double>> values;

  void add(const std::string& name, double value) { values.emplace_back(name, value); }
  /// The named value, or NaN when the method did not report it.
  double value(const std::string& name) const {
    for (const auto& [n, v] : values) {
      if (n == name) return v;
    }
    return std::nan("");
  }
  /// Method-specific words ("start": the start plan anneal used), in the order they were added.
  std::vector<std::pair<std::string, std::string>> notes;

  void add_note(const std::string& name, const std::string& text) { notes.emplace_back(name, text); }
  /// The named note, or "" when the method did not give it.
  std::string note(const std::string& name) const {
    for (const auto& [n, t] : notes) {
      if (n == name) return t;
    }
    return "";
  }
};

struct SearchOutcome {
  Plan plan;
  SearchStats stats;
};

}  // namespace placer
