#include "src/cli/placing.h"

#include "src/util/progress.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <exception>
#include <sstream>

#include "simulator/cost_profile.h"
#include "src/cli/common.h"
#include "src/util/error.h"
#include "src/util/progress.h"

namespace placer::cli {

Problem ProblemSetup::problem() const {
  return Problem{graph, cluster, *cost, *simulator, devices};
}

std::vector<int> parse_device_list(const std::string& s, int num_devices) {
  std::vector<int> out;
  if (s.empty()) return out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int d = -1;
    try {
      d = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || d < 0 || d >= num_devices) {
      throw ValidationError("--devices: '" + item + "' is not a device index in [0, " +
                            std::to_string(num_devices) + ")");
    }
    for (int e : out) {
      if (e == d) throw ValidationError("--devices: device " + item + " listed twice");
    }
    out.push_back(d);
  }
  return out;
}

std::unique_ptr<ProblemSetup> load_problem(const ProblemArgs& a) {
  auto s = std::unique_ptr<ProblemSetup>(
      new ProblemSetup{load_graph_for_step(a.graph, !a.no_expand, a.optimizer),
                       load_cluster(a.cluster),
                       nullptr,
                       nullptr,
                       {}});
  CostProfile profile = a.profile.empty() ? default_profile() : load_cost_profile(a.profile);
  s->cost = std::make_unique<CostModel>(s->cluster, profile);
  s->simulator = std::make_unique<Simulator>(s->graph, s->cluster, *s->cost);
  s->devices = parse_device_list(a.devices, s->cluster.num_devices());
  return s;
}

MethodRun run_placer(Placer& placer, const ProblemSetup& s, const SearchBudget& budget) {
  MethodRun run;
  run.method = placer.name();
  const auto t0 = std::chrono::steady_clock::now();
  auto since = [&t0] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  try {
    // Long searches report on stderr (a bar on a terminal, a line every 2 s otherwise).
    Progress progress("placer: " + run.method, 0);
    SearchBudget with_progress = budget;
    if (!with_progress.progress) {
      with_progress.progress = [&progress](int64_t done, int64_t total, const std::string& st) {
        progress.set_total(total);
        progress.update(done, st);
      };
    }
    run.plan = placer.search(s.problem(), with_progress);
    progress.finish();
    run.search_seconds = since();
    if (run.plan.method.empty()) run.plan.method = run.method;
    run.plan.validate(s.graph, s.cluster);
    SimOptions opts;
    opts.critical_path = false;
    run.result = s.simulator->run(run.plan, opts);
    run.plan.predicted.valid = true;
    run.plan.predicted.step_time = run.result.step_time;
    run.plan.predicted.peak_memory = run.result.peak_memory;
    run.plan.predicted.oom = run.result.oom;
    run.ok = true;
  } catch (const std::exception& e) {
    // Any failure of one method (placer::Error or a library's exception) is reported
    // in its row; the others still run.
    if (run.search_seconds == 0) run.search_seconds = since();
    run.ok = false;
    run.error = e.what();
  }
  return run;
}

MethodRun run_method(const std::string& method, const ProblemSetup& s, const SearchBudget& budget) {
  std::unique_ptr<Placer> placer;
  try {
    placer = make_placer(method);
  } catch (const std::exception& e) {
    MethodRun run;
    run.method = method;
    run.error = e.what();
    return run;
  }
  MethodRun run = run_placer(*placer, s, budget);
  run.method = method;
  return run;
}

SimResult simulate_single_device(const ProblemSetup& s) {
  const int dev = s.devices.empty() ? 0 : s.devices.front();
  SimOptions opts;
  opts.critical_path = false;
  return s.simulator->run(Plan::single_device(s.graph, dev), opts);
}

int max_peak_device(const SimResult& r) {
  int best = 0;
  for (size_t d = 0; d < r.peak_memory.size(); ++d) {
    if (r.peak_memory[d] > r.peak_memory[best]) best = static_cast<int>(d);
  }
  return best;
}

void add_problem_options(CLI::App* sub, ProblemArgs* p) {
  sub->add_option("-g,--graph", p->graph, "Model graph (*.graph.json), forward or training step")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("-c,--cluster", p->cluster, "Cluster (*.cluster.yaml)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--profile", p->profile,
                  "Cost profile (*.profile.yaml); default: the built-in default profile")
      ->check(CLI::ExistingFile);
  sub->add_option("--optimizer", p->optimizer,
                  "Optimizer for expanding a forward graph: sgd, momentum, adam")
      ->capture_default_str();
  sub->add_flag("--no-expand", p->no_expand, "Place a forward graph as it is (no backward ops)");
  sub->add_option("--devices", p->devices,
                  "Comma-separated device indices the methods may use (default: all)");
}

std::string known_methods() {
  std::string s;
  for (const MethodInfo& m : placer_methods()) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

}  // namespace placer::cli
