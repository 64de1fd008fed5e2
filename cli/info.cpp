// `placer info`: what is in a graph file.
#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <memory>

#include "cli/command_options.h"
#include "src/graph/algorithms.h"
#include "src/io/graph_json.h"
#include "src/util/format.h"

namespace placer::cli {
namespace {

void run_info(const std::string& path) {
  Graph g = load_graph_json(path);
  std::ostream& out = std::cout;
  int components = 0;
  weakly_connected_components(g, &components);
  out << "graph        " << g.name() << " (" << (g.is_training_step() ? "training step" : "forward")
      << ", batch " << g.batch_size() << ")\n";
  out << "ops          " << g.num_ops() << " (" << components << " connected component"
      << (components == 1 ? "" : "s") << "), tensors " << g.num_tensors() << "\n";
  out << "compute      " << human_count(g.total_flops(), "FLOP") << "\n";
  uint64_t state = 0;
  for (const Op& o : g.ops()) state += o.state_bytes;
  out << "parameters   " << human_bytes(double(g.total_param_bytes())) << " (optimizer state "
      << human_bytes(double(state)) << ")\n";

  std::map<std::string, std::pair<size_t, double>> by_phase, by_category;
  for (const Op& o : g.ops()) {
    auto& p = by_phase[to_string(o.phase)];
    ++p.first, p.second += o.flops;
    auto& c = by_category[to_string(o.category)];
    ++c.first, c.second += o.flops;
  }
  out << "\nphase / category       ops        FLOPs\n";
  for (const auto& [k, v] : by_phase) {
    out << "  " << pad_right(k, 18) << pad_left(std::to_string(v.first), 7)
        << pad_left(human_count(v.second, "FLOP"), 13) << "\n";
  }
  for (const auto& [k, v] : by_category) {
    out << "  " << pad_right(k, 18) << pad_left(std::to_string(v.first), 7)
        << pad_left(human_count(v.second, "FLOP"), 13) << "\n";
  }
  std::vector<double> flops(g.num_ops());
  for (OpId i = 0; i < g.num_ops(); ++i) flops[i] = g.op(i).flops;
  CriticalPath cp = critical_path(g, flops);
  if (!cp.ops.empty()) {
    out << "\ncritical path " << cp.ops.size() << " ops, " << human_count(cp.length, "FLOP") << " ("
        << fixed(g.total_flops() > 0 ? 100 * cp.length / g.total_flops() : 0, 1)
        << "% of all FLOPs: the most any placement can overlap is the rest)\n";
  }
}

}  // namespace

static CommandRegistrar info_registrar = define_command<std::string>(
    50, "info", "Summarize a graph file: ops, FLOPs, parameters, critical path.",
    [](CLI::App* sub, std::string& path) {
      add_input_file(sub, "graph", path, "Graph file (*.graph.json)");
    },
    run_info);

}  // namespace placer::cli
