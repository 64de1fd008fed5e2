#include "simulator/simulator.h"

#include <gtest/gtest.h>

#include <utility>

#include "sim_fixtures.h"
#include "simulator/steady_state.h"
#include "src/util/error.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;
using testing::place;
using testing::TestGraph;

constexpr double kAlpha = 5e-6;
constexpr double kBeta = 1e9;

TEST(Simulator, TwoOpsOnTwoDevicesIsComputePlusTransfer) {
  TestGraph b;
  const TensorId x = b.tensor("x", 4000000);
  const TensorId y = b.tensor("y", 1000);
  const OpId a = b.op("a", 2e9, {}, {x});
  const OpId c = b.op("b", 1e9, {x}, {y});
  const Graph g = b.build();
  const Cluster cl = make_cluster(1, 2, link(kAlpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  const SimResult r = sim.run(place(g, {0, 1}));
  EXPECT_DOUBLE_EQ(r.step_time, 2e-3 + (kAlpha + 4e6 / kBeta) + 1e-3);
  EXPECT_DOUBLE_EQ(r.compute_time[0], 2e-3);
  EXPECT_DOUBLE_EQ(r.compute_time[1], 1e-3);
  EXPECT_DOUBLE_EQ(r.comm_time[0], kAlpha + 4e6 / kBeta);
  EXPECT_DOUBLE_EQ(r.comm_time[1], kAlpha + 4e6 / kBeta);
  EXPECT_DOUBLE_EQ(r.idle_time[1], r.step_time - 1e-3);
  EXPECT_EQ(r.num_transfers, 1u);
  EXPECT_EQ(r.transfer_bytes, 4000000u);
  EXPECT_EQ(r.critical_path, (std::vector<OpId>{a, c}));
  // x lives on device 0 until it is sent, on device 1 from its arrival; y (a sink) briefly.
  EXPECT_EQ(r.peak_memory[0], 4000000u);
  EXPECT_EQ(r.peak_memory[1], 4001000u);
  EXPECT_FALSE(r.oom);

  // Same device: no transfer.
  const SimResult local = sim.run(place(g, {1, 1}));
  EXPECT_DOUBLE_EQ(local.step_time, 3e-3);
  EXPECT_EQ(local.num_transfers, 0u);
}

TEST(Simulator, ATensorIsSentOncePerDestinationDevice) {
  TestGraph b;
  const TensorId x = b.tensor("x", 4000000);
  b.op("a", 2e9, {}, {x});
  for (const char* n : {"c1", "c2", "c3"}) b.op(n, 1e9, {x}, {});
  const Graph g = b.build();
  const Cluster cl = make_cluster(1, 3, link(kAlpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  SimResult r = sim.run(place(g, {0, 1, 1, 1}));
  EXPECT_EQ(r.num_transfers, 1u);
  EXPECT_DOUBLE_EQ(r.step_time, 2e-3 + (kAlpha + 4e6 / kBeta) + 3e-3);
  EXPECT_EQ(r.peak_memory[1], 4000000u);  // one copy, freed after the last reader
  r = sim.run(place(g, {0, 1, 2, 1}));
  EXPECT_EQ(r.num_transfers, 2u);
  EXPECT_DOUBLE_EQ(r.step_time, 2e-3 + (kAlpha + 4e6 / kBeta) + 2e-3);
}

// a (device 0) writes x1 for device 1 and x2 for device 2.
Graph fan_out_graph() {
  TestGraph b;
  const TensorId x1 = b.tensor("x1", 1000000);
  const TensorId x2 = b.tensor("x2", 1000000);
  b.op("a", 1e9, {}, {x1, x2});
  b.op("b", 1e9, {x1}, {});
  b.op("c", 1e9, {x2}, {});
  return b.build();
}

TEST(Simulator, TransfersQueueOnASharedSendPort) {
  const Graph g = fan_out_graph();
  const Plan p = place(g, {0, 1, 2});
  {  // NVLink-like: each pair has its own channel, both transfers run at once.
    const Cluster cl = make_cluster(1, 3, link(0, kBeta, LinkSharing::kPerPair), link(0, 1e9));
    const CostModel cost(cl, uniform_profile(1.0));
    Simulator sim(g, cl, cost);
    EXPECT_DOUBLE_EQ(sim.run(p).step_time, 1e-3 + 1e-3 + 1e-3);
  }
  {  // PCIe-like: device 0 has one send port; x2 waits for x1.
    const Cluster cl = make_cluster(1, 3, link(0, kBeta, LinkSharing::kPerDevice), link(0, 1e9));
    const CostModel cost(cl, uniform_profile(1.0));
    Simulator sim(g, cl, cost);
    const SimResult r = sim.run(p);
    EXPECT_DOUBLE_EQ(r.step_time, 1e-3 + 1e-3 + 1e-3 + 1e-3);
    EXPECT_DOUBLE_EQ(r.comm_time[0], 2e-3);  // union of the two back-to-back sends
  }
}

// Device 0 (blocking0) and device 1 (blocking1) on one host, 1 GB/s, no latency; a device
// without copy engines (overlap_transfers false) is busy while it sends or receives.
Cluster overlap_cluster(bool blocking0, bool blocking1) {
  DeviceSpec a = testing::test_spec(), b = testing::test_spec();
  a.overlap_transfers = !blocking0;
  b.overlap_transfers = !blocking1;
  Cluster cl;
  cl.name = "overlap";
  cl.add_host("h", a, 1);
  cl.add_device(0, "h/gpu1", b);
  cl.set_link(LinkLevel::kIntraHost, link(0, 1e9));
  cl.set_link(LinkLevel::kInterHost, link(0, 1e9));
  cl.validate();
  return cl;
}

// a (2 ms, device 0) -> x (1 MB: 1 ms) -> b (0.5 ms, device 1) and c (3 ms, device 0);
// d (4 ms, device 1) has no inputs.
Graph one_transfer_graph() {
  TestGraph tg;
  const TensorId x = tg.tensor("x", 1000000);
  const TensorId y = tg.tensor("y", 10), z = tg.tensor("z", 10), w = tg.tensor("w", 10);
  tg.op("a", 2e9, {}, {x});
  tg.op("b", 0.5e9, {x}, {y});
  tg.op("c", 3e9, {x}, {z});
  tg.op("d", 4e9, {}, {w});
  return tg.build();
}

/// That graph placed {0, 1, 0, 1} on overlap_cluster(blocking0, blocking1): its step time
/// and its steady-state time per step.
std::pair<double, double> one_transfer_times(bool blocking0, bool blocking1) {
  const Graph g = one_transfer_graph();
  const Cluster cl = overlap_cluster(blocking0, blocking1);
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  const SimResult r = sim.run(place(g, {0, 1, 0, 1}));
  return {r.step_time, steady_state_time(r, cl)};
}

TEST(Simulator, TransfersOccupyDevicesWithoutCopyEngines) {
  auto step = [](bool blocking0, bool blocking1) {
    return one_transfer_times(blocking0, blocking1).first;
  };
  // Overlapped: x travels 2..3 ms beside c (2..5); b waits for d, 4..4.5.
  EXPECT_NEAR(step(false, false), 5e-3, 1e-12);
  // The sender blocks: c starts after the send, 3..6.
  EXPECT_NEAR(step(true, false), 6e-3, 1e-12);
  // The receiver blocks: the transfer waits for d, 4..5, then b 5..5.5 (c ends at 5).
  EXPECT_NEAR(step(false, true), 5.5e-3, 1e-12);
  // Both: the transfer waits for d (4..5) and holds device 0 from its issue (a
  // rendezvous), so c runs 5..8.
  EXPECT_NEAR(step(true, true), 8e-3, 1e-12);
}

TEST(Simulator, SteadyStateAddsTransfersOnlyWithoutCopyEngines) {
  // Device 0 computes a (2 ms) and c (3 ms) and sends x (1 ms); device 1 computes b (0.5 ms)
  // and d (4 ms) and receives x.
  const struct {
    bool blocking0, blocking1;
    double steady;
  } cases[] = {
      {false, false, 5e-3},   // copy engines: the larger of compute and transfer, max(5, 1)
      {true, false, 6e-3},    // device 0 without: 5 + 1 ms
      {true, true, 6e-3},     // and device 1's 4.5 + 1 ms
      {false, true, 5.5e-3},  // device 1 without: 4.5 + 1 ms, above device 0's 5 ms
  };
  for (const auto& c : cases) {
    EXPECT_NEAR(one_transfer_times(c.blocking0, c.blocking1).second, c.steady, 1e-12)
        << c.blocking0 << c.blocking1;
  }
}

TEST(Simulator, TransfersBetweenHostsQueueOnTheHostNic) {
  TestGraph b;
  const TensorId x1 = b.tensor("x1", 1000000);
  const TensorId x2 = b.tensor("x2", 1000000);
  b.op("a1", 1e9, {}, {x1});
  b.op("a2", 1e9, {}, {x2});
  b.op("b1", 1e9, {x1}, {});
  b.op("b2", 1e9, {x2}, {});
  const Graph g = b.build();
  const Plan p = place(g, {0, 1, 2, 3});
  for (LinkSharing s : {LinkSharing::kPerHost, LinkSharing::kPerDevice}) {
    const Cluster cl = make_cluster(2, 2, link(0, 1e11), link(0, kBeta, s));
    const CostModel cost(cl, uniform_profile(1.0));
    Simulator sim(g, cl, cost);
    const double nic = s == LinkSharing::kPerHost ? 2e-3 : 1e-3;
    EXPECT_DOUBLE_EQ(sim.run(p).step_time, 1e-3 + nic + 1e-3) << to_string(s);
  }
}

TEST(Simulator, OutOfMemoryAndPeakMemoryByHand) {
  TestGraph b;
  const TensorId ta = b.tensor("a_out", 4000000);
  const TensorId tb = b.tensor("b_out", 4000000);
  const TensorId tc = b.tensor("c_out", 2000000);
  const OpId a = b.op("a", 1e9, {}, {ta});
  const OpId bb = b.op("b", 1e9, {ta}, {tb});
  b.op("c", 1e9, {tb}, {tc});
  b.at(a).param_bytes = 1000000;
  b.at(bb).workspace_bytes = 1000000;
  const Graph g = b.build();
  // Resident params 1 MB; during b: a_out 4 + b_out 4 + workspace 1 => 10 MB.
  const uint64_t peak = 1000000 + 4000000 + 4000000 + 1000000;
  for (uint64_t capacity : {uint64_t(9500000), uint64_t(16000000)}) {
    const Cluster cl = make_cluster(1, 1, link(0, 1e9), link(0, 1e9), capacity);
    const CostModel cost(cl, uniform_profile(1.0));
    Simulator sim(g, cl, cost);
    const SimResult r = sim.run(place(g, {0, 0, 0}));
    EXPECT_EQ(r.peak_memory[0], peak);
    EXPECT_EQ(r.oom, capacity < peak);
    EXPECT_EQ(r.oom_devices, capacity < peak ? std::vector<int>{0} : std::vector<int>{});
  }
}

// Data parallelism on 2 devices: forward f1 -> f2, backward b2 (-> g2) then b1 (-> g1),
// updates u1, u2. Batch-scaled work halves; each gradient is one bucket, all-reduced while
// the backward pass goes on.
struct DpGraph {
  Graph g;
  OpId u1, u2;
};

DpGraph dp_graph() {
  TestGraph b;
  const TensorId a1 = b.tensor("a1", 1000);
  const TensorId a2 = b.tensor("a2", 1000);
  const TensorId da1 = b.tensor("da1", 1000);
  const TensorId g1 = b.tensor("g1", 8000000, false, true);
  const TensorId g2 = b.tensor("g2", 8000000, false, true);
  const OpId f1 = b.op("f1", 2e9, {}, {a1});
  const OpId f2 = b.op("f2", 2e9, {a1}, {a2});
  b.op("b2", 4e9, {a2, a1}, {da1, g2}, Phase::kBackward, f2);
  b.op("b1", 4e9, {da1}, {g1}, Phase::kBackward, f1);
  DpGraph d;
  d.u2 = b.op("u2", 1e6, {g2}, {}, Phase::kOptimizer, f2);
  d.u1 = b.op("u1", 1e6, {g1}, {}, Phase::kOptimizer, f1);
  b.at(f1).param_bytes = 8000000;
  b.at(f2).param_bytes = 8000000;
  d.g = b.build();
  return d;
}

TEST(Simulator, DataParallelAllReduceOverlapsBackward) {
  const DpGraph d = dp_graph();
  const double alpha = 1e-5, beta = 1e10;
  const Cluster cl = make_cluster(1, 2, link(alpha, beta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(d.g, cl, cost);
  Plan p = place(d.g, std::vector<int>(d.g.num_ops(), 0));
  p.data_parallel.replicas = 2;
  p.data_parallel.sync = SyncScheme::kRing;
  p.data_parallel.bucket_bytes = 8000000;
  const double ar = 2 * 1.0 / 2 * 8e6 / beta + 2 * 1 * alpha;  // ring, p = 2
  // f1 1 ms, f2 1 ms, b2 2 ms (ends 4 ms, all-reduce g2 until 4.82 ms), b1 2 ms (ends 6 ms),
  // u2 6 -> 6.001 ms (waited for b1 to free the device), all-reduce g1 6 -> 6.82 ms, u1.
  SimResult r = sim.run(p);
  EXPECT_DOUBLE_EQ(r.step_time, 6e-3 + ar + 1e-6);
  EXPECT_EQ(r.num_collectives, 2u);
  EXPECT_DOUBLE_EQ(r.compute_time[0], 6e-3 + 2e-6);
  EXPECT_DOUBLE_EQ(r.compute_time[1], r.compute_time[0]);  // the replica mirrors device 0
  EXPECT_EQ(r.peak_memory[1], r.peak_memory[0]);
  EXPECT_DOUBLE_EQ(r.comm_time[0], 2 * ar);
  EXPECT_EQ(r.critical_path.back(), d.u1);

  // One bucket for both gradients: a single all-reduce of 16 MB after b1.
  p.data_parallel.bucket_bytes = 16000000;
  r = sim.run(p);
  EXPECT_EQ(r.num_collectives, 1u);
  EXPECT_DOUBLE_EQ(r.step_time, 6e-3 + (2 * 1.0 / 2 * 16e6 / beta + 2 * alpha) + 2e-6);

  // Auto picks the fastest; on two devices that is the ring.
  p.data_parallel.bucket_bytes = 8000000;
  p.data_parallel.sync = SyncScheme::kAuto;
  EXPECT_DOUBLE_EQ(sim.run(p).step_time, 6e-3 + ar + 1e-6);
}

TEST(Simulator, PartitionHalvesComputeAndAddsTheAllGather) {
  TestGraph b;
  const TensorId x = b.tensor("x", 1000000);
  const TensorId y = b.tensor("y", 2000000);
  b.op("x", 1e9, {}, {x});
  const OpId pm = b.op("p", 4e9, {x}, {y});
  b.op("q", 1e9, {y}, {});
  const Graph g = b.build();
  const double alpha = 1e-5;
  const Cluster cl = make_cluster(1, 2, link(alpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = place(g, {0, 0, 0});
  EXPECT_DOUBLE_EQ(sim.run(p).step_time, 6e-3);
  OpPartition part;
  part.op = pm;
  part.dim = 1;
  part.devices = {0, 1};
  p.partitions = {part};
  // x 1 ms; x sent to device 1 (alpha + 1 ms); p on both devices 2 ms; all-gather of y
  // (1/2 * 2 MB / beta + alpha); q 1 ms.
  const double send = alpha + 1e6 / kBeta;
  const double gather = 1.0 / 2 * 2e6 / kBeta + alpha;
  SimResult r = sim.run(p);
  EXPECT_DOUBLE_EQ(r.step_time, 1e-3 + send + 2e-3 + gather + 1e-3);
  EXPECT_DOUBLE_EQ(r.compute_time[0], 4e-3);
  EXPECT_DOUBLE_EQ(r.compute_time[1], 2e-3);
  EXPECT_EQ(r.num_collectives, 1u);
  // Reduce-dim split: the partial outputs are all-reduced instead.
  p.partitions[0].dim = OpPartition::kReduceDim;
  r = sim.run(p);
  EXPECT_DOUBLE_EQ(r.step_time,
                   1e-3 + send + 2e-3 + (2 * 1.0 / 2 * 2e6 / kBeta + 2 * alpha) + 1e-3);
}

TEST(Simulator, ShardedChainSkipsTheCollectivesBetweenCompatiblePartitions) {
  // Megatron's MLP: p (column-parallel) -> r (row-parallel) -> q.
  TestGraph b;
  const TensorId x = b.tensor("x", 0);
  const TensorId y = b.tensor("y", 2000000);
  const TensorId z = b.tensor("z", 4000000);
  b.op("x", 1e9, {}, {x});
  const OpId pm = b.op("p", 4e9, {x}, {y});
  const OpId rm = b.op("r", 2e9, {y}, {z});
  b.op("q", 1e9, {z}, {});
  const Graph g = b.build();
  const double alpha = 1e-5;
  const Cluster cl = make_cluster(1, 2, link(alpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = place(g, {0, 0, 0, 0});
  OpPartition pp{pm, 1, {0, 1}};
  OpPartition rp{rm, OpPartition::kReduceDim, {0, 1}};
  p.partitions = {pp, rp};
  // Unsharded: x 1 ms, (x is 0 bytes: alpha to device 1), p 2 ms, all-gather of y, r 1 ms,
  // all-reduce of z, q 1 ms.
  const double gather = 1.0 / 2 * 2e6 / kBeta + alpha;
  const double reduce = 2 * 1.0 / 2 * 4e6 / kBeta + 2 * alpha;
  SimResult r = sim.run(p);
  EXPECT_DOUBLE_EQ(r.step_time, 1e-3 + alpha + 2e-3 + gather + 1e-3 + reduce + 1e-3);
  EXPECT_EQ(r.collective_bytes, 6000000u);
  // Sharded chain: y stays split (1 MB per device), only z is all-reduced.
  p.partitions[0].sharded_output = true;
  p.partitions[1].sharded_input = true;
  p.validate(g, cl);
  r = sim.run(p);
  EXPECT_DOUBLE_EQ(r.step_time, 1e-3 + alpha + 2e-3 + 1e-3 + reduce + 1e-3);
  EXPECT_EQ(r.collective_bytes, 4000000u);
  // A sharded output read by an op that does not take shards is refused.
  p.partitions[1].sharded_input = false;
  EXPECT_THROW(p.validate(g, cl), ValidationError);
  p.partitions[1].sharded_input = true;
  p.partitions[0].sharded_output = false;
  EXPECT_THROW(p.validate(g, cl), ValidationError);
}

TEST(Simulator, RecursiveHalvingRunsOneCollectivePerLevel) {
  TestGraph b;
  const TensorId y = b.tensor("y", 2000000);
  const OpId pm = b.op("p", 4e9, {}, {y});
  b.op("q", 1e9, {y}, {});
  const Graph g = b.build();
  const double alpha = 1e-5;
  const Cluster cl = make_cluster(1, 4, link(alpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = place(g, {0, 0});
  OpPartition part;
  part.op = pm;
  part.dim = 0;
  part.levels = {0, 1};
  part.devices = {0, 1, 2, 3};
  p.partitions = {part};
  // p: 4e9 / 4 = 1 ms on each device. Level l's pair collective works on what the earlier
  // levels left (Tofu's recursion, the same volume as a 4-way ring: 3/4 of y per device):
  // level 0 (batch) all-gathers the whole 2 MB between devices 0 and 2, level 1 the 1 MB
  // half between 0 and 1; a pair all-gather of b costs 1/2 * b / beta + alpha. q 1 ms.
  auto pair_gather = [&](double b) { return 1.0 / 2 * b / kBeta + alpha; };
  SimResult r = sim.run(p);
  EXPECT_DOUBLE_EQ(r.step_time, 1e-3 + pair_gather(2e6) + pair_gather(1e6) + 1e-3);
  EXPECT_DOUBLE_EQ(r.compute_time[3], 1e-3);
  EXPECT_EQ(r.num_collectives, 1u);
  EXPECT_EQ(r.collective_bytes, 3000000u);
  // A contraction level first: its partial sums (the whole 2 MB) are all-reduced; the
  // output-dim level then all-gathers 2 MB (a contraction level does not shard y).
  p.partitions[0].levels = {OpPartition::kReduceDim, 1};
  p.partitions[0].dim = OpPartition::kReduceDim;
  r = sim.run(p);
  const double reduce = 2 * 1.0 / 2 * 2e6 / kBeta + 2 * alpha;
  EXPECT_DOUBLE_EQ(r.step_time, 1e-3 + reduce + pair_gather(2e6) + 1e-3);
  EXPECT_EQ(r.collective_bytes, 4000000u);
}

TEST(Simulator, RecursiveHalvingAllReducesParameterGradientsOnBatchLevelsOnly) {
  TestGraph b;
  const TensorId y = b.tensor("y", 2000000);
  const TensorId gw = b.tensor("w/grad", 4000000, false, true);
  const OpId pm = b.op("p", 4e9, {}, {y});
  b.op("p/grad", 4e9, {}, {gw}, Phase::kBackward, pm);
  const Graph g = b.build();
  const double alpha = 1e-5;
  const Cluster cl = make_cluster(1, 4, link(alpha, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = place(g, {0, 0});
  p.partitions = {OpPartition{pm, 0, {0, 1, 2, 3}, {0, 1}}};
  // Forward as above: 1 ms, then pair all-gathers of 2 MB and 1 MB on the comm streams. The
  // backward op (1 ms, it does not read y) computes meanwhile; its parameter gradient is
  // sharded by the dim-1 level (4 MB / 2) and all-reduced only on the batch level's pair,
  // after the gathers on the comm streams.
  const double gathers = (1.0 / 2 * 2e6 / kBeta + alpha) + (1.0 / 2 * 1e6 / kBeta + alpha);
  const double reduce = 2 * 1.0 / 2 * 2e6 / kBeta + 2 * alpha;
  ASSERT_GT(gathers, 1e-3);
  SimResult r = sim.run(p);
  EXPECT_DOUBLE_EQ(r.step_time, 1e-3 + gathers + reduce);
  EXPECT_EQ(r.num_collectives, 2u);
  EXPECT_EQ(r.collective_bytes, 3000000u + 2000000u);
  // Both levels on the output dim: the gradient is sharded 4 ways and not all-reduced.
  p.partitions[0].levels = {1, 1};
  p.partitions[0].dim = 1;
  r = sim.run(p);
  EXPECT_DOUBLE_EQ(r.step_time, 1e-3 + gathers);
  EXPECT_EQ(r.num_collectives, 1u);
}

TEST(Simulator, PartitionedOpWaitsForAllItsDevices) {
  TestGraph b;
  const TensorId y = b.tensor("y", 0);
  b.op("busy", 3e9, {}, {});  // device 1 is busy for 3 ms
  b.op("p", 2e9, {}, {y});
  const Graph g = b.build();
  const Cluster cl = make_cluster(1, 2, link(0, kBeta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = place(g, {1, 0});
  OpPartition part;
  part.op = 1;
  part.devices = {0, 1};
  p.partitions = {part};
  const SimResult r = sim.run(p);
  EXPECT_DOUBLE_EQ(r.step_time, 3e-3 + 1e-3);
  EXPECT_EQ(r.critical_path, (std::vector<OpId>{0, 1}));
}

TEST(Simulator, SameRunTwiceIsIdentical) {
  const DpGraph d = dp_graph();
  const Cluster cl = make_cluster(2, 2, link(1e-6, 1e11), link(5e-6, 1e10, LinkSharing::kPerHost));
  const CostModel cost(cl, default_profile());
  Simulator sim(d.g, cl, cost);
  Plan p = place(d.g, {0, 1, 1, 0, 1, 0});
  p.data_parallel.replicas = 2;
  SimOptions o;
  o.record_events = true;
  const SimResult a = sim.run(p, o);
  const SimResult b = sim.run(p, o);
  Simulator other(d.g, cl, cost);
  const SimResult c = other.run(p, o);
  for (const SimResult* r : {&b, &c}) {
    EXPECT_EQ(a.step_time, r->step_time);
    EXPECT_EQ(a.compute_time, r->compute_time);
    EXPECT_EQ(a.comm_time, r->comm_time);
    EXPECT_EQ(a.peak_memory, r->peak_memory);
    EXPECT_EQ(a.critical_path, r->critical_path);
    ASSERT_EQ(a.events.size(), r->events.size());
    for (size_t i = 0; i < a.events.size(); ++i) {
      EXPECT_EQ(a.events[i].start, r->events[i].start);
      EXPECT_EQ(a.events[i].op, r->events[i].op);
    }
  }
}

TEST(Simulator, RejectsPlansThatDoNotMatch) {
  const DpGraph d = dp_graph();
  const Cluster cl = make_cluster(1, 2, link(0, 1e9), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(d.g, cl, cost);
  EXPECT_THROW(sim.run(place(d.g, {0, 0})), ValidationError);
  EXPECT_THROW(sim.run(place(d.g, {0, 0, 0, 2, 0, 0})), ValidationError);
  Plan p = place(d.g, std::vector<int>(6, 0));
  p.data_parallel.replicas = 3;
  EXPECT_THROW(sim.run(p), ValidationError);
  p.data_parallel.replicas = 1;
  p.partitions = {OpPartition{99, 0, {0, 1}}};
  EXPECT_THROW(sim.run(p), ValidationError);
  p.partitions = {OpPartition{0, 0, {0, 0}}};
  EXPECT_THROW(sim.run(p), ValidationError);
  p.partitions.clear();
  p.pipeline.stages = {PipelineStage{{0, 1}, {0}}, PipelineStage{{1}, {1}}};
  EXPECT_THROW(sim.run(p), ValidationError);  // op 1 in two stages
}

TEST(Simulator, CostModelMustMatchTheCluster) {
  const DpGraph d = dp_graph();
  const Cluster small = make_cluster(1, 2, link(0, 1e9), link(0, 1e9));
  const Cluster big = make_cluster(1, 4, link(0, 1e9), link(0, 1e9));
  const CostModel cost(small, uniform_profile(1.0));
  EXPECT_THROW(Simulator(d.g, big, cost), ValidationError);
}

}  // namespace
}  // namespace placer

namespace placer {
namespace {

TEST(Simulator, RejectsReplicasOutsideTheCluster) {
  const DpGraph d = dp_graph();
  const Cluster cl = make_cluster(1, 4, link(0, 1e9), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(d.g, cl, cost);
  Plan p = testing::place(d.g, {0, 1, 1, 0, 1, 0});
  p.data_parallel.replicas = 2;  // replica 1 of device 1 is device 3: fine
  EXPECT_NO_THROW(sim.run(p));
  p.placement[2] = 2;  // replica 1 of device 2 would be device 4
  try {
    sim.run(p);
    ADD_FAILURE() << "no error";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("device 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace placer

namespace placer {
namespace {

// A backward op without inputs (a loss-gradient seed) still runs after its forward op.
TEST(Simulator, BackwardOpWaitsForItsForwardOp) {
  TestGraph b;
  const OpId f = b.op("loss", 1e9, {}, {});
  const OpId s = b.op("loss/grad", 1e9, {}, {}, Phase::kBackward, f);
  const Graph g = b.build();
  const Cluster cl = make_cluster(1, 2, link(0, 1e9), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  const SimResult r = sim.run(testing::place(g, {0, 1}));
  EXPECT_DOUBLE_EQ(r.step_time, 2e-3);
  EXPECT_EQ(r.critical_path, (std::vector<OpId>{f, s}));
}

}  // namespace
}  // namespace placer
