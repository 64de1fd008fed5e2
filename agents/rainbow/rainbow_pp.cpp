// The "rainbow-pp" placer (agents/rainbow/rainbow_pp.h): online Rainbow DQN over PipelineEnv.
#include "agents/rainbow/rainbow_pp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agents/api/methods.h"
#include "agents/common/method_options.h"
#include "agents/common/rainbow_agent.h"
#include "agents/rainbow/rainbow_pp_episodes.h"
#include "env/pipeline_env.h"
#include "src/util/error.h"

namespace placer {
namespace {


/// Episodes per budgeted evaluation at most (repeated cut sets are not simulated again).
constexpr int64_t kMaxRepeat = 4;

/// A scored plan (cut set + layout): any plan that fits beats every OOM one, then the lower
/// step time.
struct Best {
  std::vector<int> cuts;
  PipelineLayout layout;
  double time = std::numeric_limits<double>::infinity();
  bool oom = true;
  bool valid = false;

  bool beats(const PipelineStepResult& r) const {
    return !valid || (oom && !r.oom) || (oom == r.oom && r.step_time < time);
  }
  void offer(const std::vector<int>& c, const PipelineLayout& l, const PipelineStepResult& r) {
    if (!beats(r)) return;
    cuts = c;
    layout = l;
    time = r.step_time;
    oom = r.oom;
    valid = true;
  }
};

std::string format_ms(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "best %.3f ms", seconds * 1e3);
  return buf;
}

/// The number of stages the options ask for on n devices, after checking the options
/// (ValidationError "rainbow-pp: ...").
int checked_stages(const RainbowPPOptions& options, const Problem& problem, int n,
                   int64_t episodes) {
  if (!problem.graph.is_training_step()) {
    throw ValidationError(
        "rainbow-pp: the graph must be a training step (forward, backward "
        "and optimizer ops); expand it first");
  }
  const int stages = options.stages == 0 ? std::min(4, n) : options.stages;
  if (stages < 2 || stages > n) {
    throw ValidationError("rainbow-pp: stages must be in [2, " + std::to_string(n) +
                          "] (the number of devices), got " + std::to_string(stages));
  }
  if (options.micro_batches < 0) {
    throw ValidationError("rainbow-pp: micro_batches must be >= 0, got " +
                          std::to_string(options.micro_batches));
  }
  if (episodes < 1) {
    throw ValidationError("rainbow-pp: episodes must be >= 1, got " + std::to_string(episodes));
  }
  if (!(options.epsilon_decay_fraction > 0 && options.epsilon_decay_fraction <= 1)) {
    throw ValidationError("rainbow-pp: epsilon_decay_fraction must be in (0, 1]");
  }
  if (options.search_layout && (options.layout_rounds < 1 || options.layout_top < 1)) {
    throw ValidationError("rainbow-pp: layout_rounds and layout_top must be >= 1");
  }
  if (options.scope_depth < -1) {
    throw ValidationError("rainbow-pp: scope_depth must be >= -1 (-1 = auto), got " +
                          std::to_string(options.scope_depth));
  }
  return stages;
}

/// The env of `o`. Many stages over few pivots: the pivots near the center cuts may admit no
/// cut set with a parameter op in every stage; then all pivots are searched (o.prune is
/// cleared; throws if none does).
std::unique_ptr<PipelineEnv> make_pipeline_env(const Problem& problem, PipelineEnvOptions& o) {
  try {
    return std::make_unique<PipelineEnv>(problem.graph, problem.cluster, problem.cost, o);
  } catch (const ValidationError&) {
    if (!o.prune) throw;
    o.prune = false;
    return std::make_unique<PipelineEnv>(problem.graph, problem.cluster, problem.cost, o);
  }
}

/// The first round's env: layer boundaries as pivots, or with scope_depth -1 (auto) also
/// sub-modules when layer boundaries are too coarse to balance this many stages. `eo` becomes
/// the options the env was made with.
std::unique_ptr<PipelineEnv> first_pipeline_env(const Problem& problem,
                                                const RainbowPPOptions& options,
                                                PipelineEnvOptions& eo) {
  eo.scope_depth = std::max(0, options.scope_depth);
  std::unique_ptr<PipelineEnv> env = make_pipeline_env(problem, eo);
  if (options.scope_depth < 0 && env->num_pivots() < 4 * eo.stages) {
    PipelineEnvOptions finer = eo;
    finer.scope_depth = 1;
    finer.prune = options.prune;
    std::unique_ptr<PipelineEnv> f = make_pipeline_env(problem, finer);
    if (f->num_pivots() > env->num_pivots()) {
      env = std::move(f);
      eo = finer;
    }
  }
  return env;
}

/// The `top` best distinct cut sets of a round (fitting first, then faster) and the best
/// plan's cuts.
std::vector<std::vector<int>> top_cut_sets(
    const std::map<std::vector<int>, PipelineStepResult>& cache, int top_count, const Best& best) {
  std::vector<std::pair<std::vector<int>, PipelineStepResult>> ranked(cache.begin(), cache.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    if (a.second.oom != b.second.oom) return !a.second.oom;
    return a.second.step_time < b.second.step_time;
  });
  std::vector<std::vector<int>> top;
  for (const auto& [cuts, r] : ranked) {
    if (static_cast<int>(top.size()) >= top_count) break;
    top.push_back(cuts);
  }
  if (std::find(top.begin(), top.end(), best.cuts) == top.end()) top.push_back(best.cuts);
  return top;
}

/// Layout search on `cuts`: the round's device groups, the env's best and proportional ones
/// (and the best plan's when these are its cuts), each with every micro-batch candidate.
void search_layouts(PipelineEnv& env, const std::vector<int>& cuts, const PipelineLayout& layout,
                    Best& best) {
  std::vector<std::vector<std::vector<int>>> group_sets{layout.groups, env.best_groups(cuts),
                                                        env.proportional_groups(cuts)};
  if (best.cuts == cuts) group_sets.push_back(best.layout.groups);
  std::sort(group_sets.begin(), group_sets.end());
  group_sets.erase(std::unique(group_sets.begin(), group_sets.end()), group_sets.end());
  for (const auto& groups : group_sets) {
    for (int m : env.micro_batch_candidates(groups)) {
      const PipelineLayout l{groups, m};
      best.offer(cuts, l, env.evaluate(cuts, l));
    }
  }
}

class RainbowPPPlacer : public Placer {
 public:
  explicit RainbowPPPlacer(RainbowPPOptions options) : options_(std::move(options)) {}

  std::string name() const override { return "rainbow-pp"; }

  Plan search(const Problem& problem, const SearchBudget& budget) override {
    // Runs = distinct cut sets the agent simulates; always finite (agents/api/search_budget.h).
    const BudgetClock clock(budget, "rainbow-pp", options_.episodes,
                            BudgetClock::Default::kWithoutRunLimit);
    const std::vector<int> devices = problem_devices(problem);
    const int64_t episodes = clock.max_runs();
    const int stages =
        checked_stages(options_, problem, static_cast<int>(devices.size()), episodes);
    PipelineEnvOptions eo;
    eo.stages = stages;
    eo.micro_batches = options_.micro_batches;
    eo.devices = devices;
    eo.prune = options_.prune;
    eo.prune_radius = options_.prune_radius;
    eo.simulate = false;  // terminal cut sets are simulated once, through the cache below
    std::unique_ptr<PipelineEnv> env = first_pipeline_env(problem, options_, eo);
    // Later rounds keep the first env's reference time, so rewards stay comparable.
    eo.reference_time = env->reference_time();

    Best best;
    int64_t evaluations = 0;
    const RainbowConfig cfg =
        rainbow_cut_agent_config(options_, stages, episodes, budget.seed, "rainbow-pp");
    // The observation size (pivots x (S + 3)) and the actions (pivots) do not depend on the
    // layout, so one agent learns across rounds.
    RainbowAgent agent(static_cast<int64_t>(env->observation().size()), env->num_pivots(), cfg);
    const int rounds = options_.search_layout
                           ? static_cast<int>(std::min<int64_t>(options_.layout_rounds, episodes))
                           : 1;
    bool out_of_time = false;
    for (int round = 0; round < rounds && !out_of_time; ++round) {
      if (round > 0) {
        PipelineEnvOptions ro = eo;
        ro.devices.clear();
        ro.groups = best.layout.groups;
        ro.micro_batches = best.layout.micro_batches;
        env = make_pipeline_env(problem, ro);
      }
      const PipelineLayout layout = env->layout();
      // Simulated cut sets of this round's layout: an episode that repeats one reuses its
      // result (and costs no evaluation of the budget).
      std::map<std::vector<int>, PipelineStepResult> cache;
      auto score = [&](const std::vector<int>& cuts) {
        auto it = cache.find(cuts);
        if (it != cache.end()) return CutScore{it->second, false};
        const PipelineStepResult r = env->evaluate(cuts);
        cache.emplace(cuts, r);
        best.offer(cuts, layout, r);
        return CutScore{r, true};
      };
      // The balanced center solution first: the result is never worse than it.
      score(env->center_solution());

      // This round's share of the distinct simulated cut sets (earlier rounds get the rest).
      const int64_t round_episodes = episodes / rounds + (round < episodes % rounds ? 1 : 0);
      // Episodes until the round's cut sets were simulated (at most kMaxRepeat times as many
      // episodes: the agent may keep replaying known plans once it has converged).
      const int64_t done_before = evaluations;
      run_cut_episodes(
          env.get(), &agent, round_episodes, kMaxRepeat * round_episodes, score,
          [&] { return out_of_time = !clock.time_left(); },
          [&](int64_t fresh) {
            evaluations = done_before + fresh;
            if (budget.progress) budget.progress(evaluations, episodes, format_ms(best.time));
          });
      if (!options_.search_layout) break;

      // Layout search on the round's best distinct cut sets (and the best plan's cuts).
      for (const std::vector<int>& cuts : top_cut_sets(cache, options_.layout_top, best)) {
        search_layouts(*env, cuts, layout, best);
      }
      if (budget.progress) budget.progress(evaluations, episodes, format_ms(best.time));
    }
    Plan plan = env->to_plan(best.cuts, best.layout);
    plan.method = name();
    return plan;
  }

 private:
  RainbowPPOptions options_;
};

}  // namespace

RainbowConfig rainbow_cut_agent_config(const RainbowPPOptions& options, int stages,
                                       int64_t episodes, uint64_t seed, const std::string& method) {
  RainbowConfig cfg;
  cfg.hidden = options.hidden;
  // Rewards are reference / step_time (1 = the center solution), oom_penalty -1.
  cfg.v_min = -1.5;
  cfg.v_max = 3.0;
  cfg.batch_size = options.batch_size;
  cfg.replay_capacity = static_cast<std::size_t>(options.replay_capacity);
  cfg.target_update = options.target_update;
  cfg.lr = options.lr;
  cfg.gamma = 1.0;
  cfg.n_step = stages - 1;
  const int64_t steps = episodes * (stages - 1);
  cfg.epsilon_decay_steps = std::max<int64_t>(
      1, static_cast<int64_t>(std::llround(options.epsilon_decay_fraction * steps)));
  cfg.beta_steps = std::max<int64_t>(1, steps);
  cfg.seed = seed;
  const std::string bad = validate_rainbow_config(cfg);
  if (!bad.empty()) throw ValidationError(method + ": " + bad);
  return cfg;
}

int64_t run_cut_episodes(PipelineEnv* env, RainbowAgent* agent, int64_t evaluations,
                         int64_t max_episodes,
                         const std::function<CutScore(const std::vector<int>&)>& score,
                         const std::function<bool()>& stop,
                         const std::function<void(int64_t fresh)>& after_episode) {
  int64_t fresh = 0;
  for (int64_t ep = 0; ep < max_episodes && fresh < evaluations; ++ep) {
    if (stop()) break;
    env->reset();
    PipelineStepResult r;
    while (!env->done()) {
      const std::vector<float> state = env->observation();
      const std::vector<uint8_t> mask = env->action_mask();
      const int a = agent->act(state, mask, /*greedy=*/false);
      r = env->step(a);
      if (r.done) {
        const CutScore sc = score(env->cuts());
        r = sc.result;
        if (sc.fresh) ++fresh;
      }
      // The terminal state's mask allows nothing; the agent ignores it when done.
      std::vector<uint8_t> next_mask = env->action_mask();
      if (r.done) next_mask.assign(next_mask.size(), 1);
      agent->observe(state, a, static_cast<float>(r.reward), env->observation(), r.done, mask,
                     next_mask);
      agent->learn();
    }
    if (after_episode) after_episode(fresh);
  }
  return fresh;
}

std::unique_ptr<Placer> make_rainbow_pp_placer(const RainbowPPOptions& options) {
  return std::make_unique<RainbowPPPlacer>(options);
}

void add_rainbow_methods(std::vector<MethodInfo>* out) {
  out->push_back(with_options(
      MethodInfo{"rainbow-pp",
                 "Auto-MAP pipeline cuts (Wang et al. 2020): Rainbow DQN trained online on the "
                 "graph, best of 300 simulated cut sets and the balanced center solution "
                 "(min(4, devices) stages), then device-group sizes and micro-batches searched "
                 "for the best cut sets (2 rounds)",
                 false, [] { return make_rainbow_pp_placer(RainbowPPOptions{}); }},
      rainbow_pp_method_option_table(), RainbowPPMethodOptions{}, make_rainbow_pp_method));
}

}  // namespace placer
