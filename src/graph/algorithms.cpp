#include "src/graph/algorithms.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/connected_components.hpp>
#include <boost/graph/dag_shortest_paths.hpp>
#include <cmath>
#include <functional>
#include <string>
#include <unordered_map>
#include <limits>
#include <utility>

#include "src/util/error.h"

namespace placer {
namespace {

struct EdgeWeight {
  double w = 0;
};
using WeightedCsr =
    boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, EdgeWeight,
                                       boost::no_property, uint32_t, uint32_t>;

// Longest paths from a virtual source S = n that has a 0-weight edge to every op without
// predecessors. With `sink_cost`, a virtual sink T = n + 1 gets an edge from every op without
// successors, weighted sink_cost(op). Op edges are weighted edge_weight(from, k) where k is
// the position of the edge in succs(from). Runs Boost's DAG shortest paths with the
// comparison flipped (greater) and -inf as "unreached".
struct LongestPaths {
  std::vector<double> dist;  // per vertex (ops, then S, then T)
  std::vector<uint32_t> pred;
};

LongestPaths longest_paths(const Graph& g,
                           const std::function<double(OpId from, OpId to, size_t k)>& edge_weight,
                           const std::function<double(OpId sink)>& sink_cost) {
  const uint32_t n = static_cast<uint32_t>(g.num_ops());
  const uint32_t s = n, t = n + 1;
  const uint32_t nv = sink_cost ? n + 2 : n + 1;

  // Edges sorted by source: ops in id order (their succs are sorted), then S.
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  std::vector<EdgeWeight> weights;
  size_t ne = 0;
  for (OpId u = 0; u < n; ++u) ne += g.succs(u).size() + 1;
  edges.reserve(ne + n);
  weights.reserve(ne + n);
  for (OpId u = 0; u < n; ++u) {
    const Span<OpId> succ = g.succs(u);
    for (size_t k = 0; k < succ.size(); ++k) {
      edges.emplace_back(u, succ[k]);
      weights.push_back({edge_weight(u, succ[k], k)});
    }
    if (succ.empty() && sink_cost) {
      edges.emplace_back(u, t);
      weights.push_back({sink_cost(u)});
    }
  }
  for (OpId u = 0; u < n; ++u) {
    if (g.preds(u).empty()) {
      edges.emplace_back(s, u);
      weights.push_back({0.0});
    }
  }

  WeightedCsr csr(boost::edges_are_sorted, edges.begin(), edges.end(), weights.begin(), nv);
  LongestPaths out;
  out.dist.assign(nv, 0.0);
  out.pred.assign(nv, 0);
  boost::dag_shortest_paths(csr, s,
                            boost::weight_map(boost::get(&EdgeWeight::w, csr))
                                .distance_map(boost::make_iterator_property_map(
                                    out.dist.begin(), boost::get(boost::vertex_index, csr)))
                                .predecessor_map(boost::make_iterator_property_map(
                                    out.pred.begin(), boost::get(boost::vertex_index, csr)))
                                .distance_compare(std::greater<double>())
                                .distance_inf(-std::numeric_limits<double>::infinity())
                                .distance_zero(0.0));
  return out;
}

void check_cost(double c, const char* what, size_t index) {
  PLACER_CHECK(std::isfinite(c) && c >= 0, "critical_path: " << what << " #" << index << " is " << c
                                                             << " (costs must be finite and >= 0)");
}

}  // namespace

CriticalPath critical_path(const Graph& g, const std::vector<double>& op_cost,
                           const EdgeCostFn& edge_cost) {
  const size_t n = g.num_ops();
  PLACER_CHECK(op_cost.size() == n, "critical_path: op_cost has " << op_cost.size()
                                                                  << " entries for a graph of " << n
                                                                  << " ops");
  CriticalPath cp;
  if (n == 0) return cp;
  for (size_t i = 0; i < n; ++i) check_cost(op_cost[i], "op cost", i);

  LongestPaths lp = longest_paths(
      g,
      [&](OpId from, OpId to, size_t /*k*/) {
        double w = op_cost[from];
        if (edge_cost) {
          const double e = edge_cost(from, to);
          check_cost(e, "edge cost from op", from);
          w += e;
        }
        return w;
      },
      [&](OpId sink) { return op_cost[sink]; });

  const uint32_t s = static_cast<uint32_t>(n), t = s + 1;
  cp.length = lp.dist[t];
  for (uint32_t v = lp.pred[t]; v != s; v = lp.pred[v]) cp.ops.push_back(v);
  std::reverse(cp.ops.begin(), cp.ops.end());
  return cp;
}

CriticalPath critical_path(const Graph& g, const std::vector<double>& op_cost,
                           const std::vector<double>& tensor_cost) {
  PLACER_CHECK(tensor_cost.size() == g.num_tensors(),
               "critical_path: tensor_cost has " << tensor_cost.size() << " entries for a graph of "
                                                 << g.num_tensors() << " tensors");
  // Per-edge sums, laid out like the succs CSR: edge k of op u at succ_base[u] + k.
  const size_t n = g.num_ops();
  std::vector<size_t> succ_base(n + 1, 0);
  for (OpId u = 0; u < n; ++u) succ_base[u + 1] = succ_base[u] + g.succs(u).size();
  std::vector<double> edge_sum(succ_base[n], 0.0);
  for (OpId u = 0; u < n; ++u) {
    const Span<OpId> succ = g.succs(u);
    for (TensorId t : g.op(u).outputs) {
      check_cost(tensor_cost[t], "tensor cost", t);
      for (OpId v : g.consumers(t)) {
        const size_t k = std::lower_bound(succ.begin(), succ.end(), v) - succ.begin();
        PLACER_DCHECK(k < succ.size() && succ[k] == v);
        edge_sum[succ_base[u] + k] += tensor_cost[t];
      }
    }
  }
  return critical_path(g, op_cost, [&](OpId from, OpId to) {
    const Span<OpId> succ = g.succs(from);
    const size_t k = std::lower_bound(succ.begin(), succ.end(), to) - succ.begin();
    return edge_sum[succ_base[from] + k];
  });
}

std::vector<int> weakly_connected_components(const Graph& g, int* count) {
  using Undirected = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  const size_t n = g.num_ops();
  Undirected ug(n);
  for (OpId u = 0; u < n; ++u) {
    for (OpId v : g.succs(u)) boost::add_edge(u, v, ug);
  }
  std::vector<int> comp(n, 0);
  // Boost starts a new component at each unvisited vertex in id order, so numbering follows
  // the lowest op id of each component.
  const int c = n == 0 ? 0 : static_cast<int>(boost::connected_components(ug, comp.data()));
  if (count) *count = c;
  return comp;
}

std::vector<int> topo_depth(const Graph& g) {
  const size_t n = g.num_ops();
  if (n == 0) return {};
  LongestPaths lp = longest_paths(
      g, [](OpId, OpId, size_t) { return 1.0; }, nullptr);
  std::vector<int> depth(n);
  for (size_t i = 0; i < n; ++i) depth[i] = static_cast<int>(lp.dist[i]);
  return depth;
}

std::vector<int> colocation_units(const Graph& g, int* num_units) {
  const size_t n = g.num_ops();
  std::vector<int> unit(n, -1);
  std::unordered_map<std::string, int> group_unit;
  std::vector<int> root_unit(n, -1);
  int next = 0;
  for (OpId i = 0; i < n; ++i) {
    // Backward / optimizer ops follow the forward op they derive from.
    OpId root = i;
    for (size_t guard = 0; g.op(root).forward_op != kNoOp && guard < n; ++guard) {
      root = g.op(root).forward_op;
    }
    if (root_unit[root] < 0) {
      const std::string& grp = g.op(root).group;
      if (grp.empty()) {
        root_unit[root] = next++;
      } else {
        auto it = group_unit.emplace(grp, next);
        if (it.second) ++next;
        root_unit[root] = it.first->second;
      }
    }
    unit[i] = root_unit[root];
  }
  *num_units = next;
  return unit;
}

std::vector<std::vector<OpId>> derived_ops(const Graph& g) {
  std::vector<std::vector<OpId>> derived(g.num_ops());
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const OpId f = g.op(o).forward_op;
    if (f != kNoOp && g.op(o).phase != Phase::kForward) derived[f].push_back(o);
  }
  return derived;
}

}  // namespace placer
