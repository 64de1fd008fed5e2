#pragma once
// What the plan reader (plan_reader.cpp) and writer (plan_writer.cpp) share: the placement
// rules of a plan file and how an op's device follows from them, so that what is written is
// exactly what is read back. Internal to src/io.
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer::plan_file {

using Json = nlohmann::ordered_json;

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The placement rules of a plan file and how an op's device follows from them. Shared by
/// the reader and the writer so that what is written is exactly what is read back.
struct PlacementRules {
  int default_device = -1;
  std::unordered_map<std::string, int> groups;
  std::vector<int> named;      ///< per op: explicit device or -1
  std::vector<int> stage_dev;  ///< per op: first device of its pipeline stage or -1

  PlacementRules(const Graph& g, const PipelineConfig& pipe)
      : named(g.num_ops(), -1), stage_dev(g.num_ops(), -1) {
    for (const PipelineStage& s : pipe.stages) {
      if (s.devices.empty()) continue;
      for (OpId op : s.ops) {
        if (op < g.num_ops() && stage_dev[op] < 0) stage_dev[op] = s.devices[0];
      }
    }
  }

  /// Device of every op (-1 where none applies): named, else the forward op's, else the
  /// group's, else the stage's first device, else the default.
  std::vector<int> resolve(const Graph& g) const {
    const size_t n = g.num_ops();
    std::vector<int> dev(n, -1);
    std::vector<uint8_t> state(n, 0);  // 0 new, 1 in progress, 2 done
    std::vector<OpId> stack;
    for (OpId root = 0; root < n; ++root) {
      if (state[root] == 2) continue;
      // Follow forward_op links iteratively (a chain, guarded against cycles).
      stack.assign(1, root);
      while (!stack.empty()) {
        const OpId i = stack.back();
        state[i] = 1;
        const OpId f = g.op(i).forward_op;
        if (named[i] < 0 && f < n && f != i && state[f] == 0) {
          stack.push_back(f);
          continue;
        }
        if (named[i] >= 0)
          dev[i] = named[i];
        else if (f < n && f != i && state[f] == 2)
          dev[i] = dev[f];
        else
          dev[i] = fallback(g, i);
        state[i] = 2;
        stack.pop_back();
      }
    }
    return dev;
  }

  /// The device an op gets from its group, stage or the default.
  int fallback(const Graph& g, OpId i) const {
    const std::string& grp = g.op(i).group;
    if (!grp.empty()) {
      auto it = groups.find(grp);
      if (it != groups.end()) return it->second;
    }
    if (stage_dev[i] >= 0) return stage_dev[i];
    return default_device;
  }
};

inline std::vector<OpId> forward_topo(const Graph& g) {
  std::vector<OpId> f;
  for (OpId op : g.topo_order()) {
    if (g.op(op).phase == Phase::kForward) f.push_back(op);
  }
  return f;
}

/// True when `scope` is `prefix` or lies under it ("a.b" is under "a", "a.bc" is not).
inline bool scope_under(const std::string& scope, const std::string& prefix) {
  if (scope.compare(0, prefix.size(), prefix) != 0) return false;
  if (scope.size() == prefix.size() || prefix.empty()) return true;
  const char next = scope[prefix.size()];
  const char last = prefix.back();
  return next == '.' || next == '/' || last == '.' || last == '/';
}


}  // namespace placer::plan_file
