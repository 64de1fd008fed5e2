// What best / auto compare plans by (agents/common/objective.h): the step time, or the
// steady-state time per step of pipelined execution.
#include <gtest/gtest.h>

#include <string>

#include "agents/portfolio/method_portfolio.h"
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

}  // namespace
}  // namespace placer
