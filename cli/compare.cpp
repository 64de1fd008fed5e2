// `placer compare`: every (or the listed) placement method on one graph and cluster, side
// by side: step time, speed-up over a single device, peak memory, OOM, search wall time.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "agents/portfolio/baseline_plan.h"
#include "cli/command_options.h"
#include "cli/common.h"
#include "cli/placing.h"
#include "cli/profile_choice.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer::cli {
namespace {

struct CompareArgs {
  ProblemArgs problem;
  std::string methods;
  int64_t budget_evals = 0;
  double budget_seconds = 0;
  uint64_t seed = 1;
  bool csv = false;
  std::string baseline_plan;  ///< a user's plan, shown as the first row
  std::vector<std::string> set;  ///< --set METHOD.KEY=VALUE
};

std::vector<std::string> split_methods(const std::string& s) {
  std::vector<std::string> out;
  if (s.empty()) {
    for (const MethodInfo& m : placer_methods()) out.push_back(m.name);
    return out;
  }
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c == '\n' ? ' ' : c;
  }
  return q + "\"";
}

/// The --set METHOD.KEY=VALUE options as each compared method's settings (KEY=VALUE, in the
/// order given). ValidationError naming the option: no METHOD. prefix, a method not compared
/// or without options; the method's option table names a bad key or value.
std::map<std::string, MethodSettings> settings_per_method(const std::vector<std::string>& sets,
                                                          const std::vector<std::string>& methods) {
  std::map<std::string, MethodSettings> out;
  for (const std::string& s : sets) {
    const size_t dot = s.find('.');
    if (dot == std::string::npos || dot == 0 || dot > s.find('=')) {
      throw ValidationError("--set '" + s +
                            "': expected METHOD.KEY=VALUE (e.g. colocrl.samples=4)");
    }
    const std::string method = s.substr(0, dot);
    if (std::find(methods.begin(), methods.end(), method) == methods.end()) {
      std::string compared;
      for (const std::string& m : methods) compared += (compared.empty() ? "" : ", ") + m;
      throw ValidationError("--set '" + s + "': method '" + method +
                            "' is not compared (compared: " + compared + ")");
    }
    out[method].sets.push_back(s.substr(dot + 1));
  }
  return out;
}

void run_compare(const CompareArgs& a) {
  const std::vector<std::string> methods = split_methods(a.methods);
  // Unknown names and options are a usage error, found before any work.
  const std::map<std::string, MethodSettings> settings = settings_per_method(a.set, methods);
  for (const std::string& m : methods) {
    const auto it = settings.find(m);
    if (it == settings.end()) {
      make_placer(m);
    } else {
      make_placer(m, it->second);
    }
  }
  std::unique_ptr<ProblemSetup> s = load_problem(a.problem);
  SearchBudget budget;
  budget.max_evaluations = a.budget_evals;
  budget.max_seconds = a.budget_seconds;
  budget.seed = a.seed;

  const Plan baseline = a.baseline_plan.empty() ? Plan{} : load_baseline_plan(a.baseline_plan, *s);
  const SimResult single = simulate_single_device(*s);
  std::vector<MethodRun> runs;
  if (!a.baseline_plan.empty()) runs.push_back(run_baseline_plan(a.baseline_plan, baseline, *s));
  for (size_t i = 0; i < methods.size(); ++i) {
    const auto it = settings.find(methods[i]);
    runs.push_back(
        run_method(methods[i], *s, budget, it == settings.end() ? MethodSettings{} : it->second));
    const MethodRun& r = runs.back();
    std::cerr << "placer: compare [" << i + 1 << "/" << methods.size() << "] " << r.method << ": "
              << (r.ok ? human_time(r.result.step_time) : "failed") << " ("
              << human_time(r.search_seconds) << ")\n";
  }

  const Cluster& c = s->cluster;
  if (a.csv) {
    std::cout << "method,step_time_s,speedup,max_peak_memory_bytes,max_peak_device,oom,"
                 "search_seconds,error\n";
    for (const MethodRun& r : runs) {
      std::cout << csv_field(r.method) << ",";
      if (r.ok) {
        const int d = max_peak_device(r.result);
        std::cout << r.result.step_time << ","
                  << (r.result.step_time > 0 ? single.step_time / r.result.step_time : 0) << ","
                  << r.result.peak_memory[d] << "," << csv_field(c.device(d).name) << ","
                  << (r.result.oom ? "true" : "false") << ",";
      } else {
        std::cout << ",,,,,";
      }
      std::cout << r.search_seconds << "," << csv_field(r.error) << "\n";
    }
    return;
  }

  std::cout << "graph    " << s->graph.name() << " (" << s->graph.num_ops() << " ops"
            << (s->graph.is_training_step() ? ", training step" : ", forward") << ")\n"
            << "cluster  " << c.name << " (" << c.num_devices() << " devices)\n"
            << "profile  " << profile_label(a.problem.profile, c) << "\n"
            << "single   " << human_time(single.step_time) << " on "
            << c.device(s->devices.empty() ? 0 : s->devices.front()).name
            << (single.oom ? " (out of memory)" : "") << " = speed-up 1.00x\n\n";
  size_t wm = 8, wd = 10;
  for (const MethodRun& r : runs) wm = std::max(wm, r.method.size() + 2);
  for (const Device& d : c.devices()) wd = std::max(wd, d.name.size() + 2);
  std::cout << pad_right("method", wm) << pad_left("step time", 11) << pad_left("speed-up", 10)
            << pad_left("peak mem", 12) << "  " << pad_right("on device", wd) << pad_left("OOM", 4)
            << pad_left("search", 10) << "\n";
  for (const MethodRun& r : runs) {
    std::cout << pad_right(r.method, wm);
    if (r.ok) {
      const int d = max_peak_device(r.result);
      const std::string speedup =
          r.result.step_time > 0 ? fixed(single.step_time / r.result.step_time, 2) + "x" : "-";
      std::cout << pad_left(human_time(r.result.step_time), 11) << pad_left(speedup, 10)
                << pad_left(human_bytes(double(r.result.peak_memory[d])), 12) << "  "
                << pad_right(c.device(d).name, wd) << pad_left(r.result.oom ? "yes" : "no", 4)
                << pad_left(human_time(r.search_seconds), 10) << "\n";
    } else {
      std::cout << "  error: " << r.error << "\n";
    }
  }
}

void compare_options(CLI::App* sub, CompareArgs& a) {
  add_problem_options(sub, &a.problem);
  sub->add_option("--methods", a.methods,
                  "Comma-separated methods (default: every registered method)");
  add_budget_options(sub, a.budget_evals,
                     "Search budget in simulator evaluations (0 = each method's default)",
                     a.budget_seconds, "Search budget in wall-clock seconds per method (0 = none)");
  add_seed_option(sub, a.seed);
  sub->add_option("--set", a.set,
                  "METHOD.KEY=VALUE: an option of one compared method (repeatable; `placer "
                  "methods METHOD` lists them), e.g. --set colocrl.samples=4");
  sub->add_flag("--csv", a.csv, "Print CSV (one header line, one line per method)");
  sub->add_option("--baseline-plan", a.baseline_plan,
                  "A plan of your own (e.g. from `placer plan from-megatron`) as the first row")
      ->check(CLI::ExistingFile);
}

}  // namespace

static CommandRegistrar compare_registrar = define_command<CompareArgs>(
    16, "compare",
    "Run several placement methods on one graph and cluster and print a table: step time,\n"
    "speed-up over a single device, max peak memory (and its device), OOM, search time.",
    compare_options, run_compare);

}  // namespace placer::cli
