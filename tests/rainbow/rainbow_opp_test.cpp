// The rainbow-opp / rainbow-adp placers: online Rainbow DQN over the OppEnv MDP finds the
// Megatron split of a 2-layer MLP (the brute-force optimum over every state the MDP can
// reach), is deterministic per seed, splits the batch dim of the data input for data
// parallelism, and with the paper's fixed reward picks partitioning where the simulator
// reward keeps everything replicated.
#include "agents/rainbow/rainbow_opp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <torch/utils.h>

#include "agents/api/placer.h"
#include "env/opp_env.h"
#include "env/sharding.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

using testing::link;
using testing::make_cluster;

constexpr int64_t kBatch = 64, kIn = 512, kHidden = 4096, kOut = 256;

TensorId add_tensor(GraphBuilder& b, const std::string& name, std::vector<int64_t> shape) {
  Tensor t;
  t.name = name;
  uint64_t n = 4;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  t.bytes = n;
  t.shape = std::move(shape);
  return b.add_tensor(std::move(t));
}

OpId add_op(GraphBuilder& b, const std::string& name, const std::string& type, OpCategory cat,
            double flops, uint64_t param_bytes, std::vector<TensorId> in,
            std::vector<TensorId> out) {
  Op o;
  o.name = name;
  o.type = type;
  o.category = cat;
  o.flops = flops;
  o.param_bytes = param_bytes;
  o.inputs = std::move(in);
  o.outputs = std::move(out);
  return b.add_op(std::move(o));
}

// x [64, 512] -> fc1 (W1 [512, 4096]) -> relu -> fc2 (W2 [4096, 256]) -> y [64, 256], as a
// training step. Compute dominates: one fc is 268 MFLOP (268 us on a test device).
Graph mlp() {
  GraphBuilder b("mlp");
  b.set_batch_size(kBatch);
  const TensorId x = add_tensor(b, "x", {kBatch, kIn});
  const TensorId h = add_tensor(b, "h", {kBatch, kHidden});
  const TensorId a = add_tensor(b, "a", {kBatch, kHidden});
  const TensorId y = add_tensor(b, "y", {kBatch, kOut});
  add_op(b, "fc1", "MatMul", OpCategory::kMatMul, 2.0 * kBatch * kIn * kHidden, 4 * kIn * kHidden,
         {x}, {h});
  add_op(b, "relu", "Relu", OpCategory::kElementwise, double(kBatch * kHidden), 0, {h}, {a});
  add_op(b, "fc2", "MatMul", OpCategory::kMatMul, 2.0 * kBatch * kHidden * kOut, 4 * kHidden * kOut,
         {a}, {y});
  return expand_training_step(b.build());
}

struct Instance {
  Graph graph;
  Cluster cluster;
  CostModel cost;
  Simulator sim;
  Instance(Graph g, Cluster c)
      : graph(std::move(g)),
        cluster(std::move(c)),
        cost(cluster, uniform_profile(1.0)),
        sim(graph, cluster, cost) {}
  Problem problem() { return Problem{graph, cluster, cost, sim, {}}; }
};

// Four devices, fast links: tensor parallelism pays.
Cluster fast_cluster() { return make_cluster(1, 4, link(1e-6, 1e11), link(1e-6, 1e11)); }
// Four devices behind 1 MB/s links with 1 ms latency: any collective costs far more than
// the compute it saves.
Cluster slow_cluster() { return make_cluster(1, 4, link(1e-3, 1e6), link(1e-3, 1e6)); }

class RainbowOpp : public ::testing::Test {
 protected:
  void SetUp() override { torch::set_num_threads(1); }
};

// Lowest step time over every conflict-free state the MDP reaches (depth-first over the
// action sequences, replayed from reset() since the env cannot be copied); *states = their
// number (the start included).
void enumerate(OppEnv& env, std::vector<int>* prefix, double* best, int* states) {
  env.reset();
  for (int a : *prefix) env.step(a);
  ++*states;
  *best = std::min(*best, env.step_time());
  if (env.done()) return;
  for (int a = 0; a < OppEnv::kNumActions; ++a) {
    env.reset();
    for (int p : *prefix) env.step(p);
    if (env.step(a).conflict) continue;
    prefix->push_back(a);
    enumerate(env, prefix, best, states);
    prefix->pop_back();
  }
}

// The decision vector of the Megatron split: W1 split along its hidden (output) dim, W2
// along its hidden (contraction) dim, every other dim replicated.
std::vector<int8_t> megatron(const OppEnv& env) {
  const ShardingPropagator& prop = env.propagator();
  std::vector<int8_t> d;
  for (const ShardSlot& s : env.slots()) {
    const ShardVariable& v = prop.variables()[static_cast<size_t>(s.var)];
    d.push_back(v.shape[static_cast<size_t>(s.dim)] == kHidden ? 1 : 0);
  }
  return d;
}

RainbowOppOptions opp(int episodes) {
  RainbowOppOptions o = rainbow_opp_defaults(OppEnvOptions::Task::kOperatorPartitioning);
  o.episodes = episodes;
  return o;
}

TEST_F(RainbowOpp, Defaults) {
  const RainbowOppOptions o = rainbow_opp_defaults(OppEnvOptions::Task::kOperatorPartitioning);
  EXPECT_EQ(o.env.task, OppEnvOptions::Task::kOperatorPartitioning);
  EXPECT_DOUBLE_EQ(o.agent.lr, 5e-4);
  EXPECT_DOUBLE_EQ(o.agent.gamma, 1.0);
  EXPECT_EQ(o.agent.epsilon_decay_steps, 2000);
  EXPECT_DOUBLE_EQ(o.agent.epsilon_end, 0.1);
  EXPECT_EQ(o.agent.replay_capacity, 2000u);
  EXPECT_EQ(o.agent.batch_size, 64);
  const RainbowOppOptions a = rainbow_opp_defaults(OppEnvOptions::Task::kDataParallel);
  EXPECT_EQ(a.env.task, OppEnvOptions::Task::kDataParallel);
  EXPECT_EQ(a.agent.epsilon_decay_steps, 500);
  EXPECT_EQ(make_rainbow_opp_placer(o)->name(), "rainbow-opp");
  EXPECT_EQ(make_rainbow_opp_placer(a)->name(), "rainbow-adp");
  // Registered.
  EXPECT_EQ(make_placer("rainbow-opp")->name(), "rainbow-opp");
  EXPECT_EQ(make_placer("rainbow-adp")->name(), "rainbow-adp");
}

TEST_F(RainbowOpp, FindsTheMegatronSplit) {
  Instance in(mlp(), fast_cluster());
  OppEnvOptions eo;
  eo.degree = 4;
  OppEnv env(in.graph, in.cluster, in.cost, eo);
  ASSERT_EQ(env.slots().size(), 4u);  // W1 [512, 4096], W2 [4096, 256]: two dims each
  double optimum = std::numeric_limits<double>::infinity();
  int states = 0;
  std::vector<int> prefix;
  enumerate(env, &prefix, &optimum, &states);
  const double reference = env.reference_time();
  EXPECT_LT(optimum, 0.5 * reference);  // the agent has to find it

  SearchBudget budget;
  budget.seed = 1;
  int64_t last = 0;
  budget.progress = [&](int64_t done, int64_t total, const std::string& status) {
    EXPECT_EQ(total, 40);
    EXPECT_EQ(done, last + 1);
    last = done;
    EXPECT_EQ(status.rfind("best ", 0), 0u) << status;
  };
  const RainbowOppReport r = rainbow_opp_search(in.problem(), budget, opp(40));
  EXPECT_EQ(last, 40);
  EXPECT_EQ(r.episodes, 40);
  EXPECT_EQ(r.decisions, megatron(env));
  EXPECT_DOUBLE_EQ(r.step_time, optimum);
  EXPECT_DOUBLE_EQ(r.reference_time, reference);
  EXPECT_LT(r.found_episode, 40);
  EXPECT_GT(r.simulations, 1);
  // The returned plan is the env's plan of that state: both fcs partitioned over 4 devices.
  EXPECT_EQ(r.plan.method, "rainbow-opp");
  r.plan.validate(in.graph, in.cluster);
  EXPECT_DOUBLE_EQ(in.sim.run(r.plan).step_time, optimum);
  int partitioned = 0;
  for (const OpPartition& p : r.plan.partitions) {
    const Op& op = in.graph.op(p.op);
    if (op.phase == Phase::kForward && op.type == "MatMul") {
      ++partitioned;
      EXPECT_EQ(p.devices, (std::vector<int>{0, 1, 2, 3}));
    }
  }
  EXPECT_EQ(partitioned, 2);
  // Final variable shardings: both weights split along their hidden dim.
  ASSERT_EQ(r.propagation.variables.size(), 2u);
  for (size_t v = 0; v < 2; ++v) {
    const Sharding& s = r.propagation.variables[v];
    ASSERT_EQ(s.kind, Sharding::Kind::kSplit) << v;
    EXPECT_EQ(env.propagator().variables()[v].shape[static_cast<size_t>(s.dim)], kHidden);
  }
  // Through the Placer interface: the same plan.
  budget.progress = nullptr;
  const Plan plan = make_rainbow_opp_placer(opp(40))->search(in.problem(), budget);
  EXPECT_DOUBLE_EQ(in.sim.run(plan).step_time, optimum);
}

TEST_F(RainbowOpp, SameSeedSamePlan) {
  Instance in(mlp(), fast_cluster());
  SearchBudget budget;
  budget.seed = 7;
  const RainbowOppReport a = rainbow_opp_search(in.problem(), budget, opp(12));
  const RainbowOppReport b = rainbow_opp_search(in.problem(), budget, opp(12));
  EXPECT_EQ(a.actions, b.actions);
  EXPECT_EQ(a.decisions, b.decisions);
  EXPECT_EQ(a.greedy_decisions, b.greedy_decisions);
  EXPECT_EQ(a.found_episode, b.found_episode);
  EXPECT_EQ(a.simulations, b.simulations);
  EXPECT_EQ(a.plan.placement, b.plan.placement);
  ASSERT_EQ(a.plan.partitions.size(), b.plan.partitions.size());
  for (size_t i = 0; i < a.plan.partitions.size(); ++i) {
    EXPECT_EQ(a.plan.partitions[i].op, b.plan.partitions[i].op);
    EXPECT_EQ(a.plan.partitions[i].dim, b.plan.partitions[i].dim);
  }
  EXPECT_DOUBLE_EQ(a.step_time, b.step_time);
}

// Auto data parallelism on the MLP: the only data input x [64, 512]; the batch dim is
// split (x decisions {1, 0}), every op runs on a quarter of the batch.
TEST_F(RainbowOpp, DataParallelSplitsTheBatch) {
  Instance in(mlp(), fast_cluster());
  RainbowOppOptions o = rainbow_opp_defaults(OppEnvOptions::Task::kDataParallel);
  o.episodes = 20;
  SearchBudget budget;
  budget.seed = 3;
  const RainbowOppReport r = rainbow_opp_search(in.problem(), budget, o);
  EXPECT_EQ(r.plan.method, "rainbow-adp");
  EXPECT_EQ(r.decisions, (std::vector<int8_t>{1, 0}));
  ASSERT_EQ(r.propagation.inputs.size(), 1u);
  EXPECT_EQ(r.propagation.inputs[0], Sharding::split(0, kBatch / 4));
  EXPECT_LT(r.step_time, r.reference_time);
  EXPECT_DOUBLE_EQ(in.sim.run(r.plan).step_time, r.step_time);
}

// Slow links: every split costs more than it saves. The simulator reward keeps the
// all-replicated plan; the paper's +0.4 / +0.1 reward is highest for the Megatron split
// (two partitioned dims, two replicated: 1.0 against 0.4 for all replicated), which is
// what its return picks, although it is slower. The returned plan is still chosen by step
// time.
TEST_F(RainbowOpp, PaperRewardPrefersPartitioning) {
  Instance in(mlp(), slow_cluster());
  OppEnvOptions eo;
  eo.degree = 4;
  OppEnv env(in.graph, in.cluster, in.cost, eo);
  const std::vector<int8_t> split = megatron(env);
  SearchBudget budget;
  budget.seed = 5;

  const RainbowOppReport sim = rainbow_opp_search(in.problem(), budget, opp(30));
  EXPECT_DOUBLE_EQ(sim.step_time, sim.reference_time);
  EXPECT_TRUE(sim.plan.partitions.empty());
  for (int8_t d : sim.decisions) EXPECT_NE(d, 1);
  EXPECT_LE(sim.return_step_time, sim.reference_time);

  RainbowOppOptions paper = opp(30);
  paper.env.reward = OppEnvOptions::Reward::kPaper;
  const RainbowOppReport p = rainbow_opp_search(in.problem(), budget, paper);
  EXPECT_EQ(p.return_decisions, split);
  EXPECT_NEAR(p.best_return, 1.0, 1e-9);
  EXPECT_GT(p.return_step_time, p.reference_time);
  EXPECT_DOUBLE_EQ(p.step_time, p.reference_time);
  EXPECT_TRUE(p.plan.partitions.empty());
}

TEST_F(RainbowOpp, BadInput) {
  Instance in(mlp(), fast_cluster());
  SearchBudget budget;
  for (int degree : {1, 5}) {
    RainbowOppOptions o = opp(2);
    o.env.degree = degree;
    try {
      rainbow_opp_search(in.problem(), budget, o);
      ADD_FAILURE() << "degree " << degree << " accepted";
    } catch (const ValidationError& e) {
      EXPECT_NE(std::string(e.what()).find("degree must be in [2, 4]"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(rainbow_opp_search(in.problem(), budget, opp(0)), ValidationError);
  RainbowOppOptions bad = opp(2);
  bad.agent.n_step = 0;
  EXPECT_THROW(rainbow_opp_search(in.problem(), budget, bad), ValidationError);
  // A forward-only graph is refused.
  GraphBuilder b("fwd");
  const TensorId x = add_tensor(b, "x", {8, 8});
  const TensorId y = add_tensor(b, "y", {8, 8});
  add_op(b, "fc", "MatMul", OpCategory::kMatMul, 1024, 256, {x}, {y});
  Instance fwd(b.build(), fast_cluster());
  EXPECT_THROW(rainbow_opp_search(fwd.problem(), budget, opp(2)), ValidationError);
}

// Problem devices other than 0 .. k-1: the plan uses them.
TEST_F(RainbowOpp, MapsTheProblemDevices) {
  Instance in(mlp(), make_cluster(2, 4, link(1e-6, 1e11), link(1e-6, 1e11)));
  Problem p = in.problem();
  p.devices = {4, 5, 6, 7};
  SearchBudget budget;
  budget.seed = 1;
  const RainbowOppReport r = rainbow_opp_search(p, budget, opp(40));
  r.plan.validate(in.graph, in.cluster);
  ASSERT_FALSE(r.plan.partitions.empty());
  for (int d : r.plan.placement) EXPECT_GE(d, 4);
  for (const OpPartition& part : r.plan.partitions) {
    EXPECT_EQ(part.devices, (std::vector<int>{4, 5, 6, 7}));
  }
  // The same hardware on the other host: the same step time.
  EXPECT_DOUBLE_EQ(in.sim.run(r.plan).step_time, r.step_time);
}

}  // namespace
}  // namespace placer
