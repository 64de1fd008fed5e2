#pragma once
// Generalizable rainbow-pp (Auto-MAP 3.5 / 4.5, Wang et al. 2020): a Rainbow DQN agent
// (agents/common/rainbow_agent.h) pretrained on generated array problems (env/pipeline_arrays.h),
// then applied to a real graph without training on it: the graph's C, A, W arrays and the
// cluster topology form the state, the greedy policy picks the S - 1 cuts among 128 coarse
// points (snapped to PipelineEnv pivots), and the simulator compares the resulting plan with
// PipelineEnv's balanced center solution. Torch-free header; the implementation needs
// LibTorch (without it every entry point throws placer::Error). See
// docs/rainbow_pp_inference.md.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/rainbow_config.h"

namespace placer {

/// True when built with LibTorch (training and inference work).
bool rainbow_pp_policy_available();

/// Pretraining options (`placer train-policy --agent rainbow-pp`; YAML keys = field names,
/// the agent's options under `rainbow:`).
struct RainbowPPTrainConfig {
  int stages = 4;                  ///< S: pipeline stages of the policy (>= 2)
  int max_devices = 32;            ///< N: topology rows / columns of the state (>= stages)
  int64_t updates = 200;           ///< updates in total
  int arrays_per_update = 64;      ///< generated array problems per update
  int episodes_per_array = 2;      ///< episodes on each generated problem
  int learn_every = 2;             ///< agent steps between learn() calls
  int threads = 1;                 ///< torch intra-op threads (the nets are small)
  int min_positions = 128;         ///< generated raw array length range
  int max_positions = 1024;
  std::vector<std::string> distributions{"uniform", "normal", "binomial"};
  int eval_every = 20;             ///< updates between evaluations (0 = off)
  int eval_arrays = 256;           ///< held-out generated problems per evaluation
  /// Real graphs evaluated at every evaluation (greedy inference vs the center solution);
  /// empty = none. Relative paths: from the config file's folder.
  std::vector<std::string> eval_graphs;
  std::string eval_cluster;        ///< cluster file of eval_graphs (required with them)
  int checkpoint_every = 10;       ///< updates between checkpoints (and at the end)
  RainbowConfig rainbow = default_rainbow();  ///< the agent (gamma, n_step: forced per S)
  uint64_t seed = 1;
  std::string output_dir = "runs/rainbow_pp";
  std::string command;  ///< provenance (meta), no key

  /// The pretraining defaults of the agent: rewards near 1 (v_min 0, v_max 2), larger net.
  static RainbowConfig default_rainbow();
};

/// Empty when usable, else what is wrong ("stages: must be >= 2, got 1").
std::string validate_rainbow_pp_train_config(const RainbowPPTrainConfig& c);

/// One update, as logged ({"type":"update", ...}).
struct RainbowPPUpdateStats {
  int64_t update = 0;
  double mean_reward = 0;  ///< of the update's terminal rewards (1 = balanced reference)
  double epsilon = 0;
  double loss = 0;  ///< mean over the update's learn() calls
  int64_t arrays = 0, episodes = 0, steps = 0;
  double seconds = 0;
};

/// One real graph of an evaluation.
struct RainbowPPEvalRow {
  std::string graph;
  double center_time = 0;  ///< simulated step time of PipelineEnv's center solution
  double policy_time = 0;  ///< of the greedy policy's cuts
};

/// One evaluation ({"type":"eval", ...}).
struct RainbowPPEvalStats {
  int64_t update = 0;
  double heldout_mean_reward = 0;  ///< greedy policy on the held-out problems (1 = balanced)
  double heldout_win_rate = 0;     ///< fraction with reward > 1
  std::vector<RainbowPPEvalRow> rows;
};

/// Greedy mean reward and win rate of the agent of `checkpoint` ("" = untrained, seeded by
/// config.seed) on `count` held-out problems (seeds disjoint from training). For tests.
RainbowPPEvalStats rainbow_pp_heldout(const RainbowPPTrainConfig& config,
                                      const std::string& checkpoint, int count);

/// The pretraining loop: generated problems on the fly (seeded per update, so a resumed run
/// sees the same problems), checkpoints at `output_dir`/checkpoint.pt (+ .meta.json),
/// policy.pt at the end, best.pt at the best held-out evaluation, log.jsonl.
class RainbowPPTrainer {
 public:
  struct Callbacks {
    std::function<void(const RainbowPPUpdateStats&)> on_update;
    std::function<void(const RainbowPPEvalStats&)> on_eval;
    std::function<bool()> should_stop;  ///< checked between problems; true = checkpoint, stop
  };
  /// ValidationError on a bad config; loads the eval graphs.
  explicit RainbowPPTrainer(const RainbowPPTrainConfig& config);
  ~RainbowPPTrainer();
  RainbowPPTrainer(const RainbowPPTrainer&) = delete;
  RainbowPPTrainer& operator=(const RainbowPPTrainer&) = delete;
  /// Restores `output_dir`/checkpoint.pt and cuts log.jsonl back to it; returns the updates
  /// done. FileError (no checkpoint) / FormatError (not one, or other stages / max_devices).
  int64_t resume();
  /// Trains up to config.updates; returns the updates done (fewer when stopped).
  int64_t train(const Callbacks& cb);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Options of the pretrained-policy placer.
struct RainbowPPPolicyOptions {
  /// Sampled rollouts besides the greedy one (each step samples among the top_k Q-values,
  /// seeded by SearchBudget::seed); distinct cut sets are simulated, the best kept.
  int samples = 0;
  int top_k = 3;
  int micro_batches = 0;  ///< 0 = PipelineEnv's default
  /// After choosing cuts: also simulate the best (policy) and the center cut sets on other
  /// layouts (PipelineEnv::best_groups / proportional_groups x micro_batch_candidates) and
  /// keep the fastest plan. No learning: a handful of simulations.
  bool search_layout = true;
};

/// The "rainbow-pp" placer of a pretrained policy (`path`: a policy.pt with its
/// policy.pt.meta.json). Loads eagerly: FileError / FormatError on a missing or bad policy;
/// placer::Error without LibTorch. search() never trains; it returns the better of the
/// policy's plan and PipelineEnv's center solution (simulated), with `method` "rainbow-pp".
std::unique_ptr<Placer> make_rainbow_pp_policy_placer(const std::string& path,
                                                      const RainbowPPPolicyOptions& options = {});

/// What the last search of a placer made by make_rainbow_pp_policy_placer chose (for bench
/// programs and tests): the policy's and the center's simulated times, which won.
struct RainbowPPInferenceInfo {
  double policy_time = 0, center_time = 0;  ///< on PipelineEnv's fixed groups
  bool policy_oom = false;
  bool used_policy = false;  ///< the returned cuts are the policy's (else the center's)
  double final_time = 0;     ///< of the returned plan (after the layout search)
  bool layout_changed = false;
  std::vector<int> coarse_cuts, pivot_cuts;
  int positions = 0, pivots = 0;
};
/// The info of `placer` (made by make_rainbow_pp_policy_placer); Error for another placer.
RainbowPPInferenceInfo rainbow_pp_inference_info(const Placer& placer);

}  // namespace placer
