// FP8 GEMMs and the checkpointing variants (every k-th layer, op-level selective) by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim_fixtures.h"
#include "simulator/simulator.h"

namespace placer {
namespace {

// `a` (outside layers, 1 GFLOP) feeds the linear layer `mm` of layer 0 (2 GFLOP, 1 MB of
// weights) a 1 MB bf16 activation; `bmm` (2 GFLOP, no weights: an activation x activation
// product as in attention) reads it too.
Graph fp8_graph() {
  testing::TestGraph b;
  const TensorId x = b.tensor("x", 1000000);
  const OpId a = b.op("a", 1e9, {}, {x});
  const OpId mm = b.op("mm", 2e9, {x}, {});
  const OpId bmm = b.op("bmm", 2e9, {x}, {});
  b.at(a).dtype = b.at(mm).dtype = b.at(bmm).dtype = DType::kBF16;
  b.at(mm).layer = b.at(bmm).layer = 0;
  b.at(mm).param_bytes = 1000000;
  return b.build();
}

Cluster bf16_cluster(double f8_peak) {
  Cluster c = testing::make_cluster(1, 1, testing::link(0, 1e9), testing::link(0, 1e9));
  DeviceSpec s = c.device(0).spec;
  s.peak_flops[static_cast<int>(DType::kBF16)] = 1e12;
  s.peak_flops[static_cast<int>(DType::kF8)] = f8_peak;
  Cluster out;
  out.name = "fp8";
  out.add_host("host0", s, 1);
  out.set_link(LinkLevel::kIntraHost, testing::link(0, 1e9));
  return out;
}

TEST(Fp8, GemmsOfLayersRunAtTheF8PeakAndPayTheirScaling) {
  const Graph g = fp8_graph();
  const Cluster cl = bf16_cluster(2e12);
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = testing::place(g, {0, 0, 0});
  EXPECT_DOUBLE_EQ(sim.run(p).step_time, 1e-3 + 2e-3 + 2e-3);
  p.precision.fp8 = true;
  // mm: 2 GFLOP at 2 PFLOP/s = 1 ms, plus the scaling pass over its 1 MB input and 1 MB of
  // weights: an amax read, a read and an FP8 write = 2.5 x 2 MB at 1 TB/s = 5 us. `a` (no
  // layer) and `bmm` (no weights) stay bf16.
  EXPECT_NEAR(sim.run(p).step_time, 1e-3 + (1e-3 + 5e-6) + 2e-3, 1e-15);
}

// One stage on two data-parallel devices, two micro-batches: each device runs a quarter of
// the batch per micro-batch, so `mm` takes 2 GFLOP / 4 at 2 PFLOP/s = 0.25 ms and casts a
// quarter of the 1 MB input; the 1 MB of weights is not split by the batch: each device
// casts all of it once per step (half per micro-batch), or all of it every micro-batch under
// FSDP, whose gathered weights are cast again each time.
Plan data_parallel_fp8_plan() {
  Plan p;
  p.pipeline.micro_batches = 2;
  p.pipeline.stages = {PipelineStage{{0, 1, 2}, {0, 1}}};
  p.precision.fp8 = true;
  return p;
}

TEST(Fp8, WeightsAreCastOncePerStepOrPerMicroBatchUnderFsdp) {
  const Graph g = fp8_graph();
  DeviceSpec s = bf16_cluster(2e12).device(0).spec;
  Cluster cl;
  cl.add_host("host0", s, 2);
  cl.set_link(LinkLevel::kIntraHost, testing::link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = data_parallel_fp8_plan();
  // Per micro-batch: a 0.25 ms, mm 0.25 ms, bmm 0.5 ms; two of them: 2 ms of compute.
  // Scaling per micro-batch: 2.5 x (0.25 MB input + 0.5 MB weights) at 1 TB/s = 1.875 us.
  EXPECT_NEAR(sim.run(p).step_time, 2e-3 + 2 * 1.875e-6, 1e-12);
  p.data_parallel.fsdp.enabled = true;
  p.data_parallel.zero_stage = 3;
  // FSDP: 2.5 x (0.25 MB + 1 MB) = 3.125 us per micro-batch, and the copy-out of the
  // gathered 1 MB of weights (read and written) at 1 TB/s, 2 us per micro-batch.
  EXPECT_NEAR(sim.run(p).step_time, 2e-3 + 2 * 3.125e-6 + 2 * 2e-6, 1e-12);
}

TEST(Fp8, WithoutAnF8PeakTheGemmKeepsTheBf16One) {
  const Graph g = fp8_graph();
  const Cluster cl = bf16_cluster(0);
  EXPECT_DOUBLE_EQ(cl.device(0).spec.peak(DType::kF8), 1e12);
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = testing::place(g, {0, 0, 0});
  p.precision.fp8 = true;
  EXPECT_NEAR(sim.run(p).step_time, 5e-3 + 5e-6, 1e-15);
}

// Four layers, each an elementwise op e_i (2 GFLOP) writing z_i (1 MB) and a matmul m_i
// (1 GFLOP) writing y_i (1 MB) for the next layer; a head outside layers reads y_3.
// Backward ops (1 GFLOP each, 1 kB gradients) read what they save.
Graph four_layers() {
  testing::TestGraph b;
  std::vector<TensorId> z, y;
  std::vector<OpId> e, m;
  for (int i = 0; i < 4; ++i) {
    const std::string s = std::to_string(i);
    z.push_back(b.tensor("z" + s, 1000000));
    y.push_back(b.tensor("y" + s, 1000000));
    e.push_back(b.op("e" + s, 2e9,
                     i == 0 ? std::vector<TensorId>{} : std::vector<TensorId>{y[i - 1]}, {z[i]}));
    b.at(e[i]).category = OpCategory::kElementwise;
    m.push_back(b.op("m" + s, 1e9, {z[i]}, {y[i]}));
    b.at(e[i]).layer = b.at(m[i]).layer = i;
  }
  const TensorId gh = b.tensor("gh", 1000);
  const OpId head = b.op("head", 1e6, {y[3]}, {});
  b.op("head/grad", 1e6, {y[3]}, {gh}, Phase::kBackward, head);
  TensorId up = gh;
  for (int i = 3; i >= 0; --i) {
    const std::string s = std::to_string(i);
    const TensorId gz = b.tensor("gz" + s, 1000), gy = b.tensor("gy" + s, 1000);
    b.at(b.op("m" + s + "/grad", 1e9, {up, z[i]}, {gz}, Phase::kBackward, m[i])).layer = i;
    std::vector<TensorId> in = {gz};
    if (i > 0) in.push_back(y[i - 1]);
    const OpId eg = b.op("e" + s + "/grad", 1e9, in, {gy}, Phase::kBackward, e[i]);
    b.at(eg).layer = i;
    b.at(eg).category = OpCategory::kElementwise;
    up = gy;
  }
  return b.build();
}

struct RecomputeRun {
  double compute = 0;
  uint64_t peak = 0;
};

RecomputeRun run_recompute(Recompute rc, int every) {
  const Graph g = four_layers();
  const Cluster cl = testing::make_cluster(1, 1, testing::link(0, 1e9), testing::link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p = testing::place(g, std::vector<int>(g.num_ops(), 0));
  p.recompute = rc;
  p.recompute_every = every;
  const SimResult r = sim.run(p);
  return {r.compute_time[0], r.peak_memory[0]};
}

TEST(Recompute, EveryKthLayerRecomputesOnlyThose) {
  const RecomputeRun none = run_recompute(Recompute::kNone, 1);
  // Full: each layer re-runs e and m (3 ms); every 2nd: layers 1 and 3 only.
  EXPECT_NEAR(run_recompute(Recompute::kFull, 1).compute - none.compute, 4 * 3e-3, 1e-12);
  EXPECT_NEAR(run_recompute(Recompute::kFull, 2).compute - none.compute, 2 * 3e-3, 1e-12);
  EXPECT_NEAR(run_recompute(Recompute::kFull, 4).compute - none.compute, 3e-3, 1e-12);
}

TEST(Recompute, OpLevelSelectiveKeepsMatmulOutputs) {
  const RecomputeRun none = run_recompute(Recompute::kNone, 1);
  // Only the elementwise ops (2 ms each) run again.
  EXPECT_NEAR(run_recompute(Recompute::kSelectiveOp, 1).compute - none.compute, 4 * 2e-3, 1e-12);
  EXPECT_NEAR(run_recompute(Recompute::kSelectiveOp, 2).compute - none.compute, 2 * 2e-3, 1e-12);
}

TEST(Recompute, SavedMemoryByHand) {
  // Without recomputation the peak is at the first backward op (head/grad): z_0..3 and
  // y_0..3 held, 8 MB, plus its 1 kB output gradient.
  EXPECT_EQ(run_recompute(Recompute::kNone, 1).peak, 8001000u);
  // selective_op drops every z_i (read only inside its layer) and keeps the matmul outputs
  // y_i: the peak moves into the forward, while m_3 reads z_3 and writes y_3 with y_0..2
  // held: 5 MB. (During a layer's backward its z comes back as 1 MB of workspace: at most
  // y_0..2 + 1 MB then.)
  EXPECT_EQ(run_recompute(Recompute::kSelectiveOp, 1).peak, 5000000u);
  // Every 2nd layer: z_1 and z_3 dropped, z_0 and z_2 held: 7 MB at m_3's forward.
  EXPECT_EQ(run_recompute(Recompute::kSelectiveOp, 2).peak, 7000000u);
  // full keeps the layer outputs y_i (read by the next layer or the head) and drops the
  // z_i too: the same 5 MB here.
  EXPECT_EQ(run_recompute(Recompute::kFull, 1).peak, 5000000u);
}

}  // namespace
}  // namespace placer
