// GdpTrainer: config validation, bit-identical resume, the log, evaluation.
#include <gtest/gtest.h>

#include <unistd.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/types.h>
#include <torch/utils.h>
#include <nlohmann/json.hpp>

#include "agents/gdp/gdp.h"
#include "agents/gdp/gdp_net.h"
#include "agents/gdp/gdp_train_impl.h"  // build_reference
#include "agents/classical/pipeline_dp.h"
#include "agents/staged_methods.h"
#include "simulator/simulator.h"
#include "src/io/cluster_yaml.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"

namespace placer {
namespace {

using Json = nlohmann::json;

std::string temp_dir(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("placer_gdp_train_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  return p.string();
}

TrainConfig tiny_config(const std::string& out) {
  TrainConfig c;
  c.corpus = std::string(PLACER_TEST_DATA_DIR) + "/gdp/tiny.corpus.yaml";
  c.clusters = {std::string(PLACER_SOURCE_DIR) + "/datasets/clusters/dgx1_p100.cluster.yaml"};
  c.device_counts = {2, 4};
  c.net.hidden = 16;
  c.net.sage_layers = 1;
  c.net.op_embedding = 4;
  c.net.txl_layers = 1;
  c.net.heads = 2;
  c.net.ffn = 32;
  c.net.segment = 64;
  c.net.mem_len = 64;
  c.net.max_devices = 4;
  c.ppo.samples = 4;
  c.ppo.graphs_per_update = 2;
  c.ppo.epochs = 2;
  c.ppo.baseline = "ema";
  c.updates = 4;
  c.seed = 7;
  c.output_dir = out;
  c.checkpoint_every = 2;
  c.eval_every = 2;
  c.eval_instances = 2;
  c.eval_samples = 2;
  c.eval_baselines = {"m-etf", "critical-path"};
  return c;
}

std::vector<Json> read_log(const std::string& dir) {
  std::ifstream in(dir + "/log.jsonl");
  std::vector<Json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(Json::parse(line));
  return out;
}

/// The log without wall-clock fields.
std::vector<Json> timeless(std::vector<Json> log) {
  for (Json& j : log) j.erase("seconds");
  return log;
}

size_t count_type(const std::vector<Json>& log, const std::string& type) {
  size_t n = 0;
  for (const Json& j : log) n += j.at("type") == type;
  return n;
}

/// A shipped graph (datasets/models/<name>.graph.json).
Graph shipped_graph(const std::string& name) {
  return load_graph_json(std::string(PLACER_SOURCE_DIR) + "/datasets/models/" + name +
                         ".graph.json");
}

/// The DGX-1 P100 cluster with the default cost profile, as the trainer holds it.
ClusterSlot dgx1_p100_slot() {
  ClusterSlot cs;
  cs.cluster = load_cluster_yaml(std::string(PLACER_SOURCE_DIR) +
                                 "/datasets/clusters/dgx1_p100.cluster.yaml");
  cs.cost = std::make_unique<CostModel>(cs.cluster, default_profile());
  return cs;
}

class GdpTrain : public ::testing::Test {
 protected:
  void SetUp() override { torch::set_num_threads(1); }
};

TEST_F(GdpTrain, ResumedRunIsBitIdenticalToAStraightRun) {
  const std::string a = temp_dir("straight"), b = temp_dir("resumed");
  {
    GdpTrainer t(tiny_config(a));
    EXPECT_EQ(t.num_train_instances(), 3u * 1u * 2u);
    EXPECT_EQ(t.num_val_instances(), 2u * 1u * 2u);
    int updates = 0, evals = 0;
    GdpTrainer::Callbacks cb;
    cb.on_update = [&](const TrainUpdateStats& s) {
      ++updates;
      EXPECT_EQ(s.update, updates);
      EXPECT_EQ(s.instances.size(), 2u);
      EXPECT_NE(s.instances[0], s.instances[1]);
      EXPECT_EQ(s.evaluations, 2 * 4);
      EXPECT_LT(s.mean_reward, 0);
      EXPECT_LE(s.mean_reward, s.best_reward);
      EXPECT_GT(s.best_ratio, 0);
    };
    cb.on_eval = [&](const TrainEvalStats& s) {
      ++evals;
      EXPECT_EQ(s.rows.size(), 2u);
    };
    EXPECT_EQ(t.train(cb), 4);
    EXPECT_EQ(updates, 4);
    EXPECT_EQ(evals, 2);
  }
  {
    // Crash after update 3 was logged: the checkpoint of update 2 survives.
    GdpTrainer t(tiny_config(b));
    GdpTrainer::Callbacks cb;
    cb.on_update = [](const TrainUpdateStats& s) {
      if (s.update == 3) throw std::runtime_error("simulated crash");
    };
    EXPECT_THROW(t.train(cb), std::runtime_error);
    EXPECT_EQ(count_type(read_log(b), "update"), 3u);
  }
  {
    GdpTrainer t(tiny_config(b));
    EXPECT_EQ(t.resume(), 2);
    EXPECT_EQ(t.updates_done(), 2);
    EXPECT_EQ(count_type(read_log(b), "update"), 2u);  // update 3's line was cut
    EXPECT_EQ(t.train({}), 4);
  }
  const std::vector<Json> la = read_log(a), lb = read_log(b);
  EXPECT_EQ(count_type(lb, "update"), 4u);
  EXPECT_EQ(count_type(lb, "eval"), 2u);
  EXPECT_EQ(timeless(la), timeless(lb));
  for (int u = 1; u <= 4; ++u) EXPECT_EQ(lb[size_t(u - 1) + size_t(u > 2)].at("update"), u);

  // Every tensor of the two networks is exactly equal.
  for (const char* file : {"/policy.pt", "/checkpoint.pt"}) {
    const GdpPolicy pa = GdpPolicy::load(a + file), pb = GdpPolicy::load(b + file);
    EXPECT_EQ(pa.meta().updates, 4);
    EXPECT_EQ(pb.meta().updates, 4);
    EXPECT_EQ(pa.meta().corpus_hash, pb.meta().corpus_hash);
    EXPECT_EQ(pa.meta().corpus_hash.size(), 16u);
    const auto na = pa.impl().net->named_parameters(), nb = pb.impl().net->named_parameters();
    ASSERT_EQ(na.size(), nb.size());
    for (const auto& p : na) {
      ASSERT_TRUE(nb.contains(p.key())) << p.key();
      EXPECT_TRUE(torch::equal(p.value(), nb[p.key()])) << file << " " << p.key();
    }
  }
  // Training moved the network away from its initialisation.
  const GdpPolicy init(tiny_config(a).net, 7), trained = GdpPolicy::load(a + "/policy.pt");
  bool moved = false;
  for (const auto& p : init.impl().net->named_parameters()) {
    moved |= !torch::equal(p.value(), trained.impl().net->named_parameters()[p.key()]);
  }
  EXPECT_TRUE(moved);
  EXPECT_TRUE(std::filesystem::exists(a + "/best.pt"));
  EXPECT_TRUE(std::filesystem::exists(a + "/best.pt.meta.json"));
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
}

/// Every tensor of the two policies is exactly equal.
void expect_same_network(const std::string& a, const std::string& b) {
  const GdpPolicy pa = GdpPolicy::load(a), pb = GdpPolicy::load(b);
  const auto na = pa.impl().net->named_parameters(), nb = pb.impl().net->named_parameters();
  ASSERT_EQ(na.size(), nb.size());
  for (const auto& p : na) {
    ASSERT_TRUE(nb.contains(p.key())) << p.key();
    EXPECT_TRUE(torch::equal(p.value(), nb[p.key()])) << a << " " << p.key();
  }
}

TEST_F(GdpTrain, ResumeAcrossTheImitationBoundaryIsBitIdentical) {
  // Updates 1-2 imitate, 3-4 are PPO; one run straight, one interrupted after update 1 (in
  // the imitation phase) and again after update 3 (in the PPO phase), checkpoints every
  // update.
  auto config = [](const std::string& out) {
    TrainConfig c = tiny_config(out);
    c.imitation_updates = 2;
    c.checkpoint_every = 1;
    c.eval_every = 0;
    return c;
  };
  const std::string a = temp_dir("imit_straight"), b = temp_dir("imit_resumed");
  {
    GdpTrainer t(config(a));
    std::vector<std::string> phases;
    GdpTrainer::Callbacks cb;
    cb.on_update = [&](const TrainUpdateStats& s) {
      phases.push_back(s.phase);
      if (s.phase == "imitation") {
        EXPECT_EQ(s.evaluations, 2);  // one greedy placement per instance
        EXPECT_GT(s.loss, 0);
        EXPECT_GE(s.accuracy, 0);
        EXPECT_LE(s.accuracy, 1);
        EXPECT_GT(s.best_ratio, 0);
        EXPECT_LE(s.mean_reward, s.best_reward);
      } else {
        EXPECT_EQ(s.evaluations, 2 * 4);
        EXPECT_EQ(s.accuracy, 0);
      }
    };
    EXPECT_EQ(t.train(cb), 4);
    EXPECT_EQ(phases, (std::vector<std::string>{"imitation", "imitation", "ppo", "ppo"}));
  }
  for (int64_t stop_after : {1, 3}) {
    GdpTrainer t(config(b));
    if (stop_after > 1) {
      EXPECT_EQ(t.resume(), 1);
    }
    int64_t last = 0;
    GdpTrainer::Callbacks cb;
    cb.on_update = [&](const TrainUpdateStats& s) { last = s.update; };
    cb.should_stop = [&] { return last == stop_after; };
    EXPECT_EQ(t.train(cb), stop_after);
  }
  {
    GdpTrainer t(config(b));
    EXPECT_EQ(t.resume(), 3);
    EXPECT_EQ(t.train({}), 4);
  }
  const std::vector<Json> la = read_log(a), lb = read_log(b);
  ASSERT_EQ(la.size(), 4u);
  EXPECT_EQ(timeless(la), timeless(lb));
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(la[i].at("phase"), i < 2 ? "imitation" : "ppo");
    EXPECT_EQ(la[i].contains("accuracy"), i < 2);
  }
  expect_same_network(a + "/checkpoint.pt", b + "/checkpoint.pt");
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
}

TEST_F(GdpTrain, ImitationLearnsTheReferencePlacements) {
  // 60 imitation updates over all 6 train instances of the tiny corpus (m-etf reference
  // placements with 18-81 units on 2 or 4 devices): the greedy placement comes to reproduce
  // the reference placements and to run about as fast. Measured (1 thread): accuracy 0.64
  // -> 0.93, cross-entropy 0.86 -> 0.18, greedy time / reference 1.18 -> 1.02.
  const std::string dir = temp_dir("imitation");
  TrainConfig c = tiny_config(dir);
  c.updates = 60;
  c.imitation_updates = 60;
  c.ppo.graphs_per_update = 6;
  c.ppo.lr = 0.01;
  c.checkpoint_every = 60;
  c.eval_every = 0;
  std::vector<double> accuracy, loss, ratio;
  GdpTrainer t(c);
  GdpTrainer::Callbacks cb;
  cb.on_update = [&](const TrainUpdateStats& s) {
    EXPECT_EQ(s.phase, "imitation");
    EXPECT_EQ(s.instances.size(), 6u);
    EXPECT_EQ(s.evaluations, 6);
    accuracy.push_back(s.accuracy);
    loss.push_back(s.loss);
    ratio.push_back(s.best_ratio);
  };
  EXPECT_EQ(t.train(cb), 60);
  ASSERT_EQ(accuracy.size(), 60u);
  auto last5 = [](const std::vector<double>& v) {
    double sum = 0;
    for (size_t i = v.size() - 5; i < v.size(); ++i) sum += v[i];
    return sum / 5;
  };
  std::printf("imitation: accuracy %.3f -> %.3f, cross-entropy %.3f -> %.3f, greedy / ref %.3f "
              "-> %.3f\n",
              accuracy[0], last5(accuracy), loss[0], last5(loss), ratio[0], last5(ratio));
  EXPECT_LT(accuracy[0], 0.7);
  EXPECT_GE(last5(accuracy), 0.88);
  EXPECT_LT(last5(loss), 0.35 * loss[0]);
  EXPECT_GT(ratio[0], 1.12);
  EXPECT_LT(last5(ratio), 1.07);
  std::filesystem::remove_all(dir);
}

TEST_F(GdpTrain, ResumeChecksTheCheckpoint) {
  const std::string dir = temp_dir("checks");
  {
    GdpTrainer t(tiny_config(dir));
    EXPECT_THROW(t.resume(), FileError);  // nothing there yet
  }
  {
    TrainConfig c = tiny_config(dir);
    c.updates = 1;
    c.eval_every = 0;
    GdpTrainer t(c);
    EXPECT_EQ(t.train({}), 1);
  }
  {
    TrainConfig c = tiny_config(dir);
    c.net.hidden = 32;
    GdpTrainer t(c);
    try {
      t.resume();
      FAIL() << "expected ValidationError";
    } catch (const ValidationError& e) {
      EXPECT_NE(std::string(e.what()).find("net.hidden"), std::string::npos) << e.what();
    }
  }
  {
    TrainConfig c = tiny_config(dir);
    c.seed = 8;
    GdpTrainer t(c);
    EXPECT_THROW(t.resume(), ValidationError);
  }
  std::filesystem::remove_all(dir);
}

TEST_F(GdpTrain, EvaluateComparesWithTheBaselines) {
  const std::string dir = temp_dir("eval");
  TrainConfig c = tiny_config(dir);
  c.eval_instances = 3;
  GdpTrainer t(c);
  const TrainEvalStats s = t.evaluate();
  EXPECT_EQ(s.update, 0);
  ASSERT_EQ(s.rows.size(), 3u);
  std::vector<double> ratios;
  for (const TrainEvalRow& r : s.rows) {
    EXPECT_TRUE(r.best_classical == "m-etf" || r.best_classical == "critical-path")
        << r.best_classical;
    EXPECT_GT(r.best_classical_time, 0);
    EXPECT_GT(r.reference_time, 0);
    EXPECT_GT(r.greedy_time, 0);
    EXPECT_GT(r.sampled_time, 0);
    EXPECT_LE(r.sampled_time, r.greedy_time);
  }
  // Validation order: both graphs before a graph repeats.
  EXPECT_NE(s.rows[0].instance.substr(0, s.rows[0].instance.find('@')),
            s.rows[1].instance.substr(0, s.rows[1].instance.find('@')));
  EXPECT_GT(s.geomean_vs_classical, 0);
  EXPECT_LE(s.geomean_vs_classical, s.geomean_greedy_vs_classical);
  const std::vector<Json> log = read_log(dir);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].at("type"), "eval");
  EXPECT_EQ(log[0].at("rows").size(), 3u);
  std::filesystem::remove_all(dir);
}

TEST_F(GdpTrain, ConfigErrorsNameTheKey) {
  const std::string dir = temp_dir("config");
  auto expect_error = [&](TrainConfig c, const std::string& key) {
    try {
      GdpTrainer t(std::move(c));
      ADD_FAILURE() << "expected ValidationError for " << key;
    } catch (const ValidationError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(key, 0), 0u) << e.what();
    }
  };
  TrainConfig c = tiny_config(dir);
  c.corpus.clear();
  expect_error(c, "corpus");
  c = tiny_config(dir);
  c.clusters.clear();
  expect_error(c, "clusters");
  c = tiny_config(dir);
  c.updates = 0;
  expect_error(c, "updates");
  c = tiny_config(dir);
  c.imitation_updates = 5;  // > updates (4)
  expect_error(c, "imitation_updates");
  c = tiny_config(dir);
  c.imitation_updates = -1;
  expect_error(c, "imitation_updates");
  c = tiny_config(dir);
  c.device_counts = {2, 5};  // > net.max_devices
  expect_error(c, "device_counts");
  c = tiny_config(dir);
  c.net.max_devices = 8;
  c.clusters = {std::string(PLACER_TEST_DATA_DIR) + "/two_gpus.cluster.yaml"};
  c.device_counts = {4};  // > the cluster's 2
  expect_error(c, "device_counts");
  c = tiny_config(dir);
  c.micro_batches = {1, 0};
  expect_error(c, "micro_batches");
  c = tiny_config(dir);
  c.net.hidden = 30;  // not divisible by 4 heads
  c.net.heads = 4;
  expect_error(c, "net");
  c = tiny_config(dir);
  c.ppo.samples = 0;
  expect_error(c, "ppo.samples");
  c = tiny_config(dir);
  c.ppo.baseline = "median";
  expect_error(c, "ppo.baseline");
  c = tiny_config(dir);
  c.reference_methods = {"m-etf", "no-such-method"};
  expect_error(c, "reference_methods");
  c = tiny_config(dir);
  c.eval_baselines = {"no-such-method"};
  expect_error(c, "eval_baselines");
  EXPECT_FALSE(std::filesystem::exists(dir));  // nothing written by a failed construction
}

TEST_F(GdpTrain, MicroBatchesFrameTheInstancesAndTheirReferences) {
  const std::string dir = temp_dir("frame");
  TrainConfig c = tiny_config(dir);
  EXPECT_EQ(GdpTrainer(c).num_train_instances(), 6u);  // 3 graphs x 2 device counts
  c.micro_batches = {1, 4};
  EXPECT_EQ(GdpTrainer(c).num_train_instances(), 12u);

  // A framed reference is the reference method's placement alone, run with M micro-batches.
  const Graph g = shipped_graph("transformer_small");
  const ClusterSlot cs = dgx1_p100_slot();
  c.reference_methods = {"m-etf"};
  const std::vector<int> devices = {0, 1, 2, 3};
  PlanFrame plain, framed;
  framed.micro_batches = 4;
  const Reference r1 = build_reference(g, cs, devices, plain, c);
  const Reference r4 = build_reference(g, cs, devices, framed, c);
  ASSERT_GT(r1.time, 0);
  ASSERT_EQ(r4.placement, r1.placement);  // m-etf does not search for the frame
  Simulator sim(g, cs.cluster, *cs.cost);
  Plan p;
  p.graph_name = g.name();
  p.placement = r1.placement;
  SimOptions so;
  so.critical_path = false;
  EXPECT_DOUBLE_EQ(r1.time, sim.run(p, so).step_time);
  p.pipeline.micro_batches = 4;
  EXPECT_DOUBLE_EQ(r4.time, sim.run(p, so).step_time);
  EXPECT_NE(r4.time, r1.time);
}

TEST_F(GdpTrain, StagesScoreEveryPlacementAsItsPipeline) {
  const std::string dir = temp_dir("stages");
  TrainConfig c = tiny_config(dir);
  c.stages = true;
  c.micro_batches = {1, 4};
  try {
    GdpTrainer t(c);
    ADD_FAILURE() << "stages with micro_batches [1, 4] must be refused";
  } catch (const ValidationError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("stages", 0), 0u) << e.what();
  }
  c.micro_batches = {1};
  try {
    GdpTrainer t(c);  // no shape given
    ADD_FAILURE() << "stages without a shape must be refused";
  } catch (const ValidationError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("stages", 0), 0u) << e.what();
  }

  // Every placement the trainer scores goes through the shape (rollout threads: atomic).
  std::atomic<int64_t> shaped{0};
  c.shape = [&shaped](const Problem& p, const Plan& placement) {
    EXPECT_FALSE(placement.pipeline.enabled());
    ++shaped;
    return placement_as_pipeline(p, placement);
  };
  c.updates = 2;
  c.eval_every = 2;
  c.reference_methods = {"pipeline-dp"};
  c.eval_baselines = {"pipeline-dp"};
  int64_t rollouts = 0;
  std::vector<TrainEvalRow> rows;
  GdpTrainer::Callbacks cb;
  cb.on_update = [&](const TrainUpdateStats& s) { rollouts += s.evaluations; };
  cb.on_eval = [&](const TrainEvalStats& s) { rows = s.rows; };
  GdpTrainer t(c);
  EXPECT_EQ(t.train(cb), 2);
  EXPECT_EQ(rollouts, 2 * 2 * 4);  // updates x graphs x samples
  ASSERT_EQ(rows.size(), 2u);
  // Validation: greedy + 2 samples per row, shaped too.
  EXPECT_EQ(shaped.load(), rollouts + int64_t(rows.size()) * 3);

  // The validation baseline and the reward reference are pipeline-dp's whole plan (stages,
  // replicas, micro-batches), timed as it runs.
  for (const TrainEvalRow& r : rows) {
    EXPECT_EQ(r.best_classical, "pipeline-dp");
    EXPECT_GT(r.best_classical_time, 0);
    EXPECT_LE(r.sampled_time, r.greedy_time);
  }
  const Graph g = shipped_graph("transformer_small");
  const ClusterSlot cs = dgx1_p100_slot();
  const std::vector<int> devices = {0, 1, 2, 3};
  const Reference ref = build_reference(g, cs, devices, PlanFrame{}, c);
  Simulator sim(g, cs.cluster, *cs.cost);
  const Problem problem{g, cs.cluster, *cs.cost, sim, devices};
  const Plan whole = pipeline_dp_plan(problem);
  ASSERT_TRUE(whole.pipeline.enabled());
  SimOptions so;
  so.critical_path = false;
  EXPECT_DOUBLE_EQ(ref.time, sim.run(whole, so).step_time);  // the whole plan, not a placement
  std::filesystem::remove_all(dir);
}

TEST_F(GdpTrain, TagsAndMaxOpsSelectInstances) {
  const std::string dir = temp_dir("tags");
  TrainConfig c = tiny_config(dir);
  c.tags = {"transformer"};
  c.device_counts = {2};
  EXPECT_EQ(GdpTrainer(c).num_train_instances(), 1u);
  // Every training step has more than 10 ops: no update can be made.
  c = tiny_config(dir);
  c.max_ops = 10;
  c.eval_every = 0;
  GdpTrainer t(c);
  EXPECT_THROW(t.train({}), ValidationError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace placer
