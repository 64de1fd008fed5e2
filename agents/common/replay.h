#pragma once
// Replay machinery of the Rainbow DQN agent (docs/rainbow.md), free of LibTorch so that it
// can be tested and reused without it:
//  - SumTree: priorities in a binary tree of partial sums; set and prefix-sum search in
//    O(log N).
//  - PrioritizedReplay: a ring buffer of transitions sampled proportionally to p^alpha
//    (Schaul et al. 2016), with importance-sampling weights whose exponent beta is annealed.
//  - NStepAccumulator: turns single steps into n-step transitions (Sutton 1988; Rainbow,
//    Hessel et al. 2018), flushing at episode end so that every step yields one transition.
// Every random draw takes a caller-owned std::mt19937_64, so results depend on the seed only.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace placer {

/// Binary tree of partial sums over `capacity` non-negative leaf values.
class SumTree {
 public:
  /// A tree of `capacity` leaves, all 0. ValidationError when capacity is 0.
  explicit SumTree(std::size_t capacity);
  /// Number of leaves.
  std::size_t capacity() const { return capacity_; }
  /// Sets leaf i to p (p >= 0 and finite, i < capacity, else ValidationError). O(log N).
  void set(std::size_t i, double p);
  /// Value of leaf i.
  double get(std::size_t i) const;
  /// Sum of all leaves.
  double total() const { return tree_[1]; }
  /// The leaf i with sum(leaves < i) <= prefix < sum(leaves <= i), i.e. the leaf that a
  /// uniform draw in [0, total) lands in. Leaves of value 0 are never returned while
  /// total() > 0 (a prefix >= total(), e.g. from rounding, gives the last positive leaf).
  /// ValidationError when total() is 0. O(log N).
  std::size_t find(double prefix) const;

 private:
  std::size_t capacity_;
  std::size_t leaves_;        ///< capacity rounded up to a power of two
  std::vector<double> tree_;  ///< 1-based heap layout; leaf i at leaves_ + i
};

/// One (n-step) transition as stored in the replay buffer.
struct Transition {
  std::vector<float> state;        ///< observation the action was taken in
  std::vector<float> next_state;   ///< observation n steps later (bootstrap state)
  std::vector<uint8_t> mask;       ///< allowed actions in `state` (1 = allowed)
  std::vector<uint8_t> next_mask;  ///< allowed actions in `next_state`
  int action = 0;                  ///< action taken in `state`
  float reward = 0;                ///< n-step discounted return sum_k gamma^k r_k
  float discount = 0;              ///< gamma^n for the bootstrap, 0 when the episode ended
};

/// Options of PrioritizedReplay (defaults: Auto-MAP capacity 2000; alpha 0.6 and beta
/// 0.4 -> 1.0 from Schaul et al. 2016's proportional variant).
struct ReplayConfig {
  std::size_t capacity = 2000;  ///< transitions kept (oldest overwritten first)
  double alpha = 0.6;           ///< priority exponent: P(i) ~ p_i^alpha (0 = uniform)
  double beta_start = 0.4;      ///< importance-sampling exponent at step 0
  double beta_end = 1.0;        ///< ... reached after beta_steps and kept
  int64_t beta_steps = 10000;   ///< annealing length (in the caller's steps)
  double epsilon = 1e-6;        ///< added to |td error| so no priority is 0
};

/// Indices drawn by PrioritizedReplay::sample and their importance-sampling weights.
struct ReplaySample {
  std::vector<std::size_t> indices;   ///< slots of the buffer
  std::vector<double> weights;        ///< (N P(i))^-beta / max over the batch, in (0, 1]
  std::vector<double> probabilities;  ///< P(i) of each drawn slot
};

/// Proportional prioritized replay over a ring buffer of Transitions.
class PrioritizedReplay {
 public:
  /// Empty buffer. ValidationError on capacity 0, alpha < 0, beta outside [0, 1],
  /// beta_steps < 0 or epsilon < 0.
  explicit PrioritizedReplay(const ReplayConfig& config = {});
  /// Stores t in the next slot (overwriting the oldest when full) with the largest priority
  /// seen so far (1 initially), so that every new transition is sampled soon. Returns the slot.
  std::size_t add(Transition t);
  /// Number of stored transitions (<= capacity).
  std::size_t size() const { return size_; }
  /// Maximum number of stored transitions.
  std::size_t capacity() const { return config_.capacity; }
  /// The transition in slot i (i < size(), else ValidationError).
  const Transition& at(std::size_t i) const;
  /// Raw priority p_i of slot i (before the alpha exponent).
  double priority(std::size_t i) const;
  /// Largest raw priority given so far (1 before any update).
  double max_priority() const { return max_priority_; }
  /// beta at `step`: linear from beta_start to beta_end over beta_steps, then beta_end.
  double beta(int64_t step) const;
  /// `batch` slots drawn stratified: the mass sum p^alpha is cut into `batch` equal
  /// segments and one slot is drawn uniformly by mass inside each (so P(i) = p_i^alpha /
  /// sum_j p_j^alpha per draw). Weights use beta(step). ValidationError when empty or batch 0.
  ReplaySample sample(std::size_t batch, int64_t step, std::mt19937_64& rng) const;
  /// Sets p_i = |td_errors[k]| + epsilon for slot indices[k] (sizes must match, slots valid,
  /// errors finite; else ValidationError) and raises max_priority.
  void update_priorities(const std::vector<std::size_t>& indices,
                         const std::vector<double>& td_errors);
  /// The options the buffer was built with.
  const ReplayConfig& config() const { return config_; }

 private:
  ReplayConfig config_;
  SumTree tree_;                  ///< p_i^alpha per slot
  std::vector<double> priority_;  ///< p_i per slot
  std::vector<Transition> data_;
  std::size_t next_ = 0, size_ = 0;
  double max_priority_ = 1.0;
};

/// One environment step as given to NStepAccumulator::push.
struct EnvStep {
  std::vector<float> state;        ///< s_t
  std::vector<uint8_t> mask;       ///< allowed actions in s_t
  int action = 0;                  ///< a_t
  float reward = 0;                ///< r_{t+1}
  std::vector<float> next_state;   ///< s_{t+1}
  std::vector<uint8_t> next_mask;  ///< allowed actions in s_{t+1}
  bool done = false;               ///< s_{t+1} is terminal
};

/// Builds n-step transitions: the transition of step t has reward sum_{k<m} gamma^k r_{t+k+1},
/// next_state s_{t+m} and discount gamma^m, with m = n; when the episode ends (done) within
/// the n steps, m is the number of steps left and the discount is 0.
class NStepAccumulator {
 public:
  /// n >= 1 and gamma in [0, 1], else ValidationError.
  NStepAccumulator(int n, double gamma);
  /// Adds one step; returns the transitions it completed, oldest first: none while fewer
  /// than n steps are pending, one once n are pending, all pending ones when step.done.
  std::vector<Transition> push(EnvStep step);
  /// Completes every pending step for an episode cut off without a terminal state (a time
  /// limit): each bootstraps from the last next_state with discount gamma^m (m = its
  /// number of remaining steps). Returns them oldest first; nothing stays pending.
  std::vector<Transition> flush();
  /// Drops pending steps (e.g. when an episode is abandoned).
  void clear() { pending_.clear(); }
  /// Steps received but not yet turned into transitions (< n).
  std::size_t pending() const { return pending_.size(); }

 private:
  /// Transition of the front pending step over all pending steps; pops it.
  Transition complete_front(bool terminal);

  int n_;
  double gamma_;
  std::deque<EnvStep> pending_;
};

}  // namespace placer
