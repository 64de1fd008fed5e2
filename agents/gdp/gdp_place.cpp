// Placing one graph with a GDP policy (zero-shot, optionally fine-tuned with PPO) and the
// "gdp" entry of the method registry. The network and PPO live in gdp_net.cpp / gdp_ppo.cpp.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <torch/optim/adam.h>
#include <torch/types.h>
#include <torch/utils.h>

#include "agents/api/methods.h"
#include "agents/common/method_options.h"
#include "agents/common/outcome.h"
#include "agents/common/prediction.h"
#include "agents/gdp/gdp.h"
#include "agents/gdp/gdp_net.h"
#include "agents/gdp/gdp_refine.h"
#include "agents/gdp/score_cache.h"
#include "env/placement_env.h"
#include "src/util/error.h"

namespace placer {
namespace {

/// A scored placement: lower is better, any non-OOM placement beats every OOM one.
struct Scored {
  std::vector<int> action;
  double time = std::numeric_limits<double>::infinity();
  bool oom = true;
  bool valid = false;

  /// True when (oom, time) beats `o` (strictly).
  bool better_than(const Scored& o) const {
    if (!o.valid) return true;
    if (oom != o.oom) return !oom;
    return time < o.time;
  }
};

std::string format_ms(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f ms", seconds * 1e3);
  return buf;
}

class GdpPlacer : public OutcomePlacer {
 public:
  GdpPlacer(std::string path, GdpPlaceOptions options, std::string name)
      : path_(std::move(path)), options_(std::move(options)), name_(std::move(name)) {}

  std::string name() const override { return name_; }

  /// A shaped search (gdp+stages) scores its own plans, not the frame's.
  bool honours_frame() const override { return !options_.shape; }

  SearchOutcome search_outcome(const Problem& problem, const SearchBudget& budget) override {
    if (!policy_) {
      const std::string path = path_.empty() ? default_policy_path() : path_;
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) {
        throw FileError("no policy at " + path +
                        "; train one with `placer train-policy` or pass --policy");
      }
      policy_.emplace(GdpPolicy::load(path));
    }
    GdpPlaceResult r = gdp_place(*policy_, problem, options_, budget);
    r.plan.method = name();
    SearchOutcome out = search_outcome_of(std::move(r.plan), r.evaluations, 0, r.seconds,
                                          {{"greedy_time", r.greedy_time},
                                           {"zero_shot_time", r.zero_shot_time},
                                           {"reference_time", r.reference_time},
                                           {"repeated_evaluations", double(r.repeats)}});
    out.stats.best_curve = std::move(r.finetune_curve);
    return out;
  }

 private:
  std::string path_;
  GdpPlaceOptions options_;
  std::string name_;
  std::optional<GdpPolicy> policy_;
};

void check_place_options(const GdpPlaceOptions& options) {
  if (options.samples < 0) {
    throw ValidationError("gdp: samples must be >= 0 (got " + std::to_string(options.samples) +
                          ")");
  }
  if (options.finetune_updates < 0) {
    throw ValidationError("gdp: finetune_updates must be >= 0 (got " +
                          std::to_string(options.finetune_updates) + ")");
  }
  if (options.finetune_updates > 0 && options.ppo.samples < 1) {
    throw ValidationError("gdp: ppo.samples must be >= 1 when fine-tuning (got " +
                          std::to_string(options.ppo.samples) + ")");
  }
}

/// Every device must be one of the policy's max_devices.
void check_devices_in_policy(const Problem& problem, const std::vector<int>& devices,
                             int max_devices) {
  for (int d : devices) {
    if (d >= max_devices) {
      throw ValidationError(
          "gdp: device " + std::to_string(d) + " (" +
          (d < problem.cluster.num_devices() ? problem.cluster.device(d).name : std::string("?")) +
          ") is beyond the policy's " + std::to_string(max_devices) + " devices (ids 0-" +
          std::to_string(max_devices - 1) + "); pass --devices with ids below " +
          std::to_string(max_devices));
    }
  }
}

/// One placement search: the env, the best placement scored so far (with options.shape, also
/// its shaped plan) and the result.
class GdpPlaceRun {
 public:
  GdpPlaceRun(const Problem& problem, const GdpPlaceOptions& options, const SearchBudget& budget,
              const BudgetClock& clock, const std::vector<int>& devices, int max_devices)
      : problem_(problem),
        options_(options),
        budget_(budget),
        clock_(clock),
        env_(problem.graph, problem.cluster, problem.cost, env_options(devices, max_devices)),
        tensors_(to_tensors(env_)),
        scored_{ScoreCache(options.cache_entries), ScoreCache(options.cache_entries)},
        rng_(budget.seed) {
    result_.reference_time = env_.reference_time();
  }
  GdpPlaceRun(const GdpPlaceRun&) = delete;  // the env's score refers to this
  GdpPlaceRun& operator=(const GdpPlaceRun&) = delete;

  /// Greedy + samples from the policy as it is.
  void zero_shot(const GdpPolicy& policy);
  /// Block moves around the best placement, drawn from `probs` (the policy's [U, D]). With
  /// `restarts`, each chain climbs from its own current placement and restarts near its
  /// incumbent when stuck (climb); without, every move starts from the incumbent.
  void refine(const torch::Tensor& probs, int moves, bool restarts = false);
  /// PPO on this graph alone, from a copy of the policy.
  void finetune(const GdpPolicy& policy);
  /// options.polish on the best shaped plan, when it is another placement's than last time.
  void polish();
  /// The best plan, predicted.
  GdpPlaceResult finish();

 private:
  PlacementEnvOptions env_options(const std::vector<int>& devices, int max_devices) {
    PlacementEnvOptions o;
    o.devices = devices;
    o.max_devices = max_devices;
    o.colocate = options_.colocate;
    o.oom_penalty = options_.ppo.oom_penalty;
    o.frame = problem_.frame;
    if (options_.shape) {
      o.score = [this](const Plan& placement) {
        if (!score_as_placed_)
          return shaped_result(problem_, options_.shape, placement, &last_shaped_,
                               options_.objective);
        last_shaped_ = placement;
        SimResult r = predict(problem_, &last_shaped_);
        r.step_time = objective_time(options_.objective, r, problem_.cluster);
        return r;
      };
    }
    return o;
  }
  StepResult evaluate(std::vector<int> action);
  /// The as-placed chain of refine: its first placements.
  void start_as_placed_chain();
  /// evaluate, the placement scored as placed even with options.shape.
  StepResult evaluate_as_placed(std::vector<int> action);
  /// evaluate as refine's chain `chain` scores (as placed for chain 0 of two).
  Scored evaluate_in_chain(size_t chain, bool two_chains, std::vector<int> action);
  /// Iterated local search in refine's chain `chain`: `moved` replaces the chain's current
  /// placement when better; after kStalledMoves moves in a row without, the chain restarts
  /// from kKickMoves block moves away from its incumbent.
  void climb(size_t chain, Scored moved, const std::vector<float>& rows, int devices,
             bool two_chains);
  bool out_of_budget() const { return clock_.exhausted(result_.evaluations); }

  const Problem& problem_;
  const GdpPlaceOptions& options_;
  const SearchBudget& budget_;
  const BudgetClock& clock_;
  Plan last_shaped_;  // with options.shape: the plan of the placement env.step just scored
  bool score_as_placed_ = false;    // with options.shape: score the next step as placed
  bool as_placed_started_ = false;  // start_as_placed_chain ran
  PlacementEnv env_;
  const GraphTensors tensors_;
  // The placements scored so far (the last options.cache_entries of each kind), as placed
  // [0] / shaped [1] (with options.shape; without, [1] only): a peaked policy repeats its
  // samples and refine redraws rejected moves, and a repeat needs no second DP and
  // simulations. Scores are deterministic, so the search is the same with or without it,
  // only faster.
  std::array<ScoreCache, 2> scored_;
  std::mt19937_64 rng_;
  GdpPlaceResult result_;
  Scored best_;
  Plan best_shaped_;  // with options.shape: the plan of `best_`
  // The best placement whose plan ran as placed [0] / as pipeline stages [1] (with
  // options.shape; without, only [0]).
  std::array<Scored, 2> incumbents_;
  // refine's chains with restarts: where each climbs now, its incumbent when it last joined
  // it, and its moves since it last improved.
  std::array<Scored, 2> current_;
  std::array<Scored, 2> synced_;
  std::array<int, 2> stalled_{};
  static constexpr int kStalledMoves = 1024;
  static constexpr int kKickMoves = 3;
  std::vector<std::vector<int>> neighbours_;  // unit_neighbours, built on the first refine
  // options.polish's last input placement and its best plan (time infinite until one beats
  // best_).
  std::vector<int> polished_action_;
  Scored polished_;
  Plan polished_plan_;
};

StepResult GdpPlaceRun::evaluate_as_placed(std::vector<int> action) {
  score_as_placed_ = true;
  const StepResult r = evaluate(std::move(action));
  score_as_placed_ = false;
  return r;
}

StepResult GdpPlaceRun::evaluate(std::vector<int> action) {
  ++result_.evaluations;
  ScoreCache& scored = scored_[score_as_placed_ ? 0 : 1];
  if (const StepResult* known = scored.find(action)) {
    ++result_.repeats;  // already compared with the incumbents
    return *known;
  }
  last_shaped_ = Plan{};
  const StepResult r = env_.step(action);
  scored.add(action, r);
  Scored s{std::move(action), r.step_time, r.oom, true};
  // The incumbent of the plan's kind (a shaped plan with stages, or run as placed): block
  // moves start from each in turn.
  Scored& of_kind = incumbents_[last_shaped_.pipeline.stages.empty() ? 0 : 1];
  if (s.better_than(of_kind)) of_kind = s;
  if (s.better_than(best_)) {
    best_ = std::move(s);
    best_shaped_ = std::move(last_shaped_);
  }
  return r;
}

void GdpPlaceRun::zero_shot(const GdpPolicy& policy) {
  torch::NoGradGuard no_grad;
  GdpNet net = policy.impl().net;
  const torch::Tensor logits = net->forward(tensors_);
  const std::vector<int> greedy = greedy_action(logits);
  const StepResult g = evaluate(greedy);
  result_.greedy_time = g.step_time;
  result_.greedy_oom = g.oom;
  if (options_.samples > 0) {
    const torch::Tensor probs = torch::softmax(logits, -1);
    // The samples stop at the budget (the greedy placement always runs).
    for (int i = 0; i < options_.samples && !out_of_budget(); ++i) {
      evaluate(sample_action(probs, rng_));
    }
  }
  if (options_.refine > 0) refine(torch::softmax(logits, -1), options_.refine);
  result_.zero_shot_time = best_.time;
}

void GdpPlaceRun::start_as_placed_chain() {
  as_placed_started_ = true;
  evaluate_as_placed(best_.action);
  // And the fastest single device that fits (the env's reference runs): a policy trained on
  // pipeline scores may put no good placement as placed among its samples.
  const std::vector<double>& times = env_.single_device_times();
  int fastest = -1;
  for (size_t i = 0; i < times.size(); ++i) {
    if (env_.single_device_oom()[i]) continue;
    if (fastest < 0 || times[i] < times[size_t(fastest)]) fastest = int(i);
  }
  if (fastest >= 0) {
    evaluate_as_placed(
        std::vector<int>(size_t(env_.num_units()), env_.allowed_devices()[size_t(fastest)]));
  }
}

void GdpPlaceRun::refine(const torch::Tensor& probs, int moves, bool restarts) {
  // Half the policy, half uniform over the unit's allowed devices: a peaked policy leaves
  // the other devices a probability that rounds to 0, and block moves need them.
  const torch::Tensor allowed = tensors_.mask.to(torch::kFloat);
  const torch::Tensor uniform = allowed / allowed.sum(-1, true);
  const torch::Tensor p =
      (0.5 * probs.detach() + 0.5 * uniform).to(torch::kCPU, torch::kFloat).contiguous();
  const std::vector<float> rows(p.data_ptr<float>(), p.data_ptr<float>() + p.numel());
  const int devices = int(p.size(1));
  if (neighbours_.empty()) {
    neighbours_ = unit_neighbours(env_.graph(), env_.unit_of_op(), env_.num_units());
  }
  // With a shape, two chains in turn: moves from the best placement run as placed, scored
  // as placed (the shaped score, the better of both, would hide a placement that improves on
  // the as-placed side while a pipeline wins), and moves from the best shaped plan.
  const bool two_chains = bool(options_.shape);
  if (two_chains && !as_placed_started_ && best_.valid) start_as_placed_chain();
  for (int i = 0; i < moves && !out_of_budget() && best_.valid; ++i) {
    const size_t chain = two_chains ? size_t(i) % 2 : 0;
    const Scored& incumbent = incumbents_[chain].valid ? incumbents_[chain] : best_;
    if (restarts && incumbent.better_than(synced_[chain])) {
      // The incumbent improved elsewhere (a PPO sample, the other chain): climb from it.
      synced_[chain] = current_[chain] = incumbent;
      stalled_[chain] = 0;
    }
    const Scored& from = restarts ? current_[chain] : incumbent;
    std::vector<int> next = propose_block_move(from.action, rows, devices, neighbours_, rng_);
    if (next == from.action) break;  // no unit has another device
    Scored moved = evaluate_in_chain(chain, two_chains, std::move(next));
    if (restarts) climb(chain, std::move(moved), rows, devices, two_chains);
  }
}

Scored GdpPlaceRun::evaluate_in_chain(size_t chain, bool two_chains, std::vector<int> action) {
  const StepResult r = two_chains && chain == 0 ? evaluate_as_placed(action) : evaluate(action);
  return Scored{std::move(action), r.step_time, r.oom, true};
}

void GdpPlaceRun::climb(size_t chain, Scored moved, const std::vector<float>& rows, int devices,
                        bool two_chains) {
  if (moved.better_than(current_[chain])) {
    current_[chain] = std::move(moved);
    stalled_[chain] = 0;
    return;
  }
  if (++stalled_[chain] < kStalledMoves) return;
  // Stuck: every nearby move was tried (most are cache hits by now). Restart this chain's
  // climb a few block moves away from its incumbent, kept whatever it scores.
  const Scored& incumbent = incumbents_[chain].valid ? incumbents_[chain] : best_;
  current_[chain] = evaluate_in_chain(
      chain, two_chains,
      propose_block_moves(incumbent.action, rows, devices, neighbours_, kKickMoves, rng_));
  stalled_[chain] = 0;
}

void GdpPlaceRun::finetune(const GdpPolicy& policy) {
  GdpPolicy tuned = policy.clone();
  GdpNet net = tuned.impl().net;
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(options_.ppo.lr));
  double ema = std::numeric_limits<double>::quiet_NaN();
  const int total = options_.finetune_updates;
  for (int u = 1; u <= total; ++u) {
    if (out_of_budget()) break;
    std::vector<PpoEpisode> batch(1);
    PpoEpisode& ep = batch[0];
    ep.tensors = &tensors_;
    torch::Tensor probs;
    {
      torch::NoGradGuard no_grad;
      const torch::Tensor logits = net->forward(tensors_);
      probs = torch::softmax(logits, -1);
      std::vector<torch::Tensor> old;
      for (int k = 0; k < options_.ppo.samples; ++k) {
        ep.actions.push_back(sample_action(probs, rng_));
        old.push_back(action_log_probs(logits, ep.actions.back()));
      }
      ep.old_log_probs = torch::stack(old);
    }
    for (const std::vector<int>& a : ep.actions) ep.rewards.push_back(evaluate(a).reward);
    compute_advantages(batch, options_.ppo, {&ema});
    ppo_update(net, adam, batch, options_.ppo);
    if (options_.finetune_refine > 0) refine(probs, options_.finetune_refine, true);
    if (options_.polish) polish();
    result_.finetune_curve.push_back(polished_.better_than(best_) ? polished_.time : best_.time);
    if (budget_.progress) budget_.progress(u, total, "best " + format_ms(best_.time));
  }
}

void GdpPlaceRun::polish() {
  if (!best_.valid || best_.oom || best_shaped_.pipeline.stages.empty() ||
      best_.action == polished_action_) {
    return;
  }
  polished_action_ = best_.action;
  const auto spend = [this] {
    if (out_of_budget()) return false;
    ++result_.evaluations;
    return true;
  };
  auto [plan, time] = options_.polish(problem_, best_shaped_, best_.time, spend);
  const Scored s{best_.action, time, false, true};
  if (s.better_than(best_) && s.better_than(polished_)) {
    polished_ = s;
    polished_plan_ = std::move(plan);
  }
}

GdpPlaceResult GdpPlaceRun::finish() {
  if (polished_.better_than(best_)) {
    result_.plan = std::move(polished_plan_);
  } else {
    result_.plan = options_.shape && best_.valid && !best_shaped_.placement.empty()
                       ? std::move(best_shaped_)
                       : env_.to_plan(best_.action);
  }
  result_.plan.method = "gdp";
  const SimResult sim = predict(problem_, &result_.plan);
  result_.best_time = sim.step_time;
  result_.seconds = clock_.elapsed();
  return std::move(result_);
}

}  // namespace

SimResult shaped_result(const Problem& problem, const GdpShape& shape, const Plan& placement,
                        Plan* shaped, Objective objective) {
  std::optional<SimResult> carried;
  *shaped = shape(problem, placement, &carried);
  if (objective == Objective::kThroughput) {
    if (!carried) {
      SimOptions so;
      so.critical_path = false;
      carried = problem.simulator.run(*shaped, so);
    }
    SimResult r = std::move(*carried);
    r.step_time = objective_time(objective, r, problem.cluster);
    return r;
  }
  if (!shaped->predicted.valid) return predict(problem, shaped);
  SimResult r;
  r.step_time = shaped->predicted.step_time;
  r.oom = shaped->predicted.oom;
  return r;
}

std::unique_ptr<Placer> make_gdp_placer(const std::string& policy_path,
                                        const GdpPlaceOptions& options, const std::string& name) {
  return std::make_unique<GdpPlacer>(policy_path, options, name);
}

void add_learned_methods(std::vector<MethodInfo>* out) {
  out->push_back(with_options(
      MethodInfo{"gdp",
                 "GDP learned placer (Zhou et al. 2019), zero-shot with the default pretrained "
                 "policy (models/pretrained/default.pt or $PLACER_POLICY): greedy + 16 sampled "
                 "placements",
                 false, [] { return make_gdp_placer("", GdpPlaceOptions{}); }},
      gdp_option_table(), GdpMethodOptions{}, [](const GdpMethodOptions& o) {
        const std::string policy = o.policy.empty() ? default_policy_path() : o.policy;
        if (!std::filesystem::is_regular_file(policy)) {
          throw FileError("gdp: policy '" + policy + "' not found (" +
                          (o.policy.empty() ? "the default; pass --policy P.pt, set "
                                              "$PLACER_POLICY, or train one with `placer "
                                              "train-policy`)"
                                            : "train one with `placer train-policy`; it writes "
                                              "<output-dir>/policy.pt)"));
        }
        return make_gdp_placer(o.policy, o.place);
      }));
}

GdpPlaceResult gdp_place(const GdpPolicy& policy, const Problem& problem,
                         const GdpPlaceOptions& options, const SearchBudget& budget) {
  const BudgetClock clock(budget, "gdp");
  check_place_options(options);
  const std::vector<int> devices = problem_devices(problem);
  const int max_devices = policy.config().max_devices;
  check_devices_in_policy(problem, devices, max_devices);
  GdpPlaceRun run(problem, options, budget, clock, devices, max_devices);
  run.zero_shot(policy);
  if (options.finetune_updates > 0) run.finetune(policy);
  return run.finish();
}

}  // namespace placer
