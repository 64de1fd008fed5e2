// Placeto-style calibration: recover known transfer constants from a trace the simulator
// generated with them, by Nelder-Mead over the simulator.
#include <gtest/gtest.h>

#include <cmath>

#include "simulator/calibration/trace_fit.h"
#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "simulator/trace.h"
#include "src/util/error.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;
using testing::place;
using testing::TestGraph;

TEST(NelderMead, MinimisesAQuadratic) {
  auto f = [](const std::vector<double>& x) {
    return (x[0] - 3) * (x[0] - 3) + 10 * (x[1] + 1) * (x[1] + 1) + 1;
  };
  double best = 0;
  int evals = 0;
  const std::vector<double> x = nelder_mead(f, {0, 0}, 1.0, 500, 1e-14, 7, &best, &evals);
  EXPECT_NEAR(x[0], 3, 1e-4);
  EXPECT_NEAR(x[1], -1, 1e-4);
  EXPECT_NEAR(best, 1, 1e-8);
  EXPECT_LE(evals, 500);
  // Seeded: the same seed gives the same answer.
  double best2 = 0;
  EXPECT_EQ(nelder_mead(f, {0, 0}, 1.0, 500, 1e-14, 7, &best2, nullptr), x);
}

// A chain alternating between two devices with activations of different sizes, so that
// latency and bandwidth both show in the timeline.
Graph chain() {
  TestGraph b("chain");
  TensorId prev = b.tensor("x0", 1000);
  const uint64_t sizes[] = {4000, 2'000'000, 10'000, 40'000'000, 500, 8'000'000, 100'000};
  for (int i = 0; i < 7; ++i) {
    const TensorId out = b.tensor("x" + std::to_string(i + 1), sizes[i]);
    b.op("op" + std::to_string(i), 2e8 * (i + 1), {prev}, {out});
    prev = out;
  }
  return b.build();
}

TEST(TraceFit, RecoversKnownTransferConstants) {
  const Cluster cluster = make_cluster(1, 2, link(10e-6, 10e9), link(10e-6, 10e9));
  const Graph g = chain();
  const Plan plan = place(g, {0, 1, 0, 1, 0, 1, 0});
  // The "measured" trace: the simulator with 25 us and 3 GB/s on the intra-host link.
  CostProfile truth = uniform_profile(1.0);
  truth.link(LinkLevel::kIntraHost).latency = 25e-6;
  truth.link(LinkLevel::kIntraHost).bandwidth = 3e9;
  CostModel cost(cluster, truth);
  Simulator sim(g, cluster, cost);
  SimOptions o;
  o.record_events = true;
  const SimResult r = sim.run(plan, o);
  const std::string json = chrome_trace_json(r, g, cluster);
  const std::vector<TracedOp> traced = parse_op_trace(json, "truth.json", g, cluster);
  ASSERT_EQ(traced.size(), 7u);
  EXPECT_EQ(traced[1].device, 1);

  // From the cluster's numbers (10 us, 10 GB/s) the error is large; the fit recovers them.
  const CostProfile start = uniform_profile(1.0);
  TraceFitOptions opt;
  opt.seed = 3;
  opt.max_evaluations = 600;
  const TraceFitResult fit = fit_transfer_constants(g, cluster, plan, start, traced, opt);
  ASSERT_EQ(fit.levels, std::vector<LinkLevel>{LinkLevel::kIntraHost});
  EXPECT_EQ(fit.matched, 7);
  EXPECT_GT(fit.initial_error, 0.05);
  EXPECT_LT(fit.final_error, 1e-4);
  EXPECT_NEAR(fit.profile.link(LinkLevel::kIntraHost).latency, 25e-6, 25e-6 * 0.02);
  EXPECT_NEAR(fit.profile.link(LinkLevel::kIntraHost).bandwidth, 3e9, 3e9 * 0.02);
  EXPECT_EQ(fit.profile.link(LinkLevel::kIntraHost).bandwidth_efficiency, 1.0);
  EXPECT_NEAR(trace_error(g, cluster, plan, truth, traced), 0, 1e-12);
}

TEST(TraceFit, Errors) {
  const Cluster cluster = make_cluster(1, 2, link(10e-6, 10e9), link(10e-6, 10e9));
  const Graph g = chain();
  EXPECT_THROW(parse_op_trace("{\"traceEvents\": []}", "e.json", g, cluster), FormatError);
  EXPECT_THROW(parse_op_trace("{", "e.json", g, cluster), FormatError);
  try {
    parse_op_trace("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"op1\", \"ts\": \"x\"}]}",
                   "e.json", g, cluster);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(
        std::string(e.what()).find("e.json: traceEvents[0]: event 'op1' needs numeric ts and dur"),
        std::string::npos);
  }
  // One device: nothing to fit.
  const Plan one = place(g, {0, 0, 0, 0, 0, 0, 0});
  const std::vector<TracedOp> ops = {{"op0", 0, 0, 1e-4}};
  EXPECT_THROW(fit_transfer_constants(g, cluster, one, uniform_profile(1.0), ops), ValidationError);
}

}  // namespace
}  // namespace placer
