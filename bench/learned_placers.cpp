// The learned placers side by side: colocrl, hdp, placeto (online),
// gdp (the shipped policy, PPO fine-tuned on the graph), gdp+stages (its own shipped
// policy, every placement scored as the pipeline it reads as, agents/staged_methods.h),
// anneal and the best classical fast placer, all in one process, at the same budget of simulated placements, on the DGX-1 P100
// cluster (datasets/clusters/dgx1_p100.cluster.yaml), first K GPUs. Rows (graph x devices):
//
//   --suite placeto   Placeto's suite (bench_common.h placeto_suite): enas_cnn (cifar10),
//                     enas_rnn (ptb), gnmt (nmt), seeds 1000..1002 at default sizes, on 2
//                     and 4 GPUs: 18 rows
//   --suite gdp       GDP's suite (gdp_suite, the graphs and seeds of bench/gdp_quality.cpp),
//                     each graph on one device count (its layer / stack count, Inception 2,
//                     AmoebaNet 4): 12 rows
//   --suite all       both (30 rows); --devices K,K.. replaces the suites' device counts
//   --rows a,b@K      ad-hoc rows by label (of either suite), on --devices (default 4) or @K
//
// Per row, seed (--seeds N: seeds --seed .. --seed + N - 1) and method: the step time of the
// best plan, the wall time, and for the searches "placements sampled until the best was
// found" (to-best: colocrl / hdp / placeto report it exactly, gdp and anneal from their
// progress curves) and until within 5% of a common target (the best of gdp and hdp on that
// row and seed: GDP's faster-convergence claim). The table shows per row the means over the
// seeds; the summaries count every row x seed:
//
//   Placeto's claim   comparable placements with far fewer samples than the RNN placers:
//                     placeto's step time and to-best against colocrl's and hdp's
//   GDP's claim       faster convergence than HDP: samples to within 5% of the common target
//   convergence       per method: samples to within 5% of its own final best, and the
//                     geomean of its step time over the best fast classical plan's
//
// and, with --zs-updates > 0, Placeto's zero-shot generalisation within a family: a policy
// trained by placeto_train on --zs-graphs members of --zs-family (seeds 1..), then on
// --zs-unseen unseen members (seeds 5000..) zero-shot (greedy + 7 samples) vs online
// Placeto retrained on the graph with --budget placements.
//
// --csv FILE writes one line per row x seed x method (the table and summaries can be
// rebuilt from it); progress goes to stderr, one line per method run.
//
//   ./build/bench/learned_placers --budget 160
//   ./build/bench/learned_placers --rows enas_cnn_1000,gnmt_2 --budget 200 --zs-updates 20
//   ./build/bench/learned_placers --suite all --budget 1000 --seeds 3 --csv lp.csv
//   ./build/bench/learned_placers --suite gdp --list
//
// Budgets are small next to the papers' (thousands of placements): docs/learned_placers.md.
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agents/api/placer.h"
#include "agents/gdp/gdp.h"
#include "agents/placeto/placeto.h"
#include "agents/seq2seq/colocrl.h"  // seq2seq_available
#include "agents/staged_methods.h"
#include "bench/bench_common.h"
#include "bench/learned_placers.h"
#include "datasets/family_registry.h"
#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

namespace placer {
namespace {

using namespace learned_placers_bench;

using bench::geomean;
using bench::seconds_since;
using bench::split_list;
using bench::SuiteGraph;


/// Every labelled graph of both suites (the --rows names).
std::vector<SuiteGraph> all_graphs() {
  std::vector<SuiteGraph> s = bench::placeto_suite();
  for (const SuiteGraph& g : bench::gdp_suite()) s.push_back(g);
  return s;
}

void usage() {
  std::cerr << "usage: learned_placers [--suite placeto|gdp|all] [--rows a,b@K,...]\n"
               "                       [--devices K,K..] [--methods m,m..] [--budget N]\n"
               "                       [--seed S] [--seeds N] [--max-ops N] [--csv FILE]\n"
               "                       [--list] [--threads T] [--policy P] [--stages-policy P]\n"
               "                       [--cluster C]\n"
               "                       [--gdp-samples K] [--ppo-samples S]\n"
               "                       [--zs-family F] [--zs-graphs G] [--zs-updates U]\n"
               "                       [--zs-unseen N] [--zs-devices K]\n"
               "methods: anneal colocrl hdp placeto gdp gdp+stages (default all)\n"
               "rows: ";
  for (const SuiteGraph& g : all_graphs()) std::cerr << g.label << " ";
  std::cerr << "\n";
}

[[noreturn]] void bad(const std::string& message) {
  std::cerr << "learned_placers: " << message << "\n";
  usage();
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  a.policy = default_policy_path();
  a.stages_policy = staged_policy_path();
  a.cluster = bench::repo_path("datasets/clusters/dgx1_p100.cluster.yaml");
  bool rows_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) bad(k + " needs a value");
      return argv[++i];
    };
    try {
      if (k == "--suite")
        a.suite = value();
      else if (k == "--rows") {
        a.rows = split_list(value());
        rows_given = true;
      } else if (k == "--devices")
        a.devices = bench::parse_int_list(value(), "--devices");
      else if (k == "--methods")
        a.methods = split_list(value());
      else if (k == "--budget")
        a.budget = std::stoll(value());
      else if (k == "--seed")
        a.seed = std::stoull(value());
      else if (k == "--seeds")
        a.seeds = std::stoi(value());
      else if (k == "--threads")
        a.threads = std::stoi(value());
      else if (k == "--policy")
        a.policy = value();
      else if (k == "--stages-policy")
        a.stages_policy = value();
      else if (k == "--cluster")
        a.cluster = value();
      else if (k == "--gdp-samples")
        a.gdp_samples = std::stoi(value());
      else if (k == "--ppo-samples")
        a.ppo_samples = std::stoi(value());
      else if (k == "--max-ops")
        a.max_ops = std::stoll(value());
      else if (k == "--csv")
        a.csv = value();
      else if (k == "--list")
        a.list = true;
      else if (k == "--zs-family")
        a.zs_family = value();
      else if (k == "--zs-graphs")
        a.zs_graphs = std::stoi(value());
      else if (k == "--zs-updates")
        a.zs_updates = std::stoi(value());
      else if (k == "--zs-unseen")
        a.zs_unseen = std::stoi(value());
      else if (k == "--zs-devices")
        a.zs_devices = std::stoi(value());
      else if (k == "--help" || k == "-h") {
        usage();
        std::exit(0);
      } else {
        bad("unknown option '" + k + "'");
      }
    } catch (const std::logic_error& e) {  // std::stoi & co.: not a number
      bad(k + ": bad value (" + e.what() + ")");
    } catch (const Error& e) {
      bad(e.what());
    }
  }
  if (!a.suite.empty() && a.suite != "placeto" && a.suite != "gdp" && a.suite != "all")
    bad("--suite must be placeto, gdp or all, not '" + a.suite + "'");
  if (!a.suite.empty() && rows_given) bad("--suite and --rows exclude each other");
  if (a.suite.empty() && !rows_given) a.rows = {"enas_cnn_1000", "gnmt_2"};
  if (a.methods.empty()) bad("--methods lists no method");
  for (const std::string& m : a.methods) {
    if (std::find(kMethods.begin(), kMethods.end(), m) == kMethods.end())
      bad("unknown method '" + m + "' in --methods");
  }
  // Table order, each method once.
  std::vector<std::string> ordered;
  for (const std::string& m : kMethods) {
    if (std::find(a.methods.begin(), a.methods.end(), m) != a.methods.end()) ordered.push_back(m);
  }
  a.methods = ordered;
  for (int d : a.devices) {
    if (d < 1) bad("--devices counts must be >= 1");
  }
  if (a.budget < 1 || a.seeds < 1 || a.threads < 1 || a.ppo_samples < 1 || a.gdp_samples < 0 ||
      a.zs_graphs < 1 || a.zs_updates < 0 || a.zs_unseen < 0 || a.zs_devices < 1 || a.max_ops < 1) {
    bad("--budget, --seeds, --threads, --ppo-samples, --zs-graphs, --zs-devices and "
        "--max-ops must be >= 1, the other counts >= 0");
  }
  return a;
}

/// One row of the table: a suite graph on its first k devices.
struct RowSpec {
  SuiteGraph graph;
  int k = 0;
};

/// The rows of --suite or --rows, in order; exits with status 2 for an unknown label.
std::vector<RowSpec> row_specs(const Args& a) {
  std::vector<RowSpec> out;
  auto add = [&](const SuiteGraph& g, const std::vector<int>& own) {
    for (int k : a.devices.empty() ? own : a.devices) out.push_back({g, k});
  };
  if (!a.suite.empty()) {
    if (a.suite != "gdp") {
      for (const SuiteGraph& g : bench::placeto_suite()) add(g, g.devices);
    }
    if (a.suite != "placeto") {
      for (const SuiteGraph& g : bench::gdp_suite()) add(g, g.devices);
    }
    return out;
  }
  std::map<std::string, SuiteGraph> by_label;
  for (const SuiteGraph& g : all_graphs()) by_label[g.label] = g;
  for (const std::string& r : a.rows) {
    const size_t at = r.find('@');
    const std::string label = r.substr(0, at);
    if (!by_label.count(label)) bad("unknown row '" + label + "'");
    if (at == std::string::npos) {
      add(by_label[label], {4});
    } else {
      std::vector<int> k;
      try {
        k = bench::parse_int_list(r.substr(at + 1), "--rows " + r);
      } catch (const Error& e) {
        bad(e.what());
      }
      if (k.size() != 1 || k[0] < 1) bad("--rows " + r + ": expected label@K with K >= 1");
      out.push_back({by_label[label], k[0]});
    }
  }
  return out;
}


/// Reads the "best <number> <unit>" status of the searches' progress reports ("1.234 ms",
/// human_time's "850 us" / "1.23 s"); NaN when the status has none or the best is OOM.
double parse_best(const std::string& status) {
  const size_t at = status.find("best ");
  if (at == std::string::npos || status.find("OOM") != std::string::npos) return NAN;
  const char* begin = status.c_str() + at + 5;
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin) return NAN;
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  if (unit.rfind("ms", 0) == 0) return v * 1e-3;
  if (unit.rfind("us", 0) == 0) return v * 1e-6;
  if (unit.rfind("ns", 0) == 0) return v * 1e-9;
  if (unit.rfind("s", 0) == 0) return v;
  return NAN;
}

SearchBudget recording(SearchBudget b, Curve* curve) {
  b.progress = [curve](int64_t done, int64_t, const std::string& status) {
    const double t = parse_best(status);
    if (std::isfinite(t)) curve->push_back({done, t});
  };
  return b;
}

/// First placement count of the curve whose best is <= target; -1 when never.
int64_t reached(const Curve& c, double target) {
  for (const auto& [n, t] : c) {
    // The curve's times are printed with 3-4 significant digits.
    if (t <= target * (1 + 5e-3)) return n;
  }
  return -1;
}



template <typename F>
Result guarded(const std::string& name, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  Result r;
  try {
    r = f();
  } catch (const std::exception& e) {
    std::cerr << "  (" << name << " failed: " << e.what() << ")\n";
    r = Result{};
    r.note = "failed";
  }
  r.seconds = seconds_since(t0);
  return r;
}

/// Progress line on stderr: "[row i/n] label@k seed s: what (s), elapsed".
struct Progress {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  size_t row = 0, rows = 0;
  std::string where;
  void done(const std::string& what, const Result& r) const {
    std::fprintf(stderr, "[row %zu/%zu] %s: %-8s %9s ms  %7.1f s  (elapsed %.0f s)\n", row, rows,
                 where.c_str(), what.c_str(), ms(r.time).c_str(), r.seconds, seconds_since(t0));
    std::fflush(stderr);
  }
};

/// The options the bench gives a method (`--set` keys of its option table): GDP's policy,
/// its zero-shot samples and as many PPO updates as the budget pays for; the other methods
/// keep their defaults.
MethodSettings bench_settings(const Args& a, const std::string& method) {
  const std::map<std::string, std::string> policy = {{"gdp", a.policy},
                                                     {"gdp+stages", a.stages_policy}};
  MethodSettings s;
  const auto it = policy.find(method);
  if (it == policy.end()) return s;
  const int64_t updates = (a.budget + a.ppo_samples - 1) / a.ppo_samples;
  s.sets = {"policy=" + it->second, "samples=" + std::to_string(a.gdp_samples),
            "ppo_samples=" + std::to_string(a.ppo_samples), "finetune=" + std::to_string(updates)};
  return s;
}

/// GDP's curve in placements: greedy + samples, then ppo_samples per fine-tuning update (the
/// last update may be cut short); to-best where it reaches the plan's step time.
void read_gdp_curve(const Args& a, const SearchOutcome& o, Result* x) {
  const int64_t zero = 1 + a.gdp_samples;
  x->curve = {{std::min<int64_t>(zero, x->evaluations), o.stats.value("zero_shot_time")}};
  for (size_t u = 0; u < o.stats.best_curve.size(); ++u) {
    x->curve.push_back({std::min<int64_t>(zero + int64_t(u + 1) * a.ppo_samples, x->evaluations),
                        o.stats.best_curve[u]});
  }
  x->to_best = reached(x->curve, o.plan.predicted.step_time);
}

/// To-best from what the search reports: GDP its zero-shot time and a best per update,
/// colocrl / hdp / placeto the run that found the best (placeto also its episodes), anneal
/// only its progress curve (a report every 16 placements).
void read_to_best(const Args& a, const SearchOutcome& o, Result* x) {
  const SearchStats& s = o.stats;
  if (!std::isnan(s.value("zero_shot_time"))) {
    read_gdp_curve(a, o, x);
  } else if (s.best_run > 0) {
    x->to_best = s.best_run;
    // Every Placeto MDP step is simulated (intermediate rewards): an episode is groups + 1
    // simulations, so in complete placements the best came at this episode.
    const double episodes = s.value("episodes");
    if (s.runs > 0 && episodes > 0) {
      const double per = double(s.runs) / episodes;
      x->episodes_to_best = static_cast<int64_t>(std::ceil(double(s.best_run) / per));
    }
  } else {
    x->to_best = reached(x->curve, s.value("best_step_time"));
    // Found after the last report: at most the placements spent.
    if (x->to_best < 0) x->to_best = x->evaluations;
  }
}

/// One method built through the registry and run on the problem.
Result run_method(const Args& a, const Problem& p, const std::string& method,
                  const SearchBudget& b) {
  return guarded(method, [&] {
    Result x;
    const std::unique_ptr<Placer> placer = make_placer(method, bench_settings(a, method));
    const SearchOutcome o = placer->search_outcome(p, recording(b, &x.curve));
    const PlanPrediction& predicted = o.plan.predicted;
    x.time = predicted.valid && predicted.oom ? INFINITY : bench::simulate_plan(p, o.plan);
    x.evaluations = o.stats.runs;
    read_to_best(a, o, &x);
    return x;
  });
}

SeedRun run_seed(const Args& a, const Problem& p, uint64_t seed,
                 const std::vector<std::string>& classical, const Progress& progress) {
  SeedRun run;
  run.seed = seed;
  SearchBudget b;
  b.seed = seed;
  const auto c0 = std::chrono::steady_clock::now();
  for (const std::string& name : classical) {
    const Result r = guarded(name, [&] {
      Result x;
      x.time = bench::simulate_plan(p, make_placer(name)->search(p, b));
      return x;
    });
    if (r.time < run.classic) {
      run.classic = r.time;
      run.classic_name = name;
    }
  }
  run.classic_seconds = seconds_since(c0);
  {
    Result c;
    c.time = run.classic;
    c.seconds = run.classic_seconds;
    progress.done("classic", c);
  }
  b.max_evaluations = a.budget;
  for (const std::string& method : a.methods) {
    run.m[method] = run_method(a, p, method, b);
    progress.done(method, run.m[method]);
  }
  for (auto& [method, x] : run.m) {
    if (std::isfinite(x.time)) x.own5 = reached(x.curve, x.time * 1.05);
  }
  if (run.m.count("gdp") && run.m.count("hdp")) {
    const double target = std::min(run.m["gdp"].time, run.m["hdp"].time) * 1.05;
    if (std::isfinite(target)) {
      for (const char* m : {"gdp", "hdp"}) run.m[m].within5 = reached(run.m[m].curve, target);
    }
  }
  return run;
}

/// Placeto built through the registry with `sets` (`--set` keys of its option table).
SearchOutcome placeto_outcome(const Problem& p, std::vector<std::string> sets,
                              const SearchBudget& b) {
  MethodSettings s;
  s.sets = std::move(sets);
  return make_placer("placeto", s)->search_outcome(p, b);
}

/// The outcome's predicted step time; inf when it runs out of memory.
double best_time(const SearchOutcome& o) {
  return o.plan.predicted.oom ? INFINITY : o.plan.predicted.step_time;
}

void zero_shot(const Args& a, const Cluster& cluster, const CostModel& cost) {
  const std::vector<int> devs = bench::first_devices(cluster, a.zs_devices);
  PlacetoTrainConfig t;
  t.family = a.zs_family;
  t.graphs = a.zs_graphs;
  t.first_seed = 1;
  t.devices = devs;
  t.updates = a.zs_updates;
  t.seed = a.seed;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("learned_placers_zs_" + std::to_string(a.seed));
  t.output_dir = dir.string();
  t.checkpoint_every = a.zs_updates;
  const auto t0 = std::chrono::steady_clock::now();
  const PlacetoTrainResult tr = placeto_train(t, cluster, cost);
  std::printf(
      "\n# Placeto zero-shot within %s on devices 0..%d: trained %lld updates x %d "
      "episodes on %d members (seeds 1..%d), %lld placements, %.0f s\n",
      a.zs_family.c_str(), a.zs_devices - 1, static_cast<long long>(tr.updates), t.rl.episodes,
      t.graphs, t.graphs, static_cast<long long>(tr.evaluations), seconds_since(t0));
  std::printf("%-16s %6s %9s | %9s %9s %6s | %9s %8s %6s\n", "unseen graph", "ops", "device 0",
              "zs greedy", "zs best8", "s", "online", "to-best", "s");
  std::vector<double> ratio;
  for (int i = 0; i < a.zs_unseen; ++i) {
    const uint64_t seed = 5000 + uint64_t(i);
    bench::StepProblem sp(bench::family_training_step({"", a.zs_family, seed, {}, {}}), cluster,
                          cost);
    const Graph& g = sp.graph();
    const Problem p = sp.problem(devs);
    SearchBudget b;
    b.seed = a.seed;
    b.max_evaluations = a.budget;
    const SearchOutcome greedy = placeto_outcome(p, {"policy=" + tr.policy_path, "samples=0"}, b);
    auto z0 = std::chrono::steady_clock::now();
    const SearchOutcome zs = placeto_outcome(p, {"policy=" + tr.policy_path, "samples=7"}, b);
    const double zs_s = seconds_since(z0);
    z0 = std::chrono::steady_clock::now();
    const SearchOutcome on = placeto_outcome(p, {}, b);
    const double on_s = seconds_since(z0);
    const double zt = best_time(zs);
    const double ot = best_time(on);
    const double single =
        bench::simulate_plan(p, placement_plan(p, std::vector<int>(g.num_ops(), 0), "single"));
    std::printf("%-16s %6zu %9s | %9s %9s %6.1f | %9s %4lld/%-3lld %6.1f\n",
                (a.zs_family + "_" + std::to_string(seed)).c_str(), g.num_ops(), ms(single).c_str(),
                ms(best_time(greedy)).c_str(), ms(zt).c_str(), zs_s, ms(ot).c_str(),
                static_cast<long long>(on.stats.best_run), static_cast<long long>(on.stats.runs),
                on_s);
    std::fflush(stdout);
    if (std::isfinite(zt) && std::isfinite(ot)) ratio.push_back(zt / ot);
  }
  std::printf(
      "# geomean zero-shot (best of 8) / online (%lld placements) = %.4f over %zu "
      "graphs\n",
      static_cast<long long>(a.budget), geomean(ratio), ratio.size());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

/// Whether every row (and the zero-shot part) fits on the cluster; prints why not.
bool fits_cluster(const Args& a, const Cluster& cluster, const std::vector<RowSpec>& specs) {
  for (const RowSpec& s : specs) {
    if (s.k > cluster.num_devices()) {
      std::cerr << "learned_placers: row " << s.graph.label << " on " << s.k
                << " devices: the cluster " << cluster.name << " has " << cluster.num_devices()
                << "\n";
      return false;
    }
  }
  if (a.zs_updates > 0 && a.zs_devices > cluster.num_devices()) {
    std::cerr << "learned_placers: --zs-devices " << a.zs_devices << " > the cluster's "
              << cluster.num_devices() << " devices\n";
    return false;
  }
  return true;
}

/// --list: the rows and their training-step sizes, nothing run.
void list_rows(const Args& a, const std::vector<RowSpec>& specs) {
  std::printf("%-14s %-15s %5s %2s %6s\n", "graph", "family", "seed", "k", "ops");
  std::map<std::string, int64_t> ops;
  for (const RowSpec& s : specs) {
    if (!ops.count(s.graph.label))
      ops[s.graph.label] = static_cast<int64_t>(bench::family_training_step(s.graph).num_ops());
    const int64_t n = ops[s.graph.label];
    std::printf("%-14s %-15s %5llu %2d %6lld%s\n", s.graph.label.c_str(), s.graph.family.c_str(),
                static_cast<unsigned long long>(s.graph.seed), s.k, static_cast<long long>(n),
                n > a.max_ops ? "  (skipped: > --max-ops)" : "");
  }
}

/// The "# ..." lines above the table: the run's settings and the columns' meaning.
void print_preamble(const Args& a, const Cluster& cluster, size_t rows) {
  std::string methods;
  for (const std::string& m : a.methods) methods += (methods.empty() ? "" : ", ") + m;
  std::printf(
      "# cluster %s; %zu rows (%s); budget %lld simulated placements per search (%s); "
      "seeds %llu..%llu; torch threads %d\n",
      cluster.name.c_str(), rows, a.suite.empty() ? "--rows" : ("suite " + a.suite).c_str(),
      static_cast<long long>(a.budget), methods.c_str(), static_cast<unsigned long long>(a.seed),
      static_cast<unsigned long long>(a.seed + uint64_t(a.seeds) - 1), a.threads);
  if (has(a, "gdp") || has(a, "gdp+stages")) {
    std::printf("# gdp: %s%s%s, greedy + %d samples, then PPO updates of %d samples\n",
                has(a, "gdp") ? a.policy.c_str() : "",
                has(a, "gdp+stages") ? "; gdp+stages: " : "",
                has(a, "gdp+stages") ? a.stages_policy.c_str() : "", a.gdp_samples, a.ppo_samples);
  }
  std::printf(
      "# k = devices (0..k-1); step times in ms, means over the seeds; 'tb/ev' = "
      "placements until the best was found / spent%s\n",
      has(a, "gdp") && has(a, "hdp") ? "; 'w5' = until within 5% of min(gdp, hdp)" : "");
  print_header(a);
}

int run(const Args& a) {
  if (!gdp_available() || !seq2seq_available() || !placeto_available()) {
    std::cerr << "learned_placers: built without LibTorch\n";
    return 2;
  }
  at::set_num_threads(a.threads);
  const Cluster cluster = load_cluster_yaml(a.cluster);
  const CostModel cost = bench::default_cost_model(cluster);
  const std::vector<RowSpec> specs = row_specs(a);
  if (!fits_cluster(a, cluster, specs)) return 2;
  if (a.list) {
    list_rows(a, specs);
    return 0;
  }
  std::ofstream csv;
  if (!a.csv.empty()) {
    csv.open(a.csv);
    if (!csv) throw FileError(a.csv + ": cannot open for writing");
    write_csv_header(csv);
  }
  const std::vector<std::string> classical = bench::fast_classical_methods();
  print_preamble(a, cluster, specs.size());

  Progress progress;
  progress.rows = specs.size();
  std::vector<RowResult> rows;
  std::vector<std::string> skipped;
  // Rows of one graph are adjacent: its training step and simulator are built once.
  std::unique_ptr<bench::StepProblem> sp;
  std::string sp_label;
  for (size_t i = 0; i < specs.size(); ++i) {
    const RowSpec& spec = specs[i];
    if (!sp || sp_label != spec.graph.label) {
      sp.reset();
      sp = std::make_unique<bench::StepProblem>(bench::family_training_step(spec.graph), cluster,
                                                cost);
      sp_label = spec.graph.label;
    }
    RowResult r;
    r.label = spec.graph.label;
    r.k = spec.k;
    r.ops = static_cast<int64_t>(sp->graph().num_ops());
    const std::string where = r.label + "@" + std::to_string(r.k);
    if (r.ops > a.max_ops) {
      std::printf("%-14s %2d %5lld skipped: > --max-ops %lld\n", r.label.c_str(), r.k,
                  static_cast<long long>(r.ops), static_cast<long long>(a.max_ops));
      std::fprintf(stderr, "[row %zu/%zu] %s: skipped, %lld ops > --max-ops\n", i + 1, specs.size(),
                   where.c_str(), static_cast<long long>(r.ops));
      skipped.push_back(where + " (" + std::to_string(r.ops) + " ops)");
      continue;
    }
    const Problem p = sp->problem(bench::first_devices(cluster, spec.k));
    progress.row = i + 1;
    for (int s = 0; s < a.seeds; ++s) {
      const uint64_t seed = a.seed + uint64_t(s);
      progress.where = where + " seed " + std::to_string(seed);
      r.runs.push_back(run_seed(a, p, seed, classical, progress));
      if (csv.is_open()) write_csv(csv, r, r.runs.back());
    }
    print_row(a, r);
    rows.push_back(std::move(r));
  }
  if (!skipped.empty()) {
    std::printf("# skipped (training step > --max-ops %lld):", static_cast<long long>(a.max_ops));
    for (const std::string& s : skipped) std::printf(" %s", s.c_str());
    std::printf("\n");
  }
  summaries(a, rows);
  std::fprintf(stderr, "learned_placers: %zu rows x %d seeds in %.0f s\n", rows.size(), a.seeds,
               seconds_since(progress.t0));

  if (a.zs_updates > 0) zero_shot(a, cluster, cost);
  return 0;
}

}  // namespace
}  // namespace placer

int main(int argc, char** argv) {
  try {
    return placer::run(placer::parse(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "learned_placers: " << e.what() << "\n";
    return 1;
  }
}
