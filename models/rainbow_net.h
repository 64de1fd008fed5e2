#pragma once
// The Rainbow DQN network (Hessel et al. 2018) over flat state vectors (docs/rainbow.md):
//   x [B, S] ──MLP torso (ReLU)──> h ──dueling heads──> logits [B, A, atoms]
//   dueling: logits = V(h) [B, 1, atoms] + A(h) [B, A, atoms] - mean_a A(h)
//   log p = log_softmax over atoms (C51: a categorical return distribution on the support
//   z_j = v_min + j (v_max - v_min) / (atoms - 1), Bellemare et al. 2017); Q = sum_j p_j z_j.
// Every linear layer is a NoisyLinear (Fortunato et al. 2017) when options.noisy, a plain
// torch::nn::Linear otherwise (Auto-MAP turned noise off and used epsilon-greedy).

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace placer {

/// Linear layer with factorised Gaussian noise (Fortunato et al. 2017):
///   y = (mu_w + sigma_w * eps_w) x + mu_b + sigma_b * eps_b,
///   eps_w = f(eps_out) f(eps_in)^T, eps_b = f(eps_out), f(e) = sign(e) sqrt(|e|).
/// Noise is applied only in training mode and while enabled; in eval mode (or disabled)
/// the layer is the plain linear map (mu_w, mu_b).
class NoisyLinearImpl : public torch::nn::Module {
 public:
  /// mu ~ U(-1/sqrt(in), 1/sqrt(in)) (torch's global generator), sigma = sigma0 / sqrt(in),
  /// noise 0 until the first reset_noise. ValidationError on non-positive sizes or sigma0 < 0.
  NoisyLinearImpl(int64_t in_features, int64_t out_features, double sigma0 = 0.5);
  /// x [..., in] -> [..., out].
  torch::Tensor forward(const torch::Tensor& x);
  /// Draws new eps_in / eps_out from N(0, 1) with `rng`.
  void reset_noise(std::mt19937_64& rng);
  /// Turns noise on or off (independently of train/eval mode).
  void set_noise_enabled(bool enabled) { noise_enabled_ = enabled; }
  /// True when forward currently adds noise (training mode and enabled).
  bool noise_active() const { return is_training() && noise_enabled_; }

  int64_t in_features, out_features;
  torch::Tensor weight_mu, weight_sigma, bias_mu, bias_sigma;  ///< parameters
  torch::Tensor weight_epsilon, bias_epsilon;                  ///< buffers (current noise)

 private:
  bool noise_enabled_ = true;
};
TORCH_MODULE(NoisyLinear);

/// Sizes and switches of RainbowNet.
struct RainbowNetOptions {
  /// Network for states of width input_dim and num_actions discrete actions.
  RainbowNetOptions(int64_t input_dim, int64_t num_actions);
  /// Width of the state vector.
  TORCH_ARG(int64_t, input_dim);
  /// Number of discrete actions.
  TORCH_ARG(int64_t, num_actions);
  /// Widths of the MLP torso's hidden layers (at least one).
  TORCH_ARG(std::vector<int64_t>, hidden) = std::vector<int64_t>{128, 128};
  /// Number of atoms of the return distribution (>= 2; 51 in C51 and Rainbow).
  TORCH_ARG(int64_t, atoms) = 51;
  /// Support bounds (v_min < v_max).
  TORCH_ARG(double, v_min) = -10.0;
  /// Support bounds (v_min < v_max).
  TORCH_ARG(double, v_max) = 10.0;
  /// NoisyLinear layers instead of Linear.
  TORCH_ARG(bool, noisy) = false;
  /// Initial noise scale of NoisyLinear (0.5 in Fortunato et al. and Rainbow).
  TORCH_ARG(double, sigma0) = 0.5;
  /// Dueling value/advantage heads (else one head of A x atoms).
  TORCH_ARG(bool, dueling) = true;
};

/// Distributional dueling Q-network; see the file comment.
class RainbowNetImpl : public torch::nn::Module {
 public:
  /// Builds the layers. ValidationError on invalid options (sizes, empty hidden, support).
  explicit RainbowNetImpl(const RainbowNetOptions& options);
  /// x [B, S] (or [S]) -> log-probabilities [B, A, atoms] (or [A, atoms]).
  torch::Tensor forward(const torch::Tensor& x);
  /// Expected returns sum_j p_j z_j: [B, A] (or [A]).
  torch::Tensor q_values(const torch::Tensor& x);
  /// Redraws the noise of every NoisyLinear layer (no-op without noise).
  void reset_noise(std::mt19937_64& rng);
  /// Enables or disables noise in every NoisyLinear layer.
  void set_noise_enabled(bool enabled);
  /// The support z [atoms] (a buffer, so it follows the module's device).
  const torch::Tensor& support() const { return support_; }

  RainbowNetOptions options;

 private:
  /// Applies layer i of the flat list (0 .. hidden.size()-1 torso, then heads).
  torch::Tensor apply(std::size_t i, const torch::Tensor& x);
  /// Adds a Linear or NoisyLinear in -> out named `name`.
  void add_layer(const std::string& name, int64_t in, int64_t out);

  std::vector<torch::nn::Linear> plain_;  ///< one per layer when !noisy
  std::vector<NoisyLinear> noisy_;        ///< one per layer when noisy
  torch::Tensor support_;
};
TORCH_MODULE(RainbowNet);

}  // namespace placer
