// FSDP / FSDP2 / HSDP by hand: the per-block prefetch schedule traced on 3 blocks, HSDP's
// bytes per level, and the simulator's all-gather waits, sharding and reduce dtype.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim_fixtures.h"
#include "simulator/breakdown.h"
#include "simulator/fsdp_schedule.h"
#include "simulator/simulator.h"

namespace placer {
namespace {

// Three blocks: forward 2, backward 4, all-gather 3, reduce-scatter 1 (any unit).
std::vector<FsdpBlockTimes> three_blocks() {
  return std::vector<FsdpBlockTimes>(3, FsdpBlockTimes{2, 4, 3, 1});
}

// Every time of one block: gathered, computed (forward), gathered, computed (backward),
// reduced.
std::vector<double> times_of(const FsdpBlockTimeline& b) {
  return {b.forward_gather_end, b.forward_start, b.forward_end,  b.backward_gather_end,
          b.backward_start,     b.backward_end,  b.reduce_start, b.reduce_end};
}

TEST(FsdpSchedule, PrefetchOneBlockAheadTracedByHand) {
  const FsdpTimeline tl = fsdp_timeline(three_blocks(), FsdpScheduleOptions{1, 1, true});
  // Forward: gather 0 in [0,3], block 0 computes [3,5]; gather 1 issued at 3 (block 0's
  // start) runs [3,6], block 1 [6,8]; gather 2 issued at 6 runs [6,9], block 2 [9,11].
  // Backward: block 2 kept its parameters (ready at 11), [11,15]; gather 1 issued at 11
  // runs [11,14], block 1 [15,19]; gather 0 issued at 15 runs [15,18], block 0 [19,23].
  // Reduce-scatters [15,16], [19,20] under the next backward; the last one [23,24] shows.
  EXPECT_EQ(times_of(tl.blocks[0]), (std::vector<double>{3, 3, 5, 18, 19, 23, 23, 24}));
  EXPECT_EQ(times_of(tl.blocks[1]), (std::vector<double>{6, 6, 8, 14, 15, 19, 19, 20}));
  EXPECT_EQ(times_of(tl.blocks[2]), (std::vector<double>{9, 9, 11, 11, 11, 15, 15, 16}));
  EXPECT_DOUBLE_EQ(tl.blocks[1].forward_wait, 1);
  EXPECT_DOUBLE_EQ(tl.end, 24);
  EXPECT_DOUBLE_EQ(tl.exposed_gather, 3 + 1 + 1);
  EXPECT_DOUBLE_EQ(tl.exposed_reduce, 1);
}

TEST(FsdpSchedule, WithoutPrefetchEveryGatherIsExposed) {
  const FsdpTimeline tl = fsdp_timeline(three_blocks(), FsdpScheduleOptions{0, 0, true});
  // Forward [0,3] g [3,5] c, [5,8] g [8,10] c, [10,13] g [13,15] c; backward [15,19],
  // [19,22] g [22,26], [26,29] g [29,33]; last reduce-scatter [33,34].
  EXPECT_DOUBLE_EQ(tl.blocks[2].forward_end, 15);
  EXPECT_DOUBLE_EQ(tl.blocks[1].backward_start, 22);
  EXPECT_DOUBLE_EQ(tl.blocks[0].backward_end, 33);
  EXPECT_DOUBLE_EQ(tl.end, 34);
  EXPECT_DOUBLE_EQ(tl.exposed_gather, 5 * 3);
}

TEST(FsdpSchedule, KeepingParametersSkipsTheBackwardGathers) {
  const FsdpTimeline tl = fsdp_timeline(three_blocks(), FsdpScheduleOptions{1, 1, false});
  EXPECT_DOUBLE_EQ(tl.blocks[2].forward_end, 11);  // forward as with resharding
  EXPECT_DOUBLE_EQ(tl.blocks[0].backward_end, 11 + 3 * 4);
  for (const FsdpBlockTimeline& b : tl.blocks) EXPECT_DOUBLE_EQ(b.backward_wait, 0);
  EXPECT_DOUBLE_EQ(tl.exposed_gather, 5);
}

TEST(FsdpSchedule, TwoBlocksAheadHidesMoreOfSlowGathers) {
  // Gathers of 5 behind forwards of 2: one ahead waits 5 + 3 + 3 in forward, two ahead
  // issues gathers 0 and 1 at time 0 and gather 2 at block 0's start (5).
  std::vector<FsdpBlockTimes> b(3, FsdpBlockTimes{2, 4, 5, 1});
  EXPECT_DOUBLE_EQ(fsdp_timeline(b, FsdpScheduleOptions{1, 1, true}).blocks[2].forward_end, 17);
  // Two ahead: gathers [0,5], [5,10], [10,15]; blocks [5,7], [10,12], [15,17]: the gather
  // stream is the bottleneck either way.
  EXPECT_DOUBLE_EQ(fsdp_timeline(b, FsdpScheduleOptions{2, 2, true}).blocks[2].forward_end, 17);
  // Backward: with one ahead, block 1's gather is issued at 17 (block 2's start): [17,22],
  // block 1 [22,26]; block 0's issued at 22: [22,27], [27,31]. Two ahead: both issued at 17:
  // [17,22], [22,27]; block 1 [22,26], block 0 [27,31]: the same, the stream is serial.
  EXPECT_DOUBLE_EQ(fsdp_timeline(b, FsdpScheduleOptions{1, 1, true}).blocks[0].backward_end, 31);
  EXPECT_DOUBLE_EQ(fsdp_timeline(b, FsdpScheduleOptions{1, 2, true}).blocks[0].backward_end, 31);
}

TEST(FsdpSchedule, HsdpBytesPerLevelByHand) {
  // 8 MB of bf16 parameters, 16 MB of f32 gradients; shard groups of 4, 2 replicas.
  const HsdpBuffers b = hsdp_buffers(8000000, 16000000, 4, 2);
  EXPECT_EQ(b.gather, 8000000u);
  EXPECT_EQ(b.reduce_scatter, 16000000u);
  EXPECT_EQ(b.all_reduce, 4000000u);  // one shard of the gradient
  // Inside a group each device sends 3/4 of each buffer: 6 + 12 MB.
  EXPECT_DOUBLE_EQ(b.sent_shard_level(), 18e6);
  // Across: a 2-way ring all-reduce sends 2 * 1/2 of the 4 MB shard.
  EXPECT_DOUBLE_EQ(b.sent_replica_level(), 4e6);
  EXPECT_EQ(hsdp_buffers(8000000, 16000000, 8, 1).all_reduce, 0u);  // plain FSDP
}

constexpr double kAlpha = 5e-6;
constexpr double kBeta = 1e9;
constexpr uint64_t kParam = 4000000;

// One memory-bound copy of a 4 MB unit (read and written) at 1e12 B/s: FSDP2's copy-out,
// and its chunk_cat of the gradients (kParam in, kParam out).
constexpr double kCopy = 2 * kParam / 1e12;

// `n` layers (3 by default), each one forward op (5 ms per device with the batch split over
// `replicas`) owning 4 MB of parameters, its backward op (10 ms) producing the 4 MB
// gradient, and an update op.
Graph three_layers(int replicas, int n = 3) {
  testing::TestGraph b;
  std::vector<TensorId> y, gy, gw;
  for (int i = 0; i < n; ++i) {
    y.push_back(b.tensor("y" + std::to_string(i), 1000));
    gy.push_back(b.tensor("gy" + std::to_string(i), 1000));
    gw.push_back(b.tensor("gw" + std::to_string(i), kParam, false, true));
  }
  std::vector<OpId> f;
  for (int i = 0; i < n; ++i) {
    f.push_back(b.op("f" + std::to_string(i), 5e9 * replicas,
                     i == 0 ? std::vector<TensorId>{} : std::vector<TensorId>{y[i - 1]}, {y[i]}));
    b.at(f.back()).param_bytes = kParam;
    b.at(f.back()).layer = i;
  }
  for (int i = n - 1; i >= 0; --i) {
    std::vector<TensorId> in = {y[i]};
    if (i < n - 1) in.push_back(gy[i + 1]);
    const OpId g = b.op("f" + std::to_string(i) + "/grad", 10e9 * replicas, in, {gy[i], gw[i]},
                        Phase::kBackward, f[i]);
    b.at(g).layer = i;
  }
  for (int i = 0; i < n; ++i)
    b.op("f" + std::to_string(i) + "/update", 1, {gw[i]}, {}, Phase::kOptimizer, f[i]);
  return b.build();
}

Plan fsdp_plan(const Graph& g, int replicas) {
  Plan p = testing::place(g, std::vector<int>(g.num_ops(), 0));
  p.data_parallel.replicas = replicas;
  p.data_parallel.zero_stage = 3;
  p.data_parallel.fsdp.enabled = true;
  return p;
}

// The three layers on one node of 4 devices (5 us, 1 GB/s).
class FsdpOnOneNode : public ::testing::Test {
 protected:
  double collective(CollectiveKind k, uint64_t bytes) const {
    return cost.collective_time(k, {0, 1, 2, 3}, bytes, SyncScheme::kAuto);
  }
  const Graph g = three_layers(4);
  const Cluster cl =
      testing::make_cluster(1, 4, testing::link(kAlpha, kBeta), testing::link(0, 1e9));
  const CostModel cost{cl, uniform_profile(1.0)};
  Simulator sim{g, cl, cost};
};

TEST_F(FsdpOnOneNode, OnlyTheFirstGatherWaitsWhenComputeHidesTheRest) {
  Plan p = fsdp_plan(g, 4);
  p.validate(g, cl);
  // Each all-gather is preceded by the copy-in of the 1 MB shard (read and written).
  const double copy_in = 2 * kParam / 4 / 1e12;
  const double gather = copy_in + collective(CollectiveKind::kAllGather, kParam);
  ASSERT_LT(gather, 5e-3);  // shorter than a block's forward: hidden after the first
  SimOptions events;
  events.record_events = true;
  const SimResult r = sim.run(p, events);
  ASSERT_EQ(r.fsdp_forward_wait.size(), 4u);
  EXPECT_NEAR(r.fsdp_forward_wait[0], gather, 1e-12);
  EXPECT_NEAR(r.fsdp_backward_wait[0], 0, 1e-12);
  // `simulate --breakdown` shows the wait as its own part, out of the forward's 15 ms and
  // the 3 blocks' copy-outs.
  const std::vector<DeviceBreakdown> rows = step_breakdown(r, g, p);
  ASSERT_FALSE(rows.empty());
  EXPECT_NEAR(rows[0].fsdp_gather, gather, 1e-12);
  EXPECT_NEAR(rows[0].forward, 15e-3 + 3 * kCopy, 1e-9);
  EXPECT_NEAR(rows[0].total(), r.step_time, 1e-9);
  // ZeRO-3's accounting: every forward and backward op waits for its own gather (6 in
  // all), and the 12 MB of gradients are reduce-scattered and all-gathered in one bucket
  // after the backward, where FSDP leaves only the last block's 4 MB reduce-scatter exposed
  // but copies: 3 copy-outs in the forward, 2 in the backward (the last block keeps its
  // parameters), 3 chunk_cats of the gradients.
  p.data_parallel.fsdp.enabled = false;
  const SimResult z = sim.run(p);
  const double zero_sync = collective(CollectiveKind::kReduceScatter, 3 * kParam) +
                           collective(CollectiveKind::kAllGather, 3 * kParam);
  const double zero_gather = collective(CollectiveKind::kAllGather, kParam);
  EXPECT_NEAR(z.step_time - r.step_time,
              5 * zero_gather - copy_in + zero_sync -
                  collective(CollectiveKind::kReduceScatter, kParam) - 8 * kCopy,
              1e-9);
}

// FSDP on one rank (world size 1, as FSDP2 runs there): no collective, but each unshard
// copies the parameters (the last block's once, in the forward), each backward packs the
// gradients (chunk_cat) and copies them to the reduce-scatter output.
TEST(FsdpSimulator, OneBlockOnOneRankAddsItsCopies) {
  const Graph g = three_layers(1, 1);
  const Cluster cl =
      testing::make_cluster(1, 1, testing::link(kAlpha, kBeta), testing::link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = fsdp_plan(g, 1);
  p.validate(g, cl);
  const SimResult r = sim.run(p);
  p.data_parallel.fsdp.enabled = false;
  const SimResult plain = sim.run(p);
  EXPECT_NEAR(plain.step_time, 15e-3 + 1e-12, 1e-15);  // forward, backward, a 1-FLOP update
  // Copy-out 4 + 4 MB, chunk_cat 4 + 4 MB, reduce copy 4 + 4 MB, at 1e12 B/s: 24 us.
  EXPECT_NEAR(r.step_time - plain.step_time, 3 * kCopy, 1e-12);
  EXPECT_EQ(r.num_collectives, 0u);
}

// The hooks' host time: the first op is issued only after the pre-forward hook, the
// pre-backward and post-backward hooks (2 ms) are issued while the device still runs the
// 5 ms forward.
TEST(FsdpSimulator, HookHostTimeDelaysOnlyTheStepStart) {
  const Graph g = three_layers(1, 1);
  const Cluster cl =
      testing::make_cluster(1, 1, testing::link(kAlpha, kBeta), testing::link(0, 1e9));
  CostProfile prof = uniform_profile(1.0);
  const CostModel none(cl, prof);
  prof.fsdp_hook_host_time = 1e-3;
  const CostModel hooks(cl, prof);
  Plan p = fsdp_plan(g, 1);
  const SimResult a = Simulator(g, cl, none).run(p);
  const SimResult b = Simulator(g, cl, hooks).run(p);
  EXPECT_NEAR(b.step_time - a.step_time, 1e-3, 1e-12);
  prof.fsdp_hook_host_time = 4e-3;  // now the backward hooks (8 ms) pass the forward's end
  const SimResult c = Simulator(g, cl, CostModel(cl, prof)).run(p);
  EXPECT_NEAR(c.step_time - a.step_time, 12e-3 - (5e-3 + kCopy), 1e-12);
}

TEST_F(FsdpOnOneNode, KeepingParametersHoldsThemUnsharded) {
  Plan p = fsdp_plan(g, 4);
  const SimResult sharded = sim.run(p);
  p.data_parallel.fsdp.reshard_after_forward = false;
  const SimResult kept = sim.run(p);
  // 3 x 4 MB held whole instead of 3 x 1 MB shards; no backward gather.
  EXPECT_EQ(kept.peak_memory[0] - sharded.peak_memory[0], 3 * (kParam - kParam / 4));
  EXPECT_NEAR(kept.fsdp_backward_wait[0], 0, 1e-12);
}

TEST(FsdpSimulator, HsdpShardsInsideAGroupAndAllReducesAcross) {
  const Graph g = three_layers(8);
  const Cluster cl =
      testing::make_cluster(2, 4, testing::link(kAlpha, kBeta), testing::link(kAlpha, kBeta / 4));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = fsdp_plan(g, 8);
  p.validate(g, cl);
  const SimResult full = sim.run(p);
  p.data_parallel.fsdp.shard_group = 4;  // a node shards, the two nodes replicate
  p.validate(g, cl);
  const SimResult hsdp = sim.run(p);
  // Parameters (3 x 4 MB) and gradients (3 x 4 MB) in shards of 1/4 instead of 1/8.
  EXPECT_EQ(hsdp.peak_memory[0] - full.peak_memory[0], 2 * 3 * (kParam / 4 - kParam / 8));
  // The gather stays inside the node: the first forward waits for the copy-in of the 1 MB
  // shard and a 4-device all-gather.
  const double node_gather =
      2 * kParam / 4 / 1e12 +
      cost.collective_time(CollectiveKind::kAllGather, {0, 1, 2, 3}, kParam, SyncScheme::kAuto);
  EXPECT_NEAR(hsdp.fsdp_forward_wait[0], node_gather, 1e-12);
  // Per block: reduce-scatter in the node, then a 2-way all-reduce of the 1 MB shard.
  const double rs =
      cost.collective_time(CollectiveKind::kReduceScatter, {0, 1, 2, 3}, kParam, SyncScheme::kAuto);
  const double ar =
      cost.collective_time(CollectiveKind::kAllReduce, {0, 4}, kParam / 4, SyncScheme::kRing);
  EXPECT_EQ(hsdp.num_collectives, 3u);
  EXPECT_GT(ar, 0);
  // The last block's reduction is what is left after the backward; the copies: 3 + 2
  // copy-outs, 3 chunk_cats.
  const double compute = 3 * 5e-3 + 3 * 10e-3 + 8 * kCopy;
  EXPECT_NEAR(hsdp.step_time, compute + node_gather + rs + ar, 1e-8);
}

TEST_F(FsdpOnOneNode, ReduceAndParameterDtypesScaleTheCollectives) {  // the graph is f32
  Plan p = fsdp_plan(g, 4);
  const SimResult f32 = sim.run(p);
  EXPECT_EQ(f32.collective_bytes, 3 * kParam);
  p.data_parallel.fsdp.reduce_dtype_set = true;
  p.data_parallel.fsdp.reduce_dtype = DType::kBF16;
  p.data_parallel.fsdp.param_dtype_set = true;
  p.data_parallel.fsdp.param_dtype = DType::kBF16;
  const SimResult bf16 = sim.run(p);
  EXPECT_EQ(bf16.collective_bytes, 3 * kParam / 2);
  // The copy-in of the shard: cast from f32 (1 MB read, 0.5 MB written), then copied into
  // the all-gather buffer (0.5 + 0.5 MB).
  const double copy_in = 2.5 * kParam / 4 / 1e12;
  EXPECT_NEAR(bf16.fsdp_forward_wait[0],
              copy_in + collective(CollectiveKind::kAllGather, kParam / 2), 1e-12);
}

}  // namespace
}  // namespace placer
