#include <algorithm>

#include "agents/api/composite_methods.h"
#include "agents/api/methods.h"
#include "agents/api/placer.h"
#include "src/util/error.h"

namespace placer {

const std::vector<MethodInfo>& placer_methods() {
  static const std::vector<MethodInfo> methods = all_methods();
  return methods;
}

const MethodInfo& method_info(const std::string& name) {
  std::string known;
  for (const MethodInfo& m : placer_methods()) {
    if (m.name == name) return m;
    known += (known.empty() ? "" : ", ") + m.name;
  }
  // A composite ("hybrid") or an alias of one ("metis+hybrid"): agents/composite_methods.cpp.
  if (const MethodInfo* composite = composite_method_info(name)) return *composite;
  throw Error("unknown method '" + name + "' (known: " + known + ")");
}

std::unique_ptr<Placer> make_placer(const std::string& name) { return method_info(name).make(); }

std::string methods_with_options() {
  std::string out;
  for (const MethodInfo& m : placer_methods()) {
    if (m.make_with) out += (out.empty() ? "" : ", ") + m.name;
  }
  return out;
}

std::unique_ptr<Placer> make_placer(const std::string& name, const MethodSettings& settings) {
  const MethodInfo& m = method_info(name);
  if (m.make_with) return m.make_with(settings);
  if (settings.sets.empty()) return m.make();
  throw ValidationError(options_not_taken(settings.flag, name));
}

std::string options_not_taken(const std::string& flag, const std::string& method) {
  return flag + " applies to the Rainbow placers and the other methods with options (" +
         methods_with_options() + "), not to --method " + method;
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
