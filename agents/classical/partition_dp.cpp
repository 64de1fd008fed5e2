#include "agents/classical/partition_dp.h"

#include <algorithm>

#include "agents/classical/partition_chain.h"
#include "agents/common/prediction.h"
#include "src/graph/algorithms.h"
#include "src/util/error.h"

namespace placer {

namespace {

// Mirrors Plan::validate: only these categories have a contraction dim to split.
bool has_reduce_dim(OpCategory c) {
  return c == OpCategory::kMatMul || c == OpCategory::kConv || c == OpCategory::kReduction;
}

}  // namespace

bool splittable(const Tensor& t, int dim, size_t ways) {
  if (dim == OpPartition::kReduceDim) return true;
  if (t.shape.empty()) return dim == 0;  // shape unknown: only the batch dim is safe
  if (static_cast<size_t>(dim) >= t.shape.size()) return false;
  const int64_t size = t.shape[static_cast<size_t>(dim)];
  return size <= 0 || static_cast<size_t>(size) >= ways;
}

bool is_chain_op(const Op& op) {
  return op.phase == Phase::kForward && op.category != OpCategory::kInput && op.flops > 0;
}

std::vector<int> chain_split_dims(const Graph& g, const Op& op, size_t ways) {
  std::vector<int> dims;
  if (!op.outputs.empty()) {
    const Tensor& out = g.tensor(op.outputs[0]);
    if (splittable(out, 0, ways)) dims.push_back(0);
    const int rank = static_cast<int>(out.shape.size());
    const int ch = op.category == OpCategory::kConv ? 1 : rank - 1;
    if (rank >= 2 && ch >= 1 && splittable(out, ch, ways)) dims.push_back(ch);
  }
  if (has_reduce_dim(op.category)) dims.push_back(OpPartition::kReduceDim);
  return dims;
}

double chain_collective_time(const CostModel& cost, CollectiveKind kind,
                             const CollectiveGroup& group, double bytes) {
  return bytes > 0 ? cost.group_collective_time(kind, group, static_cast<uint64_t>(bytes),
                                                SyncScheme::kAuto)
                   : 0.0;
}

double bytes_handed(const Graph& g, OpId from, OpId to) {
  double bytes = 0;
  for (TensorId t : g.op(from).outputs) {
    for (OpId c : g.consumers(t)) {
      if (c == to) bytes += static_cast<double>(g.tensor(t).bytes);
    }
  }
  return bytes;
}

double spread_time(const CostModel& cost, const std::vector<int>& devices, double bytes) {
  double spread = 0;
  for (size_t m = 1; m < devices.size() && bytes > 0; ++m) {
    spread = std::max(spread,
                      cost.transfer_time(devices[0], devices[m], static_cast<uint64_t>(bytes)));
  }
  return spread;
}

double partition_cost(const PartitionCostTable& t, const std::vector<int>& choice) {
  double total = 0;
  for (size_t i = 0; i < choice.size(); ++i) {
    total += t.unary[i][static_cast<size_t>(choice[i])];
    if (i > 0)
      total += t.edge[i][static_cast<size_t>(choice[i - 1])][static_cast<size_t>(choice[i])];
  }
  return total;
}

PartitionDpSolution solve_partition_dp(const PartitionCostTable& t) {
  PartitionDpSolution sol;
  const size_t n = t.unary.size();
  if (n == 0) {
    sol.cost = 0;
    return sol;
  }
  std::vector<std::vector<double>> B(n);
  std::vector<std::vector<int>> from(n);
  B[0] = t.unary[0];
  from[0].assign(B[0].size(), -1);
  for (size_t i = 1; i < n; ++i) {
    const size_t c = t.unary[i].size();
    B[i].assign(c, std::numeric_limits<double>::infinity());
    from[i].assign(c, -1);
    for (size_t b = 0; b < c; ++b) {
      for (size_t a = 0; a < B[i - 1].size(); ++a) {
        const double v = B[i - 1][a] + t.edge[i][a][b];
        if (v < B[i][b]) {
          B[i][b] = v;
          from[i][b] = static_cast<int>(a);
        }
      }
      B[i][b] += t.unary[i][b];
    }
  }
  size_t best = 0;
  for (size_t b = 1; b < B[n - 1].size(); ++b) {
    if (B[n - 1][b] < B[n - 1][best]) best = b;
  }
  sol.cost = B[n - 1][best];
  sol.choice.assign(n, 0);
  int c = static_cast<int>(best);
  for (size_t i = n; i-- > 0;) {
    sol.choice[i] = c;
    c = from[i][static_cast<size_t>(c)];
  }
  return sol;
}

PartitionChain make_partition_chain(const Problem& problem, const std::vector<int>& devices,
                                    const PartitionPlacerOptions& options) {
  const Graph& g = problem.graph;
  const CostModel& cost = problem.cost;
  const size_t k = devices.size();
  PLACER_CHECK(k >= 2, "partition-dp: needs at least 2 devices, got " << k);
  const int dev0 = devices[0];
  const CollectiveGroup group = cost.make_group(devices);
  auto coll = [&](CollectiveKind kind, double bytes) {
    return chain_collective_time(cost, kind, group, bytes);
  };
  const std::vector<std::vector<OpId>> derived = derived_ops(g);

  PartitionChain chain;
  for (OpId o : g.topo_order()) {
    const Op& op = g.op(o);
    if (!is_chain_op(op)) continue;
    std::vector<int> dims = chain_split_dims(g, op, k);
    if (dims.empty()) continue;
    if (options.allow_unsplit) dims.push_back(kNoSplit);

    double out_bytes = 0, in_grad = 0, param_grad = 0;
    for (TensorId t : op.outputs) out_bytes += static_cast<double>(g.tensor(t).bytes);
    double fwd = cost.op_time(op, g.op_bytes(o), dev0, 1.0 / k);
    const double fwd_full = cost.op_time(op, g.op_bytes(o), dev0);
    double bwd = 0, bwd_full = 0, opt_shard = 0, opt_full = 0;
    for (OpId d : derived[o]) {
      const Op& dop = g.op(d);
      if (dop.phase == Phase::kBackward) {
        bwd += cost.op_time(dop, g.op_bytes(d), dev0, 1.0 / k);
        bwd_full += cost.op_time(dop, g.op_bytes(d), dev0);
        for (TensorId t : dop.outputs) {
          (g.tensor(t).is_param_grad ? param_grad : in_grad) +=
              static_cast<double>(g.tensor(t).bytes);
        }
      } else {
        opt_shard += cost.op_time(dop, g.op_bytes(d), dev0, 1.0 / k);
        opt_full += cost.op_time(dop, g.op_bytes(d), dev0);
      }
    }
    std::vector<double> unary;
    for (int dim : dims) {
      double c = fwd + bwd;
      if (dim == kNoSplit) {  // whole op on the first device, no collectives
        c = fwd_full + bwd_full + opt_full;
      } else if (dim == 0) {  // batch: gather outputs and input grads, all-reduce parameter grads
        c += opt_full + coll(CollectiveKind::kAllGather, out_bytes) +
             coll(CollectiveKind::kAllGather, in_grad) +
             coll(CollectiveKind::kAllReduce, param_grad);
      } else if (dim == OpPartition::kReduceDim) {  // partial sums forward
        c += opt_shard + coll(CollectiveKind::kAllReduce, out_bytes) +
             coll(CollectiveKind::kAllGather, in_grad);
      } else {  // output channel: gather outputs, input grads are partial sums
        c += opt_shard + coll(CollectiveKind::kAllGather, out_bytes) +
             coll(CollectiveKind::kAllReduce, in_grad);
      }
      unary.push_back(c);
    }
    // Edge to the previous node of the chain: the tensors it hands to this op.
    std::vector<std::vector<double>> edge;
    if (!chain.ops.empty()) {
      const double bytes = bytes_handed(g, chain.ops.back(), o);
      const std::vector<int>& pd = chain.dims.back();
      // Tofu's re-layout: an all-to-all of the tensor forward and of its gradient backward,
      // costed as a reduce-scatter ((k-1)/k of the bytes through each device).
      const double relayout =
          options.relayout_cost ? 2 * coll(CollectiveKind::kReduceScatter, bytes) : 0.0;
      // Between an unsplit op and a split one the simulator sends the whole tensor from the
      // first device to the others (forward or, for the gradient, backward): one transfer
      // time on per-pair links.
      const double spread = spread_time(cost, devices, bytes);
      edge.assign(pd.size(), std::vector<double>(dims.size(), 0));
      for (size_t a = 0; a < pd.size(); ++a) {
        for (size_t b = 0; b < dims.size(); ++b) {
          if (pd[a] == dims[b]) continue;
          edge[a][b] = (pd[a] == kNoSplit || dims[b] == kNoSplit) ? spread : relayout;
        }
      }
    }
    chain.ops.push_back(o);
    chain.dims.push_back(std::move(dims));
    chain.table.unary.push_back(std::move(unary));
    chain.table.edge.push_back(std::move(edge));
  }
  return chain;
}

namespace {

Plan simulate_into(const Problem& problem, Plan plan) {
  plan.validate(problem.graph, problem.cluster);
  predict(problem, &plan);
  return plan;
}

bool better(const Plan& a, const Plan& b) {
  if (a.predicted.oom != b.predicted.oom) return !a.predicted.oom;
  return a.predicted.step_time < b.predicted.step_time;
}

}  // namespace

Plan partition_dp_plan(const Problem& problem, const PartitionPlacerOptions& options,
                       PartitionDpSolution* solution) {
  const Graph& g = problem.graph;
  const std::vector<int> devices = problem_devices(problem);
  PLACER_CHECK(!devices.empty(), "partition-dp: no devices to place on");
  const Plan base =
      placement_plan(problem, std::vector<int>(g.num_ops(), devices[0]), "partition-dp");
  if (devices.size() < 2) {
    if (solution) *solution = PartitionDpSolution{0, {}};
    return simulate_into(problem, base);
  }
  // Degrees: all devices, or (recursive halving) the first 2, 4, 8, ... of them; the DP
  // runs for each and the simulator keeps the fastest plan.
  std::vector<size_t> degrees = {devices.size()};
  if (options.try_smaller_degrees) {
    for (size_t k = devices.size() / 2; k >= 2; k /= 2) degrees.push_back(k);
  }
  // Each degree twice when allowed: every op split (the classical method) and ops allowed to
  // stay whole; the simulator keeps the fastest.
  std::vector<bool> unsplit = {false};
  if (options.allow_unsplit) unsplit.push_back(true);
  Plan best;
  // Runs the DP of make_chain(problem, group, options with allow_unsplit = u) for each u,
  // adds the partitions of its solution to `base` (add_partitions(chain, sol, &plan)) and
  // keeps the plan the simulator finds fastest.
  auto solve_each = [&](const std::vector<int>& group, auto make_chain, auto add_partitions) {
    for (bool u : unsplit) {
      PartitionPlacerOptions o = options;
      o.allow_unsplit = u;
      const auto chain = make_chain(problem, group, o);
      const PartitionDpSolution sol = solve_partition_dp(chain.table);
      Plan plan = base;
      add_partitions(chain, sol, &plan);
      plan = simulate_into(problem, std::move(plan));
      if (!best.predicted.valid || better(plan, best)) {
        best = std::move(plan);
        if (solution) *solution = sol;
      }
    }
  };
  for (size_t k : degrees) {
    const std::vector<int> group(devices.begin(), devices.begin() + static_cast<long>(k));
    solve_each(group, make_partition_chain,
               [&](const PartitionChain& chain, const PartitionDpSolution& sol, Plan* plan) {
                 for (size_t i = 0; i < chain.ops.size(); ++i) {
                   const int dim = chain.dims[i][static_cast<size_t>(sol.choice[i])];
                   if (dim == kNoSplit) continue;
                   OpPartition part;
                   part.op = chain.ops[i];
                   part.dim = dim;
                   part.devices = group;
                   plan->partitions.push_back(std::move(part));
                 }
               });
    // Tofu's recursive halving on 2^L devices: a dim per level and op.
    size_t L = 0;
    while ((size_t(1) << L) < k) ++L;
    if (!options.try_levels || (size_t(1) << L) != k || L < 2 ||
        L > static_cast<size_t>(options.max_levels)) {
      continue;
    }
    solve_each(group, make_level_chain,
               [&](const LevelChain& chain, const PartitionDpSolution& sol, Plan* plan) {
                 for (size_t i = 0; i < chain.ops.size(); ++i) {
                   const std::vector<int>& lv = chain.levels[i][static_cast<size_t>(sol.choice[i])];
                   if (lv.empty()) continue;
                   plan->partitions.push_back(OpPartition{chain.ops[i], lv[0], group, lv});
                 }
               });
  }
  return best;
}

}  // namespace placer
