// Pretrained rainbow-pp (agents/rainbow/rainbow_pp_policy.h): a short seeded pretraining on generated
// arrays beats the untrained policy on held-out problems, its checkpoint reproduces the
// logged evaluation (round trip), resume continues the run, and the policy places a real
// transformer zero-shot (no training on it) with a valid plan never worse than the center.
#include "agents/rainbow/rainbow_pp_policy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <torch/utils.h>

#include "datasets/synthetic.h"
#include "env/pipeline_env.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer {
namespace {

namespace fs = std::filesystem;

class RainbowPPPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::set_num_threads(1);
    dir_ = fs::temp_directory_path() /
           ("rainbow_pp_policy_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// Two stages on up to 8 devices: one decision per episode, learnable in seconds.
RainbowPPTrainConfig small_config(const std::string& dir) {
  RainbowPPTrainConfig c;
  c.stages = 2;
  c.max_devices = 8;
  c.updates = 40;
  c.arrays_per_update = 32;
  c.episodes_per_array = 2;
  c.learn_every = 1;
  c.min_positions = 128;
  c.max_positions = 256;
  c.eval_every = 40;
  c.eval_arrays = 200;
  c.checkpoint_every = 10;
  c.rainbow.hidden = {64};
  c.rainbow.learn_start = 64;
  c.rainbow.epsilon_decay_steps = 1500;
  c.rainbow.replay_capacity = 4000;
  c.rainbow.batch_size = 32;
  c.seed = 3;
  c.output_dir = dir;
  return c;
}

double read_meta_heldout(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f).at("heldout_mean_reward").get<double>();
}

TEST_F(RainbowPPPolicy, PretrainingBeatsTheUntrainedPolicyAndRoundTrips) {
  const RainbowPPTrainConfig c = small_config(dir_.string());
  const double untrained = rainbow_pp_heldout(c, "", 200).heldout_mean_reward;
  RainbowPPTrainer trainer(c);
  std::vector<RainbowPPEvalStats> evals;
  RainbowPPTrainer::Callbacks cb;
  cb.on_eval = [&evals](const RainbowPPEvalStats& e) { evals.push_back(e); };
  EXPECT_EQ(trainer.train(cb), 40);
  ASSERT_EQ(evals.size(), 1u);
  const double trained = evals[0].heldout_mean_reward;
  std::printf("held-out mean reward: untrained %.4f, trained %.4f\n", untrained, trained);
  EXPECT_GT(trained, untrained + 0.05) << "untrained " << untrained << ", trained " << trained;
  // Round trip: the checkpoint gives back the same greedy decisions, hence the same mean.
  const std::string ck = (dir_ / "checkpoint.pt").string();
  EXPECT_DOUBLE_EQ(rainbow_pp_heldout(c, ck, 200).heldout_mean_reward, trained);
  EXPECT_DOUBLE_EQ(read_meta_heldout(ck + ".meta.json"), trained);
  for (const char* f : {"policy.pt", "policy.pt.meta.json", "best.pt", "log.jsonl"})
    EXPECT_TRUE(fs::exists(dir_ / f)) << f;
}

TEST_F(RainbowPPPolicy, ResumeContinuesToTheRaisedUpdateCount) {
  RainbowPPTrainConfig c = small_config(dir_.string());
  c.updates = 3;
  c.arrays_per_update = 4;
  c.eval_every = 0;
  {
    RainbowPPTrainer t(c);
    EXPECT_EQ(t.train({}), 3);
  }
  c.updates = 5;
  RainbowPPTrainer t(c);
  EXPECT_EQ(t.resume(), 3);
  int updates = 0;
  RainbowPPTrainer::Callbacks cb;
  cb.on_update = [&updates](const RainbowPPUpdateStats& u) {
    ++updates;
    EXPECT_EQ(u.arrays, 4);
  };
  EXPECT_EQ(t.train(cb), 5);
  EXPECT_EQ(updates, 2);
  RainbowPPTrainConfig other = c;
  other.stages = 3;
  RainbowPPTrainer bad(other);
  EXPECT_THROW(bad.resume(), FormatError);
  // Stopping at once keeps the count and leaves a checkpoint.
  c.updates = 9;
  RainbowPPTrainer s(c);
  EXPECT_EQ(s.resume(), 5);
  RainbowPPTrainer::Callbacks stop;
  stop.should_stop = [] { return true; };
  EXPECT_EQ(s.train(stop), 5);
}

TEST_F(RainbowPPPolicy, BadConfigsAndPolicies) {
  RainbowPPTrainConfig c = small_config(dir_.string());
  c.stages = 1;
  EXPECT_NE(validate_rainbow_pp_train_config(c).find("stages"), std::string::npos);
  EXPECT_THROW(RainbowPPTrainer{c}, ValidationError);
  c = small_config(dir_.string());
  c.distributions = {"poisson"};
  EXPECT_NE(validate_rainbow_pp_train_config(c), "");
  c = small_config(dir_.string());
  c.eval_graphs = {"x.graph.json"};
  EXPECT_NE(validate_rainbow_pp_train_config(c).find("eval_cluster"), std::string::npos);
  EXPECT_THROW(make_rainbow_pp_policy_placer((dir_ / "missing.pt").string()), FileError);
}

TEST_F(RainbowPPPolicy, ZeroShotInferenceOnATransformer) {
  RainbowPPTrainConfig c = small_config(dir_.string());
  c.updates = 10;
  c.eval_every = 0;
  RainbowPPTrainer trainer(c);
  trainer.train({});
  TransformerOptions t;
  t.layers = 4;
  t.d_model = 256;
  t.heads = 4;
  t.seq_len = 64;
  t.batch = 8;
  const Graph graph = expand_training_step(make_transformer(t));
  const Cluster cluster =
      testing::make_cluster(2, 2, testing::link(5e-6, 2e10), testing::link(1e-5, 1e9));
  const CostModel cost(cluster, uniform_profile(1.0));
  Simulator sim(graph, cluster, cost);
  Problem p{graph, cluster, cost, sim, {}};
  RainbowPPPolicyOptions o;
  o.samples = 4;
  auto placer = make_rainbow_pp_policy_placer((dir_ / "policy.pt").string(), o);
  EXPECT_EQ(placer->name(), "rainbow-pp");
  SearchBudget b;
  b.seed = 5;
  const Plan plan = placer->search(p, b);
  const RainbowPPInferenceInfo info = rainbow_pp_inference_info(*placer);
  EXPECT_EQ(plan.method, "rainbow-pp");
  ASSERT_EQ(plan.pipeline.stages.size(), 2u);
  EXPECT_EQ(plan.placement.size(), graph.num_ops());
  size_t ops = 0;
  for (const auto& st : plan.pipeline.stages) {
    EXPECT_FALSE(st.ops.empty());
    ops += st.ops.size();
  }
  EXPECT_GT(ops, 0u);
  ASSERT_EQ(info.pivot_cuts.size(), 1u);
  ASSERT_EQ(info.coarse_cuts.size(), 1u);
  EXPECT_GT(info.pivots, 0);
  EXPECT_LT(info.pivot_cuts[0], info.pivots);
  EXPECT_GT(info.policy_time, 0);
  EXPECT_GT(info.center_time, 0);
  // The plan is the better of the policy's and the center's: never worse than the center.
  SimOptions so;
  so.critical_path = false;
  const SimResult r = sim.run(plan, so);
  EXPECT_FALSE(r.oom);
  EXPECT_LE(r.step_time, info.center_time * (1 + 1e-9));
  // The same search again: the same plan (no training happened in between).
  const Plan again = placer->search(p, b);
  EXPECT_EQ(again.placement, plan.placement);
  // A policy of more stages than devices fails clearly.
  Problem small{graph, cluster, cost, sim, {0}};
  EXPECT_THROW(placer->search(small, b), ValidationError);
}

}  // namespace
}  // namespace placer
