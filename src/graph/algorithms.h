#pragma once
// Whole-graph algorithms on the op DAG (through Boost.Graph): critical path, weakly connected
// components and topological depth. Cycle detection lives in GraphBuilder::build(), so every
// Graph these functions see is already a DAG.
//
// "Edges" here are the deduplicated op -> op edges of Graph::succs(): one edge per (producer,
// consumer) pair, however many tensors flow along it. Graph inputs (tensors without a
// producer) do not connect the ops that read them.

#include <functional>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

/// The longest (most expensive) source-to-sink path of the op DAG.
struct CriticalPath {
  double length = 0;      ///< sum of the op costs and edge costs along the path
  std::vector<OpId> ops;  ///< the ops on the path, in execution order (empty for an empty graph)
};

/// Cost of the edge from op `from` to op `to` (e.g. the transfer time of what flows on it).
using EdgeCostFn = std::function<double(OpId from, OpId to)>;

/// Longest path through the DAG where every op costs op_cost[op] and every edge
/// edge_cost(from, to) (0 when edge_cost is empty). The path runs from an op without
/// predecessors to an op without successors. Costs must be finite and >= 0; op_cost must
/// have one entry per op. Ties are broken deterministically (the first path found in a
/// depth-first order from the lowest op ids).
CriticalPath critical_path(const Graph& g, const std::vector<double>& op_cost,
                           const EdgeCostFn& edge_cost = nullptr);

/// Same, with per-tensor edge costs: the edge (from, to) costs the sum of tensor_cost[t] over
/// the distinct tensors t that `from` writes and `to` reads. tensor_cost has one entry per
/// tensor; the entries of graph inputs are unused.
CriticalPath critical_path(const Graph& g, const std::vector<double>& op_cost,
                           const std::vector<double>& tensor_cost);

/// Weakly connected component of every op (edge directions ignored). Components are
/// numbered 0, 1, ... in the order of their lowest op id, so op 0 is always in component 0.
/// `count` (optional) receives the number of components.
std::vector<int> weakly_connected_components(const Graph& g, int* count = nullptr);

/// Depth of every op: the number of edges on the longest path from any op without
/// predecessors (depth 0) to it.
std::vector<int> topo_depth(const Graph& g);

/// Colocation units: an op, the backward / optimizer ops derived from it (Op::forward_op
/// chains) and every op sharing its forward op's non-empty Op::group get one unit id
/// (0, 1, ... in order of first appearance). `num_units` receives the count. Placers that
/// move whole units keep an op, its gradient and its update together.
std::vector<int> colocation_units(const Graph& g, int* num_units);

/// For every op, the backward / optimizer ops whose Op::forward_op is that op (in id order).
std::vector<std::vector<OpId>> derived_ops(const Graph& g);

}  // namespace placer
