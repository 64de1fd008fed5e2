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

/// An op's times and bytes that its level vectors' costs are made of.
struct OpLevelCosts {
  double out_bytes = 0, in_grad = 0, param_grad = 0;
  double fwd = 0;   ///< the forward op on 1/k of its work
  double full = 0;  ///< the op and its derived ops unsplit
  double bwd = 0;   ///< its backward ops on 1/k of their work
};

/// The costs of splitting chain ops by recursive halving over 2^L devices: the collectives of
/// level l run between device 0 and its level-l partner.
class LevelCostModel {
 public:
  LevelCostModel(const Problem& problem, const std::vector<int>& devices, size_t L,
                 const PartitionPlacerOptions& options)
      : g_(problem.graph),
        cost_(problem.cost),
        devices_(devices),
        options_(options),
        k_(devices.size()),
        L_(L),
        dev0_(devices[0]),
        derived_(derived_ops(problem.graph)) {
    for (size_t l = 0; l < L; ++l)
      pair_.push_back(cost_.make_group({dev0_, devices[k_ >> (l + 1)]}));
  }

  OpLevelCosts op_costs(OpId o) const;
  /// The time of op o (and its derived ops) split by the level vector `lv` (empty: unsplit).
  double unary(OpId o, const OpLevelCosts& oc, const std::vector<int>& lv) const;
  /// edge[a][b]: the cost of handing prev's output over from its choice a to o's choice b.
  std::vector<std::vector<double>> edges(OpId prev, const std::vector<std::vector<int>>& from,
                                         OpId o, const std::vector<std::vector<int>>& to) const;

 private:
  double coll(CollectiveKind kind, size_t l, double bytes) const {
    return chain_collective_time(cost_, kind, pair_[l], bytes);
  }

  const Graph& g_;
  const CostModel& cost_;
  const std::vector<int>& devices_;
  const PartitionPlacerOptions& options_;
  const size_t k_, L_;
  const int dev0_;
  const std::vector<std::vector<OpId>> derived_;
  std::vector<CollectiveGroup> pair_;
};

OpLevelCosts LevelCostModel::op_costs(OpId o) const {
  const Op& op = g_.op(o);
  OpLevelCosts c;
  for (TensorId t : op.outputs) c.out_bytes += static_cast<double>(g_.tensor(t).bytes);
  c.fwd = cost_.op_time(op, g_.op_bytes(o), dev0_, 1.0 / k_);
  c.full = cost_.op_time(op, g_.op_bytes(o), dev0_);
  for (OpId d : derived_[o]) {
    const Op& dop = g_.op(d);
    c.full += cost_.op_time(dop, g_.op_bytes(d), dev0_);
    if (dop.phase == Phase::kBackward) {
      c.bwd += cost_.op_time(dop, g_.op_bytes(d), dev0_, 1.0 / k_);
      for (TensorId t : dop.outputs) {
        (g_.tensor(t).is_param_grad ? c.param_grad : c.in_grad) +=
            static_cast<double>(g_.tensor(t).bytes);
      }
    }
  }
  return c;
}

double LevelCostModel::unary(OpId o, const OpLevelCosts& oc, const std::vector<int>& lv) const {
  if (lv.empty()) return oc.full;
  double nonbatch = 1;
  for (int d : lv) nonbatch *= d != 0 ? 2 : 1;
  double c = oc.fwd + oc.bwd;
  for (OpId d : derived_[o]) {
    if (g_.op(d).phase != Phase::kBackward) {
      c += cost_.op_time(g_.op(d), g_.op_bytes(d), dev0_, 1.0 / nonbatch);
    }
  }
  for (size_t l = 0; l < lv.size(); ++l) {
    const int d = lv[l];
    // Forward: outputs sliced by non-contraction levels; partial sums on a contraction one.
    const double ob =
        oc.out_bytes / other_div(lv, l, [](int x) { return x != OpPartition::kReduceDim; });
    c +=
        coll(d == OpPartition::kReduceDim ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather,
             l, ob);
    // Backward: input grads sliced by batch / contraction levels; parameter gradients
    // all-reduced on batch levels, sharded by the others.
    const double ib = oc.in_grad / other_div(lv, l, [](int x) { return x <= 0; });
    c += coll(d >= 1 ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather, l, ib);
    if (d == 0) c += coll(CollectiveKind::kAllReduce, l, oc.param_grad / nonbatch);
  }
  return c;
}

std::vector<std::vector<double>> LevelCostModel::edges(
    OpId prev, const std::vector<std::vector<int>>& from, OpId o,
    const std::vector<std::vector<int>>& to) const {
  const double bytes = bytes_handed(g_, prev, o);
  const double spread = spread_time(cost_, devices_, bytes);
  std::vector<std::vector<double>> edge(from.size(), std::vector<double>(to.size(), 0));
  for (size_t a = 0; a < from.size(); ++a) {
    for (size_t b = 0; b < to.size(); ++b) {
      const std::vector<int>& x = from[a];
      const std::vector<int>& y = to[b];
      if (x == y) continue;
      if (x.empty() || y.empty()) {
        edge[a][b] = spread;
        continue;
      }
      // Tofu: a level that changes its dim re-lays out its pair's share (bytes / 2^l),
      // forward and (its gradient) backward.
      if (!options_.relayout_cost) continue;
      for (size_t l = 0; l < L_; ++l) {
        if (x[l] != y[l]) {
          const double share = bytes / static_cast<double>(size_t(1) << l);
          edge[a][b] += 2 * coll(CollectiveKind::kReduceScatter, l, share);
        }
      }
    }
  }
  return edge;
}

/// The `keep` cheapest of (cost, index) pairs, in index order (stable: ties keep the
/// enumeration order).
void keep_cheapest(std::vector<std::pair<double, size_t>>& ranked, size_t keep) {
  if (ranked.size() <= keep) return;
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  ranked.resize(keep);
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
}

}  // namespace

LevelChain make_level_chain(const Problem& problem, const std::vector<int>& devices,
                            const PartitionPlacerOptions& options) {
  const Graph& g = problem.graph;
  const size_t k = devices.size();
  size_t L = 0;
  while ((size_t(1) << L) < k) ++L;
  PLACER_CHECK(k >= 2 && (size_t(1) << L) == k,
               "partition-dp: recursive halving needs 2^L devices, got " << k);
  const LevelCostModel model(problem, devices, L, options);

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

    const OpLevelCosts oc = model.op_costs(o);
    std::vector<std::pair<double, size_t>> ranked;
    for (size_t v = 0; v < vecs.size(); ++v) ranked.push_back({model.unary(o, oc, vecs[v]), v});
    // Prune: keep the cheapest vectors.
    keep_cheapest(ranked, std::max<size_t>(1, static_cast<size_t>(options.max_level_choices)));
    std::vector<std::vector<int>> choices;
    std::vector<double> unary;
    for (const auto& r : ranked) {
      choices.push_back(vecs[r.second]);
      unary.push_back(r.first);
    }
    if (options.allow_unsplit) {
      choices.push_back({});
      unary.push_back(oc.full);
    }
    std::vector<std::vector<double>> edge;
    if (!chain.ops.empty()) edge = model.edges(chain.ops.back(), chain.levels.back(), o, choices);
    chain.ops.push_back(o);
    chain.levels.push_back(std::move(choices));
    chain.table.unary.push_back(std::move(unary));
    chain.table.edge.push_back(std::move(edge));
  }
  return chain;
}

}  // namespace placer
