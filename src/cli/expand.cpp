// `placer expand`: forward graph -> training-step graph (backward + optimizer ops).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "src/cli/commands.h"
#include "src/cli/common.h"
#include "src/graph/training_step.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer::cli {
namespace {

struct ExpandArgs {
  std::string graph, output, optimizer = "adam";
};

void run_expand(const ExpandArgs& a) {
  Graph fwd = load_graph_json(a.graph);
  TrainingOptions opts;
  if (!parse_optimizer(a.optimizer, &opts.optimizer)) {
    throw Error("--optimizer: unknown optimizer '" + a.optimizer + "' (use sgd, momentum or adam)");
  }
  Graph step = expand_training_step(fwd, opts);
  ensure_parent_dir(a.output);
  save_graph_json(step, a.output);
  size_t per_phase[4] = {0, 0, 0, 0};
  for (const Op& o : step.ops()) ++per_phase[static_cast<int>(o.phase)];
  std::cout << a.output << ": " << step.num_ops() << " ops (" << per_phase[0] << " forward, "
            << per_phase[1] << " backward, " << per_phase[2] << " " << to_string(opts.optimizer)
            << " updates), " << human_count(step.total_flops(), "FLOP") << " per step\n";
}

}  // namespace

void register_expand(CLI::App& app);
static CommandRegistrar expand_registrar(30, "expand", register_expand);

void register_expand(CLI::App& app) {
  auto args = std::make_shared<ExpandArgs>();
  CLI::App* sub = app.add_subcommand(
      "expand", "Derive the training step of a forward graph: backward ops and optimizer updates.");
  sub->add_option("-g,--graph", args->graph, "Forward graph (*.graph.json)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("-o,--output", args->output, "Training-step graph to write (*.graph.json)")
      ->required();
  sub->add_option("--optimizer", args->optimizer, "sgd, momentum or adam")->capture_default_str();
  sub->callback([args]() { run_expand(*args); });
}

}  // namespace placer::cli
