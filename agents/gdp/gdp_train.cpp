// GDP batch pretraining over a graph corpus (GdpTrainer, agents/gdp/gdp.h): configuration checks,
// instances (graph x cluster x device count) built lazily and cached with their reference
// times and placements, the corpus hash, the checkpoint's network, Adam and trainer state,
// exact resume (run folder, log, fingerprint check: the harness, agents/common/training_run.h).
// The updates and the training loop are in agents/gdp/gdp_train_loop.cpp.
#include "agents/gdp/gdp_train_impl.h"

#include <torch/cuda.h>

#include "agents/common/policy_file.h"
#include "agents/common/training_run.h"

namespace placer {
namespace gdp_train {

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
      canonical_devices(env, std::vector<int16_t>(size_t(units),
                                                  static_cast<int16_t>(devices[best])));
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

namespace {

/// A reference method's plan timed as the policy's placements are: with a non-trivial frame,
/// its placement alone (stages and layout dropped) run inside the frame.
SimResult time_reference(Simulator& sim, const Plan& plan, const PlanFrame& frame) {
  SimOptions so;
  so.critical_path = false;
  if (frame.trivial()) return sim.run(plan, so);
  Plan placed;
  placed.graph_name = plan.graph_name;
  placed.method = plan.method;
  placed.placement = plan.placement;
  apply_frame(frame, &placed);
  return sim.run(placed, so);
}

/// PlacementEnvOptions::score of a `stages` run: each placement as the plan config.shape
/// makes of it, on a simulator of its own (an env is used by one thread at a time).
std::function<SimResult(const Plan&)> staged_score(const TrainConfig& config,
                                                   std::shared_ptr<const Graph> g,
                                                   const ClusterSlot& cs,
                                                   std::vector<int> devices) {
  auto sim = std::make_shared<Simulator>(*g, cs.cluster, *cs.cost);
  return [shape = config.shape, g = std::move(g), sim, slot = &cs,
          devices = std::move(devices)](const Plan& placement) {
    const Problem problem{*g, slot->cluster, *slot->cost, *sim, devices};
    Plan shaped;
    return shaped_result(problem, shape, placement, &shaped);
  };
}

}  // namespace

Reference build_reference(const Graph& g, const ClusterSlot& cs, const std::vector<int>& devices,
                          const PlanFrame& frame, const TrainConfig& config) {
  Simulator sim(g, cs.cluster, *cs.cost);
  Problem problem{g, cs.cluster, *cs.cost, sim, devices};
  problem.frame = frame;
  Reference best;
  for (const std::string& m : config.reference_methods) {
    try {
      SearchBudget budget;
      budget.seed = config.seed;
      const Plan plan = make_placer(m)->search(problem, budget);
      const SimResult r = time_reference(sim, plan, frame);
      if (!r.oom && r.step_time > 0 && (best.time == 0 || r.step_time < best.time)) {
        best.time = r.step_time;
        best.placement = plan.placement;
      }
    } catch (const std::exception&) {
      // a reference method that fails on this instance is just not a reference
    }
  }
  return best;
}

std::pair<std::string, double> best_classical(const Graph& g, const ClusterSlot& cs,
                                              const std::vector<int>& devices,
                                              const PlanFrame& frame, const TrainConfig& config) {
  Simulator sim(g, cs.cluster, *cs.cost);
  Problem problem{g, cs.cluster, *cs.cost, sim, devices};
  problem.frame = frame;
  std::string best_name;
  Outcome best;
  for (const std::string& m : config.eval_baselines) {
    try {
      SearchBudget budget;
      budget.seed = config.seed;
      const Plan plan = make_placer(m)->search(problem, budget);
      const SimResult r = time_reference(sim, plan, frame);
      const Outcome before = best;
      best.consider(r.step_time, r.oom);
      if (best.time != before.time || best.oom != before.oom) best_name = m;
    } catch (const std::exception&) {
      // a baseline that fails on this instance is skipped
    }
  }
  return {best_name, best.valid ? best.time : 0.0};
}

Fingerprint resume_fingerprint(const GdpNetConfig& net, uint64_t seed) {
  PolicyMeta m;
  m.net = net;
  m.seed = seed;
  const policy_file::Json j = policy_meta_json(m);
  return Fingerprint{{"net", j.at("net")}, {"seed", j.at("seed")}};
}

}  // namespace gdp_train

namespace {

/// The config's sizes, counts and names (ValidationError naming the key).
void check_config(const TrainConfig& cf) {
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
  if (cf.micro_batches.empty()) throw ValidationError("micro_batches: must not be empty");
  for (int m : cf.micro_batches) {
    if (m < 1) {
      throw ValidationError("micro_batches: " + std::to_string(m) + " must be >= 1");
    }
  }
  if (cf.stages && cf.micro_batches != std::vector<int>{1}) {
    throw ValidationError(
        "stages: needs micro_batches [1] (the pipeline each placement reads as chooses its own)");
  }
  if (cf.stages && !cf.shape) {
    throw ValidationError("stages: the trainer was given no way to read a placement as stages");
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
  if (cf.threads < 0) throw ValidationError("threads: must be >= 0 (0 = all cores)");
  if (cf.dist.shards < 0) throw ValidationError("dist.shards: must be >= 0 (0 = world size)");
  if (!(cf.dist.timeout_seconds > 0)) throw ValidationError("dist.timeout: must be > 0 seconds");
  if (cf.device != "cpu" && cf.device != "cuda") {
    throw ValidationError("device: unknown device '" + cf.device + "' (use cpu or cuda)");
  }
}

/// Where the network, the optimizer state and the batch tensors go: the CPU, or with device
/// cuda the GPU of this rank's local rank; the simulator and the sampling stay on the CPU
/// (docs/distributed.md).
torch::Device training_device(const TrainConfig& cf) {
  if (cf.device != "cuda") return torch::Device(torch::kCPU);
  if (!torch::cuda::is_available()) {
    throw ValidationError(
        "device: cuda is not available in this build (LibTorch without CUDA, or no GPU "
        "visible); train with device cpu (docs/distributed.md)");
  }
  const int gpus = static_cast<int>(torch::cuda::device_count());
  const int local = std::max(0, resolve_dist(cf.dist).local_rank);
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local % std::max(1, gpus)));
}

/// The reference and baseline methods exist and are not gdp itself.
void check_judges(const TrainConfig& cf) {
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
}

/// The entries of `ids` that carry one of the config's tags (all when it names none).
std::vector<size_t> tagged_entries(const Corpus& corpus, const std::vector<size_t>& ids,
                                   const std::vector<std::string>& tags) {
  std::vector<size_t> out;
  for (size_t i : ids) {
    const CorpusEntry& e = corpus.entries[i];
    if (tags.empty() ||
        std::any_of(tags.begin(), tags.end(), [&](const std::string& t) { return e.has_tag(t); })) {
      out.push_back(i);
    }
  }
  return out;
}

/// The config's clusters with their cost models; each must hold every device count.
std::vector<ClusterSlot> load_clusters(const TrainConfig& cf) {
  const CostProfile profile =
      cf.profile.empty() ? default_profile() : load_cost_profile(cf.profile);
  std::vector<ClusterSlot> clusters;
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
  return clusters;
}

Instance make_instance(const Corpus& corpus, const std::vector<ClusterSlot>& clusters, size_t entry,
                       int c, int k, int m) {
  return Instance{entry, c, k, m,
                  corpus.entries[entry].name + "@" + clusters[size_t(c)].key + ":" +
                      std::to_string(k) + (m > 1 ? "/m" + std::to_string(m) : "")};
}

}  // namespace

GdpTrainer::Impl::Impl(TrainConfig c)
    : config(std::move(c)), run(config.output_dir), policy(initial_policy(config)) {
  const TrainConfig& cf = config;
  check_config(cf);
  device = training_device(cf);
  if (!parse_optimizer(cf.optimizer, &training.optimizer)) {
    throw ValidationError("optimizer: unknown optimizer '" + cf.optimizer +
                          "' (use sgd, momentum or adam)");
  }
  check_judges(cf);
  if (!cf.init_policy.empty()) {
    GdpPolicy init = GdpPolicy::load(cf.init_policy);
    if (init.config() != cf.net) {
      throw ValidationError("init_policy: " + cf.init_policy +
                            " has different network sizes than the config's net");
    }
    policy = std::move(init);
  }

  corpus = load_corpus(cf.corpus);
  train_entries = tagged_entries(corpus, corpus.train(), cf.tags);
  val_entries = tagged_entries(corpus, corpus.val(), cf.tags);
  if (train_entries.empty()) {
    throw ValidationError("corpus: " + cf.corpus + " has no train entries" +
                          (cf.tags.empty() ? std::string() : " with the given tags"));
  }
  clusters = load_clusters(cf);
  if (on_gpu()) policy.impl().net->to(device);
  adam = std::make_unique<torch::optim::Adam>(policy.impl().net->parameters(),
                                              torch::optim::AdamOptions(cf.ppo.lr));
  for (size_t e : train_entries) {
    for (size_t ci = 0; ci < clusters.size(); ++ci) {
      for (int k : cf.device_counts) {
        for (int m : cf.micro_batches) {
          train_instances.push_back(make_instance(corpus, clusters, e, int(ci), k, m));
        }
      }
    }
  }
  setup_distribution();
  order_val_instances();
}

void GdpTrainer::Impl::setup_distribution() {
  setup = resolve_dist(config.dist);
  threads = resolve_threads(config.threads);
  shards = config.dist.shards > 0 ? config.dist.shards : setup.world_size;
  for (int s = setup.rank; s < shards; s += setup.world_size) my_shards.push_back(s);
  if (setup.world_size > 1) {
    group = std::make_unique<DistGroup>(setup, config.dist.timeout_seconds, device);
  }
}

void GdpTrainer::Impl::order_val_instances() {
  // Every graph once before any repeats, cycling through the (cluster, device count,
  // micro-batches) combinations, so the first few instances are diverse.
  const std::vector<int>& counts = config.device_counts;
  const std::vector<int>& micro = config.micro_batches;
  const size_t K = counts.size(), M = micro.size();
  const size_t E = val_entries.size(), CKM = clusters.size() * K * M;
  for (size_t j = 0; j < E * CKM; ++j) {
    const size_t e = j % E, ckm = (e + j / E) % CKM;
    val_instances.push_back(make_instance(corpus, clusters, val_entries[e], int(ckm / (K * M)),
                                          counts[ckm / M % K], micro[ckm % M]));
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

std::vector<LiveEnv*> GdpTrainer::Impl::envs_of(const std::vector<const Instance*>& insts) {
  // Serial: cache hits and graphs (shared caches). Parallel: the missing references and envs,
  // each into its own slot. Serial again: the caches, in `insts` order.
  struct Build {
    const Instance* inst = nullptr;
    std::shared_ptr<const Graph> graph;
    bool need_reference = false, need_action = false;
    Reference reference;
    std::vector<int16_t> action;
    std::unique_ptr<LiveEnv> live;
  };
  std::vector<LiveEnv*> out(insts.size(), nullptr);
  std::vector<Build> builds;
  std::map<std::string, size_t> building;      // key -> index in builds
  std::vector<std::pair<size_t, size_t>> fill;  // (index in insts, index in builds)
  size_t references = 0;
  for (size_t i = 0; i < insts.size(); ++i) {
    const Instance& inst = *insts[i];
    auto it = envs.find(inst.key);
    if (it != envs.end()) {
      it->second->last_used = ++tick;
      out[i] = it->second.get();
      continue;
    }
    auto pending = building.find(inst.key);
    if (pending != building.end()) {
      fill.emplace_back(i, pending->second);
      continue;
    }
    std::shared_ptr<const Graph> g = graph(inst.entry);
    if (!g) continue;
    Build b;
    b.inst = &inst;
    b.graph = std::move(g);
    auto ref = reference_baseline.find(inst.key);
    b.need_reference = ref == reference_baseline.end();
    if (!b.need_reference) b.reference.time = ref->second;
    b.need_action = !reference_action.count(inst.key);
    references += b.need_reference ? 1 : 0;
    building[inst.key] = builds.size();
    fill.emplace_back(i, builds.size());
    builds.push_back(std::move(b));
  }
  if (builds.empty()) return out;
  if (references > 0) prepare(0, int64_t(references), "building references");
  parallel_for(builds.size(), threads, [&](size_t k) {
    Build& b = builds[k];
    const ClusterSlot& cs = clusters[size_t(b.inst->cluster)];
    std::vector<int> devices(size_t(b.inst->k));
    for (int d = 0; d < b.inst->k; ++d) devices[size_t(d)] = d;
    PlanFrame frame;
    frame.micro_batches = b.inst->micro_batches;
    if (b.need_reference) b.reference = build_reference(*b.graph, cs, devices, frame, config);
    auto live = std::make_unique<LiveEnv>();
    live->graph = b.graph;
    PlacementEnvOptions eo;
    eo.oom_penalty = config.ppo.oom_penalty;
    eo.max_devices = config.net.max_devices;
    eo.devices = devices;
    eo.colocate = true;
    eo.baseline_time = b.reference.time;
    eo.frame = frame;
    if (config.stages) eo.score = staged_score(config, b.graph, cs, devices);
    live->env = std::make_unique<PlacementEnv>(*b.graph, cs.cluster, *cs.cost, eo);
    live->tensors = to_tensors(*live->env);
    if (b.need_action) {
      b.action = reference_units(*live->env, b.reference.placement, b.reference.time);
    }
    b.live = std::move(live);
  });
  if (references > 0) {
    prepare(int64_t(references), int64_t(references), "building references");
  }
  for (Build& b : builds) {
    const std::string& key = b.inst->key;
    if (b.need_reference) reference_baseline.emplace(key, b.reference.time);
    if (b.need_action) reference_action[key] = std::move(b.action);
    if (on_gpu()) b.live->tensors = tensors_to(b.live->tensors, device);
    b.live->last_used = ++tick;
    envs[key] = std::move(b.live);
  }
  for (const auto& [i, k] : fill) out[i] = envs.at(builds[k].inst->key).get();
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
  if (root()) run.append_log(line.dump());  // rank 0 alone writes the log
}

std::vector<const Instance*> GdpTrainer::Impl::pick_instances(std::mt19937_64& rng, int shard,
                                                              size_t count) {
  // Distinct instances of the shard (instance i is in shard i % shards) by a lazy
  // Fisher-Yates shuffle, skipping oversize graphs.
  std::vector<size_t> perm;
  for (size_t i = size_t(shard); i < train_instances.size(); i += size_t(shards)) perm.push_back(i);
  const size_t n = perm.size();
  std::vector<const Instance*> picked;
  if (count == 0 || n == 0) return picked;
  for (size_t i = 0; i < n && picked.size() < count; ++i) {
    const size_t j = i + size_t(uniform_below(rng, n - i));
    std::swap(perm[i], perm[j]);
    const Instance& inst = train_instances[perm[i]];
    if (envs.count(inst.key) || graph(inst.entry)) picked.push_back(&inst);
  }
  if (picked.empty() && shards == 1) {
    throw ValidationError("max_ops: every train graph of " + config.corpus + " has more than " +
                          std::to_string(config.max_ops) + " ops in its training step");
  }
  return picked;
}

GdpTrainer::Impl::Picks GdpTrainer::Impl::pick_update(int64_t u) {
  Picks p;
  p.rngs.reserve(my_shards.size());
  for (int s : my_shards) {
    p.rngs.emplace_back(shard_seed(u, s));
    int index = 0;
    for (const Instance* inst : pick_instances(p.rngs.back(), s, shard_count(s))) {
      p.instances.push_back(inst);
      p.stream.push_back(p.rngs.size() - 1);
      EpisodeRecord r;
      r.shard = s;
      r.index = index++;
      r.key = inst->key;
      p.records.push_back(std::move(r));
    }
  }
  p.envs = envs_of(p.instances);
  return p;
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
  std::map<std::string, double> all_ema = ema;
  if (group) {  // every rank holds the baselines of its own shards' instances
    Json mine = Json::object();
    for (const auto& [key, v] : ema) mine[key] = v;
    for (const std::string& text : group->allgather(mine.dump())) {
      const Json theirs = Json::parse(text);
      for (auto it = theirs.begin(); it != theirs.end(); ++it) all_ema[it.key()] = it->get<double>();
    }
  }
  if (!root()) return;
  run.create();
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
  for (const auto& [key, v] : all_ema) state["ema"][key] = v;

  // Written from CPU copies (a checkpoint of a GPU run loads anywhere).
  const std::string path = run.checkpoint_file();
  with_cpu_state([&] {
    torch::serialize::OutputArchive archive;
    write_net(archive, policy.impl().net);
    torch::serialize::OutputArchive opt(archive.compilation_unit());
    adam->save(opt);
    archive.write("optimizer", opt);
    archive.write("trainer_state", c10::IValue(state.dump()));
    policy_file::save_policy_pair(archive, path, policy_meta_json(meta), "checkpoint");
  });
  policy.save(run.file("policy.pt"), meta);
}

int64_t GdpTrainer::Impl::resume() {
  const std::string path = run.checkpoint_to_resume();
  const PolicyMeta meta = read_meta_json(path + ".meta.json");
  const std::string mismatch = resume_mismatch(
      resume_fingerprint(config.net, config.seed), resume_fingerprint(meta.net, meta.seed), path,
      "a resumed run keeps the network sizes and the seed");
  if (!mismatch.empty()) throw ValidationError(mismatch);

  torch::serialize::InputArchive archive;
  Json state;
  // Read on the CPU (as written), then moved to the training device with the optimizer state.
  with_cpu_state([&] {
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
      throw FormatError(path + ": not a readable training checkpoint: " +
                        what.substr(0, what.find('\n')));
    }
  });
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
  if (world() > 1) {  // keep the baselines of this rank's shards (any earlier world size)
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < train_instances.size(); ++i) index[train_instances[i].key] = i;
    for (auto it = ema.begin(); it != ema.end();) {
      auto f = index.find(it->first);
      const bool mine = f != index.end() && int(f->second % size_t(shards)) % world() == setup.rank;
      it = mine ? std::next(it) : ema.erase(it);
    }
  }
  sync_parameters();

  // Cut the log back to what the checkpoint has seen (rank 0 owns the files).
  if (root()) run.cut_log(updates_done);
  return updates_done;
}

std::vector<EpisodeRecord> GdpTrainer::Impl::gather(std::vector<EpisodeRecord> mine) const {
  if (group) {
    Json j = Json::array();
    for (const EpisodeRecord& r : mine) j.push_back(r.to_json());
    mine.clear();
    for (const std::string& text : group->allgather(j.dump())) {
      const Json records = Json::parse(text);
      for (size_t i = 0; i < records.size(); ++i) mine.push_back(EpisodeRecord::from_json(records[i]));
    }
  }
  std::stable_sort(mine.begin(), mine.end(), [](const EpisodeRecord& a, const EpisodeRecord& b) {
    return a.shard != b.shard ? a.shard < b.shard : a.index < b.index;
  });
  return mine;
}

void GdpTrainer::Impl::sync_parameters() {
  if (!group) return;
  std::vector<torch::Tensor> all = policy.impl().net->parameters();
  for (const torch::Tensor& b : policy.impl().net->buffers()) all.push_back(b);
  group->broadcast(all);
}

void GdpTrainer::Impl::reduce_gradients() {
  if (group) group->allreduce_gradients(policy.impl().net->parameters());
}

// ------------------------------------------------------------------------ GdpTrainer ----

GdpTrainer::GdpTrainer(TrainConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}
GdpTrainer::~GdpTrainer() = default;

int64_t GdpTrainer::resume() { return impl_->resume(); }

std::vector<torch::Tensor> GdpTrainerAccess::parameters(const GdpTrainer& t) {
  return t.impl_->policy.impl().net->parameters();
}
int GdpTrainerAccess::rank(const GdpTrainer& t) { return t.impl_->setup.rank; }
int GdpTrainerAccess::world_size(const GdpTrainer& t) { return t.impl_->setup.world_size; }
std::vector<int> GdpTrainerAccess::shards(const GdpTrainer& t) { return t.impl_->my_shards; }
std::string GdpTrainerAccess::device(const GdpTrainer& t) { return t.impl_->device.str(); }


TrainEvalStats GdpTrainer::evaluate() { return impl_->evaluate(); }

int64_t GdpTrainer::updates_done() const { return impl_->updates_done; }
const TrainConfig& GdpTrainer::config() const { return impl_->config; }
size_t GdpTrainer::num_train_instances() const { return impl_->train_instances.size(); }
size_t GdpTrainer::num_val_instances() const { return impl_->val_instances.size(); }
std::string GdpTrainer::dist_backend() const {
  return impl_->group ? impl_->group->backend() : std::string();
}

}  // namespace placer