#include "env/pipeline_env.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "src/util/error.h"

namespace placer {

namespace {

const char* const kCtx = "pipeline env";

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Module of a scope: its components (split on '.' and '/') up to the first numeric one,
// inclusive, plus `depth` more; the first component when none is numeric; "" for an empty
// scope.
std::string module_key(const std::string& scope, int depth) {
  std::string key, first, part;
  int extra = -1;  // components taken after the first numeric one (-1: none seen yet)
  for (size_t i = 0; i <= scope.size(); ++i) {
    if (i < scope.size() && scope[i] != '.' && scope[i] != '/') {
      part += scope[i];
      continue;
    }
    if (part.empty()) continue;
    if (first.empty()) first = part;
    if (!key.empty()) key += '.';
    key += part;
    if (extra >= 0) ++extra;
    if (extra < 0 && all_digits(part)) extra = 0;
    if (extra >= depth) return key;
    part.clear();
  }
  return extra >= 0 ? key : first;
}

[[noreturn]] void fail(const std::string& field, const std::string& msg) {
  throw ValidationError(format_context(kCtx, field, msg));
}

}  // namespace

// The set-up runs as named steps, each filling the members the next ones read.
PipelineEnv::PipelineEnv(const Graph& graph, const Cluster& cluster, const CostModel& cost,
                         PipelineEnvOptions options)
    : graph_(graph),
      cluster_(cluster),
      cost_(cost),
      options_(std::move(options)),
      sim_(graph, cluster, cost) {
  check_options();
  resolve_devices();
  attach_positions();
  sum_positions();
  find_pivots();
  split_devices();
  choose_micro_batches();
  place_center();
  keep_pivots();
  set_reference();
  reset();
}

void PipelineEnv::check_options() {
  if (graph_.num_ops() == 0) fail("graph", "has no ops");
  stages_ = options_.stages;
  if (stages_ < 2) fail("stages", "must be >= 2, got " + std::to_string(stages_));
  if (options_.micro_batches < 0) fail("micro_batches", "must be >= 0 (0 = 4 x stages)");
  if (options_.prune_radius < 0) fail("prune_radius", "must be >= 0");
  if (options_.scope_depth < 0) fail("scope_depth", "must be >= 0");
  if (!std::isfinite(options_.oom_penalty)) fail("oom_penalty", "must be finite");
  if (!std::isfinite(options_.reference_time) || options_.reference_time < 0)
    fail("reference_time", "must be finite and >= 0 (0 = simulate the center solution)");
}

// The device list: the groups' concatenation, else the given devices, else all; each once.
void PipelineEnv::resolve_devices() {
  if (!options_.groups.empty()) {
    if (static_cast<int>(options_.groups.size()) != stages_) {
      fail("groups", std::to_string(options_.groups.size()) + " device groups for " +
                         std::to_string(stages_) + " stages (need one per stage)");
    }
    std::vector<int> all;
    for (size_t s = 0; s < options_.groups.size(); ++s) {
      if (options_.groups[s].empty()) fail("groups", "group " + std::to_string(s) + " is empty");
      all.insert(all.end(), options_.groups[s].begin(), options_.groups[s].end());
    }
    if (!options_.devices.empty() && options_.devices != all) {
      fail("devices", "must be empty or the concatenation of the groups");
    }
    options_.devices = std::move(all);
  }
  if (options_.devices.empty()) {
    for (int d = 0; d < cluster_.num_devices(); ++d) options_.devices.push_back(d);
  }
  {
    std::vector<uint8_t> seen(static_cast<size_t>(std::max(0, cluster_.num_devices())), 0);
    for (int d : options_.devices) {
      if (d < 0 || d >= cluster_.num_devices()) {
        fail("devices", "device " + std::to_string(d) + " is outside the cluster (" +
                            std::to_string(cluster_.num_devices()) + " devices)");
      }
      if (seen[static_cast<size_t>(d)])
        fail("devices", "device " + std::to_string(d) + " listed twice");
      seen[static_cast<size_t>(d)] = 1;
    }
  }
  const int N = static_cast<int>(options_.devices.size());
  if (N < stages_) {
    fail("stages", std::to_string(stages_) + " stages need at least as many devices, got " +
                       std::to_string(N));
  }
}

// Positions (non-input forward ops in topological order) and the position of every op.
void PipelineEnv::attach_positions() {
  const Graph& graph = graph_;
  const size_t n = graph.num_ops();
  const auto& topo = graph.topo_order();
  pos_of_op_.assign(n, -1);
  for (OpId o : topo) {
    const Op& op = graph.op(o);
    if (op.phase != Phase::kForward || op.category == OpCategory::kInput) continue;
    pos_of_op_[o] = static_cast<int>(fwd_.size());
    fwd_.push_back(o);
  }
  const int F = static_cast<int>(fwd_.size());
  if (F < stages_) {
    fail("stages", std::to_string(stages_) +
                       " stages need at least as many non-input forward "
                       "ops, graph '" +
                       graph.name() + "' has " + std::to_string(F));
  }
  // Input nodes: earliest forward consumer (reverse topological order, so chains resolve).
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const Op& op = graph.op(*it);
    if (op.phase != Phase::kForward || op.category != OpCategory::kInput) continue;
    int p = -1;
    for (OpId s : graph.succs(*it)) {
      if (graph.op(s).phase != Phase::kForward || pos_of_op_[s] < 0) continue;
      p = p < 0 ? pos_of_op_[s] : std::min(p, pos_of_op_[s]);
    }
    pos_of_op_[*it] = p < 0 ? F - 1 : p;
  }
  // Derived ops follow their forward op; others the simulator's stage rule.
  for (OpId o : topo) {
    if (pos_of_op_[o] >= 0) continue;
    const Op& op = graph.op(o);
    if (op.forward_op != kNoOp && pos_of_op_[op.forward_op] >= 0) {
      pos_of_op_[o] = pos_of_op_[op.forward_op];
      continue;
    }
    for (OpId p : graph.preds(o)) pos_of_op_[o] = std::max(pos_of_op_[o], pos_of_op_[p]);
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    if (pos_of_op_[*it] >= 0) continue;
    for (OpId s : graph.succs(*it)) {
      if (pos_of_op_[s] >= 0)
        pos_of_op_[*it] =
            pos_of_op_[*it] < 0 ? pos_of_op_[s] : std::min(pos_of_op_[*it], pos_of_op_[s]);
    }
  }
  for (OpId o = 0; o < n; ++o) {
    if (pos_of_op_[o] < 0) pos_of_op_[o] = 0;
  }
  fwd_ops_at_.assign(static_cast<size_t>(F), {});
  for (OpId o : topo) {
    if (graph.op(o).phase == Phase::kForward)
      fwd_ops_at_[static_cast<size_t>(pos_of_op_[o])].push_back(o);
  }
}

// Per-position compute, gradient bytes, once-per-step compute, parameter counts and cut
// activation bytes, as prefix sums over the positions.
void PipelineEnv::sum_positions() {
  const Graph& graph = graph_;
  const int F = static_cast<int>(fwd_.size());
  const size_t n = graph.num_ops();
  bool any_grad = false;
  for (const Tensor& t : graph.tensors()) any_grad = any_grad || t.is_param_grad;
  comp_.assign(static_cast<size_t>(F) + 1, 0);
  grad_ = comp_;
  once_ = comp_;
  std::vector<double> diff(static_cast<size_t>(F) + 2, 0);
  param_count_.assign(static_cast<size_t>(F) + 1, 0);
  std::vector<uint8_t> has_param(static_cast<size_t>(F), 0);
  const int dev0 = options_.devices[0];
  for (OpId o = 0; o < n; ++o) {
    const Op& op = graph.op(o);
    const size_t p = static_cast<size_t>(pos_of_op_[o]);
    const double t_op = cost_.op_time(op, graph.op_bytes(o), dev0);
    comp_[p + 1] += t_op;
    const bool per_batch =
        (op.phase == Phase::kForward || op.phase == Phase::kBackward) && op.batch_scaled;
    if (!per_batch) once_[p + 1] += t_op;
    if (op.param_bytes > 0) has_param[p] = 1;
    if (!any_grad) grad_[p + 1] += static_cast<double>(op.param_bytes);
    for (TensorId t : op.outputs) {
      const Tensor& ten = graph.tensor(t);
      if (ten.is_param_grad) {
        grad_[p + 1] += static_cast<double>(ten.bytes);
        has_param[p] = 1;
      }
      if (op.phase != Phase::kForward) continue;
      int cmax = -1;
      for (OpId c : graph.consumers(t)) {
        if (graph.op(c).phase == Phase::kForward) cmax = std::max(cmax, pos_of_op_[c]);
      }
      if (cmax > static_cast<int>(p)) {
        diff[p + 1] += static_cast<double>(ten.bytes);
        diff[static_cast<size_t>(cmax) + 1] -= static_cast<double>(ten.bytes);
      }
    }
  }
  cross_.assign(static_cast<size_t>(F) + 1, 0);
  double run = 0;
  for (int p = 0; p < F; ++p) {
    comp_[static_cast<size_t>(p) + 1] += comp_[static_cast<size_t>(p)];
    grad_[static_cast<size_t>(p) + 1] += grad_[static_cast<size_t>(p)];
    once_[static_cast<size_t>(p) + 1] += once_[static_cast<size_t>(p)];
    param_count_[static_cast<size_t>(p) + 1] =
        param_count_[static_cast<size_t>(p)] + has_param[static_cast<size_t>(p)];
    run += diff[static_cast<size_t>(p)];
    cross_[static_cast<size_t>(p)] = std::max(0.0, run);
  }
}

// Pivots: module boundaries, else every position.
void PipelineEnv::find_pivots() {
  const int F = static_cast<int>(fwd_.size());
  if (options_.use_scopes) {
    std::string prev;
    for (int p = 0; p < F; ++p) {
      std::string key =
          module_key(graph_.op(fwd_[static_cast<size_t>(p)]).scope, options_.scope_depth);
      if (key.empty()) continue;  // keeps the previous module
      if (!prev.empty() && key != prev) pivots_.push_back(p);
      prev = std::move(key);
    }
  }
  if (static_cast<int>(pivots_.size()) < stages_ - 1) {
    pivots_.clear();
    for (int p = 1; p < F; ++p) pivots_.push_back(p);
  }
}

void PipelineEnv::choose_micro_batches() {
  if (options_.micro_batches > 0) {
    micro_batches_ = options_.micro_batches;
  } else {
    int max_r = 1;
    for (const auto& gr : groups_) max_r = std::max(max_r, static_cast<int>(gr.size()));
    int64_t m = 4 * static_cast<int64_t>(stages_);
    if (graph_.batch_size() > 0) m = std::min<int64_t>(m, graph_.batch_size() / max_r);
    micro_batches_ = static_cast<int>(std::max<int64_t>(1, m));
  }
}

// Center solution: cut k nearest the balanced cumulative compute, increasing, with room.
void PipelineEnv::place_center() {
  const int F = static_cast<int>(fwd_.size());
  const int N = static_cast<int>(options_.devices.size());
  const int P = num_pivots();
  const double total = comp_[static_cast<size_t>(F)];
  center_.assign(static_cast<size_t>(stages_) - 1, 0);
  for (int k = 0; k + 1 < stages_; ++k) {
    const double target = total * group_prefix_[static_cast<size_t>(k) + 1] / N;
    int best = 0;
    double best_d = std::numeric_limits<double>::infinity();
    for (int i = 0; i < P; ++i) {
      const double d =
          std::fabs(comp_[static_cast<size_t>(pivots_[static_cast<size_t>(i)])] - target);
      if (d < best_d) {
        best_d = d;
        best = i;
      }
    }
    center_[static_cast<size_t>(k)] = best;
    if (k > 0)
      center_[static_cast<size_t>(k)] = std::max(best, center_[static_cast<size_t>(k) - 1] + 1);
  }
  for (int k = stages_ - 2; k >= 0; --k) {
    int cap = P - 1 - (stages_ - 2 - k);
    if (k + 2 < stages_) cap = std::min(cap, center_[static_cast<size_t>(k) + 1] - 1);
    center_[static_cast<size_t>(k)] = std::min(center_[static_cast<size_t>(k)], cap);
  }
}

// Kept pivots: near a center cut, with a parameter op before and after; and how many more
// cuts can follow each.
void PipelineEnv::keep_pivots() {
  const int F = static_cast<int>(fwd_.size());
  const int P = num_pivots();
  const int params_total = param_count_[static_cast<size_t>(F)];
  kept_.assign(static_cast<size_t>(P), 0);
  for (int i = 0; i < P; ++i) {
    const int c = param_count_[static_cast<size_t>(pivots_[static_cast<size_t>(i)])];
    bool near = !options_.prune;
    for (int k : center_) near = near || std::abs(i - k) <= options_.prune_radius;
    kept_[static_cast<size_t>(i)] = near && c > 0 && c < params_total;
  }
  // max_more_: most further cuts after a pivot with a parameter op in every stage. Fewer are
  // always possible (merging stages keeps their parameters), and an earlier next cut never
  // hurts, so the first kept pivot that closes a stage with parameters is the best next one.
  std::vector<int> kept_idx, kept_count;
  for (int i = 0; i < P; ++i) {
    if (!kept_[static_cast<size_t>(i)]) continue;
    kept_idx.push_back(i);
    kept_count.push_back(param_count_[static_cast<size_t>(pivots_[static_cast<size_t>(i)])]);
  }
  max_more_.assign(static_cast<size_t>(P), -1);
  auto more_after = [&](int after_idx, int count) {
    if (count >= params_total) return -1;  // no parameter op in the tail
    const size_t a = static_cast<size_t>(
        std::upper_bound(kept_idx.begin(), kept_idx.end(), after_idx) - kept_idx.begin());
    const size_t b = static_cast<size_t>(
        std::upper_bound(kept_count.begin(), kept_count.end(), count) - kept_count.begin());
    const size_t j = std::max(a, b);
    if (j >= kept_idx.size()) return 0;
    const int m = max_more_[static_cast<size_t>(kept_idx[j])];
    return m >= 0 ? 1 + m : 0;
  };
  for (int i = P - 1; i >= 0; --i) {
    max_more_[static_cast<size_t>(i)] =
        more_after(i, param_count_[static_cast<size_t>(pivots_[static_cast<size_t>(i)])]);
  }
  max_from_start_ = more_after(-1, 0);
  if (max_from_start_ < stages_ - 1) {
    fail("stages", "graph '" + graph_.name() + "' has no cut into " + std::to_string(stages_) +
                       " stages with a parameter op in every stage among the " +
                       std::to_string(kept_idx.size()) + " kept of " + std::to_string(P) +
                       " pivots" +
                       (options_.prune ? " (raise prune_radius or disable pruning)" : ""));
  }
}

void PipelineEnv::set_reference() {
  if (options_.reference_time > 0) {
    reference_ = options_.reference_time;
  } else {
    SimOptions so;
    so.critical_path = false;
    const SimResult r = sim_.run(to_plan(center_), so);
    if (!(r.step_time > 0) || !std::isfinite(r.step_time)) {
      throw Error(format_context(kCtx, "reference_time",
                                 "the center solution's simulated step time is not positive"));
    }
    reference_ = r.step_time;
  }
}

void PipelineEnv::split_devices() {
  const auto& dev = options_.devices;
  const int N = static_cast<int>(dev.size());
  // Runs of consecutive devices on one host.
  std::vector<int> runs;
  for (int i = 0; i < N; ++i) {
    if (i == 0 || cluster_.device(dev[static_cast<size_t>(i)]).host !=
                      cluster_.device(dev[static_cast<size_t>(i) - 1]).host) {
      runs.push_back(0);
    }
    ++runs.back();
  }
  const int H = static_cast<int>(runs.size());
  bool uniform = true;
  for (int r : runs) uniform = uniform && r == runs[0];
  std::vector<int> sizes(static_cast<size_t>(stages_));
  if (!options_.groups.empty()) {
    for (int s = 0; s < stages_; ++s)
      sizes[static_cast<size_t>(s)] = static_cast<int>(options_.groups[static_cast<size_t>(s)].size());
  } else if (uniform && H >= stages_) {
    for (int s = 0; s < stages_; ++s)
      sizes[static_cast<size_t>(s)] = runs[0] * (H / stages_ + (s < H % stages_ ? 1 : 0));
  } else {
    for (int s = 0; s < stages_; ++s)
      sizes[static_cast<size_t>(s)] = N / stages_ + (s < N % stages_ ? 1 : 0);
  }
  groups_.clear();
  coll_groups_.clear();
  group_prefix_.assign(1, 0);
  int at = 0;
  for (int s = 0; s < stages_; ++s) {
    const int sz = sizes[static_cast<size_t>(s)];
    groups_.emplace_back(dev.begin() + at, dev.begin() + at + sz);
    std::vector<int> sorted = groups_.back();  // the simulator sorts sync groups by id
    std::sort(sorted.begin(), sorted.end());
    coll_groups_.push_back(cost_.make_group(sorted));
    at += sz;
    group_prefix_.push_back(at);
  }
}

double PipelineEnv::stage_allreduce(int stage, double bytes) const {
  if (groups_[static_cast<size_t>(stage)].size() < 2 || bytes <= 0) return 0;
  return cost_.group_collective_time(CollectiveKind::kAllReduce,
                                     coll_groups_[static_cast<size_t>(stage)],
                                     static_cast<uint64_t>(bytes), SyncScheme::kAuto);
}

double PipelineEnv::transfer_time(int pivot, int cut_index) const {
  const auto& a = groups_[static_cast<size_t>(cut_index)];
  const auto& b = groups_[static_cast<size_t>(cut_index) + 1];
  const double bytes = std::ceil(cross_[static_cast<size_t>(pivots_[static_cast<size_t>(pivot)])] /
                                 static_cast<double>(b.size()));
  // Activations forward and their gradients backward, over one mini-batch.
  return 2 * cost_.transfer_time(a.back(), b.front(), static_cast<uint64_t>(bytes));
}

void PipelineEnv::reset() {
  cuts_.clear();
  fixed_allreduce_.clear();
  fixed_min_comp_ = std::numeric_limits<double>::infinity();
  fixed_max_comp_ = 0;
  fixed_max_transfer_ = 0;
  obs_.assign(static_cast<size_t>(num_pivots()) * features_per_pivot(), 0.0f);
  mask_.assign(static_cast<size_t>(num_pivots()), 0);
  update_features();
}

void PipelineEnv::update_features() {
  const int P = num_pivots(), S = stages_, FP = features_per_pivot();
  const int F = static_cast<int>(fwd_.size());
  const int k = static_cast<int>(cuts_.size());
  const int last = k > 0 ? cuts_.back() : -1;
  const int lpos = k > 0 ? pivots_[static_cast<size_t>(last)] : 0;
  const int lcount = param_count_[static_cast<size_t>(lpos)];
  const double inv_ref = 1.0 / reference_;
  std::fill(obs_.begin(), obs_.end(), 0.0f);
  std::fill(mask_.begin(), mask_.end(), 0);
  for (int c : cuts_) obs_[static_cast<size_t>(c) * FP + FP - 1] = 1.0f;
  if (k == S - 1) return;
  const int remaining = S - 1 - k;  // cuts still to take, this one included
  const int r_k = static_cast<int>(groups_[static_cast<size_t>(k)].size());
  const double r_tail = static_cast<double>(group_prefix_[static_cast<size_t>(S)] -
                                            group_prefix_[static_cast<size_t>(k) + 1]);
  const double total_comp = comp_[static_cast<size_t>(F)];
  const double total_grad = grad_[static_cast<size_t>(F)];
  // Per-cut windows: cut k within prune_radius pivots of center cut k, unless no pivot there
  // is legal (then the pruned pivots of every window, as without the option).
  const int center_k = center_[static_cast<size_t>(k)];
  bool window_open = false;
  for (int j = last + 1; j < P && options_.prune_per_cut; ++j) {
    window_open =
        window_open ||
        (std::abs(j - center_k) <= options_.prune_radius && kept_[static_cast<size_t>(j)] &&
         param_count_[static_cast<size_t>(pivots_[static_cast<size_t>(j)])] > lcount &&
         max_more_[static_cast<size_t>(j)] >= remaining - 1);
  }
  for (int j = last + 1; j < P; ++j) {
    const int pos = pivots_[static_cast<size_t>(j)];
    mask_[static_cast<size_t>(j)] =
        kept_[static_cast<size_t>(j)] && param_count_[static_cast<size_t>(pos)] > lcount &&
        max_more_[static_cast<size_t>(j)] >= remaining - 1 &&
        (!window_open || std::abs(j - center_k) <= options_.prune_radius);
    float* row = obs_.data() + static_cast<size_t>(j) * FP;
    for (int s = 0; s < k; ++s)
      row[s] = static_cast<float>(fixed_allreduce_[static_cast<size_t>(s)] * inv_ref);
    row[k] = static_cast<float>(
        stage_allreduce(k, grad_[static_cast<size_t>(pos)] - grad_[static_cast<size_t>(lpos)]) *
        inv_ref);
    const double tail_grad = total_grad - grad_[static_cast<size_t>(pos)];
    for (int s = k + 1; s < S; ++s) {
      const double share = static_cast<double>(groups_[static_cast<size_t>(s)].size()) / r_tail;
      row[s] = static_cast<float>(stage_allreduce(s, tail_grad * share) * inv_ref);
    }
    row[S] = static_cast<float>(std::max(fixed_max_transfer_, transfer_time(j, k)) * inv_ref);
    const double c_new = (comp_[static_cast<size_t>(pos)] - comp_[static_cast<size_t>(lpos)]) / r_k;
    const double c_tail = (total_comp - comp_[static_cast<size_t>(pos)]) / r_tail;
    const double lo = std::min({fixed_min_comp_, c_new, c_tail});
    const double hi = std::max({fixed_max_comp_, c_new, c_tail});
    row[S + 1] = static_cast<float>(hi > 0 ? lo / hi : 1.0);
  }
}

PipelineStepResult PipelineEnv::step(int pivot) {
  if (done()) throw Error(format_context(kCtx, "step", "the episode is done; call reset()"));
  if (pivot < 0 || pivot >= num_pivots() || !mask_[static_cast<size_t>(pivot)]) {
    throw ValidationError(format_context(
        kCtx, "action",
        "pivot " + std::to_string(pivot) + " is not allowed now (" + std::to_string(num_pivots()) +
            " pivots, " + std::to_string(cuts_.size()) + " cuts taken)"));
  }
  const int k = static_cast<int>(cuts_.size());
  const int lpos = k > 0 ? pivots_[static_cast<size_t>(cuts_.back())] : 0;
  const int pos = pivots_[static_cast<size_t>(pivot)];
  fixed_allreduce_.push_back(
      stage_allreduce(k, grad_[static_cast<size_t>(pos)] - grad_[static_cast<size_t>(lpos)]));
  const double c = (comp_[static_cast<size_t>(pos)] - comp_[static_cast<size_t>(lpos)]) /
                   static_cast<double>(groups_[static_cast<size_t>(k)].size());
  fixed_min_comp_ = std::min(fixed_min_comp_, c);
  fixed_max_comp_ = std::max(fixed_max_comp_, c);
  fixed_max_transfer_ = std::max(fixed_max_transfer_, transfer_time(pivot, k));
  cuts_.push_back(pivot);
  update_features();
  PipelineStepResult res;
  if (!done()) return res;
  if (options_.simulate) res = evaluate(cuts_);
  res.done = true;
  return res;
}

void PipelineEnv::check_cuts(const std::vector<int>& cuts) const {
  if (static_cast<int>(cuts.size()) != stages_ - 1) {
    throw ValidationError(format_context(
        kCtx, "cuts",
        "need " + std::to_string(stages_ - 1) + " cuts, got " + std::to_string(cuts.size())));
  }
  for (size_t i = 0; i < cuts.size(); ++i) {
    if (cuts[i] < 0 || cuts[i] >= num_pivots()) {
      throw ValidationError(format_context(kCtx, "cuts",
                                           "pivot " + std::to_string(cuts[i]) + " out of range (" +
                                               std::to_string(num_pivots()) + " pivots)"));
    }
    if (i > 0 && cuts[i] <= cuts[i - 1]) {
      throw ValidationError(format_context(kCtx, "cuts", "pivots must be strictly increasing"));
    }
  }
}

std::vector<int> PipelineEnv::bounds(const std::vector<int>& cuts) const {
  check_cuts(cuts);
  const int F = static_cast<int>(fwd_.size());
  std::vector<int> bound(static_cast<size_t>(stages_) + 1, F);
  bound[0] = 0;
  for (size_t i = 0; i < cuts.size(); ++i) bound[i + 1] = pivots_[static_cast<size_t>(cuts[i])];
  return bound;
}

Plan PipelineEnv::to_plan(const std::vector<int>& cuts) const { return to_plan(cuts, layout()); }

Plan PipelineEnv::to_plan(const std::vector<int>& cuts, const PipelineLayout& layout) const {
  const std::vector<int> bound = bounds(cuts);
  if (static_cast<int>(layout.groups.size()) != stages_) {
    throw ValidationError(format_context(kCtx, "layout.groups",
                                         std::to_string(layout.groups.size()) + " groups for " +
                                             std::to_string(stages_) + " stages"));
  }
  if (layout.micro_batches < 1) {
    throw ValidationError(format_context(kCtx, "layout.micro_batches",
                                         "must be >= 1, got " +
                                             std::to_string(layout.micro_batches)));
  }
  {
    std::vector<uint8_t> seen(static_cast<size_t>(std::max(0, cluster_.num_devices())), 0);
    for (size_t s = 0; s < layout.groups.size(); ++s) {
      if (layout.groups[s].empty()) {
        throw ValidationError(
            format_context(kCtx, "layout.groups", "group " + std::to_string(s) + " is empty"));
      }
      for (int d : layout.groups[s]) {
        if (d < 0 || d >= cluster_.num_devices() || seen[static_cast<size_t>(d)]) {
          throw ValidationError(format_context(
              kCtx, "layout.groups",
              "device " + std::to_string(d) + " is outside the cluster or listed twice"));
        }
        seen[static_cast<size_t>(d)] = 1;
      }
    }
  }
  const int F = static_cast<int>(fwd_.size());
  Plan plan;
  plan.graph_name = graph_.name();
  plan.method = "pipeline-env";
  plan.pipeline.micro_batches = layout.micro_batches;
  plan.pipeline.schedule = options_.schedule;
  std::vector<int> stage_of_pos(static_cast<size_t>(F), 0);
  for (int s = 0; s < stages_; ++s) {
    PipelineStage st;
    for (int p = bound[static_cast<size_t>(s)]; p < bound[static_cast<size_t>(s) + 1]; ++p) {
      stage_of_pos[static_cast<size_t>(p)] = s;
      const auto& ops = fwd_ops_at_[static_cast<size_t>(p)];
      st.ops.insert(st.ops.end(), ops.begin(), ops.end());
    }
    st.devices = layout.groups[static_cast<size_t>(s)];
    plan.pipeline.stages.push_back(std::move(st));
  }
  plan.placement.resize(graph_.num_ops());
  for (OpId o = 0; o < graph_.num_ops(); ++o) {
    const int s = stage_of_pos[static_cast<size_t>(pos_of_op_[o])];
    plan.placement[o] = layout.groups[static_cast<size_t>(s)][0];
  }
  return plan;
}

PipelineStepResult PipelineEnv::evaluate(const std::vector<int>& cuts) {
  return evaluate(cuts, layout());
}

PipelineStepResult PipelineEnv::evaluate(const std::vector<int>& cuts,
                                         const PipelineLayout& layout) {
  const Plan plan = to_plan(cuts, layout);
  SimOptions so;
  so.critical_path = false;
  const SimResult r = sim_.run(plan, so);
  PipelineStepResult res;
  res.done = true;
  res.step_time = r.step_time;
  res.oom = r.oom;
  res.reward = r.oom ? options_.oom_penalty : reference_ / r.step_time;
  return res;
}

// --- Layout search ---------------------------------------------------------------------

double PipelineEnv::estimate_bottleneck(const std::vector<int>& cuts,
                                        const std::vector<std::vector<int>>& groups) const {
  const std::vector<int> b = bounds(cuts);
  if (static_cast<int>(groups.size()) != stages_) {
    throw ValidationError(format_context(kCtx, "groups",
                                         std::to_string(groups.size()) + " groups for " +
                                             std::to_string(stages_) + " stages"));
  }
  double worst = 0;
  for (int s = 0; s < stages_; ++s) {
    const auto& g = groups[static_cast<size_t>(s)];
    if (g.empty()) {
      throw ValidationError(
          format_context(kCtx, "groups", "group " + std::to_string(s) + " is empty"));
    }
    const size_t i = static_cast<size_t>(b[static_cast<size_t>(s)]);
    const size_t j = static_cast<size_t>(b[static_cast<size_t>(s) + 1]);
    const double r = static_cast<double>(g.size());
    const double once = once_[j] - once_[i];
    double t = (comp_[j] - comp_[i] - once) / r + once;
    if (g.size() > 1 && grad_[j] > grad_[i]) {
      std::vector<int> sorted = g;
      std::sort(sorted.begin(), sorted.end());
      t += cost_.group_collective_time(CollectiveKind::kAllReduce, cost_.make_group(sorted),
                                       static_cast<uint64_t>(grad_[j] - grad_[i]),
                                       SyncScheme::kAuto);
    }
    const int prev = s > 0 ? groups[static_cast<size_t>(s) - 1].back() : -1;
    t += blocking_transfers(b, s, prev, g.front(), static_cast<int>(g.size()),
                            next_device(g.back()));
    worst = std::max(worst, t);
    if (s > 0) worst = std::max(worst, cut_transfer(b, s, prev, g.front(), g.size()));
  }
  return worst;
}

double PipelineEnv::cut_transfer(const std::vector<int>& b, int s, int from, int to,
                                 size_t replicas) const {
  const double bytes = std::ceil(cross_[static_cast<size_t>(b[static_cast<size_t>(s)])] /
                                 static_cast<double>(replicas));
  return 2 * cost_.transfer_time(from, to, static_cast<uint64_t>(bytes));
}

int PipelineEnv::next_device(int device) const {
  const auto& dev = options_.devices;
  const auto it = std::find(dev.begin(), dev.end(), device);
  return it == dev.end() || it + 1 == dev.end() ? device : *(it + 1);
}

double PipelineEnv::blocking_transfers(const std::vector<int>& b, int s, int prev, int first,
                                       int replicas, int next) const {
  if (cluster_.device(first).spec.overlap_transfers) return 0;
  double t = s > 0 ? cut_transfer(b, s, prev, first, static_cast<size_t>(replicas)) : 0;
  if (s + 1 < stages_) t += cut_transfer(b, s + 1, first, next, 1);
  return t;
}

std::vector<std::vector<int>> PipelineEnv::best_groups(const std::vector<int>& cuts) const {
  const std::vector<int> b = bounds(cuts);
  const auto& dev = options_.devices;
  const int N = static_cast<int>(dev.size()), S = stages_;
  std::vector<uint8_t> host_start(static_cast<size_t>(N), 1);
  for (int d = 1; d < N; ++d) {
    host_start[static_cast<size_t>(d)] = cluster_.device(dev[static_cast<size_t>(d)]).host !=
                                         cluster_.device(dev[static_cast<size_t>(d) - 1]).host;
  }
  // Collective groups of every slice [first, first + r), built on demand.
  std::vector<CollectiveGroup> coll(static_cast<size_t>(N) * N);
  std::vector<uint8_t> made(coll.size(), 0);
  auto stage_time = [&](int s, int first, int r) {
    const size_t i = static_cast<size_t>(b[static_cast<size_t>(s)]);
    const size_t j = static_cast<size_t>(b[static_cast<size_t>(s) + 1]);
    const double once = once_[j] - once_[i];
    double t = (comp_[j] - comp_[i] - once) / r + once;
    if (r > 1 && grad_[j] > grad_[i]) {
      const size_t k = static_cast<size_t>(first) * N + static_cast<size_t>(r) - 1;
      if (!made[k]) {
        std::vector<int> sorted(dev.begin() + first, dev.begin() + first + r);
        std::sort(sorted.begin(), sorted.end());
        coll[k] = cost_.make_group(sorted);
        made[k] = 1;
      }
      t += cost_.group_collective_time(CollectiveKind::kAllReduce, coll[k],
                                       static_cast<uint64_t>(grad_[j] - grad_[i]),
                                       SyncScheme::kAuto);
    }
    return t;
  };
  auto boundary = [&](int s, int prev_last, int first, int r) {
    return cut_transfer(b, s, dev[static_cast<size_t>(prev_last)], dev[static_cast<size_t>(first)],
                        static_cast<size_t>(r));
  };
  // A stage's own time, with its cut transfers when its first device has no copy engines.
  auto stage_cost = [&](int s, int prev_last, int first, int r) {
    const int prev = s > 0 ? dev[static_cast<size_t>(prev_last)] : -1;
    const int last = first + r - 1;
    return stage_time(s, first, r) +
           blocking_transfers(b, s, prev, dev[static_cast<size_t>(first)], r,
                              dev[static_cast<size_t>(std::min(last + 1, N - 1))]);
  };
  // State (s, d): stages 0 .. s-1 placed on slots [0, d). Value: (bottleneck, sum of stage
  // times), compared lexicographically (the sum breaks near-ties: shorter fill and drain).
  struct Cell {
    double worst = std::numeric_limits<double>::infinity();
    double sum = 0;
    int d_prev = -1, first = -1;
  };
  auto better = [](double w, double sm, const Cell& c) {
    if (w < c.worst * (1 - 1e-9)) return true;
    return w <= c.worst * (1 + 1e-9) && sm < c.sum;
  };
  std::vector<Cell> A(static_cast<size_t>(S + 1) * (N + 1));
  auto at = [N](int s, int d) { return static_cast<size_t>(s) * (N + 1) + d; };
  A[at(0, 0)].worst = 0;
  for (int s = 0; s < S; ++s) {
    for (int d_prev = 0; d_prev <= N; ++d_prev) {
      const Cell& from = A[at(s, d_prev)];
      if (!std::isfinite(from.worst)) continue;
      // Start at d_prev, or skip to the next host boundary (never for the first stage).
      std::vector<int> starts{d_prev};
      if (s > 0 && d_prev < N && !host_start[static_cast<size_t>(d_prev)]) {
        int h = d_prev + 1;
        while (h < N && !host_start[static_cast<size_t>(h)]) ++h;
        if (h < N) starts.push_back(h);
      }
      for (int first : starts) {
        for (int r = 1; first + r <= N - (S - 1 - s); ++r) {
          const double t = stage_cost(s, d_prev - 1, first, r);
          double w = std::max(from.worst, t);
          if (s > 0) w = std::max(w, boundary(s, d_prev - 1, first, r));
          const double sm = from.sum + t;
          Cell& to = A[at(s + 1, first + r)];
          if (better(w, sm, to)) to = Cell{w, sm, d_prev, first};
        }
      }
    }
  }
  int best_d = -1;
  for (int d = 1; d <= N; ++d) {
    const Cell& c = A[at(S, d)];
    if (std::isfinite(c.worst) &&
        (best_d < 0 || better(c.worst, c.sum, A[at(S, best_d)])))
      best_d = d;
  }
  std::vector<std::vector<int>> groups(static_cast<size_t>(S));
  if (best_d < 0) return groups_;  // cannot happen: N >= S
  for (int s = S, d = best_d; s > 0; --s) {
    const Cell& c = A[at(s, d)];
    groups[static_cast<size_t>(s) - 1].assign(dev.begin() + c.first, dev.begin() + d);
    d = c.d_prev;
  }
  return groups;
}

std::vector<std::vector<int>> PipelineEnv::proportional_groups(const std::vector<int>& cuts) const {
  const std::vector<int> b = bounds(cuts);
  const auto& dev = options_.devices;
  const int N = static_cast<int>(dev.size()), S = stages_;
  std::vector<double> w(static_cast<size_t>(S));
  double total = 0;
  for (int s = 0; s < S; ++s) {
    w[static_cast<size_t>(s)] = std::max(0.0, comp_[static_cast<size_t>(b[static_cast<size_t>(s) + 1])] -
                                                  comp_[static_cast<size_t>(b[static_cast<size_t>(s)])]);
    total += w[static_cast<size_t>(s)];
  }
  std::vector<int> n(static_cast<size_t>(S), 1);
  std::vector<double> rem(static_cast<size_t>(S), 0);
  int used = 0;
  for (int s = 0; s < S; ++s) {
    const double share = total > 0 ? N * w[static_cast<size_t>(s)] / total : double(N) / S;
    n[static_cast<size_t>(s)] = std::max(1, static_cast<int>(std::floor(share)));
    rem[static_cast<size_t>(s)] = share - std::floor(share);
    used += n[static_cast<size_t>(s)];
  }
  while (used > N) {  // the at-least-one rule overshot: shrink the largest group
    const size_t k = static_cast<size_t>(std::max_element(n.begin(), n.end()) - n.begin());
    --n[k];
    --used;
  }
  while (used < N) {  // largest remainder first (earlier stage on ties)
    size_t k = 0;
    for (size_t s = 1; s < n.size(); ++s) {
      if (rem[s] > rem[k] + 1e-9) k = s;  // near-equal remainders: the earlier stage
    }
    ++n[k];
    rem[k] = -1;
    ++used;
    if (std::all_of(rem.begin(), rem.end(), [](double x) { return x < 0; }))
      std::fill(rem.begin(), rem.end(), 0.0);
  }
  std::vector<std::vector<int>> groups;
  int at = 0;
  for (int s = 0; s < S; ++s) {
    groups.emplace_back(dev.begin() + at, dev.begin() + at + n[static_cast<size_t>(s)]);
    at += n[static_cast<size_t>(s)];
  }
  return groups;
}

std::vector<int> PipelineEnv::micro_batch_candidates(
    const std::vector<std::vector<int>>& groups) const {
  size_t max_r = 1;
  for (const auto& g : groups) max_r = std::max(max_r, g.size());
  const int64_t batch = graph_.batch_size();
  const int64_t cap = batch > 0 ? std::max<int64_t>(1, batch / static_cast<int64_t>(max_r))
                                : 8 * static_cast<int64_t>(stages_);
  std::vector<int> out;
  for (int64_t m = std::min<int64_t>(2, cap); m <= cap; m *= 2) out.push_back(static_cast<int>(m));
  for (int k : {1, 2, 4, 8}) {
    out.push_back(static_cast<int>(std::min<int64_t>(cap, static_cast<int64_t>(k) * stages_)));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace placer
