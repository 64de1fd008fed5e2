// `placer export`: a plan as Megatron-LM arguments, a DeepSpeed config, torchtitan TOML
// sections or an Accelerate device map (docs/export.md).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "cli/command_options.h"
#include "cli/common.h"
#include "src/io/plan_export.h"
#include "src/io/plan_io.h"
#include "src/util/error.h"
#include "src/util/files.h"

namespace placer::cli {
namespace {

struct ExportArgs {
  std::string plan, graph, cluster, format, output;
};

void run_export(const ExportArgs& a) {
  ExportFormat f;
  if (!parse_export_format(a.format, &f)) {
    throw Error("--to: unknown format '" + a.format + "' (megatron, deepspeed, torchtitan, device-map)");
  }
  const Graph g = load_graph_for_step(a.graph, true, "adam");
  const Cluster c = load_cluster(a.cluster);
  const Plan p = load_plan(a.plan, g, c);
  std::vector<std::string> notes;
  std::string text;
  try {
    text = export_plan(p, g, c, f, &notes);
  } catch (const ValidationError& e) {
    throw ValidationError(a.plan + ": cannot export to " + a.format + ": " + e.what());
  }
  for (const std::string& n : notes) std::cerr << "placer: note: " << n << "\n";
  if (a.output.empty()) {
    std::cout << text;
    return;
  }
  ensure_parent_dir(a.output);
  write_text_atomic(a.output, text, to_string(f) + std::string(" configuration"));
  std::cerr << "placer: wrote " << a.output << " (" << a.format << ")\n";
}

void export_options(CLI::App* sub, ExportArgs& a) {
  add_input_file(sub, "plan", a.plan, "Plan (*.plan.yaml or *.plan.json)");
  add_graph_option(sub, a.graph, "Model graph (*.graph.json)");
  add_cluster_option(sub, a.cluster);
  sub->add_option("--to", a.format, "megatron, deepspeed, torchtitan or device-map")->required();
  add_output_option(sub, a.output, "File to write (default: stdout)");
}

}  // namespace

static CommandRegistrar export_registrar = define_command<ExportArgs>(
    18, "export",
    "Write a plan as the configuration of the framework that runs it: Megatron-LM arguments,\n"
    "a DeepSpeed config, torchtitan TOML or an Accelerate device map (docs/export.md).",
    export_options, run_export);

}  // namespace placer::cli
