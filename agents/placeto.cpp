// Placeto (agents/placeto.h): instances (coarsened graph + lockstep envs), rollouts,
// REINFORCE updates, the online / zero-shot placer, family training and policy files.
#include "agents/placeto.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "agents/methods.h"
#include "datasets/coarsen.h"
#include "models/archive_file.h"
#include "models/placeto_net.h"
#include "simulator/cost_model.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"
#include "src/util/files.h"

namespace placer {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;
constexpr int kPolicyFormat = 1;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string format_ms(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f ms", seconds * 1e3);
  return buf;
}

PlacetoNetOptions net_options(const PlacetoNetConfig& c) {
  return PlacetoNetOptions(placeto_feat::dim(c.max_devices), c.max_devices)
      .hidden(c.hidden)
      .rounds(c.rounds)
      .pool(c.pool)
      .policy_hidden(c.policy_hidden)
      .logit_clip(c.logit_clip);
}

// ------------------------------------------------------------------------ instance ----

/// One graph ready for episodes: its coarsening, `episodes` envs stepped in lockstep, the
/// graph tensors, and the best placement simulated so far (over all its envs).
struct Instance {
  std::unique_ptr<Coarsening> coarsening;
  const Graph* env_graph = nullptr;
  std::vector<std::unique_ptr<PlacetoEnv>> envs;
  PlacetoGraphTensors tensors;
  int num_nodes = 0;
  int64_t evaluations = 0;
  std::vector<int> best;  // cluster device per group
  double best_time = std::numeric_limits<double>::infinity();
  bool best_oom = true;
  int64_t best_evaluation = 0;

  PlacetoEnv& env(size_t i = 0) { return *envs[i]; }

  /// Records the env's current state when the last call simulated it.
  void note(PlacetoEnv& e, int64_t sims_before) {
    if (e.simulations() == sims_before) return;
    ++evaluations;
    const double t = e.current_time();
    const bool oom = e.current_oom();
    if (best.empty() || (best_oom && !oom) || (best_oom == oom && t < best_time)) {
      best = e.placement();
      best_time = t;
      best_oom = oom;
      best_evaluation = evaluations;
    }
  }
};

std::unique_ptr<Instance> make_instance(const Graph& graph, const Cluster& cluster,
                                        const CostModel& cost, const std::vector<int>& devices,
                                        const PlacetoMdpConfig& mdp, int max_devices,
                                        int episodes) {
  auto in = std::make_unique<Instance>();
  CoarsenOptions co;
  co.target_groups = mdp.groups;
  in->coarsening = std::make_unique<Coarsening>(coarsen(graph, co));
  const Coarsening& c = *in->coarsening;
  std::vector<int> group_of_env_op;
  if (mdp.simulate_coarse) {
    in->env_graph = &c.coarse;
    group_of_env_op = c.group_of_coarse_op;
  } else {
    in->env_graph = &graph;
    group_of_env_op = c.group_of_op;
  }
  PlacetoEnvOptions eo;
  eo.devices = devices;
  eo.max_devices = max_devices;
  eo.reward = mdp.reward;
  eo.start = mdp.start;
  eo.memory_threshold = mdp.memory_threshold;
  eo.memory_penalty = mdp.memory_penalty;
  for (int e = 0; e < std::max(1, episodes); ++e) {
    in->envs.push_back(
        std::make_unique<PlacetoEnv>(*in->env_graph, cluster, cost, group_of_env_op, eo));
  }
  const PlacetoEnv& e0 = *in->envs[0];
  in->num_nodes = e0.num_nodes();
  in->tensors = placeto_graph_tensors(e0.num_nodes(), e0.parent_offsets(), e0.parents(),
                                      e0.child_offsets(), e0.children(), e0.relation(),
                                      e0.action_mask());
  return in;
}

// ------------------------------------------------------------------------ rollouts ----

/// K episodes run in lockstep: states [T * K, N, F] (step-major), current nodes, actions,
/// rewards [T][K].
struct Rollout {
  int steps = 0, k = 0;
  torch::Tensor x;        // [T * K, N, F]
  torch::Tensor current;  // [T * K]
  torch::Tensor actions;  // [T * K] int64 (device ids)
  std::vector<std::vector<double>> rewards;  // [T][K]
  std::vector<double> final_time;            // per episode, when known (else 0)
  std::vector<bool> final_oom;
};

Rollout rollout(Instance& in, PlacetoNet& net, int k, bool greedy, std::mt19937_64& rng) {
  const int n = in.num_nodes;
  const int f = in.env().feature_dim();
  Rollout r;
  r.steps = n;
  r.k = k;
  r.x = torch::empty({int64_t(n) * k, n, f}, torch::kFloat);
  r.current = torch::empty({int64_t(n) * k}, torch::kLong);
  r.actions = torch::empty({int64_t(n) * k}, torch::kLong);
  r.rewards.assign(size_t(n), std::vector<double>(size_t(k), 0.0));
  float* xp = r.x.data_ptr<float>();
  int64_t* cp = r.current.data_ptr<int64_t>();
  int64_t* ap = r.actions.data_ptr<int64_t>();
  for (int e = 0; e < k; ++e) {
    PlacetoEnv& env = in.env(size_t(e));
    const int64_t before = env.simulations();
    env.reset(rng());
    in.note(env, before);
  }
  torch::NoGradGuard no_grad;
  const size_t state_floats = size_t(n) * size_t(f);
  for (int t = 0; t < n; ++t) {
    const int64_t row0 = int64_t(t) * k;
    for (int e = 0; e < k; ++e) {
      const PlacetoEnv& env = in.env(size_t(e));
      std::copy(env.observation().begin(), env.observation().end(),
                xp + size_t(row0 + e) * state_floats);
      cp[row0 + e] = env.current_node();
    }
    const torch::Tensor logits =
        net->forward(r.x.narrow(0, row0, k), r.current.narrow(0, row0, k), in.tensors);
    std::vector<int64_t> act;
    if (greedy) {
      const torch::Tensor am = logits.argmax(-1).contiguous();
      act.assign(am.data_ptr<int64_t>(), am.data_ptr<int64_t>() + k);
    } else {
      act = placeto_sample_rows(torch::softmax(logits, -1), rng);
    }
    for (int e = 0; e < k; ++e) {
      PlacetoEnv& env = in.env(size_t(e));
      const int64_t before = env.simulations();
      const PlacetoStepResult s = env.step(int(act[size_t(e)]));
      in.note(env, before);
      ap[row0 + e] = act[size_t(e)];
      r.rewards[size_t(t)][size_t(e)] = s.reward;
    }
  }
  for (int e = 0; e < k; ++e) {
    const PlacetoEnv& env = in.env(size_t(e));
    r.final_time.push_back(env.cost_known() ? env.current_time() : 0.0);
    r.final_oom.push_back(env.cost_known() && env.current_oom());
  }
  return r;
}

struct UpdateStats {
  double loss = 0, mean_return = 0, entropy = 0, grad_norm = 0;
};

/// REINFORCE: returns G_t (discounted), baseline = mean of G_t over the K episodes at the
/// same step, advantages optionally divided by their std; loss = -mean(A log pi) -
/// entropy_coef * mean entropy.
UpdateStats reinforce(Instance& in, PlacetoNet& net, torch::optim::Adam& adam,
                      const Rollout& r, const PlacetoRlConfig& rl) {
  const int T = r.steps, K = r.k;
  std::vector<double> g(size_t(T) * size_t(K), 0.0);
  for (int e = 0; e < K; ++e) {
    double acc = 0;
    for (int t = T - 1; t >= 0; --t) {
      acc = r.rewards[size_t(t)][size_t(e)] + rl.gamma * acc;
      g[size_t(t) * size_t(K) + size_t(e)] = acc;
    }
  }
  UpdateStats st;
  for (int e = 0; e < K; ++e) st.mean_return += g[size_t(e)] / double(K);
  std::vector<float> adv(g.size());
  double sq = 0;
  for (int t = 0; t < T; ++t) {
    double mean = 0;
    for (int e = 0; e < K; ++e) mean += g[size_t(t) * size_t(K) + size_t(e)] / double(K);
    for (int e = 0; e < K; ++e) {
      const size_t i = size_t(t) * size_t(K) + size_t(e);
      adv[i] = float(g[i] - mean);
      sq += double(adv[i]) * double(adv[i]);
    }
  }
  if (rl.normalize_advantages) {
    const double sd = std::sqrt(sq / double(adv.size()));
    for (float& a : adv) a = sd > 1e-12 ? float(double(a) / sd) : 0.f;
  }
  const torch::Tensor a =
      torch::from_blob(adv.data(), {int64_t(adv.size())}, torch::kFloat).clone();
  const torch::Tensor logits = net->forward(r.x, r.current, in.tensors);
  const torch::Tensor logp = torch::log_softmax(logits, -1);
  const torch::Tensor chosen = logp.gather(1, r.actions.unsqueeze(1)).squeeze(1);
  const torch::Tensor entropy = -(logp.exp() * logp).sum(-1).mean();
  torch::Tensor loss = -(a * chosen).mean();
  if (rl.entropy > 0) loss = loss - rl.entropy * entropy;
  adam.zero_grad();
  loss.backward();
  const double max_norm =
      rl.max_grad_norm > 0 ? rl.max_grad_norm : std::numeric_limits<double>::max();
  st.grad_norm = torch::nn::utils::clip_grad_norm_(net->parameters(), max_norm);
  adam.step();
  st.loss = loss.item<double>();
  st.entropy = entropy.item<double>();
  return st;
}

// ------------------------------------------------------------------------ files ----

/// The network sizes as recorded in policy metas and training fingerprints.
Json net_json(const PlacetoNetConfig& n) {
  return Json{{"hidden", n.hidden},
              {"rounds", n.rounds},
              {"pool", n.pool},
              {"policy_hidden", n.policy_hidden},
              {"max_devices", n.max_devices},
              {"logit_clip", n.logit_clip}};
}

Json meta_json(const PlacetoPolicyMeta& m) {
  return Json{{"format_version", m.format_version},
              {"method", "placeto"},
              {"feature_dim", m.feature_dim},
              {"net", net_json(m.net)},
              {"updates", m.updates},
              {"seed", m.seed},
              {"family", m.family},
              {"graphs", m.graphs},
              {"first_seed", m.first_seed},
              {"groups", m.groups},
              {"reward", m.reward},
              {"cluster", m.cluster},
              {"evaluations", m.evaluations},
              {"train_seconds", m.train_seconds},
              {"created", m.created}};
}

template <typename T>
T get_field(const Json& obj, const std::string& key, const std::string& path,
            const std::string& prefix = "") {
  auto it = obj.find(key);
  if (it == obj.end()) throw FormatError(format_context(path, prefix + key, "missing field"));
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw FormatError(format_context(path, prefix + key, "wrong type (" + it->dump() + ")"));
  }
}

/// Module::save nests a sub-archive per submodule: "a.weight" is tensor "weight" of "a".
bool read_dotted(torch::serialize::InputArchive& archive, const std::string& name,
                 torch::Tensor& out) {
  const size_t dot = name.find('.');
  if (dot == std::string::npos) return archive.try_read(name, out);
  torch::serialize::InputArchive sub;
  if (!archive.try_read(name.substr(0, dot), sub)) return false;
  return read_dotted(sub, name.substr(dot + 1), out);
}

void save_policy(const std::string& path, PlacetoNet& net, PlacetoPolicyMeta meta) {
  meta.format_version = kPolicyFormat;
  meta.feature_dim = placeto_feat::dim(meta.net.max_devices);
  if (meta.created.empty()) meta.created = utc_now();
  torch::serialize::OutputArchive archive;
  net->save(archive);
  save_archive_with_meta(archive, path, "policy", [&] {
    write_text_atomic(path + ".meta.json", meta_json(meta).dump(2) + "\n", "policy metadata");
  });
}

PlacetoNet load_policy(const std::string& path, PlacetoPolicyMeta* meta_out) {
  if (!std::ifstream(path, std::ios::binary)) {
    throw FileError(format_context(path, "", "cannot open the policy file (missing?)"));
  }
  PlacetoPolicyMeta meta = read_placeto_policy_meta(path);
  PlacetoNet net(net_options(meta.net));
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw FormatError(format_context(path, "", "not a readable policy archive: " +
                                                   what.substr(0, what.find('\n'))));
  }
  torch::NoGradGuard no_grad;
  for (auto& p : net->named_parameters(/*recurse=*/true)) {
    torch::Tensor stored;
    if (!read_dotted(archive, p.key(), stored) || !stored.defined()) {
      throw FormatError(format_context(path, "net." + p.key(), "parameter missing from the archive"));
    }
    if (!stored.sizes().equals(p.value().sizes())) {
      throw FormatError(format_context(path, "net." + p.key(),
                                       "has another shape than the sidecar's sizes give"));
    }
    p.value().copy_(stored);
  }
  if (meta_out) *meta_out = std::move(meta);
  return net;
}

void check_net_config(const PlacetoNetConfig& n, const std::string& prefix) {
  auto fail = [&](const std::string& what) { throw ValidationError(prefix + what); };
  if (n.hidden < 1) fail("net.hidden must be >= 1 (got " + std::to_string(n.hidden) + ")");
  if (n.rounds < 0) fail("net.rounds must be >= 0 (got " + std::to_string(n.rounds) + ")");
  if (n.pool < 1) fail("net.pool must be >= 1 (got " + std::to_string(n.pool) + ")");
  if (n.policy_hidden < 1)
    fail("net.policy_hidden must be >= 1 (got " + std::to_string(n.policy_hidden) + ")");
  if (!(n.logit_clip >= 0) || !std::isfinite(n.logit_clip))
    fail("net.logit_clip must be finite and >= 0 (0 = off)");
  if (n.max_devices < 1 || n.max_devices > 64)
    fail("net.max_devices must be in [1, 64] (got " + std::to_string(n.max_devices) + ")");
}

void check_rl_mdp(const PlacetoRlConfig& rl, const PlacetoMdpConfig& mdp,
                  const std::string& prefix) {
  auto fail = [&](const std::string& what) { throw ValidationError(prefix + what); };
  if (rl.episodes < 1) fail("rl.episodes must be >= 1 (got " + std::to_string(rl.episodes) + ")");
  if (!(rl.lr > 0)) fail("rl.lr must be > 0");
  if (!(rl.entropy >= 0)) fail("rl.entropy must be >= 0");
  if (!(rl.gamma > 0 && rl.gamma <= 1)) fail("rl.gamma must be in (0, 1]");
  if (!(rl.max_grad_norm >= 0)) fail("rl.max_grad_norm must be >= 0");
  if (mdp.groups < 0) fail("groups must be >= 0 (got " + std::to_string(mdp.groups) + ")");
  if (!(mdp.memory_threshold > 0)) fail("memory_threshold must be > 0");
  if (!(mdp.memory_penalty >= 0)) fail("memory_penalty must be >= 0");
}

void check_devices(const std::vector<int>& devices, int max_devices, const std::string& prefix) {
  if (devices.empty()) throw ValidationError(prefix + "no devices to place on");
  for (int d : devices) {
    if (d >= max_devices) {
      throw ValidationError(prefix + "device " + std::to_string(d) +
                            " is beyond the policy's max_devices (" +
                            std::to_string(max_devices) +
                            "); pass --devices with ids below it or train a wider policy");
    }
  }
}

class PlacetoPlacer : public Placer {
 public:
  explicit PlacetoPlacer(PlacetoOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "placeto"; }
  Plan search(const Problem& problem, const SearchBudget& budget) override {
    return search_outcome(problem, budget).plan;
  }
  SearchOutcome search_outcome(const Problem& problem, const SearchBudget& budget) override {
    PlacetoSearchResult r = placeto_search(problem, options_, budget);
    SearchOutcome out{std::move(r.plan), {}};
    out.stats.runs = r.evaluations;
    out.stats.best_run = r.best_evaluation;
    out.stats.seconds = r.seconds;
    out.stats.add("episodes", double(r.episodes));
    out.stats.add("updates", double(r.updates));
    out.stats.add("groups", double(r.num_groups));
    out.stats.add("reference_time", r.reference_time);
    return out;
  }

 private:
  PlacetoOptions options_;
};

}  // namespace

bool placeto_available() { return true; }

void check_placeto_options(const PlacetoOptions& o) {
  check_net_config(o.net, "placeto: ");
  check_rl_mdp(o.rl, o.mdp, "placeto: ");
  if (o.zero_shot_samples < 0) throw ValidationError("placeto: zero_shot_samples must be >= 0");
  if (o.default_evaluations < 1) throw ValidationError("placeto: default_evaluations must be >= 1");
}

PlacetoPolicyMeta read_placeto_policy_meta(const std::string& policy_path) {
  const std::string path = policy_path + ".meta.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(format_context(path, "", "cannot open the policy sidecar (missing?)"));
  std::stringstream ss;
  ss << in.rdbuf();
  Json j;
  try {
    j = Json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(format_context(path, "", std::string("not valid JSON: ") + e.what()));
  }
  if (!j.is_object()) throw FormatError(format_context(path, "", "expected a JSON object"));
  PlacetoPolicyMeta m;
  m.format_version = get_field<int>(j, "format_version", path);
  if (m.format_version != kPolicyFormat) {
    throw FormatError(format_context(path, "format_version",
                                     "unsupported policy format " +
                                         std::to_string(m.format_version) + " (this build reads " +
                                         std::to_string(kPolicyFormat) + ")"));
  }
  if (get_field<std::string>(j, "method", path) != "placeto") {
    throw FormatError(format_context(path, "method", "not a placeto policy"));
  }
  m.feature_dim = get_field<int>(j, "feature_dim", path);
  auto it = j.find("net");
  if (it == j.end() || !it->is_object())
    throw FormatError(format_context(path, "net", "missing or not an object"));
  m.net.hidden = get_field<int>(*it, "hidden", path, "net.");
  m.net.rounds = get_field<int>(*it, "rounds", path, "net.");
  m.net.pool = get_field<int>(*it, "pool", path, "net.");
  m.net.policy_hidden = get_field<int>(*it, "policy_hidden", path, "net.");
  m.net.max_devices = get_field<int>(*it, "max_devices", path, "net.");
  // Absent in sidecars written before the clipping: those policies were trained unclipped.
  m.net.logit_clip =
      it->contains("logit_clip") ? get_field<double>(*it, "logit_clip", path, "net.") : 0.0;
  try {
    check_net_config(m.net, "");
  } catch (const ValidationError& e) {
    throw FormatError(format_context(path, "net", e.what()));
  }
  if (m.feature_dim != placeto_feat::dim(m.net.max_devices)) {
    throw FormatError(format_context(path, "feature_dim",
                                     "the policy has " + std::to_string(m.feature_dim) +
                                         " but this build expects " +
                                         std::to_string(placeto_feat::dim(m.net.max_devices)) +
                                         " (retrain the policy with this build)"));
  }
  m.updates = get_field<int64_t>(j, "updates", path);
  m.seed = get_field<uint64_t>(j, "seed", path);
  m.family = get_field<std::string>(j, "family", path);
  m.graphs = get_field<int>(j, "graphs", path);
  m.first_seed = get_field<uint64_t>(j, "first_seed", path);
  m.groups = get_field<int>(j, "groups", path);
  m.reward = get_field<std::string>(j, "reward", path);
  m.cluster = get_field<std::string>(j, "cluster", path);
  m.evaluations = get_field<int64_t>(j, "evaluations", path);
  m.train_seconds = get_field<double>(j, "train_seconds", path);
  m.created = get_field<std::string>(j, "created", path);
  return m;
}

PlacetoSearchResult placeto_search(const Problem& problem, const PlacetoOptions& options,
                                   const SearchBudget& budget) {
  check_placeto_options(options);
  const BudgetClock clock(budget, "placeto", options.default_evaluations);
  PlacetoNet net{nullptr};
  PlacetoNetConfig net_cfg = options.net;
  PlacetoMdpConfig mdp = options.mdp;
  if (!options.policy.empty()) {
    PlacetoPolicyMeta meta;
    net = load_policy(options.policy, &meta);
    net_cfg = meta.net;
    if (options.mdp_from_policy) {
      // Place with the MDP the policy was trained on: its group count and reward.
      if (meta.groups >= 0) mdp.groups = meta.groups;
      PlacetoReward reward;
      if (parse_placeto_reward(meta.reward, &reward)) mdp.reward = reward;
    }
  } else {
    torch::manual_seed(budget.seed);
    net = PlacetoNet(net_options(net_cfg));
  }
  const std::vector<int> devices = problem_devices(problem);
  check_devices(devices, net_cfg.max_devices, "placeto: ");
  const bool zero_shot = !options.policy.empty();
  const bool train = !zero_shot || options.finetune;
  const int episodes = std::max(options.rl.episodes, zero_shot ? options.zero_shot_samples : 0);
  std::unique_ptr<Instance> in = make_instance(problem.graph, problem.cluster, problem.cost,
                                               devices, mdp, net_cfg.max_devices,
                                               episodes);
  auto time_left = [&] { return clock.time_left(); };
  auto evals_left = [&] { return clock.runs_left(in->evaluations); };

  PlacetoSearchResult res;
  res.num_groups = in->num_nodes;
  res.reference_time = in->env().reference_time();
  std::mt19937_64 rng(budget.seed);

  if (zero_shot) {
    net->eval();
    Rollout g = rollout(*in, net, 1, /*greedy=*/true, rng);
    ++res.episodes;
    if (options.zero_shot_samples > 0) {
      rollout(*in, net, options.zero_shot_samples, false, rng);
      res.episodes += options.zero_shot_samples;
    }
    res.zero_shot_env_time = in->best_time;
    res.greedy_env_time = g.final_time[0];
  }
  if (train) {
    net->train();
    torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(options.rl.lr));
    while (time_left() && evals_left()) {
      Rollout r = rollout(*in, net, options.rl.episodes, false, rng);
      res.episodes += options.rl.episodes;
      const UpdateStats st = reinforce(*in, net, adam, r, options.rl);
      ++res.updates;
      res.mean_return.push_back(st.mean_return);
      if (budget.progress) {
        budget.progress(in->evaluations, clock.max_runs(),
                        "best " + format_ms(in->best_time) + (in->best_oom ? " (OOM)" : ""));
      }
    }
    {  // the final policy's greedy episode (may pass the budget by one episode)
      Rollout g = rollout(*in, net, 1, /*greedy=*/true, rng);
      ++res.episodes;
      res.greedy_env_time = g.final_time[0];
    }
  }
  if (in->best.empty()) throw Error("placeto: the budget allowed no simulated placement");

  // The best group placement, per op of problem.graph.
  const Coarsening& c = *in->coarsening;
  Plan plan = placement_plan(problem, {}, "placeto");
  plan.placement.resize(problem.graph.num_ops());
  for (size_t op = 0; op < plan.placement.size(); ++op)
    plan.placement[op] = in->best[size_t(c.group_of_op[op])];
  SimOptions so;
  so.critical_path = false;
  const SimResult sim = problem.simulator.run(plan, so);
  plan.predicted.valid = true;
  plan.predicted.step_time = sim.step_time;
  plan.predicted.peak_memory = sim.peak_memory;
  plan.predicted.oom = sim.oom;
  res.plan = std::move(plan);
  res.best_time = sim.step_time;
  res.best_oom = sim.oom;
  res.best_env_time = in->best_time;
  res.evaluations = in->evaluations;
  res.best_evaluation = in->best_evaluation;
  res.seconds = clock.elapsed();
  return res;
}

std::unique_ptr<Placer> make_placeto_placer(PlacetoOptions options) {
  return std::make_unique<PlacetoPlacer>(std::move(options));
}

void add_placeto_methods(std::vector<MethodInfo>* out) {
  out->push_back(MethodInfo{
      "placeto",
      "Placeto (Addanki et al. 2019): iterative MDP over coarsened groups, graph-embedding "
      "policy trained online with REINFORCE (20000 simulated placements by default), or "
      "zero-shot from a family-trained policy",
      false, [] { return make_placeto_placer(); }});
}

namespace {

/// The settings a resumed run must share with its checkpoint (all but updates,
/// checkpoint_every, output_dir), as JSON in the checkpoint's sidecar.
Json train_fingerprint(const PlacetoTrainConfig& c, const Cluster& cluster) {
  Json ranges = Json::object();
  for (const auto& [name, r] : c.ranges.overrides) ranges[name] = r.to_string();
  return Json{{"family", c.family},
              {"size", to_string(c.ranges.size)},
              {"ranges", ranges},
              {"graphs", c.graphs},
              {"first_seed", c.first_seed},
              {"devices", c.devices},
              {"seed", c.seed},
              {"cluster", cluster.name},
              {"net", net_json(c.net)},
              {"rl",
               {{"episodes", c.rl.episodes},
                {"lr", c.rl.lr},
                {"entropy", c.rl.entropy},
                {"gamma", c.rl.gamma},
                {"max_grad_norm", c.rl.max_grad_norm},
                {"normalize_advantages", c.rl.normalize_advantages}}},
              {"mdp",
               {{"groups", c.mdp.groups},
                {"simulate_coarse", c.mdp.simulate_coarse},
                {"reward", to_string(c.mdp.reward)},
                {"start", to_string(c.mdp.start)},
                {"memory_threshold", c.mdp.memory_threshold},
                {"memory_penalty", c.mdp.memory_penalty}}}};
}

/// The first dotted key where two fingerprints differ ("" when equal).
std::string first_difference(const Json& a, const Json& b, const std::string& prefix) {
  for (auto it = a.begin(); it != a.end(); ++it) {
    const std::string key = prefix + it.key();
    if (!b.contains(it.key())) return key;
    const Json& other = b.at(it.key());
    if (it->is_object() && other.is_object()) {
      const std::string d = first_difference(*it, other, key + ".");
      if (!d.empty()) return d;
    } else if (*it != other) {
      return key;
    }
  }
  return "";
}

/// The training state a checkpoint restores besides the network and Adam.
struct TrainState {
  int64_t update = 0;
  double seconds = 0;
  std::string rng;  // std::mt19937_64 state, as operator<< writes it
};

Json instance_json(const Instance& in) {
  Json j{{"evaluations", in.evaluations}, {"best", in.best}, {"best_oom", in.best_oom},
         {"best_evaluation", in.best_evaluation}};
  if (!in.best.empty()) j["best_time"] = in.best_time;
  return j;
}

void save_checkpoint(const std::string& path, PlacetoNet& net, torch::optim::Adam& adam,
                     const Json& fingerprint, const TrainState& st,
                     const std::vector<std::unique_ptr<Instance>>& instances) {
  torch::serialize::OutputArchive archive;
  net->save(archive);
  torch::serialize::OutputArchive opt;
  adam.save(opt);
  archive.write("optimizer", opt);
  archive.write("update", torch::tensor(st.update, torch::kLong));
  Json graphs = Json::array();
  for (const auto& in : instances) graphs.push_back(instance_json(*in));
  const Json meta{{"format_version", kPolicyFormat}, {"method", "placeto"},
                  {"kind", "checkpoint"},           {"update", st.update},
                  {"seconds", st.seconds},          {"config", fingerprint},
                  {"rng", st.rng},                  {"graphs", graphs}};
  // Both files carry the update, checked on resume.
  save_archive_with_meta(archive, path, "checkpoint", [&] {
    write_text_atomic(path + ".meta.json", meta.dump(1) + "\n", "checkpoint metadata");
  });
}

/// Restores the network, Adam and the instances' records from output_dir/checkpoint.pt.
TrainState load_checkpoint(const std::string& path, PlacetoNet& net, torch::optim::Adam& adam,
                           const Json& fingerprint,
                           std::vector<std::unique_ptr<Instance>>& instances) {
  const std::string meta_path = path + ".meta.json";
  if (!std::ifstream(path, std::ios::binary) || !std::ifstream(meta_path)) {
    throw FileError(format_context(path, "", "no checkpoint to resume from (expected it and " +
                                                 meta_path + ")"));
  }
  std::stringstream ss;
  ss << std::ifstream(meta_path).rdbuf();
  Json j;
  try {
    j = Json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(format_context(meta_path, "", std::string("not valid JSON: ") + e.what()));
  }
  if (!j.is_object() || j.value("method", "") != "placeto" || j.value("kind", "") != "checkpoint")
    throw FormatError(format_context(meta_path, "", "not a placeto checkpoint"));
  TrainState st;
  st.update = get_field<int64_t>(j, "update", meta_path);
  st.seconds = get_field<double>(j, "seconds", meta_path);
  st.rng = get_field<std::string>(j, "rng", meta_path);
  const Json saved = j.contains("config") ? j.at("config") : Json::object();
  const std::string diff = first_difference(fingerprint, saved, "");
  if (!diff.empty()) {
    Json a = fingerprint, b = saved;
    for (size_t p = 0, q; p <= diff.size(); p = q + 1) {
      q = diff.find('.', p);
      if (q == std::string::npos) q = diff.size();
      const std::string k = diff.substr(p, q - p);
      a = a.contains(k) ? a.at(k) : Json();
      b = b.is_object() && b.contains(k) ? b.at(k) : Json();
    }
    throw ValidationError("placeto train: --resume: " + diff + " is " + a.dump() +
                          " here but " + b.dump() + " in " + path +
                          " (a resumed run keeps every setting but updates, checkpoint_every "
                          "and output_dir)");
  }
  const Json graphs = j.value("graphs", Json::array());
  if (!graphs.is_array() || graphs.size() != instances.size())
    throw FormatError(format_context(meta_path, "graphs", "expected one record per graph"));
  try {
    for (size_t i = 0; i < instances.size(); ++i) {
      Instance& in = *instances[i];
      const Json& g = graphs[i];
      in.evaluations = g.at("evaluations").get<int64_t>();
      in.best = g.at("best").get<std::vector<int>>();
      in.best_oom = g.at("best_oom").get<bool>();
      in.best_evaluation = g.at("best_evaluation").get<int64_t>();
      in.best_time = in.best.empty() ? std::numeric_limits<double>::infinity()
                                     : g.at("best_time").get<double>();
      if (!in.best.empty() && in.best.size() != size_t(in.num_nodes))
        throw FormatError(format_context(meta_path, "graphs[" + std::to_string(i) + "].best",
                                         "has another group count than the graph"));
    }
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(format_context(meta_path, "graphs", e.what()));
  }
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    net->load(archive);
    torch::serialize::InputArchive opt;
    archive.read("optimizer", opt);
    adam.load(opt);
    torch::Tensor update;
    archive.read("update", update);
    if (update.item<int64_t>() != st.update)
      throw std::runtime_error("holds update " + std::to_string(update.item<int64_t>()) +
                               " but its sidecar " + std::to_string(st.update));
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw FormatError(format_context(path, "", "not a readable placeto checkpoint: " +
                                                   what.substr(0, what.find('\n'))));
  }
  return st;
}

/// Keeps the log lines of updates <= `update` (a run stopped without a checkpoint may have
/// logged more).
void truncate_log(const std::string& path, int64_t update) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const Json j = Json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("update") &&
        j["update"].is_number_integer() && j["update"].get<int64_t>() > update)
      continue;
    kept += line + "\n";
  }
  in.close();
  write_text_atomic(path, kept, "training log");
}

}  // namespace

PlacetoTrainResult placeto_train(
    const PlacetoTrainConfig& cfg, const Cluster& cluster, const CostModel& cost,
    const std::function<void(int64_t, int64_t, const std::string&)>& progress) {
  PlacetoTrainCallbacks cb;
  if (progress) {
    cb.on_update = [&progress](const PlacetoTrainUpdate& u) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "return %.3f entropy %.3f", u.mean_return, u.entropy);
      progress(u.update, u.total, buf);
    };
  }
  return placeto_train(cfg, cluster, cost, cb);
}

PlacetoTrainResult placeto_train(const PlacetoTrainConfig& cfg, const Cluster& cluster,
                                 const CostModel& cost, const PlacetoTrainCallbacks& cb) {
  const auto t0 = Clock::now();
  check_net_config(cfg.net, "placeto train: ");
  check_rl_mdp(cfg.rl, cfg.mdp, "placeto train: ");
  if (cfg.graphs < 1) throw ValidationError("placeto train: graphs must be >= 1");
  if (cfg.updates < 0) throw ValidationError("placeto train: updates must be >= 0");
  if (cfg.checkpoint_every < 1) throw ValidationError("placeto train: checkpoint_every must be >= 1");
  check_devices(cfg.devices, cfg.net.max_devices, "placeto train: ");
  check_family_ranges(cfg.family, cfg.ranges);
  if ((cfg.resume || cfg.resumable) && cfg.output_dir.empty())
    throw ValidationError("placeto train: resume / resumable need an output_dir");
  const std::string checkpoint_path = cfg.output_dir + "/checkpoint.pt";
  if (cfg.resume && !std::filesystem::exists(checkpoint_path)) {
    throw FileError(format_context(checkpoint_path, "", "no checkpoint to resume from"));
  }
  auto stop = [&cb] { return cb.should_stop && cb.should_stop(); };

  PlacetoTrainResult res;
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<std::unique_ptr<Instance>> instances;
  for (int i = 0; i < cfg.graphs; ++i) {
    if (stop()) {
      res.stopped = true;
      return res;
    }
    const Graph fwd = make_family_graph(cfg.family, cfg.first_seed + uint64_t(i), cfg.ranges);
    graphs.push_back(std::make_unique<Graph>(expand_training_step(fwd)));
    instances.push_back(make_instance(*graphs.back(), cluster, cost, cfg.devices, cfg.mdp,
                                      cfg.net.max_devices, cfg.rl.episodes));
    if (cb.on_prepare) cb.on_prepare(i + 1, cfg.graphs);
  }
  torch::manual_seed(cfg.seed);
  PlacetoNet net(net_options(cfg.net));
  net->train();
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(cfg.rl.lr));
  std::mt19937_64 rng(cfg.seed);
  const Json fingerprint = train_fingerprint(cfg, cluster);
  TrainState state;
  if (cfg.resume) {
    state = load_checkpoint(checkpoint_path, net, adam, fingerprint, instances);
    std::istringstream in(state.rng);
    in >> rng;
    if (in.fail()) {
      throw FormatError(format_context(checkpoint_path + ".meta.json", "rng",
                                       "not a generator state"));
    }
    res.start_update = state.update;
  }
  if (cb.on_start) cb.on_start(state.update);
  const double seconds_before = state.seconds;
  auto run_seconds = [&] { return seconds_before + seconds_since(t0); };

  std::string log_path;  // empty: no log
  if (!cfg.output_dir.empty()) {
    std::filesystem::create_directories(cfg.output_dir);
    log_path = cfg.output_dir + "/log.jsonl";
    if (cfg.resume) {
      truncate_log(log_path, state.update);
    } else {
      write_text_atomic(log_path, "", "training log");
    }
    res.policy_path = cfg.output_dir + "/policy.pt";
  }
  auto evaluations = [&] {
    int64_t n = 0;
    for (const auto& in : instances) n += in->evaluations;
    return n;
  };
  auto checkpoint = [&](int64_t updates) {
    if (cfg.output_dir.empty()) return;
    PlacetoPolicyMeta m;
    m.net = cfg.net;
    m.updates = updates;
    m.seed = cfg.seed;
    m.family = cfg.family;
    m.graphs = cfg.graphs;
    m.first_seed = cfg.first_seed;
    m.groups = cfg.mdp.groups;
    m.reward = to_string(cfg.mdp.reward);
    m.cluster = cluster.name;
    m.evaluations = evaluations();
    m.train_seconds = run_seconds();
    save_policy(res.policy_path, net, m);
    if (cfg.resumable) {
      TrainState st;
      st.update = updates;
      st.seconds = m.train_seconds;
      std::ostringstream r;
      r << rng;
      st.rng = r.str();
      save_checkpoint(checkpoint_path, net, adam, fingerprint, st, instances);
    }
  };
  res.updates = state.update;
  int64_t written = cfg.resume ? state.update : -1;
  for (int64_t u = state.update + 1; u <= cfg.updates; ++u) {
    if (stop()) {
      res.stopped = true;
      break;
    }
    const auto tu = Clock::now();
    const int64_t evals_before = evaluations();
    const size_t gi = size_t((u - 1) % cfg.graphs);
    Instance& in = *instances[gi];
    Rollout r = rollout(in, net, cfg.rl.episodes, false, rng);
    const UpdateStats st = reinforce(in, net, adam, r, cfg.rl);
    res.mean_return.push_back(st.mean_return);
    res.updates = u;
    PlacetoTrainUpdate rec;
    rec.update = u;
    rec.total = cfg.updates;
    rec.graph = int(gi);
    rec.mean_return = st.mean_return;
    rec.entropy = st.entropy;
    rec.loss = st.loss;
    rec.grad_norm = st.grad_norm;
    rec.best_ratio = in.best_time / in.env().reference_time();
    rec.evaluations = evaluations();
    rec.update_evaluations = rec.evaluations - evals_before;
    rec.update_seconds = seconds_since(tu);
    if (!log_path.empty()) {
      Json line = {{"type", "update"},
                   {"update", u},
                   {"graph", gi},
                   {"mean_return", st.mean_return},
                   {"entropy", st.entropy},
                   {"loss", st.loss},
                   {"grad_norm", st.grad_norm},
                   {"best_ratio", rec.best_ratio},
                   {"evaluations", rec.evaluations},
                   {"seconds", run_seconds()}};
      // A failed append stops training with one clear error (no torn line); the last
      // checkpoint stays intact and --resume cuts the log back to it.
      append_line(log_path, line.dump(), "training log");
    }
    if (u % cfg.checkpoint_every == 0) {
      checkpoint(u);
      written = u;
    }
    if (cb.on_update) cb.on_update(rec);
  }
  if (written != res.updates) checkpoint(res.updates);
  res.evaluations = evaluations();
  for (const auto& in : instances) res.best_ratio.push_back(in->best_time / in->env().reference_time());
  res.seconds = run_seconds();
  return res;
}

}  // namespace placer
