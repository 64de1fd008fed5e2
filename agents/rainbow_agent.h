#pragma once
// Rainbow DQN agent (Hessel et al. 2018) as used by Auto-MAP (Wang et al. 2020): prioritized
// replay, n-step returns, double Q-learning, dueling heads, the C51 distributional loss,
// noisy layers (switchable; epsilon-greedy when off) and a periodically synced target
// network, with action masks on both the acting and the target side. LibTorch; see
// docs/rainbow.md. The replay machinery is torch-free in agents/replay.h.

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <torch/optim/adam.h>
#include <torch/types.h>

#include "agents/replay.h"
#include "models/rainbow_net.h"

namespace placer {

/// Every option of RainbowAgent. Defaults: Auto-MAP where the paper gives one (replay 2000,
/// target sync 100, batch 64, Adam lr 1e-3, epsilon 1.0 -> 0.1, noise off), else Rainbow.
struct RainbowConfig {
  std::vector<int64_t> hidden{128, 128};  ///< MLP torso widths
  int64_t atoms = 51;                     ///< C51 atoms (Rainbow)
  double v_min = -10.0;                   ///< support lower bound (Rainbow)
  double v_max = 10.0;                    ///< support upper bound (Rainbow)
  bool noisy = false;                     ///< NoisyLinear layers (Auto-MAP: off, epsilon-greedy)
  double sigma0 = 0.5;                    ///< NoisyLinear initial noise scale (Rainbow)
  bool dueling = true;                    ///< dueling heads (Rainbow)
  bool double_q = true;                   ///< online net picks the next action, target net rates it
  std::size_t replay_capacity = 2000;     ///< Auto-MAP
  double priority_alpha = 0.6;            ///< Schaul et al. / Rainbow used 0.5
  double beta_start = 0.4;                ///< importance-sampling exponent, annealed ...
  double beta_end = 1.0;                  ///< ... to this
  int64_t beta_steps = 10000;             ///< ... over this many learn() updates
  double priority_epsilon = 1e-6;         ///< added to every priority
  int64_t batch_size = 64;                ///< Auto-MAP
  double lr = 1e-3;                       ///< Adam learning rate (Auto-MAP, pipelines)
  double adam_eps = 1.5e-4;               ///< Adam epsilon (Rainbow)
  double gamma = 0.99;                    ///< discount
  int n_step = 3;                         ///< multi-step return length (Rainbow)
  int64_t target_update = 100;            ///< learn() updates between target syncs (Auto-MAP)
  double epsilon_start = 1.0;             ///< epsilon-greedy start (Auto-MAP), noise off only
  double epsilon_end = 0.1;               ///< ... end (Auto-MAP)
  int64_t epsilon_decay_steps = 10000;    ///< observe() steps of the linear decay (per task)
  int64_t learn_start = 0;  ///< learn() waits for max(batch_size, learn_start) transitions
  double grad_clip = 10.0;  ///< max gradient L2 norm (<= 0: no clipping)
  uint64_t seed = 0;        ///< seeds torch init, replay sampling, epsilon and noise
};

/// Empty when `config` is usable, else why not (e.g. "n_step must be >= 1, got 0").
std::string validate_rainbow_config(const RainbowConfig& config);

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
