// bench/pipeline_optima: pipeline problems with known optima. Branching graphs of several
// families (the registry's generators), coarsened to a few dozen groups so that every split
// of the forward DAG into contiguous stages (every chain of ideals) can be searched, on one
// host of 4 accelerators whose transfers either overlap their compute or occupy them
// (cluster key `overlap: false`). The objective is the max stage load of a one-device-per-
// stage pipeline (compute on the stage + the transfers crossing its border: added for
// `overlap: false`, the larger of the two otherwise), the measure of the placement
// literature's DP benchmarks. Its exact optimum is the DP over all ideals
// (solve_ideal_split with the ideals under the cap, exact = true). Each method's plan is
// scored by the same load: a pipeline's stages as they are, a plain placement with one
// stage per device; a stage on r devices (replicas) runs 1/r of its compute and adds the
// all-reduce of its parameter gradients, so a plan outside the one-device-per-stage space
// may score below 1.
//
//   build/bench/pipeline_optima [--families a,b] [--seeds N] [--groups G] [--finetune U]
//
// Columns: the optimum (ms) and each method's load / optimum: `best` (every fast method,
// chosen by the simulator), pipeline-ideals, pipeline-dp, gdp+stages zero-shot (the shipped
// policy) and fine-tuned (U PPO updates on the graph). The last rows are geomeans.

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/classical/pipeline_ideals.h"
#include "agents/portfolio/method_portfolio.h"
#include "bench/bench_common.h"
#include "datasets/coarsen.h"
#include "datasets/family_registry.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

namespace placer {
namespace {

struct Args {
  std::vector<std::string> families = {"inception", "enas_cnn",    "amoebanet", "rnnlm",
                                       "gnmt",      "transformer", "wavenet",   "rec",
                                       "resnet",    "vit",         "encdec",    "gnn"};
  int seeds = 1;
  int groups = 40;
  int finetune = 20;
  int64_t max_ideals = 20000;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("pipeline_optima: " + k + " needs a value");
      return argv[++i];
    };
    if (k == "--families") {
      a.families = bench::split_list(value());
    } else if (k == "--seeds") {
      a.seeds = bench::parse_int_list(value(), k).at(0);
    } else if (k == "--groups") {
      a.groups = bench::parse_int_list(value(), k).at(0);
    } else if (k == "--finetune") {
      a.finetune = bench::parse_int_list(value(), k).at(0);
    } else {
      throw Error("pipeline_optima: unknown option " + k +
                  " (use --families, --seeds, --groups, --finetune)");
    }
  }
  return a;
}

/// One host of four 15 TFLOP/s accelerators on 12 GB/s links; `overlap` false: transfers
/// occupy the devices.
Cluster bench_cluster(bool overlap) {
  std::ostringstream y;
  y << "format_version: \"1.0\"\nname: four-accelerators\ndevice_types:\n  acc:\n"
    << "    peak_flops: {f32: 15 TFLOPS, f16: 60 TFLOPS}\n    memory: 32 GiB\n"
    << "    memory_bandwidth: 900 GB/s\n    launch_overhead: 5 us\n"
    << "    overlap: " << (overlap ? "true" : "false") << "\n"
    << "hosts:\n  - name: host\n    devices: {type: acc, count: 4}\n"
    << "links:\n  intra_host: {latency: 10 us, bandwidth: 12 GB/s}\n";
  return parse_cluster_yaml(y.str(), "four-accelerators.cluster.yaml");
}

/// The stage of every forward op of `g` under `plan` (in the node order of
/// ideal_split_problem: forward ops in topological order) and each stage's devices (a plain
/// placement: one stage per device). Data-parallel replicas of the whole plan multiply them.
void plan_stages(const Graph& g, const Plan& plan, std::vector<int>* stage_of,
                 std::map<int, std::vector<int>>* devices) {
  std::vector<int> stage_of_op(g.num_ops(), -1);
  if (plan.pipeline.enabled()) {
    for (size_t s = 0; s < plan.pipeline.stages.size(); ++s) {
      for (OpId o : plan.pipeline.stages[s].ops) stage_of_op[o] = static_cast<int>(s);
      (*devices)[static_cast<int>(s)] = plan.pipeline.stages[s].devices;
    }
  }
  stage_of->clear();
  for (OpId o : g.topo_order()) {
    if (g.op(o).phase != Phase::kForward) continue;
    int s = stage_of_op[o];
    if (s < 0) {
      s = plan.placement[o];
      devices->emplace(s, std::vector<int>{s});
    }
    stage_of->push_back(s);
  }
  const int R = std::max(1, plan.data_parallel.replicas);
  if (R == 1) return;
  const int per = static_cast<int>(devices->size());  // replica k: device + k x per (default)
  for (auto& [stage, devs] : *devices) {
    const std::vector<int> base = devs;
    for (int k = 1; k < R; ++k) {
      for (int d : base) devs.push_back(d + k * per);
    }
  }
}

/// The max stage load of `plan` on problem `p`: a stage on r devices runs 1/r of its work
/// and all-reduces the gradients of its parameters among them.
double plan_load(const IdealSplitProblem& p, const Problem& problem, const Plan& plan) {
  const Graph& g = problem.graph;
  std::vector<int> stage_of;
  std::map<int, std::vector<int>> devices;
  plan_stages(g, plan, &stage_of, &devices);
  std::vector<OpId> forward;
  for (OpId o : g.topo_order()) {
    if (g.op(o).phase == Phase::kForward) forward.push_back(o);
  }
  double worst = 0;
  for (const auto& [stage, devs] : devices) {
    const double r = static_cast<double>(devs.size());
    IdealSplitProblem q = p;
    uint64_t params = 0;
    for (size_t u = 0; u < q.work.size(); ++u) {
      q.work[u] /= r;
      if (stage_of[u] == stage) params += g.op(forward[u]).param_bytes;
    }
    for (IdealSplitExtra& e : q.extra) e.work /= r;
    double load = ideal_stage_load(q, stage_of, stage);
    if (devs.size() > 1 && params > 0) {
      std::vector<int> members = devs;
      std::sort(members.begin(), members.end());
      load += problem.cost.group_collective_time(
          CollectiveKind::kAllReduce, problem.cost.make_group(members), params, SyncScheme::kAuto);
    }
    worst = std::max(worst, load);
  }
  return worst;
}

struct Row {
  std::string label;
  int nodes = 0;
  int64_t ideals = 0;
  double optimum = 0;
  std::map<std::string, double> ratio;  // column -> load / optimum (0: failed)
  std::string best_method;
};

const std::vector<std::string> kColumns = {"best", "pipeline-ideals", "pipeline-dp", "gdp+stages",
                                           "gdp+stages ft"};

/// The methods' plans on one problem, scored by their loads over the optimum.
void score_methods(const ProblemSetup& s, const IdealSplitProblem& p, const Args& a, Row* row) {
  const Problem problem = s.problem();
  SearchBudget budget;
  budget.seed = 1;
  std::ostringstream log;
  auto score = [&](const std::string& column, const MethodRun& run) {
    row->ratio[column] = run.ok ? plan_load(p, problem, run.plan) / row->optimum : 0;
  };
  try {
    const MethodRun best = run_best(s, budget, "best", log);
    score("best", best);
    row->best_method = best.plan.method;
  } catch (const Error&) {
    row->ratio["best"] = 0;
  }
  score("pipeline-ideals", run_method("pipeline-ideals", s, budget));
  score("pipeline-dp", run_method("pipeline-dp", s, budget));
  score("gdp+stages", run_method("gdp+stages", s, budget));
  score("gdp+stages ft", run_method("gdp+stages", s, budget,
                                    MethodSettings{{"finetune=" + std::to_string(a.finetune)}}));
}

/// The family graph coarsened to `groups` groups, as a training step; false when its
/// forward DAG has more ideals than the cap (no exact optimum).
bool run_problem(const std::string& family, uint64_t seed, bool overlap, const Args& a, Row* row) {
  ProblemSetup s;
  const Graph step = expand_training_step(make_family_graph(family, seed));
  CoarsenOptions co;
  co.target_groups = a.groups;
  s.graph = coarsen(step, co).coarse;
  s.cluster = bench_cluster(overlap);
  s.cost = std::make_unique<CostModel>(bench::default_cost_model(s.cluster));
  s.simulator = std::make_unique<Simulator>(s.graph, s.cluster, *s.cost);
  const Problem problem = s.problem();
  IdealSplitProblem p = ideal_split_problem(problem, 0, 1);
  p.overlap = overlap;
  const IdealSplit opt = solve_ideal_split(p, 4, a.max_ideals);
  if (!opt.exact) return false;
  row->label = family + "/" + std::to_string(seed) + (overlap ? "" : " no-overlap");
  row->nodes = p.size();
  row->ideals = opt.ideals;
  row->optimum = opt.bottleneck;
  score_methods(s, p, a, row);
  return true;
}

std::string cell(double ratio) {
  if (!(ratio > 0)) return "fail";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ratio);
  return buf;
}

void print_table(const std::vector<Row>& rows) {
  std::printf("| graph | nodes | ideals | optimum (ms) |");
  for (const std::string& c : kColumns) std::printf(" %s |", c.c_str());
  std::printf(" best chose |\n|---|---|---|---|");
  for (size_t c = 0; c < kColumns.size(); ++c) std::printf("---|");
  std::printf("---|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %d | %lld | %.3f |", r.label.c_str(), r.nodes,
                static_cast<long long>(r.ideals), r.optimum * 1e3);
    for (const std::string& c : kColumns) std::printf(" %s |", cell(r.ratio.at(c)).c_str());
    std::printf(" %s |\n", r.best_method.c_str());
  }
  for (int variant = 0; variant < 2; ++variant) {
    const bool overlap = variant == 0;
    std::printf("| geomean (%s) | | | |", overlap ? "overlap" : "overlap: false");
    for (const std::string& c : kColumns) {
      std::vector<double> v;
      for (const Row& r : rows) {
        const bool row_overlap = r.label.find("no-overlap") == std::string::npos;
        if (row_overlap == overlap && r.ratio.at(c) > 0) v.push_back(r.ratio.at(c));
      }
      std::printf(" %s |", cell(bench::geomean(v)).c_str());
    }
    std::printf(" |\n");
  }
}

int run(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  std::vector<Row> rows;
  for (const std::string& family : a.families) {
    for (int k = 0; k < a.seeds; ++k) {
      const uint64_t seed = 500 + static_cast<uint64_t>(k);
      for (bool overlap : {true, false}) {
        Row row;
        if (run_problem(family, seed, overlap, a, &row)) {
          rows.push_back(std::move(row));
        } else {
          std::fprintf(stderr, "pipeline_optima: %s/%llu has more than %lld ideals, skipped\n",
                       family.c_str(), static_cast<unsigned long long>(seed),
                       static_cast<long long>(a.max_ideals));
        }
      }
    }
  }
  print_table(rows);
  return 0;
}

}  // namespace
}  // namespace placer

int main(int argc, char** argv) {
  try {
    return placer::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
