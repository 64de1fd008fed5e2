#pragma once
// The attentional sequence-to-sequence device placer of ColocRL (Mirhoseini et al. 2017,
// "Device Placement Optimization with Reinforcement Learning") and of the hierarchical
// placer (Mirhoseini et al. 2018), wired as TensorFlow's hierarchical_controller.py:
//
//   x [K, T, in]  --linear + tanh-->  [K, T, H]  --LSTM encoder (bidirectional: H/2 per
//   direction, outputs concatenated)-->  e [K, T, H],  last state (h_T, c_T)
//   attention memory m = e W1                                           [K, T, H]
//   decoder: an LSTM cell started from the encoder's last state, one step per group t:
//     input_t   = device embedding of the device chosen at t-1 (a learned "go" vector at t=0)
//     s_t       = LSTMCell(input_t, s_{t-1})
//     score_t,i = v^T tanh(m_i + W2 s_t)        (attention "bahdanau", additive; TF's)
//               = m_i . (W2 s_t)                (attention "luong", multiplicative)
//     a_t       = softmax_i(score_t,i)          (sums to 1 over the T groups)
//     c_t       = sum_i a_t,i m_i
//     logits_t  = W_out [s_t ; c_t] / temperature  (then tanh_constant * tanh(. / tanh_constant)
//                                                when tanh_constant > 0)
//     (sampling only: + Gaussian noise of std logits_noise x RMS(logits_t), TF's
//      logits_std_noise, drawn from the caller's generator)
//     device_t  ~ softmax(logits_t)             (sampled, greedy argmax, or forced)
//
// K independent sequences (e.g. K sampled placements, each with its own grouping) run as one
// batch. The log-probability of a whole placement is the sum over its T steps.
// Sampling and greedy decoding step through the decoder (the next input is the device just
// chosen); kForced (teacher forcing, the log-probabilities REINFORCE needs) knows every input
// up front and runs as one batched pass: the decoder LSTM fused over the whole sequence
// (torch::lstm with the LSTMCell's weights) and the attention of all steps at once.
// Sampling uses a caller-owned std::mt19937_64, so the same seed gives the same placements.

#include <cstdint>
#include <random>
#include <string>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace placer {

struct Seq2SeqOptions {
  Seq2SeqOptions(int64_t input_dim, int64_t num_devices)
      : input_dim_(input_dim), num_devices_(num_devices) {}
  /// Width of the per-step input embedding.
  TORCH_ARG(int64_t, input_dim);
  /// Size of the device softmax (>= 1).
  TORCH_ARG(int64_t, num_devices);
  /// LSTM width H (even when bidirectional).
  TORCH_ARG(int64_t, hidden) = 512;
  /// Width of the previous-device embedding fed to the decoder.
  TORCH_ARG(int64_t, device_embedding) = 32;
  /// "bahdanau" (additive) or "luong" (multiplicative).
  TORCH_ARG(std::string, attention) = "bahdanau";
  /// Bidirectional encoder (H/2 per direction).
  TORCH_ARG(bool, bidirectional) = true;
  /// > 0: logits squashed to (-c, c) by c * tanh(logits / c); 0 = raw logits.
  TORCH_ARG(double, tanh_constant) = 0.0;
  /// Logits divided by this before the squashing (TF temperature; > 0).
  TORCH_ARG(double, temperature) = 1.0;
};

/// What one decode produced.
struct Seq2SeqOutput {
  torch::Tensor actions;    ///< [K, T] int64 device index per step
  torch::Tensor log_prob;   ///< [K] sum over steps of log p(action_t) (differentiable)
  torch::Tensor entropy;    ///< [K] mean over steps of the softmax entropy (differentiable)
  torch::Tensor attention;  ///< [K, T, T] attention weights per decoder step (when kept)
};

enum class DecodeMode { kSample, kGreedy, kForced };

class Seq2SeqPlacerImpl : public torch::nn::Module {
 public:
  /// ValidationError on non-positive sizes, an odd hidden with a bidirectional encoder or an
  /// unknown attention. Parameters come from the torch RNG (seed it with torch::manual_seed).
  explicit Seq2SeqPlacerImpl(const Seq2SeqOptions& options);

  /// inputs [K, T, input_dim]. kSample draws each step's device with `rng` (required),
  /// kGreedy takes the argmax, kForced replays `forced` [K, T] (int64, values < num_devices).
  /// keep_attention fills Seq2SeqOutput::attention. `decodes` > 0 with inputs [1, T, in]:
  /// the sequence is encoded once and decoded `decodes` times (K = decodes; the same result
  /// as passing the input repeated K times, at 1/K of the encoder's cost).
  /// logits_noise > 0 (kSample only): Gaussian noise of std logits_noise x RMS(logits) is
  /// added to each step's logits before drawing (drawn from `rng`); log_prob / entropy are
  /// then those of the noisy logits. REINFORCE recomputes them noise-free with kForced.
  Seq2SeqOutput forward(const torch::Tensor& inputs, DecodeMode mode, std::mt19937_64* rng,
                        const torch::Tensor& forced = {}, bool keep_attention = false,
                        int64_t decodes = 0, double logits_noise = 0);

  Seq2SeqOptions options;
  torch::nn::Linear in_proj{nullptr};
  torch::nn::LSTM encoder{nullptr};
  torch::nn::Linear attn_w1{nullptr}, attn_w2{nullptr}, attn_v{nullptr};
  torch::nn::Embedding device_embed{nullptr};  ///< num_devices + 1 rows; the last is "go"
  torch::nn::LSTMCell decoder{nullptr};
  torch::nn::Linear out{nullptr};

 private:
  /// temperature and tanh squashing of raw logits.
  torch::Tensor scale_logits(torch::Tensor logits) const;

  /// The encoded inputs: the attention memory and the encoder's final state (the decoder's
  /// first), the state repeated `decodes` times when > 0.
  struct Encoded {
    torch::Tensor memory;    ///< [K or 1, T, H] (1 with decodes > 0)
    torch::Tensor expanded;  ///< memory repeated to [K, T, H]
    torch::Tensor hs, cs;    ///< [K, H]
  };
  Encoded encode(const torch::Tensor& inputs, int64_t k, int64_t decodes);
  /// kForced: all steps at once (teacher forcing).
  Seq2SeqOutput decode_forced(const Encoded& enc, const torch::Tensor& forced_long,
                              bool keep_attention);
  /// kSample / kGreedy: step by step.
  Seq2SeqOutput decode_stepwise(Encoded enc, DecodeMode mode, std::mt19937_64* rng,
                                bool keep_attention, double logits_noise);
};
TORCH_MODULE(Seq2SeqPlacer);

/// Draws one index per row of `probs` [K, D] (rows summing to 1) with `rng`: the first index
/// whose cumulative probability exceeds a uniform draw (the last index on rounding).
torch::Tensor sample_rows(const torch::Tensor& probs, std::mt19937_64& rng);

}  // namespace placer
