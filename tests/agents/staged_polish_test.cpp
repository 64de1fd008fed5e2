// The pipeline polish of gdp+stages (agents/staged_polish.h): its neighbours, counted by hand,
// and the hill climb over them.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "agents/staged_polish.h"
#include "datasets/synthetic.h"
#include "problem_fixture.h"
#include "src/graph/training_step.h"

namespace placer {
namespace {

/// A two-op chain's training step (batch `batch`) on one host of four 10 TFLOP/s devices.
testing::ProblemFixture two_op_problem(int64_t batch) {
  ChainOptions o;
  o.per_op_flops = {4e9, 4e9};
  o.activation_bytes = 1 << 20;
  o.param_bytes = 1 << 20;
  o.batch = batch;
  DeviceSpec gpu;
  gpu.model = "gpu10t";
  gpu.peak_flops[static_cast<int>(DType::kF32)] = 10e12;
  gpu.memory_bandwidth = 1e12;
  gpu.memory_bytes = 16ull << 30;
  return testing::ProblemFixture(
      expand_training_step(make_chain(o)),
      testing::hosts_cluster(1, 4, gpu, LinkSpec{"nvlink", 5e-6, 20e9, LinkSharing::kPerPair},
                             LinkSpec{"eth", 20e-6, 1e9, LinkSharing::kPerPair}));
}

/// chain.0 on stage 0 (device 0), chain.1 on stage 1 (device 1), `m` micro-batches.
Plan two_stages(const Graph& g, int m) {
  Plan plan;
  plan.placement.assign(static_cast<size_t>(g.num_ops()), 0);
  plan.pipeline.micro_batches = m;
  plan.pipeline.stages.resize(2);
  plan.pipeline.stages[0].devices = {0};
  plan.pipeline.stages[1].devices = {1};
  for (OpId o = 0; o < g.num_ops(); ++o) {
    if (g.op(o).phase != Phase::kForward) continue;
    const int s = g.op(o).name == "chain.1" ? 1 : 0;
    plan.pipeline.stages[size_t(s)].ops.push_back(o);
    plan.placement[size_t(o)] = s;
  }
  return plan;
}

std::vector<int> widths(const Plan& p) {
  std::vector<int> w;
  for (const PipelineStage& s : p.pipeline.stages) w.push_back(int(s.devices.size()));
  return w;
}

TEST(StagedPolish, NeighboursOfATwoStagePipeline) {
  testing::ProblemFixture f = two_op_problem(4);
  const Problem p = f.problem();
  // Widths 1, 1 and 2 micro-batches of a batch of 4: no replicas, so no bucket sizes; the
  // other divisors of 4 samples per replica (1, 4); a device more for either stage (2, 1 /
  // 1, 2, each 2 samples per replica, 2 micro-batches kept). Nothing moves between stages
  // of one device.
  const std::vector<Plan> n = pipeline_neighbours(p, two_stages(f.g, 2));
  ASSERT_EQ(n.size(), 4u);
  EXPECT_EQ(n[0].pipeline.micro_batches, 1);
  EXPECT_EQ(n[1].pipeline.micro_batches, 4);
  EXPECT_EQ(widths(n[2]), (std::vector<int>{2, 1}));
  EXPECT_EQ(n[2].pipeline.stages[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(n[2].pipeline.stages[1].devices, (std::vector<int>{2}));
  EXPECT_EQ(n[2].pipeline.micro_batches, 2);
  // The placement follows each stage's first device (stage 1 moved from device 1 to 2).
  for (OpId o : n[2].pipeline.stages[1].ops) EXPECT_EQ(n[2].placement[size_t(o)], 2);
  EXPECT_EQ(widths(n[3]), (std::vector<int>{1, 2}));
  EXPECT_EQ(n[3].pipeline.stages[1].devices, (std::vector<int>{1, 2}));
  // From widths 2, 1: five other bucket sizes; micro-batches 1 (2 samples per replica);
  // widths 1, 1 / 1, 2 (a device moved to stage 1) / 2, 2; not 3, 1 (3 does not divide 4).
  const std::vector<Plan> m = pipeline_neighbours(p, n[2]);
  ASSERT_EQ(m.size(), 9u);
  for (size_t i = 0; i < 5; ++i)
    EXPECT_EQ(m[i].data_parallel.bucket_bytes, polish_bucket_sizes()[i + 1]);
  EXPECT_EQ(m[5].pipeline.micro_batches, 1);
  EXPECT_EQ(widths(m[6]), (std::vector<int>{1, 1}));
  EXPECT_EQ(widths(m[7]), (std::vector<int>{1, 2}));
  EXPECT_EQ(widths(m[8]), (std::vector<int>{2, 2}));
  // A batch of one leaves nothing to vary.
  testing::ProblemFixture one = two_op_problem(1);
  EXPECT_TRUE(pipeline_neighbours(one.problem(), two_stages(one.g, 1)).empty());
}

TEST(StagedPolish, ClimbsToNoWorseThanEveryNeighbourAndStopsAtTheBudget) {
  testing::ProblemFixture f = two_op_problem(16);
  const Problem p = f.problem();
  const Plan start = two_stages(f.g, 2);
  const double t0 = f.sim.run(start).step_time;
  double best_neighbour = t0;
  const std::vector<Plan> first = pipeline_neighbours(p, start);
  std::vector<double> times;
  for (const Plan& n : first) times.push_back(f.sim.run(n).step_time);
  for (double t : times) best_neighbour = std::min(best_neighbour, t);
  int spent = 0;
  const PolishedPlan r =
      polish_pipeline(p, start, t0, Objective::kStepTime, [&] { return ++spent > 0; });
  EXPECT_LT(best_neighbour, t0);
  EXPECT_LE(r.time, best_neighbour);
  EXPECT_DOUBLE_EQ(f.sim.run(r.plan).step_time, r.time);
  EXPECT_GT(spent, int(first.size()));  // it went on from the best neighbour
  // Compute-bound with small parameters: the climb ends using all four devices.
  const std::vector<int> w = widths(r.plan);
  EXPECT_EQ(std::accumulate(w.begin(), w.end(), 0), 4);
  // Two simulations allowed: the better of the first two neighbours (or the start).
  int left = 2;
  const PolishedPlan two =
      polish_pipeline(p, start, t0, Objective::kStepTime, [&] { return left-- > 0; });
  EXPECT_DOUBLE_EQ(two.time, std::min({t0, times[0], times[1]}));
}

}  // namespace
}  // namespace placer
