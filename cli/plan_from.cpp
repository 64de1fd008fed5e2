// `placer plan from-megatron | from-deepspeed | from-torchtitan`: a user's framework configuration
// as a plan, to simulate or compare next to placer's own (docs/export.md).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "cli/command_options.h"
#include "cli/common.h"
#include "src/io/plan_import.h"
#include "src/io/plan_io.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer::cli {
namespace {

struct PlanFromArgs {
  std::string source, graph, cluster, output;
  int world_size = 0;  ///< 0 = every device of the cluster from first_device on
  int first_device = 0;
};

// `label` names the source in messages ("megatron arguments", "ds.json").
void build_plan(const PlanFromArgs& a, const std::string& label,
                FrameworkConfig (*parse)(const std::string&, int), const std::string& text) {
  const Graph g = load_graph_for_step(a.graph, true, "adam");
  const Cluster c = load_cluster(a.cluster);
  if (a.first_device < 0 || a.first_device >= c.num_devices()) {
    throw Error("--first-device: " + std::to_string(a.first_device) + " is not a device of '" + c.name + "'");
  }
  const int world = a.world_size > 0 ? a.world_size : c.num_devices() - a.first_device;
  Plan p;
  try {
    FrameworkConfig f = parse(text, world);
    f.config.first_device = a.first_device;
    if (!f.ignored.empty()) {
      std::string list;
      for (const std::string& s : f.ignored) list += (list.empty() ? "" : ", ") + s;
      std::cerr << "placer: " << label << ": not modelled, ignored: " << list << "\n";
    }
    for (const std::string& s : f.notes)
      std::cerr << "placer: " << label << ": recorded, not modelled yet: " << s << "\n";
    if (!f.attention.empty()) {
      std::cerr
          << "placer: " << label << ": attention " << f.attention
          << " (the graph's attention ops decide what is simulated; build the graph to match)\n";
    }
    p = plan_of_framework_config(f, g);
    p.validate(g, c);
  } catch (const ValidationError& e) {
    throw ValidationError(label + ": " + e.what());
  } catch (const FormatError& e) {
    throw FormatError(label + ": " + e.what());
  }
  ensure_parent_dir(a.output);
  save_plan(p, g, c, a.output);
  std::cerr << "placer: wrote " << a.output << " (" << p.pipeline.ranks() << " pipeline ranks x "
            << p.pipeline.stages.front().devices.size() << " devices, " << p.pipeline.micro_batches
            << " micro-batches)\n";
}

void add_common(CLI::App* sub, PlanFromArgs* a) {
  add_graph_option(sub, a->graph, "Model graph (*.graph.json) of a layered transformer");
  add_cluster_option(sub, a->cluster);
  add_output_option(sub, a->output, "Plan to write (*.plan.yaml or *.plan.json)")->required();
  sub->add_option("--world-size", a->world_size,
                  "Devices the job runs on (default: the cluster's, from --first-device on)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--first-device", a->first_device, "Cluster device of rank 0")->capture_default_str();
}

// `plan NAME CONFIG`: the plan of a configuration file `what` (e.g. "DeepSpeed config") in
// `format` ("JSON"), files named `pattern` ("*.json").
void add_file_command(CLI::App* plan, const std::string& name, const std::string& what,
                      const std::string& format, const std::string& pattern,
                      FrameworkConfig (*parse)(const std::string&, int)) {
  add_command<PlanFromArgs>(
      *plan, name, "The plan of a " + what + " (" + format + ")",
      [what, pattern](CLI::App* sub, PlanFromArgs& a) {
        add_input_file(sub, "config", a.source, what + " (" + pattern + ")");
        add_common(sub, &a);
      },
      [parse, what](const PlanFromArgs& a) { build_plan(a, a.source, parse, read_text_file(a.source, what)); });
}

void register_plan(CLI::App& app) {
  CLI::App* plan = app.add_subcommand("plan", "Build a plan from a framework configuration (docs/export.md)");
  plan->require_subcommand(1);

  add_command<PlanFromArgs>(
      *plan, "from-megatron",
      "The plan of Megatron-LM arguments, e.g. \"--tensor-model-parallel-size 2 ...\"",
      [](CLI::App* m, PlanFromArgs& a) {
        // The arguments are one quoted string, or several words: CLI11 takes a word that
        // starts with "--" for an option, so they arrive as extras and are joined.
        m->allow_extras(true);
        add_common(m, &a);
      },
      [](const PlanFromArgs& a, const CLI::App& m) {
        std::string args;
        for (const std::string& w : m.remaining()) args += (args.empty() ? "" : " ") + w;
        if (args.empty()) throw Error("from-megatron: no Megatron-LM arguments given");
        build_plan(a, "megatron arguments", parse_megatron_arguments, args);
      });

  add_file_command(plan, "from-deepspeed", "DeepSpeed config", "JSON", "*.json",
                   parse_deepspeed_config);
  add_file_command(plan, "from-torchtitan", "torchtitan job config", "TOML", "*.toml",
                   parse_torchtitan_config);
}

}  // namespace

static CommandRegistrar plan_registrar(19, "plan", register_plan);

}  // namespace placer::cli
