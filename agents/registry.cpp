#include <algorithm>

#include "agents/hybrid_outer.h"
#include "agents/methods.h"
#include "agents/placer.h"
#include "src/util/error.h"

namespace placer {

const std::vector<MethodInfo>& placer_methods() {
  static const std::vector<MethodInfo> methods = all_methods();
  return methods;
}

std::unique_ptr<Placer> make_placer(const std::string& name) {
  // "M+hybrid": method M inside the micro-batch and replica outer loop (agents/hybrid_outer.h).
  const std::string suffix = "+hybrid";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return std::make_unique<HybridOuterPlacer>(make_placer(name.substr(0, name.size() - suffix.size())));
  }
  std::string known;
  for (const MethodInfo& m : placer_methods()) {
    if (m.name == name) return m.make();
    known += (known.empty() ? "" : ", ") + m.name;
  }
  throw Error("unknown method '" + name + "' (known: " + known + ")");
}

std::vector<int> problem_devices(const Problem& p) {
  if (!p.devices.empty()) return p.devices;
  std::vector<int> d(p.cluster.num_devices());
  for (int i = 0; i < p.cluster.num_devices(); ++i) d[i] = i;
  return d;
}

Plan placement_plan(const Problem& p, std::vector<int> device_of_op, const std::string& method) {
  Plan plan;
  plan.graph_name = p.graph.name();
  plan.method = method;
  plan.placement = std::move(device_of_op);
  return plan;
}

uint64_t resident_bytes(const Graph& g, OpId op) {
  const Op& o = g.op(op);
  // Parameters, their gradient buffer and the optimizer state stay on the device all step.
  return o.param_bytes * (g.is_training_step() ? 2 : 1) + o.state_bytes;
}

}  // namespace placer
