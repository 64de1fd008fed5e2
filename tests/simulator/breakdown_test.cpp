// Step breakdown (placer simulate --breakdown) on timelines computed by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim_fixtures.h"
#include "simulator/breakdown.h"
#include "simulator/simulator.h"
#include "src/util/error.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;
using testing::place;
using testing::TestGraph;

SimResult run_with_events(Simulator& sim, const Plan& p) {
  SimOptions o;
  o.record_events = true;
  return sim.run(p, o);
}

// f0 on device 0 (1 ms), its 1 MB output sent to device 1 (10 us + 1 ms), f1 there (2 ms).
TEST(Breakdown, ChainAcrossTwoDevicesByHand) {
  TestGraph b;
  const TensorId x = b.tensor("x", 1000000), y = b.tensor("y", 1000);
  b.op("f0", 1e9, {}, {x});
  b.op("f1", 2e9, {x}, {y});
  const Graph g = b.build();
  const Cluster cl = make_cluster(1, 2, link(1e-5, 1e9), link(0, 1e9));
  const CostModel cost(cl, uniform_profile(1.0));
  Simulator sim(g, cl, cost);
  const Plan p = place(g, {0, 1});
  const SimResult r = run_with_events(sim, p);
  const double tx = 1e-5 + 1e-3;
  ASSERT_NEAR(r.step_time, 1e-3 + tx + 2e-3, 1e-12);
  const std::vector<DeviceBreakdown> rows = step_breakdown(r, g, p);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].device, 0);
  EXPECT_NEAR(rows[0].forward, 1e-3, 1e-12);
  EXPECT_NEAR(rows[0].transfer, tx, 1e-12);
  EXPECT_NEAR(rows[0].idle, 2e-3, 1e-12);  // device 0 waits while device 1 computes
  EXPECT_NEAR(rows[1].idle, 1e-3, 1e-12);
  EXPECT_NEAR(rows[1].transfer, tx, 1e-12);
  EXPECT_NEAR(rows[1].forward, 2e-3, 1e-12);
  for (const DeviceBreakdown& row : rows) {
    EXPECT_NEAR(row.total(), r.step_time, 1e-12);
    EXPECT_TRUE(row.stages.empty());
    EXPECT_EQ(row.backward + row.optimizer + row.gradient_sync + row.barrier + row.host_wait, 0);
  }
  // Without events there is nothing to break down.
  EXPECT_THROW(step_breakdown(sim.run(p), g, p), ValidationError);
}

// n tiny kernels with dispatch d > kernel time: the device computes n x k and waits for
// its host for the rest (n x d - (n - 1) x k: each kernel starts when it is issued).
TEST(Breakdown, HostBoundChainWaitsForItsHost) {
  constexpr int n = 20;
  constexpr double d = 10e-6, k = 1e-6;
  TestGraph b;
  TensorId prev = kNoTensor;
  for (int i = 0; i < n; ++i) {
    const TensorId out = b.tensor("t" + std::to_string(i), 1000);
    b.op("k" + std::to_string(i), k * 1e12,
         prev == kNoTensor ? std::vector<TensorId>{} : std::vector<TensorId>{prev}, {out});
    prev = out;
  }
  const Graph g = b.build();
  const Cluster cl = make_cluster(1, 1, link(0, 1e9), link(0, 1e9));
  CostProfile prof = uniform_profile(1.0);
  prof.op(OpCategory::kMatMul).dispatch = d;
  const CostModel cost(cl, prof);
  Simulator sim(g, cl, cost);
  const Plan p = place(g, std::vector<int>(n, 0));
  const SimResult r = run_with_events(sim, p);
  ASSERT_NEAR(r.step_time, n * d + k, 1e-12);
  const std::vector<DeviceBreakdown> rows = step_breakdown(r, g, p);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NEAR(rows[0].forward, n * k, 1e-12);
  EXPECT_NEAR(rows[0].host_wait, n * d - (n - 1) * k, 1e-12);
  EXPECT_NEAR(rows[0].idle, 0, 1e-12);
  EXPECT_NEAR(rows[0].total(), r.step_time, 1e-12);
}

}  // namespace
}  // namespace placer
