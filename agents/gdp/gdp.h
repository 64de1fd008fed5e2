#pragma once
// GDP, the learned placer (Zhou et al. 2019): GraphSAGE encoder + Transformer-XL placer with a
// parameter-superposition layer and a masked per-unit device softmax, trained with PPO on a
// corpus of graphs against the simulator (PlacementEnv), used zero-shot or fine-tuned on one
// graph. docs/gdp.md describes the network, the training loop and the files.
//
// This header is torch-free on purpose: the CLI (cli/) and benchmarks include it without
// paying for <torch/torch.h>. The networks live in agents/gdp/gdp_net.h (torch), built on the
// modules of models/. When the project is built without LibTorch, gdp_available() is false
// and every entry point below throws placer::Error saying so.
//
// Files: a policy checkpoint is one LibTorch archive `<name>.pt` (network parameters; a
// training checkpoint adds the optimizer and trainer state) plus a sidecar `<name>.pt.meta.json`
// (PolicyMeta: versions, network sizes, training provenance). Both are written atomically
// (temp file + rename). Loading checks the meta against the archive and the running build
// (feature version and width, op vocabulary, network sizes) and fails with a clear message
// naming the mismatching field.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/objective.h"
#include "agents/common/option_table.h"

namespace placer {

/// False when the project was built without LibTorch (no learned placers).
bool gdp_available();

/// Network sizes. Defaults are small enough to train on a 2-core CPU.
struct GdpNetConfig {
  int hidden = 64;        ///< GraphSAGE width = Transformer-XL width d
  int sage_layers = 2;    ///< GraphSAGE layers
  int op_embedding = 16;  ///< op-type embedding width (0 = no op-type embedding)
  int txl_layers = 2;     ///< Transformer-XL layers
  int heads = 4;          ///< attention heads (hidden % heads == 0)
  int ffn = 128;          ///< Transformer-XL feed-forward width
  int segment = 128;      ///< Transformer-XL segment length (nodes)
  int mem_len = 128;      ///< Transformer-XL memory length (nodes)
  int max_devices = 8;    ///< width of the device softmax; devices with id >= this are unusable
  bool superposition = true;  ///< feature conditioning x' = relu(g(c(x0) * x))
  bool operator==(const GdpNetConfig& o) const;
  bool operator!=(const GdpNetConfig& o) const { return !(*this == o); }
};

/// PPO options (Schulman et al. 2017), shared by pretraining and fine-tuning.
struct PpoConfig {
  double lr = 1e-3;          ///< Adam learning rate
  double clip = 0.2;         ///< ratio clip epsilon
  double entropy = 0.01;     ///< entropy bonus coefficient (mean per-unit entropy)
  int epochs = 3;            ///< optimisation passes over each batch
  int samples = 8;           ///< sampled placements per graph instance per update
  int graphs_per_update = 4; ///< graph instances per update (mixed from the corpus)
  /// Advantage baseline: "mean" = mean reward of the same instance's samples in this update
  /// (leave-one-out); "ema" = exponential moving average of the instance's past rewards.
  std::string baseline = "mean";
  double ema_decay = 0.9;           ///< for baseline "ema"
  double max_grad_norm = 1.0;       ///< global gradient-norm clip (0 = off)
  double oom_penalty = -10;         ///< reward of an out-of-memory placement (GDP: -10)
  bool normalize_advantages = true; ///< standardise advantages within the batch
};

/// Sidecar metadata of a checkpoint (`<path>.meta.json`).
struct PolicyMeta {
  /// Of the checkpoint layout and network wiring (kGdpCheckpointFormat in agents/gdp/gdp_net.h);
  /// 2 since the residual superposition and the sqrt(hidden) input scale.
  int format_version = 2;
  int feature_version = 0; ///< kFeatureVersion of env/features.h at training time
  int feature_dim = 0;     ///< node feature width
  int op_vocab = 0;        ///< op-type vocabulary size
  GdpNetConfig net;
  int64_t updates = 0;     ///< PPO updates done
  uint64_t seed = 0;
  std::string corpus;      ///< manifest path used for training ("" = none)
  std::string corpus_hash; ///< 16 hex digits over the training entries' fingerprints
  std::vector<std::string> clusters;
  double train_seconds = 0;
  int64_t evaluations = 0; ///< simulator runs spent in training
  std::string created;     ///< UTC time stamp (ISO 8601)
  std::string command;     ///< how it was made (free text, e.g. the command line)
};

/// A GDP policy network (pimpl over the LibTorch module). Movable, not copyable.
class GdpPolicy {
 public:
  /// A freshly initialised network (parameters drawn from `seed`).
  GdpPolicy(const GdpNetConfig& net, uint64_t seed);
  ~GdpPolicy();
  GdpPolicy(GdpPolicy&&) noexcept;
  GdpPolicy& operator=(GdpPolicy&&) noexcept;
  GdpPolicy(const GdpPolicy&) = delete;
  GdpPolicy& operator=(const GdpPolicy&) = delete;

  /// Loads `path` and its sidecar. FileError: missing/unreadable file or sidecar.
  /// FormatError: corrupt archive, a sidecar field missing, or a mismatch with this build
  /// (feature version/width, op vocabulary) or between sidecar sizes and archive tensors
  /// (the message names the field or the parameter and both shapes).
  static GdpPolicy load(const std::string& path);
  /// Writes the network (and nothing else) to `path` + sidecar, atomically. Fills the
  /// meta's version/width fields itself.
  void save(const std::string& path, PolicyMeta meta) const;

  const GdpNetConfig& config() const;
  /// Meta of the loaded checkpoint (a fresh policy: defaults with versions filled in).
  const PolicyMeta& meta() const;
  int64_t num_parameters() const;
  /// A deep copy (fine-tuning works on a copy so the loaded policy stays as it was).
  GdpPolicy clone() const;

  struct Impl;  ///< defined in agents/gdp/gdp_net.h (torch)
  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }

 private:
  GdpPolicy();
  std::unique_ptr<Impl> impl_;
};

/// Turns a placement (a plan with a placement only) into the plan it is scored as, e.g. its
/// device groups read as pipeline stages (`gdp+stages`, agents/staged_methods.h). Throws
/// placer::Error for a placement it cannot shape. Made of a callable (problem, placement), or
/// of one (problem, placement, sim) that also leaves the shaped plan's simulation (critical
/// path off) in *sim when it made one, so that scoring does not simulate it again.
class GdpShape {
 public:
  using Fn =
      std::function<Plan(const Problem&, const Plan& placement, std::optional<SimResult>* sim)>;
  GdpShape() = default;
  template <class F,
            std::enable_if_t<std::is_invocable_r_v<Plan, const F&, const Problem&, const Plan&>,
                             int> = 0>
  GdpShape(F f)  // NOLINT(google-explicit-constructor): assigned from lambdas
      : fn_([f = std::move(f)](const Problem& p, const Plan& placement, std::optional<SimResult>*) {
          return f(p, placement);
        }) {}
  template <class F, std::enable_if_t<std::is_invocable_r_v<Plan, const F&, const Problem&,
                                                            const Plan&, std::optional<SimResult>*>,
                                      int> = 0>
  GdpShape(F f) : fn_(std::move(f)) {}  // NOLINT(google-explicit-constructor)

  /// The plan of `placement`; *sim (when not null) its simulation where the shape made one.
  Plan operator()(const Problem& p, const Plan& placement,
                  std::optional<SimResult>* sim = nullptr) const {
    return fn_(p, placement, sim);
  }
  explicit operator bool() const { return bool(fn_); }

 private:
  Fn fn_;
};

/// `placement` as the plan `shape` makes of it on `problem` (left in *shaped), simulated
/// unless `shape` already did (or filled its prediction); its step_time is the time
/// `objective` minimises (the throughput objective reads the devices' busy times of the
/// shaped plan's simulation). Throws what `shape` throws.
SimResult shaped_result(const Problem& problem, const GdpShape& shape, const Plan& placement,
                        Plan* shaped, Objective objective = Objective::kStepTime);

/// A last search on the best shaped plan (GdpPlaceOptions::polish): (problem, plan, its
/// time, spend) -> the best plan found and its time.
using GdpPolish = std::function<std::pair<Plan, double>(const Problem&, const Plan&, double,
                                                        const std::function<bool()>& spend)>;

/// Options of `placer place --policy`.
struct GdpPlaceOptions {
  int samples = 16;          ///< sampled placements scored besides the greedy one
  /// Block moves around the best placement after the samples (agents/gdp/gdp_refine.h),
  /// each kept when it scores better.
  int refine = 0;
  /// Block moves after each fine-tuning update, drawn from the policy being tuned: a climb
  /// from the best placement that restarts a few moves away from it when stuck.
  int finetune_refine = 0;
  int finetune_updates = 0;  ///< PPO updates on this graph after zero-shot (0 = zero-shot)
  PpoConfig ppo;             ///< fine-tuning options (graphs_per_update is ignored: 1 graph)
  bool colocate = true;      ///< act on colocation units (see env/placement_env.h)
  /// When set, every placement is scored as the plan `shape` makes of it, and that plan is
  /// the result: `gdp+stages` reads the placement's device groups as pipeline stages and
  /// lets pipeline-dp choose their replicas (agents/staged_methods.cpp). It throws
  /// placer::Error for a placement it cannot shape (scored as out of memory).
  GdpShape shape;
  /// What the shaped plans are scored by (agents/common/objective.h; `gdp+stages`' key
  /// `objective`): their step time, or their steady-state time per step.
  Objective objective = Objective::kStepTime;
  /// With fine-tuning and a shape: after each update, the best shaped plan with pipeline
  /// stages (when it is another placement's than last time) goes to `polish` with its time;
  /// the plan it returns (with its time) is the result when it beats every scored placement.
  /// `spend` counts one evaluation and returns false when the budget is spent (call it before
  /// each simulation). `gdp+stages`: polish_pipeline (agents/staged_polish.h).
  GdpPolish polish;
  /// Scored placements remembered, of each kind (as placed, shaped): a repeat of one is not
  /// scored again; beyond this many the oldest is forgotten (scored again when it repeats).
  size_t cache_entries = size_t{1} << 15;
};

/// The `gdp` method's options (`placer place --method gdp --set KEY=VALUE`; the table is
/// gdp_option_table(), agents/gdp/gdp_options.cpp).
struct GdpMethodOptions {
  std::string policy;  ///< "" = default_policy_path()
  GdpPlaceOptions place;
  bool polish = true;  ///< gdp+stages: polish the best pipeline while fine-tuning
};

/// The options of gdp (and, with another owner, gdp+stages).
const OptionTable<GdpMethodOptions>& gdp_option_table();

/// What gdp_place found.
struct GdpPlaceResult {
  Plan plan;                  ///< the best placement seen (method "gdp"), predicted filled in
  double greedy_time = 0;     ///< step time of the greedy (argmax) placement, seconds
  bool greedy_oom = false;
  double zero_shot_time = 0;  ///< best of greedy + samples before fine-tuning
  double best_time = 0;       ///< the plan's step time
  double reference_time = 0;  ///< the env's reference (best single-device time)
  int64_t evaluations = 0;    ///< placements scored (repeats included)
  /// Of those, placements scored before (answered from a cache, no simulation).
  int64_t repeats = 0;
  double seconds = 0;         ///< wall time of the whole search
  /// Best step time after each fine-tuning update (empty for zero-shot).
  std::vector<double> finetune_curve;
};

/// Zero-shot: the greedy placement plus options.samples sampled ones (seeded by
/// budget.seed), each simulated, best kept; then options.finetune_updates PPO updates on a
/// copy of the policy, each sampling ppo.samples placements, the best placement seen kept.
/// budget.max_evaluations / max_seconds, when > 0, stop the samples and fine-tuning early (the
/// greedy placement always runs). budget.progress is called once per update. Throws
/// ValidationError when the problem has a device id >= the policy's max_devices.
GdpPlaceResult gdp_place(const GdpPolicy& policy, const Problem& problem,
                         const GdpPlaceOptions& options, const SearchBudget& budget);

/// Path of the shipped default policy: $PLACER_POLICY if set, else
/// shipped_policy_path("default.pt").
std::string default_policy_path();

/// <source dir>/models/pretrained/<file>: the shipped policies ("default.pt" for gdp and
/// gdp+hybrid, "stages.pt" for gdp+stages, trained with `stages: true`).
std::string shipped_policy_path(const std::string& file);

/// A Placer (named `name`) that loads `policy_path` ("" = default_policy_path()) on first
/// search.
std::unique_ptr<Placer> make_gdp_placer(const std::string& policy_path,
                                        const GdpPlaceOptions& options,
                                        const std::string& name = "gdp");

// ---------------------------------------------------------------- batch pretraining ----

/// Distributed training (docs/distributed.md). Unset fields (-1 / "") are taken from the
/// environment (agents/gdp/gdp_dist.h, resolve_dist); nothing set anywhere = one process.
struct GdpDistConfig {
  std::string url;       ///< rendezvous "tcp://host:port" (rank 0 serves it) or "file:///path"
  int rank = -1;         ///< this process's rank
  int world_size = -1;   ///< number of processes
  int local_rank = -1;   ///< rank on this host (picks the GPU with device cuda)
  double timeout_seconds = 60;  ///< rendezvous and every collective; a lost rank ends the run
  /// The train instances are split into this many seeded shards (instance i in shard
  /// i % shards), each update drawing its share of graphs_per_update from every shard; rank r
  /// works the shards s with s % world_size == r. 0 = world size. A run with a fixed value
  /// draws the same global batch at any world size (single process included).
  int shards = 0;
};

/// Everything `placer train-policy` takes (docs/gdp.md lists the YAML keys).
struct TrainConfig {
  std::string corpus;                      ///< manifest path (required)
  std::vector<std::string> tags;           ///< keep entries with any of these tags (empty = all)
  int64_t max_ops = 6000;                  ///< skip graphs whose training step has more ops
  std::vector<std::string> clusters;       ///< cluster files (required, >= 1)
  std::vector<int> device_counts = {2, 4, 8};  ///< an instance uses the first k devices
  /// Micro-batches an instance's placement runs with (src/plan/plan_frame.h): every
  /// (graph, cluster, k) is trained once per entry, its reward the step time of M
  /// micro-batches pipelined through the placement, so the policy learns to place for the
  /// pipelined plan the hybrid outer loop runs. {1} = the plain step (the first policies).
  std::vector<int> micro_batches = {1};
  /// Train for `gdp+stages`: every placement (sampled, greedy, validation) is scored as the
  /// plan `shape` makes of it, and the reference and validation methods' whole plans are
  /// timed (stages, replicas and micro-batches included). Needs micro_batches [1] and
  /// `shape`, which `placer train-policy` sets to placement_as_pipeline.
  bool stages = false;
  GdpShape shape;  ///< not a YAML key; see `stages`
  std::string profile;                     ///< cost profile ("" = shipped default)
  std::string optimizer = "adam";          ///< training-step expansion optimizer
  /// Classical methods whose best time (with the best single-device time) is each
  /// instance's reward reference, so -1 = as good as the best of them.
  std::vector<std::string> reference_methods = {"m-etf"};
  GdpNetConfig net;
  PpoConfig ppo;
  int64_t updates = 300;                   ///< updates in total (imitation + PPO)
  /// The first imitation_updates of the `updates` are behaviour cloning (docs/gdp.md,
  /// "Imitation warm start"): cross-entropy towards each instance's reference placement
  /// (the best of reference_methods and the single-device placements). <= updates.
  int64_t imitation_updates = 0;
  uint64_t seed = 1;
  std::string output_dir = "runs/gdp";
  int checkpoint_every = 20;               ///< updates between checkpoints (and at the end)
  int eval_every = 50;                     ///< updates between validation evaluations (0 = off)
  int eval_instances = 6;                  ///< validation instances per evaluation
  int eval_samples = 8;                    ///< sampled placements per validation instance
  std::vector<std::string> eval_baselines = {"m-etf", "m-sct", "metis", "critical-path"};
  std::string init_policy;                 ///< warm start from this policy ("" = fresh)
  std::string command;                     ///< recorded in the meta
  GdpDistConfig dist;                      ///< ranks of a distributed run (default: one process)
  int threads = 0;                         ///< rollout threads per process (0 = all cores)
  std::string device = "cpu";              ///< where the network trains: "cpu" or "cuda"
};

/// One update, as logged (one JSONL line {"type":"update", ...}).
struct TrainUpdateStats {
  int64_t update = 0;          ///< 1-based
  /// "imitation" (update <= imitation_updates) or "ppo". An imitation update's rewards and
  /// best_ratio come from one simulation of the greedy placement per instance, its loss is
  /// the cross-entropy towards the reference placement (entropy, approx_kl, clip_fraction 0).
  std::string phase = "ppo";
  /// Imitation: mean over the update's instances of the fraction of units whose argmax
  /// device (before the update's optimiser step) is the reference device. PPO: 0.
  double accuracy = 0;
  double mean_reward = 0;      ///< over all samples of the update
  double best_reward = 0;
  /// Geometric mean over the update's instances of best sampled time / reference.
  double best_ratio = 0;
  double loss = 0, entropy = 0, approx_kl = 0, clip_fraction = 0;
  int64_t evaluations = 0;     ///< simulator runs in this update
  double seconds = 0;          ///< wall time of this update
  std::vector<std::string> instances;  ///< "<graph>@<cluster>:<k>"
};

/// One validation evaluation (one JSONL line {"type":"eval", ...}).
struct TrainEvalRow {
  std::string instance;
  double reference_time = 0;
  std::string best_classical;    ///< name of the best eval baseline
  double best_classical_time = 0;
  double greedy_time = 0;        ///< policy argmax placement
  double sampled_time = 0;       ///< best of greedy + eval_samples samples
};
struct TrainEvalStats {
  int64_t update = 0;
  std::vector<TrainEvalRow> rows;
  /// Geomean over rows of sampled_time / best_classical_time (< 1: the policy wins).
  double geomean_vs_classical = 0;
  double geomean_greedy_vs_classical = 0;
};

/// Pretraining over a corpus. Output directory (created):
///   checkpoint.pt (+ .meta.json)  latest training checkpoint (network + Adam + trainer state)
///   policy.pt (+ .meta.json)      network only, written with every checkpoint (for `place`)
///   best.pt (+ .meta.json)        network with the best validation geomean so far
///   log.jsonl                     one line per update and per evaluation
///   config.yaml                   the effective configuration (written by the CLI)
/// Deterministic: update u draws its instances and samples from (seed, u) alone, so a run
/// resumed from a checkpoint continues exactly as the uninterrupted run would have.
class GdpTrainer {
 public:
  /// Validates the config (ValidationError naming the key) and loads the corpus and
  /// clusters. Instances are built lazily.
  explicit GdpTrainer(TrainConfig config);
  ~GdpTrainer();

  /// Continues from output_dir/checkpoint.pt: network, optimizer, update counter, baselines;
  /// log.jsonl is cut back to the checkpoint's update. FileError when there is no
  /// checkpoint; ValidationError when the checkpoint's network sizes or seed differ from
  /// the config. Returns the update it resumes after.
  int64_t resume();

  struct Callbacks {
    std::function<void(const TrainUpdateStats&)> on_update;
    std::function<void(const TrainEvalStats&)> on_eval;
    /// Polled before each update; true = checkpoint now and return (e.g. on SIGINT).
    std::function<bool()> should_stop;
    /// Progress of long preparation (building instances / references): (done, total, what).
    std::function<void(int64_t, int64_t, const std::string&)> on_prepare;
  };
  /// Runs updates until config.updates (or should_stop). Checkpoints every
  /// checkpoint_every updates and at the end/stop. Returns the number of updates done in total.
  int64_t train(const Callbacks& callbacks);
  /// Evaluates the current policy on the validation split (also done every eval_every).
  TrainEvalStats evaluate();

  int64_t updates_done() const;
  const TrainConfig& config() const;
  /// Number of train / validation instances (graphs x clusters x device counts).
  size_t num_train_instances() const;
  size_t num_val_instances() const;
  /// The gradient all-reduce backend of a distributed run ("gloo" or "nccl"); "" for one process.
  std::string dist_backend() const;

 private:
  friend struct GdpTrainerAccess;  // agents/gdp/gdp_dist_group.h (tests of distributed runs)
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace placer
