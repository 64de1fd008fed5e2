// Per-variable gradient synchronisation strategies (docs/sync.md): the builders
// (horovod, ps, parallax, poseidon) vs the searches on sparse models (an LSTM LM, a
// large-vocabulary transformer, a DLRM-style recommendation model) and dense CNNs, data
// parallel over the 8 GPUs of the 1 / 10 / 25 / 40 Gbit/s clusters
// (datasets/clusters/sync_*gbit.cluster.yaml), in one run:
//  - search: autosync-search, the seeded coordinate descent from the best builder;
//  - rl: autosync's Rainbow DQN trained online on the row's graph, its best plan alone
//    (polish 0); autosync: the same agent then polished by the descent (25 % of the runs);
//  - zero-shot: a policy pretrained here on the train split of the default corpus (graphs
//    of <= --pretrain-max-ops ops, on the four clusters; its CPU time is printed) acting
//    greedily on the row's graph, which it never saw (one simulation);
//  - long: autosync-search with --long-evals runs (the sparse rows <= 10 Gbit/s only), and
//    bound: a lower bound on the step of any lossless plan (lossless_bound below).
// Then the lossy variants of autosync-search (compression only, staleness 1 only, both;
// they change convergence and are not part of the targets), the PS / all-reduce check on
// one large dense variable, and the targets.
//
//   build/bench/sync_strategies [--evals N] [--long-evals N] [--seed S]
//                               [--pretrain-episodes N] [--pretrain-max-ops N]
//                               [--demo-every N] [--pretrain-demo-every N]
// (--demo-every: AutosyncOptions::demo_every of the online rl / autosync columns, default
// 10; --pretrain-demo-every: of the pretraining, default 5; 0 = no demonstrations.)

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/sync/autosync_rl.h"
#include "agents/sync/sync_builders.h"
#include "datasets/family_inception.h"
#include "datasets/family_rec.h"
#include "datasets/family_rnn.h"
#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "simulator/sync_strategies.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/io/graph_json.h"

namespace placer {
namespace {

std::string repo(const std::string& rel) {
  const std::filesystem::path p = std::filesystem::path(__FILE__).parent_path().parent_path() / rel;
  return std::filesystem::exists(p) ? p.string() : rel;
}

struct Model {
  std::string label;
  bool sparse;
  std::function<Graph()> forward;
};

std::vector<Model> models() {
  return {
      {"lstm_lm (2x1024, V 50k)", true,
       [] {
         RnnlmOptions o;
         o.vocab = 50000;
         o.batch = 8 * 32;
         o.fused_cells = true;
         return make_rnnlm(o);
       }},
      {"transformer (6x512, V 100k)", true,
       [] {
         TransformerOptions o;
         o.layers = 6;
         o.vocab = 100000;
         o.batch = 8 * 8;
         o.dtype = DType::kF32;
         return make_transformer(o);
       }},
      {"rec (8 x 1M x 64)", true,
       [] {
         RecOptions o;
         o.batch = 8 * 1024;
         return make_rec(o);
       }},
      {"inception (b 8x32)", false,
       [] {
         InceptionOptions o;
         o.batch = 8 * 32;
         return make_inception(o);
       }},
      {"vgg11 (b 32)", false,
       [] { return load_graph_json(repo("datasets/models/vgg11.graph.json")); }},
  };
}

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? NAN : std::exp(s / double(v.size()));
}

// A lower bound on the step of any lossless plan in the strategy space (staleness 0, no
// compressor): the step is at least the sync-free step, and at least the busiest port's
// total work, itself at least the mean over the inter-host NIC ports (in and out of each
// host; the sync clusters share one NIC per host) of the work each variable puts there
// under its cheapest strategy (ring / tree / hierarchical all-reduce, PS sharded with or
// without local sums or on one server, all-gather of sparse rows, SFB).
double lossless_bound(const Problem& p, double sync_free_step) {
  const Graph& g = p.graph;
  const Plan plan = replicated_plan(p, "bench");
  const SyncCostModel m(g, p.cluster, p.cost, plan);
  const std::vector<int> servers = ps_servers(p.cluster, problem_devices(p));
  std::vector<VariableSync> cands(3);
  cands[1].algorithm = SyncScheme::kTree;
  cands[2].algorithm = SyncScheme::kHierarchical;
  cands.push_back(sharded_ps(servers));
  cands.push_back(sharded_ps(servers));
  cands.back().local_aggregation = false;
  for (int sv : servers) cands.push_back(sharded_ps({sv}));
  cands.emplace_back().synchronizer = Synchronizer::kAllGather;
  cands.emplace_back().synchronizer = Synchronizer::kFactorBroadcast;
  double nic = 0;
  for (OpId v : sync_variables(g)) {
    double best = INFINITY;
    for (const VariableSync& s : cands) {
      const VariableSyncCost c = m.variable_cost(v, s);
      double inter = 0;
      for (size_t i = 0; i < c.port_load.size(); ++i)
        inter += (i % 4 == 1 || i % 4 == 3) ? c.port_load[i] : 0;
      best = std::min(best, inter);
    }
    nic += best;
  }
  return std::max(sync_free_step, nic / (2.0 * p.cluster.num_hosts()));
}

}  // namespace
}  // namespace placer

int main(int argc, char** argv) {
  using namespace placer;
  int64_t evals = 300, long_evals = 3000, pre_episodes = 2000, pre_max_ops = 400;
  uint64_t seed = 1;
  int demo_every = AutosyncOptions{}.demo_every, pre_demo_every = AutosyncTrainOptions{}.demo_every;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--evals")) evals = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--long-evals")) long_evals = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--pretrain-episodes")) pre_episodes = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--pretrain-max-ops")) pre_max_ops = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--demo-every")) demo_every = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--pretrain-demo-every")) pre_demo_every = std::atoi(argv[i + 1]);
  }
  const int gbits[] = {1, 10, 25, 40};
  auto cluster_file = [](int gb) {
    return repo("datasets/clusters/sync_" + std::to_string(gb) + "gbit.cluster.yaml");
  };
  const bool rl = autosync_rl_available();

  // Pretraining on the corpus's train split (none of the rows' graphs is in it).
  const std::string policy = (std::filesystem::temp_directory_path() /
                              ("sync_strategies_policy_" + std::to_string(seed) + ".pt"))
                                 .string();
  if (rl) {
    AutosyncTrainOptions o;
    o.corpus = repo("datasets/corpora/default.corpus.yaml");
    for (int gb : gbits) o.clusters.push_back(cluster_file(gb));
    o.episodes = pre_episodes;
    o.max_ops = pre_max_ops;
    o.seed = seed;
    o.output = policy;
    o.demo_every = pre_demo_every;
    const AutosyncTrainResult r = autosync_train(o);
    std::printf(
        "pretraining: %lld episodes on %d problems (train split of the default corpus, "
        "<= %lld ops, %d graphs x 4 clusters), %lld simulations, CPU %.1f s (wall %.1f "
        "s), mean reward of the last 100 %.3f\n\n",
        static_cast<long long>(r.episodes), r.problems, static_cast<long long>(pre_max_ops),
        r.problems / 4, static_cast<long long>(r.simulations), r.cpu_seconds, r.wall_seconds,
        r.mean_reward);
  }

  std::printf("%-28s %4s %9s %9s %9s %9s | %9s %9s %9s %9s %9s %9s\n", "model", "Gbit", "horovod",
              "ps", "parallax", "poseidon", "search", "rl", "autosync", "zero-shot", "long",
              "bound");
  struct Row {
    std::string label;
    int gb;
    bool sparse;
    double best, search, rl, autosync, zs, lng, bound, comp, stale, both;
  };
  std::vector<Row> rows;
  std::vector<double> parallax_gain;
  std::vector<std::string> crossovers;
  const double nan = NAN;
  for (const Model& m : models()) {
    const Graph g = expand_training_step(m.forward());
    int crossover = -1;  // lowest bandwidth where all-reduce (horovod) beats the PS
    for (int gb : gbits) {
      const Cluster c = load_cluster_yaml(cluster_file(gb));
      const CostModel cost(c, default_profile());
      Simulator sim(g, c, cost);
      const Problem p{g, c, cost, sim, {}};
      auto time_of = [&](const Plan& plan) {
        const SimResult r = sim.run(plan);
        return r.oom ? INFINITY : r.step_time;
      };
      auto budget = [&](int64_t n) {
        SearchBudget b;
        b.seed = seed;
        b.max_evaluations = n;
        return b;
      };
      std::vector<double> t;
      for (const char* name : {"horovod", "ps", "parallax", "poseidon"}) {
        t.push_back(time_of(make_placer(name)->search(p, budget(evals))));
      }
      Row row{m.label, gb,  m.sparse, *std::min_element(t.begin(), t.end()),
              nan,     nan, nan,      nan,
              nan,     nan, nan,      nan,
              nan};
      row.search = time_of(make_placer("autosync-search")->search(p, budget(evals)));
      if (rl) {
        AutosyncOptions pure;
        pure.polish = 0;
        pure.demo_every = demo_every;
        row.rl = autosync_search(p, budget(evals), pure).learned_time;
        AutosyncOptions dflt;
        dflt.demo_every = demo_every;
        row.autosync = time_of(autosync_search(p, budget(evals), dflt).plan);
        AutosyncOptions zs;
        zs.policy = policy;
        zs.polish = 0;
        row.zs = autosync_search(p, budget(evals), zs).greedy_time;
      }
      if (m.sparse && gb <= 10) {
        row.lng = time_of(make_placer("autosync-search")->search(p, budget(long_evals)));
      }
      row.bound = lossless_bound(
          p, sim.run(make_placer("horovod")->search(p, budget(1))).compute_step_time);
      for (int k = 0; k < 3; ++k) {
        SearchBudget b = budget(evals);
        b.allow_compression = k != 1;
        b.max_staleness = k != 0 ? 1 : 0;
        (k == 0   ? row.comp
         : k == 1 ? row.stale
                  : row.both) = time_of(make_placer("autosync-search")->search(p, b));
      }
      if (m.sparse) parallax_gain.push_back(t[0] / t[2]);
      if (crossover < 0 && t[0] < t[1]) crossover = gb;
      std::printf("%-28s %4d %9.2f %9.2f %9.2f %9.2f | %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n",
                  m.label.c_str(), gb, t[0] * 1e3, t[1] * 1e3, t[2] * 1e3, t[3] * 1e3,
                  row.search * 1e3, row.rl * 1e3, row.autosync * 1e3, row.zs * 1e3, row.lng * 1e3,
                  row.bound * 1e3);
      std::fflush(stdout);
      rows.push_back(row);
    }
    crossovers.push_back(m.label + ": " +
                         (crossover < 0
                              ? std::string("PS faster at every bandwidth")
                              : "horovod faster from " + std::to_string(crossover) + " Gbit/s"));
  }
  std::printf(
      "\nstep times in ms, 8 x V100 (4 hosts x 2), data parallel, Adam; seed %llu, %lld "
      "simulations per search, long = %lld; bound = lower bound of any lossless plan\n",
      static_cast<unsigned long long>(seed), static_cast<long long>(evals),
      static_cast<long long>(long_evals));

  std::printf(
      "\nspeedup over the best builder (lossless | lossy autosync-search: compression, "
      "staleness 1, both)\n");
  std::printf("%-28s %4s %7s %7s %7s %7s %7s %7s | %7s %7s %7s\n", "model", "Gbit", "search", "rl",
              "autosync", "0-shot", "long", "bound", "comp", "stale1", "both");
  auto x = [](double best, double v) { return std::isfinite(v) ? best / v : NAN; };
  for (const Row& r : rows) {
    std::printf("%-28s %4d %6.3fx %6.3fx %6.3fx %6.3fx %6.3fx %6.3fx | %6.2fx %6.2fx %6.2fx\n",
                r.label.c_str(), r.gb, x(r.best, r.search), x(r.best, r.rl), x(r.best, r.autosync),
                x(r.best, r.zs), x(r.best, r.lng), x(r.best, r.bound), x(r.best, r.comp),
                x(r.best, r.stale), x(r.best, r.both));
  }

  // PS vs all-reduce on one large dense variable (vgg11's largest), the NIC-bound cost alone.
  {
    const Graph g = expand_training_step(models().back().forward());
    std::vector<OpId> vars = sync_variables(g);
    const OpId v = *std::max_element(vars.begin(), vars.end(), [&](OpId a, OpId b) {
      return g.op(a).param_bytes < g.op(b).param_bytes;
    });
    std::printf(
        "\nPS vs all-reduce, vgg11 '%s' (%.0f MB) alone, network seconds (4 hosts x 2 "
        "GPUs; NIC bytes per host: ring 2(p-1)/p = 1.75, hierarchical and sharded PS "
        "2(h-1)/h = 1.5, one PS server (hot) takes (h-1) = 3 in and out)\n",
        g.op(v).name.c_str(), double(g.op(v).param_bytes) / 1e6);
    std::printf("%5s %9s %9s %9s %9s %9s %12s\n", "Gbit", "ring", "hier", "ps-shard", "ps-one",
                "ps/ring", "hot/sharded");
    for (int gb : gbits) {
      const Cluster c = load_cluster_yaml(cluster_file(gb));
      const CostModel cost(c, default_profile());
      Simulator sim(g, c, cost);
      const Problem p{g, c, cost, sim, {}};
      const Plan plan = replicated_plan(p, "bench");
      const SyncCostModel m(g, c, cost, plan);
      const std::vector<int> servers = ps_servers(c, problem_devices(p));
      VariableSync ring, hier;
      hier.algorithm = SyncScheme::kHierarchical;
      const double tr = m.variable_cost(v, ring).network_time;
      const double th = m.variable_cost(v, hier).network_time;
      const double ts = m.variable_cost(v, sharded_ps(servers)).network_time;
      const double t1 = m.variable_cost(v, sharded_ps({servers[0]})).network_time;
      std::printf("%5d %9.4f %9.4f %9.4f %9.4f %9.3f %12.3f\n", gb, tr, th, ts, t1, ts / tr,
                  t1 / ts);
    }
  }

  auto gm = [&](double Row::*f, bool target_rows) {
    std::vector<double> v;
    for (const Row& r : rows) {
      if ((r.sparse && r.gb <= 10) == target_rows && std::isfinite(r.*f))
        v.push_back(r.best / (r.*f));
    }
    return geomean(v);
  };
  auto worst = [&](double Row::*f) {
    double w = 0;
    for (const Row& r : rows) {
      if (!(r.sparse && r.gb <= 10) && std::isfinite(r.*f)) w = std::max(w, (r.*f) / r.best - 1);
    }
    return w * 100;
  };
  std::printf("\nparallax vs horovod, sparse rows: geomean %.2fx faster\n", geomean(parallax_gain));
  for (const std::string& s : crossovers)
    std::printf("PS -> all-reduce crossover, %s\n", s.c_str());
  std::printf(
      "sparse rows <= 10 Gbit/s, geomean speedup over the best builder (target >= 1.1x):\n"
      "  search %.3fx, rl %.3fx, autosync %.3fx, zero-shot %.3fx, long search %.3fx, "
      "bound %.3fx; lossy search: compression %.2fx, staleness 1 %.2fx, both %.2fx\n",
      gm(&Row::search, true), gm(&Row::rl, true), gm(&Row::autosync, true), gm(&Row::zs, true),
      gm(&Row::lng, true), gm(&Row::bound, true), gm(&Row::comp, true), gm(&Row::stale, true),
      gm(&Row::both, true));
  std::printf(
      "elsewhere, worst slowdown vs the best builder (target <= 2%%): search %.1f%%, rl "
      "%.1f%%, autosync %.1f%%, zero-shot %.1f%%\n",
      worst(&Row::search), worst(&Row::rl), worst(&Row::autosync), worst(&Row::zs));
  std::filesystem::remove(policy);
  std::filesystem::remove(policy + ".yaml");
  return 0;
}
