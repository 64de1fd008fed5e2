#pragma once
// Placeto (Addanki et al. 2019, "Placeto: Learning Generalizable Device Placement Algorithms
// for Distributed Machine Learning"): an iterative placement MDP over the groups of a
// coarsened graph (env/placeto_env.h), a graph-embedding policy (models/placeto_net.h) and
// REINFORCE with a per-step baseline and an entropy bonus. docs/placeto.md describes it.
//
//  - placeto_search(): the placer "placeto". Without a policy file it trains a fresh policy
//    online on the given graph (budget = simulated placements); with one it places zero-shot
//    (a greedy episode plus sampled ones), then optionally fine-tunes on the graph.
//  - placeto_train(): trains one policy on a family of graphs (make_family_graph), with
//    atomic checkpoints (policy.pt + policy.pt.meta.json); the policy then places unseen
//    members of the family zero-shot.
//
// This header is torch-free (the CLI and benchmarks include it). Without LibTorch,
// placeto_available() is false, the entry points throw placer::Error saying so and
// add_placeto_methods registers nothing.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/option_table.h"
#include "datasets/family_registry.h"
#include "env/placeto_env.h"

namespace placer {

/// False when the project was built without LibTorch.
bool placeto_available();

/// Sizes of the policy network (models/placeto_net.h).
struct PlacetoNetConfig {
  int hidden = 32;         ///< node embedding width per direction
  int rounds = 4;          ///< message-passing rounds per direction
  int pool = 32;           ///< width of each pooled summary (ancestors, descendants, parallel)
  int policy_hidden = 64;  ///< the policy MLP's hidden width
  int max_devices = 8;     ///< device softmax width: a policy uses devices with id < this
  /// Logits squashed to logit_clip * tanh(logits / logit_clip) (models/placeto_net.h); 0 = off.
  double logit_clip = 2.5;
  bool operator==(const PlacetoNetConfig& o) const {
    return hidden == o.hidden && rounds == o.rounds && pool == o.pool &&
           policy_hidden == o.policy_hidden && max_devices == o.max_devices &&
           logit_clip == o.logit_clip;
  }
};

/// REINFORCE settings.
struct PlacetoRlConfig {
  int episodes = 8;          ///< episodes per update (run in lockstep, one batch)
  double lr = 0.01;          ///< Adam learning rate
  double entropy = 0.01;     ///< entropy bonus coefficient
  double gamma = 1.0;        ///< discount of the returns
  double max_grad_norm = 1;  ///< global gradient-norm clip (0 = off)
  bool normalize_advantages = true;  ///< divide the advantages by their std over the batch
};

/// What the MDP looks like (env/placeto_env.h) and how graphs are grouped.
struct PlacetoMdpConfig {
  int groups = 32;              ///< coarsening target (docs/coarsening.md); 0 = colocation + fusion
  /// Simulate the coarse graph (faster, but it has one kernel launch per group and no
  /// intra-group tensors, so its times run well below the fine graph's) instead of the
  /// graph itself.
  bool simulate_coarse = false;
  PlacetoReward reward = PlacetoReward::kIntermediate;
  /// kSingle (every group on the first allowed device) by default: with kRandom starts the
  /// intermediate returns p(s_{t-1}) - p(s_T) carry the random start's cost, whose variance
  /// drowned the signal on the two-chains test (docs/placeto.md).
  PlacetoStart start = PlacetoStart::kSingle;
  double memory_threshold = 0.9;
  double memory_penalty = 10;
};

struct PlacetoOptions {
  PlacetoNetConfig net;
  PlacetoRlConfig rl;
  PlacetoMdpConfig mdp;
  /// Zero-shot from this policy file (placeto_train's policy.pt); "" = train from scratch.
  std::string policy;
  /// With a policy: sampled episodes besides the greedy one.
  int zero_shot_samples = 7;
  /// With a policy: REINFORCE on the graph after the zero-shot episodes (fine-tuning), while
  /// the budget lasts. Without a policy, online training always runs.
  bool finetune = false;
  /// With a policy: take mdp.groups and mdp.reward from the policy's meta (the MDP it was
  /// trained on) instead of `mdp`.
  bool mdp_from_policy = true;
  int64_t default_evaluations = 20000;  ///< online budget when the budget gives neither limit
};

/// What one placeto_search did.
struct PlacetoSearchResult {
  Plan plan;                    ///< best placement seen (on problem.graph), predicted filled in
  double best_time = 0;         ///< its simulated step time on problem.graph (s)
  bool best_oom = false;
  double best_env_time = 0;     ///< its step time in the env (the coarse graph by default)
  double reference_time = 0;    ///< env's best single-device time
  int64_t evaluations = 0;      ///< simulated placements (env simulations)
  int64_t best_evaluation = 0;  ///< 1-based index of the simulation that found the best
  int64_t episodes = 0;
  int64_t updates = 0;          ///< REINFORCE updates
  int num_groups = 0;
  double greedy_env_time = 0;   ///< the final greedy episode's end state (0 when none ran)
  double zero_shot_env_time = 0;  ///< with a policy: best of the zero-shot episodes
  double seconds = 0;
  std::vector<double> mean_return;  ///< per update, mean episode return
};

/// Checks options (ValidationError naming the field, prefixed "placeto: ").
void check_placeto_options(const PlacetoOptions& options);

/// The placer on one problem (see the file comment). Budget: max_evaluations (simulated
/// placements) and/or max_seconds; neither: options.default_evaluations (zero-shot without
/// fine-tuning needs no budget). Same seed and evaluation budget = same plan.
PlacetoSearchResult placeto_search(const Problem& problem, const PlacetoOptions& options,
                                   const SearchBudget& budget);

std::unique_ptr<Placer> make_placeto_placer(PlacetoOptions options = {});
/// The `placeto` method's options: policy, samples, finetune (placeto_options.cpp).
const OptionTable<PlacetoOptions>& placeto_option_table();
/// make_placeto_placer after checking them: FileError naming a missing policy,
/// ValidationError for samples / finetune without a policy.
std::unique_ptr<Placer> make_placeto_method(const PlacetoOptions& o);

/// Registers "placeto" (not fast). Without LibTorch: nothing.
void add_placeto_methods(std::vector<MethodInfo>* out);

/// Family training ----------------------------------------------------------------------

struct PlacetoTrainConfig {
  std::string family = "enas_cnn";  ///< datasets/family_registry.h
  FamilyRanges ranges;              ///< parameter ranges of the family's graphs
  int graphs = 32;                  ///< training graphs: seeds first_seed .. first_seed + graphs - 1
  uint64_t first_seed = 1;
  std::vector<int> devices = {0, 1, 2, 3};  ///< cluster devices of every instance
  int updates = 200;                ///< one update = rl.episodes episodes of one graph
  uint64_t seed = 1;                ///< network init and every sample
  std::string output_dir;           ///< "" = no files
  int checkpoint_every = 50;        ///< updates between policy.pt writes (and at the end)
  PlacetoNetConfig net;
  PlacetoRlConfig rl;
  PlacetoMdpConfig mdp;
  /// Also write output_dir/checkpoint.pt (+ checkpoint.pt.meta.json) with every policy.pt:
  /// the network, Adam's state, the sampling generator's state and the counters (update,
  /// per-graph best placements, evaluations, seconds), so that `resume` continues the run
  /// exactly. Off by default: the library then writes policy.pt, its sidecar and log.jsonl.
  bool resumable = false;
  /// Continue the run in output_dir from its checkpoint.pt (written by a `resumable` run):
  /// updates checkpoint + 1 .. updates, bit-identical to the run that was not stopped
  /// (same thread count). log.jsonl loses its lines past the checkpoint, then is appended.
  /// Every setting but updates, checkpoint_every and output_dir must equal the
  /// checkpoint's (ValidationError naming the first that differs).
  bool resume = false;
};

/// One REINFORCE update of placeto_train (also a log.jsonl line).
struct PlacetoTrainUpdate {
  int64_t update = 0;       ///< 1-based, counted over the whole run (resumed ones included)
  int64_t total = 0;        ///< config.updates
  int graph = 0;            ///< training graph index (update - 1) % graphs
  double mean_return = 0, entropy = 0, loss = 0, grad_norm = 0;
  double best_ratio = 0;    ///< best env time seen on that graph / its reference time
  int64_t evaluations = 0;  ///< simulated placements so far (whole run)
  int64_t update_evaluations = 0;  ///< simulated placements of this update
  double update_seconds = 0;       ///< wall time of this update
};

struct PlacetoTrainCallbacks {
  /// Building the training graphs (expand, coarsen, envs): done of total.
  std::function<void(int64_t done, int64_t total)> on_prepare;
  /// Once the graphs are ready (and a resumed run's checkpoint loaded and checked), before
  /// the first update: the update training continues after (0 for a fresh run).
  std::function<void(int64_t start_update)> on_start;
  std::function<void(const PlacetoTrainUpdate&)> on_update;
  /// Polled while preparing and before every update; true: stop, after writing the policy
  /// (and checkpoint) of the updates done when any update ran.
  std::function<bool()> should_stop;
};

struct PlacetoTrainResult {
  int64_t updates = 0;
  int64_t evaluations = 0;          ///< simulated placements
  double seconds = 0;
  std::vector<double> mean_return;  ///< per update
  /// Per training graph: the best env step time seen / the env's reference time.
  std::vector<double> best_ratio;
  std::string policy_path;          ///< output_dir/policy.pt when written
  int64_t start_update = 0;         ///< the checkpoint's update when resumed, else 0
  bool stopped = false;             ///< should_stop ended the run early
  /// mean_return holds this call's updates (start_update + 1 ..); evaluations and seconds
  /// count the whole run (resumed parts included); best_ratio is empty when stopped before
  /// any graph was prepared, and infinite for a graph no update has visited.
};

/// Trains a policy on the family's graphs (training steps expanded with Adam, coarsened to
/// mdp.groups) on `cluster`; writes output_dir/policy.pt (+ .meta.json, atomically) every
/// checkpoint_every updates and at the end, and output_dir/log.jsonl (a line per update).
/// progress(done, total, status) once per update when given.
PlacetoTrainResult placeto_train(
    const PlacetoTrainConfig& config, const Cluster& cluster, const CostModel& cost,
    const std::function<void(int64_t, int64_t, const std::string&)>& progress = nullptr);

/// The same with callbacks (progress of the preparation, a record per update, stopping).
PlacetoTrainResult placeto_train(const PlacetoTrainConfig& config, const Cluster& cluster,
                                 const CostModel& cost, const PlacetoTrainCallbacks& callbacks);

/// The sidecar of a policy file (policy.pt.meta.json).
struct PlacetoPolicyMeta {
  int format_version = 1;
  int feature_dim = 0;
  PlacetoNetConfig net;
  int64_t updates = 0;
  uint64_t seed = 0;
  std::string family;
  int graphs = 0;
  uint64_t first_seed = 0;
  int groups = 0;
  std::string reward;
  std::string cluster;
  int64_t evaluations = 0;
  double train_seconds = 0;
  std::string created;
};

/// Reads and checks a policy sidecar (FileError / FormatError naming the file and field).
PlacetoPolicyMeta read_placeto_policy_meta(const std::string& policy_path);

}  // namespace placer
