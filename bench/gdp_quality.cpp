// Quality bar of the GDP learned placer, GDP's table suite (Zhou et al. 2019,
// Table 1): RNNLM 2/4 layers, GNMT 2/4/8 layers, Transformer-XL 2/4/8 layers, Inception,
// AmoebaNet, WaveNet 2/4 stacks, each on 2/4/8 GPUs of a cluster (default: the DGX-1 P100
// of datasets/clusters/dgx1_p100.cluster.yaml), all methods side by side in one run:
//
//   best classical   every registered fast classical method (placer_methods(), fast=true)
//                    except anneal, searched and simulated; the fastest non-OOM plan, its name
//   anneal           simulated annealing with the same number of simulator evaluations as
//                    the GDP fine-tuning of the row spent
//   gdp zero-shot    the policy's greedy placement + --samples sampled ones, best kept
//   gdp fine-tuned   zero-shot, then --finetune PPO updates on the graph, best kept
//
// The suite graphs are generated from the synthetic families with the layer / stack counts
// of GDP's table and fixed seeds (7001 + row), so none of them is in the training corpus (the
// program checks that no generated entry of --corpus has the same family and seed).
//
//   ./build/bench/gdp_quality --policy models/pretrained/default.pt
//   ./build/bench/gdp_quality --rows gnmt_4,txl_2 --devices 4 --finetune 10
//
// Prints a table and the geomean summary with the targets; results: docs/results.md.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "agents/gdp/gdp.h"
#include "agents/api/placer.h"
#include "bench/bench_common.h"
#include "datasets/corpus.h"
#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "src/io/cluster_yaml.h"

namespace placer {
namespace {

using bench::format_ms;
using bench::geomean;
using bench::repo_path;
using bench::seconds_since;
using bench::split_list;
using bench::SuiteGraph;

struct Args {
  std::string policy, cluster, corpus;
  std::vector<int> devices = {2, 4, 8};
  std::set<std::string> rows;
  int samples = 16;
  int finetune = 20;
  int ppo_samples = 8;
  double lr = 1e-3;
  uint64_t seed = 1;
  int64_t max_ops = 20000;
};

void usage() {
  std::cerr << "usage: gdp_quality [--policy P] [--cluster C] [--corpus M] [--devices 2,4,8]\n"
               "                   [--rows a,b] [--samples K] [--finetune N] [--ppo-samples S]\n"
               "                   [--lr X] [--seed S] [--max-ops N]\n";
}

Args parse(int argc, char** argv) {
  Args a;
  a.policy = default_policy_path();
  a.cluster = repo_path("datasets/clusters/dgx1_p100.cluster.yaml");
  a.corpus = repo_path("datasets/corpora/default.corpus.yaml");
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--policy") a.policy = value();
    else if (k == "--cluster") a.cluster = value();
    else if (k == "--corpus") a.corpus = value();
    else if (k == "--devices") {
      a.devices.clear();
      for (const std::string& d : split_list(value())) a.devices.push_back(std::stoi(d));
    } else if (k == "--rows") {
      for (const std::string& r : split_list(value())) a.rows.insert(r);
    } else if (k == "--samples") a.samples = std::stoi(value());
    else if (k == "--finetune") a.finetune = std::stoi(value());
    else if (k == "--ppo-samples") a.ppo_samples = std::stoi(value());
    else if (k == "--lr") a.lr = std::stod(value());
    else if (k == "--seed") a.seed = std::stoull(value());
    else if (k == "--max-ops") a.max_ops = std::stoll(value());
    else {
      usage();
      std::exit(2);
    }
  }
  return a;
}

/// Search + validate + simulate; step time, or +inf when the method fails or OOMs.
/// *placement_only: the plan is a plain op placement (no pipeline, partition or replicas),
/// i.e. the kind of plan GDP produces.
double run_classical(const std::string& method, const Problem& p, const SearchBudget& b,
                     double* seconds, bool* placement_only = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    Plan plan = make_placer(method)->search(p, b);
    *seconds = seconds_since(t0);
    if (placement_only) {
      *placement_only = !plan.pipeline.enabled() && plan.partitions.empty() &&
                        plan.data_parallel.replicas <= 1;
    }
    return bench::simulate_plan(p, plan);
  } catch (const std::exception& e) {
    *seconds = seconds_since(t0);
    std::cerr << "  (" << method << " failed: " << e.what() << ")\n";
    return INFINITY;
  }
}

std::string ms(double s) { return format_ms(s, 2); }

struct Row {
  std::string label;
  int k = 0;
  int64_t ops = 0;
  std::string best_name, place_name;
  double best = INFINITY, best_s = 0;
  double place = INFINITY;  ///< best placement-only classical plan
  double anneal = INFINITY, anneal_s = 0;
  double zero = INFINITY, zero_s = 0;
  double fine = INFINITY, fine_s = 0;
  int64_t fine_evals = 0;
};

int run(const Args& a) {
  if (!gdp_available()) {
    std::cerr << "gdp_quality: built without LibTorch\n";
    return 2;
  }
  const GdpPolicy policy = GdpPolicy::load(a.policy);
  const Cluster cluster = load_cluster_yaml(a.cluster);
  const CostModel cost = bench::default_cost_model(cluster);
  std::set<std::pair<std::string, uint64_t>> corpus_specs;
  if (!a.corpus.empty() && std::filesystem::exists(a.corpus)) {
    const Corpus c = load_corpus(a.corpus);
    for (const CorpusEntry& e : c.entries) {
      if (e.is_generated()) corpus_specs.insert({e.generate.family, e.generate.seed});
    }
  }
  // anneal has its own column, at the fine-tuning's evaluation count.
  const std::vector<std::string> classical = bench::fast_classical_methods();
  std::printf("# policy %s (%lld parameters, %lld training updates, corpus %s)\n",
              a.policy.c_str(), static_cast<long long>(policy.num_parameters()),
              static_cast<long long>(policy.meta().updates), policy.meta().corpus_hash.c_str());
  std::printf("# cluster %s; zero-shot: greedy + %d samples; fine-tune: %d PPO updates x %d "
              "samples, lr %g; seed %llu\n",
              cluster.name.c_str(), a.samples, a.finetune, a.ppo_samples, a.lr,
              static_cast<unsigned long long>(a.seed));
  std::printf("%-10s %2s %6s | %-12s %8s %6s | %-12s %8s | %8s %6s | %9s %6s | %9s %6s %5s | "
              "%6s %6s %6s %6s\n",
              "graph", "k", "ops", "best classic", "ms", "s", "best placing", "ms", "anneal", "s",
              "zero-shot", "s", "finetuned", "s", "evals", "ft/cl", "ft/pl", "zs/ft", "ft/an");
  std::fflush(stdout);

  std::vector<Row> rows;
  const std::vector<SuiteGraph> graphs = bench::gdp_suite();
  for (const SuiteGraph& sg : graphs) {
    if (!a.rows.empty() && !a.rows.count(sg.label)) continue;
    if (corpus_specs.count({sg.family, sg.seed})) {
      std::printf("# WARNING: %s (seed %llu) is also generated by the corpus\n", sg.label.c_str(),
                  static_cast<unsigned long long>(sg.seed));
    }
    bench::StepProblem sp(bench::family_training_step(sg), cluster, cost);
    const Graph& step = sp.graph();
    if (static_cast<int64_t>(step.num_ops()) > a.max_ops) {
      std::printf("%-10s skipped: %zu ops > --max-ops %lld\n", sg.label.c_str(), step.num_ops(),
                  static_cast<long long>(a.max_ops));
      continue;
    }
    for (int k : a.devices) {
      if (k > cluster.num_devices()) continue;
      const Problem p = sp.problem(bench::first_devices(cluster, k));
      Row r;
      r.label = sg.label;
      r.k = k;
      r.ops = static_cast<int64_t>(step.num_ops());
      SearchBudget b;
      b.seed = a.seed;
      for (const std::string& m : classical) {
        double s = 0;
        bool placement_only = false;
        const double t = run_classical(m, p, b, &s, &placement_only);
        r.best_s += s;
        if (t < r.best) {
          r.best = t;
          r.best_name = m;
        }
        if (placement_only && t < r.place) {
          r.place = t;
          r.place_name = m;
        }
      }
      GdpPlaceOptions zo;
      zo.samples = a.samples;
      GdpPlaceResult z = gdp_place(policy, p, zo, b);
      r.zero = z.plan.predicted.oom ? INFINITY : z.best_time;
      r.zero_s = z.seconds;
      GdpPlaceOptions fo = zo;
      fo.finetune_updates = a.finetune;
      fo.ppo.samples = a.ppo_samples;
      fo.ppo.lr = a.lr;
      GdpPlaceResult f = gdp_place(policy, p, fo, b);
      r.fine = f.plan.predicted.oom ? INFINITY : f.best_time;
      r.fine_s = f.seconds;
      r.fine_evals = f.evaluations;
      SearchBudget ab = b;
      ab.max_evaluations = f.evaluations;
      r.anneal = run_classical("anneal", p, ab, &r.anneal_s);
      std::printf(
          "%-10s %2d %6lld | %-12s %8s %6.2f | %-12s %8s | %8s %6.2f | %9s %6.2f | %9s %6.2f "
          "%5lld | %6.3f %6.3f %6.3f %6.3f\n",
          r.label.c_str(), k, static_cast<long long>(r.ops), r.best_name.c_str(),
          ms(r.best).c_str(), r.best_s, r.place_name.c_str(), ms(r.place).c_str(),
          ms(r.anneal).c_str(), r.anneal_s, ms(r.zero).c_str(), r.zero_s, ms(r.fine).c_str(),
          r.fine_s, static_cast<long long>(r.fine_evals), r.fine / r.best, r.fine / r.place,
          r.zero / r.fine, r.fine / r.anneal);
      std::fflush(stdout);
      rows.push_back(r);
    }
  }
  std::vector<double> ft_cl, ft_pl, zs_ft, ft_an;
  int wins = 0, wins_pl = 0;
  for (const Row& r : rows) {
    if (!std::isfinite(r.best) || !std::isfinite(r.fine) || !std::isfinite(r.zero)) continue;
    ft_cl.push_back(r.fine / r.best);
    if (std::isfinite(r.place)) ft_pl.push_back(r.fine / r.place);
    if (r.fine < r.place) ++wins_pl;
    zs_ft.push_back(r.zero / r.fine);
    if (std::isfinite(r.anneal)) ft_an.push_back(r.fine / r.anneal);
    if (r.fine < r.best) ++wins;
  }
  const double g1 = geomean(ft_cl), g2 = geomean(zs_ft), g3 = geomean(ft_an);
  const double g4 = geomean(ft_pl);
  std::printf("\n# rows %zu (finite %zu); fine-tuned faster than best classical in %d, than "
              "the best placement-only classical in %d\n",
              rows.size(), ft_cl.size(), wins, wins_pl);
  std::printf("# geomean fine-tuned / best classical = %.4f  (target <= 0.95: %s)\n", g1,
              g1 <= 0.95 ? "met" : "MISSED");
  std::printf("# geomean fine-tuned / best placement-only classical = %.4f  (<= 0.95: %s)\n",
              g4, g4 <= 0.95 ? "met" : "MISSED");
  std::printf("# geomean zero-shot / fine-tuned     = %.4f  (target <= 1.10: %s)\n", g2,
              g2 <= 1.10 ? "met" : "MISSED");
  std::printf("# geomean fine-tuned / anneal        = %.4f  (target <= 1.00: %s)\n", g3,
              g3 <= 1.0 ? "met" : "MISSED");
  return 0;
}

}  // namespace
}  // namespace placer

int main(int argc, char** argv) {
  try {
    return placer::run(placer::parse(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "gdp_quality: " << e.what() << "\n";
    return 1;
  }
}
