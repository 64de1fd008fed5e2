// bench/pipeline_optima: pipeline problems with known optima. Branching graphs of several
// families (the registry's generators), coarsened to a handful of groups so that every plan
// can be searched exhaustively, on one host of 4 accelerators whose transfers either overlap
// their compute or occupy them (cluster key `overlap: false`). The objective is the stage
// load of the placement literature's DP benchmarks, extended to every plan a method emits
// (agents/classical/pipeline_ideals_load.h): a plan is an assignment of the forward groups to
// stages (pipeline stages, or a plain placement's devices) with a device count per stage; a
// stage's load is its compute / devices and its communication, its devices' share of the
// transfers crossing its border (each activation to the stages that read it, the gradients
// each crossing edge sends back) plus the all-reduce of its gradients among its devices
// (added under `overlap: false`, the larger of the two otherwise); the plan's score is its
// largest stage load. The exact
// optimum searches every assignment of the groups to 4 stages and every device count per stage
// (branch and bound, exhaustive_stage_load), a space that holds every plan of whole ops the
// methods emit, so every such ratio is >= 1. A plan that splits ops over devices (partitions)
// is scored with each split op's work and parameters shared by its devices and the
// collectives the simulator runs after it (plan_splits); it lies outside the optimum's space,
// can score below it, and its cell says "(split)".
//
// These are throughput problems (inputs stream through the plan, as the literature's
// objective assumes), so the methods that compare plans are told so: `best` and gdp+stages
// run with `objective=throughput` (agents/common/objective.h; `best` passes it on to
// pipeline-dp, whose stage costs are then the steady state's, with `fold=true`), comparing the
// simulator's steady-state time per step (the busiest device's occupancy, simulator/steady_state.h)
// instead of its step time, which adds pipeline fill and drain, and trying each pipelined
// plan with one micro-batch as well.
//
//   build/bench/pipeline_optima [--families a,b] [--seeds N] [--groups G] [--finetune U]
//
// Columns: the optimum (ms), the best contiguous split with one device per stage (the DP over
// ideals, solve_ideal_split) over it, and each method's score over it: `best` (every fast
// method, chosen by the simulator's steady state, as `--method best --set
// objective=throughput`), `best by step` (the methods run and chosen by the simulated step
// time, `--method best`), `best by load` (the best of either by this objective),
// pipeline-ideals, pipeline-dp (step costs) and `pipeline-dp thr` (objective=throughput,
// fold=true),
// gdp+stages zero-shot (the shipped policy) and fine-tuned (U PPO updates on the graph),
// both with objective=throughput. The last rows are geomeans.

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/classical/pipeline_ideals.h"
#include "agents/classical/pipeline_ideals_load.h"
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
  int groups = 12;
  int finetune = 20;
  int64_t max_visits = 50'000'000;  // partial assignments of the exhaustive search
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

struct Row {
  std::string label;
  int nodes = 0;
  int64_t ideals = 0;
  double optimum = 0;
  std::map<std::string, double> ratio;  // column -> score / optimum (0: failed)
  std::string best_method, step_method, load_method;
  std::string optimum_plan;  // "devices per stage", e.g. "1+1+2"
  std::set<std::string> split;  // columns whose plan splits ops over devices
  double at(const std::string& column) const {
    const auto it = ratio.find(column);
    return it == ratio.end() ? 0 : it->second;
  }
};

const std::vector<std::string> kColumns = {
    "contiguous split", "best",        "best by step",    "best by load",
    "pipeline-ideals",  "pipeline-dp", "pipeline-dp thr", "gdp+stages",
    "gdp+stages ft"};

/// A plan's score over the optimum; a score below it (impossible by construction for whole
/// ops: the exhaustive search holds every such plan) is an error, not a row. A plan that
/// splits ops over devices lies outside that space: its score may be below the optimum, and
/// `*split` says so.
double ratio_of(const StageLoadModel& m, const ProblemSetup& s, const MethodRun& run,
                const Row& row, const std::string& name, bool* split = nullptr) {
  if (split) *split = false;
  if (!run.ok) return 0;
  const double ratio = plan_stage_load(m, s.graph, run.plan) / row.optimum;
  const bool splits = plan_splits(m, s.graph, run.plan).any();
  if (split) *split = splits;
  if (!splits && ratio < 1 - 1e-9) {
    throw Error("pipeline_optima: " + row.label + ": " + name + " scores " + std::to_string(ratio) +
                " of the exhaustive optimum");
  }
  return ratio;
}

/// Sets `column` of `row` to `ratio`, marked split when the plan splits ops.
void set_cell(Row* row, const std::string& column, double ratio, bool split) {
  row->ratio[column] = ratio;
  if (split) {
    row->split.insert(column);
  } else {
    row->split.erase(column);
  }
}

/// Every fast method (what `--method best` runs): `best` is the choice by the simulator's
/// steady state (objective=throughput), `best by step` by its step time, `best by load` by
/// the objective; pipeline-ideals and pipeline-dp keep their own columns.
void score_portfolio(const ProblemSetup& s, const StageLoadModel& m, Row* row) {
  SearchBudget budget;
  budget.seed = 1;
  std::vector<MethodRun> runs;
  for (const MethodInfo& info : placer_methods()) {
    if (!info.fast) continue;
    runs.push_back(run_method(info.name, s, budget));
    runs.back().method = info.name;
  }
  // As `best` runs and compares them under throughput: with objective=throughput where a
  // method takes the key, one micro-batch where that streams faster (the load does not
  // depend on the micro-batch count).
  PortfolioOptions throughput;
  throughput.objective = Objective::kThroughput;
  std::vector<MethodRun> streamed = runs;
  for (MethodRun& run : streamed) {
    const MethodSettings settings = objective_settings(run.method, throughput);
    if (!settings.sets.empty()) {
      const std::string name = run.method;
      run = run_method(name, s, budget, settings);
      run.method = name;
    }
    as_compared(s, Objective::kThroughput, &run);
  }
  const MethodRun *steady_best = nullptr, *step_best = nullptr;
  double load_best = 0;
  bool load_split = false;
  auto by_load = [&](double ratio, const std::string& method, bool split) {
    if (load_best == 0 || ratio < load_best) {
      load_best = ratio;
      load_split = split;
      row->load_method = method;
    }
  };
  for (size_t k = 0; k < runs.size(); ++k) {
    const MethodRun &run = runs[k], &steady = streamed[k];
    if (steady.ok) {
      bool split = false;
      const double ratio = ratio_of(m, s, steady, *row, run.method, &split);
      if (run.method == "pipeline-dp") set_cell(row, "pipeline-dp thr", ratio, split);
      if (!steady_best || better_run(steady, *steady_best, s.cluster, Objective::kThroughput)) {
        steady_best = &steady;
        set_cell(row, "best", ratio, split);
        row->best_method = run.method;
      }
      by_load(ratio, run.method, split);
    }
    if (!run.ok) continue;
    bool split = false;
    const double ratio = ratio_of(m, s, run, *row, run.method, &split);
    if (run.method == "pipeline-ideals" || run.method == "pipeline-dp")
      set_cell(row, run.method, ratio, split);
    if (!step_best || better_run(run, *step_best)) {
      step_best = &run;
      set_cell(row, "best by step", ratio, split);
      row->step_method = run.method;
    }
    by_load(ratio, run.method, split);
  }
  set_cell(row, "best by load", load_best, load_split);
}

/// The methods' plans on one problem, scored by their loads over the optimum.
void score_methods(const ProblemSetup& s, const StageLoadModel& m, const Args& a, Row* row) {
  SearchBudget budget;
  budget.seed = 1;
  score_portfolio(s, m, row);
  const MethodSettings zero_shot{{"objective=throughput"}};
  bool split = false;
  double ratio =
      ratio_of(m, s, run_method("gdp+stages", s, budget, zero_shot), *row, "gdp+stages", &split);
  set_cell(row, "gdp+stages", ratio, split);
  const MethodSettings ft{{"objective=throughput", "finetune=" + std::to_string(a.finetune)}};
  ratio = ratio_of(m, s, run_method("gdp+stages", s, budget, ft), *row, "gdp+stages ft", &split);
  set_cell(row, "gdp+stages ft", ratio, split);
}

/// The devices of each stage of an optimum, in stage order ("1+1+2"; "4" = one stage
/// replicated on every device).
std::string layout_of(const StageLoadOptimum& opt) {
  std::string out;
  for (int r : opt.replicas) {
    if (r > 0) out += (out.empty() ? "" : "+") + std::to_string(r);
  }
  return out;
}

/// The family graph as a training step coarsened to `groups` groups; false when the
/// exhaustive search passes its cap (no exact optimum).
bool run_problem(const std::string& family, uint64_t seed, bool overlap, const Args& a, Row* row) {
  ProblemSetup s;
  const Graph step = expand_training_step(make_family_graph(family, seed));
  CoarsenOptions co;
  co.target_groups = a.groups;
  s.graph = coarsen(step, co).coarse;
  s.cluster = bench_cluster(overlap);
  s.cost = std::make_unique<CostModel>(bench::default_cost_model(s.cluster));
  s.simulator = std::make_unique<Simulator>(s.graph, s.cluster, *s.cost);
  const StageLoadModel m = stage_load_model(s.problem());
  if (m.split.overlap != overlap)
    throw Error("pipeline_optima: the cluster's overlap key was not read");
  StageLoadOptimum opt;
  try {
    opt = exhaustive_stage_load(m, 4, a.max_visits);
  } catch (const Error&) {
    return false;  // past the search cap
  }
  const IdealSplit contiguous = solve_ideal_split(m.split, 4, 1'000'000);
  row->label = family + "/" + std::to_string(seed) + (overlap ? "" : " no-overlap");
  row->nodes = m.split.size();
  row->ideals = contiguous.ideals;
  row->optimum = opt.load;
  row->optimum_plan = layout_of(opt);
  row->ratio["contiguous split"] = contiguous.exact ? contiguous.bottleneck / opt.load : 0;
  score_methods(s, m, a, row);
  return true;
}

std::string cell(double ratio) {
  if (!(ratio > 0)) return "fail";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ratio);
  return buf;
}

/// The geomean row of each column over the rows with (or without) overlap; `whole_only`:
/// leaving out the cells whose plan splits ops (scored outside the optimum's space).
void print_geomean(const std::vector<Row>& rows, bool overlap, bool whole_only) {
  std::printf("| geomean (%s%s) | | | | |", overlap ? "overlap" : "overlap: false",
              whole_only ? ", whole ops" : "");
  for (const std::string& c : kColumns) {
    std::vector<double> v;
    for (const Row& r : rows) {
      const bool row_overlap = r.label.find("no-overlap") == std::string::npos;
      if (whole_only && r.split.count(c)) continue;
      if (row_overlap == overlap && r.at(c) > 0) v.push_back(r.at(c));
    }
    std::printf(" %s |", cell(bench::geomean(v)).c_str());
  }
  std::printf(" | | |\n");
}

void print_table(const std::vector<Row>& rows) {
  std::printf("| graph | nodes | ideals | optimum (ms) | optimum's stages |");
  for (const std::string& c : kColumns) std::printf(" %s |", c.c_str());
  std::printf(" best chose | by step | by load |\n|---|---|---|---|---|");
  for (size_t c = 0; c < kColumns.size(); ++c) std::printf("---|");
  std::printf("---|---|---|\n");
  for (const Row& r : rows) {
    std::printf("| %s | %d | %lld | %.3f | %s |", r.label.c_str(), r.nodes,
                static_cast<long long>(r.ideals), r.optimum * 1e3, r.optimum_plan.c_str());
    for (const std::string& c : kColumns)
      std::printf(" %s%s |", cell(r.at(c)).c_str(), r.split.count(c) ? " (split)" : "");
    std::printf(" %s | %s | %s |\n", r.best_method.c_str(), r.step_method.c_str(),
                r.load_method.c_str());
  }
  for (bool whole_only : {false, true}) {
    for (bool overlap : {true, false}) print_geomean(rows, overlap, whole_only);
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
          std::fprintf(stderr,
                       "pipeline_optima: %s/%llu: the search passed %lld partial assignments, "
                       "skipped\n",
                       family.c_str(), static_cast<unsigned long long>(seed),
                       static_cast<long long>(a.max_visits));
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
