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

namespace {

void check_search_options(const AutosyncOptions& o) {
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
}

/// A new agent with options `c` seeded with `seed`; unless the options set their own epsilon
/// decay, it explores over the first 60 % of the `planned_steps` agent steps.
std::unique_ptr<RainbowAgent> make_agent(RainbowConfig c, uint64_t seed, double planned_steps,
                                         const std::string& who) {
  c.seed = seed;
  if (c.epsilon_decay_steps == autosync_agent_defaults().epsilon_decay_steps) {
    c.epsilon_decay_steps = std::max<int64_t>(1, int64_t(0.6 * planned_steps));
  }
  check_agent(c, who);
  return std::make_unique<RainbowAgent>(SyncEnv::kStateDim, SyncEnv::kNumActions, c);
}

/// The learning part of the search budget: the runs the polish share leaves (the time share
/// without a run limit).
class LearningShare {
 public:
  LearningShare(const BudgetClock& clock, double polish)
      : clock_(clock),
        polish_(polish),
        polish_runs_(clock.max_runs() > 0 ? int64_t(std::floor(polish * double(clock.max_runs())))
                                          : 0) {}
  /// Whether the learning part is spent after `simulations` runs.
  bool over(int64_t simulations) const {
    const int64_t max_runs = clock_.max_runs();
    if (max_runs > 0 && simulations + polish_runs_ + 1 >= max_runs) return true;
    return clock_.max_seconds() > 0 && clock_.elapsed() >= (1 - polish_) * clock_.max_seconds();
  }
  /// Training episodes when the options give none: one per run left for learning after
  /// `simulations` (the greedy episode kept aside), 300 without a run limit.
  int64_t episodes(int64_t simulations) const {
    const int64_t max_runs = clock_.max_runs();
    return max_runs > 0 ? std::max<int64_t>(1, max_runs - polish_runs_ - simulations - 1) : 300;
  }

 private:
  const BudgetClock& clock_;
  double polish_;
  int64_t polish_runs_;
};

/// The fastest episode seen: its actions and final step time.
struct BestEpisode {
  double time = kInf;
  std::vector<int> actions;
  void offer(const SyncEnv& env, double t) {
    if (actions.empty() || t < time) time = t, actions = env.actions();
  }
};

/// The learning part of autosync_search: with a policy its greedy episode first, then the
/// training episodes while the learning share lasts, then a greedy episode of the trained
/// agent. Fills rep's episodes, greedy_time and learned_time.
BestEpisode learn_online(SyncEnv& env, RainbowAgent& agent, const AutosyncOptions& o,
                         const SearchBudget& budget, const LearningShare& share, int64_t planned,
                         AutosyncReport* rep) {
  BestEpisode best;
  const bool zero_shot = !o.policy.empty();
  if (zero_shot) {
    rep->greedy_time = run_episode(env, agent, false, o.learn_every);
    best.offer(env, rep->greedy_time);
  }
  const int64_t train_episodes = zero_shot ? o.episodes : planned;
  const std::vector<int> demo = env.reference_actions();
  for (int64_t ep = 0; ep < train_episodes && !share.over(env.simulations()); ++ep) {
    const bool is_demo = o.demo_every > 0 && ep % o.demo_every == 0;
    best.offer(env,
               run_episode(env, agent, true, o.learn_every, nullptr, is_demo ? &demo : nullptr));
    ++rep->episodes;
    if (budget.progress) budget.progress(ep + 1, train_episodes, "");
  }
  if (!zero_shot || rep->episodes > 0) {
    rep->greedy_time = run_episode(env, agent, false, o.learn_every);
    best.offer(env, rep->greedy_time);
  }
  rep->learned_time = best.time;
  return best;
}

/// The end of autosync_search: the better of the learned plan and the best builder, polished
/// by coordinate descent with the rest of the budget when the options give the polish a
/// share. Fills rep's plan, step_time, source and simulations.
void polish_best(const Problem& p, const SearchBudget& budget, const BudgetClock& clock,
                 const AutosyncOptions& o, const SyncEnv& env, const BestEpisode& best,
                 AutosyncReport* rep) {
  SynchronizationConfig start = env.config_of(best.actions);
  double start_time = best.time;
  rep->source = "learned";
  if (!(best.time <= env.reference_time())) {
    start = env.reference_config();
    start_time = env.reference_time();
    rep->source = "builder";
  }
  int64_t sims = env.simulations();
  rep->step_time = start_time;
  if (o.polish > 0 && !clock.exhausted(sims)) {
    SearchBudget rest = budget;
    rest.max_evaluations = clock.max_runs() > 0 ? clock.max_runs() - sims : 0;
    rest.max_seconds =
        clock.max_seconds() > 0 ? std::max(clock.max_seconds() - clock.elapsed(), 1e-3) : 0;
    if (rest.max_evaluations > 0 || rest.max_seconds > 0) {
      // sync_step_time counts an OOM plan as 1000 x its time; the start is comparable.
      const CoordinateDescentResult d = autosync_coordinate_descent(
          p, rest, start, std::isfinite(start_time) ? start_time : kInf);
      sims += d.evaluations;
      if (d.step_time < start_time) rep->source = "polish";
      start = d.config;
      rep->step_time = d.step_time;
    }
  }
  rep->plan = env.plan();
  rep->plan.synchronization = start;
  rep->simulations = sims;
}

/// Checks the pretraining options; returns the split to train on.
Split check_train_options(const AutosyncTrainOptions& o) {
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
  return split;
}

/// The corpus entries to train on: the split's graphs up to max_ops (none tagged large), in a
/// seeded random order, at most o.graphs of them. ValidationError when none is left.
std::vector<size_t> choose_graphs(const Corpus& corpus, Split split, const AutosyncTrainOptions& o,
                                  std::mt19937_64& rng) {
  std::vector<size_t> idx;
  for (size_t i : corpus.indices(split)) {
    const CorpusEntry& e = corpus.entries[i];
    if (e.has_tag("large") || (e.ops >= 0 && e.ops > o.max_ops)) continue;
    idx.push_back(i);
  }
  for (size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[rng() % i]);
  if (o.graphs > 0 && idx.size() > size_t(o.graphs)) idx.resize(size_t(o.graphs));
  if (idx.empty()) {
    throw ValidationError("autosync train: no graph of split " + o.split + " in " + o.corpus +
                          " has <= " + std::to_string(o.max_ops) + " ops");
  }
  return idx;
}

/// The pretraining problems: every chosen graph (with trainable variables) on every cluster,
/// each with its SyncEnv.
class TrainProblems {
 public:
  TrainProblems(const Corpus& corpus, const std::vector<size_t>& idx,
                const AutosyncTrainOptions& o) {
    std::vector<Cluster> clusters;
    for (const std::string& c : o.clusters) clusters.push_back(load_cluster_yaml(c));
    SyncEnvOptions eo;
    eo.max_units = o.units;
    eo.allow_compression = o.allow_compression;
    eo.max_staleness = o.max_staleness;
    for (size_t i : idx) {
      Graph g = corpus.load_graph(i);
      if (!g.is_training_step()) g = expand_training_step(g);
      if (sync_variables(g).empty()) continue;
      for (const Cluster& c : clusters) add(g, c, eo);
    }
    if (hs_.empty()) throw ValidationError("autosync train: no graph with trainable variables");
  }
  size_t size() const { return hs_.size(); }
  SyncEnv& env(size_t i) { return *hs_[i]->env; }
  double mean_units() const {
    double units = 0;
    for (const auto& h : hs_) units += h->env->units();
    return units / double(hs_.size());
  }
  int64_t simulations() const {
    int64_t n = 0;
    for (const auto& h : hs_) n += h->env->simulations();
    return n;
  }

 private:
  // One problem and what it refers to (kept in place: the simulator and env hold references).
  struct Holder {
    Graph graph;
    std::unique_ptr<Cluster> cluster;
    std::unique_ptr<CostModel> cost;
    std::unique_ptr<Simulator> sim;
    std::unique_ptr<Problem> problem;
    std::unique_ptr<SyncEnv> env;
  };
  void add(const Graph& g, const Cluster& c, const SyncEnvOptions& eo) {
    auto h = std::make_unique<Holder>();
    h->graph = g;
    h->cluster = std::make_unique<Cluster>(c);
    h->cost = std::make_unique<CostModel>(*h->cluster, default_profile());
    h->sim = std::make_unique<Simulator>(h->graph, *h->cluster, *h->cost);
    h->problem = std::make_unique<Problem>(Problem{h->graph, *h->cluster, *h->cost, *h->sim, {}});
    h->env = std::make_unique<SyncEnv>(*h->problem, eo);
    hs_.push_back(std::move(h));
  }
  std::vector<std::unique_ptr<Holder>> hs_;
};

/// The pretraining episodes: each on a problem drawn by `rng`, every demo_every-th one a
/// demonstration of the problem's best builder; stops early when o.should_stop says so.
AutosyncTrainResult train_on_problems(TrainProblems& problems, RainbowAgent& agent,
                                      const AutosyncTrainOptions& o, std::mt19937_64& rng) {
  AutosyncTrainResult res;
  res.problems = int(problems.size());
  std::vector<double> last;  // rewards of the last 100 episodes
  for (int64_t ep = 0; ep < o.episodes; ++ep) {
    SyncEnv& env = problems.env(size_t(rng() % problems.size()));
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
  res.simulations = problems.simulations();
  return res;
}

}  // namespace

AutosyncReport autosync_search(const Problem& p, const SearchBudget& budget,
                               const AutosyncOptions& o) {
  check_search_options(o);
  const BudgetClock clock(budget, "autosync", kAutosyncDefaultEvals);
  std::unique_ptr<RainbowAgent> agent;
  if (!o.policy.empty()) agent = load_autosync_policy(o.policy);  // before any simulation

  SyncEnvOptions eo;
  eo.max_units = o.units;
  eo.allow_compression = budget.allow_compression;
  eo.max_staleness = budget.max_staleness;
  SyncEnv env(p, eo);

  const LearningShare share(clock, o.polish);
  const int64_t planned = o.episodes > 0 ? o.episodes : share.episodes(env.simulations());
  if (!agent) {
    agent = make_agent(o.agent, budget.seed, double(planned * env.units()), "autosync");
  }
  AutosyncReport rep;
  rep.reference_time = env.reference_time();
  const BestEpisode best = learn_online(env, *agent, o, budget, share, planned, &rep);
  polish_best(p, budget, clock, o, env, best, &rep);
  rep.seconds = clock.elapsed();
  return rep;
}

AutosyncTrainResult autosync_train(const AutosyncTrainOptions& o) {
  const auto wall0 = std::chrono::steady_clock::now();
  const std::clock_t cpu0 = std::clock();
  const Split split = check_train_options(o);
  const Corpus corpus = load_corpus(o.corpus);
  std::mt19937_64 rng(o.seed);
  const std::vector<size_t> idx = choose_graphs(corpus, split, o, rng);
  TrainProblems problems(corpus, idx, o);
  const std::unique_ptr<RainbowAgent> agent =
      make_agent(o.agent, o.seed, double(o.episodes) * problems.mean_units(), "autosync train");

  AutosyncTrainResult res = train_on_problems(problems, *agent, o, rng);
  save_autosync_policy(*agent, o.output);
  res.policy = o.output;
  res.cpu_seconds = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  res.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

}  // namespace placer
