// The micro-batch and replica outer loop: around `single` (everything on one device) it
// returns the best (replicas, micro-batches) combination a brute force over the same
// choices finds, which beats `single` alone; `M+hybrid` names it on the command line.

#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agents/api/composite_methods.h"
#include "agents/classical/hybrid_outer.h"
#include "datasets/synthetic.h"
#include "one_host_cluster.h"
#include "problem_fixture.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/plan/plan_frame.h"
#include "src/util/error.h"

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
  const SearchOutcome outcome = hybrid->search_outcome(p, SearchBudget{});
  const Plan& plan = outcome.plan;
  EXPECT_EQ(plan.method, "single+hybrid");
  const double t = sim.run(plan).step_time;
  EXPECT_DOUBLE_EQ(t, brute);
  EXPECT_LT(t, sim.run(make_placer("single")->search(p, SearchBudget{})).step_time);
  EXPECT_EQ(outcome.stats.value("inner_runs"), 3);
  // m <= 16 and <= the 32 / r samples of a replica
  EXPECT_EQ(outcome.stats.value("simulated"), 5 + 5 + 4);
}

// A placer with two candidate placements of a chain: everything on the first device, or the
// first half of the forward ops (with their backward and update ops) on the first device and
// the rest on the second. It returns the one that is faster inside Problem::frame when it
// honours the frame, else the faster one unframed, and records the frames it was asked under.
class TwoCandidates : public Placer {
 public:
  explicit TwoCandidates(bool honours) : honours_(honours) {}
  std::string name() const override { return "two"; }
  bool honours_frame() const override { return honours_; }
  Plan search(const Problem& p, const SearchBudget&) override {
    frames.emplace_back(p.frame.micro_batches, p.frame.replicas);
    const std::vector<int> devices = problem_devices(p);
    std::vector<int> forward_index(p.graph.num_ops(), 0);
    int forward = 0;
    for (OpId i = 0; i < p.graph.num_ops(); ++i) {
      if (p.graph.op(i).phase == Phase::kForward) forward_index[size_t(i)] = forward++;
    }
    Plan best;
    double best_time = std::numeric_limits<double>::infinity();
    for (int split = 0; split < (devices.size() > 1 ? 2 : 1); ++split) {
      std::vector<int> device_of_op(p.graph.num_ops());
      for (OpId i = 0; i < p.graph.num_ops(); ++i) {
        const Op& op = p.graph.op(i);
        const int k = forward_index[size_t(op.phase == Phase::kForward ? i : op.forward_op)];
        device_of_op[size_t(i)] = devices[size_t(split && 2 * k >= forward ? 1 : 0)];
      }
      Plan plan = placement_plan(p, device_of_op, name());
      Plan scored = plan;
      if (honours_) apply_frame(p.frame, &scored);
      const double t = p.simulator.run(scored).step_time;
      if (t < best_time) best_time = t, best = std::move(plan);
    }
    return best;
  }
  std::vector<std::pair<int, int>> frames;  ///< (micro-batches, replicas) per search

 private:
  bool honours_;
};

TEST(HybridOuter, AFrameHonouringPlacerPlacesForTheMicroBatchesItWillRun) {
  // 4 ops of 4 ms forward on 10 TFLOP/s, 64 MiB activations over 10 GB/s, 256 MiB of
  // parameters each: one device beats the 2-stage split unpipelined (the split adds two
  // transfers and overlaps nothing), the split pipelined with 8 micro-batches beats both, and
  // 2 data-parallel replicas lose to the all-reduce of 1 GiB of gradients.
  ChainOptions o;
  o.per_op_flops = {4e10, 4e10, 4e10, 4e10};
  o.activation_bytes = 64 << 20;
  o.param_bytes = 256 << 20;
  o.batch = 8;
  const Graph g = expand_training_step(make_chain(o));
  const Cluster c = testing::one_host_cluster(2);
  const CostModel cost(c, uniform_profile(1.0));
  Simulator sim(g, c, cost);
  const Problem p{g, c, cost, sim, {}};

  auto blind_inner = std::make_unique<TwoCandidates>(false);
  TwoCandidates* blind_seen = blind_inner.get();
  HybridOuterPlacer blind(std::move(blind_inner));
  const SearchOutcome blind_outcome = blind.search_outcome(p, SearchBudget{});
  const Plan& blind_plan = blind_outcome.plan;
  auto aware_inner = std::make_unique<TwoCandidates>(true);
  TwoCandidates* aware_seen = aware_inner.get();
  HybridOuterPlacer aware(std::move(aware_inner));
  const SearchOutcome aware_outcome = aware.search_outcome(p, SearchBudget{});
  const Plan& aware_plan = aware_outcome.plan;

  // Blind: one search per replica count, unframed, and the one-device placement wins.
  EXPECT_EQ(blind_seen->frames, (std::vector<std::pair<int, int>>{{1, 1}, {1, 2}}));
  EXPECT_EQ(blind_outcome.stats.value("replicas"), 1);
  // Aware: (R, 1) then (R, 8) for R = 1 (one device is fastest unpipelined, so the second
  // frame takes min(8, samples)) and (R, 4) for R = 2 (4 samples per replica).
  EXPECT_EQ(aware_seen->frames, (std::vector<std::pair<int, int>>{{1, 1}, {8, 1}, {1, 2}, {4, 2}}));
  EXPECT_EQ(aware_outcome.stats.value("replicas"), 1);
  EXPECT_GT(aware_outcome.stats.value("micro_batches"), 1);
  EXPECT_EQ(std::set<int>(aware_plan.placement.begin(), aware_plan.placement.end()).size(), 2u)
      << "the pipelined split, not one device";
  const double t_blind = sim.run(blind_plan).step_time;
  const double t_aware = sim.run(aware_plan).step_time;
  EXPECT_LT(t_aware, 0.8 * t_blind);
  // The split with 8 micro-batches, simulated directly, is what the aware loop returns.
  Plan split = aware_plan;
  split.pipeline.micro_batches = 8;
  EXPECT_DOUBLE_EQ(t_aware, sim.run(split).step_time);
}

TEST(PlanFrame, ATrivialFrameLeavesThePlanAndOthersSetMicroBatchesAndReplicas) {
  Plan plan;
  plan.placement = {0, 1};
  apply_frame(PlanFrame{}, &plan);
  EXPECT_EQ(plan.pipeline.micro_batches, 1);
  EXPECT_EQ(plan.data_parallel.replicas, 1);
  apply_frame(PlanFrame{4, 2, {{2, 3}, {0, 1}}}, &plan);
  EXPECT_EQ(plan.pipeline.micro_batches, 4);
  EXPECT_EQ(plan.data_parallel.replicas, 2);
  EXPECT_EQ(plan.data_parallel.replica_devices, (std::vector<std::vector<int>>{{2, 3}, {0, 1}}));
  EXPECT_EQ(plan.placement, (std::vector<int>{0, 1}));
}

// The composite `hybrid` takes its inner method as the option `inner`; "M+hybrid" is its
// alias and builds the same placer, so the two give the same plan.
TEST(Composite, HybridWithAnInnerOptionIsItsAlias) {
  ChainOptions o;
  o.per_op_flops = {4e10, 1e10, 4e10, 2e10};
  o.param_bytes = 4 << 20;
  o.batch = 32;
  testing::ProblemFixture f(expand_training_step(make_chain(o)), testing::one_host_cluster(4));
  const Problem p = f.problem();
  MethodSettings inner;
  inner.sets = {"inner=m-sct"};
  const Plan option = make_placer("hybrid", inner)->search(p, SearchBudget{});
  const Plan alias = make_placer("m-sct+hybrid")->search(p, SearchBudget{});
  EXPECT_EQ(option.method, "m-sct+hybrid");
  EXPECT_EQ(option.placement, alias.placement);
  EXPECT_EQ(option.data_parallel.replicas, alias.data_parallel.replicas);
  EXPECT_EQ(option.pipeline.micro_batches, alias.pipeline.micro_batches);
  EXPECT_DOUBLE_EQ(f.sim.run(option).step_time, f.sim.run(alias).step_time);
  // Without the option: m-etf inside, as the registered m-etf+hybrid.
  EXPECT_EQ(make_placer("hybrid")->name(), "m-etf+hybrid");
  const std::vector<OptionSpec> used = method_info("hybrid").effective_options(inner);
  ASSERT_EQ(used.size(), 1u);
  EXPECT_EQ(used[0].key, "inner");
  EXPECT_EQ(used[0].default_value, "m-sct");
}

TEST(Composite, AnUnknownInnerMethodIsANamedError) {
  MethodSettings s;
  s.sets = {"inner=nope"};
  try {
    make_placer("hybrid", s);
    FAIL() << "no error";
  } catch (const ValidationError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("--set inner (hybrid): unknown method 'nope' (known: single, ", 0), 0u)
        << what;
    EXPECT_NE(what.find(", m-sct, "), std::string::npos) << what;
  }
  ASSERT_FALSE(composite_methods().empty());
  EXPECT_EQ(composite_methods()[0].name, "hybrid");
}

}  // namespace
}  // namespace placer
