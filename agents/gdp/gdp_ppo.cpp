// PPO (Schulman et al. 2017) for the GDP policy: advantages and the clipped update.
#include "agents/gdp/gdp_net.h"

#include <cmath>
#include <limits>
#include <vector>

// Not self-contained in LibTorch 1.13: needs <vector> and the tensor types first.
#include <torch/nn/utils/clip_grad.h>

#include "src/util/error.h"

namespace placer {

void compute_advantages(std::vector<PpoEpisode>& batch, const PpoConfig& ppo,
                        std::vector<double*> ema_baselines) {
  const bool ema = ppo.baseline == "ema";
  if (!ema && ppo.baseline != "mean") {
    throw ValidationError("ppo.baseline: unknown baseline '" + ppo.baseline +
                          "' (expected mean or ema)");
  }
  if (ema && ema_baselines.size() != batch.size()) {
    throw ValidationError("ppo.baseline ema: " + std::to_string(ema_baselines.size()) +
                          " baselines for " + std::to_string(batch.size()) + " episodes");
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    PpoEpisode& ep = batch[i];
    const size_t k = ep.rewards.size();
    PLACER_CHECK(k > 0 && ep.actions.size() == k, "PPO episode " << i << ": " << ep.actions.size()
                                                                 << " actions, " << k
                                                                 << " rewards");
    double sum = 0;
    for (double r : ep.rewards) sum += r;
    const double mean = sum / double(k);
    double* b = i < ema_baselines.size() ? ema_baselines[i] : nullptr;
    ep.advantages.assign(k, 0.0);
    if (!ema && k > 1) {
      // Leave-one-out mean of the other samples of the same instance.
      for (size_t s = 0; s < k; ++s) {
        ep.advantages[s] = ep.rewards[s] - (sum - ep.rewards[s]) / double(k - 1);
      }
      if (b != nullptr)
        *b = std::isnan(*b) ? mean : ppo.ema_decay * *b + (1 - ppo.ema_decay) * mean;
    } else if (b != nullptr) {
      // "ema", or "mean" with a single sample: the instance's moving average.
      if (std::isnan(*b)) *b = mean;
      for (size_t s = 0; s < k; ++s) ep.advantages[s] = ep.rewards[s] - *b;
      *b = ppo.ema_decay * *b + (1 - ppo.ema_decay) * mean;
    }
    // else: one sample and no baseline to compare with: advantage 0 (no signal).
  }
  if (!ppo.normalize_advantages) return;
  double n = 0, sum = 0, sq = 0;
  for (const auto& ep : batch) {
    for (double a : ep.advantages) {
      n += 1;
      sum += a;
    }
  }
  if (n == 0) return;
  const double mean = sum / n;
  for (const auto& ep : batch) {
    for (double a : ep.advantages) sq += (a - mean) * (a - mean);
  }
  const double sd = std::sqrt(sq / n);
  for (auto& ep : batch) {
    for (double& a : ep.advantages) a = sd > 1e-8 ? (a - mean) / sd : a - mean;
  }
}

void ppo_episode_backward(GdpNet& net, const PpoEpisode& ep, const torch::Tensor& actions,
                          const torch::Tensor& advantages, const PpoConfig& config,
                          double divisor, PpoPassSums* sums) {
  const double lo = 1 - config.clip, hi = 1 + config.clip;
  const GraphTensors& t = *ep.tensors;
  const int64_t k = actions.size(0);
  auto logits = net->forward(t);                   // [U, D], -inf where masked
  auto logp_all = torch::log_softmax(logits, -1);  // finite where allowed
  auto new_logp = logp_all.unsqueeze(0)
                      .expand({k, logp_all.size(0), logp_all.size(1)})
                      .gather(2, actions)
                      .squeeze(2);  // [K, U]
  auto old_logp = ep.old_log_probs.detach().to(torch::kFloat);
  auto ratio = torch::exp(new_logp - old_logp);
  auto surrogate = torch::min(ratio * advantages, torch::clamp(ratio, lo, hi) * advantages);
  auto policy_loss = -surrogate.mean();
  // Entropy over the allowed devices: masked entries have p = 0 and log p = -inf, and
  // 0 * -inf would be NaN (also in the gradient), so their log p is replaced by 0 first.
  auto probs = torch::exp(logp_all);
  auto safe_logp = logp_all.masked_fill(t.mask.logical_not(), 0.0);
  auto entropy = -(probs * safe_logp).sum(-1).mean();
  auto loss = policy_loss - config.entropy * entropy;
  // Gradients of all episodes accumulate (one backward per episode keeps memory to one
  // graph at a time; the sum equals the gradient of the batch mean).
  (loss / divisor).backward();

  sums->loss += loss.item<double>();
  sums->entropy += entropy.item<double>();
  torch::NoGradGuard no_grad;
  sums->kl += (old_logp - new_logp.detach()).sum().item<double>();
  sums->clipped += ((ratio.detach() - 1).abs() > config.clip).sum().item<double>();
  sums->count += double(new_logp.numel());
}

PpoStats ppo_update(GdpNet& net, torch::optim::Adam& optimizer, std::vector<PpoEpisode>& batch,
                    const PpoConfig& config) {
  PLACER_CHECK(config.epochs >= 1, "ppo.epochs must be >= 1, got " << config.epochs);
  PLACER_CHECK(config.clip > 0, "ppo.clip must be > 0, got " << config.clip);
  PpoStats stats;
  if (batch.empty()) return stats;
  const double episodes = double(batch.size());
  const int64_t max_devices = net->config.max_devices;

  // Per-episode constants: actions [K, U, 1], advantages [K, 1].
  std::vector<torch::Tensor> actions, advantages;
  for (size_t i = 0; i < batch.size(); ++i) {
    const PpoEpisode& ep = batch[i];
    PLACER_CHECK(ep.tensors != nullptr, "PPO episode " << i << " has no graph");
    const int64_t k = int64_t(ep.actions.size());
    const int64_t u = ep.tensors->num_units;
    PLACER_CHECK(k > 0 && ep.advantages.size() == size_t(k),
                 "PPO episode " << i << ": " << k << " actions but " << ep.advantages.size()
                                << " advantages (call compute_advantages first)");
    PLACER_CHECK(ep.old_log_probs.defined() && ep.old_log_probs.dim() == 2 &&
                     ep.old_log_probs.size(0) == k && ep.old_log_probs.size(1) == u,
                 "PPO episode " << i << ": old_log_probs must be [" << k << ", " << u << "]");
    auto a = torch::empty({k, u}, torch::kLong);
    int64_t* ap = a.data_ptr<int64_t>();
    for (int64_t s = 0; s < k; ++s) {
      PLACER_CHECK(ep.actions[size_t(s)].size() == size_t(u),
                   "PPO episode " << i << " sample " << s << ": " << ep.actions[size_t(s)].size()
                                  << " devices for " << u << " units");
      for (int64_t j = 0; j < u; ++j) {
        const int d = ep.actions[size_t(s)][size_t(j)];
        PLACER_CHECK(d >= 0 && d < max_devices, "PPO episode " << i << ": device " << d
                                                               << " outside [0, " << max_devices
                                                               << ")");
        ap[s * u + j] = d;
      }
    }
    // On the device of the graph tensors (the network's; a no-op on the CPU).
    const torch::Device device = ep.tensors->x.device();
    actions.push_back(a.unsqueeze(2).to(device));
    advantages.push_back(
        torch::tensor(ep.advantages, torch::kDouble).to(torch::kFloat).unsqueeze(1).to(device));
  }

  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    optimizer.zero_grad();
    PpoPassSums sums;
    for (size_t i = 0; i < batch.size(); ++i) {
      ppo_episode_backward(net, batch[i], actions[i], advantages[i], config, episodes, &sums);
    }
    if (config.max_grad_norm > 0) {
      torch::nn::utils::clip_grad_norm_(net->parameters(), config.max_grad_norm);
    }
    optimizer.step();
    stats.loss += sums.loss / episodes;
    stats.entropy += sums.entropy / episodes;
    stats.approx_kl += sums.count > 0 ? sums.kl / sums.count : 0;
    stats.clip_fraction += sums.count > 0 ? sums.clipped / sums.count : 0;
  }
  stats.average_over(config.epochs);
  return stats;
}

}  // namespace placer
