#pragma once
// The `synchronization` section of plan files (docs/sync.md), read and written apart from
// plan_reader.cpp / plan_writer.cpp so that the per-variable strategies keep to one file.

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/io/yaml_util.h"
#include "src/plan/sync_strategy.h"

namespace placer {

class Graph;

/// Reads the section; `devices` turns a node (index, device name or list) into device ids.
void read_synchronization(
    const YamlReader& r, const YAML::Node& n,
    const std::function<std::vector<int>(const YAML::Node&, const std::string&)>& devices,
    SynchronizationConfig* out);

/// The section as a tree (every field of every strategy, so that load(save(p)) == p), with
/// an informational `lossy` list (ignored on read) naming the lossy choices.
nlohmann::ordered_json synchronization_tree(const SynchronizationConfig& s, const Graph& g,
                                            const std::function<std::string(int)>& device_name);

}  // namespace placer
