#pragma once
// Rainbow DQN agent (Hessel et al. 2018) as used by Auto-MAP (Wang et al. 2020): prioritized
// replay, n-step returns, double Q-learning, dueling heads, the C51 distributional loss,
// noisy layers (switchable; epsilon-greedy when off) and a periodically synced target
// network, with action masks on both the acting and the target side. LibTorch; see
// docs/rainbow.md. The replay machinery is torch-free in agents/common/replay.h.

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <torch/optim/adam.h>
#include <torch/types.h>

#include "agents/common/rainbow_config.h"
#include "agents/common/replay.h"
#include "models/rainbow_net.h"

namespace placer {

/// C51 projection (Bellemare et al. 2017) of the distribution next_probs [B, atoms] on the
/// support z_j = v_min + j dz shifted to r + d z_j (clamped to [v_min, v_max]) back onto
/// the support: each atom's mass is split between the two neighbouring atoms in proportion
/// to closeness. rewards [B], discounts [B] (0 = terminal: all mass around r). Returns
/// [B, atoms], rows summing to the rows of next_probs. No gradient.
torch::Tensor project_distribution(const torch::Tensor& next_probs, const torch::Tensor& rewards,
                                   const torch::Tensor& discounts, double v_min, double v_max);

/// What one learn() update did.
struct RainbowLearnStats {
  bool updated = false;  ///< false when the replay held too few transitions
  double loss = 0;       ///< IS-weighted mean cross-entropy
  double mean_kl = 0;    ///< mean KL(target || online) (the new priorities)
};

/// The agent. States are flat float vectors of width state_dim; masks have num_actions
/// entries (1 = allowed) and must allow at least one action where act() is called.
class RainbowAgent {
 public:
  /// ValidationError on a bad config (validate_rainbow_config) or non-positive sizes.
  RainbowAgent(int64_t state_dim, int64_t num_actions, const RainbowConfig& config = {});

  /// An allowed action for `state`: greedy = argmax Q over allowed actions (noise off);
  /// otherwise epsilon-greedy (random among allowed actions with probability epsilon())
  /// without noise, or argmax Q of the noisy net with noise. Ties: the lowest index.
  /// ValidationError on wrong sizes or a mask that allows nothing.
  int act(const std::vector<float>& state, const std::vector<uint8_t>& mask, bool greedy);
  /// Records a step (n-step accumulation into the replay) and advances the epsilon
  /// schedule. mask: allowed actions in `state`; next_mask: in `next_state`.
  void observe(const std::vector<float>& state, int action, float reward,
               const std::vector<float>& next_state, bool done, const std::vector<uint8_t>& mask,
               const std::vector<uint8_t>& next_mask);
  /// Episode cut off without a terminal state: flushes pending n-step transitions
  /// (bootstrapped) into the replay.
  void end_episode();
  /// One gradient update on a prioritized batch when the replay holds enough transitions;
  /// syncs the target net every target_update updates.
  RainbowLearnStats learn();

  /// Q-values [num_actions] of the online net for `state` (noise off), masked ones
  /// included (not -inf).
  std::vector<float> q_values(const std::vector<float>& state);
  /// Current exploration rate (0 with noisy layers).
  double epsilon() const;

  /// Writes net, target net, optimizer, counters and the RNG state atomically (a torch
  /// archive at path + ".tmp.<pid>", then std::rename). The replay is not saved.
  /// FileError when it cannot be written.
  void save(const std::string& path) const;
  /// What save() writes, into `archive` (for a file written with its sidecar,
  /// agents/common/policy_file.h).
  void write(torch::serialize::OutputArchive& archive) const;
  /// Restores what save wrote. FileError: missing; FormatError: not such an archive, or
  /// sizes (state_dim, actions, atoms, hidden, noisy, dueling) differ from this agent's.
  void load(const std::string& path);

  int64_t steps() const { return steps_; }                     ///< observe() calls so far
  int64_t updates() const { return updates_; }                 ///< learn() updates so far
  const RainbowConfig& config() const { return config_; }      ///< options
  const PrioritizedReplay& replay() const { return replay_; }  ///< the buffer
  RainbowNet& net() { return net_; }                           ///< online network
  RainbowNet& target_net() { return target_; }                 ///< target network

 private:
  /// Copies the online parameters and buffers into the target net.
  void sync_target();
  /// Checks a mask's size and that it allows something.
  void check_mask(const std::vector<uint8_t>& mask, const char* what) const;

  int64_t state_dim_, num_actions_;
  RainbowConfig config_;
  RainbowNet net_{nullptr}, target_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  PrioritizedReplay replay_;
  NStepAccumulator nstep_;
  std::mt19937_64 rng_;
  int64_t steps_ = 0, updates_ = 0;
};

}  // namespace placer
