// `metis` and `scotch` placers: the contracted graph, the METIS call, the memory repair and
// the registration. The Scotch call lives in agents/classical/partitioners_scotch.cpp.
#include "agents/classical/partitioners.h"

#include <metis.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "agents/api/methods.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer {
namespace {

static_assert(sizeof(idx_t) == sizeof(int32_t), "METIS must be built with 32-bit idx_t");

// Integer weights are scaled so that a whole-graph sum stays below this (2^27), leaving
// headroom for the libraries' internal sums in 32 bits.
constexpr double kWeightBudget = 134217728.0;

int find_root(std::vector<int>& parent, int x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

void unite(std::vector<int>& parent, int a, int b) {
  a = find_root(parent, a);
  b = find_root(parent, b);
  if (a == b) return;
  if (a > b) std::swap(a, b);
  parent[b] = a;  // the smaller op id is the root: vertex numbering follows op ids
}

// Scales non-negative amounts to integers >= 1 whose sum is at most ~kWeightBudget + n.
// `stretch`: also scale small totals up to the budget (seconds need it; bytes are integers).
template <typename T>
std::vector<int32_t> scale_weights(const std::vector<T>& amounts, bool stretch) {
  double total = 0;
  for (T a : amounts) total += static_cast<double>(a);
  const double factor =
      total > kWeightBudget || (stretch && total > 0) ? kWeightBudget / total : 1.0;
  std::vector<int32_t> out(amounts.size());
  for (size_t i = 0; i < amounts.size(); ++i) {
    const double w = std::llround(static_cast<double>(amounts[i]) * factor);
    out[i] = static_cast<int32_t>(std::max(1.0, w));
  }
  return out;
}

}  // namespace

double device_speed(const Cluster& cluster, int device) {
  return cluster.device(device).spec.peak(DType::kF32);
}

PartitionGraph build_partition_graph(const Graph& g, const CostModel& cost, int ref_device) {
  const int n_ops = static_cast<int>(g.num_ops());
  std::vector<int> parent(n_ops);
  std::iota(parent.begin(), parent.end(), 0);
  std::unordered_map<std::string, int> group_first;
  for (int i = 0; i < n_ops; ++i) {
    const Op& o = g.op(i);
    if (o.forward_op != kNoOp) unite(parent, i, static_cast<int>(o.forward_op));
    if (!o.group.empty()) {
      auto it = group_first.emplace(o.group, i).first;
      unite(parent, i, it->second);
    }
  }
  PartitionGraph pg;
  pg.vertex_of_op.assign(n_ops, -1);
  std::vector<int> vertex_of_root(n_ops, -1);
  for (int i = 0; i < n_ops; ++i) {
    const int r = find_root(parent, i);
    if (vertex_of_root[r] < 0) vertex_of_root[r] = pg.num_vertices++;
    pg.vertex_of_op[i] = vertex_of_root[r];
  }
  const int n = pg.num_vertices;
  pg.compute_seconds.assign(n, 0.0);
  pg.resident.assign(n, 0);
  for (int i = 0; i < n_ops; ++i) {
    const int v = pg.vertex_of_op[i];
    pg.compute_seconds[v] += cost.op_time(g.op(i), g.op_bytes(i), ref_device);
    pg.resident[v] += resident_bytes(g, i);
  }
  pg.compute_weight = scale_weights(pg.compute_seconds, true);
  pg.memory_weight = scale_weights(pg.resident, true);

  // Undirected edges (u < w) with the bytes of every tensor crossing between the groups;
  // a tensor read by several ops of one group is counted once for that group.
  struct Edge {
    int u, w;
    uint64_t bytes;
  };
  std::vector<Edge> edges;
  std::vector<int> seen;
  for (size_t t = 0; t < g.num_tensors(); ++t) {
    const Tensor& ten = g.tensor(t);
    if (ten.producer == kNoOp) continue;
    const int pv = pg.vertex_of_op[ten.producer];
    seen.clear();
    for (OpId c : g.consumers(static_cast<TensorId>(t))) {
      const int cv = pg.vertex_of_op[c];
      if (cv == pv || std::find(seen.begin(), seen.end(), cv) != seen.end()) continue;
      seen.push_back(cv);
      edges.push_back({std::min(pv, cv), std::max(pv, cv), ten.bytes});
    }
  }
  std::sort(edges.begin(), edges.end(),
            [](const Edge& a, const Edge& b) { return a.u != b.u ? a.u < b.u : a.w < b.w; });
  std::vector<Edge> merged;
  for (const Edge& e : edges) {
    if (!merged.empty() && merged.back().u == e.u && merged.back().w == e.w) {
      merged.back().bytes += e.bytes;
    } else {
      merged.push_back(e);
    }
  }
  std::vector<uint64_t> merged_bytes(merged.size());
  for (size_t i = 0; i < merged.size(); ++i) merged_bytes[i] = merged[i].bytes;
  const std::vector<int32_t> merged_w = scale_weights(merged_bytes, false);

  pg.xadj.assign(n + 1, 0);
  for (const Edge& e : merged) {
    ++pg.xadj[e.u + 1];
    ++pg.xadj[e.w + 1];
  }
  for (int v = 0; v < n; ++v) pg.xadj[v + 1] += pg.xadj[v];
  pg.adjncy.resize(pg.xadj[n]);
  pg.adjwgt.resize(pg.xadj[n]);
  pg.edge_bytes.resize(pg.xadj[n]);
  std::vector<int32_t> fill(pg.xadj.begin(), pg.xadj.end() - 1);
  // Edges are sorted by (u, w): vertex a first receives its neighbours below a (as w, in
  // increasing u), then those above (as u), so every adjacency list comes out sorted.
  for (size_t i = 0; i < merged.size(); ++i) {
    const Edge& e = merged[i];
    for (int side = 0; side < 2; ++side) {
      const int a = side == 0 ? e.u : e.w, b = side == 0 ? e.w : e.u;
      pg.adjncy[fill[a]] = b;
      pg.adjwgt[fill[a]] = merged_w[i];
      pg.edge_bytes[fill[a]] = e.bytes;
      ++fill[a];
    }
  }
  return pg;
}

std::vector<int> metis_partition(const PartitionGraph& pg, int k, const MetisOptions& options,
                                 uint64_t seed, const std::vector<double>& target_fraction) {
  PLACER_CHECK(k >= 1, "metis: number of parts must be >= 1");
  const int n = pg.num_vertices;
  std::vector<int> part(n, 0);
  if (k == 1 || n == 0) return part;
  if (n <= k) {  // METIS needs more vertices than parts; one vertex per part
    std::iota(part.begin(), part.end(), 0);
    return part;
  }
  idx_t nvtxs = n;
  idx_t ncon = options.balance_memory ? 2 : 1;
  std::vector<idx_t> vwgt(static_cast<size_t>(n) * ncon);
  for (int v = 0; v < n; ++v) {
    vwgt[static_cast<size_t>(v) * ncon] = pg.compute_weight[v];
    if (ncon == 2) vwgt[static_cast<size_t>(v) * 2 + 1] = pg.memory_weight[v];
  }
  std::vector<idx_t> xadj(pg.xadj.begin(), pg.xadj.end());
  std::vector<idx_t> adjncy(pg.adjncy.begin(), pg.adjncy.end());
  std::vector<idx_t> adjwgt(pg.adjwgt.begin(), pg.adjwgt.end());
  std::vector<real_t> tpwgts;
  if (!target_fraction.empty()) {
    PLACER_CHECK(static_cast<int>(target_fraction.size()) == k,
                 "metis: target_fraction must have one entry per part");
    // Every constraint gets the same per-part share (compute speed decides).
    for (int p = 0; p < k; ++p)
      for (idx_t c = 0; c < ncon; ++c) tpwgts.push_back(static_cast<real_t>(target_fraction[p]));
  }
  idx_t opts[METIS_NOPTIONS];
  METIS_SetDefaultOptions(opts);
  opts[METIS_OPTION_SEED] = static_cast<idx_t>(seed & 0x7fffffff);
  opts[METIS_OPTION_UFACTOR] = options.ufactor;
  opts[METIS_OPTION_NCUTS] = std::max(1, options.ncuts);
  opts[METIS_OPTION_CONTIG] = 0;
  opts[METIS_OPTION_NUMBERING] = 0;
  idx_t nparts = k;
  idx_t objval = 0;

  auto run = [&](bool recursive, std::vector<int>* out, idx_t* cut) {
    std::vector<idx_t> p(n, 0);
    idx_t o = 0;
    idx_t local_opts[METIS_NOPTIONS];
    std::copy(opts, opts + METIS_NOPTIONS, local_opts);
    int rc;
    if (recursive) {
      local_opts[METIS_OPTION_UFACTOR] = std::max(1, options.ufactor);
      rc = METIS_PartGraphRecursive(
          &nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr, adjwgt.data(), &nparts,
          tpwgts.empty() ? nullptr : tpwgts.data(), nullptr, local_opts, &o, p.data());
    } else {
      rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr,
                               adjwgt.data(), &nparts, tpwgts.empty() ? nullptr : tpwgts.data(),
                               nullptr, local_opts, &o, p.data());
    }
    if (rc != METIS_OK) return false;
    out->assign(p.begin(), p.end());
    *cut = o;
    return true;
  };
  // A part's compute weight relative to its target (the balance the tests check).
  auto imbalance = [&](const std::vector<int>& p) {
    std::vector<double> load(k, 0);
    double total = 0;
    for (int v = 0; v < n; ++v) {
      load[p[v]] += pg.compute_weight[v];
      total += pg.compute_weight[v];
    }
    double worst = 0;
    for (int q = 0; q < k; ++q) {
      const double share = target_fraction.empty() ? 1.0 / k : target_fraction[q];
      worst = std::max(worst, load[q] / (total * share));
    }
    return worst;
  };

  std::vector<int> best;
  bool ok = run(false, &best, &objval);
  if (options.try_recursive && k <= 8) {
    std::vector<int> rec;
    idx_t rec_cut = 0;
    if (run(true, &rec, &rec_cut)) {
      const double limit = 1.0 + options.ufactor / 1000.0;
      const bool rec_balanced = imbalance(rec) <= limit;
      const bool best_balanced = ok && imbalance(best) <= limit;
      if (!ok || (rec_balanced && (!best_balanced || rec_cut < objval))) {
        best = std::move(rec);
        objval = rec_cut;
        ok = true;
      }
    }
  }
  if (!ok)
    throw Error("metis: METIS_PartGraphKway failed on a graph of " + std::to_string(n) +
                " vertices into " + std::to_string(k) + " parts");
  return best;
}

void repair_memory(const PartitionGraph& pg, const Cluster& cluster,
                   const std::vector<int>& devices, std::vector<int>* part) {
  const int k = static_cast<int>(devices.size());
  const int n = pg.num_vertices;
  std::vector<uint64_t> cap(k), load(k, 0);
  uint64_t total_cap = 0, total_res = 0, max_cap = 0;
  for (int d = 0; d < k; ++d) {
    cap[d] = cluster.device(devices[d]).spec.memory_bytes;
    total_cap += cap[d];
    max_cap = std::max(max_cap, cap[d]);
  }
  for (int v = 0; v < n; ++v) {
    load[(*part)[v]] += pg.resident[v];
    total_res += pg.resident[v];
    if (pg.resident[v] > max_cap)
      throw Error("memory: a colocation group needs " + human_bytes(double(pg.resident[v])) +
                  " resident (parameters, gradients, optimizer state), more than any "
                  "device holds (" +
                  human_bytes(double(max_cap)) + ")");
  }
  if (total_res > total_cap)
    throw Error("memory: the graph needs " + human_bytes(double(total_res)) +
                " resident (parameters, gradients, optimizer state), more than the " +
                human_bytes(double(total_cap)) + " of all devices together");
  // Bytes exchanged between vertex v and each device under the current assignment.
  auto conn = [&](int v, std::vector<uint64_t>* c) {
    c->assign(k, 0);
    for (int e = pg.xadj[v]; e < pg.xadj[v + 1]; ++e)
      (*c)[(*part)[pg.adjncy[e]]] += pg.edge_bytes[e];
  };
  // One move at a time, re-rating after each: a move changes its neighbours' losses (a
  // vertex whose partner just left becomes cheap to move after it).
  std::vector<uint64_t> c;
  const int64_t max_moves = static_cast<int64_t>(n) * k;
  for (int64_t moves = 0; moves < max_moves; ++moves) {
    int over = -1;
    for (int d = 0; d < k && over < 0; ++d)
      if (load[d] > cap[d]) over = d;
    if (over < 0) return;
    int best_v = -1, best_t = -1;
    double best_loss = 0;
    for (int v = 0; v < n; ++v) {
      if ((*part)[v] != over || pg.resident[v] == 0) continue;
      conn(v, &c);
      int target = -1;  // the device with room this vertex talks to most
      for (int d = 0; d < k; ++d) {
        if (d == over || load[d] + pg.resident[v] > cap[d]) continue;
        if (target < 0 || c[d] > c[target] ||
            (c[d] == c[target] && cap[d] - load[d] > cap[target] - load[target]))
          target = d;
      }
      if (target < 0) continue;
      // Bytes that become cross-device, per resident byte freed (lightest first).
      const double loss = (static_cast<double>(c[over]) - static_cast<double>(c[target])) /
                          static_cast<double>(pg.resident[v]);
      if (best_v < 0 || loss < best_loss) {
        best_v = v;
        best_t = target;
        best_loss = loss;
      }
    }
    if (best_v < 0) break;
    load[over] -= pg.resident[best_v];
    load[best_t] += pg.resident[best_v];
    (*part)[best_v] = best_t;
  }
  for (int d = 0; d < k; ++d)
    if (load[d] > cap[d])
      throw Error("memory: could not fit the resident bytes on device '" +
                  cluster.device(devices[d]).name + "' (" + std::to_string(load[d]) + " > " +
                  std::to_string(cap[d]) + "): the colocation groups are too large to pack");
}

// Relabels parts so that parts exchanging many bytes share
// a host. Greedy, host by host: the seed is the unplaced part with the most traffic overall,
// then the host keeps taking the unplaced part that talks most with the parts it holds.
// (Seeding with a periphery part instead, which lays a chain out host after host, gave
// slower simulated steps on the transformer and ResNet-50 steps of automap_config_a.)
std::vector<int> map_parts_to_hosts(const PartitionGraph& pg, const std::vector<int>& part,
                                    const std::vector<std::vector<int>>& host_devs) {
  int k = 0;
  for (const auto& h : host_devs) k += static_cast<int>(h.size());
  std::vector<double> traffic(static_cast<size_t>(k) * k, 0);
  for (int v = 0; v < pg.num_vertices; ++v)
    for (int e = pg.xadj[v]; e < pg.xadj[v + 1]; ++e)
      if (part[v] != part[pg.adjncy[e]])
        traffic[static_cast<size_t>(part[v]) * k + part[pg.adjncy[e]]] += pg.edge_bytes[e];
  std::vector<int> device_of_part(k, -1);
  std::vector<bool> placed(k, false);
  for (const std::vector<int>& slots : host_devs) {
    std::vector<int> members;
    for (int slot : slots) {
      int best = -1;
      double best_score = -1;
      for (int q = 0; q < k; ++q) {
        if (placed[q]) continue;
        double score = 0;
        if (members.empty()) {
          for (int r = 0; r < k; ++r) score += traffic[static_cast<size_t>(q) * k + r];
        } else {
          for (int m : members) score += traffic[static_cast<size_t>(q) * k + m];
        }
        if (score > best_score) {
          best = q;
          best_score = score;
        }
      }
      placed[best] = true;
      members.push_back(best);
      device_of_part[best] = slot;
    }
  }
  std::vector<int> out(part.size());
  for (size_t v = 0; v < part.size(); ++v) out[v] = device_of_part[part[v]];
  return out;
}

namespace {

int fastest_device(const Cluster& cluster, const std::vector<int>& devs) {
  int best = devs.front();
  for (int d : devs)
    if (device_speed(cluster, d) > device_speed(cluster, best)) best = d;
  return best;
}

Plan to_plan(const Problem& p, const PartitionGraph& pg, const std::vector<int>& devs,
             const std::vector<int>& part, const std::string& method) {
  std::vector<int> device_of_op(p.graph.num_ops());
  for (size_t i = 0; i < device_of_op.size(); ++i) device_of_op[i] = devs[part[pg.vertex_of_op[i]]];
  return placement_plan(p, std::move(device_of_op), method);
}

}  // namespace

namespace {

// The subgraph induced by `vertices` (weights kept as scaled for the whole graph).
PartitionGraph induced_subgraph(const PartitionGraph& pg, const std::vector<int>& vertices) {
  PartitionGraph sub;
  sub.num_vertices = static_cast<int>(vertices.size());
  std::vector<int> local(pg.num_vertices, -1);
  for (int i = 0; i < sub.num_vertices; ++i) local[vertices[i]] = i;
  sub.xadj.push_back(0);
  for (int v : vertices) {
    for (int e = pg.xadj[v]; e < pg.xadj[v + 1]; ++e) {
      const int w = local[pg.adjncy[e]];
      if (w < 0) continue;
      sub.adjncy.push_back(w);
      sub.adjwgt.push_back(pg.adjwgt[e]);
      sub.edge_bytes.push_back(pg.edge_bytes[e]);
    }
    sub.xadj.push_back(static_cast<int32_t>(sub.adjncy.size()));
    sub.compute_weight.push_back(pg.compute_weight[v]);
    sub.memory_weight.push_back(pg.memory_weight[v]);
    sub.compute_seconds.push_back(pg.compute_seconds[v]);
    sub.resident.push_back(pg.resident[v]);
  }
  return sub;
}

// Shares of `speeds` (empty when all equal: METIS' default equal targets).
std::vector<double> shares_of(const std::vector<double>& speeds) {
  double total = 0;
  for (double s : speeds) total += s;
  std::vector<double> share(speeds.size());
  bool equal = true;
  for (size_t i = 0; i < speeds.size(); ++i) {
    share[i] = speeds[i] / total;
    equal = equal && std::abs(share[i] - 1.0 / speeds.size()) < 1e-12;
  }
  return equal ? std::vector<double>{} : share;
}

}  // namespace

Plan MetisPlacer::search(const Problem& problem, const SearchBudget& budget) {
  const std::vector<int> devs = problem_devices(problem);
  PLACER_CHECK(!devs.empty(), "metis: no devices to place on");
  const Cluster& cl = problem.cluster;
  const PartitionGraph pg =
      build_partition_graph(problem.graph, problem.cost, fastest_device(cl, devs));
  const int k = static_cast<int>(devs.size());
  // Devices by host (indices into devs), hosts in order of first appearance.
  std::vector<int> host_ids;
  std::vector<std::vector<int>> host_devs;
  for (int i = 0; i < k; ++i) {
    const int h = cl.device(devs[i]).host;
    auto it = std::find(host_ids.begin(), host_ids.end(), h);
    if (it == host_ids.end()) {
      host_ids.push_back(h);
      host_devs.emplace_back();
      it = host_ids.end() - 1;
    }
    host_devs[it - host_ids.begin()].push_back(i);
  }
  std::vector<int> part;
  if (host_devs.size() <= 1 || !options_.hierarchical) {
    // Part p goes to devs[p]; its target share of the compute is the device's share of the
    // speed, so faster devices get larger parts.
    std::vector<double> speeds(k);
    for (int i = 0; i < k; ++i) speeds[i] = device_speed(cl, devs[i]);
    const std::vector<double> share = shares_of(speeds);
    part = metis_partition(pg, k, options_, budget.seed, share);
    if (host_devs.size() > 1 && share.empty()) part = map_parts_to_hosts(pg, part, host_devs);
  } else {
    // Two levels, so that the heavy edges stay inside a host: first one part per host
    // (sized by the host's total speed), then each host's part over its devices.
    const int hosts = static_cast<int>(host_devs.size());
    std::vector<double> host_speed(hosts, 0);
    for (int h = 0; h < hosts; ++h)
      for (int i : host_devs[h]) host_speed[h] += device_speed(cl, devs[i]);
    const std::vector<int> host_part =
        metis_partition(pg, hosts, options_, budget.seed, shares_of(host_speed));
    part.assign(pg.num_vertices, 0);
    for (int h = 0; h < hosts; ++h) {
      std::vector<int> verts;
      for (int v = 0; v < pg.num_vertices; ++v)
        if (host_part[v] == h) verts.push_back(v);
      if (verts.empty()) continue;
      const PartitionGraph sub = induced_subgraph(pg, verts);
      std::vector<double> speeds;
      for (int i : host_devs[h]) speeds.push_back(device_speed(cl, devs[i]));
      const std::vector<int> sub_part = metis_partition(sub, static_cast<int>(host_devs[h].size()),
                                                        options_, budget.seed, shares_of(speeds));
      for (size_t j = 0; j < verts.size(); ++j) part[verts[j]] = host_devs[h][sub_part[j]];
    }
  }
  repair_memory(pg, cl, devs, &part);
  return to_plan(problem, pg, devs, part, name());
}

Plan ScotchPlacer::search(const Problem& problem, const SearchBudget& budget) {
  const std::vector<int> devs = problem_devices(problem);
  PLACER_CHECK(!devs.empty(), "scotch: no devices to place on");
  const PartitionGraph pg =
      build_partition_graph(problem.graph, problem.cost, fastest_device(problem.cluster, devs));
  std::vector<int> part = scotch_map(pg, problem.cluster, devs, options_, budget.seed);
  repair_memory(pg, problem.cluster, devs, &part);
  return to_plan(problem, pg, devs, part, name());
}

void add_graph_partitioning_methods(std::vector<MethodInfo>* out) {
  out->push_back({"metis",
                  "METIS k-way partition of the colocation groups (compute + memory vertex "
                  "weights, tensor bytes on edges), parts sized by device speed",
                  true, [] { return std::unique_ptr<Placer>(new MetisPlacer()); }});
  out->push_back({"scotch",
                  "Scotch static mapping of the colocation groups onto the device topology "
                  "(tree-leaf hosts x devices, link costs from bandwidth)",
                  true, [] { return std::unique_ptr<Placer>(new ScotchPlacer()); }});
}

}  // namespace placer
