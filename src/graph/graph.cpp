#include "src/graph/graph.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <boost/graph/topological_sort.hpp>
#include <cstdint>
#include <iterator>

#include "src/util/error.h"

namespace placer {

OpId Graph::find_op(const std::string& name) const {
  auto it = std::lower_bound(name_index_.begin(), name_index_.end(), name,
                             [](const std::pair<std::string, OpId>& a, const std::string& b) {
                               return a.first < b;
                             });
  if (it == name_index_.end() || it->first != name) return kNoOp;
  return it->second;
}

uint64_t Graph::op_bytes(OpId id) const {
  const Op& o = ops_[id];
  if (o.bytes_accessed > 0) return o.bytes_accessed;
  uint64_t b = 0;
  for (TensorId t : o.inputs) b += tensors_[t].bytes;
  for (TensorId t : o.outputs) b += tensors_[t].bytes;
  return b;
}

double Graph::total_flops() const {
  double f = 0;
  for (const Op& o : ops_) f += o.flops;
  return f;
}

uint64_t Graph::total_param_bytes() const {
  uint64_t b = 0;
  for (const Op& o : ops_) b += o.param_bytes;
  return b;
}

TensorId GraphBuilder::add_tensor(Tensor t) {
  g_.tensors_.push_back(std::move(t));
  return static_cast<TensorId>(g_.tensors_.size() - 1);
}

TensorId GraphBuilder::add_tensor(std::string name, uint64_t bytes, DType dtype) {
  Tensor t;
  t.name = std::move(name);
  t.bytes = bytes;
  t.dtype = dtype;
  return add_tensor(std::move(t));
}

OpId GraphBuilder::add_op(Op op) {
  g_.ops_.push_back(std::move(op));
  return static_cast<OpId>(g_.ops_.size() - 1);
}

namespace {

using BoostDigraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

// Records the DFS tree (parent of each vertex) and the first back edge, which closes a cycle.
struct BackEdgeFinder : public boost::default_dfs_visitor {
  std::vector<size_t>* parent;
  std::pair<size_t, size_t>* found;
  bool* have;
  template <class Edge, class G>
  void tree_edge(Edge e, const G& g) {
    (*parent)[boost::target(e, g)] = boost::source(e, g);
  }
  template <class Edge, class G>
  void back_edge(Edge e, const G& g) {
    if (!*have) {
      *found = {boost::source(e, g), boost::target(e, g)};
      *have = true;
    }
  }
};

// CSR from (key, value) pairs sorted by key.
void to_csr(size_t n, std::vector<std::pair<uint32_t, uint32_t>>& pairs,
            std::vector<uint32_t>* off, std::vector<uint32_t>* idx) {
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  off->assign(n + 1, 0);
  idx->resize(pairs.size());
  for (const auto& p : pairs) ++(*off)[p.first + 1];
  for (size_t i = 0; i < n; ++i) (*off)[i + 1] += (*off)[i];
  for (size_t i = 0; i < pairs.size(); ++i) (*idx)[i] = pairs[i].second;
}

}  // namespace

Graph GraphBuilder::build() {
  Graph g = std::move(g_);
  g_ = Graph();
  const size_t n = g.ops_.size();
  const size_t nt = g.tensors_.size();

  // Names are unique.
  g.name_index_.clear();
  g.name_index_.reserve(n);
  for (OpId i = 0; i < n; ++i) {
    if (g.ops_[i].name.empty()) {
      throw ValidationError("graph '" + g.name_ + "': op #" + std::to_string(i) + " has no name");
    }
    g.name_index_.emplace_back(g.ops_[i].name, i);
  }
  std::sort(g.name_index_.begin(), g.name_index_.end());
  for (size_t i = 1; i < g.name_index_.size(); ++i) {
    if (g.name_index_[i].first == g.name_index_[i - 1].first) {
      throw ValidationError("graph '" + g.name_ + "': duplicate op name '" +
                            g.name_index_[i].first + "'");
    }
  }

  // Producers and consumers.
  for (Tensor& t : g.tensors_) t.producer = kNoOp;
  std::vector<std::pair<uint32_t, uint32_t>> cons, edges;
  for (OpId i = 0; i < n; ++i) {
    const Op& o = g.ops_[i];
    for (TensorId t : o.outputs) {
      if (t >= nt) {
        throw ValidationError("graph '" + g.name_ + "': op '" + o.name + "' writes tensor #" +
                              std::to_string(t) + " which does not exist");
      }
      if (g.tensors_[t].producer == i) {
        throw ValidationError("graph '" + g.name_ + "': op '" + o.name + "' lists output '" +
                              g.tensors_[t].name + "' twice");
      }
      if (g.tensors_[t].producer != kNoOp) {
        throw ValidationError("graph '" + g.name_ + "': tensor '" + g.tensors_[t].name +
                              "' is written by two ops ('" + g.ops_[g.tensors_[t].producer].name +
                              "' and '" + o.name + "')");
      }
      g.tensors_[t].producer = i;
    }
    for (TensorId t : o.inputs) {
      if (t >= nt) {
        throw ValidationError("graph '" + g.name_ + "': op '" + o.name + "' reads tensor #" +
                              std::to_string(t) + " which does not exist");
      }
      cons.emplace_back(t, i);
    }
  }
  for (const auto& c : cons) {
    OpId p = g.tensors_[c.first].producer;
    if (p != kNoOp && p != c.second) edges.emplace_back(p, c.second);
    if (p == c.second) {
      throw ValidationError("graph '" + g.name_ + "': op '" + g.ops_[p].name +
                            "' reads its own output '" + g.tensors_[c.first].name +
                            "' (a cycle)");
    }
  }
  to_csr(nt, cons, &g.cons_off_, &g.cons_idx_);
  std::vector<std::pair<uint32_t, uint32_t>> redges;
  redges.reserve(edges.size());
  for (const auto& e : edges) redges.emplace_back(e.second, e.first);
  to_csr(n, edges, &g.succ_off_, &g.succ_idx_);
  to_csr(n, redges, &g.pred_off_, &g.pred_idx_);

  // Topological order with Boost.Graph. DFS over the reversed edges (op -> its inputs'
  // producers) finishes every op after all its predecessors, so the finish order is a
  // topological order that follows op ids: ops come out in the order they were written,
  // each right after the inputs it needs.
  BoostDigraph rev(n);
  for (OpId v = 0; v < n; ++v) {
    for (uint32_t k = g.pred_off_[v]; k < g.pred_off_[v + 1]; ++k) {
      boost::add_edge(v, g.pred_idx_[k], rev);
    }
  }
  g.topo_.clear();
  g.topo_.reserve(n);
  try {
    boost::topological_sort(rev, std::back_inserter(g.topo_));
  } catch (const boost::not_a_dag&) {
    std::pair<size_t, size_t> e{0, 0};
    bool have = false;
    std::vector<size_t> parent(n, SIZE_MAX);
    BackEdgeFinder vis;
    vis.parent = &parent;
    vis.found = &e;
    vis.have = &have;
    boost::depth_first_search(rev, boost::visitor(vis));
    std::string msg = "graph '" + g.name_ + "' has a cycle";
    if (have) {
      // Back edge u -> v in the reversed graph closes the tree path v ~> u. In data-flow
      // direction the cycle is v -> u -> parent(u) -> ... -> v.
      std::vector<size_t> cycle{e.second};
      for (size_t x = e.first; x != e.second && x != SIZE_MAX; x = parent[x]) cycle.push_back(x);
      // Start at the lowest op id so the message does not depend on where DFS entered.
      std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
      constexpr size_t kMaxNamed = 8;
      msg += " of " + std::to_string(cycle.size()) + " ops: ";
      for (size_t i = 0; i < cycle.size() && i < kMaxNamed; ++i) {
        msg += "'" + g.ops_[cycle[i]].name + "' -> ";
      }
      if (cycle.size() > kMaxNamed) msg += "... -> ";
      msg += "'" + g.ops_[cycle[0]].name + "'";
    }
    throw ValidationError(msg);
  }
  g.topo_rank_.assign(n, 0);
  for (uint32_t r = 0; r < n; ++r) g.topo_rank_[g.topo_[r]] = r;
  return g;
}

}  // namespace placer
