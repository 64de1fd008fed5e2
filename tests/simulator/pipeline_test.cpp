// Pipeline schedules: hand-computed step times and activation memory.
#include <gtest/gtest.h>

#include <tuple>

#include "sim_fixtures.h"
#include "simulator/simulator.h"
#include "simulator/steady_state.h"
#include "src/util/error.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;
using testing::TestGraph;

// s stages of two forward ops each (f: a[i-1] -> h, g: h -> a[i]) and their backward ops
// (g': reads h; f': reads the input of f). Only h has bytes (h_bytes for the whole batch),
// so stage i's memory is the number of its micro-batches in flight times h_bytes / m.
// Every forward op has `flops`, every backward op 2 * flops; optional parameter gradients
// (param_bytes) on f' with an update op per stage.
struct PipeGraph {
  Graph g;
  std::vector<std::vector<OpId>> stage_ops;  // forward ops per stage
};

PipeGraph pipe_graph(int s, double flops, uint64_t h_bytes, uint64_t param_bytes = 0,
                     std::vector<double> stage_scale = {}, bool tie_last_to_first = false) {
  stage_scale.resize(s, 1.0);
  TestGraph b("pipe");
  std::vector<TensorId> a(s), h(s), gh(s), grad(s);
  std::vector<OpId> f(s), gg(s);
  PipeGraph pg;
  pg.stage_ops.resize(s);
  TensorId prev = kNoTensor;
  for (int i = 0; i < s; ++i) {
    const std::string n = std::to_string(i);
    h[i] = b.tensor("h" + n, h_bytes);
    a[i] = b.tensor("a" + n, 0);
    const double fl = flops * stage_scale[i];
    f[i] =
        b.op("f" + n, fl, prev == kNoTensor ? std::vector<TensorId>{} : std::vector{prev}, {h[i]});
    gg[i] = b.op("g" + n, fl, {h[i]}, {a[i]});
    b.at(f[i]).param_bytes = param_bytes;
    pg.stage_ops[i] = {f[i], gg[i]};
    prev = a[i];
  }
  // As GPT's output layer reuses the word embedding: the last op shares f0's weights.
  if (tie_last_to_first) b.at(gg[s - 1]).attrs.emplace_back("tied_to", "f0");
  TensorId up = a[s - 1];  // the loss gradient seed
  for (int i = s - 1; i >= 0; --i) {
    const std::string n = std::to_string(i);
    gh[i] = b.tensor("gh" + n, 0);
    grad[i] = b.tensor("da" + n, 0);
    const double fl = flops * stage_scale[i];
    b.op("g" + n + "/grad", 2 * fl, {up, h[i]}, {gh[i]}, Phase::kBackward, gg[i]);
    std::vector<TensorId> in = {gh[i]};
    if (i > 0) in.push_back(a[i - 1]);
    std::vector<TensorId> out = {grad[i]};
    TensorId pgrad = kNoTensor;
    if (param_bytes > 0) out.push_back(pgrad = b.tensor("pg" + n, param_bytes, false, true));
    b.op("f" + n + "/grad", 2 * fl, in, out, Phase::kBackward, f[i]);
    if (pgrad != kNoTensor) b.op("f" + n + "/update", 1e6, {pgrad}, {}, Phase::kOptimizer, f[i]);
    up = grad[i];
  }
  pg.g = b.build();
  return pg;
}

Plan pipe_plan(const PipeGraph& pg, int m, PipelineSchedule sched, int devices_per_stage = 1) {
  Plan p;
  p.pipeline.micro_batches = m;
  p.pipeline.schedule = sched;
  int d = 0;
  for (const auto& ops : pg.stage_ops) {
    PipelineStage st;
    st.ops = ops;
    for (int k = 0; k < devices_per_stage; ++k) st.devices.push_back(d++);
    p.pipeline.stages.push_back(st);
  }
  return p;
}

TEST(Pipeline, GPipeEqualStagesIsMPlusSMinusOneTimesStageTime) {
  const int s = 3, m = 4;
  const PipeGraph pg = pipe_graph(s, 2e9, 4000000);
  const Cluster cl = make_cluster(1, s, link(0, 1e10), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(pg.g, cl, cost);
  // Per micro-batch and stage: forward 2 ops x 2e9 / m FLOPs, backward twice that.
  const double tf = 2 * (2e9 / m) / 1e12, tb = 2 * tf;
  const SimResult r = sim.run(pipe_plan(pg, m, PipelineSchedule::kGPipe));
  EXPECT_DOUBLE_EQ(r.step_time, (m + s - 1) * (tf + tb));
  EXPECT_EQ(r.simulated_ops, uint64_t(4 * s * m));
  for (int d = 0; d < s; ++d) EXPECT_DOUBLE_EQ(r.compute_time[d], m * (tf + tb));
  // GPipe keeps every micro-batch's activations until its backward.
  for (int d = 0; d < s; ++d) EXPECT_EQ(r.peak_memory[d], uint64_t(m) * 1000000) << d;

  // m = 1 degenerates to a sequential model-parallel step.
  const SimResult one = sim.run(pipe_plan(pg, 1, PipelineSchedule::kGPipe));
  EXPECT_DOUBLE_EQ(one.step_time, s * (4e-3 + 8e-3));
}

TEST(Pipeline, OneFOneBKeepsFewerMicroBatchesInFlight) {
  const int s = 3, m = 4;
  const PipeGraph pg = pipe_graph(s, 2e9, 4000000);
  // 3.5 MB per device: GPipe needs 4 MB on every stage, 1F1B at most 3 on stage 0.
  const Cluster cl = make_cluster(1, s, link(0, 1e10), link(0, 1e9), 3500000);
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(pg.g, cl, cost);
  const double tf = 2 * (2e9 / m) / 1e12, tb = 2 * tf;
  const SimResult gpipe = sim.run(pipe_plan(pg, m, PipelineSchedule::kGPipe));
  const SimResult ofob = sim.run(pipe_plan(pg, m, PipelineSchedule::k1F1B));
  // Same bubble for equal stages (Narayanan et al. 2021), less memory: stage i keeps at
  // most s - i micro-batches.
  EXPECT_DOUBLE_EQ(ofob.step_time, (m + s - 1) * (tf + tb));
  for (int i = 0; i < s; ++i) EXPECT_EQ(ofob.peak_memory[i], uint64_t(s - i) * 1000000) << i;
  EXPECT_TRUE(gpipe.oom);
  EXPECT_EQ(gpipe.oom_devices, (std::vector<int>{0, 1, 2}));
  EXPECT_FALSE(ofob.oom);
}

// GPipe flushes: a stage starts backward only after all its forward micro-batches, even
// when it idles in between (here stage 1 is twice as fast as stage 0).
TEST(Pipeline, GPipeBackwardWaitsForTheFlush) {
  const int s = 2, m = 2;
  const PipeGraph pg = pipe_graph(s, 1e9, 4000000, 0, {1.0, 0.5});
  const Cluster cl = make_cluster(1, s, link(0, 1e10), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(pg.g, cl, cost);
  const SimResult r = sim.run(pipe_plan(pg, m, PipelineSchedule::kGPipe));
  // Stage 0: F0 [0,1] F1 [1,2] ms; stage 1: F0 [1,1.5] F1 [2,2.5] B0 [2.5,3.5] B1 [3.5,4.5];
  // stage 0: B0 [3.5,5.5] B1 [5.5,7.5].
  EXPECT_DOUBLE_EQ(r.step_time, 7.5e-3);
  EXPECT_EQ(r.peak_memory[1], 2u * 2000000);  // both micro-batches held until the flush
}

// The steady state of the same two stages (simulator/steady_state.h): the busier stage's
// work per step, without the fill and drain the step pays.
TEST(Pipeline, SteadyStateIsTheBusiestStagesWorkPerStep) {
  const int s = 2;
  const PipeGraph pg = pipe_graph(s, 1e9, 4000000, 0, {1.0, 0.5});
  const Cluster cl = make_cluster(1, s, link(0, 1e10), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(pg.g, cl, cost);
  // Stage 0 per step: forward 2 x 1e9 FLOPs (2 ms), backward twice that (4 ms); stage 1 half.
  const SimResult two = sim.run(pipe_plan(pg, 2, PipelineSchedule::kGPipe));
  EXPECT_DOUBLE_EQ(two.step_time, 7.5e-3);
  EXPECT_DOUBLE_EQ(steady_state_time(two, cl), 6e-3);
  // One micro-batch: the stages in turn (2 + 1 + 2 + 4 ms), the same steady state.
  const SimResult one = sim.run(pipe_plan(pg, 1, PipelineSchedule::kGPipe));
  EXPECT_DOUBLE_EQ(one.step_time, 9e-3);
  EXPECT_DOUBLE_EQ(steady_state_time(one, cl), 6e-3);
}

TEST(Pipeline, ReplicatedStagesSyncGradientsAfterTheLastBackward) {
  const int s = 2, m = 2;
  const uint64_t P = 4000000;
  const PipeGraph pg = pipe_graph(s, 2e9, 0, P);
  const double beta = 1e10;
  const Cluster cl = make_cluster(1, 4, link(0, beta), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(pg.g, cl, cost);
  const SimResult r = sim.run(pipe_plan(pg, m, PipelineSchedule::kGPipe, 2));
  // Work per micro-batch and device: 2e9 / (m * 2 devices) per forward op.
  const double tf = 2 * (2e9 / 4) / 1e12, tb = 2 * tf;
  const double ar = 2 * 1.0 / 2 * P / beta;  // ring over the stage's two devices, alpha = 0
  // Stage 0 ends its last backward at (m + s - 1)(tf + tb), then all-reduces and updates.
  EXPECT_DOUBLE_EQ(r.step_time, (m + s - 1) * (tf + tb) + ar + 1e-6);
  EXPECT_EQ(r.num_collectives, 2u);
  EXPECT_DOUBLE_EQ(r.compute_time[1], r.compute_time[0]);  // the stage replica mirrors
  EXPECT_EQ(r.peak_memory[0], P + P);                      // parameters + the accumulated gradient
}

}  // namespace
}  // namespace placer

namespace placer {
namespace {

// Ops outside the stage lists: a weight input (no predecessors) joins the stage of its
// consumer; a backward op without forward_op joins the latest stage among its inputs.
TEST(Pipeline, UnlistedOpsFollowTheirNeighbours) {
  TestGraph b("assign");
  const TensorId w = b.tensor("w", 1000, false);
  const TensorId a0 = b.tensor("a0", 1000);
  const TensorId a1 = b.tensor("a1", 1000);
  const TensorId s = b.tensor("seed", 1000);
  const TensorId g1 = b.tensor("g1", 1000);
  const OpId f0 = b.op("f0", 1e9, {}, {a0});
  const OpId wop = b.op("w", 0, {}, {w});
  b.at(wop).category = OpCategory::kInput;
  b.at(wop).type = "Parameter";
  const OpId f1 = b.op("f1", 1e9, {a0, w}, {a1});
  const OpId seed = b.op("loss/grad", 1e9, {a1}, {s}, Phase::kBackward);  // no forward_op
  const OpId b1 = b.op("f1/grad", 1e9, {s, a0}, {g1}, Phase::kBackward, f1);
  const OpId b0 = b.op("f0/grad", 1e9, {g1}, {}, Phase::kBackward, f0);
  const Graph g = b.build();
  const Cluster cl = make_cluster(1, 2, link(0, 1e10), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p;
  p.pipeline.micro_batches = 2;
  p.pipeline.schedule = PipelineSchedule::kGPipe;
  p.pipeline.stages = {PipelineStage{{f0}, {0}}, PipelineStage{{f1}, {1}}};
  SimOptions o;
  o.record_events = true;
  const SimResult r = sim.run(p, o);
  std::vector<int> dev(g.num_ops(), -1);
  for (const SimEvent& e : r.events) {
    if (e.kind == SimEvent::kCompute) dev[e.op] = e.device;
  }
  EXPECT_EQ(dev[wop], 1);
  EXPECT_EQ(dev[seed], 1);
  EXPECT_EQ(dev[b1], 1);
  EXPECT_EQ(dev[b0], 0);
  EXPECT_EQ(r.simulated_ops, 12u);  // 6 ops x 2 micro-batches
}

// Interleaved 1F1B (Narayanan et al. 2021): p ranks each holding v model chunks of equal
// cost. With t = forward + backward time of one chunk and micro-batch, the step is
// (m v + p - 1) t: the bubble (p - 1) t is v times smaller than with one chunk per rank,
// where the same model takes (m + p - 1) v t.
TEST(Pipeline, InterleavedOneFOneBBubbleShrinksByTheVirtualStages) {
  for (const auto& [p, v, m] : {std::tuple{2, 2, 4}, std::tuple{4, 2, 8}, std::tuple{2, 3, 4}}) {
    SCOPED_TRACE("p=" + std::to_string(p) + " v=" + std::to_string(v) + " m=" + std::to_string(m));
    const PipeGraph pg = pipe_graph(p * v, 2e9, 0);
    const Cluster cl = make_cluster(1, p, link(0, 1e10), link(0, 1e9));
    const CostModel cost(cl, uniform_profile(1.0));
    Simulator sim(pg.g, cl, cost);
    const double tc = 3 * 2 * (2e9 / m) / 1e12;  // forward 2 ops, backward twice that
    Plan inter = pipe_plan(pg, m, PipelineSchedule::k1F1B);
    for (size_t s = 0; s < inter.pipeline.stages.size(); ++s) {
      inter.pipeline.stages[s].devices = {static_cast<int>(s) % p};
    }
    inter.pipeline.virtual_stages = v;
    const SimResult r = sim.run(inter);
    EXPECT_NEAR(r.step_time, (m * v + p - 1) * tc, 1e-12);
    for (int d = 0; d < p; ++d) EXPECT_NEAR(r.compute_time[d], m * v * tc, 1e-12);

    // The same chunks, one contiguous block of v per rank: bubble (p - 1) v t.
    Plan plain;
    plain.pipeline.micro_batches = m;
    plain.pipeline.stages.resize(size_t(p));
    for (int s = 0; s < p * v; ++s) {
      PipelineStage& st = plain.pipeline.stages[size_t(s / v)];
      st.devices = {s / v};
      st.ops.insert(st.ops.end(), pg.stage_ops[size_t(s)].begin(), pg.stage_ops[size_t(s)].end());
    }
    EXPECT_NEAR(sim.run(plain).step_time, (m + p - 1) * v * tc, 1e-12);
  }
}

TEST(Pipeline, VirtualStagesMustShareTheirRanksDevices) {
  const PipeGraph pg = pipe_graph(4, 2e9, 0);
  const Cluster cl = make_cluster(1, 4, link(0, 1e10), link(0, 1e9));
  Plan p = pipe_plan(pg, 4, PipelineSchedule::k1F1B);  // stages on devices 0, 1, 2, 3
  p.pipeline.virtual_stages = 2;
  p.placement.assign(pg.g.num_ops(), 0);
  try {
    p.validate(pg.g, cl);
    FAIL() << "validated";
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(),
                 "pipeline.stages[2].devices: with virtual_stages 2, stage 2 runs on rank 0 and "
                 "must have the devices and tensor_parallel of stage 0");
  }
  p.pipeline.stages[2].devices = {0};
  p.pipeline.stages[3].devices = {1};
  p.pipeline.micro_batches = 3;
  try {
    p.validate(pg.g, cl);
    FAIL() << "validated";
  } catch (const ValidationError& e) {
    EXPECT_STREQ(e.what(),
                 "pipeline.micro_batches: interleaved 1F1B needs a multiple of the 2 pipeline "
                 "ranks (got 3)");
  }
  p.pipeline.micro_batches = 4;
  EXPECT_NO_THROW(p.validate(pg.g, cl));
}

// Tied embeddings across stages (Megatron's embedding group): the last stage keeps a copy of
// f0's weights, and after the last backward the two copies' gradients are all-reduced
// between the stages before any optimizer step.
TEST(Pipeline, TiedWeightsAcrossStagesAllReduceTheirGradients) {
  const int s = 2, m = 2;
  const uint64_t param = 8000000;
  const PipeGraph plain = pipe_graph(s, 2e9, 0, param);
  const PipeGraph tied = pipe_graph(s, 2e9, 0, param, {}, true);
  const Cluster cl = make_cluster(1, s, link(1e-5, 1e10), link(1e-5, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim_plain(plain.g, cl, cost), sim_tied(tied.g, cl, cost);
  const SimResult a = sim_plain.run(pipe_plan(plain, m, PipelineSchedule::k1F1B));
  const SimResult b = sim_tied.run(pipe_plan(tied, m, PipelineSchedule::k1F1B));
  // f0's gradient is the last one ready (stage 0's last backward op); f0/update then waits
  // for the all-reduce of its 8 MB with device 1.
  const double all_reduce = cost.collective_time(CollectiveKind::kAllReduce, {0, 1}, param,
                                                 SyncScheme::kAuto);
  EXPECT_GT(all_reduce, 1e-4);
  EXPECT_NEAR(b.step_time - a.step_time, all_reduce, 1e-12);
  EXPECT_EQ(b.peak_memory[1], a.peak_memory[1] + param);  // the copy of f0's weights
  EXPECT_EQ(b.peak_memory[0], a.peak_memory[0]);
  // On one stage nothing is tied across devices.
  Plan one = pipe_plan(tied, m, PipelineSchedule::k1F1B);
  Plan one_plain = pipe_plan(plain, m, PipelineSchedule::k1F1B);
  for (Plan* q : {&one, &one_plain}) {
    q->pipeline.stages[1].devices = {0};
  }
  EXPECT_DOUBLE_EQ(sim_tied.run(one).step_time, sim_plain.run(one_plain).step_time);
}

/// The placement form of pipe_plan: each stage's ops (and their backward / optimizer ops)
/// on device_of_stage[stage], micro-batches but no stages.
Plan placement_plan_of(const PipeGraph& pg, int m, PipelineSchedule sched,
                       const std::vector<int>& device_of_stage) {
  Plan p;
  p.pipeline.micro_batches = m;
  p.pipeline.schedule = sched;
  p.placement.assign(pg.g.num_ops(), 0);
  for (size_t s = 0; s < pg.stage_ops.size(); ++s) {
    for (OpId o : pg.stage_ops[s]) p.placement[o] = device_of_stage[s];
  }
  for (OpId o = 0; o < pg.g.num_ops(); ++o) {
    const OpId f = pg.g.op(o).forward_op;
    if (f < pg.g.num_ops()) p.placement[o] = p.placement[f];
  }
  return p;
}

TEST(Pipeline, MicroBatchedPlacementSimulatesLikeTheStagedPlan) {
  const int s = 3, m = 4;
  const PipeGraph pg = pipe_graph(s, 2e9, 4000000, 1000000, {1.0, 2.0, 0.5});
  const Cluster cl = make_cluster(1, s, link(1e-6, 1e10), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(pg.g, cl, cost);
  for (PipelineSchedule sched : {PipelineSchedule::k1F1B, PipelineSchedule::kGPipe}) {
    const SimResult staged = sim.run(pipe_plan(pg, m, sched));
    const SimResult placed = sim.run(placement_plan_of(pg, m, sched, {0, 1, 2}));
    EXPECT_DOUBLE_EQ(placed.step_time, staged.step_time);
    EXPECT_EQ(placed.peak_memory, staged.peak_memory);
    EXPECT_EQ(placed.compute_time, staged.compute_time);
    EXPECT_EQ(placed.simulated_ops, staged.simulated_ops);
  }
}

TEST(Pipeline, MicroBatchedPlacementGoingBackAndForthStillPipelines) {
  // Stages 0 and 2 on device 0, stage 1 on device 1: device 0 carries 2/3 of the work.
  const int s = 3;
  const PipeGraph pg = pipe_graph(s, 2e9, 0);
  const Cluster cl = make_cluster(1, 2, link(0, 1e12), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(pg.g, cl, cost);
  // One micro-batch: the three stages one after the other, 4 ms forward + 8 ms backward each.
  const SimResult one = sim.run(placement_plan_of(pg, 1, PipelineSchedule::k1F1B, {0, 1, 0}));
  EXPECT_DOUBLE_EQ(one.step_time, 3 * 12e-3);
  const SimResult four = sim.run(placement_plan_of(pg, 4, PipelineSchedule::k1F1B, {0, 1, 0}));
  EXPECT_LT(four.step_time, one.step_time);
  EXPECT_GE(four.step_time, 24e-3 - 1e-12);  // device 0's own work
  EXPECT_DOUBLE_EQ(four.compute_time[0], 24e-3);
}

TEST(Pipeline, MicroBatchedPlacementRefusesPartitions) {
  const PipeGraph pg = pipe_graph(2, 2e9, 0);
  const Cluster cl = make_cluster(1, 2, link(0, 1e12), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(pg.g, cl, cost);
  Plan p = placement_plan_of(pg, 2, PipelineSchedule::k1F1B, {0, 1});
  OpPartition q;
  q.op = pg.stage_ops[0][0];
  q.devices = {0, 1};
  p.partitions.push_back(q);
  try {
    sim.run(p);
    FAIL() << "expected an error";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("micro_batches without stages cannot be combined with partitions"),
              std::string::npos)
        << e.what();
  }
}

// Stage-boundary transfers with tensor parallelism, traced by hand. Two hosts of two
// devices; stage 0 = TP pair {0, 1} on host 0 runs A (1 s), stage 1 = TP pair {2, 3} on
// host 1 runs B (1 s), both replicated on their pair, so each rank holds A's whole output
// t (1 GB). Links: between hosts 1 GB/s per device (one NIC each), inside a host 10 GB/s,
// no latency.
//  - every copy from the primary (TP rank 0), as before: t leaves through device 0's NIC
//    twice, 1 s each: B starts when the second copy is in at 3 s, ends at 4 s;
//  - each rank to its peer (scatter / gather off): both copies at once, B at 2 s -> 3 s;
//  - scatter / gather: 0.5 GB each (0.5 s), then the all-gather of 1 GB inside host 1,
//    ring on 2 devices: (2 - 1) / 2 x 1 GB / 10 GB/s = 0.05 s: B at 1.55 s -> 2.55 s.
TEST(PipelineTransfers, TensorParallelRanksSendToTheirPeersAndScatterGather) {
  TestGraph b("tp_pipe");
  const TensorId t = b.tensor("t", 1000000000, /*batch_scaled=*/false);
  const TensorId u = b.tensor("u", 0, false);
  const OpId a = b.op("A", 1e12, {}, {t});
  const OpId bb = b.op("B", 1e12, {t}, {u});
  const Graph g = b.build();
  const Cluster cl = make_cluster(2, 2, link(0, 1e10, LinkSharing::kPerDevice),
                                  link(0, 1e9, LinkSharing::kPerDevice));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  Plan p;
  p.graph_name = g.name();
  p.placement = {0, 2};
  p.pipeline.micro_batches = 1;
  for (int s = 0; s < 2; ++s) {
    PipelineStage st;
    st.ops = {s == 0 ? a : bb};
    st.devices = {2 * s, 2 * s + 1};
    st.tensor_parallel = 2;
    p.pipeline.stages.push_back(st);
    OpPartition q;
    q.op = st.ops[0];
    q.devices = st.devices;
    q.replicated = true;
    p.partitions.push_back(q);
  }
  p.validate(g, cl);
  SimOptions opt;
  opt.record_events = true;
  const SimResult r = sim.run(p, opt);
  EXPECT_NEAR(r.step_time, 2.55, 1e-9);
  EXPECT_EQ(r.num_transfers, 2u);
  EXPECT_EQ(r.transfer_bytes, 1000000000u);  // 0.5 GB from each rank
  for (const SimEvent& e : r.events) {
    if (e.kind == SimEvent::kTransfer) {
      EXPECT_EQ(e.peer, e.device + 2);  // rank k -> rank k
    }
  }
  p.pipeline.scatter_gather = false;
  const SimResult whole = sim.run(p, opt);
  EXPECT_NEAR(whole.step_time, 3.0, 1e-9);
  EXPECT_EQ(whole.transfer_bytes, 2000000000u);
}

}  // namespace
}  // namespace placer
