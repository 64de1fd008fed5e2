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

/// One shape of the pretraining corpus: layers of routing shares (each at its position in
/// its model), placed on `topo` with `eplb.redundant` redundant copies, judged by the expert
/// layer's step model (`cost`) relative to EPLB's map of the same layer.
struct ExpertRlLayers {
  ExpertTopology topo{16, 8};
  EplbOptions eplb{16, 0};
  ExpertStepCost cost;
  std::vector<std::vector<double>> shares;
  std::vector<double> positions;
};

/// How pretraining runs.
struct ExpertRlTrainOptions {
  int64_t updates = 300;
  int layers_per_update = 8;  ///< distinct layers per update (all of one shape)
  int samples = 8;            ///< sampled maps per layer (their mean reward is the baseline)
  int hidden = 32;
  double learning_rate = 3e-3;
  double entropy = 0.01;  ///< entropy bonus coefficient
  uint64_t seed = 1;
  bool choose_replicas = false;  ///< the policy gives out the redundant slots (else EPLB's)
  int64_t validate_every = 0;    ///< > 0: keep the parameters best on the validation layers
  /// The routed expert of DeepSeek-V3 (h 7168, f_e 2048) at 400 TFLOP/s, bf16 hidden states,
  /// NVLink 450 GB/s and 50 GB/s InfiniBand per GPU, 4096 tokens per GPU x top_k on `ranks`
  /// GPUs.
  static ExpertStepCost layer_cost(int ranks, int top_k) {
    ExpertStepCost c;
    c.seconds_per_assignment = 6.0 * 7168 * 2048 / 400e12;
    c.bytes_per_assignment = 7168 * 2;
    c.intra_bandwidth = 450e9;
    c.inter_bandwidth = 50e9;
    c.latency = 20e-6;
    c.assignments = 4096.0 * ranks * top_k;
    return c;
  }
  /// layer_cost(16, 8).
  static ExpertStepCost deepseek_layer_cost() { return layer_cost(16, 8); }
};

/// A policy: opaque (LibTorch inside).
class ExpertPolicy {
 public:
  /// `choose_replicas`: the policy also gives out the redundant slots (a second head over
  /// the experts); else the copy counts are the caller's (EPLB's).
  explicit ExpertPolicy(int hidden = 32, bool choose_replicas = false);
  ~ExpertPolicy();
  ExpertPolicy(const ExpertPolicy&) = delete;
  ExpertPolicy& operator=(const ExpertPolicy&) = delete;

  /// FileError / FormatError naming the file and field.
  static std::unique_ptr<ExpertPolicy> load(const std::string& path);
  /// The archive and its `.meta.json` sidecar (`how`: a line on how it was trained).
  void save(const std::string& path, const std::string& how) const;

  bool chooses_replicas() const;
  /// Copies the parameters `other` has too (same name and shape): a policy that chooses the
  /// replicas can start from one that places EPLB's copies. Returns how many it copied.
  int start_from(const ExpertPolicy& other);

  /// The greedy map of every layer (`copies[l]`: copies per expert of layer l; a policy that
  /// chooses the replicas keeps only their sum, the layer's slots).
  std::vector<ExpertLayerMap> place(const std::vector<std::vector<double>>& shares,
                                    const std::vector<std::vector<int>>& copies,
                                    const ExpertTopology& topo, int slots_per_rank) const;
  /// REINFORCE on single layers of `train` (each update: one shape, drawn when there are
  /// several); with o.validate_every > 0 the parameters with the lowest validate() on
  /// `validation` (checked every validate_every updates and at the end) are kept.
  /// `progress(update, mean ratio to EPLB of the update's samples, validation ratio or 0)`
  /// after each update. Returns the kept parameters' validation ratio (0 without validation).
  double pretrain(const std::vector<ExpertRlLayers>& train,
                  const std::vector<ExpertRlLayers>& validation, const ExpertRlTrainOptions& o,
                  const std::function<void(int64_t, double, double)>& progress = nullptr);
  /// The geometric mean over `layers` of the greedy map's step over EPLB's (layer model).
  double validate(const std::vector<ExpertRlLayers>& layers) const;
  /// Fine-tuning on one model (expert_finetune.h): 1 + updates x samples evaluations of
  /// `objective` (lower is better; the greedy map first), each update `samples` rollouts (the
  /// greedy map, and the best map so far with one layer sampled); returns the best maps seen
  /// and fills `curve` with the best objective after each evaluation. samples >= 2.
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
