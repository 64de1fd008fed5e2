// What best / auto compare plans by (agents/common/objective.h): the step time, or the
// steady-state time per step of pipelined execution.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "agents/portfolio/method_portfolio.h"
#include "datasets/synthetic.h"
#include "problem_fixture.h"
#include "simulator/steady_state.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"

namespace placer {
namespace {

Cluster two_devices(bool overlap) {
  DeviceSpec spec;
  spec.model = "acc";
  spec.memory_bytes = 1ull << 30;
  spec.overlap_transfers = overlap;
  Cluster c;
  c.name = "two";
  c.add_host("h", spec, 2);
  return c;
}

MethodRun run_of(double step, std::vector<double> compute, std::vector<double> comm) {
  MethodRun r;
  r.ok = true;
  r.result.step_time = step;
  r.result.compute_time = std::move(compute);
  r.result.comm_time = std::move(comm);
  return r;
}

TEST(PortfolioObjective, ThroughputComparesTheBusiestDevice) {
  // A two-stage pipeline of 6 and 3 ms of compute per step with 1 ms of transfers on each
  // device, run with one micro-batch (the stages in turn, 9 ms a step), against everything
  // on one device (8 ms a step).
  MethodRun pipe = run_of(9e-3, {6e-3, 3e-3}, {1e-3, 1e-3});
  const MethodRun single = run_of(8e-3, {8e-3, 0}, {0, 0});
  const Cluster overlap = two_devices(true), blocking = two_devices(false);
  EXPECT_TRUE(better_run(single, pipe));
  EXPECT_TRUE(better_run(single, pipe, overlap, Objective::kStepTime));
  // Streaming: 6 ms a step with copy engines, 6 + 1 ms without, both under 8 ms.
  EXPECT_DOUBLE_EQ(objective_time(Objective::kThroughput, pipe.result, overlap), 6e-3);
  EXPECT_DOUBLE_EQ(objective_time(Objective::kThroughput, pipe.result, blocking), 7e-3);
  EXPECT_TRUE(better_run(pipe, single, overlap, Objective::kThroughput));
  EXPECT_TRUE(better_run(pipe, single, blocking, Objective::kThroughput));
  // A plan that runs out of memory loses under either objective.
  pipe.result.oom = true;
  EXPECT_TRUE(better_run(single, pipe, overlap, Objective::kThroughput));
}

TEST(PortfolioObjective, OptionsReadTheObjectiveAndNameBadKeys) {
  EXPECT_EQ(portfolio_options("best", MethodSettings{{"objective=throughput"}}).objective,
            Objective::kThroughput);
  EXPECT_EQ(portfolio_options("auto", MethodSettings{}).objective, Objective::kStepTime);
  try {
    portfolio_options("best", MethodSettings{{"objective=fast"}});
    FAIL() << "a bad objective was accepted";
  } catch (const ValidationError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--set objective (best): expected step or throughput, got 'fast'");
  }
  EXPECT_THROW(portfolio_options("auto", MethodSettings{{"samples=4"}}), ValidationError);
}

TEST(PortfolioObjective, StreamingKeepsOneMicroBatchWhenEachCostsItsLaunches) {
  // Two layers of 1 GFLOP as two stages on 1 TFLOP/s devices that pay 100 us per op launch:
  // with 4 micro-batches each stage launches every forward and backward op 4 times, so one
  // micro-batch streams 3 x (its ops) x 100 us faster per step.
  ChainOptions co;
  co.per_op_flops = {1e9, 1e9};
  co.activation_bytes = 1 << 10;
  co.param_bytes = 0;
  co.batch = 8;
  DeviceSpec spec;
  spec.model = "acc";
  spec.peak_flops[static_cast<int>(DType::kF32)] = 1e12;
  spec.memory_bandwidth = 1e12;
  spec.memory_bytes = 1ull << 34;
  spec.launch_overhead = 1e-4;
  testing::ProblemFixture f(
      expand_training_step(make_chain(co)),
      testing::hosts_cluster(1, 2, spec, LinkSpec{"l", 0, 1e12}, LinkSpec{"e", 0, 1e9}));
  Plan plan;
  plan.pipeline.micro_batches = 4;
  plan.pipeline.stages.resize(2);
  plan.pipeline.stages[0].devices = {0};
  plan.pipeline.stages[1].devices = {1};
  for (OpId o = 0; o < f.g.num_ops(); ++o) {
    if (f.g.op(o).phase != Phase::kForward) continue;
    plan.pipeline.stages[f.g.op(o).name == "chain.1" ? 1 : 0].ops.push_back(o);
  }
  SimOptions so;
  so.critical_path = false;
  const SimResult four = f.sim.run(plan, so);
  Plan p = plan;
  SimResult r = four;
  // The step-time objective keeps the plan as it is.
  EXPECT_FALSE(stream_whole_batches(Objective::kStepTime, f.sim, f.c, so, &p, &r));
  EXPECT_EQ(p.pipeline.micro_batches, 4);
  ASSERT_TRUE(stream_whole_batches(Objective::kThroughput, f.sim, f.c, so, &p, &r));
  EXPECT_EQ(p.pipeline.micro_batches, 1);
  EXPECT_TRUE(p.predicted.valid);
  EXPECT_DOUBLE_EQ(p.predicted.step_time, r.step_time);
  // Each device launches its forward and backward ops 3 times fewer: compute time drops by
  // 3 x ops x 100 us, and so does the busiest device's occupancy.
  const double saved = steady_state_time(four, f.c) - steady_state_time(r, f.c);
  EXPECT_GT(saved, 0);
  EXPECT_NEAR(std::remainder(saved, 3e-4), 0, 1e-9);
  // Already one micro-batch: nothing to do.
  EXPECT_FALSE(stream_whole_batches(Objective::kThroughput, f.sim, f.c, so, &p, &r));
}

}  // namespace
}  // namespace placer
