#pragma once
// The feed-forward grouper of the hierarchical placer (Mirhoseini et al. 2018, "A Hierarchical
// Model for Device Placement"), as TensorFlow's hierarchical_controller.py builds it:
//
//   x [N, in] (one row per op / colocation unit)  --W_ff (hidden)--> [activation] --W_sm-->
//   logits [N, G],   group(op) ~ softmax(logits)   independently per op
//
// TF's grouper has no non-linearity between the two matrices (activation "none", the
// default here); "relu" and "tanh" are offered. The log-probability of a whole grouping is
// the sum over the ops of log p(group(op)).

#include <cstdint>
#include <random>
#include <string>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace placer {

struct GrouperOptions {
  GrouperOptions(int64_t input_dim, int64_t num_groups)
      : input_dim_(input_dim), num_groups_(num_groups) {}
  TORCH_ARG(int64_t, input_dim);
  TORCH_ARG(int64_t, num_groups);
  /// Hidden width (TF grouping_hidden_size = 64).
  TORCH_ARG(int64_t, hidden) = 64;
  /// "none" (TF), "relu" or "tanh".
  TORCH_ARG(std::string, activation) = "none";
};

struct GrouperOutput {
  torch::Tensor groups;    ///< [K, N] int64 group per op
  torch::Tensor log_prob;  ///< [K] sum over ops of log p(group) (differentiable)
  torch::Tensor entropy;   ///< [] mean over ops of the softmax entropy (differentiable)
};

class GrouperImpl : public torch::nn::Module {
 public:
  /// ValidationError on non-positive sizes or an unknown activation. Parameters come from the
  /// torch RNG.
  explicit GrouperImpl(const GrouperOptions& options);
  /// x [N, input_dim] -> logits [N, num_groups].
  torch::Tensor forward(const torch::Tensor& x);
  /// K groupings drawn with `rng` (rng == nullptr: the argmax grouping, K = 1).
  GrouperOutput sample(const torch::Tensor& x, int64_t k, std::mt19937_64* rng);
  /// Log-probability [K] of given groupings [K, N] under the current parameters.
  torch::Tensor log_prob(const torch::Tensor& x, const torch::Tensor& groups);

  GrouperOptions options;
  torch::nn::Linear ff{nullptr}, softmax{nullptr};
};
TORCH_MODULE(Grouper);

}  // namespace placer
