#pragma once
// The placements a GDP search has scored, so that a repeat (a peaked policy's samples, a block
// move drawn again) is answered without another DP and simulation. Bounded: beyond its
// capacity the oldest entry is forgotten first. Torch-free.

#include <cstddef>
#include <deque>
#include <map>
#include <vector>

#include "env/placement_env.h"

namespace placer {

class ScoreCache {
 public:
  /// Remembers at most `capacity` placements (0: none).
  explicit ScoreCache(size_t capacity) : capacity_(capacity) {}

  /// The score of `action` when remembered, else nullptr.
  const StepResult* find(const std::vector<int>& action) const {
    const auto it = scores_.find(action);
    return it == scores_.end() ? nullptr : &it->second;
  }
  /// Remembers `action` (not yet remembered), forgetting the oldest entry when full.
  void add(const std::vector<int>& action, const StepResult& score) {
    if (capacity_ == 0) return;
    if (scores_.size() == capacity_) {
      scores_.erase(order_.front());
      order_.pop_front();
    }
    order_.push_back(scores_.emplace(action, score).first);
  }
  size_t size() const { return scores_.size(); }

 private:
  using Scores = std::map<std::vector<int>, StepResult>;
  size_t capacity_;
  Scores scores_;
  std::deque<Scores::iterator> order_;  // oldest first
};

}  // namespace placer
