// The expert placers' problem and options (agents/experts/expert_problem.h). Torch-free.
#include "agents/experts/expert_problem.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "agents/common/option_fields.h"
#include "simulator/simulator.h"
#include "src/graph/moe_attrs.h"
#include "src/io/expert_map_io.h"
#include "src/io/routing_io.h"
#include "src/plan/megatron_plan.h"
#include "src/util/error.h"

namespace placer {

namespace {

/// The keys one method does not read, each refused naming the methods that do.
struct UnusedKeys {
  const char* method;
  std::vector<std::pair<const char*, const char*>> keys;  // key, the methods that read it
};

const std::vector<UnusedKeys>& unused_keys() {
  static const std::vector<UnusedKeys> u = {
      {"round-robin",
       {{"groups", "eplb, expert-anneal and expert-rl"},
        {"evaluations", "expert-anneal"},
        {"policy", "expert-rl"},
        {"finetune", "expert-rl"},
        {"samples", "expert-rl"}}},
      {"eplb",
       {{"evaluations", "expert-anneal"},
        {"policy", "expert-rl"},
        {"finetune", "expert-rl"},
        {"samples", "expert-rl"}}},
      {"expert-anneal",
       {{"policy", "expert-rl"}, {"finetune", "expert-rl"}, {"samples", "expert-rl"}}},
      {"expert-rl", {{"evaluations", "expert-anneal"}}}};
  return u;
}

OptionTable<ExpertMethodOptions> all_expert_options(const std::string& owner) {
  using O = ExpertMethodOptions;
  OptionTable<O> v(owner);
  v.path(
      "routing", "routing statistics (*.routing.json); placer place --routing sets it",
      [](auto& o) -> auto& { return o.routing; });
  add_fields(&v, R"(
      ep           expert-parallel degree (0: every device of the problem)
      redundant    extra expert copies per layer, spread over the ranks (EPLB's redundant experts)
      groups       EPLB's expert groups (0: one per node)
      micro_batch  samples per micro-batch per data-parallel rank
      evaluations  expert-anneal: simulator runs (0: the budget's, else 500)
      finetune     expert-rl: REINFORCE updates on the problem's routing (0: zero-shot)
      samples      expert-rl: rollouts per fine-tuning update (the greedy map and samples - 1 with one layer sampled))",
             &O::ep, &O::redundant, &O::groups, &O::micro_batch, &O::evaluations, &O::finetune,
             &O::samples);
  v.path(
      "policy", "expert-rl: policy file (default: models/pretrained/expert_rl.pt)",
      [](auto& o) -> auto& { return o.policy; });
  v.add(
      "map", "path", "also write the chosen expert map to this file (*.expert_map.json)",
      [](O* o, const std::string& x) { o->map = x; }, [](const O& o) { return o.map; });
  return v;
}

/// The method's table: every key it reads (through `all`, which outlives it), the others
/// refused by name.
OptionTable<ExpertMethodOptions> method_options(const OptionTable<ExpertMethodOptions>& all,
                                                const UnusedKeys& u) {
  OptionTable<ExpertMethodOptions> v(u.method);
  for (const OptionSpec& spec : all.schema(ExpertMethodOptions{})) {
    const std::string key = spec.key;
    const auto unused = std::find_if(u.keys.begin(), u.keys.end(),
                                     [&key](const auto& k) { return key == k.first; });
    if (unused != u.keys.end()) {
      v.refuse(key, std::string(u.method) + " does not use it (read by " + unused->second + ")");
      continue;
    }
    v.add(
        key, spec.type, spec.doc,
        [&all, key](ExpertMethodOptions* o, const std::string& x) { all.set_value(o, key, x); },
        [&all, key](const ExpertMethodOptions& o) { return all.value(o, key); });
  }
  return v;
}

}  // namespace

const OptionTable<ExpertMethodOptions>& expert_method_option_table(const std::string& method) {
  static const OptionTable<ExpertMethodOptions> all = all_expert_options("expert placers");
  static const std::vector<OptionTable<ExpertMethodOptions>> tables = [] {
    std::vector<OptionTable<ExpertMethodOptions>> t;
    for (const UnusedKeys& u : unused_keys()) t.push_back(method_options(all, u));
    return t;
  }();
  for (const OptionTable<ExpertMethodOptions>& t : tables) {
    if (t.owner() == method) return t;
  }
  throw std::logic_error("expert_method_option_table: no expert placer '" + method + "'");
}

namespace {

int devices_per_host(const Cluster& c, int device) {
  return int(c.host(c.device(device).host).devices.size());
}

RoutingTrace routing_of(const ExpertMethodOptions& o, const std::string& method) {
  if (o.routing.empty()) {
    throw ValidationError(method +
                          ": needs the routing statistics of the MoE layers (--routing "
                          "FILE, docs/formats/routing.md)");
  }
  return load_routing(o.routing);
}

}  // namespace

std::vector<RoutingStats> routing_windows(const RoutingTrace& t) {
  std::vector<RoutingStats> w;
  for (const LayerTokens& table : t.micro_batches.empty() ? t.steps : t.micro_batches)
    w.push_back(shares_of(table));
  return w;
}

ExpertProblem::ExpertProblem(const Problem& p, const ExpertMethodOptions& o,
                             const std::string& method)
    : ExpertProblem(p, o, method, routing_of(o, method)) {}

ExpertProblem::ExpertProblem(const Problem& p, const ExpertMethodOptions& o,
                             const std::string& method, const RoutingTrace& trace)
    : ExpertProblem(p, o, method, trace.stats(), routing_windows(trace)) {}

ExpertProblem::ExpertProblem(const Problem& p, const ExpertMethodOptions& o,
                             const std::string& method, RoutingStats routing,
                             std::vector<RoutingStats> windows)
    : problem_(p),
      method_(method),
      map_file_(o.map),
      routing_(std::move(routing)),
      windows_(std::move(windows)) {
  const size_t graph_layers = moe_layers(p.graph).size();
  if (routing_.empty() || graph_layers != size_t(layers())) {
    throw ValidationError(method + ": the routing statistics have " + std::to_string(layers()) +
                          " MoE layers, the graph " + std::to_string(graph_layers));
  }
  const std::vector<int> devices = problem_devices(p);
  const int ep = o.ep > 0 ? int(o.ep) : int(devices.size());
  if (ep < 1 || ep > int(devices.size()) || devices.size() % size_t(ep) != 0) {
    throw ValidationError(method + ": ep (" + std::to_string(ep) + ") must divide the " +
                          std::to_string(devices.size()) + " devices");
  }
  const int slots = experts() + int(o.redundant);
  if (o.redundant < 0 || slots % ep != 0) {
    throw ValidationError(method + ": experts + redundant (" + std::to_string(slots) +
                          ") must be a multiple of ep (" + std::to_string(ep) + ")");
  }
  slots_per_rank_ = slots / ep;
  topo_ = ExpertTopology{ep, std::min(ep, devices_per_host(p.cluster, devices.front()))};
  eplb_ = EplbOptions{int(o.redundant), int(o.groups)};
  MegatronConfig m;
  m.dp = int(devices.size());
  m.ep = ep;
  m.micro_batch = int(o.micro_batch);
  m.global_batch = int(p.graph.batch_size());
  m.first_device = devices.front();
  base_ = megatron_plan(p.graph, m);
  base_.expert_parallel.degree = ep;
  base_.method = method;
}

Plan ExpertProblem::plan_with(const std::vector<ExpertLayerMap>& maps) const {
  Plan plan = base_;
  plan.expert_parallel.layers = maps;
  return plan;
}

double ExpertProblem::step(const std::vector<ExpertLayerMap>& maps) {
  const Plan plan = plan_with(maps);
  SimOptions o;
  o.critical_path = false;
  auto step_under = [&](const RoutingStats& routing) {
    o.routing = &routing;
    ++runs_;
    return problem_.simulator.run(plan, o).step_time;
  };
  if (windows_.empty()) return step_under(routing_);
  double sum = 0;
  for (const RoutingStats& w : windows_) sum += step_under(w);
  return sum / double(windows_.size());
}

Plan ExpertProblem::finish(const std::vector<ExpertLayerMap>& maps) const {
  Plan plan = plan_with(maps);
  if (!map_file_.empty()) save_expert_map(plan.expert_parallel, map_file_);
  return plan;
}

std::vector<ExpertLayerMap> ExpertProblem::eplb_maps() const {
  std::vector<ExpertLayerMap> maps;
  for (const std::vector<double>& share : routing_.share)
    maps.push_back(eplb_layer(share, topo_, eplb_));
  return maps;
}

}  // namespace placer
