#pragma once
// Shared by `placer place` and `placer compare`: the problem setup (graph, cluster, cost
// model, simulator) and one guarded method run (search + simulation + wall time).

#include <memory>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"

namespace CLI {
class App;
}

namespace placer::cli {

/// Options both commands take to build a problem.
struct ProblemArgs {
  std::string graph;  ///< --graph: a *.graph.json, or an ONNX model (*.onnx) to import
  std::string model;  ///< --model: an ONNX model to import
  std::string cluster, profile, optimizer = "adam", devices;
  int64_t batch_size = 0, seq_len = 0;  ///< import options of an ONNX model (0 = the model's)
  bool no_expand = false;
};

/// Adds --graph / --model, --batch-size, --seq-len, --cluster, --profile, --optimizer,
/// --no-expand, --devices to `sub`.
void add_problem_options(CLI::App* sub, ProblemArgs* p);

/// The ONNX model the arguments name (--model, or a --graph ending in .onnx); "" when the
/// graph is a graph file. Error when neither or both of --graph / --model are given, or when
/// an import option comes with a graph file.
std::string onnx_model_of(const ProblemArgs& a);

/// Everything a method needs, owned in one place (the simulator refers to the others).
struct ProblemSetup {
  Graph graph;
  Cluster cluster;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<Simulator> simulator;
  std::vector<int> devices;  ///< as given by --devices (empty = all)
  Problem problem() const;
};

/// Loads the graph, importing an ONNX model (one line on stderr says what was imported, and
/// each import warning another), expanded to a training step unless no_expand; the cluster
/// and the profile; parses --devices ("0,2,3"; ValidationError on a bad or out-of-range
/// index).
std::unique_ptr<ProblemSetup> load_problem(const ProblemArgs& a);

/// Parses "0,1,3" into device indices of a cluster with `num_devices` devices.
std::vector<int> parse_device_list(const std::string& s, int num_devices);

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

}  // namespace placer::cli
