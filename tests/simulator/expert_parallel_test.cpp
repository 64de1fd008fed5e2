// Expert parallelism in the simulator (simulator/expert_parallel.cpp): the all-to-all's cost
// from the link bandwidths, the step of a 2-node 8-expert layer under given expert maps and
// routing (the all-to-all follows where the copies live), the all-to-all bytes of a generated MoE
// layer, memory per GPU with the optimizer state sharded over expert data parallelism, and the
// named errors. All by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "datasets/hf_config.h"
#include "sim_fixtures.h"
#include "simulator/breakdown.h"
#include "simulator/expert_dispatch.h"
#include "src/graph/moe_attrs.h"
#include "src/graph/training_step.h"
#include "src/plan/megatron_plan.h"
#include "src/plan/tensor_parallel.h"
#include "src/util/error.h"

namespace placer {
namespace {

using testing::make_cluster;
using testing::TestGraph;

void mark(Op& op, const char* role, int layer = 0) {
  op.attrs.emplace_back(kMoeLayerAttr, std::to_string(layer));
  op.attrs.emplace_back(kMoeRoleAttr, role);
  if (std::string(role) == kMoeExpertUp) {
    op.attrs.emplace_back(kMoeExpertsAttr, "8");
    op.attrs.emplace_back(kMoeTopKAttr, "2");
  }
}

// One MoE layer over 8 data-parallel ranks: dispatch (8 MB of routed tokens in all, 1 MB per
// rank) -> the 8 experts' GEMMs (8 GFLOP in all) -> combine. Ops take FLOPs / 1e12 s.
Graph ep_layer() {
  TestGraph t("ep_layer");
  const TensorId x = t.tensor("x", 8);
  const TensorId routed = t.tensor("routed", 8000000);
  const TensorId out = t.tensor("expert_out", 8000000);
  const TensorId y = t.tensor("y", 8);
  mark(t.at(t.op("dispatch", 0, {x}, {routed})), kMoeDispatch);
  mark(t.at(t.op("experts", 8e9, {routed}, {out})), kMoeExpertUp);
  mark(t.at(t.op("combine", 0, {out}, {y})), kMoeCombine);
  return t.build();
}

// 2 hosts of 4; no latency; 100 GB/s inside a host, 10 GB/s between hosts (per pair).
Cluster two_nodes() { return make_cluster(2, 4, testing::link(0, 100e9), testing::link(0, 10e9)); }

Plan ep_plan(const Graph& g, int ep) {
  Plan p = testing::place(g, std::vector<int>(g.num_ops(), 0));
  p.data_parallel.replicas = 8;
  p.expert_parallel.degree = ep;
  return p;
}

TEST(ExpertParallel, AllToAllFromTheLinkBandwidths) {
  const Cluster c = make_cluster(2, 4, testing::link(1e-6, 100e9), testing::link(5e-6, 10e9));
  const CostModel cost(c, uniform_profile());
  // One host: latency + 3/4 of 8 MB over 100 GB/s.
  EXPECT_NEAR(
      cost.collective_time(CollectiveKind::kAllToAll, {0, 1, 2, 3}, 8000000, SyncScheme::kAuto),
      1e-6 + 6e6 / 100e9, 1e-12);
  // Two hosts: 3/8 stays on the host (31 us), 4/8 crosses at 10 GB/s (405 us): the slower.
  EXPECT_NEAR(cost.collective_time(CollectiveKind::kAllToAll, {0, 1, 2, 3, 4, 5, 6, 7}, 8000000,
                                   SyncScheme::kAuto),
              5e-6 + 4e6 / 10e9, 1e-12);
  // One NIC per host carries the 4 local ranks' shares together.
  const Cluster shared = make_cluster(2, 4, testing::link(1e-6, 100e9),
                                      testing::link(5e-6, 10e9, LinkSharing::kPerHost));
  const CostModel cs(shared, uniform_profile());
  EXPECT_NEAR(cs.collective_time(CollectiveKind::kAllToAll, {0, 1, 2, 3, 4, 5, 6, 7}, 8000000,
                                 SyncScheme::kAuto),
              5e-6 + 4 * 4e6 / 10e9, 1e-12);
  EXPECT_EQ(bus_factor(CollectiveKind::kAllToAll, 8), 7.0 / 8);
}

TEST(ExpertParallel, TwoNodeEightExpertLayerUnderAGivenMap) {
  const Graph g = ep_layer();
  const Cluster c = two_nodes();
  const CostModel cost(c, uniform_profile());
  Simulator sim(g, c, cost);
  // Expert 0 gets 30% of the tokens, the others 10% each.
  RoutingStats routing;
  routing.share = {{0.3, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}};
  SimOptions opts;
  opts.routing = &routing;
  opts.record_events = true;
  Plan p = ep_plan(g, 8);
  p.expert_parallel.layers.resize(1);
  for (int e = 0; e < 8; ++e) p.expert_parallel.layers[0].replicas.push_back({e});
  // Rank 0 computes 0.3 x 8 = 2.4 even shares: 2.4 ms of expert GEMMs. It receives 2.4 MB;
  // half of it crosses the hosts at 10 GB/s: 120 us per all-to-all, dispatch and combine.
  SimResult r = sim.run(p, opts);
  EXPECT_NEAR(r.step_time, 2.4e-3 + 2 * 1.2e-4, 1e-9);
  ASSERT_EQ(r.expert_load.size(), 1u);
  EXPECT_NEAR(r.expert_load[0][0], 2.4, 1e-12);
  EXPECT_NEAR(r.expert_load[0][7], 0.8, 1e-12);
  const std::vector<DeviceBreakdown> rows = step_breakdown(r, g, p);
  ASSERT_FALSE(rows.empty());
  EXPECT_NEAR(rows[0].collective[static_cast<int>(CollectiveKind::kAllToAll)], 2.4e-4, 1e-9);
  // A replica of expert 0 on rank 4 (the other node): each node's tokens for expert 0 stay
  // on the node. Ranks 0 and 4 then compute 4 x 0.3 = 1.2 and 4 x 0.3 + 8 x 0.1 = 2.0
  // shares; the step follows rank 4. Across the nodes every rank now sends (experts on the
  // other node: 4 x 0.1 MB) and receives (its single-copy expert from 4 senders: 4 x 0.1 MB)
  // 0.4 MB: 40 us; within the node rank 4 receives 3 x 0.4 MB at 100 GB/s: 12 us.
  p.expert_parallel.layers[0].replicas[0] = {0, 4};
  r = sim.run(p, opts);
  EXPECT_NEAR(r.expert_load[0][0], 1.2, 1e-12);
  EXPECT_NEAR(r.expert_load[0][4], 2.0, 1e-12);
  EXPECT_NEAR(r.step_time, 2.0e-3 + 2 * 0.4e-4, 1e-9);
  EXPECT_NEAR(step_breakdown(r, g, p)[0].collective[static_cast<int>(CollectiveKind::kAllToAll)],
              0.8e-4, 1e-9);
  // The replica on rank 1 instead (the same node): the same loads (rank 1: 8 x 0.15 +
  // 8 x 0.1 = 2.0) but the other node's 4 senders split expert 0 over ranks 0 and 1 across
  // the nodes: rank 1 receives 4 x (0.15 + 0.1) = 1.0 MB at 10 GB/s: 100 us.
  p.expert_parallel.layers[0].replicas[0] = {0, 1};
  r = sim.run(p, opts);
  EXPECT_NEAR(r.expert_load[0][1], 2.0, 1e-12);
  EXPECT_NEAR(r.step_time, 2.0e-3 + 2 * 1.0e-4, 1e-9);
  EXPECT_NEAR(step_breakdown(r, g, p)[0].collective[static_cast<int>(CollectiveKind::kAllToAll)],
              2.0e-4, 1e-9);
  // Uniform routing, default map (expert e on rank e): 1 ms and 2 x 50 us.
  r = sim.run(ep_plan(g, 8));
  EXPECT_NEAR(r.step_time, 1.0e-3 + 2 * 0.5e-4, 1e-9);
  // Without expert parallelism the routing changes nothing: every rank runs its own tokens.
  Plan dense = ep_plan(g, 1);
  EXPECT_NEAR(sim.run(dense, opts).step_time, 1.0e-3, 1e-9);
}

// The chance that top-k routing reaches a set of experts: hypergeometric under uniform
// routing. DeepSeek-V3 (256 experts, top-8) on 4 nodes of 64 experts: 1 - C(192, 8) / C(256, 8)
// = 0.903554 per node, 3.61 destination nodes per token where the all-to-all sends 8 copies.
TEST(ExpertParallel, RoutedToAnyIsTheHypergeometricChance) {
  EXPECT_NEAR(routed_to_any(0.125, 2, 8), 1 - 21.0 / 28, 1e-15);  // 1 of 8: 1 - C(7,2)/C(8,2)
  EXPECT_NEAR(routed_to_any(0.5, 2, 8), 1 - 6.0 / 28, 1e-15);     // 4 of 8: 1 - C(4,2)/C(8,2)
  EXPECT_NEAR(routed_to_any(0.25, 8, 256), 0.9035535763916283, 1e-12);
  EXPECT_NEAR(routed_to_any(4.0 / 256, 8, 256), 0.11993359674640758, 1e-12);  // one ep-64 rank
  EXPECT_EQ(routed_to_any(0.0, 8, 256), 0.0);
  EXPECT_EQ(routed_to_any(1.0, 8, 256), 1.0);
  EXPECT_NEAR(routed_to_any(0.75, 2, 8), 1 - 1.0 / 28, 1e-15);  // 6 of 8: 1 - C(2,2)/C(8,2)
  EXPECT_EQ(routed_to_any(0.875, 2, 8), 1.0);                   // 7 of 8: every pair of 2 holds one
}

// The flex dispatcher (DeepEP / HybridEP) on the 2-node layer, uniform routing, expert e on
// rank e, top-2 of 8 (1 MB of routed copies per rank: 0.5 MB per copy slot of its tokens). A
// token reaches another node with chance 1 - C(4,2)/C(8,2) = 11/14 and one other rank with
// chance 1 - C(7,2)/C(8,2) = 1/4. Per rank, in MB: across the nodes 11/14 / 2 = 11/28 sent and
// received (0.5 with the all-to-all); within the node 3 x 1/4 / 2 = 3/8 to its own node's ranks
// plus the relayed tokens, 4 senders x 4 ranks x 1/8 x 3/4 (not to the relay) / 4 = 3/8: 3/4.
// Per all-to-all max(0.75 MB / 100 GB/s, 11/28 MB / 10 GB/s) = 39.29 us, twice.
TEST(ExpertParallel, FlexDispatcherSendsATokenOncePerNode) {
  const Graph g = ep_layer();
  const Cluster c = two_nodes();
  const CostModel cost(c, uniform_profile());
  Simulator sim(g, c, cost);
  Plan p = ep_plan(g, 8);
  for (const ExpertDispatcher d : {ExpertDispatcher::kDeepEP, ExpertDispatcher::kHybridEP}) {
    p.expert_parallel.dispatcher = d;
    EXPECT_NEAR(sim.run(p).step_time, 1.0e-3 + 2 * (11.0 / 28) * 1e6 / 10e9, 1e-9);
  }
  // On one node: only the per-rank copies, 7 x 1/4 / 2 = 7/8 MB at 100 GB/s (8.75 us, against
  // the all-to-all's 7/8 of 1 MB: the same, each rank holding one of the 8 experts).
  const Cluster one = make_cluster(1, 8, testing::link(0, 100e9), testing::link(0, 10e9));
  const CostModel cost1(one, uniform_profile());
  Simulator sim1(g, one, cost1);
  EXPECT_NEAR(sim1.run(p).step_time, 1.0e-3 + 2 * 7 * 0.125 * 1e6 / 100e9, 1e-9);
  // Two experts per rank (ep 4 on one host of 4): a token reaches another rank with chance
  // 1 - C(6,2)/C(8,2) = 13/28, the all-to-all's 2/8 copy share per rank; 3 x 13/56 MB.
  const Cluster four = make_cluster(1, 4, testing::link(0, 100e9), testing::link(0, 10e9));
  const CostModel cost4(four, uniform_profile());
  Simulator sim4(g, four, cost4);
  Plan p4 = testing::place(g, std::vector<int>(g.num_ops(), 0));
  p4.data_parallel.replicas = 4;
  p4.expert_parallel.degree = 4;
  p4.expert_parallel.dispatcher = ExpertDispatcher::kDeepEP;
  const double per_rank = 2e6;  // 8 MB over 4 ranks
  EXPECT_NEAR(sim4.run(p4).step_time, 2.0e-3 + 2 * 3 * (13.0 / 28) / 2 * per_rank / 100e9, 1e-9);
  p4.expert_parallel.dispatcher = ExpertDispatcher::kAllToAll;
  EXPECT_NEAR(sim4.run(p4).step_time, 2.0e-3 + 2 * 0.75 * per_rank / 100e9, 1e-9);
}

// The tiny Mixtral (h 64, 4 experts of 128, top-2), 2 layers, batch 2 of 8 tokens.
Graph tiny_mixtral() {
  const HfModel m = parse_hf_config(R"({"model_type": "mixtral", "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "vocab_size": 100, "num_local_experts": 4,
      "num_experts_per_tok": 2})",
                                    "tiny.json");
  HfGraphOptions o;
  o.seq_len = 8;
  o.batch = 2;
  return expand_training_step(make_hf_graph(m, o));
}

// The forward time of the first expert up GEMM on device 0 (its first micro-batch).
double expert_up_time(const Graph& g, const SimResult& r) {
  for (const SimEvent& e : r.events) {
    if (e.kind != SimEvent::kCompute || e.device != 0 || e.op == kNoOp) continue;
    const std::string* role = find_op_attr(g.op(e.op), kMoeRoleAttr);
    if (role != nullptr && *role == kMoeExpertUp && g.op(e.op).phase == Phase::kForward)
      return e.end - e.start;
  }
  return -1;
}

// The bytes of every all-to-all device 0 runs, in event order.
std::vector<uint64_t> all_to_all_bytes(const SimResult& r) {
  std::vector<uint64_t> bytes;
  for (const SimEvent& e : r.events) {
    if (e.kind == SimEvent::kCollective && e.device == 0 &&
        e.collective == static_cast<uint8_t>(CollectiveKind::kAllToAll)) {
      bytes.push_back(e.bytes);
    }
  }
  return bytes;
}

// The all-to-all bytes device 0 runs for `p` on `c` (uniform profile).
std::vector<uint64_t> all_to_all_bytes(const Graph& g, const Cluster& c, const Plan& p) {
  const CostModel cost(c, uniform_profile());
  Simulator sim(g, c, cost);
  SimOptions opts;
  opts.record_events = true;
  return all_to_all_bytes(sim.run(p, opts));
}

TEST(ExpertParallel, AllToAllBytesOfAGeneratedLayer) {
  // Tiny Mixtral, bf16, 2 ranks.
  const Graph g = tiny_mixtral();
  Plan p = testing::place(g, std::vector<int>(g.num_ops(), 0));
  p.data_parallel.replicas = 2;
  p.expert_parallel.degree = 2;
  // Per rank one sequence: 8 tokens x 2 experts x 64 x 2 bytes = 2048 bytes each way, for
  // dispatch and combine, forward and backward, in both layers.
  EXPECT_EQ(all_to_all_bytes(g, make_cluster(1, 2, testing::link(0, 100e9), testing::link(0, 10e9)), p),
            std::vector<uint64_t>(8, 2048));
}

// Megatron's token dispatcher under sequence parallelism: each TP rank routes its own 1/tp
// of the sequence, so the all-to-all moves half the bytes of the tp 1 layer above. tp 2 x
// dp 2 on 4 GPUs, ep 2 (etp 1), one 8-token sequence per data-parallel rank: a TP rank
// dispatches 4 tokens x 2 experts x 64 x 2 bytes = 1024 bytes each way.
TEST(ExpertParallel, SequenceParallelRanksDispatchTheirOwnTokens) {
  const Graph g = tiny_mixtral();
  const Cluster c = make_cluster(1, 4, testing::link(0, 100e9), testing::link(0, 10e9));
  MegatronConfig mc;
  mc.tp = 2;
  mc.dp = 2;
  mc.sequence_parallel = true;
  mc.global_batch = 2;
  Plan p = megatron_plan(g, mc);
  p.expert_parallel.degree = 2;
  p.expert_parallel.tensor_parallel = 1;
  // Dispatch and combine, forward and backward, 2 layers.
  EXPECT_EQ(all_to_all_bytes(g, c, p), std::vector<uint64_t>(8, 1024));
}

// Tensor parallelism 2 with sequence parallelism over a tiny Mixtral: the MoE ops split on
// the sequence as the other replicated ops, and the load-balancing loss (a scalar) reduces
// its sequence shard, its partial results all-reduced (one all-reduce of the scalar per MoE
// layer and micro-batch: 2 x 2).
TEST(ExpertParallel, SequenceParallelMoePlanValidatesAndSimulates) {
  const Graph g = tiny_mixtral();
  const Cluster c = make_cluster(1, 2, testing::link(0, 100e9), testing::link(0, 10e9));
  MegatronConfig mc;
  mc.tp = 2;
  mc.sequence_parallel = true;
  mc.global_batch = 2;
  const Plan p = megatron_plan(g, mc);
  EXPECT_NO_THROW(p.validate(g, c));
  int aux = 0;
  for (const OpPartition& q : expand_tensor_parallel(p, g, 2).partitions) {
    const std::string* role = find_op_attr(g.op(q.op), kMoeRoleAttr);
    if (role == nullptr) continue;
    if (*role == kMoeAuxLoss) {
      ++aux;
      EXPECT_EQ(q.dim, OpPartition::kReduceDim);
      EXPECT_FALSE(q.sharded_output);
    } else {
      EXPECT_EQ(q.dim, 1) << g.op(q.op).name;  // the sequence (or routed rows) dim
    }
  }
  EXPECT_EQ(aux, 2);
  const CostModel cost(c, uniform_profile());
  Simulator sim(g, c, cost);
  SimOptions opts;
  opts.record_events = true;
  const SimResult r = sim.run(p, opts);
  EXPECT_GT(r.step_time, 0);
  int aux_reduce = 0;
  for (const SimEvent& e : r.events) {
    if (e.kind != SimEvent::kCollective || e.op == kNoOp || e.device != 0) continue;
    const std::string* role = find_op_attr(g.op(e.op), kMoeRoleAttr);
    if (role == nullptr || *role != kMoeAuxLoss || g.op(e.op).phase != Phase::kForward) continue;
    ++aux_reduce;
    EXPECT_EQ(e.collective, static_cast<uint8_t>(CollectiveKind::kAllReduce));
    EXPECT_EQ(e.bytes, g.tensor(g.op(e.op).outputs[0]).bytes);
  }
  EXPECT_EQ(aux_reduce, 4);
}

// Expert tensor parallelism splits each expert's width over etp ranks: a rank computes 1/etp
// of its TP group's expert GEMMs. Sequence parallelism splits the group's tokens over its tp
// ranks; the ETP group gathers them back before the GEMMs, so the rank's share stays 1/2
// with tp 2 and etp 2 (not 1/4). Compute-bound devices at 1 TFLOP/s; 2 micro-batches.
TEST(ExpertParallel, ExpertTensorParallelTimeIsTheGemmFlopsOverEtp) {
  const Graph g = tiny_mixtral();
  DeviceSpec spec = testing::test_spec();
  spec.memory_bandwidth = 1e18;  // the GEMM's time is its FLOPs / peak
  Cluster c;
  c.name = "compute-bound";
  c.add_host("host0", spec, 2);
  c.set_link(LinkLevel::kIntraHost, testing::link(0, 100e9));
  c.set_link(LinkLevel::kInterHost, testing::link(0, 10e9));
  const CostModel cost(c, uniform_profile());
  Simulator sim(g, c, cost);
  double up_flops = 0;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const std::string* role = find_op_attr(g.op(o), kMoeRoleAttr);
    if (role != nullptr && *role == kMoeExpertUp && g.op(o).phase == Phase::kForward) {
      up_flops = g.op(o).flops;
      break;
    }
  }
  // 2 x 8 tokens x 2 experts x 2 x 64 x 256 FLOPs for the batch; one micro-batch is half.
  ASSERT_DOUBLE_EQ(up_flops, 2.0 * 8 * 2 * 2 * 64 * 256);
  const double micro_batch = up_flops / 2 / 1e12;
  SimOptions opts;
  opts.record_events = true;
  for (bool sp : {false, true}) {
    MegatronConfig mc;
    mc.tp = 2;
    mc.sequence_parallel = sp;
    mc.global_batch = 2;
    mc.etp = 2;
    const Plan p = megatron_plan(g, mc);
    EXPECT_NEAR(expert_up_time(g, sim.run(p, opts)), micro_batch / 2, 1e-15) << "sp " << sp;
  }
}

// A tiny DeepSeek-V3 shape (MLA, a dense first layer, 4 experts with a shared one) under a
// Megatron configuration with tensor parallelism: the MLA projections split as Megatron-core
// splits them, the MoE ops run whole on each TP rank, and the experts spread over EP ranks
// (with ETP their GEMMs all-reduce over the expert's ETP ranks).
TEST(ExpertParallel, TensorParallelMlaAndExpertsUnderAMegatronPlan) {
  const HfModel m = parse_hf_config(R"({"model_type": "deepseek_v3", "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
      "vocab_size": 128, "q_lora_rank": 32, "kv_lora_rank": 16, "qk_rope_head_dim": 8,
      "qk_nope_head_dim": 16, "v_head_dim": 16, "n_routed_experts": 4,
      "num_experts_per_tok": 2, "moe_intermediate_size": 32, "n_shared_experts": 1,
      "first_k_dense_replace": 1})",
                                    "tiny.json");
  HfGraphOptions o;
  o.seq_len = 16;
  o.batch = 4;
  const Graph g = expand_training_step(make_hf_graph(m, o));
  const Cluster c = make_cluster(1, 4, testing::link(0, 100e9), testing::link(0, 10e9));
  const CostModel cost(c, uniform_profile());
  Simulator sim(g, c, cost);
  MegatronConfig mc;
  mc.tp = 2;
  mc.dp = 2;
  mc.global_batch = 4;
  mc.zero_stage = 1;
  for (int etp : {1, 2}) {
    Plan p = megatron_plan(g, mc);
    p.expert_parallel.degree = 2;
    p.expert_parallel.tensor_parallel = etp;
    SimOptions opts;
    opts.record_events = true;
    const SimResult r = sim.run(p, opts);
    EXPECT_GT(r.step_time, 0);
    int a2a = 0, expert_allreduce = 0;
    for (const SimEvent& e : r.events) {
      if (e.kind != SimEvent::kCollective || e.op == kNoOp || e.device != 0) continue;
      const bool expert = g.op(e.op).name.find(".experts.") != std::string::npos;
      a2a += e.collective == static_cast<uint8_t>(CollectiveKind::kAllToAll);
      expert_allreduce +=
          expert && e.collective == static_cast<uint8_t>(CollectiveKind::kAllReduce);
    }
    // One MoE layer, 2 micro-batches (4 / (1 x dp 2)): dispatch and combine in both passes,
    // and with ETP the down GEMM's forward and the up GEMM's backward.
    EXPECT_EQ(a2a, 8) << "etp " << etp;
    EXPECT_EQ(expert_allreduce, etp == 2 ? 4 : 0) << "etp " << etp;
  }
}

// x -> experts (8 MB of weights, 16 MB of optimizer state) -> head (1 MB, 2 MB).
Graph weighted_layer() {
  TestGraph t("weights");
  const TensorId x = t.tensor("x", 8);
  const TensorId h = t.tensor("h", 8);
  const TensorId y = t.tensor("y", 8);
  Op& experts = t.at(t.op("experts", 8e6, {x}, {h}));
  mark(experts, kMoeExpertUp);
  experts.param_bytes = 8000000;
  experts.state_bytes = 16000000;
  Op& head = t.at(t.op("head", 1e6, {h}, {y}));
  head.param_bytes = 1000000;
  head.state_bytes = 2000000;
  return t.build();
}

TEST(ExpertParallel, MemoryPerGpuWithExpertAndDataParallelOptimizerSharding) {
  const Graph g = weighted_layer();
  const Cluster c = two_nodes();
  const CostModel cost(c, uniform_profile());
  Simulator sim(g, c, cost);
  Plan p = ep_plan(g, 4);
  p.data_parallel.zero_stage = 1;
  // EP 4 of 8 ranks: 2 of the 8 experts per rank (2 MB of weights), their optimizer state
  // (4 MB) sharded over the 2 expert-data-parallel copies (2 MB); the dense head keeps 1 MB of
  // weights and 2 MB / 8 of state.
  const double resident = 2e6 + 2e6 + 1e6 + 2.5e5;
  EXPECT_NEAR(double(sim.run(p).peak_memory[0]), resident, 64);
  // No expert parallelism and no ZeRO: every weight and all optimizer state on each rank.
  EXPECT_NEAR(double(sim.run(ep_plan(g, 1)).peak_memory[0]), 8e6 + 16e6 + 1e6 + 2e6, 64);
  // EP without ZeRO: the rank's 2 experts with their whole optimizer state.
  p.data_parallel.zero_stage = 0;
  EXPECT_NEAR(double(sim.run(p).peak_memory[0]), 2e6 + 4e6 + 1e6 + 2e6, 64);
}

// x -> experts (8 MB of weights) -> head (1 MB), with their backward ops (gradients of 8 MB
// and 1 MB) and updates.
struct GradLayer {
  Graph g;
  TensorId expert_grad, head_grad;
};

GradLayer gradient_layer() {
  TestGraph t("grads");
  GradLayer l;
  const TensorId x = t.tensor("x", 8);
  const TensorId h = t.tensor("h", 8);
  const TensorId y = t.tensor("y", 8);
  const TensorId dh = t.tensor("dh", 8);
  l.expert_grad = t.tensor("expert_grad", 8000000, false, true);
  l.head_grad = t.tensor("head_grad", 1000000, false, true);
  const OpId experts = t.op("experts", 8e6, {x}, {h});
  mark(t.at(experts), kMoeExpertUp);
  t.at(experts).param_bytes = 8000000;
  const OpId head = t.op("head", 1e6, {h}, {y});
  t.at(head).param_bytes = 1000000;
  t.op("head_bwd", 2e6, {y, h}, {dh, l.head_grad}, Phase::kBackward, head);
  t.op("experts_bwd", 16e6, {dh}, {l.expert_grad}, Phase::kBackward, experts);
  t.op("head_update", 1e3, {l.head_grad}, {}, Phase::kOptimizer, head);
  t.op("experts_update", 1e3, {l.expert_grad}, {}, Phase::kOptimizer, experts);
  l.g = t.build();
  return l;
}

// The devices and bytes of the all-reduce of one gradient (its bucket).
std::pair<std::vector<int>, uint64_t> gradient_sync(const SimResult& r, TensorId grad) {
  std::pair<std::vector<int>, uint64_t> sync{{}, 0};
  for (const SimEvent& e : r.events) {
    if (e.kind != SimEvent::kCollective || e.tensor != grad) continue;
    sync.first.push_back(e.device);
    sync.second = e.bytes;
  }
  std::sort(sync.first.begin(), sync.first.end());
  return sync;
}

// The experts' gradients are all-reduced over the expert-data-parallel group (the ranks
// holding the same experts), the dense head's over all 8 data-parallel ranks.
TEST(ExpertParallel, ExpertGradientsAllReduceOverTheExpertDataParallelGroup) {
  const GradLayer l = gradient_layer();
  const Cluster c = two_nodes();
  const CostModel cost(c, uniform_profile());
  Simulator sim(l.g, c, cost);
  SimOptions opts;
  opts.record_events = true;
  // ep 4 of 8 ranks: rank 0 holds experts 0, 1 (2 MB of gradients), as rank 4 does (EDP 2).
  Plan p = ep_plan(l.g, 4);
  SimResult r = sim.run(p, opts);
  EXPECT_EQ(gradient_sync(r, l.expert_grad),
            (std::pair<std::vector<int>, uint64_t>{{0, 4}, 2000000}));
  EXPECT_EQ(gradient_sync(r, l.head_grad),
            (std::pair<std::vector<int>, uint64_t>{{0, 1, 2, 3, 4, 5, 6, 7}, 1000000}));
  // ep 2 x etp 2: 4 experts at half width (2 MB), EDP copies 0 and 4; ep 2: 4 experts whole
  // (4 MB), EDP copies 0, 2, 4, 6.
  p.expert_parallel.degree = 2;
  p.expert_parallel.tensor_parallel = 2;
  r = sim.run(p, opts);
  EXPECT_EQ(gradient_sync(r, l.expert_grad),
            (std::pair<std::vector<int>, uint64_t>{{0, 4}, 2000000}));
  p.expert_parallel.tensor_parallel = 1;
  r = sim.run(p, opts);
  EXPECT_EQ(gradient_sync(r, l.expert_grad),
            (std::pair<std::vector<int>, uint64_t>{{0, 2, 4, 6}, 4000000}));
  // ep 8: every rank holds its own expert, nothing to all-reduce.
  r = sim.run(ep_plan(l.g, 8), opts);
  EXPECT_TRUE(gradient_sync(r, l.expert_grad).first.empty());
}

// The expert all-to-all overlap (Megatron-core's --overlap-moe-expert-parallel-comm). One MoE
// layer on a pipeline stage of two data-parallel ranks (ep 2, one host at 10 GB/s), two
// micro-batches; per micro-batch and rank: attention 1 ms forward / 2 ms backward, experts
// 2 / 4 ms, and each of the four all-to-alls (dispatch, combine and their backwards) half of
// the 20 MB of routed tokens over the link: 1 ms.
struct OverlapLayer {
  Graph g;
  std::vector<OpId> forward;
};

OverlapLayer overlap_layer() {
  TestGraph t("a2a_overlap");
  const auto small = [&](const char* name) { return t.tensor(name, 8); };
  const TensorId h = small("h"), out = small("expert_out"), y = small("y");
  const TensorId routed = t.tensor("routed", 80000000);
  const TensorId gout = small("expert_out/grad"), grouted = small("routed/grad");
  const TensorId gh = small("h/grad");
  const OpId attn = t.op("attn", 4e9, {}, {h});
  const OpId disp = t.op("dispatch", 0, {h}, {routed});
  const OpId up = t.op("experts", 8e9, {routed}, {out});
  const OpId comb = t.op("combine", 0, {out}, {y});
  mark(t.at(disp), kMoeDispatch);
  mark(t.at(up), kMoeExpertUp);
  mark(t.at(comb), kMoeCombine);
  t.op("combine/grad", 0, {y}, {gout}, Phase::kBackward, comb);
  t.op("experts/grad", 16e9, {gout, routed}, {grouted}, Phase::kBackward, up);
  t.op("dispatch/grad", 0, {grouted}, {gh}, Phase::kBackward, disp);
  t.op("attn/grad", 8e9, {gh}, {}, Phase::kBackward, attn);
  return {t.build(), {attn, disp, up, comb}};
}

// Without the overlap each micro-batch runs alone: 2 x (1 + 2 + 4 + 2) ms of compute and
// 8 all-to-alls of 1 ms = 26 ms. With it F1 runs in the warm-up and then beside B0, the pair's
// ops ordered by their place in their pass (B0's first ops before F1's last ones); the
// all-to-alls queue on the ranks' one communication stream (times in ms): F0's attention
// 0-1; F1's attention 1-2 during F0's dispatch 1-2; F0's experts 2-4; F0's combine 4-5 and
// F1's dispatch 5-6 (the device idles 4-6); B0's combine gradient 6-7 during F1's experts
// 6-8; B0's expert backward 8-12; B0's dispatch gradient 12-13 and F1's combine 13-14 (idle
// 12-13) during B0's attention backward 13-15; B1 alone: its combine gradient 15-16 (idle),
// expert backward 16-20, dispatch gradient 20-21 (idle), attention backward 21-23: 23 ms, 3 of
// the 8 ms of all-to-all hidden.
TEST(ExpertParallel, AllToAllOverlapPairsTwoMicroBatches) {
  const OverlapLayer layer = overlap_layer();
  const Cluster c = make_cluster(1, 2, testing::link(0, 1e10), testing::link(0, 1e9));
  const CostModel cost(c, uniform_profile(1.0));
  Simulator sim(layer.g, c, cost);
  Plan p = testing::place(layer.g, std::vector<int>(layer.g.num_ops(), 0));
  p.pipeline.micro_batches = 2;
  p.pipeline.stages = {PipelineStage{layer.forward, {0, 1}}};
  p.expert_parallel.degree = 2;
  EXPECT_NEAR(sim.run(p).step_time, 26e-3, 1e-9);
  p.expert_parallel.overlap = true;
  EXPECT_NEAR(sim.run(p).step_time, 23e-3, 1e-9);
}

std::string run_error(Simulator& sim, const Plan& p, const SimOptions& o = {}) {
  try {
    sim.run(p, o);
  } catch (const ValidationError& e) {
    return e.what();
  }
  return "";
}

TEST(ExpertParallel, NamedErrors) {
  const Graph g = ep_layer();
  const Cluster c = two_nodes();
  const CostModel cost(c, uniform_profile());
  Simulator sim(g, c, cost);
  EXPECT_NE(run_error(sim, ep_plan(g, 3))
                .find("expert_parallel.degree (3) x tensor_parallel (1) "
                      "must divide the 8 data-parallel replicas"),
            std::string::npos);
  RoutingStats two_layers;
  two_layers.share = {{1}, {1}};
  SimOptions o;
  o.routing = &two_layers;
  EXPECT_NE(
      run_error(sim, ep_plan(g, 8), o).find("routing statistics: 2 MoE layers, the graph has 1"),
      std::string::npos);
  Plan bad = ep_plan(g, 8);
  bad.expert_parallel.layers.resize(1);
  bad.expert_parallel.layers[0].replicas.assign(8, {9});
  EXPECT_NE(run_error(sim, bad).find("rank 9 is outside [0, 8)"), std::string::npos);
}

}  // namespace
}  // namespace placer
