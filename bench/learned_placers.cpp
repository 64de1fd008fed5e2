// The learned placers side by side (issue 8, "Reports"): colocrl, hdp, placeto (online),
// gdp (the shipped policy, PPO fine-tuned on the graph), anneal and the best classical fast
// placer, all in one process, at the same budget of simulated placements, on rows of the
// Placeto suite (families enas_cnn / gnmt, default sizes, seeds 1000+) and of GDP's suite
// (the layer counts and seeds 7001 + index of bench/gdp_quality.cpp), on the DGX-1 P100
// cluster (datasets/clusters/dgx1_p100.cluster.yaml), first --devices GPUs.
//
// Per row and method: the step time of the best plan, the wall time, and for the searches
// "placements sampled until the best was found" (to-best: colocrl / hdp / placeto report it
// exactly, gdp and anneal from their progress curves) and until within 5% of a common target
// (the best of gdp and hdp on that row: GDP's faster-convergence claim). Then two summaries:
//
//   Placeto's claim   comparable placements with far fewer samples than the RNN placers:
//                     placeto's step time and to-best against colocrl's and hdp's
//   GDP's claim       faster convergence than HDP: samples to within 5% of the common target
//
// and, with --zs-updates > 0, Placeto's zero-shot generalisation within a family: a policy
// trained by placeto_train on --zs-graphs members of --zs-family (seeds 1..), then on
// --zs-unseen unseen members (seeds 5000..) zero-shot (greedy + 7 samples) vs online
// Placeto retrained on the graph with --budget placements.
//
//   ./build/bench/learned_placers --budget 160
//   ./build/bench/learned_placers --rows enas_cnn_1000,gnmt_2 --budget 200 --zs-updates 20
//
// Budgets are small next to the papers' (thousands of placements): docs/learned_placers.md.
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "agents/anneal.h"
#include "agents/colocrl.h"
#include "agents/gdp.h"
#include "agents/hdp.h"
#include "agents/placer.h"
#include "agents/placeto.h"
#include "datasets/family_registry.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"

namespace placer {
namespace {

struct SuiteGraph {
  std::string label;
  std::string family;
  uint64_t seed = 0;
  std::map<std::string, int64_t> fixed;
};

// Placeto's suite: family members at default sizes; GDP's: gdp_quality's rows and seeds.
std::vector<SuiteGraph> suite() {
  std::vector<SuiteGraph> s = {{"enas_cnn_1000", "enas_cnn", 1000, {}},
                               {"enas_cnn_1001", "enas_cnn", 1001, {}},
                               {"gnmt_1000", "gnmt", 1000, {}},
                               {"gnmt_1001", "gnmt", 1001, {}}};
  const std::vector<std::pair<std::string, std::pair<std::string, std::map<std::string, int64_t>>>>
      gdp = {{"rnnlm_2", {"rnnlm", {{"layers", 2}}}},
             {"rnnlm_4", {"rnnlm", {{"layers", 4}}}},
             {"gnmt_2", {"gnmt", {{"layers", 2}}}},
             {"gnmt_4", {"gnmt", {{"layers", 4}}}},
             {"gnmt_8", {"gnmt", {{"layers", 8}}}},
             {"txl_2", {"transformer_xl", {{"layers", 2}}}},
             {"txl_4", {"transformer_xl", {{"layers", 4}}}},
             {"txl_8", {"transformer_xl", {{"layers", 8}}}},
             {"inception", {"inception", {}}},
             {"amoebanet", {"amoebanet", {}}},
             {"wavenet_2", {"wavenet", {{"stacks", 2}}}},
             {"wavenet_4", {"wavenet", {{"stacks", 4}}}}};
  for (size_t i = 0; i < gdp.size(); ++i) {
    s.push_back({gdp[i].first, gdp[i].second.first, 7001 + i, gdp[i].second.second});
  }
  return s;
}

struct Args {
  std::string policy, cluster;
  std::vector<std::string> rows = {"enas_cnn_1000", "gnmt_2"};
  int devices = 4;
  int64_t budget = 160;
  uint64_t seed = 1;
  int threads = 1;
  int gdp_samples = 7;  ///< zero-shot samples before PPO (greedy + these)
  int ppo_samples = 8;
  int64_t max_ops = 20000;
  std::string zs_family = "enas_cnn";
  int zs_graphs = 8, zs_updates = 0, zs_unseen = 2;
};

std::string repo_path(const std::string& rel) {
  const std::filesystem::path here = std::filesystem::path(__FILE__).parent_path().parent_path();
  const std::filesystem::path p = here / rel;
  return std::filesystem::exists(p) ? p.string() : rel;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void usage() {
  std::cerr << "usage: learned_placers [--rows a,b] [--devices K] [--budget N] [--seed S]\n"
               "                       [--threads T] [--policy P] [--cluster C]\n"
               "                       [--gdp-samples K] [--ppo-samples S] [--max-ops N]\n"
               "                       [--zs-family F] [--zs-graphs G] [--zs-updates U]\n"
               "                       [--zs-unseen N]\n"
               "rows: ";
  for (const SuiteGraph& g : suite()) std::cerr << g.label << " ";
  std::cerr << "\n";
}

Args parse(int argc, char** argv) {
  Args a;
  a.policy = default_policy_path();
  a.cluster = repo_path("datasets/clusters/dgx1_p100.cluster.yaml");
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--rows") a.rows = split(value());
    else if (k == "--devices") a.devices = std::stoi(value());
    else if (k == "--budget") a.budget = std::stoll(value());
    else if (k == "--seed") a.seed = std::stoull(value());
    else if (k == "--threads") a.threads = std::stoi(value());
    else if (k == "--policy") a.policy = value();
    else if (k == "--cluster") a.cluster = value();
    else if (k == "--gdp-samples") a.gdp_samples = std::stoi(value());
    else if (k == "--ppo-samples") a.ppo_samples = std::stoi(value());
    else if (k == "--max-ops") a.max_ops = std::stoll(value());
    else if (k == "--zs-family") a.zs_family = value();
    else if (k == "--zs-graphs") a.zs_graphs = std::stoi(value());
    else if (k == "--zs-updates") a.zs_updates = std::stoi(value());
    else if (k == "--zs-unseen") a.zs_unseen = std::stoi(value());
    else {
      usage();
      std::exit(2);
    }
  }
  if (a.budget < 1 || a.devices < 1 || a.threads < 1 || a.ppo_samples < 1 ||
      a.gdp_samples < 0 || a.zs_graphs < 1 || a.zs_updates < 0 || a.zs_unseen < 0) {
    std::cerr << "learned_placers: --budget, --devices, --threads, --ppo-samples and "
                 "--zs-graphs must be >= 1, the other counts >= 0\n";
    std::exit(2);
  }
  return a;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// (placements simulated so far, best step time so far) after each progress report.
using Curve = std::vector<std::pair<int64_t, double>>;

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

struct Result {
  double time = INFINITY;  ///< best plan's simulated step time; inf = failed / OOM
  double seconds = 0;
  int64_t evaluations = 0;
  int64_t to_best = -1;  ///< placements until the best was found (-1: not tracked)
  int64_t episodes_to_best = -1;  ///< placeto: complete episodes until the best
  Curve curve;
  std::string note;
};

double simulate(const Problem& p, const Plan& plan) {
  plan.validate(p.graph, p.cluster);
  SimOptions o;
  o.critical_path = false;
  const SimResult r = p.simulator.run(plan, o);
  return r.oom ? INFINITY : r.step_time;
}

std::string ms(double s) {
  if (!std::isfinite(s)) return "oom/fail";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s * 1e3);
  return buf;
}

std::string count(int64_t n) { return n < 0 ? "-" : std::to_string(n); }

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

struct Row {
  std::string label;
  int64_t ops = 0;
  std::string classic_name;
  double classic = INFINITY;
  std::map<std::string, Result> m;  ///< anneal colocrl hdp placeto gdp
};

const std::vector<std::string> kMethods = {"anneal", "colocrl", "hdp", "placeto", "gdp"};

Row run_row(const Args& a, const SuiteGraph& sg, const Cluster& cluster, const CostModel& cost,
            const GdpPolicy& policy, const std::vector<std::string>& classical) {
  Row row;
  row.label = sg.label;
  FamilyRanges ranges;
  for (const auto& [name, v] : sg.fixed) ranges.overrides[name] = ParamRange::fixed(v);
  const Graph step = expand_training_step(make_family_graph(sg.family, sg.seed, ranges, sg.label));
  row.ops = static_cast<int64_t>(step.num_ops());
  if (row.ops > a.max_ops) return row;
  Simulator sim(step, cluster, cost);
  std::vector<int> devs(a.devices);
  for (int d = 0; d < a.devices; ++d) devs[d] = d;
  const Problem p{step, cluster, cost, sim, devs};
  SearchBudget b;
  b.seed = a.seed;
  for (const std::string& name : classical) {
    const Result r = guarded(name, [&] {
      Result x;
      x.time = simulate(p, make_placer(name)->search(p, b));
      return x;
    });
    if (r.time < row.classic) {
      row.classic = r.time;
      row.classic_name = name;
    }
  }
  b.max_evaluations = a.budget;
  row.m["anneal"] = guarded("anneal", [&] {
    Result x;
    AnnealPlacer an;
    x.time = simulate(p, an.search(p, recording(b, &x.curve)));
    x.evaluations = an.last_stats().evaluations;
    // Progress comes every 16 placements: to-best is the first report showing the best.
    x.to_best = reached(x.curve, an.last_stats().best_step_time);
    // Found after the last report: at most the placements spent.
    if (x.to_best < 0) x.to_best = x.evaluations;
    return x;
  });
  auto learned = [&](const LearnedSearchResult& s, Result* x) {
    x->time = s.best_oom ? INFINITY : simulate(p, s.plan);
    x->evaluations = s.evaluations;
    x->to_best = s.best_evaluation;
  };
  row.m["colocrl"] = guarded("colocrl", [&] {
    Result x;
    const ColocrlOptions o;
    const SearchBudget rb = recording(b, &x.curve);
    learned(colocrl_search(p, o, rb), &x);
    return x;
  });
  row.m["hdp"] = guarded("hdp", [&] {
    Result x;
    const HdpOptions o;
    const SearchBudget rb = recording(b, &x.curve);
    learned(hdp_search(p, o, rb), &x);
    return x;
  });
  row.m["placeto"] = guarded("placeto", [&] {
    Result x;
    const PlacetoOptions o;
    const SearchBudget rb = recording(b, &x.curve);
    const PlacetoSearchResult s = placeto_search(p, o, rb);
    x.time = s.best_oom ? INFINITY : simulate(p, s.plan);
    x.evaluations = s.evaluations;
    x.to_best = s.best_evaluation;
    // Every MDP step is simulated (intermediate rewards): an episode is groups + 1
    // simulations, so in complete placements the best came at this episode.
    if (s.evaluations > 0 && s.episodes > 0) {
      const double per = double(s.evaluations) / double(s.episodes);
      x.episodes_to_best = static_cast<int64_t>(std::ceil(double(s.best_evaluation) / per));
    }
    return x;
  });
  row.m["gdp"] = guarded("gdp", [&] {
    Result x;
    GdpPlaceOptions o;
    o.samples = a.gdp_samples;
    o.ppo.samples = a.ppo_samples;
    o.finetune_updates = static_cast<int>((a.budget + a.ppo_samples - 1) / a.ppo_samples);
    const GdpPlaceResult s = gdp_place(policy, p, o, b);
    x.time = s.plan.predicted.oom ? INFINITY : simulate(p, s.plan);
    x.evaluations = s.evaluations;
    // Greedy + samples, then ppo.samples per update (the last update may be cut short).
    const int64_t zero = 1 + a.gdp_samples;
    x.curve.push_back({std::min<int64_t>(zero, s.evaluations), s.zero_shot_time});
    for (size_t u = 0; u < s.finetune_curve.size(); ++u) {
      x.curve.push_back({std::min<int64_t>(zero + int64_t(u + 1) * a.ppo_samples, s.evaluations),
                         s.finetune_curve[u]});
    }
    x.to_best = reached(x.curve, s.best_time);
    return x;
  });
  return row;
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

void zero_shot(const Args& a, const Cluster& cluster, const CostModel& cost) {
  std::vector<int> devs(a.devices);
  for (int d = 0; d < a.devices; ++d) devs[d] = d;
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
  std::printf("\n# Placeto zero-shot within %s: trained %lld updates x %d episodes on %d "
              "members (seeds 1..%d), %lld placements, %.0f s\n",
              a.zs_family.c_str(), static_cast<long long>(tr.updates), t.rl.episodes, t.graphs,
              t.graphs, static_cast<long long>(tr.evaluations), seconds_since(t0));
  std::printf("%-16s %6s %9s | %9s %9s %6s | %9s %8s %6s\n", "unseen graph", "ops", "device 0",
              "zs greedy", "zs best8", "s", "online", "to-best", "s");
  std::vector<double> ratio;
  for (int i = 0; i < a.zs_unseen; ++i) {
    const uint64_t seed = 5000 + uint64_t(i);
    const Graph g = expand_training_step(make_family_graph(a.zs_family, seed));
    Simulator sim(g, cluster, cost);
    const Problem p{g, cluster, cost, sim, devs};
    SearchBudget b;
    b.seed = a.seed;
    b.max_evaluations = a.budget;
    PlacetoOptions z;
    z.policy = tr.policy_path;
    z.zero_shot_samples = 0;
    const PlacetoSearchResult greedy = placeto_search(p, z, b);
    z.zero_shot_samples = 7;
    auto z0 = std::chrono::steady_clock::now();
    const PlacetoSearchResult zs = placeto_search(p, z, b);
    const double zs_s = seconds_since(z0);
    z0 = std::chrono::steady_clock::now();
    const PlacetoOptions online;
    const PlacetoSearchResult on = placeto_search(p, online, b);
    const double on_s = seconds_since(z0);
    const double zt = zs.best_oom ? INFINITY : zs.best_time;
    const double ot = on.best_oom ? INFINITY : on.best_time;
    const double single = simulate(p, placement_plan(p, std::vector<int>(g.num_ops(), 0), "single"));
    std::printf("%-16s %6zu %9s | %9s %9s %6.1f | %9s %4lld/%-3lld %6.1f\n",
                (a.zs_family + "_" + std::to_string(seed)).c_str(), g.num_ops(), ms(single).c_str(),
                ms(greedy.best_oom ? INFINITY : greedy.best_time).c_str(), ms(zt).c_str(), zs_s,
                ms(ot).c_str(), static_cast<long long>(on.best_evaluation),
                static_cast<long long>(on.evaluations), on_s);
    std::fflush(stdout);
    if (std::isfinite(zt) && std::isfinite(ot)) ratio.push_back(zt / ot);
  }
  std::printf("# geomean zero-shot (best of 8) / online (%lld placements) = %.4f over %zu "
              "graphs\n",
              static_cast<long long>(a.budget), geomean(ratio), ratio.size());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

int run(const Args& a) {
  if (!gdp_available() || !seq2seq_available() || !placeto_available()) {
    std::cerr << "learned_placers: built without LibTorch\n";
    return 2;
  }
  at::set_num_threads(a.threads);
  const GdpPolicy policy = GdpPolicy::load(a.policy);
  const Cluster cluster = load_cluster_yaml(a.cluster);
  if (a.devices > cluster.num_devices()) {
    std::cerr << "learned_placers: --devices " << a.devices << " > the cluster's "
              << cluster.num_devices() << " devices\n";
    return 2;
  }
  const CostModel cost(cluster, default_profile());
  std::vector<std::string> classical;
  for (const MethodInfo& m : placer_methods()) {
    if (m.fast && m.name != "gdp" && m.name != "anneal") classical.push_back(m.name);
  }
  std::map<std::string, SuiteGraph> by_label;
  for (const SuiteGraph& g : suite()) by_label[g.label] = g;
  for (const std::string& r : a.rows) {
    if (!by_label.count(r)) {
      std::cerr << "learned_placers: unknown row '" << r << "'\n";
      usage();
      return 2;
    }
  }
  std::printf("# cluster %s, devices 0..%d; budget %lld simulated placements per search "
              "(anneal, colocrl, hdp, placeto, gdp); seed %llu; torch threads %d\n",
              cluster.name.c_str(), a.devices - 1, static_cast<long long>(a.budget),
              static_cast<unsigned long long>(a.seed), a.threads);
  std::printf("# gdp: %s, greedy + %d samples, then PPO updates of %d samples; step times in "
              "ms; 'tb' = placements until the best was found, 'w5' = until within 5%% of "
              "min(gdp, hdp)\n",
              a.policy.c_str(), a.gdp_samples, a.ppo_samples);
  std::printf("%-13s %5s | %-10s %8s |", "graph", "ops", "classical", "ms");
  for (const std::string& m : kMethods) std::printf(" %8s %9s %4s |", m.c_str(), "tb/ev", "s");
  std::printf(" %4s %4s\n", "w5hd", "w5gd");
  std::fflush(stdout);

  std::vector<Row> rows;
  for (const std::string& label : a.rows) {
    Row r = run_row(a, by_label[label], cluster, cost, policy, classical);
    if (r.m.empty()) {
      std::printf("%-13s skipped: %lld ops > --max-ops\n", r.label.c_str(),
                  static_cast<long long>(r.ops));
      continue;
    }
    const double target = std::min(r.m["gdp"].time, r.m["hdp"].time) * 1.05;
    std::printf("%-13s %5lld | %-10s %8s |", r.label.c_str(), static_cast<long long>(r.ops),
                r.classic_name.c_str(), ms(r.classic).c_str());
    for (const std::string& m : kMethods) {
      const Result& x = r.m[m];
      const std::string tb = count(x.to_best) + "/" + std::to_string(x.evaluations);
      std::printf(" %8s %9s %4.0f |", ms(x.time).c_str(), tb.c_str(), x.seconds);
    }
    std::printf(" %4s %4s\n", count(reached(r.m["hdp"].curve, target)).c_str(),
                count(reached(r.m["gdp"].curve, target)).c_str());
    std::fflush(stdout);
    rows.push_back(std::move(r));
  }

  // Placeto's claim: step time vs the RNN placers, and samples to best.
  std::printf("\n# Placeto vs the RNN placers (per row: time ratio, to-best ratio)\n");
  for (Row& r : rows) {
    const Result& pl = r.m["placeto"];
    std::printf("# %-13s placeto: best at simulation %s of %s = episode %s\n", r.label.c_str(),
                count(pl.to_best).c_str(), count(pl.evaluations).c_str(),
                count(pl.episodes_to_best).c_str());
  }
  for (const char* rnn : {"colocrl", "hdp"}) {
    std::vector<double> t, n;
    int comparable = 0, fewer = 0, both = 0;
    for (Row& r : rows) {
      const Result& pl = r.m["placeto"];
      const Result& o = r.m[rnn];
      if (!std::isfinite(pl.time) || !std::isfinite(o.time) || pl.to_best < 1 || o.to_best < 1)
        continue;
      t.push_back(pl.time / o.time);
      n.push_back(double(pl.to_best) / double(o.to_best));
      const bool c = pl.time <= 1.05 * o.time, f = pl.to_best < o.to_best;
      comparable += c;
      fewer += f;
      both += c && f;
    }
    std::vector<double> ne;
    for (Row& r : rows) {
      const Result& pl = r.m["placeto"];
      const Result& o = r.m[rnn];
      if (std::isfinite(pl.time) && std::isfinite(o.time) && pl.episodes_to_best > 0 &&
          o.to_best > 0)
        ne.push_back(double(pl.episodes_to_best) / double(o.to_best));
    }
    std::printf("# placeto / %-7s: geomean step time %.4f, geomean to-best %.4f (simulations; "
                "in complete episodes %.4f) over %zu rows; within 5%% or better in %d, fewer "
                "simulations to best in %d, both in %d\n",
                rnn, geomean(t), geomean(n), geomean(ne), t.size(), comparable, fewer, both);
  }
  // GDP's claim: faster convergence than HDP.
  int gdp_faster = 0, n_gdp = 0;
  std::vector<double> w;
  for (Row& r : rows) {
    const double target = std::min(r.m["gdp"].time, r.m["hdp"].time) * 1.05;
    if (!std::isfinite(target)) continue;
    ++n_gdp;
    const int64_t h = reached(r.m["hdp"].curve, target), g = reached(r.m["gdp"].curve, target);
    // Not reached within the budget counts as budget + 1.
    const double hh = h < 0 ? double(a.budget + 1) : double(h);
    const double gg = g < 0 ? double(a.budget + 1) : double(g);
    w.push_back(gg / hh);
    gdp_faster += gg < hh;
  }
  std::printf("# gdp vs hdp: placements to within 5%% of min(gdp, hdp): gdp fewer in %d of %d "
              "rows, geomean gdp / hdp %.4f (not reached = budget + 1)\n",
              gdp_faster, n_gdp, geomean(w));
  std::fflush(stdout);

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
