// Pretrained rainbow-pp (agents/rainbow/rainbow_pp_policy.h): training on generated array problems,
// checkpoints, held-out / real-graph evaluation and zero-shot inference.
#include "agents/rainbow/rainbow_pp_policy.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <utility>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/utils.h>

#include "agents/common/policy_file.h"
#include "agents/common/rainbow_agent.h"
#include "agents/common/training_run.h"
#include "env/pipeline_arrays.h"
#include "env/pipeline_env.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/io/graph_json.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"
#include "src/util/files.h"

namespace placer {
namespace {

namespace fs = std::filesystem;
using Json = policy_file::Json;
using Clock = std::chrono::steady_clock;

constexpr const char* kFormat = "placer-rainbow-pp-policy";

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
uint64_t train_seed(uint64_t seed, int64_t update, int index) {
  return splitmix(splitmix(seed) ^ splitmix(static_cast<uint64_t>(update) * 1000003ULL +
                                            static_cast<uint64_t>(index)));
}
uint64_t heldout_seed(uint64_t seed, int index) {
  return splitmix(splitmix(seed ^ 0xA5A5A5A5DEADBEEFULL) + 0x1234567ULL * static_cast<uint64_t>(index + 1));
}

ArrayGenOptions gen_options(const RainbowPPTrainConfig& c) {
  ArrayGenOptions o;
  o.stages = c.stages;
  o.max_devices = c.max_devices;
  o.min_positions = c.min_positions;
  o.max_positions = c.max_positions;
  o.distributions = c.distributions;
  return o;
}

RainbowConfig agent_config(const RainbowConfig& base, int stages, uint64_t seed) {
  RainbowConfig r = base;
  r.gamma = 1.0;          // terminal reward only
  r.n_step = stages - 1;  // one episode
  r.seed = seed;
  return r;
}

/// The policy's net only (no target, optimizer or counters): what inference needs.
void load_net(RainbowAgent& agent, const std::string& path) {
  torch::serialize::InputArchive archive = policy_file::load_archive(path, "rainbow-pp policy");
  policy_file::read_module(archive, *agent.net(), path, "");
}

std::string state_layout(int S, int N) {
  return "C'[128], A'[128], W'[128], cut flags[128], bandwidth[" + std::to_string(N) + "x" +
         std::to_string(N) + "], stage devices / " + std::to_string(N) + " [" + std::to_string(S) +
         "], micro_batches / (4 S), cuts taken / (S - 1)";
}

/// What a resumed run must share with its checkpoint (keys of the sidecar, meta_json).
Fingerprint resume_fingerprint(const RainbowPPTrainConfig& c) {
  return Fingerprint{{"stages", c.stages}, {"max_devices", c.max_devices}};
}

Json meta_json(const RainbowPPTrainConfig& c, const RainbowConfig& rc, int64_t update,
               const std::string& kind, double heldout) {
  Json j;
  j["format"] = kFormat;
  j["format_version"] = 1;
  j["kind"] = kind;  // "checkpoint" (full agent) or "policy" (net only)
  j["stages"] = c.stages;
  j["max_devices"] = c.max_devices;
  j["coarse_points"] = kCoarsePoints;
  j["num_actions"] = kCutActions;
  j["state_dim"] = ArrayPipelineEnv::state_dim(c.stages, c.max_devices);
  j["state_layout"] = state_layout(c.stages, c.max_devices);
  j["update"] = update;
  j["updates"] = c.updates;
  j["seed"] = c.seed;
  j["heldout_mean_reward"] = heldout;
  j["rainbow"] = rainbow_config_to_yaml(rc);
  j["command"] = c.command;
  return j;
}

/// A greedy rollout (or top-k sampled when rng is given) on an array env; returns the cuts.
std::vector<int> rollout(RainbowAgent& agent, ArrayPipelineEnv& env, std::mt19937_64* rng,
                         int top_k) {
  env.reset();
  while (!env.done()) {
    int a;
    if (!rng) {
      a = agent.act(env.observation(), env.action_mask(), /*greedy=*/true);
    } else {
      const std::vector<float> q = agent.q_values(env.observation());
      std::vector<int> legal;
      for (int j = 0; j < kCutActions; ++j) {
        if (env.action_mask()[static_cast<size_t>(j)]) legal.push_back(j);
      }
      std::sort(legal.begin(), legal.end(), [&q](int x, int y) {
        return q[static_cast<size_t>(x)] > q[static_cast<size_t>(y)] ||
               (q[static_cast<size_t>(x)] == q[static_cast<size_t>(y)] && x < y);
      });
      const size_t k = std::min(legal.size(), static_cast<size_t>(std::max(1, top_k)));
      a = legal[static_cast<size_t>((*rng)() % k)];
    }
    env.step(a);
  }
  return env.cuts();
}

// ------------------------------------------------------------------------ inference ----

struct InferenceResult {
  Plan plan;
  RainbowPPInferenceInfo info;
};

/// A scored plan of the inference: cuts (pivot indices) and layout.
struct ScoredCuts {
  std::vector<int> cuts;
  PipelineLayout layout;
  PipelineStepResult r;
};

/// Any plan that fits beats every OOM one, then the lower step time.
bool better(const PipelineStepResult& a, const PipelineStepResult& b) {
  return (!a.oom && b.oom) || (a.oom == b.oom && a.step_time < b.step_time);
}

/// The problem as the policy sees it: its arrays coarsened to the env's pivots, A and W in
/// seconds over the fastest link, so one MAX fits all three.
ArrayProblem array_problem_of(const Problem& problem, const PipelineEnv& env,
                              const std::vector<int>& devices) {
  const int F = static_cast<int>(env.forward_order().size());
  PositionArrays raw =
      graph_position_arrays(problem.graph, problem.cost, env.position_of_op(), F, devices[0]);
  double peak = 1;
  ArrayTopology topo = cost_topology(problem.cluster, problem.cost, devices, &peak);
  for (double& x : raw.activation) x /= peak;
  for (double& x : raw.params) x /= peak;
  ArrayProblem ap;
  ap.arrays = coarsen_arrays(raw, env.pivots());
  ap.topology = std::move(topo);
  for (const auto& g : env.device_groups()) ap.stage_devices.push_back(static_cast<int>(g.size()));
  ap.micro_batches = env.micro_batches();
  return ap;
}

/// The policy's greedy cuts and o.samples top-k sampled ones, each distinct cut set
/// simulated on the env's layout; `best` becomes the best of them when it beats it.
void try_policy_cuts(RainbowAgent& agent, ArrayProblem ap, int N, PipelineEnv& env,
                     const PipelineLayout& fixed, const RainbowPPPolicyOptions& o, uint64_t seed,
                     ScoredCuts& best, RainbowPPInferenceInfo& info) {
  std::map<int, int> pivot_of_pos;
  for (int i = 0; i < env.num_pivots(); ++i) pivot_of_pos[env.pivots()[static_cast<size_t>(i)]] = i;
  ArrayPipelineEnv aenv(std::move(ap), N);
  std::set<std::vector<int>> seen;
  std::mt19937_64 rng(splitmix(seed));
  for (int r = 0; r <= std::max(0, o.samples); ++r) {
    const std::vector<int> coarse = rollout(agent, aenv, r == 0 ? nullptr : &rng, o.top_k);
    std::vector<int> cuts;
    for (int c : coarse)
      cuts.push_back(pivot_of_pos.at(aenv.problem().arrays.boundary[static_cast<size_t>(c)]));
    if (!seen.insert(cuts).second) continue;
    const PipelineStepResult pr = env.evaluate(cuts);
    if (r == 0) {
      info.coarse_cuts = coarse;
      info.pivot_cuts = cuts;
      info.policy_time = pr.step_time;
      info.policy_oom = pr.oom;
    }
    if (better(pr, best.r)) {
      best = ScoredCuts{cuts, fixed, pr};
      info.used_policy = true;
    }
  }
}

/// The winner's and the center's cuts on other device groups and micro-batch counts.
void try_layouts(PipelineEnv& env, const PipelineLayout& fixed, const ScoredCuts& center,
                 ScoredCuts& best, RainbowPPInferenceInfo& info) {
  std::vector<std::vector<int>> cut_sets{best.cuts};
  if (best.cuts != center.cuts) cut_sets.push_back(center.cuts);
  for (const std::vector<int>& cuts : cut_sets) {
    std::vector<std::vector<std::vector<int>>> group_sets{fixed.groups, env.best_groups(cuts),
                                                          env.proportional_groups(cuts)};
    for (const auto& groups : group_sets) {
      for (int m : env.micro_batch_candidates(groups)) {
        const PipelineLayout l{groups, m};
        const PipelineStepResult pr = env.evaluate(cuts, l);
        if (better(pr, best.r)) {
          best = ScoredCuts{cuts, l, pr};
          info.used_policy = cuts != center.cuts;
          info.layout_changed = true;
        }
      }
    }
  }
}

InferenceResult infer(RainbowAgent& agent, int S, int N, const Problem& problem,
                      const RainbowPPPolicyOptions& o, uint64_t seed) {
  const std::vector<int> devices = problem_devices(problem);
  const int n = static_cast<int>(devices.size());
  if (!problem.graph.is_training_step()) {
    throw ValidationError(
        "rainbow-pp: the graph must be a training step (forward, backward and optimizer ops); "
        "expand it first");
  }
  if (n < S) {
    throw ValidationError("rainbow-pp: the policy was trained for " + std::to_string(S) +
                          " stages, the problem has only " + std::to_string(n) + " devices");
  }
  PipelineEnvOptions eo;
  eo.stages = S;
  eo.devices = devices;
  eo.micro_batches = o.micro_batches;
  eo.prune = false;
  eo.simulate = false;
  PipelineEnv env(problem.graph, problem.cluster, problem.cost, eo);

  InferenceResult res;
  RainbowPPInferenceInfo& info = res.info;
  info.positions = static_cast<int>(env.forward_order().size());
  info.pivots = env.num_pivots();
  ArrayProblem ap = array_problem_of(problem, env, devices);

  const PipelineLayout fixed = env.layout();
  const ScoredCuts center{env.center_solution(), fixed, env.evaluate(env.center_solution())};
  info.center_time = center.r.step_time;
  ScoredCuts best = center;
  info.used_policy = false;
  int allowed = 0;
  for (uint8_t a : ap.arrays.allowed) allowed += a;
  if (allowed >= S - 1) try_policy_cuts(agent, std::move(ap), N, env, fixed, o, seed, best, info);
  if (o.search_layout) try_layouts(env, fixed, center, best, info);
  info.final_time = best.r.step_time;
  res.plan = env.to_plan(best.cuts, best.layout);
  res.plan.method = "rainbow-pp";
  return res;
}

// ------------------------------------------------------------------------ the placer ----

class RainbowPPPolicyPlacer : public Placer {
 public:
  RainbowPPPolicyPlacer(const std::string& path, RainbowPPPolicyOptions options)
      : options_(std::move(options)) {
    if (options_.samples < 0) throw ValidationError("rainbow-pp: samples must be >= 0");
    if (options_.top_k < 1) throw ValidationError("rainbow-pp: top_k must be >= 1");
    if (options_.micro_batches < 0) throw ValidationError("rainbow-pp: micro_batches must be >= 0");
    const std::string meta_path = policy_file::meta_path(path);
    const Json meta = policy_file::read_policy_meta(path, "rainbow-pp policy");
    const std::string builds = "this build expects";
    policy_file::expect_field(meta, "format", kFormat, meta_path, builds);
    S_ = policy_file::get_field<int>(meta, "stages", meta_path);
    N_ = policy_file::get_field<int>(meta, "max_devices", meta_path);
    if (S_ < 2 || N_ < S_) {
      throw FormatError(format_context(meta_path, "stages",
                                       "needs 2 <= stages <= max_devices, the policy has " +
                                           std::to_string(S_) + " / " + std::to_string(N_)));
    }
    policy_file::expect_field(meta, "state_dim", ArrayPipelineEnv::state_dim(S_, N_), meta_path,
                              builds);
    policy_file::expect_field(meta, "coarse_points", kCoarsePoints, meta_path, builds);
    policy_file::expect_field(meta, "num_actions", kCutActions, meta_path, builds);
    rainbow_config_from_yaml(policy_file::get_field<std::string>(meta, "rainbow", meta_path), &rc_,
                             meta_path + ": rainbow");
    agent_ = std::make_unique<RainbowAgent>(ArrayPipelineEnv::state_dim(S_, N_), kCutActions,
                                            agent_config(rc_, S_, 1));
    if (meta.value("kind", "policy") == "checkpoint") {
      agent_->load(path);
    } else {
      load_net(*agent_, path);
    }
  }

  std::string name() const override { return "rainbow-pp"; }

  Plan search(const Problem& problem, const SearchBudget& budget) override {
    InferenceResult r = infer(*agent_, S_, N_, problem, options_, budget.seed);
    info_ = r.info;
    return std::move(r.plan);
  }

  const RainbowPPInferenceInfo& info() const { return info_; }

 private:
  RainbowPPPolicyOptions options_;
  RainbowConfig rc_;
  int S_ = 0, N_ = 0;
  std::unique_ptr<RainbowAgent> agent_;
  RainbowPPInferenceInfo info_;
};

double heldout_eval(RainbowAgent& agent, const RainbowPPTrainConfig& c, int count,
                    double* win_rate) {
  const ArrayGenOptions go = gen_options(c);
  double sum = 0;
  int wins = 0;
  for (int i = 0; i < count; ++i) {
    ArrayPipelineEnv env(generate_array_problem(heldout_seed(c.seed, i), go), c.max_devices);
    const double r = env.reward_of(rollout(agent, env, nullptr, 1));
    sum += r;
    wins += r > 1 + 1e-9 ? 1 : 0;
  }
  if (win_rate) *win_rate = count > 0 ? static_cast<double>(wins) / count : 0;
  return count > 0 ? sum / count : 0;
}

}  // namespace

bool rainbow_pp_policy_available() { return true; }

std::string validate_rainbow_pp_train_config(const RainbowPPTrainConfig& c) {
  auto bad = [](const std::string& k, const std::string& m) { return k + ": " + m; };
  if (c.stages < 2) return bad("stages", "must be >= 2, got " + std::to_string(c.stages));
  if (c.max_devices < c.stages || c.max_devices > 256)
    return bad("max_devices", "must be in [stages, 256], got " + std::to_string(c.max_devices));
  if (c.updates < 0) return bad("updates", "must be >= 0");
  if (c.arrays_per_update < 1) return bad("arrays_per_update", "must be >= 1");
  if (c.episodes_per_array < 1) return bad("episodes_per_array", "must be >= 1");
  if (c.learn_every < 1) return bad("learn_every", "must be >= 1");
  if (c.threads < 1) return bad("threads", "must be >= 1");
  if (c.min_positions < c.stages || c.max_positions < c.min_positions)
    return bad("min_positions", "need stages <= min_positions <= max_positions");
  if (c.eval_every < 0) return bad("eval_every", "must be >= 0");
  if (c.eval_arrays < 0) return bad("eval_arrays", "must be >= 0");
  if (c.checkpoint_every < 1) return bad("checkpoint_every", "must be >= 1");
  if (!c.eval_graphs.empty() && c.eval_cluster.empty())
    return bad("eval_cluster", "required with eval_graphs");
  try {
    validate_array_gen_options(gen_options(c));
  } catch (const ValidationError& e) {
    return bad("distributions", e.what());
  }
  const std::string r = validate_rainbow_config(agent_config(c.rainbow, c.stages, c.seed));
  if (!r.empty()) return "rainbow: " + r;
  return "";
}

RainbowPPEvalStats rainbow_pp_heldout(const RainbowPPTrainConfig& config,
                                      const std::string& checkpoint, int count) {
  const std::string bad = validate_rainbow_pp_train_config(config);
  if (!bad.empty()) throw ValidationError("rainbow-pp train config: " + bad);
  RainbowAgent agent(ArrayPipelineEnv::state_dim(config.stages, config.max_devices), kCutActions,
                     agent_config(config.rainbow, config.stages, config.seed));
  if (!checkpoint.empty()) agent.load(checkpoint);
  RainbowPPEvalStats s;
  s.heldout_mean_reward = heldout_eval(agent, config, count, &s.heldout_win_rate);
  return s;
}

// ------------------------------------------------------------------------ trainer ----

struct RainbowPPTrainer::Impl {
  struct EvalGraph {
    std::string name;
    Graph graph;
  };
  RainbowPPTrainConfig c;
  TrainingRun run{""};  // c.output_dir
  RainbowConfig rc;
  std::unique_ptr<RainbowAgent> agent;
  std::vector<EvalGraph> graphs;
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<CostModel> cost;
  int64_t done = 0;
  double best_heldout = -1, last_heldout = 0;

  std::string path(const std::string& f) const { return run.file(f); }

  void save(const std::string& file, const std::string& kind) {
    run.create();
    torch::serialize::OutputArchive archive;
    if (kind == "checkpoint") {
      agent->write(archive);
    } else {
      agent->net()->save(archive);  // the net only: what inference needs
    }
    policy_file::save_policy_pair(archive, path(file), meta_json(c, rc, done, kind, last_heldout),
                                  kind);
  }

  void log(const Json& j) { run.append_log(j.dump()); }

  RainbowPPEvalStats evaluate() {
    RainbowPPEvalStats e;
    e.update = done;
    e.heldout_mean_reward = heldout_eval(*agent, c, c.eval_arrays, &e.heldout_win_rate);
    for (const EvalGraph& g : graphs) {
      Simulator sim(g.graph, *cluster, *cost);
      Problem p{g.graph, *cluster, *cost, sim, {}};
      RainbowPPPolicyOptions po;
      po.search_layout = false;  // the policy's cuts vs the center's, on the same groups
      const InferenceResult r = infer(*agent, c.stages, c.max_devices, p, po, c.seed);
      e.rows.push_back({g.name, r.info.center_time, r.info.policy_time});
    }
    return e;
  }
};

RainbowPPTrainer::RainbowPPTrainer(const RainbowPPTrainConfig& config)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.c = config;
  m.run = TrainingRun(m.c.output_dir);
  const std::string bad = validate_rainbow_pp_train_config(m.c);
  if (!bad.empty()) throw ValidationError(bad);
  m.rc = agent_config(m.c.rainbow, m.c.stages, m.c.seed);
  torch::set_num_threads(m.c.threads);
  m.agent = std::make_unique<RainbowAgent>(ArrayPipelineEnv::state_dim(m.c.stages, m.c.max_devices),
                                           kCutActions, m.rc);
  if (!m.c.eval_graphs.empty()) {
    m.cluster = std::make_unique<Cluster>(load_cluster_yaml(m.c.eval_cluster));
    m.cost = std::make_unique<CostModel>(*m.cluster, default_profile());
    for (const std::string& p : m.c.eval_graphs) {
      Graph g = load_graph_json(p);
      if (!g.is_training_step()) g = expand_training_step(g);
      std::string name = fs::path(p).filename().string();
      const size_t dot = name.find(".graph.json");
      if (dot != std::string::npos) name = name.substr(0, dot);
      m.graphs.push_back({name, std::move(g)});
    }
  }
}

RainbowPPTrainer::~RainbowPPTrainer() = default;

int64_t RainbowPPTrainer::resume() {
  Impl& m = *impl_;
  const std::string ck = m.run.checkpoint_to_resume();
  const Json meta =
      policy_file::read_json_object(ck + ".meta.json", "rainbow-pp checkpoint sidecar");
  try {
    if (meta.value("format", "") != kFormat || meta.value("kind", "") != "checkpoint")
      throw FormatError(ck + ".meta.json: not a rainbow-pp checkpoint");
    const Fingerprint now = resume_fingerprint(m.c);
    Fingerprint saved;  // the same keys of the sidecar
    for (auto it = now.begin(); it != now.end(); ++it) saved[it.key()] = meta.at(it.key());
    const std::string mismatch = resume_mismatch(now, saved, ck + ".meta.json",
                                                 "stages / max_devices differ from the run's");
    if (!mismatch.empty()) throw FormatError(mismatch);
    m.done = meta.at("update").get<int64_t>();
    m.last_heldout = meta.value("heldout_mean_reward", 0.0);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(ck + ".meta.json: " + e.what());
  }
  m.agent->load(ck);
  if (fs::exists(m.path("best.pt.meta.json"))) {
    m.best_heldout =
        policy_file::read_json_object(m.path("best.pt.meta.json"), "best policy sidecar")
            .value("heldout_mean_reward", -1.0);
  }
  m.run.cut_log(m.done);  // lines past the checkpoint (a run killed after them) go
  return m.done;
}

int64_t RainbowPPTrainer::train(const Callbacks& cb) {
  Impl& m = *impl_;
  const ArrayGenOptions go = gen_options(m.c);
  auto stop = [&cb] { return cb.should_stop && cb.should_stop(); };
  while (m.done < m.c.updates) {
    const auto t0 = Clock::now();
    const int64_t u = m.done + 1;
    RainbowPPUpdateStats st;
    st.update = u;
    double reward_sum = 0, loss_sum = 0;
    int64_t learns = 0;
    bool stopped = false;
    for (int a = 0; a < m.c.arrays_per_update; ++a) {
      if (stop()) {
        stopped = true;
        break;
      }
      ArrayPipelineEnv env(generate_array_problem(train_seed(m.c.seed, u, a), go), m.c.max_devices);
      ++st.arrays;
      for (int e = 0; e < m.c.episodes_per_array; ++e) {
        env.reset();
        while (!env.done()) {
          const std::vector<float> s = env.observation();
          const std::vector<uint8_t> mask = env.action_mask();
          const int act = m.agent->act(s, mask, /*greedy=*/false);
          const double r = env.step(act);
          std::vector<uint8_t> next_mask = env.action_mask();
          if (env.done()) {
            next_mask.assign(next_mask.size(), 1);
            reward_sum += r;
          }
          m.agent->observe(s, act, static_cast<float>(r), env.observation(), env.done(), mask,
                           next_mask);
          if (++st.steps % m.c.learn_every == 0) {
            const RainbowLearnStats ls = m.agent->learn();
            if (ls.updated) {
              loss_sum += ls.loss;
              ++learns;
            }
          }
        }
        ++st.episodes;
      }
    }
    if (stopped) {
      m.save("checkpoint.pt", "checkpoint");
      return m.done;
    }
    m.done = u;
    st.mean_reward = st.episodes > 0 ? reward_sum / st.episodes : 0;
    st.loss = learns > 0 ? loss_sum / learns : 0;
    st.epsilon = m.agent->epsilon();
    st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    Json j;
    j["type"] = "update";
    j["update"] = u;
    j["mean_reward"] = st.mean_reward;
    j["loss"] = st.loss;
    j["epsilon"] = st.epsilon;
    j["arrays"] = st.arrays;
    j["episodes"] = st.episodes;
    j["seconds"] = st.seconds;
    m.log(j);
    if (cb.on_update) cb.on_update(st);

    const bool last = m.done == m.c.updates;
    if (m.c.eval_every > 0 && (u % m.c.eval_every == 0 || last)) {
      const RainbowPPEvalStats e = m.evaluate();
      m.last_heldout = e.heldout_mean_reward;
      Json ej;
      ej["type"] = "eval";
      ej["update"] = u;
      ej["heldout_mean_reward"] = e.heldout_mean_reward;
      ej["heldout_win_rate"] = e.heldout_win_rate;
      Json rows = Json::array();
      for (const RainbowPPEvalRow& r : e.rows)
        rows.push_back({{"graph", r.graph}, {"center_time", r.center_time}, {"policy_time", r.policy_time}});
      ej["graphs"] = rows;
      m.log(ej);
      if (e.heldout_mean_reward > m.best_heldout) {
        m.best_heldout = e.heldout_mean_reward;
        m.save("best.pt", "policy");
      }
      if (cb.on_eval) cb.on_eval(e);
    }
    if (u % m.c.checkpoint_every == 0 || last) m.save("checkpoint.pt", "checkpoint");
    if (last) m.save("policy.pt", "policy");
  }
  if (m.done == m.c.updates && !fs::exists(m.path("policy.pt"))) {
    m.save("checkpoint.pt", "checkpoint");
    m.save("policy.pt", "policy");
  }
  return m.done;
}

std::unique_ptr<Placer> make_rainbow_pp_policy_placer(const std::string& path,
                                                      const RainbowPPPolicyOptions& options) {
  return std::make_unique<RainbowPPPolicyPlacer>(path, options);
}

RainbowPPInferenceInfo rainbow_pp_inference_info(const Placer& placer) {
  const auto* p = dynamic_cast<const RainbowPPPolicyPlacer*>(&placer);
  if (!p) throw Error("rainbow_pp_inference_info: not a pretrained rainbow-pp placer");
  return p->info();
}

}  // namespace placer
