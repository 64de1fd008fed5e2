// Placeto experiments for docs/results.md (not run by ctest: DISABLED_, run them with
//   build/tests/placer_learned_tests --gtest_also_run_disabled_tests
//       --gtest_filter='PlacetoReport.*'
// on one line). Settings come from environment variables (defaults in brackets):
//   PLACETO_FAMILY [enas_cnn]  PLACETO_GRAPHS [32]  PLACETO_UPDATES [300]
//   PLACETO_GROUPS [32]  PLACETO_DEVICES [4]  PLACETO_BUDGET [2000] (online placements)
//   PLACETO_UNSEEN [3] (unseen members for the zero-shot table)  PLACETO_LR [0.01]
//   PLACETO_EPISODES [8]  PLACETO_ENTROPY [0.01]  PLACETO_REWARD [the placer's default]
//   PLACETO_OUT [placeto_report] (training output folder)  PLACETO_POLICY (skip training)
//   PLACETO_SEARCH_GRAPHS [3] (graphs of the search table)  PLACETO_THREADS [1]
//   PLACETO_START [the placer's default] (single / random)  PLACETO_GRAPH_SEED [1000]
//   (OnlineCurve's graph)  PLACETO_GROUP_LIST [8,16,32,64] (GroupBound)
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "agents/classical/anneal.h"
#include "agents/placeto/placeto.h"
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

// The placer's defaults unless overridden.
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
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Placements sampled until the best is found: online Placeto vs anneal vs m-etf.
TEST(PlacetoReport, DISABLED_SearchVsAnneal) {
  torch::set_num_threads(int(env_num("PLACETO_THREADS", 1)));
  const Cluster c = load_cluster_yaml(PLACER_SOURCE_DIR "/datasets/clusters/dgx1_p100.cluster.yaml");
  CostModel cost(c, default_profile());
  const std::string family = env_str("PLACETO_FAMILY", "enas_cnn");
  const int64_t budget = int64_t(env_num("PLACETO_BUDGET", 2000));
  const int n = int(env_num("PLACETO_SEARCH_GRAPHS", 3));
  std::printf("| graph | ops | groups | single GPU | m-etf | anneal (evaluations) | placeto (best at evaluation / of) | placeto greedy | placeto s |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (int i = 0; i < n; ++i) {
    const uint64_t seed = 1000 + uint64_t(i);
    const Graph g = expand_training_step(make_family_graph(family, seed));
    Simulator sim(g, c, cost);
    Problem p{g, c, cost, sim, first_devices()};
    SimOptions so;
    so.critical_path = false;
    SearchBudget b;
    b.seed = 1;
    b.max_evaluations = budget;
    const Plan metf = make_placer("m-etf")->search(p, b);
    const double metf_t = sim.run(metf, so).step_time;
    const SimResult single = sim.run(placement_plan(p, std::vector<int>(g.num_ops(), 0), "single"), so);
    AnnealPlacer anneal;
    const SearchOutcome ao = anneal.search_outcome(p, b);
    const double anneal_t = sim.run(ao.plan, so).step_time;
    PlacetoOptions o = base_options();
    PlacetoSearchResult r;
    const double secs = seconds_of([&] { r = placeto_search(p, o, b); });
    std::printf("| %s_%llu | %zu | %d | %.2f ms%s | %.2f ms | %.2f ms (%lld) | %.2f ms%s (%lld / %lld) | %.2f ms | %.0f |\n",
                family.c_str(), static_cast<unsigned long long>(seed), g.num_ops(), r.num_groups,
                single.step_time * 1e3, single.oom ? " OOM" : "", metf_t * 1e3, anneal_t * 1e3, static_cast<long long>(ao.stats.runs),
                r.best_time * 1e3, r.best_oom ? " OOM" : "", static_cast<long long>(r.best_evaluation),
                static_cast<long long>(r.evaluations), r.greedy_env_time * 1e3, secs);
    std::fflush(stdout);
  }
}

// Zero-shot from a family-trained policy vs training on each unseen graph from scratch.
TEST(PlacetoReport, DISABLED_ZeroShotVsRetraining) {
  torch::set_num_threads(int(env_num("PLACETO_THREADS", 1)));
  const Cluster c = load_cluster_yaml(PLACER_SOURCE_DIR "/datasets/clusters/dgx1_p100.cluster.yaml");
  CostModel cost(c, default_profile());
  const std::string family = env_str("PLACETO_FAMILY", "enas_cnn");
  std::string policy = env_str("PLACETO_POLICY", "");
  const PlacetoOptions base = base_options();
  if (policy.empty()) {
    PlacetoTrainConfig t;
    t.family = family;
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
        placeto_train(t, c, cost, [&](int64_t done, int64_t total, const std::string& s) {
          if (done - last >= 25 || done == total) {
            std::fprintf(stderr, "update %lld/%lld %s\n", static_cast<long long>(done),
                         static_cast<long long>(total), s.c_str());
            last = done;
          }
        });
    double gm = 0;
    for (double r : tr.best_ratio) gm += std::log(r) / double(tr.best_ratio.size());
    std::printf("trained %lld updates on %d %s graphs: %lld placements, %.0f s, geomean best / "
                "single-device %.3f\n",
                static_cast<long long>(tr.updates), t.graphs, family.c_str(),
                static_cast<long long>(tr.evaluations), tr.seconds, std::exp(gm));
    policy = tr.policy_path;
  }
  const int unseen = int(env_num("PLACETO_UNSEEN", 3));
  const int64_t budget = int64_t(env_num("PLACETO_BUDGET", 2000));
  std::printf("| graph | ops | single GPU | m-etf | zero-shot greedy | zero-shot best of 8 (placements) | retrained (placements to best) |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (int i = 0; i < unseen; ++i) {
    const uint64_t seed = 5000 + uint64_t(i);  // training used seeds 1 .. graphs
    const Graph g = expand_training_step(make_family_graph(family, seed));
    Simulator sim(g, c, cost);
    Problem p{g, c, cost, sim, first_devices()};
    SimOptions so;
    so.critical_path = false;
    SearchBudget b;
    b.seed = 1;
    b.max_evaluations = budget;
    const double metf_t = sim.run(make_placer("m-etf")->search(p, b), so).step_time;
    Plan single = placement_plan(p, std::vector<int>(g.num_ops(), 0), "single");
    const SimResult sr = sim.run(single, so);
    PlacetoOptions z = base;
    z.policy = policy;
    z.zero_shot_samples = 7;
    const PlacetoSearchResult zr = placeto_search(p, z, b);
    // The greedy episode alone.
    PlacetoOptions zg = z;
    zg.zero_shot_samples = 0;
    const PlacetoSearchResult gr = placeto_search(p, zg, b);
    const PlacetoSearchResult rr = placeto_search(p, base, b);
    std::printf("| %s_%llu | %zu | %.2f ms%s | %.2f ms | %.2f ms | %.2f ms (%lld) | %.2f ms (%lld of %lld) |\n",
                family.c_str(), static_cast<unsigned long long>(seed), g.num_ops(),
                sr.step_time * 1e3, sr.oom ? " OOM" : "", metf_t * 1e3, gr.best_time * 1e3,
                zr.best_time * 1e3, static_cast<long long>(zr.evaluations), rr.best_time * 1e3,
                static_cast<long long>(rr.best_evaluation), static_cast<long long>(rr.evaluations));
    std::fflush(stdout);
  }
}

// Learning curve on one graph (for tuning): mean return every 10 updates.
TEST(PlacetoReport, DISABLED_OnlineCurve) {
  torch::set_num_threads(int(env_num("PLACETO_THREADS", 1)));
  const Cluster c = load_cluster_yaml(PLACER_SOURCE_DIR "/datasets/clusters/dgx1_p100.cluster.yaml");
  CostModel cost(c, default_profile());
  const std::string family = env_str("PLACETO_FAMILY", "enas_cnn");
  const Graph g = expand_training_step(
      make_family_graph(family, uint64_t(env_num("PLACETO_GRAPH_SEED", 1000))));
  Simulator sim(g, c, cost);
  Problem p{g, c, cost, sim, first_devices()};
  SearchBudget b;
  b.seed = 1;
  b.max_evaluations = int64_t(env_num("PLACETO_BUDGET", 2000));
  const PlacetoSearchResult r = placeto_search(p, base_options(), b);
  for (size_t u = 0; u < r.mean_return.size(); u += 10) {
    double s = 0;
    size_t k = 0;
    for (; k < 10 && u + k < r.mean_return.size(); ++k) s += r.mean_return[u + k];
    std::printf("updates %zu-%zu: mean return %.4f\n", u + 1, u + k, s / double(k));
  }
  std::printf("best %.3f ms at evaluation %lld of %lld, greedy (env) %.3f ms, reference %.3f ms, %.1f s\n",
              r.best_time * 1e3, static_cast<long long>(r.best_evaluation),
              static_cast<long long>(r.evaluations), r.greedy_env_time * 1e3,
              r.reference_time * 1e3, r.seconds);
}

// What the MDP can reach at all: a group-level annealing (one group moved to a random allowed
// device per step, Metropolis acceptance on the cost with a geometric temperature) over the
// same coarsening the placer uses, from the single-device start, PLACETO_BUDGET simulations,
// for each group count of PLACETO_GROUP_LIST (comma separated; 0 = colocation + fusion).
// Compare with anneal on the ops (SearchVsAnneal): what the coarsening leaves reachable.
TEST(PlacetoReport, DISABLED_GroupBound) {
  const Cluster c = load_cluster_yaml(PLACER_SOURCE_DIR "/datasets/clusters/dgx1_p100.cluster.yaml");
  CostModel cost(c, default_profile());
  const std::string family = env_str("PLACETO_FAMILY", "enas_cnn");
  const int64_t budget = int64_t(env_num("PLACETO_BUDGET", 2000));
  const int n = int(env_num("PLACETO_SEARCH_GRAPHS", 3));
  std::vector<int> group_list;
  {
    const std::string l = env_str("PLACETO_GROUP_LIST", "8,16,32,64");
    size_t pos = 0;
    while (pos < l.size()) {
      const size_t e = l.find(',', pos);
      group_list.push_back(std::atoi(l.substr(pos, e == std::string::npos ? e : e - pos).c_str()));
      if (e == std::string::npos) break;
      pos = e + 1;
    }
  }
  for (int i = 0; i < n; ++i) {
    const uint64_t seed = 1000 + uint64_t(i);
    const Graph g = expand_training_step(make_family_graph(family, seed));
    for (int groups : group_list) {
      CoarsenOptions co;
      co.target_groups = groups;
      const Coarsening cs = coarsen(g, co);
      PlacetoEnvOptions eo;
      eo.devices = first_devices();
      eo.max_devices = 8;
      PlacetoEnv env(g, c, cost, cs.group_of_op, eo);
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
      std::printf("%s_%llu groups %d (%d nodes): reference %.2f ms (cost %.3f), group anneal "
                  "best %.2f ms%s (x%.3f) at %lld of %lld\n",
                  family.c_str(), static_cast<unsigned long long>(seed), groups, env.num_nodes(),
                  env.reference_time() * 1e3, single_cost, env.best_time() * 1e3, env.best_oom() ? " OOM" : "",
                  env.best_time() / env.reference_time(),
                  static_cast<long long>(env.best_simulation()),
                  static_cast<long long>(env.simulations()));
      std::fflush(stdout);
    }
  }
}

}  // namespace
}  // namespace placer
