#pragma once
// Shared by `placer place` and `placer compare`: the options that name a problem (graph or
// ONNX model, cluster, profile, devices) and the problem they load
// (agents/portfolio/method_run.h: ProblemSetup, one guarded method run).

#include <memory>
#include <string>
#include <vector>

#include "agents/portfolio/method_run.h"

namespace CLI {
class App;
}

namespace placer::cli {

/// Options both commands take to build a problem.
struct ProblemArgs {
  std::string graph;  ///< --graph: a *.graph.json, or an ONNX model (*.onnx) to import
  std::string model;  ///< --model: an ONNX model to import
  std::string cluster, profile, optimizer = "adam", devices;
  std::string routing;  ///< --routing: routing statistics of the MoE layers (*.routing.json)
  int64_t batch_size = 0, seq_len = 0;  ///< import options of an ONNX model (0 = the model's)
  bool no_expand = false;
};

/// Adds --graph / --model, --batch-size, --seq-len, --cluster, --profile, --optimizer,
/// --no-expand, --devices, --routing to `sub`.
void add_problem_options(CLI::App* sub, ProblemArgs* p);

/// The ONNX model the arguments name (--model, or a --graph ending in .onnx); "" when the
/// graph is a graph file. Error when neither or both of --graph / --model are given, or when
/// an import option comes with a graph file.
std::string onnx_model_of(const ProblemArgs& a);

/// Loads the graph, importing an ONNX model (one line on stderr says what was imported, and
/// each import warning another), expanded to a training step unless no_expand; the cluster
/// and the profile; parses --devices ("0,2,3"; ValidationError on a bad or out-of-range
/// index).
std::unique_ptr<ProblemSetup> load_problem(const ProblemArgs& a);

/// Parses "0,1,3" into device indices of a cluster with `num_devices` devices.
std::vector<int> parse_device_list(const std::string& s, int num_devices);

}  // namespace placer::cli
