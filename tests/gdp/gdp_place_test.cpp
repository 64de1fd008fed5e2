// gdp_place (zero-shot and fine-tuned placement with a GDP policy) and the "gdp" method.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>
#include <torch/utils.h>

#include "agents/api/methods.h"
#include "agents/common/prediction.h"
#include "agents/gdp/gdp.h"
#include "agents/gdp/gdp_net.h"
#include "agents/staged_methods.h"
#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "simulator/steady_state.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

namespace placer {
namespace {

GdpNetConfig tiny_net() {
  GdpNetConfig c;
  c.hidden = 16;
  c.sage_layers = 1;
  c.op_embedding = 4;
  c.txl_layers = 1;
  c.heads = 2;
  c.ffn = 32;
  c.segment = 64;
  c.mem_len = 64;
  c.max_devices = 4;
  return c;
}

Graph tiny_step() {
  TransformerOptions o;
  o.layers = 2;
  o.d_model = 256;
  o.heads = 4;
  o.seq_len = 64;
  o.batch = 4;
  o.vocab = 8000;
  return expand_training_step(make_transformer(o));
}

struct Fixture {
  Graph graph = tiny_step();
  Cluster cluster = load_cluster_yaml(std::string(PLACER_SOURCE_DIR) +
                                      "/datasets/clusters/dgx1_p100.cluster.yaml");
  CostModel cost{cluster, default_profile()};
  Simulator sim{graph, cluster, cost};
  std::vector<int> devices = {0, 1, 2, 3};
  Problem problem() { return Problem{graph, cluster, cost, sim, devices}; }
};

/// Fine-tuning options: `samples` zero-shot samples, then `updates` PPO updates of
/// `ppo_samples` placements and `epochs` passes each.
GdpPlaceOptions finetune_options(int samples, int updates, int ppo_samples, int epochs) {
  GdpPlaceOptions o;
  o.samples = samples;
  o.finetune_updates = updates;
  o.ppo.samples = ppo_samples;
  o.ppo.epochs = epochs;
  return o;
}

/// Fine-tuning with enough block moves per update that the climb stalls (every nearby move
/// tried) and restarts from a kicked incumbent; *b gets seed 4 and 5000 evaluations.
GdpPlaceOptions restarting_options(SearchBudget* b) {
  b->seed = 4;
  b->max_evaluations = 5000;
  GdpPlaceOptions o = finetune_options(2, 3, 2, 1);
  o.finetune_refine = 3000;
  return o;
}

class GdpPlace : public ::testing::Test {
 protected:
  void SetUp() override { torch::set_num_threads(1); }
};

std::string temp_dir(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("placer_gdp_place_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

TEST_F(GdpPlace, ZeroShotPlanIsValidAndItsPredictionIsASimulation) {
  Fixture f;
  const GdpPolicy policy(tiny_net(), 3);
  GdpPlaceOptions o;
  o.samples = 8;
  SearchBudget b;
  b.seed = 5;
  const GdpPlaceResult r = gdp_place(policy, f.problem(), o, b);
  ASSERT_EQ(r.plan.placement.size(), f.graph.num_ops());
  EXPECT_NO_THROW(r.plan.validate(f.graph, f.cluster));
  EXPECT_EQ(r.plan.method, "gdp");
  for (int d : r.plan.placement) EXPECT_TRUE(d >= 0 && d < 4) << d;
  // The prediction is what a fresh simulator says about the plan.
  Simulator fresh(f.graph, f.cluster, f.cost);
  SimOptions so;
  so.critical_path = false;
  const SimResult s = fresh.run(r.plan, so);
  ASSERT_TRUE(r.plan.predicted.valid);
  EXPECT_EQ(r.plan.predicted.step_time, s.step_time);
  EXPECT_EQ(r.plan.predicted.oom, s.oom);
  EXPECT_EQ(r.best_time, s.step_time);
  // Greedy + 8 samples were simulated; the best of them is at least as good as greedy.
  EXPECT_EQ(r.evaluations, 9);
  EXPECT_LE(r.zero_shot_time, r.greedy_time);
  EXPECT_EQ(r.best_time, r.zero_shot_time);
  EXPECT_GT(r.reference_time, 0);
  EXPECT_TRUE(r.finetune_curve.empty());
}

TEST_F(GdpPlace, SameSeedSamePlan) {
  Fixture f;
  const GdpPolicy policy(tiny_net(), 3);
  GdpPlaceOptions o;
  o.samples = 6;
  SearchBudget b;
  b.seed = 9;
  const GdpPlaceResult a = gdp_place(policy, f.problem(), o, b);
  const GdpPlaceResult c = gdp_place(policy, f.problem(), o, b);
  EXPECT_EQ(a.plan.placement, c.plan.placement);
  EXPECT_EQ(a.best_time, c.best_time);
}

TEST_F(GdpPlace, NoSamplesGivesTheGreedyPlacement) {
  Fixture f;
  const GdpPolicy policy(tiny_net(), 4);
  GdpPlaceOptions o;
  o.samples = 0;
  const GdpPlaceResult r = gdp_place(policy, f.problem(), o, SearchBudget{});
  // The argmax placement computed here by hand from the network's logits.
  PlacementEnvOptions eo;
  eo.devices = f.devices;
  eo.max_devices = 4;
  PlacementEnv env(f.graph, f.cluster, f.cost, eo);
  const GraphTensors t = to_tensors(env);
  torch::NoGradGuard no_grad;
  GdpNet net = policy.impl().net;
  const std::vector<int> greedy = greedy_action(net->forward(t));
  EXPECT_EQ(r.plan.placement, env.to_plan(greedy).placement);
  EXPECT_EQ(r.evaluations, 1);
  EXPECT_EQ(r.best_time, r.greedy_time);
  EXPECT_EQ(r.greedy_time, env.step(greedy).step_time);
}

TEST_F(GdpPlace, FinetuneNeverWorseAndCurveMonotone) {
  Fixture f;
  const GdpPolicy policy(tiny_net(), 6);
  GdpPlaceOptions o = finetune_options(2, 4, 4, 2);
  SearchBudget b;
  b.seed = 2;
  int64_t progress_calls = 0;
  b.progress = [&](int64_t done, int64_t total, const std::string& status) {
    ++progress_calls;
    EXPECT_EQ(done, progress_calls);
    EXPECT_EQ(total, 4);
    EXPECT_NE(status.find("best"), std::string::npos);
  };
  const GdpPlaceResult r = gdp_place(policy, f.problem(), o, b);
  ASSERT_EQ(r.finetune_curve.size(), 4u);
  EXPECT_EQ(progress_calls, 4);
  EXPECT_EQ(r.evaluations, 1 + 2 + 4 * 4);
  EXPECT_LE(r.finetune_curve.front(), r.zero_shot_time);
  for (size_t i = 1; i < r.finetune_curve.size(); ++i) {
    EXPECT_LE(r.finetune_curve[i], r.finetune_curve[i - 1]);
  }
  EXPECT_EQ(r.best_time, r.finetune_curve.back());
  EXPECT_LE(r.best_time, r.zero_shot_time);
  // The policy itself is untouched: zero-shot again gives the same zero-shot result.
  GdpPlaceOptions z = o;
  z.finetune_updates = 0;
  EXPECT_EQ(gdp_place(policy, f.problem(), z, b).zero_shot_time, r.zero_shot_time);
}

TEST_F(GdpPlace, FinetuneStopsAtTheEvaluationBudget) {
  Fixture f;
  const GdpPolicy policy(tiny_net(), 6);
  const GdpPlaceOptions o = finetune_options(3, 10, 4, 1);
  SearchBudget b;
  b.max_evaluations = 10;  // 4 zero-shot runs, then 2 updates of 4 reach 12 >= 10
  const GdpPlaceResult r = gdp_place(policy, f.problem(), o, b);
  EXPECT_EQ(r.finetune_curve.size(), 2u);
  EXPECT_EQ(r.evaluations, 12);
}

TEST_F(GdpPlace, RepeatedPlacementsAreScoredOnce) {
  // On one device every sample is the greedy placement: 1 + 5 evaluations, 5 of them
  // repeats answered without scoring again (the shape runs once).
  Fixture f;
  f.devices = {0};
  const GdpPolicy policy(tiny_net(), 3);
  GdpPlaceOptions o;
  o.samples = 5;
  int shaped = 0;
  o.shape = [&](const Problem& p, const Plan& placement) {
    ++shaped;
    return placement_or_pipeline(p, placement);
  };
  const GdpPlaceResult r = gdp_place(policy, f.problem(), o, SearchBudget{});
  EXPECT_EQ(r.evaluations, 6);
  EXPECT_EQ(r.repeats, 5);
  EXPECT_EQ(shaped, 1);
  EXPECT_EQ(r.best_time, r.greedy_time);
}

TEST_F(GdpPlace, PolishRunsOnEachNewBestPipelineAndItsPlanWins) {
  // Every placement is shaped into a pipeline; the polish marks its plan (GPipe) and claims
  // half the time, so it is the result. It runs once per new best placement, within budget.
  Fixture f;
  const GdpPolicy policy(tiny_net(), 6);
  GdpPlaceOptions o = finetune_options(2, 4, 2, 1);
  o.shape = [](const Problem& p, const Plan& placement) {
    return placement_as_pipeline(p, placement);
  };
  std::vector<std::vector<int>> polished;
  o.polish = [&](const Problem&, const Plan& plan, double time,
                 const std::function<bool()>& spend) {
    polished.push_back(plan.placement);
    if (!spend()) return std::make_pair(plan, time);
    Plan marked = plan;
    marked.pipeline.schedule = PipelineSchedule::kGPipe;
    return std::make_pair(marked, time / 2);
  };
  SearchBudget b;
  b.seed = 2;
  const GdpPlaceResult r = gdp_place(policy, f.problem(), o, b);
  ASSERT_GE(polished.size(), 1u);
  ASSERT_LE(polished.size(), 4u);  // at most once per update
  EXPECT_EQ(r.plan.pipeline.schedule, PipelineSchedule::kGPipe);
  EXPECT_LT(r.finetune_curve.back(), r.zero_shot_time);
  // Greedy + 2 samples + one update of 2: the polish after it finds the budget spent.
  b.max_evaluations = 5;
  polished.clear();
  const GdpPlaceResult spent = gdp_place(policy, f.problem(), o, b);
  EXPECT_EQ(polished.size(), 1u);
  EXPECT_EQ(spent.evaluations, 5);
  EXPECT_EQ(spent.plan.pipeline.schedule, PipelineSchedule::k1F1B);
}

TEST_F(GdpPlace, FinetuneRestartsAreDeterministicForASeedAndEvaluationBudget) {
  // Enough block moves per update that the climb stalls (every nearby move tried) and
  // restarts from a kicked incumbent; the same seed and budget give the same search.
  Fixture f;
  const GdpPolicy policy(tiny_net(), 6);
  SearchBudget b;
  GdpPlaceOptions o = restarting_options(&b);
  const GdpPlaceResult a = gdp_place(policy, f.problem(), o, b);
  const GdpPlaceResult c = gdp_place(policy, f.problem(), o, b);
  EXPECT_EQ(a.evaluations, 5000);
  EXPECT_GT(a.repeats, 0);
  EXPECT_EQ(a.plan.placement, c.plan.placement);
  EXPECT_EQ(a.best_time, c.best_time);
  EXPECT_EQ(a.repeats, c.repeats);
  EXPECT_EQ(a.finetune_curve, c.finetune_curve);
  EXPECT_LE(a.best_time, a.zero_shot_time);
  // Whatever the score cache holds: forgetting old scores only scores repeats again, so 8
  // entries or none make the same search with fewer repeats.
  o.cache_entries = 8;
  const GdpPlaceResult bounded = gdp_place(policy, f.problem(), o, b);
  o.cache_entries = 0;
  const GdpPlaceResult none = gdp_place(policy, f.problem(), o, b);
  for (const GdpPlaceResult* r : {&bounded, &none}) {
    EXPECT_EQ(r->evaluations, a.evaluations);
    EXPECT_EQ(r->plan.placement, a.plan.placement);
    EXPECT_EQ(r->best_time, a.best_time);
    EXPECT_EQ(r->finetune_curve, a.finetune_curve);
  }
  EXPECT_LT(bounded.repeats, a.repeats);
  EXPECT_GT(bounded.repeats, 0);
  EXPECT_EQ(none.repeats, 0);
}

TEST_F(GdpPlace, DeviceBeyondThePolicyIsRejected) {
  Fixture f;
  const GdpPolicy policy(tiny_net(), 1);
  f.devices = {0, 5};
  try {
    gdp_place(policy, f.problem(), GdpPlaceOptions{}, SearchBudget{});
    FAIL() << "expected ValidationError";
  } catch (const ValidationError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("device 5"), std::string::npos) << m;
    EXPECT_NE(m.find("--devices"), std::string::npos) << m;
  }
  f.devices.clear();  // all 8 devices of the cluster
  EXPECT_THROW(gdp_place(policy, f.problem(), GdpPlaceOptions{}, SearchBudget{}), ValidationError);
}

TEST_F(GdpPlace, MissingPolicyFileIsAFileErrorNamingIt) {
  Fixture f;
  const std::string path = "/nonexistent/placer/policy.pt";
  auto p = make_gdp_placer(path, GdpPlaceOptions{});
  EXPECT_EQ(p->name(), "gdp");
  try {
    p->search(f.problem(), SearchBudget{});
    FAIL() << "expected FileError";
  } catch (const FileError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("placer train-policy"), std::string::npos) << m;
  }
}

TEST_F(GdpPlace, RegisteredMethodUsesThePolicyFromTheEnvironment) {
  Fixture f;
  const std::string dir = temp_dir("registered");
  const std::string path = dir + "/p.pt";
  const GdpPolicy policy(tiny_net(), 8);
  policy.save(path, PolicyMeta{});

  const char* old = std::getenv("PLACER_POLICY");
  const std::string saved = old ? old : "";
  ::setenv("PLACER_POLICY", path.c_str(), 1);
  EXPECT_EQ(default_policy_path(), path);
  const auto& methods = placer_methods();
  const auto it = std::find_if(methods.begin(), methods.end(),
                               [](const MethodInfo& m) { return m.name == "gdp"; });
  ASSERT_NE(it, methods.end());
  EXPECT_FALSE(it->fast);
  EXPECT_NE(it->description.find("zero-shot"), std::string::npos);

  SearchBudget b;
  b.seed = 4;
  const Plan via_registry = make_placer("gdp")->search(f.problem(), b);
  const Plan direct = gdp_place(policy, f.problem(), GdpPlaceOptions{}, b).plan;
  EXPECT_EQ(via_registry.method, "gdp");
  EXPECT_EQ(via_registry.placement, direct.placement);
  EXPECT_EQ(via_registry.predicted.step_time, direct.predicted.step_time);

  ::setenv("PLACER_POLICY", (dir + "/missing.pt").c_str(), 1);
  EXPECT_THROW(make_placer("gdp")->search(f.problem(), b), FileError);
  ::unsetenv("PLACER_POLICY");
  const std::string def = default_policy_path();
  EXPECT_EQ(def, std::string(PLACER_SOURCE_DIR) + "/models/pretrained/default.pt");
  // gdp+stages has a shipped policy of its own, trained with the staged reward; the
  // environment variable names gdp's policy only.
  EXPECT_EQ(staged_policy_path(), std::string(PLACER_SOURCE_DIR) + "/models/pretrained/stages.pt");
  if (!saved.empty()) ::setenv("PLACER_POLICY", saved.c_str(), 1);
  std::filesystem::remove_all(dir);
}

TEST_F(GdpPlace, RefineCountsItsMovesAndKeepsTheBest) {
  Fixture f;
  const GdpPolicy policy(tiny_net(), 3);
  SearchBudget b;
  b.seed = 5;
  for (const bool shaped : {false, true}) {
    GdpPlaceOptions o;
    o.samples = 5;
    if (shaped)
      o.shape = [](const Problem& p, const Plan& placement) {
        return placement_or_pipeline(p, placement);
      };
    const GdpPlaceResult plain = gdp_place(policy, f.problem(), o, b);
    o.refine = 20;
    const GdpPlaceResult refined = gdp_place(policy, f.problem(), o, b);
    // Greedy + 5 samples, then 20 moves; shaped, the as-placed chain first scores the best
    // placement as placed and the fastest single device.
    EXPECT_EQ(plain.evaluations, 6);
    EXPECT_EQ(refined.evaluations, 6 + (shaped ? 2 : 0) + 20) << shaped;
    EXPECT_LE(refined.best_time, plain.best_time);
    EXPECT_EQ(refined.zero_shot_time, refined.best_time);
    EXPECT_NO_THROW(refined.plan.validate(f.graph, f.cluster));
    Plan again = refined.plan;
    EXPECT_DOUBLE_EQ(predict(f.problem(), &again).step_time, refined.best_time);
    // Fine-tuning: each update's 8 samples, then 3 moves from the policy being tuned.
    o.finetune_updates = 2;
    o.finetune_refine = 3;
    const GdpPlaceResult tuned = gdp_place(policy, f.problem(), o, b);
    EXPECT_EQ(tuned.evaluations, refined.evaluations + 2 * (8 + 3));
    EXPECT_LE(tuned.best_time, refined.best_time);
  }
}

TEST_F(GdpPlace, ShapedSearchScoresEveryPlacementAsItsPipeline) {
  Fixture f;
  const GdpPolicy policy(tiny_net(), 3);
  GdpPlaceOptions o;
  o.samples = 5;
  std::vector<double> shaped_times;
  o.shape = [&](const Problem& p, const Plan& placement) {
    EXPECT_FALSE(placement.pipeline.enabled());  // GDP hands over a plain placement
    Plan staged = placement_as_pipeline(p, placement);
    shaped_times.push_back(staged.predicted.step_time);
    return staged;
  };
  SearchBudget b;
  b.seed = 5;
  const GdpPlaceResult r = gdp_place(policy, f.problem(), o, b);
  // Greedy + 5 samples, each shaped once; the result is the fastest shaped plan, a pipeline
  // whose stage devices pipeline-dp chose among the problem's four.
  ASSERT_EQ(shaped_times.size(), 6u);
  EXPECT_EQ(r.evaluations, 6);
  EXPECT_EQ(r.best_time, *std::min_element(shaped_times.begin(), shaped_times.end()));
  ASSERT_TRUE(r.plan.pipeline.enabled());
  EXPECT_NO_THROW(r.plan.validate(f.graph, f.cluster));
  for (const PipelineStage& st : r.plan.pipeline.stages) {
    for (int d : st.devices) EXPECT_TRUE(d >= 0 && d < 4) << d;
  }
  // A shape that fails scores its placement as out of memory; with every one failing the
  // result is the plain placement.
  GdpPlaceOptions failing = o;
  failing.shape = [](const Problem&, const Plan&) -> Plan { throw Error("no pipeline fits"); };
  const GdpPlaceResult none = gdp_place(policy, f.problem(), failing, b);
  EXPECT_FALSE(none.plan.pipeline.enabled());
  EXPECT_EQ(none.plan.placement.size(), f.graph.num_ops());

  // Scored as the better of the placement as placed and as its pipeline: the same samples
  // (zero-shot sampling does not depend on the scores), each the faster of the two.
  GdpPlaceOptions both = o;
  std::vector<double> both_times;
  both.shape = [&](const Problem& p, const Plan& placement) {
    Plan flat = placement;
    const double t_flat = predict(p, &flat).step_time;
    Plan chosen = placement_or_pipeline(p, placement);
    EXPECT_DOUBLE_EQ(chosen.predicted.step_time,
                     std::min(t_flat, placement_as_pipeline(p, placement).predicted.step_time));
    both_times.push_back(chosen.predicted.step_time);
    return chosen;
  };
  const GdpPlaceResult rb = gdp_place(policy, f.problem(), both, b);
  ASSERT_EQ(both_times.size(), 6u);
  for (size_t k = 0; k < both_times.size(); ++k) EXPECT_LE(both_times[k], shaped_times[k]);
  EXPECT_LE(rb.best_time, r.best_time);

  // The registered method is this search with placement_or_pipeline.
  const std::string dir = temp_dir("staged");
  policy.save(dir + "/p.pt", PolicyMeta{});
  const Plan via_registry =
      make_placer("gdp+stages",
                  MethodSettings{{"policy=" + dir + "/p.pt", "samples=5", "refine=0"}})
          ->search(f.problem(), b);
  EXPECT_EQ(via_registry.method, "gdp+stages");
  EXPECT_EQ(via_registry.predicted.step_time, rb.best_time);
  EXPECT_EQ(via_registry.placement, rb.plan.placement);
  // Its default block moves after the samples keep the best: never slower.
  const Plan refined =
      make_placer("gdp+stages", MethodSettings{{"policy=" + dir + "/p.pt", "samples=5"}})
          ->search(f.problem(), b);
  EXPECT_LE(refined.predicted.step_time, rb.best_time);
  // Its option errors name it, not gdp.
  try {
    make_placer("gdp+stages", MethodSettings{{"nope=1"}});
    ADD_FAILURE() << "an unknown option must be refused";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("(gdp+stages)"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST_F(GdpPlace, ShapedResultReadsTheSimulationTheShapeMade) {
  // A shape that hands back a simulation of its plan is not simulated again: under the
  // throughput objective the score is the busiest device of that simulation (made up here:
  // device 1 communicates 0.75 s, overlapped with its 0.5 s of compute on the DGX-1), and
  // under the step objective the shaped plan's own prediction.
  Fixture f;
  SimResult made;
  made.step_time = 9;
  made.compute_time = {0.25, 0.5, 0, 0, 0, 0, 0, 0};
  made.comm_time = {0.1, 0.75, 0, 0, 0, 0, 0, 0};
  int shapes = 0;
  const GdpShape shape = [&](const Problem&, const Plan& placement, std::optional<SimResult>* sim) {
    ++shapes;
    if (sim) *sim = made;
    Plan shaped = placement;
    shaped.predicted.valid = true;
    shaped.predicted.step_time = 7;
    return shaped;
  };
  Plan placement;
  placement.placement.assign(f.graph.num_ops(), 0);
  Plan shaped;
  EXPECT_DOUBLE_EQ(
      shaped_result(f.problem(), shape, placement, &shaped, Objective::kThroughput).step_time,
      0.75);
  EXPECT_DOUBLE_EQ(shaped_result(f.problem(), shape, placement, &shaped).step_time, 7);
  EXPECT_EQ(shapes, 2);
  // A two-argument shape still converts, and its plan is simulated.
  const GdpShape plain = [](const Problem&, const Plan& p) { return p; };
  const double t =
      shaped_result(f.problem(), plain, placement, &shaped, Objective::kThroughput).step_time;
  SimOptions so;
  so.critical_path = false;
  EXPECT_DOUBLE_EQ(t, steady_state_time(f.sim.run(placement, so), f.cluster));
}

TEST_F(GdpPlace, ThroughputObjectiveKeepsTheSampleThatStreamsFastest) {
  Fixture f;
  const GdpPolicy policy(tiny_net(), 3);
  auto steady = [&f](const Plan& plan) {
    SimOptions so;
    so.critical_path = false;
    return steady_state_time(f.sim.run(plan, so), f.cluster);
  };
  GdpPlaceOptions o;
  o.samples = 5;
  o.objective = Objective::kThroughput;
  std::vector<double> times;
  o.shape = [&](const Problem& p, const Plan& placement) {
    Plan chosen = placement_or_pipeline(p, placement, Objective::kThroughput);
    // Never slower to stream than the placement as placed or its pipeline as pipeline-dp
    // times it under the same objective.
    times.push_back(steady(chosen));
    EXPECT_LE(times.back(), steady(placement) * (1 + 1e-12));
    EXPECT_LE(times.back(),
              steady(placement_as_pipeline(p, placement, Objective::kThroughput)) * (1 + 1e-12));
    return chosen;
  };
  SearchBudget b;
  b.seed = 5;
  const GdpPlaceResult r = gdp_place(policy, f.problem(), o, b);
  ASSERT_EQ(times.size(), 6u);
  EXPECT_DOUBLE_EQ(steady(r.plan), *std::min_element(times.begin(), times.end()));
  // The plan reports its step time, whatever it was chosen by.
  EXPECT_DOUBLE_EQ(r.best_time, f.sim.run(r.plan).step_time);
  // gdp+stages --set objective=throughput is this search (its block moves off).
  const std::string dir = temp_dir("throughput");
  policy.save(dir + "/p.pt", PolicyMeta{});
  const Plan via_registry =
      make_placer("gdp+stages",
                  MethodSettings{{"policy=" + dir + "/p.pt", "samples=5", "refine=0",
                                  "objective=throughput"}})
          ->search(f.problem(), b);
  EXPECT_DOUBLE_EQ(steady(via_registry), steady(r.plan));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace placer
