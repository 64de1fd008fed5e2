// Placeto (agents/placeto/placeto.h): instances (coarsened graph + lockstep envs), rollouts,
// REINFORCE updates, policy files and the online / zero-shot placer. Family training is
// agents/placeto/placeto_train.cpp; what the two share is agents/placeto/placeto_internal.h.
#include "agents/placeto/placeto.h"

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

#include "agents/api/methods.h"
#include "agents/common/method_options.h"
#include "agents/common/outcome.h"
#include "agents/common/prediction.h"
#include "agents/placeto/placeto_internal.h"
#include "datasets/coarsen.h"
#include "models/placeto_net.h"
#include "simulator/cost_model.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"
#include "src/util/files.h"

namespace placer {
namespace placeto_internal {


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


std::unique_ptr<Instance> make_instance(const Graph& graph, const Cluster& cluster,
                                        const CostModel& cost, const std::vector<int>& devices,
                                        const PlacetoMdpConfig& mdp, int max_devices,
                                        int episodes, const PlanFrame& frame) {
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
  eo.frame = frame;
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


void save_policy(const std::string& path, PlacetoNet& net, PlacetoPolicyMeta meta) {
  meta.format_version = kPolicyFormat;
  meta.feature_dim = placeto_feat::dim(meta.net.max_devices);
  if (meta.created.empty()) meta.created = utc_now();
  torch::serialize::OutputArchive archive;
  net->save(archive);
  policy_file::save_policy_pair(archive, path, meta_json(meta));
}

PlacetoNet load_policy(const std::string& path, PlacetoPolicyMeta* meta_out) {
  PlacetoPolicyMeta meta = read_placeto_policy_meta(path);
  PlacetoNet net(net_options(meta.net));
  torch::serialize::InputArchive archive = policy_file::load_archive(path);
  policy_file::read_module(archive, *net, path, "net.");
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

class PlacetoPlacer : public OutcomePlacer {
 public:
  explicit PlacetoPlacer(PlacetoOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "placeto"; }
  bool honours_frame() const override { return true; }
  SearchOutcome search_outcome(const Problem& problem, const SearchBudget& budget) override {
    PlacetoSearchResult r = placeto_search(problem, options_, budget);
    return search_outcome_of(std::move(r.plan), r.evaluations, r.best_evaluation, r.seconds,
                             {{"episodes", double(r.episodes)},
                              {"updates", double(r.updates)},
                              {"groups", double(r.num_groups)},
                              {"reference_time", r.reference_time}});
  }

 private:
  PlacetoOptions options_;
};

}  // namespace placeto_internal

using namespace placeto_internal;

bool placeto_available() { return true; }

void check_placeto_options(const PlacetoOptions& o) {
  check_net_config(o.net, "placeto: ");
  check_rl_mdp(o.rl, o.mdp, "placeto: ");
  if (o.zero_shot_samples < 0) throw ValidationError("placeto: zero_shot_samples must be >= 0");
  if (o.default_evaluations < 1) throw ValidationError("placeto: default_evaluations must be >= 1");
}

PlacetoPolicyMeta read_placeto_policy_meta(const std::string& policy_path) {
  const std::string path = policy_file::meta_path(policy_path);
  const Json j = policy_file::read_policy_meta(policy_path);
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
                                               episodes, problem.frame);
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
  const SimResult sim = predict(problem, &plan);
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
  out->push_back(with_options(
      MethodInfo{"placeto",
                 "Placeto (Addanki et al. 2019): iterative MDP over coarsened groups, "
                 "graph-embedding policy trained online with REINFORCE (20000 simulated "
                 "placements by default), or zero-shot from a family-trained policy",
                 false, [] { return make_placeto_placer(); }},
      placeto_option_table(), PlacetoOptions{}, make_placeto_method));
}

}  // namespace placer
