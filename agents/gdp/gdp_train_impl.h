#pragma once
// Private to the GDP trainer (agents/gdp/gdp_train.cpp: instances, references, caches,
// checkpoints; agents/gdp/gdp_train_loop.cpp: imitation / PPO updates, evaluation, the training
// loop): shared helpers and the definition of GdpTrainer::Impl. Not for other includers.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <torch/optim/adam.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/types.h>
#include <torch/utils.h>
// Not self-contained in LibTorch 1.13: needs <vector> and the tensor types first.
#include <torch/nn/utils/clip_grad.h>
#include <nlohmann/json.hpp>

#include "agents/common/training_run.h"
#include "agents/gdp/gdp.h"
#include "agents/gdp/gdp_dist.h"
#include "agents/gdp/gdp_dist_group.h"
#include "agents/gdp/gdp_net.h"
#include "datasets/corpus.h"
#include "env/placement_env.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"
#include "src/util/files.h"

namespace placer {
namespace gdp_train {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Seed of the random stream `salt` of update u: a function of (seed, u, salt) alone.
inline uint64_t stream_seed(uint64_t seed, int64_t u, uint64_t salt) {
  return splitmix64(splitmix64(splitmix64(seed) ^ salt) + static_cast<uint64_t>(u));
}
constexpr uint64_t kTrainStream = 0x7472616e;  // "tran"
constexpr uint64_t kEvalStream = 0x6576616c;   // "eval"

/// Uniform integer in [0, n), n > 0, by rejection (portable, unlike the std distributions).
inline uint64_t uniform_below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x = rng();
  while (x >= limit) x = rng();
  return x % n;
}

inline uint64_t fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

/// "dgx1_p100" for ".../dgx1_p100.cluster.yaml".
inline std::string cluster_key(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (const char* suffix : {".cluster.yaml", ".cluster.yml", ".yaml", ".yml"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      return name.substr(0, name.size() - s.size());
    }
  }
  return name;
}

/// Geometric mean of positive values (0 when empty).
inline double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

/// A finite JSON number, or null.
inline Json num(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

/// Lower is better: any non-OOM placement beats every OOM one.
struct Outcome {
  double time = std::numeric_limits<double>::infinity();
  bool oom = true;
  bool valid = false;
  void consider(double t, bool o) {
    if (!valid || (oom && !o) || (oom == o && t < time)) {
      time = t;
      oom = o;
      valid = true;
    }
  }
};

struct ClusterSlot {
  std::string path;
  std::string key;
  Cluster cluster;
  std::unique_ptr<CostModel> cost;
};

struct Instance {
  size_t entry = 0;  // corpus entry index
  int cluster = 0;   // index into clusters
  int k = 0;         // devices 0 .. k-1
  int micro_batches = 1;  // the frame its placements run in (TrainConfig::micro_batches)
  std::string key;   // "<graph>@<cluster>:<k>", with "/m<M>" appended when M > 1
};

struct LiveEnv {
  std::shared_ptr<const Graph> graph;
  std::unique_ptr<PlacementEnv> env;
  GraphTensors tensors;
  uint64_t last_used = 0;
};

struct GraphSlot {
  std::shared_ptr<const Graph> graph;
  uint64_t last_used = 0;
};

/// Device labels in canonical order: the device of the first unit met in topological op
/// order becomes the lowest allowed device, the next new device the next one, and so on.
/// Placements that differ only by a permutation of devices (equal on identical, symmetric
/// devices) then give the same imitation target, so the policy is not asked to predict an
/// arbitrary device numbering (on asymmetric links the relabelled placement may be slightly
/// slower than the reference; it is only a target). Kept as is if the mask would forbid it.
std::vector<int16_t> canonical_devices(const PlacementEnv& env, std::vector<int16_t> action);

/// The reference placement of an instance as a device per unit of `env`: the plan of the best
/// reference method (`placement`, a device per op; empty = none) when its time
/// `baseline_time` beats every fitting single-device time (or no single device fits), else
/// every unit on the fastest single device (the fastest fitting one, else the fastest). A
/// unit takes the most frequent device among its ops (ties: the lowest id). A plan that puts
/// a unit on a device the env's mask forbids falls back to the single device.
std::vector<int16_t> reference_units(const PlacementEnv& env, const std::vector<int>& placement,
                                     double baseline_time);

/// The freshly initialised network of a config (ValidationError "net: ..." on bad sizes).
inline GdpPolicy initial_policy(const TrainConfig& c) {
  const std::string why = validate_net_config(c.net);
  if (!why.empty()) throw ValidationError("net: " + why);
  return GdpPolicy(c.net, c.seed);
}

/// What one episode (an instance in an update) contributed, in a form that travels between
/// ranks: the update's log line is computed from the records of all ranks in (shard, index)
/// order, so it does not depend on the world size.
struct EpisodeRecord {
  int shard = 0, index = 0;
  std::string key;
  std::vector<double> rewards;
  double ratio = 0;     // best time / reference time
  double accuracy = 0;  // imitation
  double loss = 0;      // imitation
  Json to_json() const {
    return {{"s", shard}, {"i", index}, {"k", key}, {"r", rewards},
            {"q", num(ratio)}, {"a", accuracy}, {"l", loss}};
  }
  static EpisodeRecord from_json(const Json& j) {
    EpisodeRecord e;
    e.shard = j.at("s").get<int>();
    e.index = j.at("i").get<int>();
    e.key = j.at("k").get<std::string>();
    e.rewards = j.at("r").get<std::vector<double>>();
    e.ratio = j.at("q").is_null() ? std::numeric_limits<double>::infinity() : j.at("q").get<double>();
    e.accuracy = j.at("a").get<double>();
    e.loss = j.at("l").get<double>();
    return e;
  }
};

/// `t` with every tensor on `device` (the GPU path; on the CPU the tensors are used as built).
inline GraphTensors tensors_to(const GraphTensors& t, torch::Device device) {
  auto to = [&](const torch::Tensor& x) { return x.defined() ? x.to(device) : x; };
  GraphTensors d;
  d.x = to(t.x);
  d.op_type = to(t.op_type);
  d.in_off = to(t.in_off);
  d.in_idx = to(t.in_idx);
  d.out_off = to(t.out_off);
  d.out_idx = to(t.out_idx);
  d.order = to(t.order);
  d.unit_of_node = to(t.unit_of_node);
  d.unit_count = to(t.unit_count);
  d.mask = to(t.mask);
  d.cond = to(t.cond);
  d.num_units = t.num_units;
  return d;
}

/// Moves Adam's per-parameter state (moment estimates) to `device`; the parameters must be
/// there too before the next step. Checkpoints are written from CPU copies, so a checkpoint
/// of a GPU run loads on a CPU-only build.
inline void optimizer_state_to(torch::optim::Adam& adam, torch::Device device) {
  for (auto& entry : adam.state()) {
    auto* s = dynamic_cast<torch::optim::AdamParamState*>(entry.second.get());
    if (s == nullptr) continue;
    if (s->exp_avg().defined()) s->exp_avg(s->exp_avg().to(device));
    if (s->exp_avg_sq().defined()) s->exp_avg_sq(s->exp_avg_sq().to(device));
    if (s->max_exp_avg_sq().defined()) s->max_exp_avg_sq(s->max_exp_avg_sq().to(device));
  }
}

/// The reference of an instance: the best time of the reference methods (0 = none) and that
/// plan's device per op (empty = none). A pure function of its arguments, so references of
/// several instances are built on the rollout threads. With a non-trivial frame each method
/// searches for it (Problem::frame) and its placement is timed inside it, as the policy's.
struct Reference {
  double time = 0;
  std::vector<int> placement;
};
Reference build_reference(const Graph& g, const ClusterSlot& cs, const std::vector<int>& devices,
                          const PlanFrame& frame, const TrainConfig& config);

/// The best of the eval baselines on one instance: (method, step time; 0 = none fitted),
/// timed as build_reference times its methods.
std::pair<std::string, double> best_classical(const Graph& g, const ClusterSlot& cs,
                                              const std::vector<int>& devices,
                                              const PlanFrame& frame, const TrainConfig& config);

/// What a resumed run must share with its checkpoint: the network sizes and the seed.
Fingerprint resume_fingerprint(const GdpNetConfig& net, uint64_t seed);

struct EvalCandidate;  // one validation instance of an evaluation pass (gdp_train_loop.cpp)

constexpr size_t kMaxLiveEnvs = 128;
constexpr size_t kMaxCachedGraphs = 128;

}  // namespace gdp_train

using namespace gdp_train;  // NOLINT: private header of two translation units

struct GdpTrainer::Impl {
  TrainConfig config;
  TrainingRun run;  // config.output_dir: log.jsonl, checkpoint.pt, policy.pt, best.pt
  Corpus corpus;
  std::vector<ClusterSlot> clusters;
  TrainingOptions training;
  std::vector<size_t> train_entries, val_entries;
  std::vector<Instance> train_instances, val_instances;  // val in evaluation order

  // Caches. Graphs and envs are rebuilt identically when evicted; references and op counts
  // are kept for every instance seen.
  std::map<size_t, int64_t> step_ops;  // training-step op count per entry
  std::set<size_t> oversize;           // entries skipped for max_ops
  std::map<size_t, GraphSlot> graphs;
  std::map<std::string, double> reference_baseline;  // best reference method time (0 = none)
  // Reference placement (device per unit) of every instance whose env was built.
  std::map<std::string, std::vector<int16_t>> reference_action;
  std::map<std::string, std::unique_ptr<LiveEnv>> envs;
  std::map<std::string, std::pair<std::string, double>> classical;  // eval baselines
  uint64_t tick = 0;
  std::string corpus_hash;  // computed lazily
  const Callbacks* callbacks = nullptr;

  // Network and optimizer.
  GdpPolicy policy;
  std::unique_ptr<torch::optim::Adam> adam;

  // Trainer state (checkpointed).
  int64_t updates_done = 0;
  std::map<std::string, double> ema;  // by instance key
  int64_t evaluations = 0;
  double train_seconds = 0;
  double best_val_geomean = std::numeric_limits<double>::infinity();

  // Distribution (docs/distributed.md): this rank's shards of the train instances, the
  // process group (null for one process) and the rollout threads.
  DistSetup setup;
  std::unique_ptr<DistGroup> group;
  int shards = 1;
  std::vector<int> my_shards;
  int threads = 1;
  // Where the network, the optimizer state and the batch tensors live (TrainConfig::device;
  // cuda:<local rank>). The simulator and the sampling stay on the CPU.
  torch::Device device{torch::kCPU};

  explicit Impl(TrainConfig c);
  /// The process group, threads and this rank's shards (docs/distributed.md).
  void setup_distribution();
  /// val_instances in evaluation order.
  void order_val_instances();
  bool on_gpu() const { return !device.is_cpu(); }
  /// Runs `fn` with the network and the optimizer state on the CPU (checkpoints, resume),
  /// moving them back to `device` afterwards (also when fn throws).
  template <class Fn>
  void with_cpu_state(Fn&& fn);

  bool root() const { return setup.rank == 0; }
  int world() const { return setup.world_size; }
  /// Instances shard s draws in update u (graphs_per_update spread over the shards).
  size_t shard_count(int s) const {
    const size_t g = size_t(config.ppo.graphs_per_update), n = size_t(shards);
    return g / n + (size_t(s) < g % n ? 1 : 0);
  }
  uint64_t shard_seed(int64_t u, int s) const {
    const uint64_t base = stream_seed(config.seed, u, kTrainStream);
    return s == 0 ? base : splitmix64(base ^ (0x5368617264ull * uint64_t(s)));
  }
  /// Sum over the ranks (identity for one process).
  std::vector<double> sum_all(const std::vector<double>& v) const {
    return group ? group->allreduce(v, "sum") : v;
  }
  /// The records of all ranks, in (shard, index) order.
  std::vector<EpisodeRecord> gather(std::vector<EpisodeRecord> mine) const;
  /// Broadcasts rank 0's parameters and buffers (identical start on every rank).
  void sync_parameters();
  /// Sums the gradients over the ranks (no-op for one process).
  void reduce_gradients();

  void prepare(int64_t done, int64_t total, const std::string& what) const {
    if (callbacks && callbacks->on_prepare) callbacks->on_prepare(done, total, what);
  }

  std::shared_ptr<const Graph> graph(size_t entry);
  LiveEnv* env(const Instance& inst) { return envs_of({&inst})[0]; }
  /// The live envs of `insts` (nullptr where the graph exceeds max_ops), building the
  /// missing ones — references (the classical reference placers) and envs — on the rollout
  /// threads; the caches are updated afterwards in `insts` order, so nothing depends on the
  /// thread count.
  std::vector<LiveEnv*> envs_of(const std::vector<const Instance*>& insts);
  void trim_caches();
  /// `count` distinct instances of `shard` drawn with `rng`, skipping oversize graphs (their
  /// envs are not built yet: envs_of).
  std::vector<const Instance*> pick_instances(std::mt19937_64& rng, int shard, size_t count);
  /// This rank's instances of update u with their envs (its shards in order, each drawing
  /// from its own stream; the samples continue the stream after the draw).
  struct Picks {
    std::vector<std::mt19937_64> rngs;      // one per shard of this rank
    std::vector<const Instance*> instances;
    std::vector<LiveEnv*> envs;
    std::vector<size_t> stream;             // index into rngs of each instance
    std::vector<EpisodeRecord> records;     // shard, index and key filled in
  };
  Picks pick_update(int64_t u);
  TrainUpdateStats run_update(int64_t u);
  TrainUpdateStats run_imitation(int64_t u);
  TrainEvalStats evaluate();
  /// This rank's candidates of an evaluation pass from position `next` on (`rounds` of
  /// them), with their envs, greedy placements and samples.
  std::vector<EvalCandidate> eval_candidates(size_t next, size_t rounds, uint64_t eval_seed);
  /// Times a candidate's placements (and the best classical placer, unless cached).
  void simulate_candidate(EvalCandidate& c) const;
  /// The rows of every rank's candidates, in candidate order; false where skipped.
  std::vector<std::pair<bool, TrainEvalRow>> gather_eval_rows(
      const std::vector<EvalCandidate>& mine) const;
  void log_eval(const TrainEvalStats& out) const;
  PpoStats dist_ppo_update(std::vector<PpoEpisode>& batch, double global_episodes);
  void append_log(const Json& line) const;
  PolicyMeta make_meta();
  const std::string& hash();
  void checkpoint();
  int64_t resume();
};

template <class Fn>
void GdpTrainer::Impl::with_cpu_state(Fn&& fn) {
  if (!on_gpu()) {
    fn();
    return;
  }
  struct Back {
    Impl& m;
    ~Back() {
      m.policy.impl().net->to(m.device);
      optimizer_state_to(*m.adam, m.device);
    }
  };
  policy.impl().net->to(torch::kCPU);
  optimizer_state_to(*adam, torch::kCPU);
  Back back{*this};
  fn();
}

}  // namespace placer
