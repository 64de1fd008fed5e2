#include "agents/common/replay.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "src/util/error.h"

namespace placer {

// ------------------------------------------------------------------------- SumTree ----

SumTree::SumTree(std::size_t capacity) : capacity_(capacity), leaves_(1) {
  if (capacity == 0) throw ValidationError("SumTree: capacity must be positive");
  while (leaves_ < capacity) leaves_ *= 2;
  tree_.assign(2 * leaves_, 0.0);
}

void SumTree::set(std::size_t i, double p) {
  if (i >= capacity_) {
    std::ostringstream s;
    s << "SumTree::set: index " << i << " out of range (capacity " << capacity_ << ")";
    throw ValidationError(s.str());
  }
  if (!(p >= 0) || !std::isfinite(p)) {
    std::ostringstream s;
    s << "SumTree::set: priority of leaf " << i << " must be finite and >= 0, got " << p;
    throw ValidationError(s.str());
  }
  std::size_t node = leaves_ + i;
  tree_[node] = p;
  // Recompute parents from their children (no running deltas: no drift from rounding).
  for (node /= 2; node >= 1; node /= 2) tree_[node] = tree_[2 * node] + tree_[2 * node + 1];
}

double SumTree::get(std::size_t i) const {
  if (i >= capacity_) {
    std::ostringstream s;
    s << "SumTree::get: index " << i << " out of range (capacity " << capacity_ << ")";
    throw ValidationError(s.str());
  }
  return tree_[leaves_ + i];
}

std::size_t SumTree::find(double prefix) const {
  if (!(total() > 0)) throw ValidationError("SumTree::find: all priorities are 0");
  std::size_t node = 1;
  while (node < leaves_) {
    const std::size_t left = 2 * node, right = left + 1;
    // Go right when the prefix passes the left mass, unless the right side is empty
    // (then the prefix overshot through rounding and the last positive leaf is wanted).
    if ((prefix >= tree_[left] && tree_[right] > 0) || !(tree_[left] > 0)) {
      prefix -= tree_[left];
      node = right;
    } else {
      node = left;
    }
  }
  return node - leaves_;
}

// ---------------------------------------------------------------- PrioritizedReplay ----

PrioritizedReplay::PrioritizedReplay(const ReplayConfig& config)
    : config_(config), tree_(std::max<std::size_t>(config.capacity, 1)) {
  auto fail = [](const std::string& what) { throw ValidationError("replay: " + what); };
  if (config.capacity == 0) fail("capacity must be positive");
  if (!(config.alpha >= 0) || !std::isfinite(config.alpha)) fail("alpha must be >= 0");
  if (!(config.beta_start >= 0 && config.beta_start <= 1) ||
      !(config.beta_end >= 0 && config.beta_end <= 1)) {
    fail("beta_start and beta_end must lie in [0, 1]");
  }
  if (config.beta_steps < 0) fail("beta_steps must be >= 0");
  if (!(config.epsilon >= 0) || !std::isfinite(config.epsilon)) fail("epsilon must be >= 0");
  priority_.assign(config.capacity, 0.0);
  data_.resize(config.capacity);
}

std::size_t PrioritizedReplay::add(Transition t) {
  const std::size_t slot = next_;
  data_[slot] = std::move(t);
  priority_[slot] = max_priority_;
  tree_.set(slot, std::pow(max_priority_, config_.alpha));
  next_ = (next_ + 1) % config_.capacity;
  size_ = std::min(size_ + 1, config_.capacity);
  return slot;
}

const Transition& PrioritizedReplay::at(std::size_t i) const {
  if (i >= size_) {
    std::ostringstream s;
    s << "replay: slot " << i << " out of range (size " << size_ << ")";
    throw ValidationError(s.str());
  }
  return data_[i];
}

double PrioritizedReplay::priority(std::size_t i) const {
  at(i);  // range check
  return priority_[i];
}

double PrioritizedReplay::beta(int64_t step) const {
  if (config_.beta_steps <= 0 || step >= config_.beta_steps) return config_.beta_end;
  const double f =
      static_cast<double>(std::max<int64_t>(step, 0)) / static_cast<double>(config_.beta_steps);
  return config_.beta_start + f * (config_.beta_end - config_.beta_start);
}

ReplaySample PrioritizedReplay::sample(std::size_t batch, int64_t step,
                                       std::mt19937_64& rng) const {
  if (size_ == 0) throw ValidationError("replay: cannot sample from an empty buffer");
  if (batch == 0) throw ValidationError("replay: batch size must be positive");
  const double total = tree_.total();
  const double segment = total / static_cast<double>(batch);
  const double b = beta(step);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  ReplaySample out;
  out.indices.reserve(batch);
  out.weights.reserve(batch);
  out.probabilities.reserve(batch);
  double max_w = 0;
  for (std::size_t k = 0; k < batch; ++k) {
    const double u = (static_cast<double>(k) + unit(rng)) * segment;
    const std::size_t i = tree_.find(u);
    const double p = tree_.get(i) / total;
    const double w = std::pow(static_cast<double>(size_) * p, -b);
    out.indices.push_back(i);
    out.probabilities.push_back(p);
    out.weights.push_back(w);
    max_w = std::max(max_w, w);
  }
  for (double& w : out.weights) w /= max_w;
  return out;
}

void PrioritizedReplay::update_priorities(const std::vector<std::size_t>& indices,
                                          const std::vector<double>& td_errors) {
  if (indices.size() != td_errors.size()) {
    std::ostringstream s;
    s << "replay: update_priorities got " << indices.size() << " indices but " << td_errors.size()
      << " errors";
    throw ValidationError(s.str());
  }
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const std::size_t i = indices[k];
    at(i);  // range check
    if (!std::isfinite(td_errors[k])) {
      std::ostringstream s;
      s << "replay: non-finite error " << td_errors[k] << " for slot " << i;
      throw ValidationError(s.str());
    }
    const double p = std::abs(td_errors[k]) + config_.epsilon;
    priority_[i] = p;
    tree_.set(i, std::pow(p, config_.alpha));
    max_priority_ = std::max(max_priority_, p);
  }
}

// ------------------------------------------------------------------ NStepAccumulator ----

NStepAccumulator::NStepAccumulator(int n, double gamma) : n_(n), gamma_(gamma) {
  if (n < 1) throw ValidationError("n-step: n must be >= 1, got " + std::to_string(n));
  if (!(gamma >= 0 && gamma <= 1)) {
    std::ostringstream s;
    s << "n-step: gamma must lie in [0, 1], got " << gamma;
    throw ValidationError(s.str());
  }
}

Transition NStepAccumulator::complete_front(bool terminal) {
  const EnvStep& last = pending_.back();
  Transition t;
  double ret = 0, g = 1;
  for (const EnvStep& s : pending_) {
    ret += g * static_cast<double>(s.reward);
    g *= gamma_;
  }
  EnvStep& first = pending_.front();
  t.state = std::move(first.state);
  t.mask = std::move(first.mask);
  t.action = first.action;
  t.reward = static_cast<float>(ret);
  t.discount = terminal ? 0.0f : static_cast<float>(g);
  t.next_state = last.next_state;
  t.next_mask = last.next_mask;
  pending_.pop_front();
  return t;
}

std::vector<Transition> NStepAccumulator::push(EnvStep step) {
  const bool done = step.done;
  pending_.push_back(std::move(step));
  std::vector<Transition> out;
  if (done) {
    while (!pending_.empty()) out.push_back(complete_front(true));
  } else if (static_cast<int>(pending_.size()) >= n_) {
    out.push_back(complete_front(false));
  }
  return out;
}

std::vector<Transition> NStepAccumulator::flush() {
  std::vector<Transition> out;
  while (!pending_.empty()) out.push_back(complete_front(false));
  return out;
}

}  // namespace placer
