#include "agents/classical/pipeline_dp.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <string>
#include <unordered_map>

#include "agents/classical/pipeline_fold.h"
#include "agents/classical/stage_borders.h"
#include "agents/common/prediction.h"
#include "src/util/error.h"

namespace placer {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The largest divisor of q (> 0) that is <= target (1 when target < 1).
int64_t divisor_at_most(int64_t q, int64_t target) {
  for (int64_t m = std::min(q, target); m > 1; --m) {
    if (q % m == 0) return m;
  }
  return 1;
}

/// The smallest divisor of q (> 0) that is >= target, or 0 when target > q.
int64_t divisor_at_least(int64_t q, int64_t target) {
  for (int64_t m = std::max<int64_t>(1, target); m <= q; ++m) {
    if (q % m == 0) return m;
  }
  return 0;
}
/// Non-input forward ops (`fwd`, in topological order) start a new unit whenever the layer
/// key changes: the op's layer when the graph has layers (and not `per_op`), else every op
/// on its own. Sets
/// `unit` of those ops; at least one (empty) unit.
std::vector<std::vector<OpId>> forward_layer_units(const Graph& g, const std::vector<OpId>& fwd,
                                                   bool per_op, std::vector<int>& unit) {
  bool any_layer = false;
  for (OpId o : fwd) {
    const Op& op = g.op(o);
    if (op.layer >= 0 && op.category != OpCategory::kInput && !per_op) any_layer = true;
  }
  std::vector<std::vector<OpId>> units;
  int64_t key = std::numeric_limits<int64_t>::min();
  for (size_t k = 0; k < fwd.size(); ++k) {
    const Op& op = g.op(fwd[k]);
    if (op.category == OpCategory::kInput) continue;
    const int64_t kk = any_layer ? op.layer : static_cast<int64_t>(k);
    if (units.empty() || kk != key) units.emplace_back();
    key = kk;
    units.back().push_back(fwd[k]);
    unit[fwd[k]] = static_cast<int>(units.size()) - 1;
  }
  if (units.empty()) units.emplace_back();  // only input nodes
  return units;
}

/// Merges consecutive units (balanced by forward FLOPs) down to max_units, renumbering `unit`.
void merge_units(const Graph& g, int max_units, std::vector<std::vector<OpId>>& units,
                 std::vector<int>& unit) {
  std::vector<double> w(units.size(), 0);
  double total = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    for (OpId o : units[u]) w[u] += g.op(o).flops;
    w[u] += 1;  // units without FLOPs still count
    total += w[u];
  }
  std::vector<std::vector<OpId>> merged(static_cast<size_t>(max_units));
  std::vector<int> remap(units.size());
  double before = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    int c = static_cast<int>(std::floor((before + 0.5 * w[u]) / total * max_units));
    c = std::min(max_units - 1, std::max(0, c));
    remap[u] = c;
    before += w[u];
    merged[static_cast<size_t>(c)].insert(merged[static_cast<size_t>(c)].end(), units[u].begin(),
                                          units[u].end());
  }
  std::vector<int> dense(static_cast<size_t>(max_units), -1);
  units.clear();
  for (int c = 0; c < max_units; ++c) {
    if (merged[static_cast<size_t>(c)].empty()) continue;
    dense[static_cast<size_t>(c)] = static_cast<int>(units.size());
    units.push_back(std::move(merged[static_cast<size_t>(c)]));
  }
  for (int& u : unit) {
    if (u >= 0) u = dense[static_cast<size_t>(remap[static_cast<size_t>(u)])];
  }
}

/// Input nodes join the earliest unit among their forward consumers (else the last unit).
void attach_inputs(const Graph& g, const std::vector<OpId>& fwd,
                   std::vector<std::vector<OpId>>& units, std::vector<int>& unit) {
  const int last = static_cast<int>(units.size()) - 1;
  for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) {
    const OpId o = *it;
    if (g.op(o).category != OpCategory::kInput) continue;
    int u = -1;
    for (OpId s : g.succs(o)) {
      if (g.op(s).phase == Phase::kForward && unit[s] >= 0)
        u = u < 0 ? unit[s] : std::min(u, unit[s]);
    }
    unit[o] = u < 0 ? last : u;
    units[static_cast<size_t>(unit[o])].push_back(o);
  }
}

/// The unit of every other op: derived ops follow their forward op; others the simulator's
/// stage rule (the latest unit of a predecessor, else the earliest of a successor, else 0).
void assign_remaining_ops(const Graph& g, std::vector<int>& unit) {
  for (OpId o : g.topo_order()) {
    if (unit[o] >= 0) continue;
    const Op& op = g.op(o);
    if (op.forward_op != kNoOp && unit[op.forward_op] >= 0) {
      unit[o] = unit[op.forward_op];
      continue;
    }
    for (OpId p : g.preds(o)) unit[o] = std::max(unit[o], unit[p]);
  }
  const auto& topo = g.topo_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const OpId o = *it;
    if (unit[o] >= 0) continue;
    for (OpId s : g.succs(o)) {
      if (unit[s] >= 0) unit[o] = unit[o] < 0 ? unit[s] : std::min(unit[o], unit[s]);
    }
  }
  for (int& u : unit) {
    if (u < 0) u = 0;
  }
}
}  // namespace

LayerChain build_layer_chain(const Graph& g, int max_units, bool per_op) {
  max_units = std::max(1, max_units);
  std::vector<OpId> fwd;
  for (OpId o : g.topo_order()) {
    if (g.op(o).phase == Phase::kForward) fwd.push_back(o);
  }
  // Input nodes (weights, data) are attached after the layers are formed.
  std::vector<int> unit(g.num_ops(), -1);
  std::vector<std::vector<OpId>> units = forward_layer_units(g, fwd, per_op, unit);
  if (static_cast<int>(units.size()) > max_units) merge_units(g, max_units, units, unit);
  attach_inputs(g, fwd, units, unit);
  const auto& rank = g.topo_rank();
  for (auto& ops : units) {
    std::sort(ops.begin(), ops.end(), [&](OpId a, OpId b) { return rank[a] < rank[b]; });
  }
  assign_remaining_ops(g, unit);
  LayerChain chain;
  chain.units = std::move(units);
  chain.unit_of = std::move(unit);
  return chain;
}

std::vector<int> cuts_from_groups(const Graph& g, const LayerChain& chain,
                                  const std::vector<int>& group_of_op) {
  PLACER_CHECK(group_of_op.size() == static_cast<size_t>(g.num_ops()),
               "cuts_from_groups: one group per op expected");
  const int units = static_cast<int>(chain.units.size());
  // Weight of each (unit, group); groups renumbered densely in order of first appearance.
  std::unordered_map<int, int> dense;
  std::vector<std::vector<double>> weight(static_cast<size_t>(units));
  std::vector<double> mass, moment;
  for (int u = 0; u < units; ++u) {
    for (OpId o : chain.units[static_cast<size_t>(u)]) {
      const Op& op = g.op(o);
      if (op.category == OpCategory::kInput) continue;
      const int grp = dense.emplace(group_of_op[o], static_cast<int>(dense.size())).first->second;
      if (static_cast<int>(mass.size()) <= grp) mass.resize(size_t(grp) + 1, 0), moment.resize(size_t(grp) + 1, 0);
      auto& w = weight[static_cast<size_t>(u)];
      if (static_cast<int>(w.size()) <= grp) w.resize(size_t(grp) + 1, 0);
      const double x = op.flops + 1;
      w[size_t(grp)] += x;
      mass[size_t(grp)] += x;
      moment[size_t(grp)] += x * u;
    }
  }
  const int groups = static_cast<int>(mass.size());
  if (units <= 1 || groups <= 1) return {0, units};
  std::vector<int> order(static_cast<size_t>(groups));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return moment[size_t(a)] / mass[size_t(a)] < moment[size_t(b)] / mass[size_t(b)];
  });
  auto kept = [&](int u, int s) {  // weight unit u keeps when it joins stage s (group order[s])
    const auto& w = weight[static_cast<size_t>(u)];
    const int grp = order[static_cast<size_t>(s)];
    return grp < static_cast<int>(w.size()) ? w[size_t(grp)] : 0.0;
  };
  // best[u][s]: most weight kept by units 0..u with unit u in stage s (stages non-decreasing).
  std::vector<std::vector<double>> best(size_t(units), std::vector<double>(size_t(groups), 0));
  std::vector<std::vector<int>> from(size_t(units), std::vector<int>(size_t(groups), 0));
  for (int s = 0; s < groups; ++s) best[0][size_t(s)] = kept(0, s);
  for (int u = 1; u < units; ++u) {
    int arg = 0;
    for (int s = 0; s < groups; ++s) {
      if (best[size_t(u - 1)][size_t(s)] > best[size_t(u - 1)][size_t(arg)]) arg = s;
      best[size_t(u)][size_t(s)] = best[size_t(u - 1)][size_t(arg)] + kept(u, s);
      from[size_t(u)][size_t(s)] = arg;
    }
  }
  int s = 0;
  for (int t = 1; t < groups; ++t) {
    if (best[size_t(units - 1)][size_t(t)] > best[size_t(units - 1)][size_t(s)]) s = t;
  }
  std::vector<int> stage(static_cast<size_t>(units));
  for (int u = units - 1; u >= 0; --u) {
    stage[size_t(u)] = s;
    if (u > 0) s = from[size_t(u)][size_t(s)];
  }
  std::vector<int> cuts{0};
  for (int u = 1; u < units; ++u) {
    if (stage[size_t(u)] != stage[size_t(u - 1)]) cuts.push_back(u);
  }
  cuts.push_back(units);
  return cuts;
}

double pipeline_stage_cost(const PipelineCostTable& t, int i, int j, int first, int r,
                           int prev_last) {
  double v = t.stage_time(i, j, first, r);
  if (static_cast<size_t>(first) >= t.blocking.size() || !t.blocking[static_cast<size_t>(first)])
    return v;
  if (i > 0 && prev_last >= 0) v += t.boundary_time(i, prev_last, first, r);
  if (j < t.num_layers)
    v += t.boundary_time(j, first + r - 1, std::min(first + r, t.num_devices - 1), 1);
  return v;
}

double pipeline_bottleneck(const PipelineCostTable& table,
                           const std::vector<PipelineStageChoice>& stages) {
  double worst = 0;
  for (size_t k = 0; k < stages.size(); ++k) {
    const PipelineStageChoice& s = stages[k];
    if (table.fits && !table.fits(s.begin, s.end, s.first, s.replicas)) return kInf;
    const int prev_last = k > 0 ? stages[k - 1].first + stages[k - 1].replicas - 1 : -1;
    worst =
        std::max(worst, pipeline_stage_cost(table, s.begin, s.end, s.first, s.replicas, prev_last));
    if (k > 0) {
      const PipelineStageChoice& p = stages[k - 1];
      worst = std::max(worst,
                       table.boundary_time(s.begin, p.first + p.replicas - 1, s.first, s.replicas));
    }
  }
  return worst;
}

std::vector<int> pipeline_replica_counts(int num_devices, const PipelineDpOptions& opt) {
  int R = opt.allow_replication ? num_devices : 1;
  if (opt.allow_replication && opt.max_replicas > 0) R = std::min(R, opt.max_replicas);
  std::vector<int> out;
  for (int r = 1; r <= R; ++r) {
    if (opt.replicas_divide > 0 && opt.replicas_divide % r != 0) continue;
    if (opt.power_of_two_replicas && (r & (r - 1)) != 0) continue;
    out.push_back(r);
  }
  return out;
}

PipelineDpSolution solve_pipeline_dp(const PipelineCostTable& t, const PipelineDpOptions& opt) {
  const int L = t.num_layers, N = t.num_devices;
  PipelineDpSolution sol;
  if (L <= 0 || N <= 0) return sol;
  const std::vector<int> replica_counts = pipeline_replica_counts(N, opt);
  const auto at = [N](int j, int d) { return static_cast<size_t>(j) * (N + 1) + d; };
  std::vector<double> A(static_cast<size_t>(L + 1) * (N + 1), kInf);
  struct Parent {
    int i = -1, d_prev = -1, first = -1, r = 0;
  };
  std::vector<Parent> parent(A.size());
  A[at(0, 0)] = 0;
  auto host_start = [&](int d) {
    return d == 0 || (static_cast<size_t>(d) < t.host_start.size() && t.host_start[d]);
  };
  auto blocking = [&](int d) {
    return static_cast<size_t>(d) < t.blocking.size() && t.blocking[static_cast<size_t>(d)];
  };
  for (int j = 1; j <= L; ++j) {
    for (int d = 1; d <= N; ++d) {
      double& best = A[at(j, d)];
      for (int i = 0; i < j; ++i) {
        for (int r : replica_counts) {
          if (r > d) break;
          const int first = d - r;
          if (i == 0 && first != 0) continue;  // the first stage starts at slot 0
          if (t.fits && !t.fits(i, j, first, r)) continue;
          double stage = -1;  // computed lazily
          // Previous state: consumed slots [0, d_prev); d_prev == first, or a skip to the
          // host boundary `first` over slots that start no host.
          for (int d_prev = first; d_prev >= 0; --d_prev) {
            if (d_prev < first && (!opt.align_to_hosts || !host_start(first) || host_start(d_prev)))
              break;
            const double prev = A[at(i, d_prev)];
            if (prev < best) {
              if (blocking(first)) {
                stage = pipeline_stage_cost(t, i, j, first, r, d_prev - 1);
              } else if (stage < 0) {
                stage = t.stage_time(i, j, first, r);
              }
              double v = std::max(prev, stage);
              if (i > 0 && v < best) v = std::max(v, t.boundary_time(i, d_prev - 1, first, r));
              if (v < best) {
                best = v;
                parent[at(j, d)] = {i, d_prev, first, r};
              }
            }
          }
        }
      }
    }
  }
  int best_d = -1;
  for (int d = 1; d <= N; ++d) {
    if (A[at(L, d)] < (best_d < 0 ? kInf : A[at(L, best_d)])) best_d = d;
  }
  if (best_d < 0) return sol;
  sol.bottleneck = A[at(L, best_d)];
  for (int j = L, d = best_d; j > 0;) {
    const Parent& p = parent[at(j, d)];
    sol.stages.push_back({p.i, j, p.first, p.r});
    j = p.i;
    d = p.d_prev;
  }
  std::reverse(sol.stages.begin(), sol.stages.end());
  return sol;
}

namespace {

/// Everything a pipeline cost table's functions read, in one shared block (the table is
/// copyable). Prefix sums are over the chain's units: x[j] - x[i] is units [i, j).
struct PipelineCostData {
  int L = 0, N = 0;
  std::vector<int> devices;
  std::vector<std::vector<double>> comp, once;  // [slot][prefix over units]
  std::vector<double> grad, resident, saved;    // prefix over units
  std::vector<uint64_t> workspace;              // per unit
  std::vector<double> cross;                    // bytes over the cut before unit j
  std::vector<double> cross_back;               // gradient bytes back over the cut before unit j
  double trips = 2;  // crossings per cut: activations, and gradients when there is a backward
  /// Boundaries move cross forward and cross_back back (the gradients the backward ops
  /// send, as the simulator moves them), instead of trips x cross.
  bool gradients_as_sent = false;
  // Sync groups of the (first, r) pairs the DP asks for, made on first use: making all
  // N^2 of them up front took minutes on 1024 devices.
  std::unordered_map<size_t, CollectiveGroup> groups;  // key first * N + r - 1
  // min_memory[k][a]: the smallest device memory among slots [a, a + 2^k).
  std::vector<std::vector<uint64_t>> min_memory;

  PipelineCostData(const Problem& problem, const LayerChain& chain,
                   const std::vector<int>& devices);

  uint64_t capacity(int first, int r) const {
    int k = 0;
    while ((2 << k) <= r) ++k;
    return std::min(min_memory[static_cast<size_t>(k)][static_cast<size_t>(first)],
                    min_memory[static_cast<size_t>(k)][static_cast<size_t>(first + r - (1 << k))]);
  }
  double stage_time(const CostModel& cm, int i, int j, int first, int r);
  double steady_stage_time(const CostModel& cm, int i, int j, int first, int r, bool overlap);
  double boundary_time(const CostModel& cm, int j, int prev_last, int first, int r) const;
  bool fits(bool gpipe, int m_fixed, int i, int j, int first, int r) const;

 private:
  /// Adds op o's times and bytes to its unit's entries (before the prefix sums).
  void add_op(const Graph& g, const CostModel& cost, const LayerChain& chain, OpId o);
  void make_prefix_sums();
  void make_min_memory(const Cluster& cluster);
  double compute_time(int i, int j, int first, int r) const;
  double allreduce_time(const CostModel& cm, int i, int j, int first, int r);
  double allreduce_bytes_time(const CostModel& cm, double bytes, int first, int r);

 public:
  /// A folded stage [a, b) + [c, d) (FoldedCostTable::stage_time): its compute share and its
  /// communication (the all-reduce of both segments' gradients, its share of the bytes
  /// `borders` moves into and out of the set, over the link to a neighbouring slot), the
  /// longer of the two when `overlap` and the objective is the steady state, else their sum
  /// (the step: the all-reduce adds to the compute, the transfers run beside it). Infinity
  /// when it does not fit (every micro-batch's saved activations counted: a folded stage
  /// holds its first segment's until the last stages have run).
  double folded_stage_time(const CostModel& cm, const UnitBorders& borders, int a, int b, int c,
                           int d, int first, int r, bool overlap, bool steady, bool gpipe) {
    const double comp = compute_time(a, b, first, r) + compute_time(c, d, first, r);
    auto sum = [&](const std::vector<double>& x) {
      return x[size_t(b)] - x[size_t(a)] + x[size_t(d)] - x[size_t(c)];
    };
    uint64_t work = 0;
    for (int u = a; u < d; ++u) {
      if (u < b || u >= c) work = std::max(work, workspace[static_cast<size_t>(u)]);
    }
    const double frac = c < d || gpipe ? 1.0 : 0.25;
    if (sum(resident) + frac * sum(saved) / r + static_cast<double>(work) >
        static_cast<double>(capacity(first, r))) {
      return std::numeric_limits<double>::infinity();
    }
    const double ar = allreduce_bytes_time(cm, sum(grad), first, r);
    double in = 0, out = 0;
    borders.in_out(unit_mask(a, b, c, d), &in, &out);
    const int self = devices[static_cast<size_t>(first)];
    const int other =
        devices[static_cast<size_t>(first > 0 ? first - 1 : std::min(first + r, N - 1))];
    auto move = [&](int from, int to, double bytes) {
      return bytes > 0 && from != to
                 ? cm.transfer_time(from, to, static_cast<uint64_t>(std::ceil(bytes / r)))
                 : 0.0;
    };
    const double border = move(other, self, in) + move(self, other, out);
    if (!steady) return overlap ? std::max(comp + ar, border) : comp + ar + border;
    return overlap ? std::max(comp, ar + border) : comp + ar + border;
  }
};

PipelineCostData::PipelineCostData(const Problem& problem, const LayerChain& chain,
                                   const std::vector<int>& devs)
    : L(static_cast<int>(chain.units.size())), N(static_cast<int>(devs.size())), devices(devs) {
  comp.assign(static_cast<size_t>(N), std::vector<double>(static_cast<size_t>(L) + 1, 0));
  once = comp;
  grad.assign(static_cast<size_t>(L) + 1, 0);
  resident = grad;
  saved = grad;
  workspace.assign(static_cast<size_t>(L), 0);
  for (OpId o = 0; o < problem.graph.num_ops(); ++o) add_op(problem.graph, problem.cost, chain, o);
  make_prefix_sums();
  ChainCutBytes cuts = chain_cut_bytes(border_tensors(problem.graph, chain.unit_of), L);
  cross = std::move(cuts.forward);
  cross_back = std::move(cuts.back);
  trips = border_trips(problem.graph);
  make_min_memory(problem.cluster);
}

void PipelineCostData::add_op(const Graph& g, const CostModel& cost, const LayerChain& chain,
                              OpId o) {
  const Op& op = g.op(o);
  const size_t u = static_cast<size_t>(chain.unit_of[o]);
  const bool per_batch =
      (op.phase == Phase::kForward || op.phase == Phase::kBackward) && op.batch_scaled;
  const uint64_t bytes = g.op_bytes(o);
  for (int s = 0; s < N; ++s) {
    const double t = cost.op_time(op, bytes, devices[static_cast<size_t>(s)]);
    (per_batch ? comp : once)[static_cast<size_t>(s)][u + 1] += t;
  }
  resident[u + 1] += static_cast<double>(resident_bytes(g, o));
  workspace[u] = std::max(workspace[u], op.workspace_bytes);
  for (TensorId t : op.outputs) {
    const Tensor& ten = g.tensor(t);
    if (ten.is_param_grad) grad[u + 1] += static_cast<double>(ten.bytes);
    if (op.phase != Phase::kForward || op.category == OpCategory::kInput) continue;
    if (ten.batch_scaled) saved[u + 1] += static_cast<double>(ten.bytes);
  }
}

void PipelineCostData::make_prefix_sums() {
  for (int s = 0; s < N; ++s) {
    for (int u = 0; u < L; ++u) {
      comp[static_cast<size_t>(s)][static_cast<size_t>(u) + 1] +=
          comp[static_cast<size_t>(s)][static_cast<size_t>(u)];
      once[static_cast<size_t>(s)][static_cast<size_t>(u) + 1] +=
          once[static_cast<size_t>(s)][static_cast<size_t>(u)];
    }
  }
  for (int u = 0; u < L; ++u) {
    grad[static_cast<size_t>(u) + 1] += grad[static_cast<size_t>(u)];
    resident[static_cast<size_t>(u) + 1] += resident[static_cast<size_t>(u)];
    saved[static_cast<size_t>(u) + 1] += saved[static_cast<size_t>(u)];
  }
}

void PipelineCostData::make_min_memory(const Cluster& cluster) {
  min_memory.emplace_back();
  for (int a = 0; a < N; ++a) {
    min_memory[0].push_back(cluster.device(devices[static_cast<size_t>(a)]).spec.memory_bytes);
  }
  for (size_t k = 1; (1 << k) <= N; ++k) {
    const auto& prev = min_memory[k - 1];
    std::vector<uint64_t> level(static_cast<size_t>(N - (1 << k) + 1));
    for (size_t a = 0; a < level.size(); ++a) {
      level[a] = std::min(prev[a], prev[a + (size_t(1) << (k - 1))]);
    }
    min_memory.push_back(std::move(level));
  }
}

/// Layers [i, j)'s compute share on one of r replicas starting at `first`, with the work
/// every replica does once.
double PipelineCostData::compute_time(int i, int j, int first, int r) const {
  const auto& c = comp[static_cast<size_t>(first)];
  const auto& o = once[static_cast<size_t>(first)];
  return (c[static_cast<size_t>(j)] - c[static_cast<size_t>(i)]) / r +
         (o[static_cast<size_t>(j)] - o[static_cast<size_t>(i)]);
}

/// The all-reduce of layers [i, j)'s gradients among slots [first, first + r) (0 for r = 1).
double PipelineCostData::allreduce_time(const CostModel& cm, int i, int j, int first, int r) {
  return allreduce_bytes_time(cm, grad[static_cast<size_t>(j)] - grad[static_cast<size_t>(i)],
                              first, r);
}

double PipelineCostData::allreduce_bytes_time(const CostModel& cm, double g, int first, int r) {
  if (r <= 1) return 0;
  const size_t key = static_cast<size_t>(first) * N + static_cast<size_t>(r) - 1;
  auto it = groups.find(key);
  if (it == groups.end()) {
    // The simulator sorts sync groups by device id.
    std::vector<int> members(devices.begin() + first, devices.begin() + first + r);
    std::sort(members.begin(), members.end());
    it = groups.emplace(key, cm.make_group(members)).first;
  }
  return cm.group_collective_time(CollectiveKind::kAllReduce, it->second, static_cast<uint64_t>(g),
                                  SyncScheme::kAuto);
}

double PipelineCostData::stage_time(const CostModel& cm, int i, int j, int first, int r) {
  return compute_time(i, j, first, r) + allreduce_time(cm, i, j, first, r);
}

/// The steady-state occupancy of a replica of stage [i, j) on slots [first, first + r): its
/// compute share, and its communication (the all-reduce, its share of the boundary in from
/// the slot before and of the boundary out to the slot after), the longer of the two when
/// `overlap`, else their sum.
double PipelineCostData::steady_stage_time(const CostModel& cm, int i, int j, int first, int r,
                                           bool overlap) {
  double comm = allreduce_time(cm, i, j, first, r);
  if (i > 0 && first > 0) comm += boundary_time(cm, i, first - 1, first, r);
  if (j < L) comm += boundary_time(cm, j, first, std::min(first + r, N - 1), r);
  const double compute = compute_time(i, j, first, r);
  return overlap ? std::max(compute, comm) : compute + comm;
}

double PipelineCostData::boundary_time(const CostModel& cm, int j, int prev_last, int first,
                                       int r) const {
  if (prev_last < 0) return 0.0;
  const uint64_t bytes = static_cast<uint64_t>(std::ceil(cross[static_cast<size_t>(j)] / r));
  const int from = devices[static_cast<size_t>(prev_last)],
            to = devices[static_cast<size_t>(first)];
  if (gradients_as_sent) {
    const auto back = static_cast<uint64_t>(std::ceil(cross_back[static_cast<size_t>(j)] / r));
    return cm.transfer_time(from, to, bytes) + (back > 0 ? cm.transfer_time(to, from, back) : 0);
  }
  // Activations forward and their gradients backward over the same link pair.
  return trips * cm.transfer_time(from, to, bytes);
}

bool PipelineCostData::fits(bool gpipe, int m_fixed, int i, int j, int first, int r) const {
  // Fraction of the mini-batch's saved activations alive at once: GPipe keeps all m
  // micro-batches; 1F1B at most min(m, stages after + 1) of them (<= 1/4 when m = 4 s).
  double frac = 1;
  if (!gpipe) {
    const int after = N - first - r;  // slots after the stage bound the stages after it
    frac = m_fixed > 0 ? std::min(1.0, static_cast<double>(after + 1) / m_fixed) : 0.25;
  }
  uint64_t work = 0;
  for (int u = i; u < j; ++u) work = std::max(work, workspace[static_cast<size_t>(u)]);
  const double need = (resident[static_cast<size_t>(j)] - resident[static_cast<size_t>(i)]) +
                      frac * (saved[static_cast<size_t>(j)] - saved[static_cast<size_t>(i)]) / r +
                      static_cast<double>(work);
  return need <= static_cast<double>(capacity(first, r));
}

}  // namespace

PipelineCostTable make_pipeline_cost_table(const Problem& problem, const LayerChain& chain,
                                           const std::vector<int>& devices,
                                           const PipelinePlacerOptions& options) {
  auto D = std::make_shared<PipelineCostData>(problem, chain, devices);
  const int N = D->N;
  PipelineCostTable t;
  t.num_layers = D->L;
  t.num_devices = N;
  t.host_start.assign(static_cast<size_t>(N), 0);
  for (int s = 0; s < N; ++s) {
    const int h = problem.cluster.device(devices[static_cast<size_t>(s)]).host;
    t.host_start[static_cast<size_t>(s)] =
        s == 0 || problem.cluster.device(devices[static_cast<size_t>(s) - 1]).host != h;
  }
  t.blocking.assign(static_cast<size_t>(N), 0);
  bool any_blocking = false;
  for (size_t s = 0; s < t.blocking.size(); ++s) {
    t.blocking[s] = !problem.cluster.device(devices[s]).spec.overlap_transfers;
    any_blocking = any_blocking || t.blocking[s];
  }
  if (!any_blocking) t.blocking.clear();
  const CostModel* cm = &problem.cost;
  if (options.objective == Objective::kThroughput) {
    // The steady state counts a stage's boundaries in its own occupancy, and the gradients
    // as the backward ops send them.
    D->gradients_as_sent = true;
    std::vector<char> blocking = t.blocking;
    blocking.resize(static_cast<size_t>(N), 0);
    t.blocking.clear();
    t.stage_time = [D, cm, blocking](int i, int j, int first, int r) {
      return D->steady_stage_time(*cm, i, j, first, r, !blocking[static_cast<size_t>(first)]);
    };
  } else {
    t.stage_time = [D, cm](int i, int j, int first, int r) {
      return D->stage_time(*cm, i, j, first, r);
    };
  }
  t.boundary_time = [D, cm](int j, int prev_last, int first, int r) {
    return D->boundary_time(*cm, j, prev_last, first, r);
  };
  const bool gpipe = options.schedule == PipelineSchedule::kGPipe;
  const int m_fixed = options.micro_batches;
  t.fits = [D, gpipe, m_fixed](int i, int j, int first, int r) {
    return D->fits(gpipe, m_fixed, i, j, first, r);
  };
  return t;
}

FoldedCostTable make_folded_cost_table(const Problem& problem, const LayerChain& chain,
                                       const std::vector<int>& devices,
                                       const PipelinePlacerOptions& options) {
  auto D = std::make_shared<PipelineCostData>(problem, chain, devices);
  auto borders = std::make_shared<UnitBorders>(unit_borders(problem.graph, chain));
  std::vector<char> overlap(devices.size());
  for (size_t s = 0; s < devices.size(); ++s) {
    overlap[s] = problem.cluster.device(devices[s]).spec.overlap_transfers;
  }
  const CostModel* cm = &problem.cost;
  const bool steady = options.objective == Objective::kThroughput;
  const bool gpipe = options.schedule == PipelineSchedule::kGPipe;
  FoldedCostTable t;
  t.num_layers = D->L;
  t.num_devices = D->N;
  t.stage_time = [D, borders, cm, overlap, steady, gpipe](int a, int b, int c, int d, int first,
                                                          int r) {
    return D->folded_stage_time(*cm, *borders, a, b, c, d, first, r,
                                overlap[static_cast<size_t>(first)] != 0, steady, gpipe);
  };
  return t;
}

SimResult choose_micro_batches(const Problem& problem, Plan* plan, int64_t per_replica, int fixed) {
  // 4 x stages by default (also 2x and 8x tried in the simulator), each rounded down to a
  // divisor of per_replica so that every replica of every stage gets a whole number of
  // samples per micro-batch.
  const int s = static_cast<int>(plan->pipeline.stages.size());
  std::vector<int> candidates;
  if (fixed > 0) {
    candidates = {fixed};
  } else {
    for (int m : {4 * s, 2 * s, 8 * s}) {
      if (per_replica > 0) m = static_cast<int>(divisor_at_most(per_replica, m));
      m = std::max(1, m);
      if (std::find(candidates.begin(), candidates.end(), m) == candidates.end())
        candidates.push_back(m);
    }
    // A batch with few divisors (19, 2 x 23) can round every count below the stage count,
    // where the pipeline never fills: then the smallest divisor from 4 x stages up is tried
    // too, when it is at most 16 x stages.
    const bool fills = *std::max_element(candidates.begin(), candidates.end()) >= s;
    const int64_t up = per_replica > 0 && !fills ? divisor_at_least(per_replica, 4 * s) : 0;
    if (up > 0 && up <= 16 * s) candidates.push_back(static_cast<int>(up));
  }
  plan->pipeline.micro_batches = candidates[0];
  SimOptions so;
  so.critical_path = false;
  SimResult res = problem.simulator.run(*plan, so);
  for (size_t c = 1; c < candidates.size(); ++c) {
    Plan other = *plan;
    other.pipeline.micro_batches = candidates[c];
    SimResult r2 = problem.simulator.run(other, so);
    if ((res.oom && !r2.oom) || (res.oom == r2.oom && r2.step_time < res.step_time)) {
      *plan = std::move(other);
      res = std::move(r2);
    }
  }
  // More, smaller micro-batches while it runs out of memory.
  for (int tries = 0; res.oom && tries < 4; ++tries) {
    int next = plan->pipeline.micro_batches * 2;
    if (per_replica > 0) {
      next = static_cast<int>(divisor_at_least(per_replica, next));
      if (next == 0) break;
    }
    Plan more = *plan;
    more.pipeline.micro_batches = next;
    SimResult r2 = problem.simulator.run(more, so);
    *plan = std::move(more);
    res = std::move(r2);
  }
  return res;
}

namespace {

/// Stages as lists of chain units on consecutive device slots.
struct StagedUnits {
  std::vector<std::vector<int>> units;  ///< per stage
  std::vector<int> first, replicas;     ///< per stage: first slot, device count
};

/// Appends a stage of units [begin, end) and [tail_begin, tail_end) on `replicas` slots from
/// `first`.
void add_stage(StagedUnits* out, int begin, int end, int tail_begin, int tail_end, int first,
               int replicas) {
  out->units.emplace_back();
  for (int u = begin; u < end; ++u) out->units.back().push_back(u);
  for (int u = tail_begin; u < tail_end; ++u) out->units.back().push_back(u);
  out->first.push_back(first);
  out->replicas.push_back(replicas);
}

StagedUnits staged_units(const PipelineDpSolution& sol) {
  StagedUnits out;
  for (const PipelineStageChoice& c : sol.stages)
    add_stage(&out, c.begin, c.end, c.end, c.end, c.first, c.replicas);
  return out;
}

StagedUnits staged_units(const FoldedSolution& sol) {
  StagedUnits out;
  for (const FoldedStageChoice& c : sol.stages)
    add_stage(&out, c.begin, c.end, c.tail_begin, c.tail_end, c.first, c.replicas);
  return out;
}

/// A pipeline's plan before its micro-batches are chosen.
struct StagedPlan {
  Plan plan;
  int64_t per_replica = 0;  ///< samples per replica of every stage (0: not a whole number)
};

/// The plan of `stages` over `chain` (placement filled by stage), validated.
StagedPlan plan_of_stages(const Problem& problem, const LayerChain& chain,
                          const std::vector<int>& devices, const PipelinePlacerOptions& options,
                          const StagedUnits& stages) {
  const Graph& g = problem.graph;
  StagedPlan out;
  Plan& plan = out.plan;
  plan.graph_name = g.name();
  plan.method = "pipeline-dp";
  plan.pipeline.schedule = options.schedule;
  std::vector<int> stage_of_unit(chain.units.size(), 0);
  int64_t lcm_r = 1;
  for (size_t s = 0; s < stages.units.size(); ++s) {
    PipelineStage st;
    for (int u : stages.units[s]) {
      stage_of_unit[static_cast<size_t>(u)] = static_cast<int>(s);
      const auto& ops = chain.units[static_cast<size_t>(u)];
      st.ops.insert(st.ops.end(), ops.begin(), ops.end());
    }
    for (int r = 0; r < stages.replicas[s]; ++r)
      st.devices.push_back(devices[static_cast<size_t>(stages.first[s] + r)]);
    lcm_r = std::lcm(lcm_r, static_cast<int64_t>(stages.replicas[s]));
    plan.pipeline.stages.push_back(std::move(st));
  }
  plan.placement.resize(g.num_ops());
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const int s = stage_of_unit[static_cast<size_t>(chain.unit_of[o])];
    plan.placement[o] = plan.pipeline.stages[static_cast<size_t>(s)].devices[0];
  }
  const int64_t batch = g.batch_size();
  out.per_replica = batch > 0 && batch % lcm_r == 0 ? batch / lcm_r : 0;
  plan.validate(g, problem.cluster);
  return out;
}

/// Chooses the micro-batches of `staged` by simulation and records the prediction; returns
/// that simulation.
SimResult simulate_staged(const Problem& problem, const PipelinePlacerOptions& options,
                          StagedPlan* staged) {
  SimResult res =
      choose_micro_batches(problem, &staged->plan, staged->per_replica, options.micro_batches);
  record_prediction(res, &staged->plan);
  return res;
}

/// Whether the simulator runs `a` and `b` alike: the same devices and the same set of ops
/// per stage, every op on the same device (the order of a stage's ops does not matter to it).
bool same_stages(const Plan& a, const Plan& b) {
  if (a.placement != b.placement || a.pipeline.stages.size() != b.pipeline.stages.size())
    return false;
  for (size_t s = 0; s < a.pipeline.stages.size(); ++s) {
    const PipelineStage &x = a.pipeline.stages[s], &y = b.pipeline.stages[s];
    if (x.devices != y.devices || x.ops.size() != y.ops.size()) return false;
    std::vector<OpId> xs = x.ops, ys = y.ops;
    std::sort(xs.begin(), xs.end());
    std::sort(ys.begin(), ys.end());
    if (xs != ys) return false;
  }
  return true;
}

/// The time `options.objective` compares a simulated plan by; under throughput, the better
/// of the plan and its one-micro-batch run (as the portfolio streams it).
double objective_score(const Problem& problem, const PipelinePlacerOptions& options,
                       const Plan& plan, const SimResult& res) {
  if (res.oom) return std::numeric_limits<double>::infinity();
  Plan streamed = plan;
  SimResult r = res;
  SimOptions so;
  so.critical_path = false;
  stream_whole_batches(options.objective, problem.simulator, problem.cluster, so, &streamed, &r);
  return objective_time(options.objective, r, problem.cluster);
}

/// Steps of the folded DP (pipeline_fold.h) before its chain is coarsened further.
constexpr long long kFoldSteps = 4'000'000;

/// The folded pipeline's plan (`fold`) before its micro-batches are chosen, or false when no
/// folded configuration fits.
bool folded_plan(const Problem& problem, const std::vector<int>& devices,
                 const PipelineDpOptions& dp_options, const PipelinePlacerOptions& options,
                 StagedPlan* plan) {
  const std::vector<int> counts =
      pipeline_replica_counts(static_cast<int>(devices.size()), dp_options);
  int units = std::min(std::max(1, options.max_units), options.fold_units);
  while (units > 4 && folded_pipeline_steps(units, static_cast<int>(devices.size()),
                                            static_cast<int>(counts.size())) > kFoldSteps) {
    units = units * 3 / 4;
  }
  // One unit per op (not per layer): a fold may need to split a layer's ops.
  const LayerChain chain = build_layer_chain(problem.graph, units, /*per_op=*/true);
  const FoldedCostTable table = make_folded_cost_table(problem, chain, devices, options);
  const FoldedSolution sol = solve_folded_pipeline(table, counts);
  if (!sol.feasible()) return false;
  *plan = plan_of_stages(problem, chain, devices, options, staged_units(sol));
  return true;
}

/// With `fold`: the folded plan replaces *plan (simulated as *sim) when it simulates better
/// by the objective. A folded plan of the same stages is not simulated: the simulator would
/// run it as it ran *plan, so it could not be better.
void keep_better_fold(const Problem& problem, const std::vector<int>& devices,
                      const PipelineDpOptions& dp_options, const PipelinePlacerOptions& options,
                      Plan* plan, SimResult* sim) {
  StagedPlan folded;
  if (!folded_plan(problem, devices, dp_options, options, &folded) ||
      same_stages(folded.plan, *plan))
    return;
  SimResult folded_sim = simulate_staged(problem, options, &folded);
  if (objective_score(problem, options, folded.plan, folded_sim) <
      objective_score(problem, options, *plan, *sim)) {
    *plan = std::move(folded.plan);
    *sim = std::move(folded_sim);
  }
}

}  // namespace

Plan pipeline_dp_plan(const Problem& problem, const PipelinePlacerOptions& options,
                      PipelineDpSolution* solution, SimResult* sim) {
  const Graph& g = problem.graph;
  const std::vector<int> devices = problem_devices(problem);
  PLACER_CHECK(!devices.empty(), "pipeline-dp: no devices to place on");
  // Replica counts that split a micro-batch evenly: r | B / m for a fixed m, else r | B (m
  // is then chosen below so that B / m is a multiple of every stage's r).
  const int64_t batch = g.batch_size();
  PipelineDpOptions dp_options = options.dp;
  if (batch > 0 && dp_options.replicas_divide == 0) {
    const int64_t m = options.micro_batches;
    dp_options.replicas_divide = m <= 0 ? batch : (batch % m == 0 ? batch / m : 1);
  }
  // The search budget: steps = units^2 / 2 x slots x replica counts.
  const int64_t budget = std::max<int64_t>(options.max_dp_steps, 1);
  const auto slot_steps = [&] {
    return static_cast<int64_t>(devices.size()) *
           static_cast<int64_t>(pipeline_replica_counts(static_cast<int>(devices.size()),
                                                        dp_options).size());
  };
  int max_units = std::max(1, options.max_units);
  if (int64_t(max_units) * max_units / 2 * slot_steps() > budget) {
    dp_options.power_of_two_replicas = true;
  }
  while (max_units > 4 && int64_t(max_units) * max_units / 2 * slot_steps() > budget) {
    max_units = max_units * 3 / 4;
  }
  const LayerChain chain = build_layer_chain(g, max_units);
  PipelineCostTable table = make_pipeline_cost_table(problem, chain, devices, options);
  if (!options.cut_groups.empty()) {  // stages only between the proposed cuts
    std::vector<char> cut(chain.units.size() + 1, 0);
    for (int c : cuts_from_groups(g, chain, options.cut_groups)) cut[static_cast<size_t>(c)] = 1;
    table.stage_time = [cut, free = std::move(table.stage_time)](int i, int j, int first, int r) {
      return cut[static_cast<size_t>(i)] && cut[static_cast<size_t>(j)] ? free(i, j, first, r) : kInf;
    };
  }
  const PipelineDpSolution sol = solve_pipeline_dp(table, dp_options);
  if (!sol.feasible()) {
    throw Error(format_context("", "pipeline-dp",
                               "graph '" + g.name() + "' fits on no pipeline of " +
                                   std::to_string(devices.size()) +
                                   " device(s): every stage configuration exceeds device memory"));
  }
  if (solution) *solution = sol;
  StagedPlan staged = plan_of_stages(problem, chain, devices, options, staged_units(sol));
  SimResult res = simulate_staged(problem, options, &staged);
  if (options.fold && options.cut_groups.empty())
    keep_better_fold(problem, devices, dp_options, options, &staged.plan, &res);
  if (sim) *sim = std::move(res);
  return std::move(staged.plan);
}

}  // namespace placer
