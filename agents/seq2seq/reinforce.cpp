// REINFORCE machinery of the seq2seq placers (agents/seq2seq/reinforce.h).
#include "agents/seq2seq/reinforce.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/utils.h>

#include "agents/common/prediction.h"
#include "src/util/error.h"
#include "src/util/files.h"

namespace placer {
namespace {

constexpr int kLearnedPolicyFormat = 1;

int hash_bucket(int position, int width) {
  uint64_t h = (uint64_t(position) + 1) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  return int((h >> 32) % uint64_t(width));
}

std::string format_ms(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f ms", seconds * 1e3);
  return buf;
}

}  // namespace

UnitInputs unit_inputs(const PlacementEnv& env, int adjacency_width) {
  if (adjacency_width < 1) {
    throw ValidationError("adjacency_width must be >= 1 (got " + std::to_string(adjacency_width) +
                          ")");
  }
  const NodeFeatures& f = env.observation();
  const std::vector<int>& unit_of = env.unit_of_op();
  const int n_units = env.num_units();
  const int vocab = int(op_type_vocabulary().size());
  const int a_w = adjacency_width;
  UnitInputs in;
  in.num_units = n_units;
  in.dim = f.dim + vocab + 2 * a_w + 1;

  // Topological order of the units: by the first of their ops in the op topological order.
  in.position.assign(size_t(n_units), -1);
  for (uint32_t op : f.order) {
    const int u = unit_of[op];
    if (in.position[size_t(u)] < 0) {
      in.position[size_t(u)] = int(in.order.size());
      in.order.push_back(u);
    }
  }
  for (int u = 0; u < n_units; ++u) {  // units without ops in the order (not expected)
    if (in.position[size_t(u)] < 0) {
      in.position[size_t(u)] = int(in.order.size());
      in.order.push_back(u);
    }
  }

  std::vector<double> sum(size_t(n_units) * size_t(in.dim), 0.0);
  std::vector<int> count(size_t(n_units), 0);
  auto row = [&](int u) { return sum.data() + size_t(u) * size_t(in.dim); };
  std::set<std::pair<int, int>> edges;
  for (int op = 0; op < f.num_nodes; ++op) {
    const int u = unit_of[size_t(op)];
    double* r = row(u);
    for (int c = 0; c < f.dim; ++c) r[c] += double(f.at(op, c));
    r[f.dim + f.op_type[size_t(op)]] += 1.0;
    ++count[size_t(u)];
    for (int j = f.out_off[size_t(op)]; j < f.out_off[size_t(op) + 1]; ++j) {
      const int v = unit_of[size_t(f.out_idx[size_t(j)])];
      if (v != u) edges.emplace(u, v);
    }
  }
  in.edges.assign(edges.begin(), edges.end());
  for (const auto& [a, b] : in.edges) {
    row(a)[f.dim + vocab + a_w + hash_bucket(in.position[size_t(b)], a_w)] += 1.0;  // out
    row(b)[f.dim + vocab + hash_bucket(in.position[size_t(a)], a_w)] += 1.0;        // in
  }
  in.x.assign(sum.size(), 0.f);
  for (int u = 0; u < n_units; ++u) {
    double* r = row(u);
    const double c = std::max(1, count[size_t(u)]);
    float* o = in.x.data() + size_t(u) * size_t(in.dim);
    for (int i = 0; i < f.dim + vocab; ++i) o[i] = float(r[i] / c);
    double amax = 0;
    for (int i = f.dim + vocab; i < f.dim + vocab + 2 * a_w; ++i) amax = std::max(amax, r[i]);
    for (int i = f.dim + vocab; i < f.dim + vocab + 2 * a_w; ++i)
      o[i] = amax > 0 ? float(r[i] / amax) : 0.f;
    o[in.dim - 1] = n_units > 1 ? float(in.position[size_t(u)]) / float(n_units - 1) : 0.f;
  }
  return in;
}

torch::Tensor rows_tensor(const UnitInputs& in, const std::vector<int>& rows) {
  torch::Tensor t = torch::empty({int64_t(rows.size()), int64_t(in.dim)}, torch::kFloat);
  float* p = t.data_ptr<float>();
  for (size_t i = 0; i < rows.size(); ++i) {
    std::copy_n(in.x.data() + size_t(rows[i]) * size_t(in.dim), size_t(in.dim),
                p + i * size_t(in.dim));
  }
  return t;
}

void check_reinforce_config(const ReinforceConfig& c, const std::string& method) {
  auto fail = [&](const std::string& what) { throw ValidationError(method + ": " + what); };
  if (c.samples < 1) fail("rl.samples must be >= 1 (got " + std::to_string(c.samples) + ")");
  if (!(c.lr > 0)) fail("rl.lr must be > 0");
  if (!(c.lr_decay > 0 && c.lr_decay <= 1)) fail("rl.lr_decay must be in (0, 1]");
  if (c.lr_decay_start < 0) fail("rl.lr_decay_start must be >= 0");
  if (c.lr_decay_every < 1) fail("rl.lr_decay_every must be >= 1");
  if (!(c.baseline_decay >= 0 && c.baseline_decay < 1))
    fail("rl.baseline_decay must be in [0, 1)");
  if (!(c.entropy >= 0)) fail("rl.entropy must be >= 0");
  if (!(c.max_grad_norm >= 0)) fail("rl.max_grad_norm must be >= 0");
  if (!(c.failing_runtime >= 1) || !std::isfinite(c.failing_runtime))
    fail("rl.failing_runtime must be a finite value >= 1 (in units of the reference time)");
  if (!(c.logits_noise >= 0) || !std::isfinite(c.logits_noise))
    fail("rl.logits_noise must be a finite value >= 0");
  if (c.noise_updates < 0) fail("rl.noise_updates must be >= 0");
  if (c.threads < 0) fail("rl.threads must be >= 0 (0 = LibTorch's setting)");
}

void save_learned_policy(const std::string& path, torch::nn::Module& root, policy_file::Json meta) {
  meta["format_version"] = kLearnedPolicyFormat;
  torch::serialize::OutputArchive archive;
  root.save(archive);
  policy_file::save_policy_pair(archive, path, meta);
}

void load_learned_policy(const std::string& path, torch::nn::Module& root,
                         policy_file::Json expected) {
  const policy_file::Json meta = policy_file::read_policy_meta(path);
  const std::string meta_path = policy_file::meta_path(path);
  expected["format_version"] = kLearnedPolicyFormat;
  // The method and the format first (a policy of the other method differs everywhere).
  for (const char* key : {"method", "format_version"}) {
    if (expected.contains(key)) policy_file::expect_field(meta, key, expected[key], meta_path);
  }
  // Then the others by name (the order the sidecars were always checked in).
  std::vector<std::string> keys;
  for (auto it = expected.begin(); it != expected.end(); ++it) keys.push_back(it.key());
  std::sort(keys.begin(), keys.end());
  for (const std::string& key : keys) policy_file::expect_field(meta, key, expected[key], meta_path);
  torch::serialize::InputArchive archive = policy_file::load_archive(path);
  policy_file::read_module(archive, root, path, "");
}

PlacementEnvOptions seq2seq_env_options(const Problem& problem, const ReinforceConfig& config,
                                        bool colocate) {
  PlacementEnvOptions o;
  o.devices = problem_devices(problem);
  if (o.devices.empty()) throw ValidationError("no devices to place on");
  o.max_devices = *std::max_element(o.devices.begin(), o.devices.end()) + 1;
  o.colocate = colocate;
  o.oom_penalty = -std::sqrt(config.failing_runtime);
  o.frame = problem.frame;
  return o;
}

ReinforceStats reinforce_update(torch::optim::Optimizer& optimizer,
                                const std::vector<torch::Tensor>& parameters,
                                const torch::Tensor& log_prob, const torch::Tensor& entropy,
                                const std::vector<double>& rewards, MovingBaseline& baseline,
                                const ReinforceConfig& config) {
  if (log_prob.dim() != 1 || log_prob.size(0) != int64_t(rewards.size()) || rewards.empty()) {
    throw ValidationError("reinforce_update: log_prob must be [K] with K = rewards (" +
                          std::to_string(rewards.size()) + ")");
  }
  ReinforceStats s;
  double mean = 0;
  for (double r : rewards) mean += r / double(rewards.size());
  s.mean_reward = mean;
  s.baseline = baseline.value(mean);
  std::vector<float> adv(rewards.size());
  for (size_t i = 0; i < rewards.size(); ++i) adv[i] = float(rewards[i] - s.baseline);
  const torch::Tensor a = torch::from_blob(adv.data(), {int64_t(adv.size())}, torch::kFloat).clone();
  torch::Tensor loss = -(a * log_prob).mean();
  if (config.entropy > 0 && entropy.defined()) loss = loss - config.entropy * entropy.mean();
  optimizer.zero_grad();
  loss.backward();
  double sq = 0;
  for (const torch::Tensor& p : parameters) {
    if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
  }
  s.grad_norm = std::sqrt(sq);
  if (config.max_grad_norm > 0) torch::nn::utils::clip_grad_norm_(parameters, config.max_grad_norm);
  optimizer.step();
  s.loss = loss.item<double>();
  baseline.update(mean);
  return s;
}

LearnedSearchResult reinforce_search(const Problem& problem, PlacementEnv& env,
                                     const ReinforceSearchSpec& spec, const SearchBudget& budget) {
  const ReinforceConfig& cfg = *spec.config;
  check_reinforce_config(cfg, spec.method);
  const BudgetClock clock(budget, spec.method, spec.default_evaluations);
  const int64_t max_evals = clock.max_runs();
  // LibTorch's intra-op threads for the search, restored on every exit.
  struct ThreadsGuard {
    int saved = 0;
    explicit ThreadsGuard(int n) {
      if (n > 0) {
        saved = torch::get_num_threads();
        torch::set_num_threads(n);
      }
    }
    ~ThreadsGuard() {
      if (saved > 0) torch::set_num_threads(saved);
    }
  } threads_guard(cfg.threads);
  LearnedSearchResult result;
  result.reference_time = env.reference_time();
  std::mt19937_64 rng(budget.seed);
  torch::optim::Adam adam(spec.parameters, torch::optim::AdamOptions(cfg.lr));
  MovingBaseline baseline(cfg.baseline_decay);

  std::vector<int> best_action;
  double best_time = std::numeric_limits<double>::infinity();
  bool best_oom = true;
  auto to_cluster = [&](const std::vector<int>& idx) {
    std::vector<int> a(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) a[i] = spec.devices[size_t(idx[i])];
    return a;
  };
  auto evaluate = [&](const std::vector<int>& idx) {
    std::vector<int> action = to_cluster(idx);
    const StepResult r = env.step(action);
    ++result.evaluations;
    const bool better = best_action.empty() || (best_oom && !r.oom) ||
                        (best_oom == r.oom && r.step_time < best_time);
    if (better) {
      best_action = std::move(action);
      best_time = r.step_time;
      best_oom = r.oom;
      result.best_evaluation = result.evaluations;
    }
    return r;
  };
  auto time_left = [&] { return clock.time_left(); };

  for (int64_t u = 1;; ++u) {
    if (!time_left()) break;
    int k = cfg.samples;
    // With an evaluation budget, one evaluation is kept for the final greedy placement.
    if (max_evals > 0) k = int(std::min<int64_t>(k, max_evals - 1 - result.evaluations));
    if (k < 1) break;
    if (u > cfg.lr_decay_start) {
      const double lr =
          cfg.lr * std::pow(cfg.lr_decay, double((u - 1 - cfg.lr_decay_start) / cfg.lr_decay_every));
      for (auto& g : adam.param_groups())
        static_cast<torch::optim::AdamOptions&>(g.options()).lr(lr);
    }
    const double noise = u <= cfg.noise_updates ? cfg.logits_noise : 0.0;
    PolicySamples s = spec.sample(k, rng, noise);
    std::vector<double> rewards;
    rewards.reserve(size_t(k));
    for (const std::vector<int>& idx : s.device_index_per_unit) rewards.push_back(evaluate(idx).reward);
    const ReinforceStats st =
        reinforce_update(adam, spec.parameters, s.log_prob, s.entropy, rewards, baseline, cfg);
    result.mean_reward.push_back(st.mean_reward);
    result.updates = u;
    if (budget.progress) {
      budget.progress(result.evaluations, max_evals,
                      "best " + format_ms(best_time) + (best_oom ? " (OOM)" : ""));
    }
  }
  {
    std::vector<int> g;
    {
      torch::NoGradGuard no_grad;
      g = spec.greedy();
    }
    result.greedy_time = evaluate(g).step_time;
    std::vector<int> ga(g.size());
    for (size_t i = 0; i < g.size(); ++i) ga[i] = spec.devices[size_t(g[i])];
    result.greedy_placement = env.to_plan(ga).placement;
  }
  if (best_action.empty()) {
    throw Error(spec.method + ": the budget allowed no simulated placement");
  }
  result.plan = env.to_plan(best_action);
  result.plan.method = spec.method;
  const SimResult sim = predict(problem, &result.plan);
  result.best_time = sim.step_time;
  result.best_oom = sim.oom;
  result.seconds = clock.elapsed();
  return result;
}

}  // namespace placer
