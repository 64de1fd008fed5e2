#pragma once
// GDP network and PPO internals (LibTorch). Only agents/gdp/gdp_*.cpp and tests include this;
// everything else uses the torch-free agents/gdp/gdp.h.
//
// Network (docs/gdp.md):
//   x, op_type ──GraphSAGE (both directions)──> h [N, d]
//   h ──residual superposition with x0: h + relu(g(c(x0) * h))──> h' [N, d]
//   sqrt(d) * h' in topological order ──Transformer-XL (segments + memory)──> z [N, d]
//   (GraphSAGE rows have unit L2 norm, ~1/sqrt(d) per entry; the scale brings them to the
//   O(1) entries the post-norm Transformer layers expect, as token embeddings are scaled in
//   Vaswani et al. 2017; without it the layers' biases dominated and nodes looked alike.)
//   z ──DeviceHead (masked)──> node logits [N, max_devices]
//   unit logits [U, max_devices] = mean of the node logits of the unit's ops, masked.
// The action is one device per unit, drawn from softmax(unit logits) independently.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/optim/adam.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>

#include <nlohmann/json.hpp>

#include "agents/gdp/gdp.h"
#include "env/features.h"
#include "env/placement_env.h"
#include "models/graphsage.h"
#include "models/transformer_xl.h"
#include "src/util/files.h"

namespace placer {

/// Checkpoint format / network wiring version; loading another one fails (FormatError).
/// 1: superposition output replaced the GraphSAGE embedding, no input scale (its node
/// embeddings barely differed, so the policy could not tell nodes apart). 2: residual
/// superposition and the sqrt(hidden) scale before the Transformer-XL.
inline constexpr int kGdpCheckpointFormat = 2;

/// Width of the graph-level conditioning vector x0: mean node features (feat::kDim), then
/// log1p(num_nodes) / 10, number of allowed devices / max_devices.
inline constexpr int kGdpCondDim = feat::kDim + 2;

/// An observation as tensors (CPU). Built once per env and reused by every forward pass.
struct GraphTensors {
  torch::Tensor x;         ///< [N, F] float
  torch::Tensor op_type;   ///< [N] int64
  torch::Tensor in_off, in_idx, out_off, out_idx;  ///< CSR, int64
  torch::Tensor order;     ///< [N] int64 topological order
  torch::Tensor unit_of_node;  ///< [N] int64 unit of each op
  torch::Tensor unit_count;    ///< [U] float number of ops per unit
  torch::Tensor mask;      ///< [U, max_devices] bool, true = allowed
  torch::Tensor cond;      ///< [kGdpCondDim] float
  int64_t num_units = 0;
};

/// Tensors of env's current observation, unit map and action mask.
GraphTensors to_tensors(const PlacementEnv& env);

class GdpNetImpl : public torch::nn::Module {
 public:
  /// feature_dim / op_vocab: of the running build (feat::kDim, op_type_vocabulary().size()).
  GdpNetImpl(const GdpNetConfig& config, int64_t feature_dim, int64_t op_vocab);
  /// Masked unit logits [U, max_devices] (disallowed = -inf).
  torch::Tensor forward(const GraphTensors& t);

  GdpNetConfig config;
  GraphSage sage{nullptr};
  Superposition cond{nullptr};     ///< empty when !config.superposition
  TransformerXL txl{nullptr};
  DeviceHead head{nullptr};
};
TORCH_MODULE(GdpNet);

struct GdpPolicy::Impl {
  GdpNet net{nullptr};
  PolicyMeta meta;
};

/// Argmax device per unit (ties: the lowest device id).
std::vector<int> greedy_action(const torch::Tensor& unit_logits);
/// One device per unit drawn from softmax(unit logits) with `rng` (inverse CDF over a CPU
/// copy of the probabilities, so the draw depends on the seed only, not on torch's RNG).
std::vector<int> sample_action(const torch::Tensor& unit_probs, std::mt19937_64& rng);

/// Log-probability of each unit's action: [U] (differentiable in unit_logits).
torch::Tensor action_log_probs(const torch::Tensor& unit_logits, const std::vector<int>& action);

/// The samples of one instance in one update.
struct PpoEpisode {
  const GraphTensors* tensors = nullptr;
  std::vector<std::vector<int>> actions;  ///< K actions (device per unit)
  std::vector<double> rewards;            ///< K rewards
  std::vector<double> advantages;         ///< K, filled by compute_advantages
  torch::Tensor old_log_probs;            ///< [K, U], no grad, from the sampling pass
};

/// Fills advantages: reward - baseline ("mean": mean of the other K-1 samples' rewards, or
/// the sample's own reward when K = 1 minus ema; "ema": ema_baselines[i], which is then
/// updated with the episode's mean reward), then standardises over the whole batch when
/// normalize_advantages. `ema_baselines` has one entry per episode (NaN = not yet set: the
/// first time it is set to the episode mean before use). With "mean", non-null entries are
/// kept up to date as well (so a later K = 1 episode has a baseline); the vector may then be
/// empty, and a K = 1 episode without a baseline gets advantage 0. ValidationError: unknown
/// baseline, or "ema" with ema_baselines.size() != batch.size().
void compute_advantages(std::vector<PpoEpisode>& batch, const PpoConfig& ppo,
                        std::vector<double*> ema_baselines);

struct PpoStats {
  double loss = 0, entropy = 0, approx_kl = 0, clip_fraction = 0;
  /// The sums of `epochs` passes turned into their means.
  void average_over(int epochs) {
    const double e = double(epochs);
    loss /= e;
    entropy /= e;
    approx_kl /= e;
    clip_fraction /= e;
  }
};

/// Sums over the episodes of one PPO pass (before any division), as ppo_update and the
/// distributed trainer's update (which all-reduces them) turn into PpoStats.
struct PpoPassSums {
  double loss = 0, entropy = 0, kl = 0, clipped = 0, count = 0;
};

/// One episode's clipped objective (as ppo_update): forward, loss, backward of
/// loss / `divisor` (the batch's episode count, so the accumulated gradient is that of the
/// batch mean), and its terms added to `sums`. actions [K, U, 1], advantages [K, 1].
void ppo_episode_backward(GdpNet& net, const PpoEpisode& episode, const torch::Tensor& actions,
                          const torch::Tensor& advantages, const PpoConfig& config,
                          double divisor, PpoPassSums* sums);

/// config.epochs passes of the clipped objective over the batch, one optimiser step per
/// pass (gradients of all episodes accumulated): per unit u of sample k,
///   r = exp(logp_new - logp_old),  L = -mean_{k,u} min(r A_k, clip(r, 1-eps, 1+eps) A_k)
///          - entropy * mean_u H(pi_u)
/// (per-unit ratios: the factorised action's joint ratio would explode with many units).
PpoStats ppo_update(GdpNet& net, torch::optim::Adam& optimizer, std::vector<PpoEpisode>& batch,
                    const PpoConfig& config);

// ------------------------------------------------------------------ checkpoint files ----
// Building blocks of the checkpoint layout (agents/gdp/gdp.h, "Files"), shared by
// GdpPolicy::save/load and the trainer's checkpoints (which add their own entries next to
// "net" in the same archive).

/// Writes every parameter and buffer of `net` into `archive` as the sub-archive "net"
/// (nested like torch::nn::Module::save: "net" / "sage" / "pool_in0" / "weight", i.e. the
/// parameter "sage.pool_in0.weight" lives under the prefix "net.").
void write_net(torch::serialize::OutputArchive& archive, const GdpNet& net);

/// Reads the sub-archive "net" of `archive` into `net` (which must have been built with the
/// checkpoint's sizes). Every parameter and buffer of `net` must be present with the same
/// shape; entries of the archive that `net` lacks are ignored. Throws FormatError, prefixed
/// with `path_for_errors`, naming the missing parameter, or the parameter and both shapes.
void read_net(torch::serialize::InputArchive& archive, GdpNet& net,
              const std::string& path_for_errors);

/// `meta` as the sidecar's JSON, the fields exactly as given (GdpPolicy::save fills the
/// version/width fields first); written with the archive by policy_file::save_policy_pair
/// (agents/common/policy_file.h).
nlohmann::ordered_json policy_meta_json(const PolicyMeta& meta);

/// Reads a sidecar written from policy_meta_json and checks it against this build.
/// FileError: missing/unreadable. FormatError (message starts with `path`): not JSON, a
/// field missing or of the wrong type (named, e.g. "net.hidden"), a newer format_version,
/// invalid network sizes, or feature_version / feature_dim / op_vocab different from this
/// build's kFeatureVersion / feat::kDim / op_type_vocabulary().size() (the message names
/// the field, the file's value and the expected value).
PolicyMeta read_meta_json(const std::string& path);

// atomic_rename and the other atomic-write helpers: src/util/files.h (included above).

/// Empty when `config` describes a buildable network, else why not (e.g. "hidden (30) is not
/// divisible by heads (4)"). GdpPolicy's constructor throws it as ValidationError; loading
/// a sidecar throws it as FormatError.
std::string validate_net_config(const GdpNetConfig& config);

}  // namespace placer
