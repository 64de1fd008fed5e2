#pragma once
// One problem set up in one place (graph, cluster, cost model, simulator) and one guarded
// method run on it (search + simulation + wall time): what `placer place`, `placer compare`
// and the portfolios `best` / `auto` (method_portfolio.h) run.

#include <memory>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"

namespace placer {

/// Everything a method needs, owned in one place (the simulator refers to the others).
struct ProblemSetup {
  Graph graph;
  Cluster cluster;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<Simulator> simulator;
  std::vector<int> devices;  ///< as given by --devices (empty = all)
  RoutingStats routing;      ///< as given by --routing (empty = uniform)
  Problem problem() const;
  /// The simulator options every run of a plan of this problem uses (the routing).
  SimOptions sim_options() const;
};

/// One method's outcome. `ok` false: `error` says why (the search or the plan threw).
struct MethodRun {
  std::string method;
  bool ok = false;
  std::string error;
  Plan plan;
  SimResult result;
  double search_seconds = 0;
};

/// Runs `placer` under `budget`, validates and simulates its plan; never throws for a
/// failing search or plan (the error goes into the result).
MethodRun run_placer(Placer& placer, const ProblemSetup& s, const SearchBudget& budget);

/// run_placer(make_placer(method, settings)); an unknown method or option is an error in the
/// result too.
MethodRun run_method(const std::string& method, const ProblemSetup& s, const SearchBudget& budget,
                     const MethodSettings& settings = {});

/// Step time of everything on the first allowed device (the speed-up reference).
SimResult simulate_single_device(const ProblemSetup& s);

/// Device with the highest peak memory in `r` (ties: the lowest index).
int max_peak_device(const SimResult& r);

/// Names of the registered methods, comma separated.
std::string known_methods();

}  // namespace placer
