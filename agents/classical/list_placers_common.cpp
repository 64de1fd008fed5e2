#include "agents/classical/list_placers_common.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "src/util/error.h"
#include "src/util/format.h"

namespace placer {
namespace list_sched {

ListContext make_context(const Problem& p) {
  ListContext c;
  c.problem = &p;
  c.graph = &p.graph;
  c.devices = problem_devices(p);
  c.k = static_cast<int>(c.devices.size());
  if (c.k == 0) throw Error("placement problem has no devices");
  const Graph& g = p.graph;
  const size_t n = g.num_ops();
  c.time.resize(n * c.k);
  for (OpId o = 0; o < n; ++o) {
    const uint64_t bytes = g.op_bytes(o);
    for (int j = 0; j < c.k; ++j) c.time[o * c.k + j] = p.cost.op_time(g.op(o), bytes, c.devices[j]);
  }
  const auto& rank = g.topo_rank();
  c.anchor.resize(n);
  for (OpId o = 0; o < n; ++o) {
    OpId a = o;
    // Follow forward_op links (bounded: a malformed chain cannot loop forever).
    for (size_t steps = 0; steps < n && g.op(a).forward_op != kNoOp; ++steps) a = g.op(a).forward_op;
    // An anchor after its follower in topological order could not be placed first.
    c.anchor[o] = rank[a] <= rank[o] ? a : o;
  }
  c.mem.assign(n, 0);
  for (OpId o = 0; o < n; ++o) {
    const uint64_t r = resident_bytes(g, o);
    c.total_resident += r;
    c.mem[c.anchor[o]] += r;
    if (!c.is_anchor(o)) continue;
    const Op& op = g.op(o);
    c.mem[o] += op.workspace_bytes;
    // Outputs of kInput ops are the parameters / input batch, not allocated activations.
    if (op.category == OpCategory::kInput) continue;
    for (TensorId t : op.outputs) c.mem[o] += g.tensor(t).bytes;
  }
  c.total_mem = std::accumulate(c.mem.begin(), c.mem.end(), uint64_t{0});
  for (int d : c.devices) {
    c.capacity.push_back(p.cluster.device(d).spec.memory_bytes);
    c.total_capacity += c.capacity.back();
  }
  return c;
}

void check_fits_somewhere(const ListContext& c) {
  if (c.total_resident <= c.total_capacity) return;
  throw Error("graph '" + c.graph->name() + "' needs " + human_bytes(double(c.total_resident)) +
              " resident (parameters, gradients, optimizer state), cluster has " +
              human_bytes(double(c.total_capacity)) + " on " + std::to_string(c.k) + " device(s)");
}

std::vector<std::pair<OpId, uint64_t>> in_edges(const Graph& g, OpId op) {
  std::vector<std::pair<OpId, uint64_t>> e;
  for (TensorId t : g.op(op).inputs) {
    const OpId p = g.tensor(t).producer;
    if (p == kNoOp) continue;
    auto it = std::find_if(e.begin(), e.end(), [&](const auto& x) { return x.first == p; });
    if (it == e.end()) {
      e.emplace_back(p, g.tensor(t).bytes);
    } else {
      it->second += g.tensor(t).bytes;
    }
  }
  return e;
}

Timeline::Timeline(const ListContext& ctx)
    : c(ctx),
      dev(ctx.graph->num_ops(), -1),
      finish(ctx.graph->num_ops(), 0),
      ready(ctx.k, 0),
      used(ctx.k, 0) {}

double Timeline::arrival(OpId o, int j) const {
  double t = 0;
  for (const auto& [p, bytes] : in_edges(*c.graph, o)) {
    if (dev[p] < 0) continue;  // not placed (cannot happen in topological order)
    t = std::max(t, finish[p] + c.problem->cost.transfer_time(c.devices[dev[p]], c.devices[j], bytes));
  }
  return t;
}

double Timeline::place(OpId o, int j, double start_at) {
  if (!fits(o, j)) overflow = true;
  dev[o] = j;
  finish[o] = std::max(ready[j], start_at) + c.t(o, j);
  ready[j] = finish[o];
  used[j] += c.mem[o];
  return finish[o];
}

int Timeline::best_finish_device(OpId o, int only) const {
  const int f = forced(o);
  if (f >= 0) return f;
  if (only >= 0 && fits(o, only)) return only;
  int best = -1;
  double best_finish = std::numeric_limits<double>::infinity();
  for (int j = 0; j < c.k; ++j) {
    if (!fits(o, j)) continue;
    const double fin = std::max(ready[j], arrival(o, j)) + c.t(o, j);
    if (fin < best_finish) {
      best_finish = fin;
      best = j;
    }
  }
  if (best >= 0) return best;
  // Nothing fits the estimate: the device with the most room (the simulator decides).
  for (int j = 0; j < c.k; ++j) {
    const int64_t room = static_cast<int64_t>(c.capacity[j]) - static_cast<int64_t>(used[j]);
    if (best < 0 ||
        room > static_cast<int64_t>(c.capacity[best]) - static_cast<int64_t>(used[best])) {
      best = j;
    }
  }
  return best;
}

std::vector<int> greedy_finish_schedule(const ListContext& c, const std::vector<int>& pin_device) {
  Timeline tl(c);
  for (OpId o : c.graph->topo_order()) {
    const int j = tl.best_finish_device(o, pin_device.empty() ? -1 : pin_device[o]);
    tl.place(o, j, tl.arrival(o, j));
  }
  return tl.dev;
}

namespace {

std::vector<OpId> anchors_in_topo_order(const ListContext& c) {
  std::vector<OpId> a;
  for (OpId o : c.graph->topo_order()) {
    if (c.is_anchor(o)) a.push_back(o);
  }
  return a;
}

std::vector<int> follow_anchors(const ListContext& c, std::vector<int> dev) {
  for (OpId o = 0; o < dev.size(); ++o) dev[o] = dev[c.anchor[o]];
  return dev;
}

}  // namespace

std::vector<int> memory_balanced(const ListContext& c) {
  const std::vector<OpId> anchors = anchors_in_topo_order(c);
  std::vector<int> dev(c.graph->num_ops(), -1);
  std::vector<uint64_t> used(c.k, 0);
  bool over = false;
  int j = 0;
  for (OpId a : anchors) {
    // Share of device j: the estimated total in proportion to its capacity.
    const double share = static_cast<double>(c.total_mem) * static_cast<double>(c.capacity[j]) /
                         static_cast<double>(std::max<uint64_t>(c.total_capacity, 1));
    if (j + 1 < c.k && used[j] > 0 && static_cast<double>(used[j] + c.mem[a]) > share) ++j;
    dev[a] = j;
    used[j] += c.mem[a];
    if (used[j] > c.capacity[j]) over = true;
  }
  if (!over) return follow_anchors(c, dev);
  // Worst-fit decreasing: the largest anchors first, each on the device with most room.
  std::vector<OpId> order = anchors;
  std::stable_sort(order.begin(), order.end(),
                   [&](OpId x, OpId y) { return c.mem[x] > c.mem[y]; });
  std::fill(used.begin(), used.end(), 0);
  for (OpId a : order) {
    int best = 0;
    for (int d = 1; d < c.k; ++d) {
      const int64_t room = static_cast<int64_t>(c.capacity[d]) - static_cast<int64_t>(used[d]);
      const int64_t best_room =
          static_cast<int64_t>(c.capacity[best]) - static_cast<int64_t>(used[best]);
      if (room > best_room) best = d;
    }
    dev[a] = best;
    used[best] += c.mem[a];
  }
  return follow_anchors(c, dev);
}

Plan to_plan(const ListContext& c, const std::vector<int>& dev_index, const std::string& method) {
  std::vector<int> placement(dev_index.size());
  for (size_t o = 0; o < dev_index.size(); ++o) placement[o] = c.devices[dev_index[o]];
  return placement_plan(*c.problem, std::move(placement), method);
}

Plan check_memory(const ListContext& c, const std::vector<int>& dev_index,
                  const std::string& method) {
  SimOptions opts;
  opts.critical_path = false;
  Plan plan = to_plan(c, dev_index, method);
  if (!c.problem->simulator.run(plan, opts).oom) return plan;
  // The activation estimate was too optimistic for this schedule: balance by memory.
  Plan fallback = to_plan(c, memory_balanced(c), method);
  return fallback;
}

}  // namespace list_sched
}  // namespace placer
