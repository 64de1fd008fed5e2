#pragma once
// REINFORCE machinery shared by the seq2seq placers (colocrl, hdp; torch, agents/ only):
//
// - unit_inputs(): one input row per colocation unit of a PlacementEnv: the mean of its ops'
//   node features (env/features.h: FLOPs, output bytes and shape, parameter bytes, degrees,
//   phase, category, ...), the bag of its ops' types over the op-type vocabulary (a linear
//   layer on it = the mean op-type embedding), its in- and out-neighbour units' topological
//   positions hashed into `adjacency_width` buckets each (counts / max count: ColocRL's
//   one-hot adjacency at a fixed width), and its topological position / num_units.
// - MovingBaseline: B <- d B + (1 - d) mean(R) after each update (started at the first
//   batch's mean).
// - reinforce_update(): loss = -1/K sum_k (R_k - B) log p_k - entropy_coef * entropy, global
//   gradient-norm clip, one optimiser step.
// - reinforce_search(): the online loop (sample K placements, simulate, update; the best
//   placement seen is returned), for any policy given as two callbacks.
//
// Rewards come from PlacementEnv: -sqrt(step_time / reference), and an OOM placement gets
// -sqrt(failing_runtime) (failing runtime in units of the reference).
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "agents/seq2seq/colocrl.h"
#include "agents/common/outcome.h"
#include "agents/common/policy_file.h"
#include "env/placement_env.h"
#include "models/seq2seq.h"

namespace placer {

struct UnitInputs {
  int num_units = 0;
  int dim = 0;
  std::vector<float> x;          ///< row-major [num_units, dim], rows in unit id order
  std::vector<int> order;        ///< unit ids in topological order (first op's topo rank)
  std::vector<int> position;     ///< topological position of every unit (inverse of order)
  /// Directed unit edges (a -> b for every op edge across units), deduplicated, a != b.
  std::vector<std::pair<int, int>> edges;
};

/// ValidationError when adjacency_width < 1.
UnitInputs unit_inputs(const PlacementEnv& env, int adjacency_width);

/// [rows, dim] float tensor of selected rows (in the given order) of `in`.
torch::Tensor rows_tensor(const UnitInputs& in, const std::vector<int>& rows);

class MovingBaseline {
 public:
  explicit MovingBaseline(double decay) : decay_(decay) {}
  /// The baseline for a batch whose mean reward is `mean` (the mean itself the first time).
  double value(double mean) const { return started_ ? value_ : mean; }
  void update(double mean) {
    value_ = started_ ? decay_ * value_ + (1 - decay_) * mean : mean;
    started_ = true;
  }
  bool started() const { return started_; }

 private:
  double decay_;
  double value_ = 0;
  bool started_ = false;
};

struct ReinforceStats {
  double loss = 0;
  double mean_reward = 0;
  double baseline = 0;   ///< B used for this update
  double grad_norm = 0;  ///< before clipping
};

/// One update on K samples: log_prob [K] (differentiable), entropy [] or [K] (mean taken),
/// rewards K values. Updates `baseline` after computing the loss.
ReinforceStats reinforce_update(torch::optim::Optimizer& optimizer,
                                const std::vector<torch::Tensor>& parameters,
                                const torch::Tensor& log_prob, const torch::Tensor& entropy,
                                const std::vector<double>& rewards, MovingBaseline& baseline,
                                const ReinforceConfig& config);

/// K sampled placements (a device index into the policy's device list per unit) with their
/// differentiable log-probabilities and entropy.
struct PolicySamples {
  std::vector<std::vector<int>> device_index_per_unit;
  torch::Tensor log_prob;  ///< [K]
  torch::Tensor entropy;   ///< [] or [K]
};

struct ReinforceSearchSpec {
  std::string method;                 ///< "colocrl" / "hdp" (plan method, messages)
  const ReinforceConfig* config = nullptr;
  int64_t default_evaluations = 1000;
  std::vector<int> devices;           ///< cluster id of each device index
  /// K samples; logits_noise = the TF logit noise of this update (0 once noise_updates are
  /// over). Sample without autograd, then recompute log_prob / entropy with grad in one
  /// batched teacher-forced pass (DecodeMode::kForced).
  std::function<PolicySamples(int k, std::mt19937_64& rng, double logits_noise)> sample;
  std::function<std::vector<int>()> greedy;  ///< argmax device index per unit
  std::vector<torch::Tensor> parameters;
};

/// Validates a ReinforceConfig (ValidationError naming the field, prefixed by `method`).
void check_reinforce_config(const ReinforceConfig& c, const std::string& method);

/// The online REINFORCE loop on `env` (see the file comment). seed = budget.seed for the
/// sampling generator. result.num_units / num_steps are left for the caller.
LearnedSearchResult reinforce_search(const Problem& problem, PlacementEnv& env,
                                     const ReinforceSearchSpec& spec, const SearchBudget& budget);

/// Checkpoints of the seq2seq placers. save: `root`'s parameters to `path` (LibTorch archive)
/// and `meta` (a JSON object; format_version added) to "<path>.meta.json", each through a
/// temporary file renamed into place (FileError on failure). load: reads the sidecar,
/// checks that every field of `expected` has the same value there (FormatError naming the
/// field, the file's and the expected value), then loads the parameters into `root`.
/// Files through agents/common/policy_file.h.
void save_learned_policy(const std::string& path, torch::nn::Module& root, policy_file::Json meta);
void load_learned_policy(const std::string& path, torch::nn::Module& root,
                         policy_file::Json expected);

/// PlacementEnv options for a learned seq2seq placer on `problem`: its devices, max_devices
/// = largest id + 1, OOM reward -sqrt(failing_runtime).
PlacementEnvOptions seq2seq_env_options(const Problem& problem, const ReinforceConfig& config,
                                        bool colocate);

}  // namespace placer

namespace placer {
/// Shared by colocrl.cpp and hdp.cpp (defined in colocrl.cpp): ValidationError naming the
/// bad net.* field, prefixed by `method`; the model options of a Seq2SeqConfig.
void check_seq2seq_config(const Seq2SeqConfig& net, const std::string& method);
Seq2SeqOptions seq2seq_options(const Seq2SeqConfig& net, int64_t input_dim, int64_t devices);
/// The checkpoint sidecar fields that must match; `extra`: the method's own fields, after
/// the common ones.
policy_file::Json seq2seq_meta_json(const std::string& method, const Problem& problem,
                                    const Seq2SeqConfig& net, int64_t input_dim, int64_t devices,
                                    int num_units, int num_steps,
                                    const policy_file::Json& extra = policy_file::Json::object());

/// A spec with what an online seq2seq search (colocrl, hdp) takes from its options
/// (options.rl, options.default_evaluations), its method name, devices and parameters; the
/// caller adds sample and greedy.
template <class Options>
ReinforceSearchSpec reinforce_spec(std::string method, const Options& options,
                                   std::vector<int> devices,
                                   std::vector<torch::Tensor> parameters) {
  ReinforceSearchSpec spec;
  spec.method = std::move(method);
  spec.config = &options.rl;
  spec.default_evaluations = options.default_evaluations;
  spec.devices = std::move(devices);
  spec.parameters = std::move(parameters);
  return spec;
}

/// reinforce_search, then the result's unit and step counts; `root` (with `meta`) is saved
/// to `save_policy` when that is set.
inline LearnedSearchResult run_reinforce_search(const Problem& problem, PlacementEnv& env,
                                                const ReinforceSearchSpec& spec,
                                                const SearchBudget& budget, int num_units,
                                                int num_steps, const std::string& save_policy,
                                                torch::nn::Module& root,
                                                const policy_file::Json& meta) {
  LearnedSearchResult r = reinforce_search(problem, env, spec, budget);
  r.num_units = num_units;
  r.num_steps = num_steps;
  if (!save_policy.empty()) save_learned_policy(save_policy, root, meta);
  return r;
}

/// The placer of an online seq2seq search (colocrl, hdp): `search(problem, options, budget)`
/// as its outcome; honours the frame through seq2seq_env_options.
template <class Options, LearnedSearchResult (*Search)(const Problem&, const Options&,
                                                       const SearchBudget&)>
class OnlineSeq2SeqPlacer : public OutcomePlacer {
 public:
  OnlineSeq2SeqPlacer(std::string name, Options options)
      : name_(std::move(name)), options_(std::move(options)) {}
  std::string name() const override { return name_; }
  bool honours_frame() const override { return true; }
  SearchOutcome search_outcome(const Problem& problem, const SearchBudget& budget) override {
    return learned_search_outcome(Search(problem, options_, budget));
  }

 private:
  std::string name_;
  Options options_;
};
}  // namespace placer
