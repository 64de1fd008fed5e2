#include "env/placeto_env.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>

#include "env/single_device_reference.h"
#include "simulator/cost_model.h"
#include "src/util/error.h"

namespace placer {

namespace {

const char* kCtx = "placeto env";

// z-score over the groups of log1p(v / mean(v)) (0 for every entry when all are equal).
void relative_log(const std::vector<double>& v, std::vector<float>* out, int column, int stride) {
  double mean = 0;
  for (double x : v) mean += x / double(v.size());
  std::vector<double> l(v.size(), 0.0);
  for (size_t i = 0; i < v.size(); ++i) l[i] = mean > 0 ? std::log1p(v[i] / mean) : 0.0;
  double m = 0, sq = 0;
  for (double x : l) m += x / double(l.size());
  for (double x : l) sq += (x - m) * (x - m) / double(l.size());
  const double sd = std::sqrt(sq);
  for (size_t i = 0; i < v.size(); ++i) {
    (*out)[i * size_t(stride) + size_t(column)] = sd > 1e-12 ? float((l[i] - m) / sd) : 0.f;
  }
}

}  // namespace

const char* to_string(PlacetoReward r) {
  return r == PlacetoReward::kFinal ? "final" : "intermediate";
}
const char* to_string(PlacetoStart s) { return s == PlacetoStart::kSingle ? "single" : "random"; }

bool parse_placeto_reward(const std::string& s, PlacetoReward* out) {
  if (s == "intermediate") *out = PlacetoReward::kIntermediate;
  else if (s == "final") *out = PlacetoReward::kFinal;
  else return false;
  return true;
}

bool parse_placeto_start(const std::string& s, PlacetoStart* out) {
  if (s == "random") *out = PlacetoStart::kRandom;
  else if (s == "single") *out = PlacetoStart::kSingle;
  else return false;
  return true;
}

// The set-up runs as named steps, each filling the members the next ones read.
PlacetoEnv::PlacetoEnv(const Graph& graph, const Cluster& cluster, const CostModel& cost,
                       std::vector<int> group_of_op, PlacetoEnvOptions options)
    : graph_(graph),
      cluster_(cluster),
      options_(std::move(options)),
      group_of_op_(std::move(group_of_op)),
      sim_(graph, cluster, cost) {
  check_options();
  check_groups();
  order_groups();
  link_groups();
  relate_groups();
  compute_static_features(cost);
  set_reference();
}

// Options and the allowed devices (the action mask).
void PlacetoEnv::check_options() {
  const Graph& graph = graph_;
  const Cluster& cluster = cluster_;
  if (graph.num_ops() == 0) throw ValidationError(format_context(kCtx, "graph", "has no ops"));
  if (options_.max_devices < 1)
    throw ValidationError(format_context(kCtx, "max_devices", "must be >= 1"));
  if (!(options_.memory_threshold > 0) || !std::isfinite(options_.memory_threshold))
    throw ValidationError(format_context(kCtx, "memory_threshold", "must be finite and > 0"));
  if (!(options_.memory_penalty >= 0) || !std::isfinite(options_.memory_penalty))
    throw ValidationError(format_context(kCtx, "memory_penalty", "must be finite and >= 0"));
  if (options_.devices.empty()) {
    const int n = std::min(cluster.num_devices(), options_.max_devices);
    for (int d = 0; d < n; ++d) options_.devices.push_back(d);
  }
  mask_.assign(size_t(options_.max_devices), 0);
  for (int d : options_.devices) {
    if (d < 0 || d >= cluster.num_devices() || d >= options_.max_devices) {
      throw ValidationError(format_context(
          kCtx, "devices",
          "device " + std::to_string(d) + " is outside the cluster (" +
              std::to_string(cluster.num_devices()) + " devices) or >= max_devices (" +
              std::to_string(options_.max_devices) + ")"));
    }
    if (mask_[size_t(d)]) {
      throw ValidationError(
          format_context(kCtx, "devices", "device " + std::to_string(d) + " listed twice"));
    }
    mask_[size_t(d)] = 1;
  }
}

// The groups: one id per op, every id 0 .. num_nodes - 1 used.
void PlacetoEnv::check_groups() {
  const Graph& graph = graph_;
  if (group_of_op_.size() != graph.num_ops()) {
    throw ValidationError(format_context(kCtx, "group_of_op",
                                         "has " + std::to_string(group_of_op_.size()) +
                                             " entries for " + std::to_string(graph.num_ops()) +
                                             " ops"));
  }
  int max_group = -1;
  for (size_t op = 0; op < group_of_op_.size(); ++op) {
    if (group_of_op_[op] < 0) {
      throw ValidationError(format_context(kCtx, "group_of_op",
                                           "op '" + graph.op(OpId(op)).name +
                                               "' has a negative group"));
    }
    max_group = std::max(max_group, group_of_op_[op]);
  }
  num_nodes_ = max_group + 1;
  {
    std::vector<uint8_t> used(size_t(num_nodes_), 0);
    for (int g : group_of_op_) used[size_t(g)] = 1;
    for (int g = 0; g < num_nodes_; ++g) {
      if (!used[size_t(g)]) {
        throw ValidationError(format_context(kCtx, "group_of_op",
                                             "group " + std::to_string(g) + " has no op"));
      }
    }
  }
  if (num_nodes_ > 8192) {
    throw ValidationError(format_context(kCtx, "group_of_op",
                                         std::to_string(num_nodes_) +
                                             " groups: at most 8192 (coarsen the graph first)"));
  }
}

// Order: by each group's first op in the topological order.
void PlacetoEnv::order_groups() {
  std::vector<uint8_t> seen(size_t(num_nodes_), 0);
  for (OpId op : graph_.topo_order()) {
    const int g = group_of_op_[op];
    if (!seen[size_t(g)]) {
      seen[size_t(g)] = 1;
      order_.push_back(g);
    }
  }
}

// Group DAG: forward edges (all edges of a forward-only graph) that go forward in order.
void PlacetoEnv::link_groups() {
  const Graph& graph = graph_;
  const size_t n = size_t(num_nodes_);
  std::vector<int> pos(n, -1);  // of every group in order_
  for (size_t i = 0; i < n; ++i) pos[size_t(order_[i])] = int(i);
  const bool training = graph.is_training_step();
  std::vector<std::pair<int, int>> edges;  // (parent, child)
  for (OpId a = 0; a < graph.num_ops(); ++a) {
    if (training && graph.op(a).phase != Phase::kForward) continue;
    for (OpId b : graph.succs(a)) {
      if (training && graph.op(b).phase != Phase::kForward) continue;
      const int ga = group_of_op_[a], gb = group_of_op_[b];
      if (ga != gb && pos[size_t(ga)] < pos[size_t(gb)]) edges.emplace_back(ga, gb);
    }
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  par_off_.assign(n + 1, 0);
  chi_off_.assign(n + 1, 0);
  for (const auto& [p, c] : edges) {
    ++chi_off_[size_t(p) + 1];
    ++par_off_[size_t(c) + 1];
  }
  for (size_t i = 0; i < n; ++i) {
    par_off_[i + 1] += par_off_[i];
    chi_off_[i + 1] += chi_off_[i];
  }
  par_idx_.assign(edges.size(), 0);
  chi_idx_.assign(edges.size(), 0);
  {
    std::vector<int> pf(par_off_.begin(), par_off_.end() - 1);
    std::vector<int> cf(chi_off_.begin(), chi_off_.end() - 1);
    for (const auto& [p, c] : edges) {  // sorted by parent: children lists ascending
      chi_idx_[size_t(cf[size_t(p)]++)] = c;
      par_idx_[size_t(pf[size_t(c)]++)] = p;
    }
  }
}

// Relations: ancestors by a sweep in order (bitsets as byte rows).
void PlacetoEnv::relate_groups() {
  const size_t n = size_t(num_nodes_);
  relation_.assign(n * n, 3);
  {
    std::vector<uint8_t> anc(n * n, 0);  // anc[v * n + u] = u is an ancestor of v
    for (int v : order_) {
      uint8_t* row = anc.data() + size_t(v) * n;
      for (int j = par_off_[size_t(v)]; j < par_off_[size_t(v) + 1]; ++j) {
        const int p = par_idx_[size_t(j)];
        row[size_t(p)] = 1;
        const uint8_t* prow = anc.data() + size_t(p) * n;
        for (size_t u = 0; u < n; ++u) row[u] |= prow[u];
      }
    }
    for (size_t v = 0; v < n; ++v) {
      for (size_t u = 0; u < n; ++u) {
        if (anc[v * n + u]) {
          relation_[v * n + u] = 1;
          relation_[u * n + v] = 2;
        }
      }
      relation_[v * n + v] = 0;
    }
  }
}

// Static features: runtime on the first allowed device, bytes read by other groups,
// resident memory.
void PlacetoEnv::compute_static_features(const CostModel& cost) {
  const Graph& graph = graph_;
  const size_t n = size_t(num_nodes_);
  const bool training = graph.is_training_step();
  const int ref_device = options_.devices[0];
  std::vector<double> runtime(n, 0), out_bytes(n, 0), memory(n, 0);
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const Op& o = graph.op(op);
    const size_t g = size_t(group_of_op_[op]);
    runtime[g] += cost.op_time(o, graph.op_bytes(op), ref_device);
    memory[g] += double(o.param_bytes) * (training ? 2.0 : 1.0) + double(o.state_bytes);
    for (TensorId t : o.outputs) {
      bool leaves = false;
      for (OpId c : graph.consumers(t)) leaves = leaves || group_of_op_[c] != int(g);
      if (leaves) out_bytes[g] += double(graph.tensor(t).bytes);
    }
  }
  static_.assign(n * 3, 0.f);
  relative_log(runtime, &static_, 0, 3);
  relative_log(out_bytes, &static_, 1, 3);
  relative_log(memory, &static_, 2, 3);
}

// The reusable plan and the reference: fastest fitting single-device run, else the fastest.
void PlacetoEnv::set_reference() {
  const Graph& graph = graph_;
  const int ref_device = options_.devices[0];
  plan_.graph_name = graph.name();
  plan_.method = "placeto";
  plan_.placement.assign(graph.num_ops(), ref_device);

  SingleDeviceRuns runs = single_device_runs(sim_, plan_, options_.devices);
  single_times_ = std::move(runs.times);
  single_oom_ = std::move(runs.oom);
  reference_ = runs.reference;
  if (!(reference_ > 0) || !std::isfinite(reference_)) {
    throw ValidationError(format_context(kCtx, "graph",
                                         "the single-device step time is not positive (graph '" +
                                             graph.name() + "' does no work)"));
  }
  if (options_.frame.micro_batches < 1 || options_.frame.replicas < 1) {
    throw ValidationError(format_context(kCtx, "frame", "micro_batches and replicas must be >= 1"));
  }
  apply_frame(options_.frame, &plan_);  // every evaluation runs inside it; the reference does not
}

void PlacetoEnv::check_device(int device) const {
  if (device < 0 || device >= options_.max_devices || !mask_[size_t(device)]) {
    throw ValidationError(format_context(kCtx, "action",
                                         "device " + std::to_string(device) +
                                             " is not allowed (mask)"));
  }
}

double PlacetoEnv::cost_of(double step_time, double memory_fraction) const {
  return step_time / reference_ +
         options_.memory_penalty * std::max(0.0, memory_fraction - options_.memory_threshold);
}

double PlacetoEnv::evaluate(const std::vector<int>& device_per_node, double* step_time, bool* oom) {
  if (device_per_node.size() != size_t(num_nodes_)) {
    throw ValidationError(format_context(kCtx, "action",
                                         "expected " + std::to_string(num_nodes_) +
                                             " devices, got " +
                                             std::to_string(device_per_node.size())));
  }
  for (int d : device_per_node) check_device(d);
  for (size_t op = 0; op < group_of_op_.size(); ++op) {
    plan_.placement[op] = device_per_node[size_t(group_of_op_[op])];
  }
  SimOptions so;
  so.critical_path = false;
  const SimResult r = sim_.run(plan_, so);
  ++simulations_;
  double frac = 0;
  for (size_t d = 0; d < r.peak_memory.size(); ++d) {
    const uint64_t cap = cluster_.device(int(d)).spec.memory_bytes;
    if (cap > 0) frac = std::max(frac, double(r.peak_memory[d]) / double(cap));
  }
  const bool better =
      best_.empty() || (best_oom_ && !r.oom) || (best_oom_ == r.oom && r.step_time < best_time_);
  if (better) {
    best_ = device_per_node;
    best_time_ = r.step_time;
    best_oom_ = r.oom;
    best_sim_ = simulations_;
  }
  if (step_time) *step_time = r.step_time;
  if (oom) *oom = r.oom;
  return cost_of(r.step_time, frac);
}

void PlacetoEnv::set_device_feature(int node, int device) {
  float* row = obs_.data() + size_t(node) * size_t(feature_dim());
  std::fill(row + placeto_feat::kDevice, row + placeto_feat::kDevice + options_.max_devices, 0.f);
  row[placeto_feat::kDevice + device] = 1.f;
}

void PlacetoEnv::start_episode() {
  const int dim = feature_dim();
  obs_.assign(size_t(num_nodes_) * size_t(dim), 0.f);
  for (int v = 0; v < num_nodes_; ++v) {
    float* row = obs_.data() + size_t(v) * size_t(dim);
    std::copy_n(static_.data() + size_t(v) * 3, 3, row);
    set_device_feature(v, placement_[size_t(v)]);
  }
  step_ = 0;
  started_ = true;
  obs_[size_t(order_[0]) * size_t(dim) + size_t(dim - 1)] = 1.f;  // current
  cost_known_ = false;
  if (options_.reward == PlacetoReward::kIntermediate) simulate_state();
}

void PlacetoEnv::simulate_state() {
  cost_ = evaluate(placement_, &time_, &oom_);
  cost_known_ = true;
}

void PlacetoEnv::reset(uint64_t seed) {
  placement_.assign(size_t(num_nodes_), options_.devices[0]);
  if (options_.start == PlacetoStart::kRandom) {
    std::mt19937_64 rng(seed);
    const uint64_t k = options_.devices.size();
    for (int& d : placement_) d = options_.devices[size_t(rng() % k)];
  }
  start_episode();
}

void PlacetoEnv::reset_to(const std::vector<int>& device_per_node) {
  if (device_per_node.size() != size_t(num_nodes_)) {
    throw ValidationError(format_context(kCtx, "reset_to",
                                         "expected " + std::to_string(num_nodes_) +
                                             " devices, got " +
                                             std::to_string(device_per_node.size())));
  }
  for (int d : device_per_node) check_device(d);
  placement_ = device_per_node;
  start_episode();
}

PlacetoStepResult PlacetoEnv::step(int device) {
  if (!started_) throw ValidationError(format_context(kCtx, "step", "called before reset"));
  if (done()) throw ValidationError(format_context(kCtx, "step", "the episode is over"));
  check_device(device);
  const int dim = feature_dim();
  const int v = order_[size_t(step_)];
  PlacetoStepResult res;
  const double before = cost_;
  const bool changed = placement_[size_t(v)] != device;
  if (changed) {
    placement_[size_t(v)] = device;
    set_device_feature(v, device);
    cost_known_ = false;
  }
  float* row = obs_.data() + size_t(v) * size_t(dim);
  row[dim - 2] = 1.f;  // visited
  row[dim - 1] = 0.f;  // no longer current
  ++step_;
  res.done = done();
  if (!res.done) obs_[size_t(order_[size_t(step_)]) * size_t(dim) + size_t(dim - 1)] = 1.f;

  const bool need = options_.reward == PlacetoReward::kIntermediate || res.done;
  if (need && !cost_known_) {
    simulate_state();
    res.simulated = true;
  }
  if (cost_known_) {
    res.cost = cost_;
    res.step_time = time_;
    res.oom = oom_;
  }
  if (options_.reward == PlacetoReward::kIntermediate) {
    res.reward = before - cost_;
  } else {
    res.reward = res.done ? -cost_ : 0.0;
  }
  return res;
}

Plan PlacetoEnv::to_plan(const std::vector<int>& device_per_node) const {
  if (device_per_node.size() != size_t(num_nodes_)) {
    throw ValidationError(format_context(kCtx, "plan",
                                         "expected " + std::to_string(num_nodes_) +
                                             " devices, got " +
                                             std::to_string(device_per_node.size())));
  }
  for (int d : device_per_node) check_device(d);
  Plan p;
  p.graph_name = graph_.name();
  p.method = "placeto";
  p.placement.resize(group_of_op_.size());
  for (size_t op = 0; op < group_of_op_.size(); ++op) {
    p.placement[op] = device_per_node[size_t(group_of_op_[op])];
  }
  return p;
}

}  // namespace placer
