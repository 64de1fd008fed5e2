#pragma once
// The shape every subcommand shares, written once: a command defined from its Args type,
// name, help text, options builder and run function (define_command / add_command), and the
// options several commands take (a required graph or cluster file, a cost profile, an
// output, the optimizer of an expansion, a seed, search budgets), each added in one call
// with the command's own help text.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "cli/commands.h"

namespace placer::cli {

/// Adds subcommand `name` (`doc` in --help) to `parent`: `options(sub, args)` declares its
/// options into one Args that lives as long as the app, and its callback runs `run(args)`,
/// or `run(args, *sub)` for a command that looks at how its options were given.
template <class Args, class Options, class Run>
CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& doc,
                      Options&& options, Run run) {
  auto args = std::make_shared<Args>();
  CLI::App* sub = parent.add_subcommand(name, doc);
  options(sub, *args);
  sub->callback([args, run, sub]() {
    if constexpr (std::is_invocable_v<Run, Args&, const CLI::App&>) {
      run(*args, *sub);
    } else {
      run(*args);
    }
  });
  return sub;
}

/// A top-level command for the registry (commands.h), at position `order` of `placer
/// --help`:  static CommandRegistrar reg = define_command<XArgs>(10, "x", doc, options, run);
template <class Args, class Options, class Run>
CommandRegistrar define_command(int order, const char* name, std::string doc, Options options,
                                Run run) {
  return CommandRegistrar(order, name, [name, doc, options, run](CLI::App& app) {
    add_command<Args>(app, name, doc, options, run);
  });
}

/// A required input file, e.g. add_input_file(sub, "-p,--plan", a.plan, "Plan (...)").
inline CLI::Option* add_input_file(CLI::App* sub, const std::string& flags, std::string& into,
                                   const std::string& doc) {
  return sub->add_option(flags, into, doc)->required()->check(CLI::ExistingFile);
}

/// -g,--graph: the required model graph file.
inline CLI::Option* add_graph_option(
    CLI::App* sub, std::string& into,
    const std::string& doc = "Model graph (*.graph.json), forward or training step") {
  return add_input_file(sub, "-g,--graph", into, doc);
}

/// -c,--cluster: the required cluster file.
inline CLI::Option* add_cluster_option(CLI::App* sub, std::string& into,
                                       const std::string& doc = "Cluster (*.cluster.yaml)") {
  return add_input_file(sub, "-c,--cluster", into, doc);
}

/// --profile: a cost profile file (optional unless the caller adds ->required()).
inline CLI::Option* add_profile_option(
    CLI::App* sub, std::string& into,
    const std::string& doc =
        "Cost profile (*.profile.yaml); default: the profile shipped for the "
        "cluster's GPU model (docs/calibration.md), else the built-in one") {
  return sub->add_option("--profile", into, doc)->check(CLI::ExistingFile);
}

/// -o,--output: the file (or folder) to write (optional unless the caller adds ->required()).
inline CLI::Option* add_output_option(CLI::App* sub, std::string& into, const std::string& doc) {
  return sub->add_option("-o,--output", into, doc);
}

/// --optimizer of the expansion of a forward graph, with its default shown.
inline CLI::Option* add_optimizer_option(
    CLI::App* sub, std::string& into,
    const std::string& doc = "Optimizer for expanding a forward graph: sgd, momentum, adam") {
  return sub->add_option("--optimizer", into, doc)->capture_default_str();
}

/// --seed, with its default shown.
template <class T>
CLI::Option* add_seed_option(CLI::App* sub, T& into,
                             const std::string& doc = "Seed of the randomised methods") {
  return sub->add_option("--seed", into, doc)->capture_default_str();
}

/// --budget-evals and --budget-seconds of a search (non-negative; 0 = no such limit).
template <class Evals, class Seconds>
void add_budget_options(CLI::App* sub, Evals& evals, const std::string& evals_doc,
                        Seconds& seconds, const std::string& seconds_doc) {
  sub->add_option("--budget-evals", evals, evals_doc)->check(CLI::NonNegativeNumber);
  sub->add_option("--budget-seconds", seconds, seconds_doc)->check(CLI::NonNegativeNumber);
}

}  // namespace placer::cli
