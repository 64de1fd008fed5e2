// Placeto experiments for docs/placeto.md and docs/results.md, on the 4 first GPUs of
// datasets/clusters/dgx1_p100.cluster.yaml (dgx1_p100), one table or curve per experiment:
//
//   ./build/bench/placeto_report search        # online Placeto vs anneal vs m-etf
//   ./build/bench/placeto_report zero-shot     # family-trained policy vs retraining per graph
//   ./build/bench/placeto_report curve         # learning curve on one graph (for tuning)
//   ./build/bench/placeto_report group-bound   # what the coarsened MDP can reach at all
//
// Settings come from environment variables (defaults in brackets):
//   PLACETO_FAMILY [enas_cnn]  PLACETO_GRAPHS [32]  PLACETO_UPDATES [300]
//   PLACETO_GROUPS [32]  PLACETO_DEVICES [4]  PLACETO_BUDGET [2000] (online placements)
//   PLACETO_UNSEEN [3] (unseen members for the zero-shot table)  PLACETO_LR [0.01]
//   PLACETO_EPISODES [8]  PLACETO_ENTROPY [0.01]  PLACETO_REWARD [the placer's default]
//   PLACETO_OUT [placeto_report] (training output folder)  PLACETO_POLICY (skip training)
//   PLACETO_SEARCH_GRAPHS [3] (graphs of the search table)  PLACETO_THREADS [1]
//   PLACETO_START [the placer's default] (single / random)  PLACETO_GRAPH_SEED [1000]
//   (curve's graph)  PLACETO_GROUP_LIST [8,16,32,64] (group-bound)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <torch/utils.h>  // torch::set_num_threads

#include "agents/api/placer.h"
#include "agents/placeto/placeto.h"
#include "bench/bench_common.h"
#include "datasets/coarsen.h"
#include "datasets/family_registry.h"
#include "env/placeto_env.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"

namespace placer {
namespace {

std::string env_str(const char* name, const std::string& def) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : def;
}
double env_num(const char* name, double def) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : def;
}

/// The placer's defaults unless overridden.
PlacetoOptions base_options() {
  PlacetoOptions o;
  o.mdp.groups = int(env_num("PLACETO_GROUPS", o.mdp.groups));
  o.rl.lr = env_num("PLACETO_LR", o.rl.lr);
  o.rl.episodes = int(env_num("PLACETO_EPISODES", o.rl.episodes));
  o.rl.entropy = env_num("PLACETO_ENTROPY", o.rl.entropy);
  parse_placeto_reward(env_str("PLACETO_REWARD", to_string(o.mdp.reward)), &o.mdp.reward);
  parse_placeto_start(env_str("PLACETO_START", to_string(o.mdp.start)), &o.mdp.start);
  return o;
}

std::vector<int> first_devices() {
  std::vector<int> d;
  for (int i = 0; i < int(env_num("PLACETO_DEVICES", 4)); ++i) d.push_back(i);
  return d;
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return bench::seconds_since(t0);
}

/// The cluster and its cost model every experiment runs on.
struct Setup {
  Cluster cluster = load_cluster_yaml(bench::repo_path("datasets/clusters/dgx1_p100.cluster.yaml"));
  CostModel cost{cluster, default_profile()};
  std::string family = env_str("PLACETO_FAMILY", "enas_cnn");
};

SearchBudget budget_of(int64_t evaluations) {
  SearchBudget b;
  b.seed = 1;
  b.max_evaluations = evaluations;
  return b;
}

/// One family member on the first devices, with the baselines the tables show.
struct Member {
  Member(const Setup& s, uint64_t seed)
      : g(expand_training_step(make_family_graph(s.family, seed))),
        sim(g, s.cluster, s.cost),
        p{g, s.cluster, s.cost, sim, first_devices()} {
    so.critical_path = false;
  }
  double step_time(const Plan& plan) { return sim.run(plan, so).step_time; }
  double metf_time(const SearchBudget& b) { return step_time(make_placer("m-etf")->search(p, b)); }
  SimResult single_device() {
    return sim.run(placement_plan(p, std::vector<int>(g.num_ops(), 0), "single"), so);
  }

  const Graph g;
  Simulator sim;
  Problem p;
  SimOptions so;
};

/// Placements sampled until the best is found: online Placeto vs anneal vs m-etf.
void search_vs_anneal(const Setup& s) {
  const int64_t budget = int64_t(env_num("PLACETO_BUDGET", 2000));
  const int n = int(env_num("PLACETO_SEARCH_GRAPHS", 3));
  std::printf(
      "| graph | ops | groups | single GPU | m-etf | anneal (evaluations) | placeto (best at "
      "evaluation / of) | placeto greedy | placeto s |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (int i = 0; i < n; ++i) {
    const uint64_t seed = 1000 + uint64_t(i);
    Member m(s, seed);
    const SearchBudget b = budget_of(budget);
    const double metf_t = m.metf_time(b);
    const SimResult single = m.single_device();
    const SearchOutcome ao = make_placer("anneal")->search_outcome(m.p, b);
    const double anneal_t = m.step_time(ao.plan);
    PlacetoOptions o = base_options();
    PlacetoSearchResult r;
    const double secs = seconds_of([&] { r = placeto_search(m.p, o, b); });
    std::printf(
        "| %s_%llu | %zu | %d | %.2f ms%s | %.2f ms | %.2f ms (%lld) | %.2f ms%s (%lld / %lld) | "
        "%.2f ms | %.0f |\n",
        s.family.c_str(), static_cast<unsigned long long>(seed), m.g.num_ops(), r.num_groups,
        single.step_time * 1e3, single.oom ? " OOM" : "", metf_t * 1e3, anneal_t * 1e3,
        static_cast<long long>(ao.stats.runs), r.best_time * 1e3, r.best_oom ? " OOM" : "",
        static_cast<long long>(r.best_evaluation), static_cast<long long>(r.evaluations),
        r.greedy_env_time * 1e3, secs);
    std::fflush(stdout);
  }
}

/// Trains a policy on PLACETO_GRAPHS members of the family (seeds 1 ..); its path.
std::string train_family_policy(const Setup& s, const PlacetoOptions& base) {
  PlacetoTrainConfig t;
  t.family = s.family;
  t.graphs = int(env_num("PLACETO_GRAPHS", 32));
  t.first_seed = 1;
  t.devices = first_devices();
  t.updates = int(env_num("PLACETO_UPDATES", 300));
  t.output_dir = env_str("PLACETO_OUT", "placeto_report");
  t.checkpoint_every = 50;
  t.mdp = base.mdp;
  t.rl = base.rl;
  int64_t last = 0;
  const PlacetoTrainResult tr =
      placeto_train(t, s.cluster, s.cost, [&](int64_t done, int64_t total, const std::string& st) {
        if (done - last >= 25 || done == total) {
          std::fprintf(stderr, "update %lld/%lld %s\n", static_cast<long long>(done),
                       static_cast<long long>(total), st.c_str());
          last = done;
        }
      });
  double gm = 0;
  for (double r : tr.best_ratio) gm += std::log(r) / double(tr.best_ratio.size());
  std::printf(
      "trained %lld updates on %d %s graphs: %lld placements, %.0f s, geomean best / "
      "single-device %.3f\n",
      static_cast<long long>(tr.updates), t.graphs, s.family.c_str(),
      static_cast<long long>(tr.evaluations), tr.seconds, std::exp(gm));
  return tr.policy_path;
}

/// Zero-shot from a family-trained policy vs training on each unseen graph from scratch.
void zero_shot_vs_retraining(const Setup& s) {
  const PlacetoOptions base = base_options();
  std::string policy = env_str("PLACETO_POLICY", "");
  if (policy.empty()) policy = train_family_policy(s, base);
  const int unseen = int(env_num("PLACETO_UNSEEN", 3));
  const int64_t budget = int64_t(env_num("PLACETO_BUDGET", 2000));
  std::printf(
      "| graph | ops | single GPU | m-etf | zero-shot greedy | zero-shot best of 8 (placements) | "
      "retrained (placements to best) |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (int i = 0; i < unseen; ++i) {
    const uint64_t seed = 5000 + uint64_t(i);  // training used seeds 1 .. graphs
    Member m(s, seed);
    const SearchBudget b = budget_of(budget);
    const double metf_t = m.metf_time(b);
    const SimResult sr = m.single_device();
    PlacetoOptions z = base;
    z.policy = policy;
    z.zero_shot_samples = 7;
    const PlacetoSearchResult zr = placeto_search(m.p, z, b);
    // The greedy episode alone.
    PlacetoOptions zg = z;
    zg.zero_shot_samples = 0;
    const PlacetoSearchResult gr = placeto_search(m.p, zg, b);
    const PlacetoSearchResult rr = placeto_search(m.p, base, b);
    std::printf(
        "| %s_%llu | %zu | %.2f ms%s | %.2f ms | %.2f ms | %.2f ms (%lld) | %.2f ms (%lld of %lld) "
        "|\n",
        s.family.c_str(), static_cast<unsigned long long>(seed), m.g.num_ops(), sr.step_time * 1e3,
        sr.oom ? " OOM" : "", metf_t * 1e3, gr.best_time * 1e3, zr.best_time * 1e3,
        static_cast<long long>(zr.evaluations), rr.best_time * 1e3,
        static_cast<long long>(rr.best_evaluation), static_cast<long long>(rr.evaluations));
    std::fflush(stdout);
  }
}

/// Learning curve on one graph (for tuning): mean return every 10 updates.
void online_curve(const Setup& s) {
  const Graph g = expand_training_step(
      make_family_graph(s.family, uint64_t(env_num("PLACETO_GRAPH_SEED", 1000))));
  Simulator sim(g, s.cluster, s.cost);
  Problem p{g, s.cluster, s.cost, sim, first_devices()};
  const PlacetoSearchResult r =
      placeto_search(p, base_options(), budget_of(int64_t(env_num("PLACETO_BUDGET", 2000))));
  for (size_t u = 0; u < r.mean_return.size(); u += 10) {
    double sum = 0;
    size_t k = 0;
    for (; k < 10 && u + k < r.mean_return.size(); ++k) sum += r.mean_return[u + k];
    std::printf("updates %zu-%zu: mean return %.4f\n", u + 1, u + k, sum / double(k));
  }
  std::printf(
      "best %.3f ms at evaluation %lld of %lld, greedy (env) %.3f ms, reference %.3f ms, %.1f s\n",
      r.best_time * 1e3, static_cast<long long>(r.best_evaluation),
      static_cast<long long>(r.evaluations), r.greedy_env_time * 1e3, r.reference_time * 1e3,
      r.seconds);
}

/// Group-level annealing on one coarsening of g: one group moved to a random allowed device
/// per step, Metropolis acceptance on the cost with a geometric temperature, from the
/// single-device start, `budget` simulations. Prints one line.
void anneal_groups(const Setup& s, const Graph& g, uint64_t seed, int groups, int64_t budget) {
  CoarsenOptions co;
  co.target_groups = groups;
  const Coarsening cs = coarsen(g, co);
  PlacetoEnvOptions eo;
  eo.devices = first_devices();
  eo.max_devices = 8;
  PlacetoEnv env(g, s.cluster, s.cost, cs.group_of_op, eo);
  std::mt19937_64 rng(1);
  std::vector<int> cur(size_t(env.num_nodes()), eo.devices[0]);
  double cur_cost = env.evaluate(cur);
  const double single_cost = cur_cost;
  const double t0 = 0.05, t1 = 0.0005;
  for (int64_t k = 1; k < budget; ++k) {
    const double temp = t0 * std::pow(t1 / t0, double(k) / double(budget));
    std::vector<int> nxt = cur;
    const size_t v = size_t(rng() % nxt.size());
    nxt[v] = eo.devices[size_t(rng() % eo.devices.size())];
    if (nxt == cur) continue;
    const double nc = env.evaluate(nxt);
    const double u = double(rng() >> 11) * 0x1.0p-53;
    if (nc <= cur_cost || u < std::exp((cur_cost - nc) / temp)) {
      cur = nxt;
      cur_cost = nc;
    }
  }
  std::printf(
      "%s_%llu groups %d (%d nodes): reference %.2f ms (cost %.3f), group anneal "
      "best %.2f ms%s (x%.3f) at %lld of %lld\n",
      s.family.c_str(), static_cast<unsigned long long>(seed), groups, env.num_nodes(),
      env.reference_time() * 1e3, single_cost, env.best_time() * 1e3, env.best_oom() ? " OOM" : "",
      env.best_time() / env.reference_time(), static_cast<long long>(env.best_simulation()),
      static_cast<long long>(env.simulations()));
  std::fflush(stdout);
}

/// What the MDP can reach at all: group-level annealing over the same coarsening the placer
/// uses, for each group count of PLACETO_GROUP_LIST (0 = colocation + fusion). Compare with
/// anneal on the ops (search): what the coarsening leaves reachable.
void group_bound(const Setup& s) {
  const int64_t budget = int64_t(env_num("PLACETO_BUDGET", 2000));
  const int n = int(env_num("PLACETO_SEARCH_GRAPHS", 3));
  const std::vector<int> group_list =
      bench::parse_int_list(env_str("PLACETO_GROUP_LIST", "8,16,32,64"), "PLACETO_GROUP_LIST");
  for (int i = 0; i < n; ++i) {
    const uint64_t seed = 1000 + uint64_t(i);
    const Graph g = expand_training_step(make_family_graph(s.family, seed));
    for (int groups : group_list) anneal_groups(s, g, seed, groups, budget);
  }
}

int run(const std::string& experiment) {
  const std::map<std::string, std::function<void(const Setup&)>> experiments{
      {"search", search_vs_anneal},
      {"zero-shot", zero_shot_vs_retraining},
      {"curve", online_curve},
      {"group-bound", group_bound}};
  const auto it = experiments.find(experiment);
  if (it == experiments.end()) {
    std::cerr << "usage: placeto_report search|zero-shot|curve|group-bound "
                 "(settings: PLACETO_* environment variables, see the source)\n";
    return 2;
  }
  torch::set_num_threads(int(env_num("PLACETO_THREADS", 1)));
  it->second(Setup{});
  return 0;
}

}  // namespace
}  // namespace placer

int main(int argc, char** argv) {
  try {
    return placer::run(argc == 2 ? argv[1] : "");
  } catch (const std::exception& e) {
    std::cerr << "placeto_report: " << e.what() << "\n";
    return 1;
  }
}
