// GDP batch pretraining over a graph corpus (GdpTrainer, agents/gdp.h): instances (graph x
// cluster x device count) built lazily and cached, optional imitation (behaviour cloning)
// updates towards each instance's reference placement, then PPO updates, all with randomness
// from (seed, update) alone, validation against classical placers, atomic checkpoints that a
// resumed run continues bit for bit.
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

#include "agents/gdp.h"
#include "agents/gdp_net.h"
#include "datasets/corpus.h"
#include "env/placement_env.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

namespace placer {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Seed of the random stream `salt` of update u: a function of (seed, u, salt) alone.
uint64_t stream_seed(uint64_t seed, int64_t u, uint64_t salt) {
  return splitmix64(splitmix64(splitmix64(seed) ^ salt) + static_cast<uint64_t>(u));
}
constexpr uint64_t kTrainStream = 0x7472616e;  // "tran"
constexpr uint64_t kEvalStream = 0x6576616c;   // "eval"

/// Uniform integer in [0, n), n > 0, by rejection (portable, unlike the std distributions).
uint64_t uniform_below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x = rng();
  while (x >= limit) x = rng();
  return x % n;
}

uint64_t fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// "dgx1_p100" for ".../dgx1_p100.cluster.yaml".
std::string cluster_key(const std::string& path) {
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
double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

/// A finite JSON number, or null.
Json num(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }

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
  std::string key;   // "<graph>@<cluster>:<k>"
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
std::vector<int16_t> canonical_devices(const PlacementEnv& env, std::vector<int16_t> action) {
  std::vector<int> allowed = env.allowed_devices();
  std::sort(allowed.begin(), allowed.end());
  const int width = env.max_devices();
  std::vector<int> relabel(size_t(width), -1);
  size_t next = 0;
  const std::vector<int>& unit_of_op = env.unit_of_op();
  for (uint32_t op : env.observation().order) {
    const int d = action[size_t(unit_of_op[op])];
    if (relabel[size_t(d)] < 0 && next < allowed.size()) relabel[size_t(d)] = allowed[next++];
  }
  std::vector<int16_t> out = action;
  const std::vector<uint8_t>& mask = env.action_mask();
  for (size_t u = 0; u < out.size(); ++u) {
    const int d = relabel[size_t(action[u])];
    if (d < 0 || !mask[u * size_t(width) + size_t(d)]) return action;
    out[u] = static_cast<int16_t>(d);
  }
  return out;
}

/// The reference placement of an instance as a device per unit of `env`: the plan of the best
/// reference method (`placement`, a device per op; empty = none) when its time
/// `baseline_time` beats every fitting single-device time (or no single device fits), else
/// every unit on the fastest single device (the fastest fitting one, else the fastest). A
/// unit takes the most frequent device among its ops (ties: the lowest id). A plan that puts
/// a unit on a device the env's mask forbids falls back to the single device.
std::vector<int16_t> reference_units(const PlacementEnv& env, const std::vector<int>& placement,
                                     double baseline_time) {
  const std::vector<int>& devices = env.allowed_devices();
  const std::vector<double>& times = env.single_device_times();
  const std::vector<bool>& oom = env.single_device_oom();
  size_t best = 0;
  bool best_fits = false;
  for (size_t i = 0; i < devices.size(); ++i) {
    const bool fits = !oom[i];
    if ((fits && !best_fits) || (fits == best_fits && times[i] < times[best])) {
      best = i;
      best_fits = fits;
    }
  }
  const int units = env.num_units(), width = env.max_devices();
  // Identical devices make "which one" arbitrary; the canonical form puts it on devices[0].
  std::vector<int16_t> single =
      canonical_devices(env, std::vector<int16_t>(size_t(units), static_cast<int16_t>(devices[best])));
  const std::vector<int>& unit_of_op = env.unit_of_op();
  if (placement.size() != unit_of_op.size() || !(baseline_time > 0) ||
      (best_fits && !(baseline_time < times[best]))) {
    return single;
  }
  std::vector<int> count(size_t(units) * size_t(width), 0);
  for (size_t op = 0; op < unit_of_op.size(); ++op) {
    const int d = placement[op];
    if (d < 0 || d >= width) return single;
    ++count[size_t(unit_of_op[op]) * size_t(width) + size_t(d)];
  }
  const std::vector<uint8_t>& mask = env.action_mask();
  std::vector<int16_t> out(size_t(units), 0);
  for (int u = 0; u < units; ++u) {
    const int* row = &count[size_t(u) * size_t(width)];
    int d = 0;
    for (int j = 1; j < width; ++j) {
      if (row[j] > row[d]) d = j;
    }
    if (row[d] == 0 || !mask[size_t(u) * size_t(width) + size_t(d)]) return single;
    out[size_t(u)] = static_cast<int16_t>(d);
  }
  return canonical_devices(env, out);
}

/// The freshly initialised network of a config (ValidationError "net: ..." on bad sizes).
GdpPolicy initial_policy(const TrainConfig& c) {
  const std::string why = validate_net_config(c.net);
  if (!why.empty()) throw ValidationError("net: " + why);
  return GdpPolicy(c.net, c.seed);
}

constexpr size_t kMaxLiveEnvs = 128;
constexpr size_t kMaxCachedGraphs = 128;

}  // namespace

struct GdpTrainer::Impl {
  TrainConfig config;
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

  explicit Impl(TrainConfig c);

  std::string dir_path(const std::string& name) const {
    return (std::filesystem::path(config.output_dir) / name).string();
  }
  void prepare(int64_t done, int64_t total, const std::string& what) const {
    if (callbacks && callbacks->on_prepare) callbacks->on_prepare(done, total, what);
  }

  std::shared_ptr<const Graph> graph(size_t entry);
  LiveEnv* env(const Instance& inst);
  void trim_caches();
  std::vector<std::pair<const Instance*, LiveEnv*>> pick_instances(std::mt19937_64& rng);
  TrainUpdateStats run_update(int64_t u);
  TrainUpdateStats run_imitation(int64_t u);
  TrainEvalStats evaluate();
  void append_log(const Json& line) const;
  PolicyMeta make_meta();
  const std::string& hash();
  void checkpoint();
  int64_t resume();
};

GdpTrainer::Impl::Impl(TrainConfig c) : config(std::move(c)), policy(initial_policy(config)) {
  const TrainConfig& cf = config;
  // ---- validation (ValidationError naming the key) ----
  if (cf.corpus.empty()) throw ValidationError("corpus: required (a *.corpus.yaml manifest)");
  if (cf.clusters.empty()) throw ValidationError("clusters: required (at least one cluster file)");
  if (cf.updates < 1) {
    throw ValidationError("updates: must be >= 1 (got " + std::to_string(cf.updates) + ")");
  }
  if (cf.imitation_updates < 0 || cf.imitation_updates > cf.updates) {
    throw ValidationError("imitation_updates: must be in [0, updates = " +
                          std::to_string(cf.updates) + "] (got " +
                          std::to_string(cf.imitation_updates) + ")");
  }
  if (cf.max_ops < 1) {
    throw ValidationError("max_ops: must be >= 1 (got " + std::to_string(cf.max_ops) + ")");
  }
  if (cf.device_counts.empty()) throw ValidationError("device_counts: must not be empty");
  for (int k : cf.device_counts) {
    if (k < 1 || k > cf.net.max_devices) {
      throw ValidationError("device_counts: " + std::to_string(k) + " is outside [1, " +
                            std::to_string(cf.net.max_devices) + "] (net.max_devices)");
    }
  }
  if (cf.ppo.samples < 1) {
    throw ValidationError("ppo.samples: must be >= 1 (got " + std::to_string(cf.ppo.samples) + ")");
  }
  if (cf.ppo.graphs_per_update < 1) {
    throw ValidationError("ppo.graphs_per_update: must be >= 1 (got " +
                          std::to_string(cf.ppo.graphs_per_update) + ")");
  }
  if (cf.ppo.epochs < 1) {
    throw ValidationError("ppo.epochs: must be >= 1 (got " + std::to_string(cf.ppo.epochs) + ")");
  }
  if (!(cf.ppo.lr > 0)) throw ValidationError("ppo.lr: must be > 0");
  if (cf.ppo.baseline != "mean" && cf.ppo.baseline != "ema") {
    throw ValidationError("ppo.baseline: unknown baseline '" + cf.ppo.baseline +
                          "' (use mean or ema)");
  }
  if (cf.checkpoint_every < 1) {
    throw ValidationError("checkpoint_every: must be >= 1 (got " +
                          std::to_string(cf.checkpoint_every) + ")");
  }
  if (cf.eval_every < 0) throw ValidationError("eval_every: must be >= 0 (0 = off)");
  if (cf.eval_instances < 0) throw ValidationError("eval_instances: must be >= 0");
  if (cf.eval_samples < 0) throw ValidationError("eval_samples: must be >= 0");
  if (cf.output_dir.empty()) throw ValidationError("output_dir: required");
  if (!parse_optimizer(cf.optimizer, &training.optimizer)) {
    throw ValidationError("optimizer: unknown optimizer '" + cf.optimizer +
                          "' (use sgd, momentum or adam)");
  }
  for (const auto* list : {&cf.reference_methods, &cf.eval_baselines}) {
    const char* key = list == &cf.reference_methods ? "reference_methods" : "eval_baselines";
    for (const std::string& m : *list) {
      try {
        make_placer(m);
      } catch (const Error& e) {
        throw ValidationError(std::string(key) + ": " + e.what());
      }
      if (m == "gdp") {
        throw ValidationError(std::string(key) + ": 'gdp' cannot judge its own training");
      }
    }
  }
  if (!cf.init_policy.empty()) {
    GdpPolicy init = GdpPolicy::load(cf.init_policy);
    if (init.config() != cf.net) {
      throw ValidationError("init_policy: " + cf.init_policy +
                            " has different network sizes than the config's net");
    }
    policy = std::move(init);
  }

  // ---- corpus and clusters ----
  corpus = load_corpus(cf.corpus);
  auto keep = [&](const CorpusEntry& e) {
    if (cf.tags.empty()) return true;
    return std::any_of(cf.tags.begin(), cf.tags.end(),
                       [&](const std::string& t) { return e.has_tag(t); });
  };
  for (size_t i : corpus.train()) {
    if (keep(corpus.entries[i])) train_entries.push_back(i);
  }
  for (size_t i : corpus.val()) {
    if (keep(corpus.entries[i])) val_entries.push_back(i);
  }
  if (train_entries.empty()) {
    throw ValidationError("corpus: " + cf.corpus + " has no train entries" +
                          (cf.tags.empty() ? std::string() : " with the given tags"));
  }
  const CostProfile profile =
      cf.profile.empty() ? default_profile() : load_cost_profile(cf.profile);
  std::set<std::string> keys;
  for (const std::string& path : cf.clusters) {
    ClusterSlot s;
    s.path = path;
    s.key = cluster_key(path);
    s.cluster = load_cluster_yaml(path);
    for (int k : cf.device_counts) {
      if (k > s.cluster.num_devices()) {
        throw ValidationError("device_counts: " + std::to_string(k) + " exceeds the " +
                              std::to_string(s.cluster.num_devices()) + " devices of cluster " +
                              path);
      }
    }
    if (!keys.insert(s.key).second) {
      throw ValidationError("clusters: two cluster files are named '" + s.key + "'");
    }
    s.cost = std::make_unique<CostModel>(s.cluster, profile);
    clusters.push_back(std::move(s));
  }
  adam = std::make_unique<torch::optim::Adam>(policy.impl().net->parameters(),
                                              torch::optim::AdamOptions(cf.ppo.lr));

  // ---- instances ----
  auto make = [&](size_t entry, int c, int k) {
    return Instance{
        entry, c, k,
        corpus.entries[entry].name + "@" + clusters[size_t(c)].key + ":" + std::to_string(k)};
  };
  for (size_t e : train_entries) {
    for (size_t c = 0; c < clusters.size(); ++c) {
      for (int k : cf.device_counts) train_instances.push_back(make(e, int(c), k));
    }
  }
  // Validation order: every graph once before any repeats, cycling through the
  // (cluster, device count) combinations, so the first few instances are diverse.
  const size_t E = val_entries.size(), CK = clusters.size() * cf.device_counts.size();
  for (size_t j = 0; j < E * CK; ++j) {
    const size_t e = j % E, ck = (e + j / E) % CK;
    val_instances.push_back(make(val_entries[e], int(ck / cf.device_counts.size()),
                                 cf.device_counts[ck % cf.device_counts.size()]));
  }
}

std::shared_ptr<const Graph> GdpTrainer::Impl::graph(size_t entry) {
  if (oversize.count(entry)) return nullptr;
  auto it = graphs.find(entry);
  if (it != graphs.end()) {
    it->second.last_used = ++tick;
    return it->second.graph;
  }
  const CorpusEntry& ce = corpus.entries[entry];
  // The forward op count (when recorded) bounds the training step's from below.
  if (ce.ops > config.max_ops) {
    oversize.insert(entry);
    prepare(0, 0, "skipping " + ce.name + ": more than " + std::to_string(config.max_ops) + " ops");
    return nullptr;
  }
  Graph g = corpus.load_graph(entry);
  if (!g.is_training_step()) g = expand_training_step(g, training);
  const int64_t ops = static_cast<int64_t>(g.num_ops());
  step_ops[entry] = ops;
  if (ops > config.max_ops) {
    oversize.insert(entry);
    prepare(0, 0,
            "skipping " + ce.name + ": " + std::to_string(ops) + " ops > max_ops " +
                std::to_string(config.max_ops));
    return nullptr;
  }
  auto p = std::make_shared<const Graph>(std::move(g));
  graphs[entry] = GraphSlot{p, ++tick};
  return p;
}

LiveEnv* GdpTrainer::Impl::env(const Instance& inst) {
  auto it = envs.find(inst.key);
  if (it != envs.end()) {
    it->second->last_used = ++tick;
    return it->second.get();
  }
  std::shared_ptr<const Graph> g = graph(inst.entry);
  if (!g) return nullptr;
  const ClusterSlot& cs = clusters[size_t(inst.cluster)];
  std::vector<int> devices(size_t(inst.k));
  for (int d = 0; d < inst.k; ++d) devices[size_t(d)] = d;

  auto ref = reference_baseline.find(inst.key);
  std::vector<int> ref_placement;  // device per op of the best reference method's plan
  if (ref == reference_baseline.end()) {
    prepare(0, 1, "reference for " + inst.key);
    Simulator sim(*g, cs.cluster, *cs.cost);
    Problem problem{*g, cs.cluster, *cs.cost, sim, devices};
    SimOptions so;
    so.critical_path = false;
    double best = 0;
    for (const std::string& m : config.reference_methods) {
      try {
        SearchBudget budget;
        budget.seed = config.seed;
        const Plan plan = make_placer(m)->search(problem, budget);
        const SimResult r = sim.run(plan, so);
        if (!r.oom && r.step_time > 0 && (best == 0 || r.step_time < best)) {
          best = r.step_time;
          ref_placement = plan.placement;
        }
      } catch (const std::exception&) {
        // a reference method that fails on this instance is just not a reference
      }
    }
    ref = reference_baseline.emplace(inst.key, best).first;
    prepare(1, 1, "reference for " + inst.key);
  }
  auto live = std::make_unique<LiveEnv>();
  live->graph = g;
  PlacementEnvOptions eo;
  eo.oom_penalty = config.ppo.oom_penalty;
  eo.max_devices = config.net.max_devices;
  eo.devices = devices;
  eo.colocate = true;
  eo.baseline_time = ref->second;
  live->env = std::make_unique<PlacementEnv>(*g, cs.cluster, *cs.cost, eo);
  live->tensors = to_tensors(*live->env);
  if (!reference_action.count(inst.key)) {
    reference_action[inst.key] = reference_units(*live->env, ref_placement, ref->second);
  }
  live->last_used = ++tick;
  LiveEnv* out = live.get();
  envs[inst.key] = std::move(live);
  return out;
}

void GdpTrainer::Impl::trim_caches() {
  while (envs.size() > kMaxLiveEnvs) {
    auto oldest = envs.begin();
    for (auto it = envs.begin(); it != envs.end(); ++it) {
      if (it->second->last_used < oldest->second->last_used) oldest = it;
    }
    envs.erase(oldest);
  }
  while (graphs.size() > kMaxCachedGraphs) {
    auto oldest = graphs.begin();
    for (auto it = graphs.begin(); it != graphs.end(); ++it) {
      if (it->second.last_used < oldest->second.last_used) oldest = it;
    }
    graphs.erase(oldest);  // live envs keep their graph alive through shared_ptr
  }
}

void GdpTrainer::Impl::append_log(const Json& line) const {
  std::error_code ec;
  std::filesystem::create_directories(config.output_dir, ec);
  const std::string path = dir_path("log.jsonl");
  std::ofstream out(path, std::ios::app);
  if (!out) throw FileError(path + ": cannot open for appending");
  out << line.dump() << '\n';
  out.flush();
  if (!out) throw FileError(path + ": write failed");
}

std::vector<std::pair<const Instance*, LiveEnv*>> GdpTrainer::Impl::pick_instances(
    std::mt19937_64& rng) {
  // Distinct instances by a lazy Fisher-Yates shuffle, skipping oversize graphs.
  const size_t n = train_instances.size();
  std::vector<size_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = i;
  std::vector<std::pair<const Instance*, LiveEnv*>> picked;
  for (size_t i = 0; i < n && picked.size() < size_t(config.ppo.graphs_per_update); ++i) {
    const size_t j = i + size_t(uniform_below(rng, n - i));
    std::swap(perm[i], perm[j]);
    const Instance& inst = train_instances[perm[i]];
    LiveEnv* live = env(inst);
    if (live) picked.emplace_back(&inst, live);
  }
  if (picked.empty()) {
    throw ValidationError("max_ops: every train graph of " + config.corpus + " has more than " +
                          std::to_string(config.max_ops) + " ops in its training step");
  }
  return picked;
}

TrainUpdateStats GdpTrainer::Impl::run_imitation(int64_t u) {
  const auto t0 = Clock::now();
  std::mt19937_64 rng(stream_seed(config.seed, u, kTrainStream));
  TrainUpdateStats st;
  st.update = u;
  st.phase = "imitation";
  const auto picked = pick_instances(rng);
  const double episodes = double(picked.size());

  GdpNet net = policy.impl().net;
  adam->zero_grad();
  double loss_sum = 0, accuracy_sum = 0, reward_sum = 0;
  st.best_reward = -std::numeric_limits<double>::infinity();
  std::vector<double> ratios;
  for (const auto& [inst, live] : picked) {
    const std::vector<int16_t>& ref16 = reference_action.at(inst->key);
    const std::vector<int> ref(ref16.begin(), ref16.end());
    const torch::Tensor logits = net->forward(live->tensors);
    const torch::Tensor loss = -action_log_probs(logits, ref).mean();
    // One backward per instance keeps memory to one graph; the sum is the batch mean's gradient.
    (loss / episodes).backward();
    loss_sum += loss.item<double>();

    const std::vector<int> greedy = greedy_action(logits);
    size_t match = 0;
    for (size_t i = 0; i < greedy.size(); ++i) match += greedy[i] == ref[i];
    accuracy_sum += greedy.empty() ? 1.0 : double(match) / double(greedy.size());
    const StepResult r = live->env->step(greedy);
    ++st.evaluations;
    reward_sum += r.reward;
    st.best_reward = std::max(st.best_reward, r.reward);
    ratios.push_back(r.step_time / live->env->reference_time());
    st.instances.push_back(inst->key);
  }
  if (config.ppo.max_grad_norm > 0) {
    torch::nn::utils::clip_grad_norm_(net->parameters(), config.ppo.max_grad_norm);
  }
  adam->step();

  st.loss = loss_sum / episodes;
  st.accuracy = accuracy_sum / episodes;
  st.mean_reward = reward_sum / episodes;
  st.best_ratio = geomean(ratios);
  st.seconds = seconds_since(t0);
  return st;
}

TrainUpdateStats GdpTrainer::Impl::run_update(int64_t u) {
  const auto t0 = Clock::now();
  std::mt19937_64 rng(stream_seed(config.seed, u, kTrainStream));
  TrainUpdateStats st;
  st.update = u;
  st.phase = "ppo";
  const auto picked = pick_instances(rng);

  std::vector<PpoEpisode> batch(picked.size());
  std::vector<double*> baselines;
  double reward_sum = 0;
  int64_t reward_count = 0;
  st.best_reward = -std::numeric_limits<double>::infinity();
  std::vector<double> ratios;
  for (size_t b = 0; b < picked.size(); ++b) {
    LiveEnv& live = *picked[b].second;
    PpoEpisode& ep = batch[b];
    ep.tensors = &live.tensors;
    {
      torch::NoGradGuard no_grad;
      const torch::Tensor logits = policy.impl().net->forward(live.tensors);
      const torch::Tensor probs = torch::softmax(logits, -1);
      std::vector<torch::Tensor> old;
      for (int k = 0; k < config.ppo.samples; ++k) {
        ep.actions.push_back(sample_action(probs, rng));
        old.push_back(action_log_probs(logits, ep.actions.back()));
      }
      ep.old_log_probs = torch::stack(old);
    }
    Outcome best;
    for (const std::vector<int>& a : ep.actions) {
      const StepResult r = live.env->step(a);
      ++st.evaluations;
      ep.rewards.push_back(r.reward);
      reward_sum += r.reward;
      ++reward_count;
      st.best_reward = std::max(st.best_reward, r.reward);
      best.consider(r.step_time, r.oom);
    }
    ratios.push_back(best.time / live.env->reference_time());
    st.instances.push_back(picked[b].first->key);
    auto e = ema.find(picked[b].first->key);
    if (e == ema.end()) {
      e = ema.emplace(picked[b].first->key, std::numeric_limits<double>::quiet_NaN()).first;
    }
    baselines.push_back(&e->second);
  }
  compute_advantages(batch, config.ppo, baselines);
  for (auto it = ema.begin(); it != ema.end();) {  // never-set baselines are not state
    it = std::isnan(it->second) ? ema.erase(it) : std::next(it);
  }
  GdpNet net = policy.impl().net;
  const PpoStats ps = ppo_update(net, *adam, batch, config.ppo);

  st.mean_reward = reward_sum / double(reward_count);
  st.best_ratio = geomean(ratios);
  st.loss = ps.loss;
  st.entropy = ps.entropy;
  st.approx_kl = ps.approx_kl;
  st.clip_fraction = ps.clip_fraction;
  st.seconds = seconds_since(t0);
  return st;
}

TrainEvalStats GdpTrainer::Impl::evaluate() {
  TrainEvalStats out;
  out.update = updates_done;
  std::mt19937_64 rng(stream_seed(config.seed, updates_done, kEvalStream));
  std::vector<double> sampled_ratio, greedy_ratio;
  SimOptions so;
  so.critical_path = false;
  for (const Instance& inst : val_instances) {
    if (out.rows.size() >= size_t(config.eval_instances)) break;
    LiveEnv* live = env(inst);
    if (!live) continue;
    const ClusterSlot& cs = clusters[size_t(inst.cluster)];
    TrainEvalRow row;
    row.instance = inst.key;
    row.reference_time = live->env->reference_time();

    auto cl = classical.find(inst.key);
    if (cl == classical.end()) {
      Simulator sim(*live->graph, cs.cluster, *cs.cost);
      Problem problem{*live->graph, cs.cluster, *cs.cost, sim, live->env->allowed_devices()};
      std::string best_name;
      Outcome best;
      for (const std::string& m : config.eval_baselines) {
        try {
          SearchBudget budget;
          budget.seed = config.seed;
          const Plan plan = make_placer(m)->search(problem, budget);
          const SimResult r = sim.run(plan, so);
          const Outcome before = best;
          best.consider(r.step_time, r.oom);
          if (best.time != before.time || best.oom != before.oom) best_name = m;
        } catch (const std::exception&) {
          // a baseline that fails on this instance is skipped
        }
      }
      cl = classical.emplace(inst.key, std::make_pair(best_name, best.valid ? best.time : 0.0))
               .first;
    }
    row.best_classical = cl->second.first;
    row.best_classical_time = cl->second.second;

    Outcome sampled;
    {
      torch::NoGradGuard no_grad;
      const torch::Tensor logits = policy.impl().net->forward(live->tensors);
      const StepResult g = live->env->step(greedy_action(logits));
      ++evaluations;
      row.greedy_time = g.step_time;
      sampled.consider(g.step_time, g.oom);
      if (config.eval_samples > 0) {
        const torch::Tensor probs = torch::softmax(logits, -1);
        for (int k = 0; k < config.eval_samples; ++k) {
          const StepResult r = live->env->step(sample_action(probs, rng));
          ++evaluations;
          sampled.consider(r.step_time, r.oom);
        }
      }
    }
    row.sampled_time = sampled.time;
    if (row.best_classical_time > 0) {
      sampled_ratio.push_back(row.sampled_time / row.best_classical_time);
      greedy_ratio.push_back(row.greedy_time / row.best_classical_time);
    }
    out.rows.push_back(std::move(row));
  }
  out.geomean_vs_classical = geomean(sampled_ratio);
  out.geomean_greedy_vs_classical = geomean(greedy_ratio);
  trim_caches();

  Json rows = Json::array();
  for (const TrainEvalRow& r : out.rows) {
    rows.push_back({{"instance", r.instance},
                    {"reference_time", num(r.reference_time)},
                    {"best_classical", r.best_classical},
                    {"best_classical_time", num(r.best_classical_time)},
                    {"greedy_time", num(r.greedy_time)},
                    {"sampled_time", num(r.sampled_time)}});
  }
  append_log({{"type", "eval"},
              {"update", out.update},
              {"geomean_vs_classical", num(out.geomean_vs_classical)},
              {"geomean_greedy_vs_classical", num(out.geomean_greedy_vs_classical)},
              {"rows", rows}});
  return out;
}

const std::string& GdpTrainer::Impl::hash() {
  if (!corpus_hash.empty()) return corpus_hash;
  std::vector<std::pair<std::string, std::string>> items;
  for (size_t i : train_entries) {
    const CorpusEntry& e = corpus.entries[i];
    std::string fp = e.fingerprint;
    if (fp.empty()) fp = fingerprint_hex(graph_fingerprint(corpus.load_graph(i)));
    items.emplace_back(e.name, fp);
  }
  std::sort(items.begin(), items.end());
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& [name, fp] : items) {
    h = fnv1a(h, name);
    h = fnv1a(h, std::string(1, '\0'));
    h = fnv1a(h, fp);
    h = fnv1a(h, std::string(1, '\n'));
  }
  corpus_hash = fingerprint_hex(splitmix64(h));
  return corpus_hash;
}

PolicyMeta GdpTrainer::Impl::make_meta() {
  PolicyMeta m = policy.meta();
  m.net = config.net;
  m.updates = updates_done;
  m.seed = config.seed;
  m.corpus = config.corpus;
  m.corpus_hash = hash();
  m.clusters = config.clusters;
  m.train_seconds = train_seconds;
  m.evaluations = evaluations;
  m.created = utc_now();
  m.command = config.command;
  return m;
}

void GdpTrainer::Impl::checkpoint() {
  std::error_code ec;
  std::filesystem::create_directories(config.output_dir, ec);
  if (ec) {
    throw FileError(config.output_dir + ": cannot create the output directory: " + ec.message());
  }
  PolicyMeta meta = make_meta();
  meta.feature_version = kFeatureVersion;
  meta.feature_dim = feat::kDim;
  meta.op_vocab = static_cast<int>(op_type_vocabulary().size());
  meta.format_version = kGdpCheckpointFormat;

  Json state = {{"updates_done", updates_done},
                {"evaluations", evaluations},
                {"train_seconds", train_seconds},
                {"best_val_geomean", num(best_val_geomean)},
                {"ema", Json::object()}};
  for (const auto& [key, v] : ema) state["ema"][key] = v;

  torch::serialize::OutputArchive archive;
  write_net(archive, policy.impl().net);
  torch::serialize::OutputArchive opt(archive.compilation_unit());
  adam->save(opt);
  archive.write("optimizer", opt);
  archive.write("trainer_state", c10::IValue(state.dump()));

  const std::string path = dir_path("checkpoint.pt");
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    archive.save_to(tmp);
  } catch (const std::exception& e) {
    std::remove(tmp.c_str());
    std::string what = e.what();
    throw FileError(path + ": cannot write " + tmp + ": " + what.substr(0, what.find('\n')));
  }
  atomic_rename(tmp, path);
  write_meta_json(path + ".meta.json", meta);
  policy.save(dir_path("policy.pt"), meta);
}

int64_t GdpTrainer::Impl::resume() {
  const std::string path = dir_path("checkpoint.pt");
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw FileError(path + ": no checkpoint to resume from (train without resuming first)");
  }
  const PolicyMeta meta = read_meta_json(path + ".meta.json");
  const GdpNetConfig& a = meta.net;
  const GdpNetConfig& b = config.net;
  auto differ = [&](const char* field, auto x, auto y) {
    if (x != y) {
      std::ostringstream s;
      s << path << ": net." << field << " is " << x << " in the checkpoint but " << y
        << " in the config";
      throw ValidationError(s.str());
    }
  };
  differ("hidden", a.hidden, b.hidden);
  differ("sage_layers", a.sage_layers, b.sage_layers);
  differ("op_embedding", a.op_embedding, b.op_embedding);
  differ("txl_layers", a.txl_layers, b.txl_layers);
  differ("heads", a.heads, b.heads);
  differ("ffn", a.ffn, b.ffn);
  differ("segment", a.segment, b.segment);
  differ("mem_len", a.mem_len, b.mem_len);
  differ("max_devices", a.max_devices, b.max_devices);
  differ("superposition", a.superposition, b.superposition);
  if (meta.seed != config.seed) {
    throw ValidationError(path + ": seed is " + std::to_string(meta.seed) +
                          " in the checkpoint but " + std::to_string(config.seed) +
                          " in the config");
  }

  torch::serialize::InputArchive archive;
  Json state;
  try {
    archive.load_from(path);
    GdpNet net = policy.impl().net;
    read_net(archive, net, path);
    torch::serialize::InputArchive opt;
    archive.read("optimizer", opt);
    adam->load(opt);
    c10::IValue s;
    archive.read("trainer_state", s);
    state = Json::parse(s.toStringRef());
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw FormatError(path +
                      ": not a readable training checkpoint: " + what.substr(0, what.find('\n')));
  }
  try {
    updates_done = state.at("updates_done").get<int64_t>();
    evaluations = state.at("evaluations").get<int64_t>();
    train_seconds = state.at("train_seconds").get<double>();
    const Json& bv = state.at("best_val_geomean");
    best_val_geomean = bv.is_null() ? std::numeric_limits<double>::infinity() : bv.get<double>();
    ema.clear();
    for (const auto& [key, v] : state.at("ema").items()) ema[key] = v.get<double>();
  } catch (const Json::exception& e) {
    throw FormatError(path + ": trainer_state: " + e.what());
  }

  // Cut the log back to what the checkpoint has seen.
  const std::string log = dir_path("log.jsonl");
  if (std::filesystem::exists(log, ec)) {
    std::ifstream in(log);
    std::string line, kept;
    while (std::getline(in, line)) {
      try {
        const Json j = Json::parse(line);
        if (j.at("update").get<int64_t>() <= updates_done) kept += line + "\n";
      } catch (const Json::exception&) {
        // a torn last line of an interrupted run
      }
    }
    in.close();
    const std::string tmp = log + ".tmp." + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << kept;
      if (!out.flush()) throw FileError(tmp + ": write failed");
    }
    atomic_rename(tmp, log);
  }
  return updates_done;
}

// ------------------------------------------------------------------------ GdpTrainer ----

GdpTrainer::GdpTrainer(TrainConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
GdpTrainer::~GdpTrainer() = default;

int64_t GdpTrainer::resume() { return impl_->resume(); }

int64_t GdpTrainer::train(const Callbacks& callbacks) {
  Impl& m = *impl_;
  m.callbacks = &callbacks;
  struct Reset {
    Impl& m;
    ~Reset() { m.callbacks = nullptr; }
  } reset{m};
  bool checkpointed = true;
  while (m.updates_done < m.config.updates) {
    if (callbacks.should_stop && callbacks.should_stop()) break;
    const int64_t u = m.updates_done + 1;
    const auto t0 = Clock::now();
    TrainUpdateStats st =
        u <= m.config.imitation_updates ? m.run_imitation(u) : m.run_update(u);
    m.updates_done = u;
    m.evaluations += st.evaluations;
    checkpointed = false;
    Json line = {{"type", "update"},
                 {"update", st.update},
                 {"phase", st.phase},
                 {"mean_reward", num(st.mean_reward)},
                 {"best_reward", num(st.best_reward)},
                 {"best_ratio", num(st.best_ratio)},
                 {"loss", num(st.loss)},
                 {"entropy", num(st.entropy)},
                 {"approx_kl", num(st.approx_kl)},
                 {"clip_fraction", num(st.clip_fraction)},
                 {"evaluations", st.evaluations},
                 {"seconds", st.seconds},
                 {"instances", st.instances}};
    if (st.phase == "imitation") line["accuracy"] = num(st.accuracy);
    m.append_log(line);
    m.trim_caches();
    if (callbacks.on_update) callbacks.on_update(st);
    if (m.config.eval_every > 0 && u % m.config.eval_every == 0) {
      const TrainEvalStats ev = m.evaluate();
      if (!ev.rows.empty() && ev.geomean_vs_classical > 0 &&
          ev.geomean_vs_classical < m.best_val_geomean) {
        m.best_val_geomean = ev.geomean_vs_classical;
        m.policy.save(m.dir_path("best.pt"), m.make_meta());
      }
      if (callbacks.on_eval) callbacks.on_eval(ev);
    }
    m.train_seconds += seconds_since(t0);
    if (u % m.config.checkpoint_every == 0 || u == m.config.updates) {
      m.checkpoint();
      checkpointed = true;
    }
  }
  if (!checkpointed) m.checkpoint();
  return m.updates_done;
}

TrainEvalStats GdpTrainer::evaluate() { return impl_->evaluate(); }

int64_t GdpTrainer::updates_done() const { return impl_->updates_done; }
const TrainConfig& GdpTrainer::config() const { return impl_->config; }
size_t GdpTrainer::num_train_instances() const { return impl_->train_instances.size(); }
size_t GdpTrainer::num_val_instances() const { return impl_->val_instances.size(); }

}  // namespace placer
