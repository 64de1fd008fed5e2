// partition-dp over Tofu-style recursive halving: one dim per halving level and op.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "agents/classical/partition_chain.h"
#include "agents/classical/partition_dp.h"
#include "src/graph/algorithms.h"
#include "src/util/error.h"

namespace placer {

namespace {

// 2^(levels before `skip` whose dim satisfies `shards`).
template <typename Pred>
double other_div(const std::vector<int>& lv, size_t skip, Pred shards) {
  double d = 1;
  // Only the levels before `skip` shrink level skip's data (see simulator/simulator.cpp).
  for (size_t l = 0; l < skip && l < lv.size(); ++l) d *= shards(lv[l]) ? 2 : 1;
  return d;
}

// Every vector of L dims from `dims` whose repeated splits stay valid.
void enumerate(const Tensor* out, const std::vector<int>& dims, size_t L, std::vector<int>* cur,
               std::vector<std::vector<int>>* all) {
  if (cur->size() == L) {
    all->push_back(*cur);
    return;
  }
  for (int d : dims) {
    cur->push_back(d);
    const size_t ways = size_t(1) << std::count(cur->begin(), cur->end(), d);
    if (out == nullptr ? d == OpPartition::kReduceDim : splittable(*out, d, ways)) {
      enumerate(out, dims, L, cur, all);
    }
    cur->pop_back();
  }
}

}  // namespace

LevelChain make_level_chain(const Problem& problem, const std::vector<int>& devices,
                            const PartitionPlacerOptions& options) {
  const Graph& g = problem.graph;
  const CostModel& cost = problem.cost;
  const size_t k = devices.size();
  size_t L = 0;
  while ((size_t(1) << L) < k) ++L;
  PLACER_CHECK(k >= 2 && (size_t(1) << L) == k,
               "partition-dp: recursive halving needs 2^L devices, got " << k);
  const int dev0 = devices[0];
  std::vector<CollectiveGroup> pair(L);
  for (size_t l = 0; l < L; ++l) pair[l] = cost.make_group({dev0, devices[k >> (l + 1)]});
  auto coll = [&](CollectiveKind kind, size_t l, double bytes) {
    return chain_collective_time(cost, kind, pair[l], bytes);
  };
  const std::vector<std::vector<OpId>> derived = derived_ops(g);

  LevelChain chain;
  for (OpId o : g.topo_order()) {
    const Op& op = g.op(o);
    if (!is_chain_op(op)) continue;
    // Candidate dims per level, as make_partition_chain offers them for a 2-way split.
    const std::vector<int> dims = chain_split_dims(g, op, 2);
    if (dims.empty()) continue;
    const Tensor* out = op.outputs.empty() ? nullptr : &g.tensor(op.outputs[0]);
    std::vector<std::vector<int>> vecs;
    std::vector<int> cur;
    enumerate(out, dims, L, &cur, &vecs);
    if (vecs.empty()) continue;

    double out_bytes = 0, in_grad = 0, param_grad = 0;
    for (TensorId t : op.outputs) out_bytes += static_cast<double>(g.tensor(t).bytes);
    const double fwd = cost.op_time(op, g.op_bytes(o), dev0, 1.0 / k);
    double full = cost.op_time(op, g.op_bytes(o), dev0);
    double bwd = 0;
    for (OpId d : derived[o]) {
      const Op& dop = g.op(d);
      full += cost.op_time(dop, g.op_bytes(d), dev0);
      if (dop.phase == Phase::kBackward) {
        bwd += cost.op_time(dop, g.op_bytes(d), dev0, 1.0 / k);
        for (TensorId t : dop.outputs) {
          (g.tensor(t).is_param_grad ? param_grad : in_grad) +=
              static_cast<double>(g.tensor(t).bytes);
        }
      }
    }
    auto unary_of = [&](const std::vector<int>& lv) {
      if (lv.empty()) return full;
      double nonbatch = 1;
      for (int d : lv) nonbatch *= d != 0 ? 2 : 1;
      double c = fwd + bwd;
      for (OpId d : derived[o]) {
        if (g.op(d).phase != Phase::kBackward) {
          c += cost.op_time(g.op(d), g.op_bytes(d), dev0, 1.0 / nonbatch);
        }
      }
      for (size_t l = 0; l < lv.size(); ++l) {
        const int d = lv[l];
        // Forward: outputs sliced by non-contraction levels; partial sums on a contraction one.
        const double ob =
            out_bytes / other_div(lv, l, [](int x) { return x != OpPartition::kReduceDim; });
        c += coll(d == OpPartition::kReduceDim ? CollectiveKind::kAllReduce
                                               : CollectiveKind::kAllGather,
                  l, ob);
        // Backward: input grads sliced by batch / contraction levels; parameter gradients
        // all-reduced on batch levels, sharded by the others.
        const double ib = in_grad / other_div(lv, l, [](int x) { return x <= 0; });
        c += coll(d >= 1 ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather, l, ib);
        if (d == 0) c += coll(CollectiveKind::kAllReduce, l, param_grad / nonbatch);
      }
      return c;
    };
    std::vector<std::pair<double, size_t>> ranked;
    for (size_t v = 0; v < vecs.size(); ++v) ranked.push_back({unary_of(vecs[v]), v});
    // Prune: keep the cheapest vectors (stable: ties keep enumeration order).
    const size_t keep = std::max<size_t>(1, static_cast<size_t>(options.max_level_choices));
    if (ranked.size() > keep) {
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      ranked.resize(keep);
      std::sort(ranked.begin(), ranked.end(),
                [](const auto& a, const auto& b) { return a.second < b.second; });
    }
    std::vector<std::vector<int>> choices;
    std::vector<double> unary;
    for (const auto& r : ranked) {
      choices.push_back(vecs[r.second]);
      unary.push_back(r.first);
    }
    if (options.allow_unsplit) {
      choices.push_back({});
      unary.push_back(full);
    }

    std::vector<std::vector<double>> edge;
    if (!chain.ops.empty()) {
      const double bytes = bytes_handed(g, chain.ops.back(), o);
      const double spread = spread_time(cost, devices, bytes);
      const std::vector<std::vector<int>>& pc = chain.levels.back();
      edge.assign(pc.size(), std::vector<double>(choices.size(), 0));
      for (size_t a = 0; a < pc.size(); ++a) {
        for (size_t b = 0; b < choices.size(); ++b) {
          const std::vector<int>& x = pc[a];
          const std::vector<int>& y = choices[b];
          if (x == y) continue;
          if (x.empty() || y.empty()) {
            edge[a][b] = spread;
            continue;
          }
          // Tofu: a level that changes its dim re-lays out its pair's share (bytes / 2^l),
          // forward and (its gradient) backward.
          if (!options.relayout_cost) continue;
          for (size_t l = 0; l < L; ++l) {
            if (x[l] != y[l]) {
              const double share = bytes / static_cast<double>(size_t(1) << l);
              edge[a][b] += 2 * coll(CollectiveKind::kReduceScatter, l, share);
            }
          }
        }
      }
    }
    chain.ops.push_back(o);
    chain.levels.push_back(std::move(choices));
    chain.table.unary.push_back(std::move(unary));
    chain.table.edge.push_back(std::move(edge));
  }
  return chain;
}

}  // namespace placer
