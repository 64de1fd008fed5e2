// `placer calibrate fit|check`: fit a cost profile to measurements (placer-calibrate CSV,
// nccl-tests logs, PyTorch profiler traces, measured execution traces) and check a profile
// against measurements. Method: docs/calibration.md.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include "simulator/calibration/fit.h"
#include "simulator/calibration/measurements.h"
#include "simulator/calibration/profiler_trace.h"
#include "simulator/calibration/trace_fit.h"
#include "simulator/cost_profile.h"
#include "src/cli/commands.h"
#include "src/cli/common.h"
#include "src/io/plan_io.h"
#include "src/io/units.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer::cli {
namespace {

struct FitArgs {
  std::string cluster, base, output, name, optimizer = "adam", profiler_dtype = "f32";
  std::vector<std::string> measurements, nccl_tests, profiler_traces, traces, graphs, plans;
  double line_tolerance = 0.05;
  double knot_step = 1.0;
  int max_evals = 400;
  uint64_t seed = 1;
};

struct CheckArgs {
  std::string cluster, profile, csv;
  std::vector<std::string> measurements;
  bool quiet_rows = false;
};

std::string pct(double v) { return fixed(100 * v, 1) + "%"; }

std::string rows_of(const MeasurementSet& s) {
  return std::to_string(s.rows.size()) + (s.rows.size() == 1 ? " row" : " rows");
}

void run_fit(const FitArgs& a) {
  Cluster cluster = load_cluster(a.cluster);
  CostProfile base = a.base.empty() ? default_profile() : load_cost_profile(a.base);
  std::vector<MeasurementSet> sets;
  for (const std::string& m : a.measurements) {
    sets.push_back(load_measurements(m));
    std::cerr << "placer: read " << sets.back().source << " (" << sets.back().format << ", "
              << rows_of(sets.back()) << ")\n";
  }
  for (const std::string& m : a.nccl_tests) {
    std::string op, path = m;
    const size_t eq = m.find('=');
    if (eq != std::string::npos && !normalize_collective_name(m.substr(0, eq)).empty()) {
      op = m.substr(0, eq);
      path = m.substr(eq + 1);
    }
    sets.push_back(parse_nccl_tests_log(read_text_file(path, "nccl-tests log"), path, op));
    std::cerr << "placer: read " << path << " (nccl-tests " << sets.back().rows.front().op << ", "
              << sets.back().header["ranks"] << " ranks, " << rows_of(sets.back()) << ")\n";
  }
  std::vector<ProfilerTrace> traces;
  for (const std::string& t : a.profiler_traces) {
    traces.push_back(load_profiler_trace(t));
    std::cerr << "placer: read " << t << " (" << traces.back().kernels.size() << " kernels, "
              << traces.back().cpu_ops << " CPU ops)\n";
  }
  if (a.traces.size() != a.graphs.size() || a.traces.size() != a.plans.size()) {
    throw Error("calibrate fit: give one --graph and one --plan per --trace (got " +
                std::to_string(a.traces.size()) + " traces, " + std::to_string(a.graphs.size()) +
                " graphs, " + std::to_string(a.plans.size()) + " plans)");
  }
  if (sets.empty() && traces.empty() && a.traces.empty()) {
    throw Error(
        "calibrate fit: nothing to fit; give --measurements, --nccl-tests, "
        "--profiler-trace or --trace/--graph/--plan");
  }
  FitReport rep;
  if (!sets.empty() || !traces.empty()) {
    FitOptions fo;
    fo.line_tolerance = a.line_tolerance;
    if (!(a.knot_step >= 0.1 && a.knot_step <= 5)) {
      throw Error("calibrate fit: --knot-step must be in [0.1, 5] decades");
    }
    fo.knot_step = a.knot_step;
    if (!parse_dtype(a.profiler_dtype, &fo.trace_dtype)) {
      throw Error("calibrate fit: --profiler-dtype: unknown dtype '" + a.profiler_dtype +
                  "' (expected f32, f16, bf16, f64, ...)");
    }
    rep = fit_profile(cluster, base, sets, traces, fo);
  } else {
    rep.profile = base;
  }
  for (size_t i = 0; i < a.traces.size(); ++i) {
    Graph g = load_graph_for_step(a.graphs[i], true, a.optimizer);
    Plan plan = load_plan(a.plans[i], g, cluster);
    plan.validate(g, cluster);
    const std::vector<TracedOp> ops = load_op_trace(a.traces[i], g, cluster);
    std::cerr << "placer: read " << a.traces[i] << " (" << ops.size() << " op intervals); fitting "
              << "transfer constants (Nelder-Mead, seed " << a.seed << ")\n";
    TraceFitOptions to;
    to.max_evaluations = a.max_evals;
    to.seed = a.seed;
    const TraceFitResult tr = fit_transfer_constants(g, cluster, plan, rep.profile, ops, to);
    rep.profile = tr.profile;
    for (LinkLevel l : tr.levels) {
      TermFit tf;
      tf.term = std::string("links.") + to_string(l);
      tf.model = "trace fit";
      tf.values = "latency " + human_time(tr.profile.link(l).latency) + ", bandwidth " +
                  fixed(tr.profile.link(l).bandwidth / 1e9, 2) + " GB/s" + "; start/end RMS " +
                  pct(tr.initial_error) + " -> " + pct(tr.final_error) + " of the span, " +
                  std::to_string(tr.evaluations) + " simulations";
      tf.points = tr.matched;
      tf.has_error = false;
      rep.profile.fit_errors.erase(tf.term);
      rep.terms.push_back(tf);
    }
  }
  rep.profile.name = !a.name.empty() ? a.name : "calibrated";
  std::string sources;
  for (const MeasurementSet& s : sets) sources += (sources.empty() ? "" : ", ") + s.source;
  for (const ProfilerTrace& t : traces) sources += (sources.empty() ? "" : ", ") + t.source;
  for (const std::string& t : a.traces) sources += (sources.empty() ? "" : ", ") + t;
  rep.profile.description = "Fitted by placer calibrate fit on cluster '" + cluster.name +
                            "' from: " + sources + (a.base.empty() ? "" : "; base " + a.base);
  rep.profile.validate(a.output);

  std::ostream& out = std::cout;
  size_t w = 4;
  for (const TermFit& t : rep.terms) w = std::max(w, t.term.size() + 2);
  out << pad_right("term", w) << pad_right("model", 18) << pad_left("points", 7)
      << pad_left("median", 9) << pad_left("p90", 9) << "  values\n";
  for (const TermFit& t : rep.terms) {
    out << pad_right(t.term, w) << pad_right(t.model, 18) << pad_left(std::to_string(t.points), 7)
        << pad_left(t.has_error ? pct(t.error.median) : "-", 9)
        << pad_left(t.has_error ? pct(t.error.p90) : "-", 9) << "  " << t.values << "\n";
  }
  for (const std::string& n : rep.notes) out << "note: " << n << "\n";
  ensure_parent_dir(a.output);
  save_cost_profile(rep.profile, a.output);
  out << "profile " << a.output << "\n";
}

void write_check_csv(const CheckReport& r, const std::string& path) {
  std::string text =
      "source,line,kind,op,dtype,bytes,flops,devices,hosts,group,measured_s,"
      "predicted_s,rel_error\n";
  for (const CheckRow& row : r.rows) {
    const Measurement& m = *row.m;
    text += m.source + "," + std::to_string(m.line) + "," + to_string(m.kind) + "," + m.op + "," +
            m.dtype + "," + format_double(m.bytes) + "," + format_double(m.flops) + "," +
            std::to_string(m.devices) + "," + std::to_string(m.hosts) + "," + row.group + "," +
            format_double(m.time_s) + "," + format_double(row.predicted) + "," +
            format_double(row.rel_error) + "\n";
  }
  write_text_file(path, text);
}

void run_check(const CheckArgs& a) {
  Cluster cluster = load_cluster(a.cluster);
  CostProfile profile = load_cost_profile(a.profile);
  std::vector<MeasurementSet> sets;
  for (const std::string& m : a.measurements) {
    sets.push_back(load_measurements(m));
    std::cerr << "placer: read " << sets.back().source << " (" << sets.back().format << ", "
              << rows_of(sets.back()) << ")\n";
  }
  const CheckReport r = check_profile(cluster, profile, sets);
  std::ostream& out = std::cout;
  if (!a.quiet_rows) {
    out << pad_right("row", 28) << pad_right("group", 26) << pad_left("size", 11)
        << pad_left("measured", 12) << pad_left("predicted", 12) << pad_left("error", 9) << "\n";
    for (const CheckRow& row : r.rows) {
      const Measurement& m = *row.m;
      std::string where = m.where();
      if (where.size() > 26) where = "..." + where.substr(where.size() - 23);
      const std::string size = m.kind == MeasureKind::kGemm || m.kind == MeasureKind::kConv
                                   ? human_count(m.flops, "FLOP")
                                   : human_bytes(m.bytes);
      out << pad_right(where, 28) << pad_right(row.group, 26) << pad_left(size, 11)
          << pad_left(human_time(m.time_s), 12) << pad_left(human_time(row.predicted), 12)
          << pad_left((row.rel_error >= 0 ? "+" : "") + pct(row.rel_error), 9) << "\n";
    }
    out << "\n";
  }
  out << pad_right("group", 28) << pad_left("rows", 6) << pad_left("median", 9)
      << pad_left("p90", 9) << "\n";
  for (const auto& [g, e] : r.groups) {
    out << pad_right(g, 28) << pad_left(std::to_string(e.points), 6) << pad_left(pct(e.median), 9)
        << pad_left(pct(e.p90), 9) << "\n";
  }
  if (r.collectives.points > 0) {
    out << pad_right("all collectives", 28) << pad_left(std::to_string(r.collectives.points), 6)
        << pad_left(pct(r.collectives.median), 9) << pad_left(pct(r.collectives.p90), 9) << "\n";
  }
  if (r.compute.points > 0) {
    out << pad_right("all compute", 28) << pad_left(std::to_string(r.compute.points), 6)
        << pad_left(pct(r.compute.median), 9) << pad_left(pct(r.compute.p90), 9) << "\n";
  }
  out << pad_right("all rows", 28) << pad_left(std::to_string(r.overall.points), 6)
      << pad_left(pct(r.overall.median), 9) << pad_left(pct(r.overall.p90), 9) << "\n";
  for (const std::string& n : r.notes) out << "note: " << n << "\n";
  if (!a.csv.empty()) {
    ensure_parent_dir(a.csv);
    write_check_csv(r, a.csv);
    out << "csv " << a.csv << "\n";
  }
}

}  // namespace

void register_calibrate(CLI::App& app);
static CommandRegistrar calibrate_registrar(12, "calibrate", register_calibrate);

void register_calibrate(CLI::App& app) {
  CLI::App* cal = app.add_subcommand(
      "calibrate",
      "Fit a cost profile to measurements (placer-calibrate CSV, nccl-tests logs, PyTorch\n"
      "profiler traces, measured execution traces) or check a profile against them.");
  cal->require_subcommand(1);

  auto fa = std::make_shared<FitArgs>();
  CLI::App* fit = cal->add_subcommand(
      "fit",
      "Fit collective curves, link constants, op efficiency curves and the launch\n"
      "overhead; print the fitted terms with their errors; write a *.profile.yaml.");
  fit->add_option("-c,--cluster", fa->cluster, "Cluster (*.cluster.yaml) the data was measured on")
      ->required()
      ->check(CLI::ExistingFile);
  fit->add_option("-m,--measurements", fa->measurements,
                  "placer-calibrate CSV or nccl-tests log ([OP=]path); repeatable");
  fit->add_option("--nccl-tests", fa->nccl_tests,
                  "nccl-tests log ([OP=]path, OP = all_reduce, all_gather, reduce_scatter,\n"
                  "broadcast, send_recv when the log does not say); repeatable");
  fit->add_option("--profiler-trace", fa->profiler_traces,
                  "PyTorch profiler / Kineto Chrome trace (kernels with op names); repeatable");
  fit->add_option("--profiler-dtype", fa->profiler_dtype,
                  "Precision of the profiled ops (selects the peak FLOP/s): f32, f16, bf16, ...")
      ->capture_default_str();
  fit->add_option("--trace", fa->traces,
                  "Measured execution trace (Chrome JSON, ops named as in the graph) for the\n"
                  "transfer-constant fit; repeatable, one --graph and --plan each");
  fit->add_option("-g,--graph", fa->graphs, "Graph of the matching --trace");
  fit->add_option("-p,--plan", fa->plans, "Plan of the matching --trace");
  fit->add_option("--base", fa->base, "Profile to start from (default: the built-in default)")
      ->check(CLI::ExistingFile);
  fit->add_option("-o,--output", fa->output, "Fitted profile (*.profile.yaml)")->required();
  fit->add_option("--name", fa->name, "Name of the fitted profile (default: calibrated)");
  fit->add_option("--line-tolerance", fa->line_tolerance,
                  "Largest median relative error of a straight alpha-beta line before a\n"
                  "collective gets a piecewise curve")
      ->capture_default_str();
  fit->add_option("--knot-step", fa->knot_step,
                  "Decades between the knots of fitted curves (collectives and ops)")
      ->capture_default_str();
  fit->add_option("--max-evals", fa->max_evals, "Simulations per trace fit")->capture_default_str();
  fit->add_option("--seed", fa->seed, "Seed of the trace fit's search")->capture_default_str();
  fit->add_option("--optimizer", fa->optimizer,
                  "Optimizer for expanding a forward --graph: sgd, momentum, adam")
      ->capture_default_str();
  fit->callback([fa]() { run_fit(*fa); });

  auto ca = std::make_shared<CheckArgs>();
  CLI::App* check = cal->add_subcommand(
      "check",
      "Predicted vs measured per row with median and p90 relative errors (table\n"
      "and CSV).");
  check->add_option("--profile", ca->profile, "Cost profile (*.profile.yaml)")
      ->required()
      ->check(CLI::ExistingFile);
  check->add_option("-c,--cluster", ca->cluster, "Cluster (*.cluster.yaml)")
      ->required()
      ->check(CLI::ExistingFile);
  check
      ->add_option("-m,--measurements", ca->measurements,
                   "placer-calibrate CSV or nccl-tests log ([OP=]path); repeatable")
      ->required();
  check->add_option("--csv", ca->csv, "Write the per-row comparison as CSV");
  check->add_flag("--summary", ca->quiet_rows, "Print only the per-group summary");
  check->callback([ca]() { run_check(*ca); });
}

}  // namespace placer::cli
