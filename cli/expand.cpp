// `placer expand`: forward graph -> training-step graph (backward + optimizer ops).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "cli/command_options.h"
#include "cli/common.h"
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

void expand_options(CLI::App* sub, ExpandArgs& a) {
  add_graph_option(sub, a.graph, "Forward graph (*.graph.json)");
  add_output_option(sub, a.output, "Training-step graph to write (*.graph.json)")->required();
  add_optimizer_option(sub, a.optimizer, "sgd, momentum or adam");
}

}  // namespace

static CommandRegistrar expand_registrar = define_command<ExpandArgs>(
    30, "expand", "Derive the training step of a forward graph: backward ops and optimizer updates.",
    expand_options, run_expand);

}  // namespace placer::cli
