// Fine-tuning's torch-free parts (agents/experts/expert_finetune.h).
#include "agents/experts/expert_finetune.h"

#include <algorithm>
#include <cmath>

namespace placer {

namespace {

double clamped(double progress) { return std::min(1.0, std::max(0.0, progress)); }

std::vector<int> key_of(const std::vector<ExpertLayerMap>& maps) {
  std::vector<int> key;
  for (const ExpertLayerMap& m : maps) {
    for (const std::vector<int>& ranks : m.replicas) {
      key.push_back(int(ranks.size()));
      key.insert(key.end(), ranks.begin(), ranks.end());
    }
    key.push_back(-1);  // end of layer
  }
  return key;
}

}  // namespace

double ExpertFinetuneSchedule::learning_rate_at(double progress) const {
  return learning_rate + (final_learning_rate - learning_rate) * clamped(progress);
}

double ExpertFinetuneSchedule::entropy_at(double progress) const {
  return entropy * (1 - clamped(progress));
}

int sampled_layer(int64_t update, int k, int samples, int layers) {
  if (k <= 0 || layers < 1) return -1;
  return int((update * (samples - 1) + k - 1) % layers);
}

std::vector<double> self_critical_advantages(const std::vector<double>& steps) {
  std::vector<double> adv(steps.size(), 0.0);
  if (steps.size() < 2) return adv;
  const double n = double(steps.size() - 1);
  double mean = 0, var = 0;
  for (size_t k = 1; k < steps.size(); ++k) mean += steps[k] / n;
  for (size_t k = 1; k < steps.size(); ++k) var += (steps[k] - mean) * (steps[k] - mean) / n;
  const double sd = std::sqrt(var);
  if (!(sd > 0)) return adv;
  for (size_t k = 1; k < steps.size(); ++k) adv[k] = (steps[0] - steps[k]) / sd;
  return adv;
}

const double* ExpertMapCache::find(const std::vector<ExpertLayerMap>& maps) const {
  const auto it = seen_.find(key_of(maps));
  return it == seen_.end() ? nullptr : &it->second;
}

void ExpertMapCache::add(const std::vector<ExpertLayerMap>& maps, double value) {
  seen_[key_of(maps)] = value;
}

}  // namespace placer
