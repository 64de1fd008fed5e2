// `placer calibrate fit|check`: fit a cost profile to measurements (placer-calibrate CSV,
// nccl-tests logs, PyTorch profiler traces, measured execution traces) and check a profile
// against measurements. Method: docs/calibration.md.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/command_options.h"
#include "cli/common.h"
#include "cli/profile_choice.h"
#include "simulator/calibration/fit.h"
#include "simulator/calibration/iteration_fit.h"
#include "simulator/calibration/iteration_runs.h"
#include "simulator/calibration/measurements.h"
#include "simulator/calibration/profiler_check.h"
#include "simulator/calibration/profiler_trace.h"
#include "simulator/calibration/trace_fit.h"
#include "simulator/cost_profile.h"
#include "src/io/plan_io.h"
#include "src/io/units.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer::cli {
namespace {

struct FitArgs {
  std::string cluster, base, output, name, note, optimizer = "adam", profiler_dtype = "f32";
  std::vector<std::string> measurements, nccl_tests, profiler_traces, traces, graphs, plans;
  std::vector<std::string> iterations;
  int fit_every = 2, fit_iterations = 20, folds = 0, threads = 2;
  double line_tolerance = 0.05;
  double knot_step = 1.0;
  int max_evals = 400;
  uint64_t seed = 1;
};

struct CheckArgs {
  std::string cluster, profile, csv;
  std::vector<std::string> measurements, iterations, profiler_traces;
  int threads = 2;
  bool quiet_rows = false;
};

std::string pct(double v) { return fixed(100 * v, 1) + "%"; }

std::string rows_of(const MeasurementSet& s) {
  return std::to_string(s.rows.size()) + (s.rows.size() == 1 ? " row" : " rows");
}

std::string fidelity_line(const FidelitySummary& f) {
  return "MAPE " + pct(f.mape) + ", median " + pct(f.median) + ", p90 " + pct(f.p90) +
         ", signed " + (f.signed_mean >= 0 ? "+" : "") + pct(f.signed_mean) + ", Spearman " +
         fixed(f.spearman, 3) + " (" + std::to_string(f.n) + " runs)";
}

std::vector<double> measured_of(const std::vector<IterationRun>& runs) {
  std::vector<double> m;
  for (const IterationRun& r : runs) m.push_back(r.measured);
  return m;
}

// Every run is checked before the first simulation; the work is said up front.
void announce_work(const std::vector<IterationRun>& runs, const Cluster& cluster) {
  const double largest = check_runs_before_simulating(runs, cluster);
  std::cerr << "placer: " << runs.size() << " runs, at most ~" << human_count(largest, "")
            << " simulated ops per prediction (bound " << human_count(kMaxSimulatedOpsPerRun, "")
            << ")\n";
}

// The iteration-time fit (after the collective fits, whose curves it keeps): every
// fit_every-th run, then optional k-fold cross-validation. Returns a note for the profile.
std::string fit_iterations(const FitArgs& a, const Cluster& cluster,
                           const std::vector<IterationRun>& runs, FitReport* rep) {
  if (a.fit_every < 1 || a.fit_iterations < 1 || a.folds < 0 || a.folds == 1 || a.threads < 1) {
    throw Error("calibrate fit: --fit-every, --fit-iterations and --threads must be >= 1, "
                "--folds 0 or >= 2");
  }
  announce_work(runs, cluster);
  const CostProfile start = iteration_fit_start(rep->profile);
  auto subsample = [&](const std::vector<IterationRun>& rs) {
    std::vector<IterationRun> out;
    for (size_t i = 0; i < rs.size(); i += size_t(a.fit_every)) out.push_back(rs[i]);
    return out;
  };
  IterationFitOptions fo;
  fo.max_iterations = a.fit_iterations;
  fo.threads = a.threads;
  fo.progress = [](int it, double rms) {
    std::cerr << "placer: iteration fit " << it << ": RMS log error " << fixed(rms, 4) << "\n";
  };
  std::vector<std::vector<std::pair<std::string, double>>> fold_values;
  std::string cv;
  if (a.folds >= 2) {
    std::vector<int> fold_of(runs.size());
    for (size_t i = 0; i < runs.size(); ++i) fold_of[i] = int(i % size_t(a.folds));
    const std::vector<double> pred = cross_validated_predictions(
        cluster, start, runs, fold_of, a.fit_every, fo,
        [&](int, const IterationFitResult& f) { fold_values.push_back(f.values); });
    const std::vector<double> meas = measured_of(runs);
    for (int k = 0; k < a.folds; ++k) {
      std::vector<double> m, p;
      for (size_t i = 0; i < runs.size(); ++i) {
        if (fold_of[i] != k) continue;
        m.push_back(meas[i]);
        p.push_back(pred[i]);
      }
      std::cerr << "placer: fold " << k + 1 << "/" << a.folds << ": "
                << fidelity_line(summarize_fidelity(m, p)) << "\n";
    }
    cv = fidelity_line(summarize_fidelity(meas, pred));
    std::cout << a.folds << "-fold cross-validated: " << cv << "\n";
  }
  const IterationFitResult f = fit_iteration_times(cluster, start, subsample(runs), fo);
  const std::vector<double> all = predict_runs(cluster, f.profile, runs, a.threads);
  const std::string fitted = fidelity_line(summarize_fidelity(measured_of(runs), all));
  std::cout << "iteration fit: " << f.values.size() << " parameters, " << f.iterations
            << " iterations, " << f.simulations << " simulations of " << subsample(runs).size()
            << " runs, " << fixed(f.seconds, 1) << " s; on all runs: " << fitted << "\n";
  for (size_t j = 0; j < f.values.size(); ++j) {
    std::string spread;
    if (!fold_values.empty()) {
      double lo = fold_values[0][j].second, hi = lo;
      for (const auto& v : fold_values) lo = std::min(lo, v[j].second), hi = std::max(hi, v[j].second);
      spread = "  folds " + format_double(lo) + " .. " + format_double(hi);
    }
    std::cout << "  " << pad_right(f.values[j].first, 30) << pad_left(format_double(f.values[j].second), 14)
              << spread << "\n";
  }
  rep->profile = f.profile;
  return "; iteration fit on " + std::to_string(runs.size()) + " runs: " + fitted +
         (cv.empty() ? "" : "; " + std::to_string(a.folds) + "-fold CV " + cv);
}

// An nccl-tests log or CSV, "OP=PATH" naming the collective when the log does not.
MeasurementSet read_nccl_tests(const std::string& arg) {
  std::string op, path = arg;
  const size_t eq = arg.find('=');
  if (eq != std::string::npos && !normalize_collective_name(arg.substr(0, eq)).empty()) {
    op = arg.substr(0, eq);
    path = arg.substr(eq + 1);
  }
  const std::string text = read_text_file(path, "nccl-tests log");
  MeasurementSet set = looks_like_nccl_tests_csv(text) ? parse_nccl_tests_csv(text, path, op)
                                                       : parse_nccl_tests_log(text, path, op);
  if (set.header.count("ranks") == 0 && !set.rows.empty()) {
    set.header["ranks"] = std::to_string(set.rows.front().devices);
  }
  std::cerr << "placer: read " << path << " (nccl-tests " << set.rows.front().op << ", "
            << set.header["ranks"] << " ranks, " << rows_of(set) << ")\n";
  return set;
}

/// What `calibrate fit` fits to, read from the files its options name (the op traces of
/// --trace are read later, with their graph and plan).
struct FitInputs {
  std::vector<MeasurementSet> sets;   ///< --measurements, --nccl-tests
  std::vector<ProfilerTrace> traces;  ///< --profiler-trace
  std::vector<IterationRun> runs;     ///< --iterations
};

FitInputs read_fit_inputs(const FitArgs& a) {
  FitInputs in;
  for (const std::string& m : a.measurements) {
    in.sets.push_back(load_measurements(m));
    std::cerr << "placer: read " << in.sets.back().source << " (" << in.sets.back().format << ", "
              << rows_of(in.sets.back()) << ")\n";
  }
  for (const std::string& m : a.nccl_tests) in.sets.push_back(read_nccl_tests(m));
  for (const std::string& t : a.profiler_traces) {
    in.traces.push_back(load_profiler_trace(t));
    std::cerr << "placer: read " << t << " (" << in.traces.back().kernels.size() << " kernels, "
              << in.traces.back().cpu_ops << " CPU ops)\n";
  }
  if (a.traces.size() != a.graphs.size() || a.traces.size() != a.plans.size()) {
    throw Error("calibrate fit: give one --graph and one --plan per --trace (got " +
                std::to_string(a.traces.size()) + " traces, " + std::to_string(a.graphs.size()) +
                " graphs, " + std::to_string(a.plans.size()) + " plans)");
  }
  for (const std::string& path : a.iterations) {
    std::vector<IterationRun> r = load_iteration_runs(path);
    std::cerr << "placer: read " << path << " (" << r.size() << " measured iterations)\n";
    in.runs.insert(in.runs.end(), r.begin(), r.end());
  }
  if (in.sets.empty() && in.traces.empty() && a.traces.empty() && in.runs.empty()) {
    throw Error(
        "calibrate fit: nothing to fit; give --measurements, --nccl-tests, "
        "--profiler-trace, --trace/--graph/--plan or --iterations");
  }
  return in;
}

// The collective and kernel fits of the measurements and profiler traces on top of `base`
// (the report of `base` alone when there are none).
FitReport fit_measurements(const FitArgs& a, const Cluster& cluster, const CostProfile& base,
                           const FitInputs& in) {
  FitReport rep;
  if (in.sets.empty() && in.traces.empty()) {
    rep.profile = base;
    return rep;
  }
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
  return fit_profile(cluster, base, in.sets, in.traces, fo);
}

// The transfer constants fitted to each --trace (with its --graph and --plan), one term per
// link level in the report.
void fit_op_traces(const FitArgs& a, const Cluster& cluster, FitReport* rep) {
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
    const TraceFitResult tr = fit_transfer_constants(g, cluster, plan, rep->profile, ops, to);
    rep->profile = tr.profile;
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
      rep->profile.fit_errors.erase(tf.term);
      rep->terms.push_back(tf);
    }
  }
}

// The files the profile was fitted from, for its description.
std::string fit_sources(const FitArgs& a, const FitInputs& in) {
  std::string sources;
  for (const std::string& p : a.iterations) sources += (sources.empty() ? "" : ", ") + p;
  for (const MeasurementSet& s : in.sets) sources += (sources.empty() ? "" : ", ") + s.source;
  for (const ProfilerTrace& t : in.traces) sources += (sources.empty() ? "" : ", ") + t.source;
  for (const std::string& t : a.traces) sources += (sources.empty() ? "" : ", ") + t;
  return sources;
}

// The table of fitted terms and the notes (nothing when no term was fitted), then the profile
// written to `output`.
void write_fit_report(const FitReport& rep, const std::string& output) {
  std::ostream& out = std::cout;
  if (!rep.terms.empty()) {
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
  }
  ensure_parent_dir(output);
  save_cost_profile(rep.profile, output);
  out << "profile " << output << "\n";
}

void run_fit(const FitArgs& a) {
  Cluster cluster = load_cluster(a.cluster);
  CostProfile base = a.base.empty() ? default_profile() : load_cost_profile(a.base);
  const FitInputs in = read_fit_inputs(a);
  FitReport rep = fit_measurements(a, cluster, base, in);
  fit_op_traces(a, cluster, &rep);
  std::string iteration_note;
  if (!in.runs.empty()) iteration_note = fit_iterations(a, cluster, in.runs, &rep);
  rep.profile.name = !a.name.empty() ? a.name : "calibrated";
  rep.profile.description = (a.note.empty() ? "" : a.note + " ") +
                            "Fitted by placer calibrate fit on cluster '" + cluster.name +
                            "' from: " + fit_sources(a, in) +
                            (a.base.empty() ? "" : "; base " + a.base) + iteration_note;
  rep.profile.validate(a.output);
  write_fit_report(rep, a.output);
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

// --csv: the path itself when one kind of input is checked, else PATH without ".csv" +
// ".<what>.csv" per kind (iterations, measurements, ops).
std::string check_csv_path(const CheckArgs& a, const std::string& what) {
  const int kinds = int(!a.iterations.empty()) + int(!a.measurements.empty()) +
                    int(!a.profiler_traces.empty());
  if (a.csv.empty() || kinds <= 1) return a.csv;
  std::string stem = a.csv;
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".csv") == 0) stem.resize(stem.size() - 4);
  return stem + "." + what + ".csv";
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// --profiler-trace: per-op predicted vs measured kernel time (profiler_ops.h).
void check_profiler_traces(const CheckArgs& a, const Cluster& cluster, const CostProfile& profile) {
  std::vector<ProfilerTrace> traces;
  for (const std::string& t : a.profiler_traces) {
    traces.push_back(load_profiler_trace(t));
    std::cerr << "placer: read " << t << " (" << traces.back().kernels.size()
              << " kernel / memcpy / memset events, " << traces.back().cpu_ops << " CPU ops)\n";
  }
  const ProfiledCheckReport r = check_profiled_ops(cluster, profile, traces);
  std::ostream& out = std::cout;
  auto line = [&](const std::string& name, const ProfiledError& e, size_t w) {
    out << pad_right(name, w) << pad_left(std::to_string(e.error.points), 6)
        << pad_left(pct(e.error.median), 9) << pad_left(pct(e.error.p90), 9)
        << pad_left((e.signed_median >= 0 ? "+" : "") + pct(e.signed_median), 9)
        << pad_left(human_time(e.measured_s), 12) << pad_left(human_time(e.predicted_s), 12)
        << pad_left(fixed(e.ratio(), 3), 10) << "\n";
  };
  auto header = [&](const std::string& first, size_t w) {
    out << pad_right(first, w) << pad_left("rows", 6) << pad_left("median", 9) << pad_left("p90", 9)
        << pad_left("signed", 9) << pad_left("measured", 12) << pad_left("predicted", 12)
        << pad_left("pred/meas", 10) << "\n";
  };
  if (!a.quiet_rows) {
    size_t w = 24;
    for (const auto& [name, e] : r.by_op) w = std::max(w, name.size() + 2);
    out << "per op (" << traces.size() << (traces.size() == 1 ? " trace" : " traces")
        << "; median / p90 of |predicted - measured| / measured, signed median, summed times)\n";
    header("op dtype", w);
    for (const auto& [name, e] : r.by_op) line(name, e, w);
    out << "\n";
  }
  size_t w = 24;
  for (const auto& [name, e] : r.groups) w = std::max(w, name.size() + 2);
  header("group", w);
  for (const auto& [name, e] : r.groups) line(name, e, w);
  line("all ops", r.overall, w);
  if (r.transfers.error.points > 0) line("all memcpy / memset", r.transfers, w);
  for (const std::string& n : r.notes) out << "note: " << n << "\n";
  const std::string csv = check_csv_path(a, "ops");
  if (!csv.empty()) {
    std::string text =
        "source,op_id,op,kind,category,dtype,flops,bytes,kernels,measured_s,predicted_s,"
        "rel_error\n";
    for (const ProfiledRow& row : r.rows) {
      const ProfiledOp& o = row.op;
      text += csv_field(o.source) + "," + std::to_string(o.op_id) + "," + csv_field(o.op) + "," +
              o.kind + "," + to_string(o.category) + "," + to_string(o.dtype) + "," +
              format_double(o.flops) + "," + format_double(o.bytes) + "," +
              std::to_string(o.kernels) + "," + format_double(o.measured_s) + "," +
              format_double(row.predicted_s) + "," + format_double(row.rel_error) + "\n";
    }
    ensure_parent_dir(csv);
    write_text_file(csv, text);
    out << "csv " << csv << "\n";
  }
}

void check_iterations(const CheckArgs& a, const Cluster& cluster, const CostProfile& profile) {
  std::vector<IterationRun> runs;
  for (const std::string& path : a.iterations) {
    std::vector<IterationRun> r = load_iteration_runs(path);
    runs.insert(runs.end(), r.begin(), r.end());
  }
  announce_work(runs, cluster);
  const std::vector<double> pred = predict_runs(cluster, profile, runs, a.threads);
  std::ostream& out = std::cout;
  std::string csv = "source,line,hidden,layers,global_batch,micro_batch,tp,dp,pp,measured_s,predicted_s,rel_error\n";
  if (!a.quiet_rows) {
    out << pad_right("run", 30) << pad_right("model / config", 34) << pad_left("measured", 12)
        << pad_left("predicted", 12) << pad_left("error", 9) << "\n";
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const IterationRun& r = runs[i];
    const MegatronConfig& m = r.config;
    const double e = (pred[i] - r.measured) / r.measured;
    const std::string cfg = "h" + std::to_string(r.hidden) + " l" + std::to_string(r.layers) +
                            " gb" + std::to_string(m.global_batch) + " mb" +
                            std::to_string(m.micro_batch) + " t" + std::to_string(m.tp) + "d" +
                            std::to_string(m.dp) + "p" + std::to_string(m.pp) +
                            (m.virtual_stages > 1 ? "v" + std::to_string(m.virtual_stages) : "");
    if (!a.quiet_rows) {
      std::string where = r.where();
      if (where.size() > 28) where = "..." + where.substr(where.size() - 25);
      out << pad_right(where, 30) << pad_right(cfg, 34) << pad_left(human_time(r.measured), 12)
          << pad_left(human_time(pred[i]), 12) << pad_left((e >= 0 ? "+" : "") + pct(e), 9) << "\n";
    }
    csv += r.source + "," + std::to_string(r.line) + "," + std::to_string(r.hidden) + "," +
           std::to_string(r.layers) + "," + std::to_string(m.global_batch) + "," +
           std::to_string(m.micro_batch) + "," + std::to_string(m.tp) + "," + std::to_string(m.dp) +
           "," + std::to_string(m.pp) + "," + format_double(r.measured) + "," +
           format_double(pred[i]) + "," + format_double(e) + "\n";
  }
  out << "iterations: " << fidelity_line(summarize_fidelity(measured_of(runs), pred)) << "\n";
  if (const std::string path = check_csv_path(a, "iterations"); !path.empty()) {
    ensure_parent_dir(path);
    write_text_file(path, csv);
    out << "csv " << path << "\n";
  }
}

void check_measurements(const CheckArgs& a, const Cluster& cluster, const CostProfile& profile) {
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
  if (const std::string path = check_csv_path(a, "measurements"); !path.empty()) {
    ensure_parent_dir(path);
    write_check_csv(r, path);
    out << "csv " << path << "\n";
  }
}

void run_check(const CheckArgs& a) {
  Cluster cluster = load_cluster(a.cluster);
  CostProfile profile = load_profile_for(a.profile, cluster);
  if (a.measurements.empty() && a.iterations.empty() && a.profiler_traces.empty()) {
    throw Error("calibrate check: give --measurements, --iterations or --profiler-trace");
  }
  if (!a.iterations.empty()) check_iterations(a, cluster, profile);
  if (!a.measurements.empty()) check_measurements(a, cluster, profile);
  if (!a.profiler_traces.empty()) check_profiler_traces(a, cluster, profile);
}

void fit_options(CLI::App* fit, FitArgs& a) {
  add_cluster_option(fit, a.cluster, "Cluster (*.cluster.yaml) the data was measured on");
  fit->add_option("-m,--measurements", a.measurements,
                  "placer-calibrate CSV or nccl-tests log ([OP=]path); repeatable");
  fit->add_option("--nccl-tests", a.nccl_tests,
                  "nccl-tests log ([OP=]path, OP = all_reduce, all_gather, reduce_scatter,\n"
                  "broadcast, send_recv when the log does not say); repeatable");
  fit->add_option("--profiler-trace", a.profiler_traces,
                  "PyTorch profiler / Kineto Chrome trace (kernels with op names); repeatable");
  fit->add_option("--profiler-dtype", a.profiler_dtype,
                  "Precision of the profiled ops (selects the peak FLOP/s): f32, f16, bf16, ...")
      ->capture_default_str();
  fit->add_option("--trace", a.traces,
                  "Measured execution trace (Chrome JSON, ops named as in the graph) for the\n"
                  "transfer-constant fit; repeatable, one --graph and --plan each");
  fit->add_option("-g,--graph", a.graphs, "Graph of the matching --trace");
  fit->add_option("-p,--plan", a.plans, "Plan of the matching --trace");
  fit->add_option("--base", a.base, "Profile to start from (default: the built-in default)")
      ->check(CLI::ExistingFile);
  add_output_option(fit, a.output, "Fitted profile (*.profile.yaml)")->required();
  fit->add_option("--name", a.name, "Name of the fitted profile (default: calibrated)");
  fit->add_option("--note", a.note,
                  "Text put before the generated description of the fitted profile (how it\n"
                  "is regenerated, what it is for)");
  fit->add_option("--line-tolerance", a.line_tolerance,
                  "Largest median relative error of a straight alpha-beta line before a\n"
                  "collective gets a piecewise curve")
      ->capture_default_str();
  fit->add_option("--knot-step", a.knot_step,
                  "Decades between the knots of fitted curves (collectives and ops)")
      ->capture_default_str();
  fit->add_option("--max-evals", a.max_evals, "Simulations per trace fit")->capture_default_str();
  add_seed_option(fit, a.seed, "Seed of the trace fit's search");
  fit->add_option("--iterations", a.iterations,
                  "Measured training runs (CSV, docs/formats/iteration_runs.md): fit dispatch,\n"
                  "efficiency curves and overheads to their iteration times; repeatable");
  fit->add_option("--fit-every", a.fit_every,
                  "Fit on every K-th run (the fit simulates the runs ~20 times per iteration)")
      ->capture_default_str();
  fit->add_option("--fit-iterations", a.fit_iterations, "Levenberg-Marquardt iterations")
      ->capture_default_str();
  fit->add_option("--folds", a.folds, "K-fold cross-validation of the iteration fit (0 = off)")
      ->capture_default_str();
  fit->add_option("--threads", a.threads, "Threads simulating runs")->capture_default_str();
  add_optimizer_option(fit, a.optimizer,
                       "Optimizer for expanding a forward --graph: sgd, momentum, adam");
}

void check_options(CLI::App* check, CheckArgs& a) {
  add_profile_option(check, a.profile);
  add_cluster_option(check, a.cluster);
  check->add_option("-m,--measurements", a.measurements,
                    "placer-calibrate CSV or nccl-tests log ([OP=]path); repeatable");
  check->add_option("--iterations", a.iterations,
                    "Measured training runs (CSV, docs/formats/iteration_runs.md); repeatable");
  check->add_option("--profiler-trace", a.profiler_traces,
                    "PyTorch profiler / Kineto trace (*.json or *.json.gz, record_shapes=True):\n"
                    "per-op predicted vs measured kernel time; repeatable");
  check->add_option("--threads", a.threads, "Threads simulating runs")->capture_default_str();
  check->add_option("--csv", a.csv,
                    "Write the per-row comparison as CSV (with several kinds of input:\n"
                    "OUT.iterations.csv, OUT.measurements.csv, OUT.ops.csv)");
  check->add_flag("--summary", a.quiet_rows,
                  "Print only the per-group summary (no per-row / per-op-name tables)");
}

void register_calibrate(CLI::App& app) {
  CLI::App* cal = app.add_subcommand(
      "calibrate",
      "Fit a cost profile to measurements (placer-calibrate CSV, nccl-tests logs, PyTorch\n"
      "profiler traces, measured execution traces) or check a profile against them.");
  cal->require_subcommand(1);
  add_command<FitArgs>(
      *cal, "fit",
      "Fit collective curves, link constants, op efficiency curves and the launch\n"
      "overhead; print the fitted terms with their errors; write a *.profile.yaml.",
      fit_options, run_fit);
  add_command<CheckArgs>(
      *cal, "check",
      "Predicted vs measured per row with median and p90 relative errors (table\n"
      "and CSV): measurement rows, iteration times, per-op kernel times of profiler traces.",
      check_options, run_check);
}

}  // namespace

static CommandRegistrar calibrate_registrar(12, "calibrate", register_calibrate);

}  // namespace placer::cli
