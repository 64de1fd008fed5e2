#pragma once
// Fine-tuning expert-rl on one model's routing (docs/expert_placement.md "Fine-tuning"): the
// parts of the search that need no LibTorch. The search keeps the best map so far (the
// incumbent; at first the policy's greedy map). Each update rolls the policy out `samples`
// times over every layer: rollout 0 proposes the policy's greedy map of every layer, rollout
// k >= 1 the incumbent with one layer as the policy sampled it, the layers taking turns, so a
// change of the objective is that layer's doing (whole-map samples would credit every layer
// with one layer's luck). A sampled rollout's advantage is the incumbent's objective less its
// own, over the spread of the update's sampled objectives; the layer's decisions are pushed
// towards it by REINFORCE. Adam's learning rate and the entropy bonus fall linearly over the
// evaluation budget. Maps judged once are not judged again. Torch-free.

#include <cstdint>
#include <map>
#include <vector>

#include "src/plan/expert_balance.h"

namespace placer {

struct ExpertFinetuneSchedule {
  double learning_rate = 5e-3;        ///< Adam's at the start, falling linearly ...
  double final_learning_rate = 5e-4;  ///< ... to this when the budget is spent
  double entropy = 0.01;              ///< the entropy bonus at the start, falling linearly to 0
  /// At `progress` (the share of the budget spent, clamped to [0, 1]).
  double learning_rate_at(double progress) const;
  double entropy_at(double progress) const;
};

/// The layer that rollout `k` of update `update` samples (the others greedy): -1 for rollout
/// 0, else (update x (samples - 1) + k - 1) mod layers.
int sampled_layer(int64_t update, int k, int samples, int layers);

/// `steps[0]` the baseline (the incumbent's objective), steps[k] the k-th sampled rollout's:
/// the advantage of rollout k >= 1 is (steps[0] - steps[k]) / the standard deviation of
/// steps[1..] (0 when they are all equal); rollout 0's is 0.
std::vector<double> self_critical_advantages(const std::vector<double>& steps);

/// The objective of the maps judged so far, keyed by their content.
class ExpertMapCache {
 public:
  /// nullptr when `maps` were not judged yet.
  const double* find(const std::vector<ExpertLayerMap>& maps) const;
  void add(const std::vector<ExpertLayerMap>& maps, double value);
  size_t size() const { return seen_.size(); }

 private:
  std::map<std::vector<int>, double> seen_;
};

}  // namespace placer
