// The learned `autosync` search (agents/sync/autosync_rl.h): Rainbow DQN over the SyncEnv
// MDP, online, zero-shot from a policy file, and pretraining on a corpus.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "agents/common/outcome.h"
#include "agents/common/rainbow_agent.h"
#include "agents/sync/autosync.h"
#include "agents/sync/autosync_rl.h"
#include "agents/sync/sync_env.h"
#include "datasets/corpus.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"
#include "src/util/files.h"

namespace placer {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// One episode from reset(); training: epsilon-greedy with observe / learn every
/// `learn_every` agent steps; `demo`: these actions instead of the agent's (observed too).
/// Returns the episode's final step time.
double run_episode(SyncEnv& env, RainbowAgent& agent, bool train, int learn_every,
                   double* reward = nullptr, const std::vector<int>* demo = nullptr) {
  env.reset();
  double ret = 0;
  for (size_t t = 0; !env.done(); ++t) {
    const std::vector<float> state = env.observation();
    const std::vector<uint8_t> mask = env.mask();
    const int a = demo ? (*demo)[t] : agent.act(state, mask, /*greedy=*/!train);
    const SyncEnv::StepResult r = env.step(a);
    ret += r.reward;
    if (train) {
      agent.observe(state, a, float(r.reward), env.observation(), r.done, mask, env.mask());
      if (agent.steps() % learn_every == 0) agent.learn();
    }
  }
  if (reward) *reward = ret;
  return env.step_time();
}

void check_agent(const RainbowConfig& c, const std::string& who) {
  const std::string bad = validate_rainbow_config(c);
  if (!bad.empty()) throw ValidationError(who + ": " + bad);
}

class AutosyncRlPlacer : public OutcomePlacer {
 public:
  explicit AutosyncRlPlacer(AutosyncOptions o) : o_(std::move(o)) {}
  std::string name() const override { return "autosync"; }
  SearchOutcome search_outcome(const Problem& p, const SearchBudget& b) override {
    AutosyncReport r = autosync_search(p, b, o_);
    return search_outcome_of(std::move(r.plan), r.simulations, 0, r.seconds,
                             {{"episodes", double(r.episodes)},
                              {"reference_time", r.reference_time},
                              {"learned_time", r.learned_time},
                              {"greedy_time", r.greedy_time}});
  }

 private:
  AutosyncOptions o_;
};

}  // namespace

bool autosync_rl_available() { return true; }

std::unique_ptr<Placer> make_autosync_rl_placer(const AutosyncOptions& o) {
  return std::make_unique<AutosyncRlPlacer>(o);
}

void save_autosync_policy(const RainbowAgent& agent, const std::string& path) {
  agent.save(path);
  std::ostringstream meta;
  meta << "# autosync policy options (agents/sync/autosync_rl.h): the Rainbow agent of " << path
       << "\n# state " << SyncEnv::kStateDim << " features, " << SyncEnv::kNumActions
       << " actions\n"
       << rainbow_config_to_yaml(agent.config());
  write_text_atomic(path + ".yaml", meta.str(), "autosync policy options");
}

std::unique_ptr<RainbowAgent> load_autosync_policy(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw FileError("autosync: policy '" + path +
                    "' not found (train one with placer "
                    "train-policy --agent autosync)");
  }
  const std::string meta = path + ".yaml";
  std::ifstream f(meta);
  if (!f) {
    throw FileError("autosync: '" + meta + "' (the policy's options) not found next to '" + path +
                    "'; not an autosync policy");
  }
  std::stringstream text;
  text << f.rdbuf();
  RainbowConfig c = autosync_agent_defaults();
  rainbow_config_from_yaml(text.str(), &c, meta);
  check_agent(c, "autosync: " + meta);
  auto agent = std::make_unique<RainbowAgent>(SyncEnv::kStateDim, SyncEnv::kNumActions, c);
  agent->load(path);  // FormatError when the sizes are not an autosync policy's
  return agent;
}

AutosyncReport autosync_search(const Problem& p, const SearchBudget& budget,
                               const AutosyncOptions& o) {
  if (o.units < 1)
    throw ValidationError("autosync: units must be >= 1, got " + std::to_string(o.units));
  if (!(o.polish >= 0 && o.polish <= 1)) {
    throw ValidationError("autosync: polish must be in [0, 1], got " + std::to_string(o.polish));
  }
  if (o.learn_every < 1) {
    throw ValidationError("autosync: learn_every must be >= 1, got " +
                          std::to_string(o.learn_every));
  }
  if (o.episodes < 0) {
    throw ValidationError("autosync: episodes must be >= 0, got " + std::to_string(o.episodes));
  }
  if (o.demo_every < 0) {
    throw ValidationError("autosync: demo_every must be >= 0, got " + std::to_string(o.demo_every));
  }
  const BudgetClock clock(budget, "autosync", kAutosyncDefaultEvals);
  std::unique_ptr<RainbowAgent> agent;
  if (!o.policy.empty()) agent = load_autosync_policy(o.policy);  // before any simulation

  SyncEnvOptions eo;
  eo.max_units = o.units;
  eo.allow_compression = budget.allow_compression;
  eo.max_staleness = budget.max_staleness;
  SyncEnv env(p, eo);

  // Runs for the learning part: the rest go to the polish (time shares without a run limit).
  const int64_t max_runs = clock.max_runs();
  const int64_t polish_runs = max_runs > 0 ? int64_t(std::floor(o.polish * double(max_runs))) : 0;
  auto learning_over = [&] {
    if (max_runs > 0 && env.simulations() + polish_runs + 1 >= max_runs) return true;
    return clock.max_seconds() > 0 && clock.elapsed() >= (1 - o.polish) * clock.max_seconds();
  };
  const int64_t planned = o.episodes > 0 ? o.episodes
                          : max_runs > 0
                              ? std::max<int64_t>(1, max_runs - polish_runs - env.simulations() - 1)
                              : 300;
  if (!agent) {
    RainbowConfig c = o.agent;
    c.seed = budget.seed;
    if (c.epsilon_decay_steps == autosync_agent_defaults().epsilon_decay_steps) {
      // Explore over the first 60 % of the planned steps.
      c.epsilon_decay_steps = std::max<int64_t>(1, int64_t(0.6 * double(planned * env.units())));
    }
    check_agent(c, "autosync");
    agent = std::make_unique<RainbowAgent>(SyncEnv::kStateDim, SyncEnv::kNumActions, c);
  }

  AutosyncReport rep;
  rep.reference_time = env.reference_time();
  double best = kInf;
  std::vector<int> best_actions;
  auto offer = [&](double t) {
    if (best_actions.empty() || t < best) best = t, best_actions = env.actions();
  };
  const bool zero_shot = !o.policy.empty();
  if (zero_shot) {
    rep.greedy_time = run_episode(env, *agent, false, o.learn_every);
    offer(rep.greedy_time);
  }
  const int64_t train_episodes = zero_shot ? o.episodes : planned;
  const std::vector<int> demo = env.reference_actions();
  for (int64_t ep = 0; ep < train_episodes && !learning_over(); ++ep) {
    const bool is_demo = o.demo_every > 0 && ep % o.demo_every == 0;
    offer(run_episode(env, *agent, true, o.learn_every, nullptr, is_demo ? &demo : nullptr));
    ++rep.episodes;
    if (budget.progress) budget.progress(ep + 1, train_episodes, "");
  }
  if (!zero_shot || rep.episodes > 0) {
    rep.greedy_time = run_episode(env, *agent, false, o.learn_every);
    offer(rep.greedy_time);
  }
  rep.learned_time = best;

  // The learned plan against the best builder, then the polish.
  SynchronizationConfig start = env.config_of(best_actions);
  double start_time = best;
  rep.source = "learned";
  if (!(best <= env.reference_time())) {
    start = env.reference_config();
    start_time = env.reference_time();
    rep.source = "builder";
  }
  int64_t sims = env.simulations();
  rep.step_time = start_time;
  if (o.polish > 0 && !clock.exhausted(sims)) {
    SearchBudget rest = budget;
    rest.max_evaluations = max_runs > 0 ? max_runs - sims : 0;
    rest.max_seconds =
        clock.max_seconds() > 0 ? std::max(clock.max_seconds() - clock.elapsed(), 1e-3) : 0;
    if (rest.max_evaluations > 0 || rest.max_seconds > 0) {
      // sync_step_time counts an OOM plan as 1000 x its time; the start is comparable.
      const CoordinateDescentResult d = autosync_coordinate_descent(
          p, rest, start, std::isfinite(start_time) ? start_time : kInf);
      sims += d.evaluations;
      if (d.step_time < start_time) rep.source = "polish";
      start = d.config;
      rep.step_time = d.step_time;
    }
  }
  rep.plan = env.plan();
  rep.plan.synchronization = start;
  rep.simulations = sims;
  rep.seconds = clock.elapsed();
  return rep;
}

AutosyncTrainResult autosync_train(const AutosyncTrainOptions& o) {
  const auto wall0 = std::chrono::steady_clock::now();
  const std::clock_t cpu0 = std::clock();
  if (o.corpus.empty()) throw ValidationError("autosync train: corpus: required (a *.corpus.yaml)");
  if (o.clusters.empty())
    throw ValidationError("autosync train: --cluster: at least one cluster file");
  if (o.episodes < 1) {
    throw ValidationError("autosync train: episodes must be >= 1, got " +
                          std::to_string(o.episodes));
  }
  if (o.output.empty()) throw ValidationError("autosync train: no output policy path");
  if (o.units < 1 || o.learn_every < 1 || o.max_staleness < 0 || o.demo_every < 0) {
    throw ValidationError(
        "autosync train: units and learn_every must be >= 1, max_staleness and demo_every >= 0");
  }
  Split split;
  if (!parse_split(o.split, &split)) {
    throw ValidationError("autosync train: split must be train, val or test, got '" + o.split +
                          "'");
  }
  const Corpus corpus = load_corpus(o.corpus);
  std::vector<size_t> idx;
  for (size_t i : corpus.indices(split)) {
    const CorpusEntry& e = corpus.entries[i];
    if (e.has_tag("large") || (e.ops >= 0 && e.ops > o.max_ops)) continue;
    idx.push_back(i);
  }
  std::mt19937_64 rng(o.seed);
  for (size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[rng() % i]);
  if (o.graphs > 0 && idx.size() > size_t(o.graphs)) idx.resize(size_t(o.graphs));
  if (idx.empty()) {
    throw ValidationError("autosync train: no graph of split " + o.split + " in " + o.corpus +
                          " has <= " + std::to_string(o.max_ops) + " ops");
  }

  // Problems: every chosen graph on every cluster.
  struct Holder {
    Graph graph;
    std::unique_ptr<Cluster> cluster;
    std::unique_ptr<CostModel> cost;
    std::unique_ptr<Simulator> sim;
    std::unique_ptr<Problem> problem;
    std::unique_ptr<SyncEnv> env;
  };
  std::vector<Cluster> clusters;
  for (const std::string& c : o.clusters) clusters.push_back(load_cluster_yaml(c));
  std::vector<std::unique_ptr<Holder>> hs;
  SyncEnvOptions eo;
  eo.max_units = o.units;
  eo.allow_compression = o.allow_compression;
  eo.max_staleness = o.max_staleness;
  double mean_units = 0;
  for (size_t i : idx) {
    Graph g = corpus.load_graph(i);
    if (!g.is_training_step()) g = expand_training_step(g);
    if (sync_variables(g).empty()) continue;
    for (const Cluster& c : clusters) {
      auto h = std::make_unique<Holder>();
      h->graph = g;
      h->cluster = std::make_unique<Cluster>(c);
      h->cost = std::make_unique<CostModel>(*h->cluster, default_profile());
      h->sim = std::make_unique<Simulator>(h->graph, *h->cluster, *h->cost);
      h->problem = std::make_unique<Problem>(Problem{h->graph, *h->cluster, *h->cost, *h->sim, {}});
      h->env = std::make_unique<SyncEnv>(*h->problem, eo);
      mean_units += h->env->units();
      hs.push_back(std::move(h));
    }
  }
  if (hs.empty()) throw ValidationError("autosync train: no graph with trainable variables");
  mean_units /= double(hs.size());

  RainbowConfig c = o.agent;
  c.seed = o.seed;
  if (c.epsilon_decay_steps == autosync_agent_defaults().epsilon_decay_steps) {
    c.epsilon_decay_steps = std::max<int64_t>(1, int64_t(0.6 * double(o.episodes) * mean_units));
  }
  check_agent(c, "autosync train");
  RainbowAgent agent(SyncEnv::kStateDim, SyncEnv::kNumActions, c);

  AutosyncTrainResult res;
  res.problems = int(hs.size());
  std::vector<double> last;
  for (int64_t ep = 0; ep < o.episodes; ++ep) {
    SyncEnv& env = *hs[size_t(rng() % hs.size())]->env;
    double reward = 0;
    const bool is_demo = o.demo_every > 0 && ep % o.demo_every == 0;
    const std::vector<int> demo = is_demo ? env.reference_actions() : std::vector<int>{};
    run_episode(env, agent, true, o.learn_every, &reward, is_demo ? &demo : nullptr);
    last.push_back(reward);
    if (last.size() > 100) last.erase(last.begin());
    ++res.episodes;
    double mean = 0;
    for (double r : last) mean += r;
    res.mean_reward = mean / double(last.size());
    if (o.progress) o.progress(ep + 1, o.episodes, res.mean_reward);
    if (o.should_stop && o.should_stop()) break;
  }
  for (const auto& h : hs) res.simulations += h->env->simulations();
  save_autosync_policy(agent, o.output);
  res.policy = o.output;
  res.cpu_seconds = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  res.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

}  // namespace placer
