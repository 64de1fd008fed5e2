// `placer export`: a plan as Megatron-LM arguments, a DeepSpeed config, torchtitan TOML
// sections or an Accelerate device map (docs/export.md).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "src/cli/commands.h"
#include "src/cli/common.h"
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

}  // namespace

void register_export(CLI::App& app);
static CommandRegistrar export_registrar(18, "export", register_export);

void register_export(CLI::App& app) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* sub = app.add_subcommand(
      "export",
      "Write a plan as the configuration of the framework that runs it: Megatron-LM arguments,\n"
      "a DeepSpeed config, torchtitan TOML or an Accelerate device map (docs/export.md).");
  sub->add_option("plan", args->plan, "Plan (*.plan.yaml or *.plan.json)")->required()->check(CLI::ExistingFile);
  sub->add_option("-g,--graph", args->graph, "Model graph (*.graph.json)")->required()->check(CLI::ExistingFile);
  sub->add_option("-c,--cluster", args->cluster, "Cluster (*.cluster.yaml)")->required()->check(CLI::ExistingFile);
  sub->add_option("--to", args->format, "megatron, deepspeed, torchtitan or device-map")->required();
  sub->add_option("-o,--output", args->output, "File to write (default: stdout)");
  sub->callback([args]() { run_export(*args); });
}

}  // namespace placer::cli
