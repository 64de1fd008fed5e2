#pragma once
// Searching expert maps against an objective (the simulated step of the plan, or the expert
// layer's step of expert_balance.h): annealing over maps, with the best-so-far curve that
// the placement benchmark reports (evaluations to within 5% of the final best).
//
// A layer is searched as slots: every rank holds a fixed number of expert copies, each
// expert at least one, no rank two copies of one expert. Moves: swap two copies between
// ranks; or give a slot holding a copy of a replicated expert to another expert (the
// replicas move to the experts that need them).

#include <cstdint>
#include <functional>
#include <vector>

#include "src/plan/moe_layout.h"

namespace placer {

/// slots[r]: the experts rank r holds a copy of.
using ExpertSlots = std::vector<std::vector<int>>;
ExpertSlots slots_of(const ExpertLayerMap& map, int ranks);
ExpertLayerMap map_of(const ExpertSlots& slots, int experts);

/// Lower is better; seconds of a step under the maps (one per MoE layer).
using ExpertObjective = std::function<double(const std::vector<ExpertLayerMap>&)>;

struct ExpertAnnealOptions {
  int64_t evaluations = 2000;       ///< objective calls, the start's included
  double start_temperature = 0.02;  ///< accepted worsening, relative to the current step
  double end_temperature = 1e-5;
  uint64_t seed = 1;
};

struct ExpertSearchResult {
  std::vector<ExpertLayerMap> maps;
  double best = 0;
  /// best_curve[i]: the best objective after i + 1 evaluations.
  std::vector<double> best_curve;
};

/// Simulated annealing from `start` (its slot counts per rank are kept).
ExpertSearchResult anneal_expert_maps(const std::vector<ExpertLayerMap>& start, int ranks,
                                      const ExpertObjective& objective,
                                      const ExpertAnnealOptions& o);

/// Evaluations until the curve first comes within `tolerance` (0.05: 5%) of `target`
/// (its final best when target <= 0); 0 for an empty curve.
int64_t samples_to_within(const std::vector<double>& best_curve, double tolerance,
                          double target = 0);

}  // namespace placer
