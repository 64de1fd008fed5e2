#pragma once
// The learned expert placer, expert-rl (docs/expert_placement.md "expert-rl"): a policy over
// the sequential decision process of expert_episode.h, pretrained with REINFORCE on the
// routing corpus and placing zero-shot, optionally fine-tuned on the problem's own routing
// with the simulated step as the reward. Torch-free header; the networks live in
// expert_rl.cpp.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/plan/expert_balance.h"

namespace placer {

/// What pretraining sees: layers of routing shares, placed on `topo` with EPLB's copy counts
/// (`eplb`), judged by the expert layer's step model (`cost`) relative to EPLB's map.
struct ExpertRlTrainOptions {
  int64_t updates = 300;
  int layers_per_update = 8;  ///< distinct layers per update
  int samples = 8;            ///< sampled maps per layer (their mean reward is the baseline)
  int hidden = 32;
  double learning_rate = 3e-3;
  double entropy = 0.01;  ///< entropy bonus coefficient
  uint64_t seed = 1;
  ExpertTopology topo{16, 8};
  EplbOptions eplb{16, 0};
  ExpertStepCost cost = deepseek_layer_cost();
  /// DeepSeek-V3's routed expert (h 7168, f_e 2048) at 400 TFLOP/s, bf16 hidden states,
  /// NVLink 450 GB/s and 50 GB/s InfiniBand per GPU, 4096 tokens per GPU x top 8 on 16 GPUs.
  static ExpertStepCost deepseek_layer_cost();
};

/// A policy: opaque (LibTorch inside).
class ExpertPolicy {
 public:
  explicit ExpertPolicy(int hidden = 32);
  ~ExpertPolicy();
  ExpertPolicy(const ExpertPolicy&) = delete;
  ExpertPolicy& operator=(const ExpertPolicy&) = delete;

  /// FileError / FormatError naming the file and field.
  static std::unique_ptr<ExpertPolicy> load(const std::string& path);
  /// The archive and its `.meta.json` sidecar (`how`: a line on how it was trained).
  void save(const std::string& path, const std::string& how) const;

  /// The greedy map of every layer (`copies[l]`: copies per expert of layer l).
  std::vector<ExpertLayerMap> place(const std::vector<std::vector<double>>& shares,
                                    const std::vector<std::vector<int>>& copies,
                                    const ExpertTopology& topo, int slots_per_rank) const;
  /// REINFORCE on `layers` (shares of single layers, each at its own position in
  /// `positions`); `progress(update, mean ratio to EPLB)` after each update.
  void pretrain(const std::vector<std::vector<double>>& layers,
                const std::vector<double>& positions, const ExpertRlTrainOptions& o,
                const std::function<void(int64_t, double)>& progress = nullptr);
  /// Fine-tuning on one model: `samples` whole maps per update judged by `objective` (lower
  /// is better), for `updates` updates; returns the best maps seen (the greedy map first)
  /// and fills `curve` with the best objective after each evaluation.
  std::vector<ExpertLayerMap> finetune(
      const std::vector<std::vector<double>>& shares, const std::vector<std::vector<int>>& copies,
      const ExpertTopology& topo, int slots_per_rank,
      const std::function<double(const std::vector<ExpertLayerMap>&)>& objective, int64_t updates,
      int samples, uint64_t seed, std::vector<double>* curve);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// The shipped policy (models/pretrained/expert_rl.pt under the source tree).
std::string default_expert_policy_path();

}  // namespace placer
