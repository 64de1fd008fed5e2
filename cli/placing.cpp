#include "cli/placing.h"

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <sstream>

#include "cli/command_options.h"
#include "cli/common.h"
#include "cli/profile_choice.h"
#include "datasets/onnx_import.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/io/routing_io.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer::cli {

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

std::string onnx_model_of(const ProblemArgs& a) {
  if (a.graph.empty() && a.model.empty()) {
    throw Error("a model is required: --model M.onnx (an ONNX model, imported here) or --graph "
                "G.graph.json");
  }
  if (!a.graph.empty() && !a.model.empty()) {
    throw Error("--graph and --model both name the model; give one");
  }
  const std::string model = !a.model.empty() ? a.model : ends_with(a.graph, ".onnx") ? a.graph : "";
  if (model.empty() && (a.batch_size > 0 || a.seq_len > 0)) {
    throw Error(std::string(a.batch_size > 0 ? "--batch-size" : "--seq-len") +
                " applies when importing an ONNX model (--model M.onnx), not to the graph file " +
                a.graph + " (its batch is fixed: re-import it with `placer import`)");
  }
  return model;
}

namespace {

// Imports `model` (stderr: one line for the import, one per warning) and expands it to a
// training step unless --no-expand.
Graph import_for_step(const std::string& model, const ProblemArgs& a) {
  TrainingOptions training;
  if (!a.no_expand && !parse_optimizer(a.optimizer, &training.optimizer)) {
    throw Error("--optimizer: unknown optimizer '" + a.optimizer + "' (use sgd, momentum or adam)");
  }
  ImportOptions opts;
  opts.batch_size = a.batch_size;
  opts.seq_len = a.seq_len;
  std::vector<std::string> warnings;
  ImportStats st;
  Graph forward = import_onnx(model, opts, &warnings, &st);
  std::cerr << "placer: imported " << model << " (ONNX opset " << st.opset;
  if (st.upgraded_from > 0) std::cerr << ", upgraded opset " << st.upgraded_from << " -> " << st.opset;
  std::cerr << "): " << forward.num_ops() << " forward ops, batch " << forward.batch_size() << ", "
            << human_count(forward.total_flops(), "FLOP");
  if (a.no_expand) {
    std::cerr << "\n";
  } else {
    Graph step = expand_training_step(forward, training);
    std::cerr << "; training step of " << step.num_ops() << " ops with backward and "
              << a.optimizer << " updates\n";
    forward = std::move(step);
  }
  for (const std::string& w : warnings) std::cerr << "placer: import: warning: " << w << "\n";
  return forward;
}

}  // namespace

std::unique_ptr<ProblemSetup> load_problem(const ProblemArgs& a) {
  const std::string model = onnx_model_of(a);
  auto s = std::unique_ptr<ProblemSetup>(
      new ProblemSetup{model.empty() ? load_graph_for_step(a.graph, !a.no_expand, a.optimizer)
                                     : import_for_step(model, a),
                       load_cluster(a.cluster),
                       nullptr,
                       nullptr,
                       {},
                       {}});
  CostProfile profile = load_profile_for(a.profile, s->cluster);
  s->cost = std::make_unique<CostModel>(s->cluster, profile);
  s->simulator = std::make_unique<Simulator>(s->graph, s->cluster, *s->cost);
  s->devices = parse_device_list(a.devices, s->cluster.num_devices());
  if (!a.routing.empty()) s->routing = load_routing(a.routing).stats();
  return s;
}

void add_problem_options(CLI::App* sub, ProblemArgs* p) {
  sub->add_option("-g,--graph", p->graph,
                  "Model graph (*.graph.json), forward or training step; a *.onnx path is "
                  "imported as with --model")
      ->check(CLI::ExistingFile);
  sub->add_option("--model", p->model,
                  "ONNX model (*.onnx), imported here (as `placer import` does with these "
                  "options; for --dim, --dtype, ... import it first and pass --graph)")
      ->check(CLI::ExistingFile);
  sub->add_option("--batch-size", p->batch_size,
                  "ONNX model: batch (first dim of the data inputs); default: the model's, 1 "
                  "if symbolic")
      ->check(CLI::PositiveNumber);
  sub->add_option("--seq-len", p->seq_len,
                  "ONNX model: value of symbolic sequence dims (names with seq / len / time / "
                  "step)")
      ->check(CLI::PositiveNumber);
  add_cluster_option(sub, p->cluster);
  add_profile_option(sub, p->profile);
  add_optimizer_option(sub, p->optimizer);
  sub->add_flag("--no-expand", p->no_expand, "Place a forward graph as it is (no backward ops)");
  sub->add_option("--devices", p->devices,
                  "Comma-separated device indices the methods may use (default: all)");
  sub->add_option("--routing", p->routing,
                  "Routing statistics of the MoE layers (*.routing.json, "
                  "docs/formats/routing.md): the expert load under expert parallelism")
      ->check(CLI::ExistingFile);
}

}  // namespace placer::cli
