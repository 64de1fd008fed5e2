#pragma once
// Loading helpers shared by subcommands: graph (expanded to a training step when asked),
// cluster, cost profile, and the one-line-per-file progress on stderr.

#include <string>

#include "src/cluster/cluster.h"
#include "src/graph/graph.h"

namespace placer {
struct Plan;
}

namespace placer::cli {

/// Loads a *.graph.json. When `expand` is set and the graph is a forward graph, derives
/// the training step (backward + optimizer ops) with `optimizer` ("sgd", "momentum",
/// "adam") and says so on stderr.
Graph load_graph_for_step(const std::string& path, bool expand, const std::string& optimizer);

/// Loads and validates a *.cluster.yaml.
Cluster load_cluster(const std::string& path);

/// The plan validator's framework checks (src/io/plan_checks.h) on a plan that passed
/// Plan::validate: one line "placer: warning: <what>: does not export to <framework>: <field>:
/// <why>" on stderr per framework that cannot run it (none for op-level plans).
void warn_unexportable(const Plan& plan, const Graph& g, const std::string& what);

/// Creates the parent directory of an output file if it is missing (FileError if it cannot).
void ensure_parent_dir(const std::string& path);

/// True when `path` ends with `suffix`.
bool ends_with(const std::string& path, const std::string& suffix);

}  // namespace placer::cli
