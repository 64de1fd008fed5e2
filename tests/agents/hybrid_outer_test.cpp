// The micro-batch and replica outer loop: around `single` (everything on one device) it
// returns the best (replicas, micro-batches) combination a brute force over the same
// choices finds, which beats `single` alone; `M+hybrid` names it on the command line.

#include <gtest/gtest.h>

#include <limits>

#include "agents/hybrid_outer.h"
#include "one_host_cluster.h"
#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"

namespace placer {
namespace {

TEST(HybridOuter, FindsTheBestReplicaAndMicroBatchCountAroundAPlacer) {
  ChainOptions o;
  o.per_op_flops = {4e10, 4e10, 4e10, 4e10, 4e10, 4e10};
  o.param_bytes = 4 << 20;
  o.batch = 32;
  const Graph g = expand_training_step(make_chain(o));
  const Cluster c = testing::one_host_cluster(4);
  const CostModel cost(c, uniform_profile(1.0));
  Simulator sim(g, c, cost);
  const Problem p{g, c, cost, sim, {}};

  double brute = std::numeric_limits<double>::infinity();
  for (int r : {1, 2, 4}) {
    const Problem sub{g, c, cost, sim, std::vector<int>{0, 1, 2, 3}};
    Problem part = sub;
    part.devices.resize(size_t(4 / r));
    const Plan base = make_placer("single")->search(part, SearchBudget{});
    for (int m : {1, 2, 4, 8, 16}) {
      if (m > 32 / r) continue;  // no micro-batch below one sample
      Plan plan = base;
      plan.data_parallel.replicas = r;
      plan.pipeline.micro_batches = m;
      const SimResult res = sim.run(plan);
      if (!res.oom) brute = std::min(brute, res.step_time);
    }
  }
  const std::unique_ptr<Placer> hybrid = make_placer("single+hybrid");
  EXPECT_EQ(hybrid->name(), "single+hybrid");
  const Plan plan = hybrid->search(p, SearchBudget{});
  EXPECT_EQ(plan.method, "single+hybrid");
  const double t = sim.run(plan).step_time;
  EXPECT_DOUBLE_EQ(t, brute);
  EXPECT_LT(t, sim.run(make_placer("single")->search(p, SearchBudget{})).step_time);
  const auto& stats = static_cast<const HybridOuterPlacer&>(*hybrid).last_stats();
  EXPECT_EQ(stats.inner_runs, 3);
  EXPECT_EQ(stats.simulated, 5 + 5 + 4);  // m <= 16 and <= the 32 / r samples of a replica
}

}  // namespace
}  // namespace placer
