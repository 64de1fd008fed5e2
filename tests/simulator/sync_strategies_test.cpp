// Per-variable synchronisation, hand-computed: PS push / pull, a hot server, sharding,
// compressor bytes and encode cost, sparse embedding rows, staleness hiding a sync.
// Devices: 1e12 FLOP/s and 1e12 B/s, no launch overhead (sim_fixtures.h); one device per
// host, hosts joined by 1e9 B/s links with 10 us latency.

#include <gtest/gtest.h>

#include "simulator/sync_strategies.h"
#include "tests/plan/sync_test_graph.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

using sync_testing::kFcBytes;
using sync_testing::kWidth;
using sync_testing::make_sync_graph;
using testing::link;
using testing::make_cluster;

constexpr double kBw = 1e9, kLat = 1e-5;

Cluster hosts_of_one(int hosts) { return make_cluster(hosts, 1, link(1e-6, 1e11), link(kLat, kBw)); }

Plan dp_plan(const Graph& g, int replicas, const VariableSync& s) {
  Plan p = Plan::single_device(g, 0);
  p.data_parallel.replicas = replicas;
  p.synchronization.enabled = true;
  p.synchronization.default_strategy = s;
  return p;
}

VariableSync ps_on(std::vector<int> servers, int shards = 1) {
  VariableSync s;
  s.synchronizer = Synchronizer::kParameterServer;
  s.destinations = std::move(servers);
  s.shards = shards;
  return s;
}

VariableSyncCost cost_of(const Graph& g, const Cluster& c, const Plan& p, const std::string& var) {
  const CostModel cost(c, uniform_profile(1.0));
  const SyncCostModel m(g, c, cost, p);
  return m.variable_cost(g.find_op(var), p.synchronization.default_strategy);
}

TEST(SyncStrategies, PsPushPullTwoWorkersOneServer) {
  const Graph g = make_sync_graph();
  const Cluster c = hosts_of_one(3);  // workers 0, 1; server 2
  const Plan p = dp_plan(g, 2, ps_on({2}));
  const VariableSyncCost v = cost_of(g, c, p, "fc");
  EXPECT_EQ(v.wire_bytes, kFcBytes);
  // Push: the server's in port takes 2 x 8192 B; pull: its out port the same.
  const double phase = 2.0 * 8192 / kBw + kLat;
  EXPECT_DOUBLE_EQ(v.network_time, 2 * phase);
}

TEST(SyncStrategies, HotServerSharedByFourWorkersAndSharding) {
  const Graph g = make_sync_graph();
  const Cluster c = hosts_of_one(6);  // workers 0..3, servers 4, 5
  const VariableSyncCost hot = cost_of(g, c, dp_plan(g, 4, ps_on({4})), "fc");
  EXPECT_DOUBLE_EQ(hot.network_time, 2 * (4.0 * 8192 / kBw + kLat));
  // Two shards: each server takes half from each worker; a worker's out port sends 8192 B.
  const VariableSyncCost sharded = cost_of(g, c, dp_plan(g, 4, ps_on({4, 5}, 2)), "fc");
  EXPECT_DOUBLE_EQ(sharded.network_time, 2 * (2.0 * 8192 / kBw + kLat));
}

TEST(SyncStrategies, LocalAggregationPushesOncePerHost) {
  const Graph g = make_sync_graph();
  // Two hosts of two devices (intra 1e11 B/s, 1 us); workers 0, 1 on host 0, 2, 3 on host 1;
  // server device 2. Local sum on host 0: 1 -> 0 (8192 B intra); host 1: 3 -> 2.
  const Cluster c = make_cluster(2, 2, link(1e-6, 1e11), link(kLat, kBw));
  const VariableSyncCost v = cost_of(g, c, dp_plan(g, 4, ps_on({2})), "fc");
  const double local = 8192 / 1e11 + 1e-6;
  const double push = 8192 / kBw + kLat;  // only host 0's leader crosses the network
  EXPECT_DOUBLE_EQ(v.network_time, 2 * local + 2 * push);
}

TEST(SyncStrategies, OneBitBytesAndEncodeCost) {
  const Graph g = make_sync_graph();
  const Cluster c = hosts_of_one(2);
  VariableSync s;
  s.compressor = Compressor::kOneBit;
  const VariableSyncCost v = cost_of(g, c, dp_plan(g, 2, s), "fc");
  const uint64_t elems = kFcBytes / 4;  // 2048
  EXPECT_EQ(v.wire_bytes, elems / 8 + 8);  // 256 bits-bytes + two f32 scales
  // Encode: read gradient and error, write error (3 x 8192 B) and the 264 packed bytes, at
  // 1e12 B/s.
  EXPECT_DOUBLE_EQ(v.encode_time, (3.0 * 8192 + 264) / 1e12);
  EXPECT_EQ(v.state_bytes, kFcBytes);  // the error-feedback buffer
}

TEST(SyncStrategies, TopKBytes) {
  VariableSync s;
  s.compressor = Compressor::kTopK;
  s.topk_ratio = 0.01;
  // k = ceil(0.01 x 2048) = 21 values of 4 bytes plus 21 int32 indices.
  EXPECT_EQ(compressed_bytes(s, 2048, DType::kF32, 64, 32), 21u * 8);
  s.compressor = Compressor::kPowerSGD;
  s.powersgd_rank = 4;
  EXPECT_EQ(compressed_bytes(s, 2048, DType::kF32, 64, 32), (64u + 32) * 4 * 4);
  s.compressor = Compressor::kFP16;
  EXPECT_EQ(compressed_bytes(s, 2048, DType::kF32, 64, 32), 4096u);
}

TEST(SyncStrategies, SparseEmbeddingGradientIsRowsTouchedTimesRowBytes) {
  const Graph g = make_sync_graph();
  const Cluster c = hosts_of_one(3);
  // 8 x 16 = 128 lookups, 64 per worker of 2; a row is 64 f32 = 256 B.
  const VariableSyncCost ps = cost_of(g, c, dp_plan(g, 2, ps_on({2})), "embedding");
  EXPECT_EQ(ps.grad_bytes, 64u * kWidth * 4);
  VariableSync gather;
  gather.synchronizer = Synchronizer::kAllGather;
  const VariableSyncCost ag = cost_of(g, c, dp_plan(g, 2, gather), "embedding");
  EXPECT_EQ(ag.grad_bytes, 64u * kWidth * 4);
  const VariableSyncCost ar = cost_of(g, c, dp_plan(g, 2, VariableSync{}), "embedding");
  EXPECT_EQ(ar.grad_bytes, sync_testing::kTableBytes);  // a dense all-reduce moves the table
}

TEST(SyncStrategies, WindowStalenessOneHidesAShorterSync) {
  SyncWindowInput in;
  in.compute_step = 10e-3;
  in.tail = 0;
  in.vars.push_back({10e-3, 6e-3, {6e-3}, 0});
  EXPECT_NEAR(steady_state_step(in), 16e-3, 1e-12);  // sync after backward, nothing hides it
  in.vars[0].staleness = 1;
  EXPECT_NEAR(steady_state_step(in), 10e-3, 1e-12);  // the next step runs during the sync
  in.vars[0].busy = in.vars[0].port_load[0] = 14e-3;
  EXPECT_NEAR(steady_state_step(in), 14e-3, 1e-12);  // a longer sync bounds the step
  in.vars[0].staleness = -1;
  EXPECT_NEAR(steady_state_step(in), 14e-3, 1e-12);  // async too: the network is the limit
}

TEST(SyncStrategies, SimulatorStalenessOneGivesTheComputeStep) {
  const Graph g = make_sync_graph(DType::kF32, 2e10);  // 20 ms forward fc
  const Cluster c = hosts_of_one(2);
  const CostModel cost(c, uniform_profile(1.0));
  Simulator sim(g, c, cost);
  VariableSync s;
  const SimResult sync0 = sim.run(dp_plan(g, 2, s));
  s.staleness = 1;
  const SimResult stale = sim.run(dp_plan(g, 2, s));
  // Ring all-reduce of the table and fc on 2 workers: (256000 + 8192) B each way.
  EXPECT_GT(sync0.step_time, sync0.compute_step_time);
  EXPECT_NEAR(stale.step_time, stale.compute_step_time, 1e-12);
  EXPECT_DOUBLE_EQ(stale.compute_step_time, sync0.compute_step_time);
}

}  // namespace
}  // namespace placer
