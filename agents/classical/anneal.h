#pragma once
// `anneal`: simulated annealing (MCMC) over placements with the simulator as the objective,
// as in FlexFlow (Jia et al., "Beyond Data and Model Parallelism", SysML 2019).
//
// State: a device per colocation unit. A unit is a forward op's colocation group
// (Op::group) or the forward op alone; backward and optimizer ops follow their forward op
// (Op::forward_op), so gradients and updates stay next to the parameters. A proposal moves
// one unit to another device: with probability `neighbor_move_prob` to the device of a
// random graph neighbour (merges cut edges), otherwise to a uniformly drawn other device.
// The cost is the simulated step time (Simulator::run, one shared simulator, the plan edited
// in place); OOM plans cost step_time * (oom_factor + overflow), overflow being the worst
// device's excess over its capacity as a fraction of that capacity. Proposals are accepted
// by the Metropolis rule: always when cheaper, else with probability
// exp(-(new - cur) / (T * start_cost)). T decays geometrically from t_start to t_end over
// the budget (fraction of evaluations used, or of seconds when only seconds bound the run):
// T(f) = t_start * (t_end / t_start)^f. The defaults (2e-3 -> 1e-5: a move that slows the
// step by 0.2% of the start is accepted with probability 1/e at first, almost never at the
// end) were the best of a few settings tried on transformer_small and resnet50 on
// dgx1_p100; 5e-2 wandered off and never beat the start in 2000 evaluations.
// The best non-OOM plan seen is returned; when none fits, a placer::Error says so (or,
// with allow_oom, the least overflowing plan is returned).
//
// Start: `initial` when given, else the cheapest of: contiguous blocks of units in
// topological order balanced by FLOPs over the devices, everything on the first device,
// and the placements of the registered `seed_methods` (list schedulers; FlexFlow likewise
// starts its search from a known strategy). Each start costs one evaluation.
// search_outcome reports what the search did: runs = Simulator::run calls (the start's
// included), the named values "accepted" (accepted proposals), "improved" (times the best
// plan improved), "start_step_time", "best_step_time", "start_oom" and "best_oom" (1 or 0),
// and the note "start": which start won ("initial", "balanced", "single" or a method).
// Deterministic: std::mt19937_64 seeded from SearchBudget::seed, so the same seed and an
// evaluation budget give the same plan (a seconds budget depends on machine speed).

#include <cstdint>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/outcome.h"  // OutcomePlacer
#include "src/graph/algorithms.h"  // colocation_units

namespace placer {

struct AnnealOptions {
  int64_t default_evaluations = 2000;  ///< used when the budget gives neither limit
  double t_start = 2e-3;               ///< initial temperature, relative to the starting cost
  double t_end = 1e-5;                 ///< final temperature (same unit)
  double neighbor_move_prob = 0.5;
  double oom_factor = 2.0;   ///< cost multiplier of an OOM plan (plus its overflow fraction)
  std::vector<int> initial;  ///< device per op to start from (empty = built-in start)
  /// Methods whose placements are start candidates when registered (pure placements only).
  std::vector<std::string> seed_methods = {"m-etf", "tf-greedy"};
  bool allow_oom = false;  ///< return the best OOM plan instead of throwing when none fits
};

struct AnnealStats;  // what one search did (anneal.cpp); its outcome carries it

class AnnealPlacer : public OutcomePlacer {
 public:
  explicit AnnealPlacer(AnnealOptions options = {}) : options_(std::move(options)) {}
  std::string name() const override { return "anneal"; }
  /// The plan with what the search did (see above) as runs, named values and the note.
  SearchOutcome search_outcome(const Problem& problem, const SearchBudget& budget) override;
  bool honours_frame() const override { return true; }

 private:
  Plan search_plan(const Problem& problem, const SearchBudget& budget, AnnealStats& stats) const;
  AnnealOptions options_;
};

}  // namespace placer
