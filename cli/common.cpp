#include "cli/common.h"

#include <filesystem>
#include <iostream>
#include <system_error>

#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/io/graph_json.h"
#include "src/io/plan_checks.h"
#include "src/util/error.h"

namespace placer::cli {

bool ends_with(const std::string& path, const std::string& suffix) {
  return path.size() >= suffix.size() &&
         path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void ensure_parent_dir(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) throw FileError(path + ": cannot create directory '" + parent.string() + "': " + ec.message());
}

Graph load_graph_for_step(const std::string& path, bool expand, const std::string& optimizer) {
  Graph g = load_graph_json(path);
  if (!expand || g.is_training_step()) return g;
  TrainingOptions opts;
  if (!parse_optimizer(optimizer, &opts.optimizer)) {
    throw Error("--optimizer: unknown optimizer '" + optimizer + "' (use sgd, momentum or adam)");
  }
  Graph step = expand_training_step(g, opts);
  std::cerr << "placer: " << path << " is a forward graph; simulating the training step ("
            << g.num_ops() << " forward ops -> " << step.num_ops() << " ops with backward and "
            << optimizer << " updates)\n";
  return step;
}

Cluster load_cluster(const std::string& path) {
  Cluster c = load_cluster_yaml(path);
  return c;
}

void warn_unexportable(const Plan& plan, const Graph& g, const std::string& what) {
  for (const std::string& line : plan_export_warnings(plan, g)) {
    std::cerr << "placer: warning: " << what << ": " << line << "\n";
  }
}

}  // namespace placer::cli
