#include "agents/classical/partitioners.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

namespace placer {
namespace {

DeviceSpec gpu(double tflops, uint64_t memory) {
  DeviceSpec s;
  s.model = "test-gpu";
  s.peak_flops[static_cast<int>(DType::kF32)] = tflops * 1e12;
  s.peak_flops[static_cast<int>(DType::kF16)] = 4 * tflops * 1e12;
  s.memory_bandwidth = 900e9;
  s.memory_bytes = memory;
  s.launch_overhead = 5e-6;
  return s;
}

// One host with k equal GPUs of `memory` bytes on a 25 GB/s per-pair link.
Cluster one_host(int k, uint64_t memory = uint64_t{32} << 30) {
  Cluster c;
  c.name = "one-host";
  c.add_host("host0", gpu(15, memory), k);
  c.set_link(LinkLevel::kIntraHost, {"nvlink", 5e-6, 25e9, LinkSharing::kPerPair});
  return c;
}

Graph layered_step() {
  LayeredRandomOptions o;
  o.n_ops = 400;
  o.width = 8;
  o.seed = 7;
  o.max_param_bytes = 4 << 20;
  return expand_training_step(make_layered_random(o));
}

Graph transformer_step() {
  TransformerOptions t;
  t.layers = 4;
  t.d_model = 256;
  t.heads = 4;
  t.seq_len = 64;
  t.batch = 4;
  t.vocab = 4000;
  return expand_training_step(make_transformer(t));
}

struct Bench {
  Graph graph;
  Cluster cluster;
  CostModel cost{cluster, default_profile()};
  Simulator sim{graph, cluster, cost};
  Bench(Graph g, Cluster c) : graph(std::move(g)), cluster(std::move(c)) {}
  Problem problem() { return Problem{graph, cluster, cost, sim, {}}; }
};

// Compute weight of every part <= (1 + tol) * average + the heaviest vertex.
void expect_balanced(const PartitionGraph& pg, const std::vector<int>& part, int k, double tol,
                     const std::string& what) {
  std::vector<double> load(k, 0);
  double total = 0, heaviest = 0;
  for (int v = 0; v < pg.num_vertices; ++v) {
    load[part[v]] += pg.compute_weight[v];
    total += pg.compute_weight[v];
    heaviest = std::max<double>(heaviest, pg.compute_weight[v]);
  }
  for (int p = 0; p < k; ++p)
    EXPECT_LE(load[p], (1 + tol) * total / k + heaviest) << what << " part " << p << " of " << k;
}

// Ops linked by forward_op or sharing a group sit on one device.
void expect_groups_together(const Graph& g, const Plan& plan) {
  std::map<std::string, int> group_device;
  for (OpId i = 0; i < g.num_ops(); ++i) {
    const Op& o = g.op(i);
    if (o.forward_op != kNoOp) {
      EXPECT_EQ(plan.placement[i], plan.placement[o.forward_op]) << o.name;
    }
    if (!o.group.empty()) {
      auto it = group_device.emplace(o.group, plan.placement[i]).first;
      EXPECT_EQ(plan.placement[i], it->second) << o.name;
    }
  }
}

TEST(PartitionGraph, ContractsGradAndUpdateOntoTheirForwardOp) {
  Bench s(transformer_step(), one_host(2));
  const PartitionGraph pg = build_partition_graph(s.graph, s.cost, 0);
  // No Op::group in the generator: one vertex per forward op (4 layers x 14 + 4).
  EXPECT_EQ(pg.num_vertices, 4 * 14 + 4);
  for (OpId i = 0; i < s.graph.num_ops(); ++i) {
    if (s.graph.op(i).forward_op != kNoOp) {
      EXPECT_EQ(pg.vertex_of_op[i], pg.vertex_of_op[s.graph.op(i).forward_op]);
    }
  }
  // Symmetric CSR without self loops, weights >= 1.
  for (int v = 0; v < pg.num_vertices; ++v) {
    for (int e = pg.xadj[v]; e < pg.xadj[v + 1]; ++e) {
      const int w = pg.adjncy[e];
      EXPECT_NE(w, v);
      EXPECT_GE(pg.adjwgt[e], 1);
      const auto b = pg.adjncy.begin() + pg.xadj[w], en = pg.adjncy.begin() + pg.xadj[w + 1];
      const auto it = std::find(b, en, v);
      ASSERT_NE(it, en);
      EXPECT_EQ(pg.edge_bytes[it - pg.adjncy.begin()], pg.edge_bytes[e]);
    }
  }
}

TEST(PartitionGraph, EdgeBytesAndWeightsOfAHandBuiltGraph) {
  // a -> t1 (100 B) -> b, a -> t2 (50 B) -> {b, c}; b and c in one group "g".
  GraphBuilder gb("tiny");
  const TensorId x = gb.add_tensor("x", 10);
  const TensorId t1 = gb.add_tensor("t1", 100), t2 = gb.add_tensor("t2", 50);
  const TensorId y1 = gb.add_tensor("y1", 10), y2 = gb.add_tensor("y2", 10);
  Op a;
  a.name = "a";
  a.flops = 1e6;
  a.param_bytes = 1000;
  a.inputs = {x};
  a.outputs = {t1, t2};
  gb.add_op(a);
  Op b;
  b.name = "b";
  b.group = "g";
  b.inputs = {t1, t2};
  b.outputs = {y1};
  gb.add_op(b);
  Op c = b;
  c.name = "c";
  c.inputs = {t2};
  c.outputs = {y2};
  gb.add_op(c);
  const Graph g = gb.build();
  const Cluster cl = one_host(2);
  const CostModel cost(cl, default_profile());
  const PartitionGraph pg = build_partition_graph(g, cost, 0);
  ASSERT_EQ(pg.num_vertices, 2);
  EXPECT_EQ(pg.vertex_of_op, (std::vector<int>{0, 1, 1}));
  // t2 is read twice by group g but counted once: 100 + 50 bytes.
  ASSERT_EQ(pg.adjncy, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(pg.edge_bytes[0], 150u);
  EXPECT_EQ(pg.adjwgt[0], 150);
  EXPECT_EQ(pg.resident[0], 1000u);  // forward graph: parameters only
  EXPECT_EQ(pg.resident[1], 0u);
  EXPECT_EQ(pg.memory_weight[1], 1);  // zero scaled up to the minimum weight
}

TEST(Metis, BalancedWithinUfactorGroupedAndValid) {
  for (int which = 0; which < 2; ++which) {
    for (int k : {2, 4, 8}) {
      Bench s(which == 0 ? layered_step() : transformer_step(), one_host(k));
      const std::string what = (which == 0 ? "layered k=" : "transformer k=") + std::to_string(k);
      const PartitionGraph pg = build_partition_graph(s.graph, s.cost, 0);
      MetisOptions mo;
      const std::vector<int> part = metis_partition(pg, k, mo, 1);
      expect_balanced(pg, part, k, mo.ufactor / 1000.0, what);
      MetisPlacer placer;
      const Plan plan = placer.search(s.problem(), SearchBudget{});
      EXPECT_EQ(plan.method, "metis");
      EXPECT_NO_THROW(plan.validate(s.graph, s.cluster)) << what;
      expect_groups_together(s.graph, plan);
      // Every device gets work.
      std::vector<int> used(k, 0);
      for (int d : plan.placement) used[d] = 1;
      EXPECT_EQ(std::count(used.begin(), used.end(), 1), k) << what;
    }
  }
}

TEST(Scotch, BalancedGroupedAndValid) {
  for (int which = 0; which < 2; ++which) {
    for (int k : {2, 4, 8}) {
      Bench s(which == 0 ? layered_step() : transformer_step(), one_host(k));
      const std::string what = (which == 0 ? "layered k=" : "transformer k=") + std::to_string(k);
      const PartitionGraph pg = build_partition_graph(s.graph, s.cost, 0);
      ScotchOptions so;
      std::vector<int> devs(k);
      for (int d = 0; d < k; ++d) devs[d] = d;
      ScotchArchKind arch = ScotchArchKind::kTreeLeaf;
      const std::vector<int> part = scotch_map(pg, s.cluster, devs, so, 1, &arch);
      EXPECT_EQ(arch, ScotchArchKind::kComplete);
      expect_balanced(pg, part, k, so.imbalance, what);
      ScotchPlacer placer;
      const Plan plan = placer.search(s.problem(), SearchBudget{});
      EXPECT_EQ(plan.method, "scotch");
      EXPECT_NO_THROW(plan.validate(s.graph, s.cluster)) << what;
      expect_groups_together(s.graph, plan);
    }
  }
}

TEST(Partitioners, DeterministicForASeed) {
  Bench s(layered_step(), one_host(4));
  for (const char* name : {"metis", "scotch"}) {
    SearchBudget b;
    b.seed = 42;
    const Plan p1 = make_placer(name)->search(s.problem(), b);
    const Plan p2 = make_placer(name)->search(s.problem(), b);
    EXPECT_EQ(p1.placement, p2.placement) << name;
  }
}

// Two blobs of 6 ops (every op reads every earlier op of its blob, 1 MB tensors) joined by
// one 1 KB tensor from a5 to b0: the only balanced 2-way cut with a small cut is there.
Graph two_blobs() {
  GraphBuilder gb("two_blobs");
  const TensorId x = gb.add_tensor("x", 1 << 20);
  TensorId thin = 0;
  for (int blob = 0; blob < 2; ++blob) {
    std::vector<TensorId> outs;
    for (int i = 0; i < 6; ++i) {
      const std::string name = std::string(blob == 0 ? "a" : "b") + std::to_string(i);
      Op o;
      o.name = name;
      o.type = "MatMul";
      o.category = OpCategory::kMatMul;
      o.flops = 1e9;
      o.inputs = outs;
      if (i == 0) o.inputs.push_back(blob == 0 ? x : thin);
      const TensorId out = gb.add_tensor(name + ".out", 1 << 20);
      o.outputs = {out};
      if (blob == 0 && i == 5) {
        thin = gb.add_tensor("thin", 1024);
        o.outputs.push_back(thin);
      }
      gb.add_op(o);
      outs.push_back(out);
    }
  }
  return gb.build();
}

// Blobs of 6 dense ops (1 MB tensors); blob i's first op reads `links[i-1]` bytes from the
// last op of blob i-1. Op j of blob i has id 6 * i + j.
Graph blob_chain(const std::vector<uint64_t>& links) {
  GraphBuilder gb("blob_chain");
  TensorId prev = gb.add_tensor("x", 1 << 20);
  for (size_t blob = 0; blob <= links.size(); ++blob) {
    std::vector<TensorId> outs;
    for (int i = 0; i < 6; ++i) {
      const std::string name = "blob" + std::to_string(blob) + "." + std::to_string(i);
      Op o;
      o.name = name;
      o.type = "MatMul";
      o.category = OpCategory::kMatMul;
      o.flops = 1e9;
      o.inputs = outs;
      if (i == 0) o.inputs.push_back(prev);
      const TensorId out = gb.add_tensor(name + ".out", 1 << 20);
      o.outputs = {out};
      if (i == 5 && blob < links.size()) {
        prev = gb.add_tensor(name + ".link", links[blob]);
        o.outputs.push_back(prev);
      }
      gb.add_op(o);
      outs.push_back(out);
    }
  }
  return gb.build();
}

TEST(Metis, PartsThatTalkMostShareAHost) {
  // 2 hosts x 2 GPUs; blobs A - B - C - D with links 1 KB, 2 MB, 1 KB: METIS cuts all
  // three links (one blob per device) and the part mapping puts B, C on one host.
  Cluster cl;
  cl.name = "two-by-two";
  for (int h = 0; h < 2; ++h) cl.add_host("h" + std::to_string(h), gpu(15, uint64_t{32} << 30), 2);
  cl.set_link(LinkLevel::kIntraHost, {"nvlink", 5e-6, 25e9, LinkSharing::kPerPair});
  cl.set_link(LinkLevel::kInterHost, {"ethernet", 25e-6, 1e9, LinkSharing::kPerHost});
  Bench s(blob_chain({1024, 2 << 20, 1024}), cl);
  for (uint64_t seed : {1, 2, 3, 4}) {
    SearchBudget b;
    b.seed = seed;
    const Plan plan = MetisPlacer().search(s.problem(), b);
    auto host_of_blob = [&](int blob) { return cl.device(plan.placement[6 * blob]).host; };
    for (int blob = 0; blob < 4; ++blob)
      for (int j = 1; j < 6; ++j) EXPECT_EQ(plan.placement[6 * blob + j], plan.placement[6 * blob]);
    EXPECT_EQ(host_of_blob(1), host_of_blob(2)) << "seed " << seed;
    EXPECT_EQ(host_of_blob(0), host_of_blob(3)) << "seed " << seed;
    EXPECT_NE(host_of_blob(0), host_of_blob(1)) << "seed " << seed;
  }
}

TEST(Metis, MapPartsToHostsPairsTheHeavyTalkers) {
  // One vertex per part; 0-2 and 1-3 exchange 100 bytes, 0-1 one byte. Host 0 seeds with
  // part 0 (total 101, first of the two largest), adds part 2 (100 with part 0); host 1
  // takes 1 then 3.
  PartitionGraph pg;
  pg.num_vertices = 4;
  pg.xadj = {0, 2, 4, 5, 6};
  pg.adjncy = {1, 2, 0, 3, 0, 1};
  pg.edge_bytes = {1, 100, 1, 100, 100, 100};
  pg.adjwgt = {1, 100, 1, 100, 100, 100};
  EXPECT_EQ(map_parts_to_hosts(pg, {0, 1, 2, 3}, {{0, 1}, {2, 3}}), (std::vector<int>{0, 2, 1, 3}));
}

TEST(Partitioners, TwoBlobsAreCutAtTheThinEdge) {
  Bench s(two_blobs(), one_host(2));
  for (const char* name : {"metis", "scotch"}) {
    const Plan plan = make_placer(name)->search(s.problem(), SearchBudget{});
    for (int i = 1; i < 6; ++i) {
      EXPECT_EQ(plan.placement[i], plan.placement[0]) << name << " a" << i;
      EXPECT_EQ(plan.placement[6 + i], plan.placement[6]) << name << " b" << i;
    }
    EXPECT_NE(plan.placement[0], plan.placement[6]) << name;
  }
}

TEST(Scotch, TreeLeafKeepsConsecutiveChainPartsOnOneHost) {
  // 2 hosts x 8 V100 (NVLink 25 GB/s inside, 25 Gbit/s between): 64-op chain, 16 MB
  // activations. Optimal mapping: the first half of the chain on one host, the second on
  // the other, so the chain crosses hosts exactly once.
  const Cluster cl =
      load_cluster_yaml(PLACER_SOURCE_DIR "/datasets/clusters/automap_config_a.cluster.yaml");
  ChainOptions co;
  co.n = 64;
  co.activation_bytes = 16 << 20;
  const Graph g = make_chain(co);
  const CostModel cost(cl, default_profile());
  const PartitionGraph pg = build_partition_graph(g, cost, 0);
  std::vector<int> devs(16);
  for (int d = 0; d < 16; ++d) devs[d] = d;
  ScotchArchKind arch = ScotchArchKind::kComplete;
  const std::vector<int> part = scotch_map(pg, cl, devs, ScotchOptions{}, 1, &arch);
  EXPECT_EQ(arch, ScotchArchKind::kTreeLeaf);
  int host_changes = 0;
  for (int i = 0; i + 1 < 64; ++i)
    host_changes +=
        cl.device(part[pg.vertex_of_op[i]]).host != cl.device(part[pg.vertex_of_op[i + 1]]).host;
  EXPECT_EQ(host_changes, 1);
  expect_balanced(pg, part, 16, ScotchOptions{}.imbalance, "chain k=16");
}

TEST(Scotch, TreeLeafOnThreeHostsCrossesHostsTwice) {
  // 3 hosts x 2 GPUs, 25 GB/s inside a host, 1 GB/s between: a 60-op chain cut into 6
  // consecutive parts crosses hosts exactly twice when neighbouring parts share hosts.
  Cluster cl;
  cl.name = "three-hosts";
  for (int h = 0; h < 3; ++h) cl.add_host("h" + std::to_string(h), gpu(15, uint64_t{32} << 30), 2);
  cl.set_link(LinkLevel::kIntraHost, {"nvlink", 5e-6, 25e9, LinkSharing::kPerPair});
  cl.set_link(LinkLevel::kInterHost, {"ethernet", 25e-6, 1e9, LinkSharing::kPerHost});
  ChainOptions co;
  co.n = 60;
  co.activation_bytes = 16 << 20;
  const Graph g = make_chain(co);
  const CostModel cost(cl, default_profile());
  const PartitionGraph pg = build_partition_graph(g, cost, 0);
  ScotchArchKind arch = ScotchArchKind::kComplete;
  const std::vector<int> part = scotch_map(pg, cl, {0, 1, 2, 3, 4, 5}, ScotchOptions{}, 1, &arch);
  EXPECT_EQ(arch, ScotchArchKind::kTreeLeaf);
  int host_changes = 0;
  for (int i = 0; i + 1 < 60; ++i)
    host_changes +=
        cl.device(part[pg.vertex_of_op[i]]).host != cl.device(part[pg.vertex_of_op[i + 1]]).host;
  EXPECT_EQ(host_changes, 2);
}

TEST(Metis, HierarchicalCutsAChainOnceBetweenHosts) {
  const Cluster cl =
      load_cluster_yaml(PLACER_SOURCE_DIR "/datasets/clusters/automap_config_a.cluster.yaml");
  ChainOptions co;
  co.n = 64;
  co.activation_bytes = 16 << 20;
  Bench s(make_chain(co), cl);
  MetisOptions mo;
  mo.hierarchical = true;
  const Plan plan = MetisPlacer(mo).search(s.problem(), SearchBudget{});
  int host_changes = 0;
  std::vector<int> used(16, 0);
  for (int i = 0; i < 64; ++i) {
    used[plan.placement[i]] = 1;
    if (i + 1 < 64)
      host_changes += cl.device(plan.placement[i]).host != cl.device(plan.placement[i + 1]).host;
  }
  EXPECT_EQ(host_changes, 1);
  EXPECT_EQ(std::count(used.begin(), used.end(), 1), 16);
}

TEST(RepairMemory, MovesTheLightestCommunicationFirst) {
  // Path 0 -100- 1 -1- 2 -100- 3, 4 bytes resident each, all on device 0 of two 10-byte
  // devices: v0 moves (loss 100/4, tie with v3 broken by id), then v1 (it now gains 99).
  PartitionGraph pg;
  pg.num_vertices = 4;
  pg.xadj = {0, 1, 3, 5, 6};
  pg.adjncy = {1, 0, 2, 1, 3, 2};
  pg.edge_bytes = {100, 100, 1, 1, 100, 100};
  pg.adjwgt = {100, 100, 1, 1, 100, 100};
  pg.resident = {4, 4, 4, 4};
  Cluster cl = one_host(2, 10);
  std::vector<int> part = {0, 0, 0, 0};
  repair_memory(pg, cl, {0, 1}, &part);
  EXPECT_EQ(part, (std::vector<int>{1, 1, 0, 0}));
  // 16 bytes cannot fit in 2 x 7.
  Cluster small = one_host(2, 7);
  part = {0, 0, 0, 0};
  EXPECT_THROW(repair_memory(pg, small, {0, 1}, &part), Error);
  // 18 bytes fit in 2 x 11 in total, but three 6-byte vertices cannot be packed.
  Cluster packed = one_host(2, 11);
  pg.resident = {6, 6, 6, 0};
  part = {0, 0, 0, 0};
  EXPECT_THROW(repair_memory(pg, packed, {0, 1}, &part), Error);
}

TEST(Partitioners, RespectMemoryOrFailClearly) {
  // Chain of 8 ops with 1 GB of parameters each (2 GB resident with gradients, plus Adam's
  // 2 GB of state): 4 GB per op on 4 devices of 10 GB: at most 2 ops per device.
  ChainOptions co;
  co.n = 8;
  co.param_bytes = uint64_t{1} << 30;
  Bench s(expand_training_step(make_chain(co)), one_host(4, uint64_t{10} << 30));
  for (const char* name : {"metis", "scotch"}) {
    const Plan plan = make_placer(name)->search(s.problem(), SearchBudget{});
    std::vector<uint64_t> used(4, 0);
    for (OpId i = 0; i < s.graph.num_ops(); ++i)
      used[plan.placement[i]] += resident_bytes(s.graph, i);
    for (int d = 0; d < 4; ++d) EXPECT_LE(used[d], uint64_t{10} << 30) << name << " device " << d;
  }
  Bench tight(expand_training_step(make_chain(co)), one_host(4, uint64_t{6} << 30));
  for (const char* name : {"metis", "scotch"})
    EXPECT_THROW(make_placer(name)->search(tight.problem(), SearchBudget{}), Error) << name;
}

TEST(Metis, HeterogeneousDevicesGetWorkBySpeed) {
  // Host with one 30 TFLOPS and one 10 TFLOPS GPU: the fast one gets ~3/4 of the compute.
  Cluster c;
  c.name = "hetero";
  c.add_host("h", gpu(30, uint64_t{32} << 30), 1);
  c.add_device(0, "h/slow", gpu(10, uint64_t{32} << 30));
  c.set_link(LinkLevel::kIntraHost, {"pcie", 5e-6, 12e9, LinkSharing::kPerDevice});
  Bench s(layered_step(), c);
  const Plan plan = MetisPlacer().search(s.problem(), SearchBudget{});
  const PartitionGraph pg = build_partition_graph(s.graph, s.cost, 0);
  std::vector<double> load(2, 0);
  double total = 0;
  for (int v = 0; v < pg.num_vertices; ++v) total += pg.compute_seconds[v];
  std::vector<int> vertex_device(pg.num_vertices, -1);
  for (OpId i = 0; i < s.graph.num_ops(); ++i)
    vertex_device[pg.vertex_of_op[i]] = plan.placement[i];
  for (int v = 0; v < pg.num_vertices; ++v) load[vertex_device[v]] += pg.compute_seconds[v];
  EXPECT_NEAR(load[0] / total, 0.75, 0.06);
}

TEST(Scotch, WeightedCompleteGraphForUnequalDevices) {
  Cluster c;
  c.name = "hetero";
  c.add_host("h", gpu(30, uint64_t{32} << 30), 1);
  c.add_device(0, "h/slow", gpu(10, uint64_t{32} << 30));
  c.set_link(LinkLevel::kIntraHost, {"pcie", 5e-6, 12e9, LinkSharing::kPerDevice});
  const Graph g = layered_step();
  const CostModel cost(c, default_profile());
  const PartitionGraph pg = build_partition_graph(g, cost, 0);
  ScotchArchKind arch = ScotchArchKind::kComplete;
  const std::vector<int> part = scotch_map(pg, c, {0, 1}, ScotchOptions{}, 1, &arch);
  EXPECT_EQ(arch, ScotchArchKind::kWeightedComplete);
  double fast = 0, total = 0;
  for (int v = 0; v < pg.num_vertices; ++v) {
    total += pg.compute_weight[v];
    if (part[v] == 0) fast += pg.compute_weight[v];
  }
  EXPECT_NEAR(fast / total, 0.75, 0.06);
}

TEST(Partitioners, OnlyTheProblemDevices) {
  Bench s(transformer_step(), one_host(4));
  for (const char* name : {"metis", "scotch"}) {
    Problem p = s.problem();
    p.devices = {3, 1};
    const Plan plan = make_placer(name)->search(p, SearchBudget{});
    std::vector<int> count(4, 0);
    for (int d : plan.placement) ++count[d];
    EXPECT_EQ(count[0] + count[2], 0) << name;
    EXPECT_GT(count[1], 0) << name;
    EXPECT_GT(count[3], 0) << name;
  }
}

TEST(Partitioners, IndependentOpsAndTinyGraphs) {
  // 6 equal ops without edges between them on 2 devices: 3 each. 1 op on 2 devices: valid.
  for (int n : {6, 1}) {
    GraphBuilder gb("independent");
    for (int i = 0; i < n; ++i) {
      Op o;
      o.name = "op" + std::to_string(i);
      o.type = "MatMul";
      o.category = OpCategory::kMatMul;
      o.flops = 1e9;
      o.inputs = {gb.add_tensor("x" + std::to_string(i), 1024)};
      o.outputs = {gb.add_tensor("y" + std::to_string(i), 1024)};
      gb.add_op(o);
    }
    Bench s(gb.build(), one_host(2));
    for (const char* name : {"metis", "scotch"}) {
      const Plan plan = make_placer(name)->search(s.problem(), SearchBudget{});
      EXPECT_NO_THROW(plan.validate(s.graph, s.cluster)) << name;
      if (n == 6) {
        EXPECT_EQ(std::count(plan.placement.begin(), plan.placement.end(), 0), 3) << name;
      }
    }
  }
}

TEST(Partitioners, Registered) {
  EXPECT_EQ(make_placer("metis")->name(), "metis");
  EXPECT_EQ(make_placer("scotch")->name(), "scotch");
}

}  // namespace
}  // namespace placer
