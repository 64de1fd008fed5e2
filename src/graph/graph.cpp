#include "src/graph/graph.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <boost/graph/topological_sort.hpp>
#include <cstdint>
#include <iterator>

#include "src/util/error.h"

namespace placer {

std::string Graph::attr(const std::string& key, const std::string& fallback) const {
  for (const auto& kv : attrs_) {
    if (kv.first == key) return kv.second;
  }
  return fallback;
}

void GraphBuilder::set_attr(const std::string& key, const std::string& value) {
  for (auto& kv : g_.attrs_) {
    if (kv.first == key) {
      kv.second = value;
      return;
    }
  }
  g_.attrs_.emplace_back(key, value);
}

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

using OpPairs = std::vector<std::pair<uint32_t, uint32_t>>;

// Checks that op names are present and unique; returns the (name, op) index sorted by name.
std::vector<std::pair<std::string, OpId>> sorted_name_index(const std::string& graph,
                                                            const std::vector<Op>& ops) {
  std::vector<std::pair<std::string, OpId>> index;
  index.reserve(ops.size());
  for (OpId i = 0; i < ops.size(); ++i) {
    if (ops[i].name.empty()) {
      throw ValidationError("graph '" + graph + "': op #" + std::to_string(i) + " has no name");
    }
    index.emplace_back(ops[i].name, i);
  }
  std::sort(index.begin(), index.end());
  for (size_t i = 1; i < index.size(); ++i) {
    if (index[i].first == index[i - 1].first) {
      throw ValidationError("graph '" + graph + "': duplicate op name '" + index[i].first + "'");
    }
  }
  return index;
}

// Sets every tensor's producer (each written by one op at most) and returns the (tensor,
// consumer op) pairs; op by op, so the first faulty op is the one reported.
OpPairs link_tensors(const std::string& graph, const std::vector<Op>& ops,
                     std::vector<Tensor>* tensors) {
  const size_t nt = tensors->size();
  for (Tensor& t : *tensors) t.producer = kNoOp;
  OpPairs cons;
  for (OpId i = 0; i < ops.size(); ++i) {
    const Op& o = ops[i];
    for (TensorId t : o.outputs) {
      if (t >= nt) {
        throw ValidationError("graph '" + graph + "': op '" + o.name + "' writes tensor #" +
                              std::to_string(t) + " which does not exist");
      }
      Tensor& out = (*tensors)[t];
      if (out.producer == i) {
        throw ValidationError("graph '" + graph + "': op '" + o.name + "' lists output '" +
                              out.name + "' twice");
      }
      if (out.producer != kNoOp) {
        throw ValidationError("graph '" + graph + "': tensor '" + out.name +
                              "' is written by two ops ('" + ops[out.producer].name + "' and '" +
                              o.name + "')");
      }
      out.producer = i;
    }
    for (TensorId t : o.inputs) {
      if (t >= nt) {
        throw ValidationError("graph '" + graph + "': op '" + o.name + "' reads tensor #" +
                              std::to_string(t) + " which does not exist");
      }
      cons.emplace_back(t, i);
    }
  }
  return cons;
}

// The (producer, consumer) op edges of the (tensor, consumer) pairs; an op reading its own
// output is a cycle.
OpPairs data_edges(const std::string& graph, const std::vector<Op>& ops,
                   const std::vector<Tensor>& tensors, const OpPairs& cons) {
  OpPairs edges;
  for (const auto& c : cons) {
    OpId p = tensors[c.first].producer;
    if (p != kNoOp && p != c.second) edges.emplace_back(p, c.second);
    if (p == c.second) {
      throw ValidationError("graph '" + graph + "': op '" + ops[p].name +
                            "' reads its own output '" + tensors[c.first].name + "' (a cycle)");
    }
  }
  return edges;
}

// The message for a graph that is not a DAG, naming the ops of one cycle. `rev` has the
// reversed edges (op -> its inputs' producers).
std::string cycle_message(const std::string& graph, const std::vector<Op>& ops,
                          const BoostDigraph& rev) {
  std::pair<size_t, size_t> e{0, 0};
  bool have = false;
  std::vector<size_t> parent(ops.size(), SIZE_MAX);
  BackEdgeFinder vis;
  vis.parent = &parent;
  vis.found = &e;
  vis.have = &have;
  boost::depth_first_search(rev, boost::visitor(vis));
  std::string msg = "graph '" + graph + "' has a cycle";
  if (!have) return msg;
  // Back edge u -> v in the reversed graph closes the tree path v ~> u. In data-flow
  // direction the cycle is v -> u -> parent(u) -> ... -> v.
  std::vector<size_t> cycle{e.second};
  for (size_t x = e.first; x != e.second && x != SIZE_MAX; x = parent[x]) cycle.push_back(x);
  // Start at the lowest op id so the message does not depend on where DFS entered.
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  constexpr size_t kMaxNamed = 8;
  msg += " of " + std::to_string(cycle.size()) + " ops: ";
  for (size_t i = 0; i < cycle.size() && i < kMaxNamed; ++i) {
    msg += "'" + ops[cycle[i]].name + "' -> ";
  }
  if (cycle.size() > kMaxNamed) msg += "... -> ";
  return msg + "'" + ops[cycle[0]].name + "'";
}

// Topological order with Boost.Graph. DFS over the reversed edges (op -> its inputs'
// producers) finishes every op after all its predecessors, so the finish order is a
// topological order that follows op ids: ops come out in the order they were written,
// each right after the inputs it needs.
std::vector<OpId> topological_order(const std::string& graph, const std::vector<Op>& ops,
                                    const std::vector<uint32_t>& pred_off,
                                    const std::vector<OpId>& pred_idx) {
  const size_t n = ops.size();
  BoostDigraph rev(n);
  for (OpId v = 0; v < n; ++v) {
    for (uint32_t k = pred_off[v]; k < pred_off[v + 1]; ++k) boost::add_edge(v, pred_idx[k], rev);
  }
  std::vector<OpId> topo;
  topo.reserve(n);
  try {
    boost::topological_sort(rev, std::back_inserter(topo));
  } catch (const boost::not_a_dag&) {
    throw ValidationError(cycle_message(graph, ops, rev));
  }
  return topo;
}

}  // namespace

Graph GraphBuilder::build() {
  Graph g = std::move(g_);
  g_ = Graph();
  const size_t n = g.ops_.size();
  g.name_index_ = sorted_name_index(g.name_, g.ops_);

  // Producers, consumers and the op adjacency (CSR).
  OpPairs cons = link_tensors(g.name_, g.ops_, &g.tensors_);
  OpPairs edges = data_edges(g.name_, g.ops_, g.tensors_, cons);
  to_csr(g.tensors_.size(), cons, &g.cons_off_, &g.cons_idx_);
  OpPairs redges;
  redges.reserve(edges.size());
  for (const auto& e : edges) redges.emplace_back(e.second, e.first);
  to_csr(n, edges, &g.succ_off_, &g.succ_idx_);
  to_csr(n, redges, &g.pred_off_, &g.pred_idx_);

  g.topo_ = topological_order(g.name_, g.ops_, g.pred_off_, g.pred_idx_);
  g.topo_rank_.assign(n, 0);
  for (uint32_t r = 0; r < n; ++r) g.topo_rank_[g.topo_[r]] = r;
  return g;
}

}  // namespace placer
