#pragma once
// Micro-batches and data-parallel replicas around any placer (the outer loop): the
// inner method places the step on a sub-cluster of N / R devices, the plan then runs R
// replicas of that placement (replica r on devices + r N / R) and M micro-batches through
// it (src/plan/placement_pipeline.h). Every R dividing both the device count and the batch,
// every M dividing the replica's samples up to `max_micro_batches`, the simulator keeps the
// fastest plan that fits. Placement-only methods (GDP, Placeto, ColocRL, HDP, the list
// schedulers) then compete on the same footing as pipeline-dp and megatron.
//
//   HybridOuterPlacer p(make_placer("gdp"));
//   Plan plan = p.search(problem, budget);   // method "gdp+hybrid"

#include <memory>
#include <string>

#include "agents/api/placer.h"

namespace placer {

struct HybridOuterStats {
  int inner_runs = 0, simulated = 0;
  int replicas = 1, micro_batches = 1;  ///< of the chosen plan
};

class HybridOuterPlacer : public Placer {
 public:
  explicit HybridOuterPlacer(std::unique_ptr<Placer> inner, int max_micro_batches = 16)
      : inner_(std::move(inner)), max_micro_batches_(max_micro_batches) {}
  std::string name() const override { return inner_->name() + "+hybrid"; }
  /// The budget is split evenly over the replica counts for the inner searches.
  Plan search(const Problem& problem, const SearchBudget& budget) override;
  /// The plan with the loop's counts as named values: "inner_runs", "simulated", and the
  /// chosen plan's "replicas" and "micro_batches" (HybridOuterStats).
  SearchOutcome search_outcome(const Problem& problem, const SearchBudget& budget) override;

 private:
  std::unique_ptr<Placer> inner_;
  int max_micro_batches_;
  HybridOuterStats stats_;
};

}  // namespace placer
