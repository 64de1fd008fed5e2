// The "rainbow-pp" placer (agents/rainbow_pp.h): online Rainbow DQN over PipelineEnv.
#include "agents/rainbow_pp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agents/methods.h"
#include "agents/rainbow_agent.h"
#include "env/pipeline_env.h"
#include "src/util/error.h"

namespace placer {
namespace {

using Clock = std::chrono::steady_clock;

/// Episodes per budgeted evaluation at most (repeated cut sets are not simulated again).
constexpr int64_t kMaxRepeat = 4;

/// A scored cut set: any plan that fits beats every OOM one, then the lower step time.
struct Best {
  std::vector<int> cuts;
  double time = std::numeric_limits<double>::infinity();
  bool oom = true;
  bool valid = false;

  void offer(const std::vector<int>& c, const PipelineStepResult& r) {
    const bool better = !valid || (oom && !r.oom) || (oom == r.oom && r.step_time < time);
    if (!better) return;
    cuts = c;
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

class RainbowPPPlacer : public Placer {
 public:
  explicit RainbowPPPlacer(RainbowPPOptions options) : options_(std::move(options)) {}

  std::string name() const override { return "rainbow-pp"; }

  Plan search(const Problem& problem, const SearchBudget& budget) override {
    const auto t0 = Clock::now();
    const std::vector<int> devices = problem_devices(problem);
    const int n = static_cast<int>(devices.size());
    if (!problem.graph.is_training_step()) {
      throw ValidationError(
          "rainbow-pp: the graph must be a training step (forward, backward "
          "and optimizer ops); expand it first");
    }
    int stages = options_.stages;
    if (stages == 0) stages = std::min(4, n);
    if (stages < 2 || stages > n) {
      throw ValidationError("rainbow-pp: stages must be in [2, " + std::to_string(n) +
                            "] (the number of devices), got " + std::to_string(stages));
    }
    if (options_.micro_batches < 0) {
      throw ValidationError("rainbow-pp: micro_batches must be >= 0, got " +
                            std::to_string(options_.micro_batches));
    }
    const int64_t episodes =
        budget.max_evaluations > 0 ? budget.max_evaluations : options_.episodes;
    if (episodes < 1) {
      throw ValidationError("rainbow-pp: episodes must be >= 1, got " + std::to_string(episodes));
    }
    if (!(options_.epsilon_decay_fraction > 0 && options_.epsilon_decay_fraction <= 1)) {
      throw ValidationError("rainbow-pp: epsilon_decay_fraction must be in (0, 1]");
    }

    PipelineEnvOptions eo;
    eo.stages = stages;
    eo.micro_batches = options_.micro_batches;
    eo.devices = devices;
    eo.prune = options_.prune;
    eo.prune_radius = options_.prune_radius;
    eo.simulate = false;  // terminal cut sets are simulated once, through the cache below
    PipelineEnv env(problem.graph, problem.cluster, problem.cost, eo);

    // Simulated cut sets: an episode that repeats one reuses its result (and costs no
    // evaluation of the budget).
    std::map<std::vector<int>, PipelineStepResult> cache;
    int64_t evaluations = 0;
    Best best;
    auto score = [&](const std::vector<int>& cuts) {
      auto it = cache.find(cuts);
      if (it != cache.end()) return it->second;
      const PipelineStepResult r = env.evaluate(cuts);
      cache.emplace(cuts, r);
      best.offer(cuts, r);
      return r;
    };
    // The balanced center solution first: the result is never worse than it.
    score(env.center_solution());

    RainbowConfig cfg;
    cfg.hidden = options_.hidden;
    // Rewards are reference / step_time (1 = the center solution), oom_penalty -1.
    cfg.v_min = -1.5;
    cfg.v_max = 3.0;
    cfg.batch_size = options_.batch_size;
    cfg.replay_capacity = static_cast<std::size_t>(options_.replay_capacity);
    cfg.target_update = options_.target_update;
    cfg.lr = options_.lr;
    cfg.gamma = 1.0;
    cfg.n_step = stages - 1;
    const int64_t steps = episodes * (stages - 1);
    cfg.epsilon_decay_steps = std::max<int64_t>(
        1, static_cast<int64_t>(std::llround(options_.epsilon_decay_fraction * steps)));
    cfg.beta_steps = std::max<int64_t>(1, steps);
    cfg.seed = budget.seed;
    const std::string bad = validate_rainbow_config(cfg);
    if (!bad.empty()) throw ValidationError("rainbow-pp: " + bad);

    RainbowAgent agent(static_cast<int64_t>(env.observation().size()), env.num_pivots(), cfg);
    // Episodes until `episodes` distinct cut sets were simulated (at most kMaxRepeat times as
    // many episodes: the agent may keep replaying known plans once it has converged).
    const int64_t max_episodes = kMaxRepeat * episodes;
    for (int64_t ep = 0; ep < max_episodes && evaluations < episodes; ++ep) {
      if (budget.max_seconds > 0 &&
          std::chrono::duration<double>(Clock::now() - t0).count() >= budget.max_seconds) {
        break;
      }
      env.reset();
      PipelineStepResult r;
      while (!env.done()) {
        const std::vector<float> state = env.observation();
        const std::vector<uint8_t> mask = env.action_mask();
        const int a = agent.act(state, mask, /*greedy=*/false);
        r = env.step(a);
        if (r.done) {
          const bool fresh = cache.find(env.cuts()) == cache.end();
          r = score(env.cuts());
          if (fresh) ++evaluations;
        }
        // The terminal state's mask allows nothing; the agent ignores it when done.
        std::vector<uint8_t> next_mask = env.action_mask();
        if (r.done) next_mask.assign(next_mask.size(), 1);
        agent.observe(state, a, static_cast<float>(r.reward), env.observation(), r.done, mask,
                      next_mask);
        agent.learn();
      }
      if (budget.progress) budget.progress(evaluations, episodes, format_ms(best.time));
    }
    Plan plan = env.to_plan(best.cuts);
    plan.method = name();
    return plan;
  }

 private:
  RainbowPPOptions options_;
};

}  // namespace

std::unique_ptr<Placer> make_rainbow_pp_placer(const RainbowPPOptions& options) {
  return std::make_unique<RainbowPPPlacer>(options);
}

void add_rainbow_methods(std::vector<MethodInfo>* out) {
  out->push_back(MethodInfo{
      "rainbow-pp",
      "Auto-MAP pipeline cuts (Wang et al. 2020): Rainbow DQN trained online on the graph, "
      "best of 300 simulated cut sets and the balanced center solution (min(4, devices) stages)",
      false, [] { return make_rainbow_pp_placer(RainbowPPOptions{}); }});
}

}  // namespace placer
