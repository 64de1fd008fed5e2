// Conformance of every registered placement method (OpenSpiel style: one loop over the
// registry, so a new method is checked without a new test): on small training steps and
// clusters each method returns a plan that places every op on an allowed device and
// validates (megatron, which takes only Megatron-named transformers, refuses the mlp with an
// error naming itself); it keeps within a simulator-run budget up to one update; the same
// seed gives the same plan; an unknown --set key is a ValidationError naming the key (or,
// for a method without options, naming the method). Learned methods run with what the
// registry offers (the shipped default policy for gdp, training from scratch for the
// others) and tiny budgets; the whole suite takes well under a minute on two cores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "datasets/gpt.h"
#include "datasets/synthetic.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/plan_io.h"
#include "src/util/error.h"
#include "tests/agents/one_host_cluster.h"

namespace placer {
namespace {

using testing::one_host_cluster;

/// A graph on a cluster, with the simulator every method shares.
struct Fixture {
  std::string name;
  Graph graph;
  Cluster cluster;
  CostModel cost;
  Simulator sim;
  std::vector<int> devices;
  Fixture(std::string n, Graph g, Cluster c, std::vector<int> d = {})
      : name(std::move(n)), graph(std::move(g)), cluster(std::move(c)),
        cost(cluster, default_profile()), sim(graph, cluster, cost), devices(std::move(d)) {}
  Problem problem() { return Problem{graph, cluster, cost, sim, devices}; }
};

Graph mlp_step() {
  MlpOptions o;
  o.layers = 3;
  o.input = 512;
  o.hidden = 1024;
  o.classes = 64;
  o.batch = 32;
  return expand_training_step(make_mlp(o));
}

/// A small GPT in Megatron's op naming (what megatron needs), as a training step.
Graph gpt_step() {
  GptOptions o;
  o.layers = 2;
  o.hidden = 256;
  o.heads = 4;
  o.seq_len = 64;
  o.batch = 8;
  o.vocab = 2000;
  o.pad_vocab_multiple = 1;
  return expand_training_step(make_gpt(o));
}

/// The mlp on two devices, the GPT on four of a six-device host (devices 1 .. 4, so a
/// method that ignores Problem::devices is caught).
std::vector<std::unique_ptr<Fixture>> fixtures() {
  std::vector<std::unique_ptr<Fixture>> out;
  out.push_back(std::make_unique<Fixture>("mlp/2", mlp_step(), one_host_cluster(2)));
  out.push_back(std::make_unique<Fixture>("gpt/4of6", gpt_step(), one_host_cluster(6),
                                          std::vector<int>{1, 2, 3, 4}));
  return out;
}

/// Why `method` does not take the fixture's graph ("" = it must place it).
std::string not_for(const std::string& method, const Fixture& f) {
  if (method == "megatron" && f.name.rfind("gpt", 0) != 0) {
    return "megatron places layered transformers with Megatron op names only";
  }
  if (method == "eplb" || method == "round-robin" || method == "expert-anneal" ||
      method == "expert-rl") {
    return "the expert placers need MoE layers and routing statistics (expert_methods_test, "
           "cli place_experts)";
  }
  return "";
}

constexpr int64_t kBudget = 12;

SearchBudget budget(uint64_t seed) {
  SearchBudget b;
  b.max_evaluations = kBudget;
  b.seed = seed;
  return b;
}

/// The devices a plan uses: its placement in every data-parallel replica, its operator
/// partitions and its pipeline stages.
std::vector<int> used_devices(const Plan& p, int num_devices) {
  std::vector<int> d;
  for (int r = 0; r < std::max(p.data_parallel.replicas, 1); ++r) {
    for (int x : p.placement) d.push_back(p.replica_device(x, r, num_devices));
  }
  for (const OpPartition& q : p.partitions) d.insert(d.end(), q.devices.begin(), q.devices.end());
  for (const PipelineStage& s : p.pipeline.stages) {
    d.insert(d.end(), s.devices.begin(), s.devices.end());
  }
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  return d;
}

/// Options (through the registry's option tables) that keep the slow learned searches short
/// here: fewer Rainbow episodes (the budget counts distinct simulations, cached states are
/// free), one LibTorch thread for the seq2seq placers.
MethodSettings quick_settings(const std::string& method) {
  MethodSettings s;
  if (method == "rainbow-opp" || method == "rainbow-adp") s.sets = {"episodes=20"};
  if (method == "colocrl" || method == "hdp") s.sets = {"threads=1"};
  return s;
}

std::unique_ptr<Placer> make_quick(const std::string& method) {
  const MethodSettings s = quick_settings(method);
  return s.sets.empty() ? make_placer(method) : make_placer(method, s);
}

/// Simulator runs one update of `method` may take on `g` beyond the budget: placeto's update
/// is a batch of 8 episodes plus the final greedy one, at most one run per op each; every
/// other method's update runs at most once per op.
int64_t one_update(const std::string& method, const Graph& g) {
  return int64_t(g.num_ops()) * (method == "placeto" ? 9 : 1);
}

/// Every registered method name.
std::vector<std::string> method_names() {
  std::vector<std::string> out;
  for (const MethodInfo& m : placer_methods()) out.push_back(m.name);
  return out;
}

class PlacerConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(PlacerConformance, ValidPlanWithinBudgetAndSameSeedSamePlan) {
  const std::string method = GetParam();
  for (const auto& f : fixtures()) {
    SCOPED_TRACE(f->name);
    const Problem problem = f->problem();
    std::unique_ptr<Placer> placer = make_quick(method);
    const std::string refused = not_for(method, *f);
    if (!refused.empty()) {
      // It says so, naming itself, instead of placing it badly.
      try {
        placer->search(problem, budget(7));
        ADD_FAILURE() << method << " placed " << f->name;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(method), std::string::npos) << e.what();
      }
      continue;
    }
    EXPECT_EQ(placer->name(), method);
    SearchOutcome first;
    try {
      first = placer->search_outcome(problem, budget(7));
    } catch (const Error& e) {
      FAIL() << method << " on " << f->name << ": " << e.what();
    }
    const Plan& plan = first.plan;
    EXPECT_NO_THROW(plan.validate(f->graph, f->cluster));
    ASSERT_EQ(plan.placement.size(), f->graph.num_ops());
    const std::vector<int> allowed = problem_devices(problem);
    for (int d : used_devices(plan, f->cluster.num_devices())) {
      EXPECT_NE(std::find(allowed.begin(), allowed.end(), d), allowed.end())
          << method << " uses device " << d << ", not one of the problem's";
    }
    const SimResult r = f->sim.run(plan);
    EXPECT_TRUE(r.step_time > 0 && std::isfinite(r.step_time)) << r.step_time;

    // Budget: the methods that count their runs stay within it up to one update.
    if (first.stats.runs > 0) {
      EXPECT_LE(first.stats.runs, kBudget + one_update(method, f->graph)) << method;
      EXPECT_GE(first.stats.best_run, 0);
      EXPECT_LE(first.stats.best_run, first.stats.runs);
    }

    // Same seed, same plan: a fresh placer and the same one again.
    const std::string text = plan_to_yaml(plan, f->graph, f->cluster);
    const Plan again = make_quick(method)->search(problem, budget(7));
    EXPECT_EQ(plan_to_yaml(again, f->graph, f->cluster), text) << method << ": another plan";
    const Plan reused = placer->search(problem, budget(7));
    EXPECT_EQ(plan_to_yaml(reused, f->graph, f->cluster), text)
        << method << ": another plan from the same placer";
  }
}

TEST_P(PlacerConformance, UnknownOptionIsAClearError) {
  const std::string method = GetParam();
  const MethodInfo& info = method_info(method);
  MethodSettings settings;
  settings.sets = {"no_such_option=1"};
  try {
    make_placer(method, settings);
    FAIL() << method << " accepted an unknown option";
  } catch (const ValidationError& e) {
    const std::string what = e.what();
    if (info.make_with) {
      EXPECT_NE(what.find("no_such_option"), std::string::npos) << what;
    } else {
      EXPECT_NE(what.find("not to --method " + method), std::string::npos) << what;
    }
  }
  // A known key with a value of the wrong type is refused too, naming the key.
  for (const OptionSpec& o : info.options) {
    if (o.type != "int" && o.type != "number") continue;
    settings.sets = {o.key + "=not-a-number"};
    try {
      make_placer(method, settings);
      ADD_FAILURE() << method << " accepted " << settings.sets[0];
    } catch (const ValidationError& e) {
      EXPECT_NE(std::string(e.what()).find(o.key), std::string::npos) << e.what();
    }
  }
}

TEST(PlacerConformance, EveryMethodHasANameADescriptionAndAFactory) {
  ASSERT_GE(placer_methods().size(), 20u);
  for (const MethodInfo& m : placer_methods()) {
    EXPECT_FALSE(m.name.empty());
    EXPECT_FALSE(m.description.empty()) << m.name;
    EXPECT_EQ(m.description.find('\n'), std::string::npos) << m.name << ": one line";
    ASSERT_TRUE(bool(m.make)) << m.name;
    EXPECT_EQ(bool(m.make_with), !m.options.empty()) << m.name;
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& ch : s) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(EveryMethod, PlacerConformance, ::testing::ValuesIn(method_names()),
                         test_name);

}  // namespace
}  // namespace placer
