// PlacementEnv and PlacetoEnv inside a frame (src/plan/plan_frame.h): step() / evaluate()
// simulate the placement with the frame's micro-batches and replicas, exactly as the framed
// plan simulates on its own; the reference stays the unframed single-device step.

#include <gtest/gtest.h>

#include "datasets/synthetic.h"
#include "env/placement_env.h"
#include "env/placeto_env.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"
#include "../agents/one_host_cluster.h"

namespace placer {
namespace {

Graph chain_step() {
  ChainOptions o;
  o.per_op_flops = {4e10, 4e10, 4e10, 4e10};
  o.batch = 8;
  return expand_training_step(make_chain(o));
}

/// The chain's last two forward ops (and their backward / optimizer ops) on device 1.
std::vector<int> two_stage_placement(const Graph& g) {
  std::vector<int> action(g.num_ops(), 0);
  for (OpId i = 0; i < g.num_ops(); ++i) {
    const Op& op = g.op(i);
    const OpId f = op.phase == Phase::kForward ? i : op.forward_op;
    action[size_t(i)] = f >= 2 ? 1 : 0;
  }
  return action;
}

TEST(PlacementEnvFrame, StepsSimulateInsideTheFrameAndTheReferenceDoesNot) {
  const Graph g = chain_step();
  const Cluster c = testing::one_host_cluster(4);
  const CostModel cost(c, uniform_profile(1.0));
  PlacementEnvOptions plain;
  plain.devices = {0, 1};
  plain.colocate = false;  // one unit per op: the action is the placement
  PlacementEnvOptions framed = plain;
  framed.frame = PlanFrame{4, 2, {}};
  PlacementEnv a(g, c, cost, plain), b(g, c, cost, framed);
  EXPECT_DOUBLE_EQ(a.reference_time(), b.reference_time());

  const std::vector<int> action = two_stage_placement(g);
  Simulator sim(g, c, cost);
  Plan plan = a.to_plan(action);
  EXPECT_DOUBLE_EQ(a.step(action).step_time, sim.run(plan).step_time);
  plan.pipeline.micro_batches = 4;
  plan.data_parallel.replicas = 2;
  const double expected = sim.run(plan).step_time;
  EXPECT_DOUBLE_EQ(b.step(action).step_time, expected);
  EXPECT_NE(expected, a.step(action).step_time);
  EXPECT_EQ(b.to_plan(action).pipeline.micro_batches, 1) << "to_plan gives the placement alone";

  PlacementEnvOptions bad = plain;
  bad.frame.micro_batches = 0;
  EXPECT_THROW(PlacementEnv(g, c, cost, bad), ValidationError);
}

TEST(PlacetoEnvFrame, EvaluationsSimulateInsideTheFrameAndTheReferenceDoesNot) {
  const Graph g = chain_step();
  const Cluster c = testing::one_host_cluster(4);
  const CostModel cost(c, uniform_profile(1.0));
  std::vector<int> group_of_op(g.num_ops());
  for (OpId i = 0; i < g.num_ops(); ++i) group_of_op[size_t(i)] = int(i);  // a node per op
  PlacetoEnvOptions plain;
  plain.devices = {0, 1};
  PlacetoEnvOptions framed = plain;
  framed.frame = PlanFrame{4, 2, {}};
  PlacetoEnv a(g, c, cost, group_of_op, plain), b(g, c, cost, group_of_op, framed);
  EXPECT_DOUBLE_EQ(a.reference_time(), b.reference_time());

  const std::vector<int> action = two_stage_placement(g);
  Simulator sim(g, c, cost);
  Plan plan;
  plan.graph_name = g.name();
  plan.placement = action;
  double plain_time = 0, framed_time = 0;
  a.evaluate(action, &plain_time);
  b.evaluate(action, &framed_time);
  EXPECT_DOUBLE_EQ(plain_time, sim.run(plan).step_time);
  plan.pipeline.micro_batches = 4;
  plan.data_parallel.replicas = 2;
  EXPECT_DOUBLE_EQ(framed_time, sim.run(plan).step_time);
  EXPECT_NE(framed_time, plain_time);

  PlacetoEnvOptions bad = plain;
  bad.frame.replicas = 0;
  EXPECT_THROW(PlacetoEnv(g, c, cost, group_of_op, bad), ValidationError);
}

}  // namespace
}  // namespace placer
