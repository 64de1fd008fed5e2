// A Hugging Face Accelerate device_map for the op-level placement of a model imported from a
// PyTorch ONNX export (docs/export.md#device-map): op scopes are PyTorch module paths, and
// the map names the coarsest modules whose ops all run on one device.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "src/cluster/cluster.h"
#include "src/io/export_checks.h"
#include "src/io/plan_export.h"

namespace placer {

using export_checks::fail;

namespace {

/// The module of an op's scope. The exporter names the second and later calls of one module
/// `<name>_1`, `<name>_2` (torchvision's BasicBlock calls `relu` twice); a component so
/// suffixed is the module `<name>` when that module exists.
std::string module_of_scope(const std::string& scope, const std::set<std::string>& scopes) {
  std::string out;
  size_t start = 0;
  while (start <= scope.size() && !scope.empty()) {
    const size_t dot = scope.find('.', start);
    std::string comp = scope.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const size_t us = comp.rfind('_');
    if (us != std::string::npos && us + 1 < comp.size() &&
        comp.find_first_not_of("0123456789", us + 1) == std::string::npos) {
      const std::string base = (out.empty() ? "" : out + ".") + comp.substr(0, us);
      if (scopes.count(base)) comp = comp.substr(0, us);
    }
    out += (out.empty() ? "" : ".") + comp;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return out;
}

/// Accelerate's name of a device: its GPU index on its host, or "cpu".
nlohmann::json accelerate_device(const Cluster& c, int d) {
  const Device& dev = c.device(d);
  if (dev.spec.kind != DeviceKind::kGpu) return "cpu";
  int gpu = 0;
  for (int e = 0; e < d; ++e) {
    if (c.device(e).host == dev.host && c.device(e).spec.kind == DeviceKind::kGpu) ++gpu;
  }
  return gpu;
}

struct ModuleOps {
  std::set<int> devices;      ///< of every op in the module and its submodules
  std::map<int, OpId> own;    ///< device -> first own op (scope exactly the module)
  OpId first_own = kNoOp;     ///< its first own op
  bool own_params = false;    ///< an own op holds parameters
  std::vector<std::string> children;  ///< in the order of their first op (model order)
};

class DeviceMapBuilder {
 public:
  DeviceMapBuilder(const Plan& p, const Graph& g, const Cluster& c, std::vector<std::string>* notes)
      : p_(p), g_(g), c_(c), notes_(notes) {}

  nlohmann::ordered_json build() {
    std::set<std::string> scopes;
    for (OpId o = 0; o < g_.num_ops(); ++o) {
      if (g_.op(o).phase == Phase::kForward) scopes.insert(g_.op(o).scope);
    }
    bool any_scope = false;
    for (OpId o : g_.topo_order()) {
      const Op& op = g_.op(o);
      if (op.phase != Phase::kForward || op.category == OpCategory::kInput) continue;
      const std::string m = module_of_scope(op.scope, scopes);
      any_scope = any_scope || !m.empty();
      add(m, o, p_.placement[o]);
    }
    if (!any_scope) {
      fail("graph", "'" + g_.name() + "' has no op scopes (module paths); a device map needs a model "
                    "imported from a PyTorch ONNX export");
    }
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    emit("", out);
    return out;
  }

 private:
  void add(const std::string& m, OpId o, int d) {
    ModuleOps& mod = modules_[m];
    mod.own.emplace(d, o);
    if (mod.first_own == kNoOp) mod.first_own = o;  // ops arrive in topological order
    mod.own_params = mod.own_params || g_.op(o).param_bytes > 0;
    std::string name = m;
    while (true) {
      modules_[name].devices.insert(d);
      if (name.empty()) break;
      const size_t dot = name.rfind('.');
      const std::string parent = dot == std::string::npos ? "" : name.substr(0, dot);
      std::vector<std::string>& siblings = modules_[parent].children;
      if (std::find(siblings.begin(), siblings.end(), name) == siblings.end()) siblings.push_back(name);
      name = parent;
    }
  }

  std::string dev_name(int d) const { return c_.device(d).name; }

  void emit(const std::string& m, nlohmann::ordered_json& out) {
    const ModuleOps& mod = modules_.at(m);
    if (mod.devices.size() == 1) {
      out[m] = accelerate_device(c_, *mod.devices.begin());
      return;
    }
    const std::string label = m.empty() ? "the model's top level" : "module '" + m + "'";
    if (mod.own.size() > 1) {
      auto a = mod.own.begin(), b = std::next(a);
      const std::string where = "('" + g_.op(a->second).name + "' on " + dev_name(a->first) + ", '" +
                                g_.op(b->second).name + "' on " + dev_name(b->first) + ")";
      // A module called twice (torchvision's shared ReLU) may be placed per call; Accelerate
      // runs every call on the module's one device. Parameters cannot follow both calls.
      if (mod.own_params) {
        fail("placement", label + " holds parameters and runs its own ops on several devices " + where +
                              "; Accelerate keeps a module on one device");
      }
      const int first = p_.placement[mod.first_own];
      if (notes_) {
        notes_->push_back(label + " runs its own ops on several devices " + where + "; Accelerate runs " +
                          (mod.children.empty() ? "them on " + dev_name(first) + ", the device of its first op"
                                                : "them where their inputs are"));
      }
      if (mod.children.empty()) {
        out[m] = accelerate_device(c_, first);
        return;
      }
    } else if (!mod.own.empty() && notes_) {
      notes_->push_back(label + " is split over " + std::to_string(mod.devices.size()) +
                        " devices; its own op '" + g_.op(mod.own.begin()->second).name + "' (placed on " +
                        dev_name(mod.own.begin()->first) +
                        ") is no submodule and runs where Accelerate moves its inputs");
    }
    for (const std::string& child : mod.children) emit(child, out);
  }

  const Plan& p_;
  const Graph& g_;
  const Cluster& c_;
  std::vector<std::string>* notes_;
  std::map<std::string, ModuleOps> modules_;
};

}  // namespace

std::string accelerate_device_map(const Plan& p, const Graph& g, const Cluster& c,
                                  std::vector<std::string>* notes) {
  if (!p.partitions.empty()) {
    fail("partitions", "op '" + g.op(p.partitions.front().op).name +
                           "' is split over several devices; a device map puts each module on one device");
  }
  if (p.tensor_parallel.enabled()) fail("tensor_parallel.degree", "a device map has no tensor parallelism");
  if (p.data_parallel.replicas != 1) {
    fail("data_parallel.replicas", std::to_string(p.data_parallel.replicas) +
                                       ": a device map describes one copy of the model (no data parallelism)");
  }
  for (size_t s = 0; s < p.pipeline.stages.size(); ++s) {
    if (p.pipeline.stages[s].devices.size() != 1) {
      fail("pipeline.stages[" + std::to_string(s) + "].devices",
           std::to_string(p.pipeline.stages[s].devices.size()) +
               " devices (data-parallel copies); a device map puts each module on one device");
    }
  }
  if (p.pipeline.enabled() && p.pipeline.micro_batches > 1) {
    fail("pipeline.micro_batches", std::to_string(p.pipeline.micro_batches) +
                                       ": Accelerate runs a device map on the whole batch, without pipelining");
  }
  // One process drives every device of the map: they must share a host.
  int host = -1;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    if (g.op(o).phase != Phase::kForward) continue;
    const int h = c.device(p.placement[o]).host;
    if (host >= 0 && h != host) {
      fail("placement", "op '" + g.op(o).name + "' runs on host '" + c.host(h).name + "', others on '" +
                            c.host(host).name + "'; a device map drives the devices of one host");
    }
    host = h;
  }
  return DeviceMapBuilder(p, g, c, notes).build().dump(2) + "\n";
}

}  // namespace placer
