// The expert placers through the registry (agents/experts/): on a tiny Mixtral-shaped
// training step over 2 hosts x 4 GPUs with skewed routing, eplb's plan carries EPLB's map
// and beats round-robin's simulated step, expert-anneal never ends worse than its EPLB
// start, the map file reads back as the plan's map, and a problem without routing is
// refused naming the method; with per-micro-batch routing the objective is the mean of the
// simulated steps under each micro-batch's shares.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "agents/api/placer.h"
#include "agents/experts/expert_problem.h"
#include "datasets/hf_config.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/io/expert_map_io.h"
#include "src/io/routing_io.h"
#include "src/plan/expert_balance.h"
#include "src/util/error.h"
#include "tests/agents/one_host_cluster.h"

namespace placer {
namespace {

Graph tiny_mixtral() {
  const HfModel m = parse_hf_config(R"({"model_type": "mixtral", "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "vocab_size": 128, "num_local_experts": 8,
      "num_experts_per_tok": 2})",
                                    "tiny.json");
  HfGraphOptions o;
  o.seq_len = 64;
  o.batch = 8;
  return expand_training_step(make_hf_graph(m, o));
}

Cluster two_hosts() {
  Cluster c = testing::one_host_cluster(4, 16ull << 30, LinkSpec{"nvlink", 1e-6, 100e9});
  Cluster out;
  out.name = "two hosts";
  out.add_host("host0", c.device(0).spec, 4);
  out.add_host("host1", c.device(0).spec, 4);
  out.set_link(LinkLevel::kIntraHost, c.link(LinkLevel::kIntraHost));
  out.set_link(LinkLevel::kInterHost, LinkSpec{"ib", 5e-6, 10e9});
  return out;
}

/// Counts of 2 layers x 8 experts (shares 0.4, 0.2, 0.1, 0.1, 0.05 x 4 and the reverse).
RoutingTrace skewed_routing() {
  RoutingTrace t;
  t.experts = 8;
  t.top_k = 2;
  t.tokens = {{80, 40, 20, 20, 10, 10, 10, 10}, {10, 10, 10, 10, 20, 20, 40, 80}};
  return t;
}

struct MoeFixture {
  Graph graph = tiny_mixtral();
  Cluster cluster = two_hosts();
  CostModel cost{cluster, default_profile()};
  Simulator sim{graph, cluster, cost};
  RoutingStats routing = skewed_routing().stats();
  std::string routing_file =
      (std::filesystem::temp_directory_path() / "placer_expert_methods_test.routing.json").string();
  MoeFixture() { save_routing(skewed_routing(), routing_file); }
  ~MoeFixture() { std::filesystem::remove(routing_file); }
  Problem problem() { return Problem{graph, cluster, cost, sim, {}}; }
  double step(const Plan& plan) {
    SimOptions o;
    o.routing = &routing;
    return sim.run(plan, o).step_time;
  }
};

Plan place_with(MoeFixture& f, const std::string& method, std::vector<std::string> sets) {
  MethodSettings s;
  s.sets = std::move(sets);
  s.sets.push_back("routing=" + f.routing_file);
  SearchBudget b;
  b.max_evaluations = 40;
  return make_placer(method, s)->search(f.problem(), b);
}

TEST(ExpertMethods, EplbCarriesItsMapAndBeatsRoundRobin) {
  MoeFixture f;
  const Plan eplb = place_with(f, "eplb", {"redundant=8"});
  const Plan rr = place_with(f, "round-robin", {});
  ASSERT_EQ(eplb.expert_parallel.degree, 8);
  ASSERT_EQ(eplb.expert_parallel.layers.size(), 2u);
  const ExpertTopology topo{8, 4};
  for (int l = 0; l < 2; ++l) {
    EXPECT_EQ(eplb.expert_parallel.layers[l].replicas,
              eplb_layer(f.routing.share[l], topo, EplbOptions{8, 0}).replicas);
    EXPECT_EQ(rr.expert_parallel.layers[l].replicas, round_robin_layer(8, 8).replicas);
  }
  EXPECT_NO_THROW(eplb.validate(f.graph, f.cluster));
  // Round-robin: expert 0 (40%) alone on rank 0, 3.2 even shares; EPLB splits it over copies.
  EXPECT_LT(f.step(eplb), f.step(rr));
}

TEST(ExpertMethods, AnnealNeverEndsWorseThanEplbAndWritesTheMap) {
  MoeFixture f;
  const std::string path =
      (std::filesystem::temp_directory_path() / "placer_expert_methods_test.expert_map.json")
          .string();
  const Plan start = place_with(f, "eplb", {"redundant=8"});
  const Plan best = place_with(f, "expert-anneal", {"redundant=8", "map=" + path});
  EXPECT_LE(f.step(best), f.step(start) + 1e-12);
  const ExpertParallelConfig back = load_expert_map(path);
  ASSERT_EQ(back.layers.size(), 2u);
  EXPECT_EQ(back.degree, 8);
  EXPECT_EQ(back.layers[1].replicas, best.expert_parallel.layers[1].replicas);
  std::filesystem::remove(path);
}

TEST(ExpertMethods, RefusedWithoutRoutingOrWithSlotsThatDoNotDivide) {
  MoeFixture f;
  try {
    make_placer("eplb")->search(f.problem(), SearchBudget{});
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("eplb: needs the routing statistics"), std::string::npos);
  }
  EXPECT_THROW(place_with(f, "eplb", {"redundant=3"}), ValidationError);
  EXPECT_THROW(place_with(f, "round-robin", {"ep=3"}), ValidationError);
}

TEST(ExpertMethods, OptionsAMethodDoesNotUseAreRefusedByName) {
  MoeFixture f;
  try {
    place_with(f, "eplb", {"redundant=8", "policy=p.pt"});
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--set policy (eplb): eplb does not use it (read by expert-rl)");
  }
  EXPECT_THROW(place_with(f, "eplb", {"redundant=8", "finetune=2"}), ValidationError);
  EXPECT_THROW(place_with(f, "expert-anneal", {"redundant=8", "samples=2"}), ValidationError);
  EXPECT_THROW(place_with(f, "expert-rl", {"redundant=8", "evaluations=9"}), ValidationError);
  EXPECT_THROW(place_with(f, "round-robin", {"groups=2"}), ValidationError);
  // A key the method reads still goes through (and a bad value is named).
  EXPECT_THROW(place_with(f, "eplb", {"redundant=many"}), ValidationError);
  EXPECT_EQ(place_with(f, "expert-anneal", {"redundant=8", "evaluations=3"}).expert_parallel.degree,
            8);
}

TEST(ExpertMethods, RoutingWindowsAreTheMicroBatchesElseTheSteps) {
  RoutingTrace t = skewed_routing();
  t.micro_batches = {{{80, 40, 20, 20, 10, 10, 10, 10}, {10, 10, 10, 10, 10, 10, 10, 10}},
                     {{10, 10, 10, 10, 10, 10, 10, 10}, {10, 10, 10, 10, 20, 20, 40, 80}}};
  const std::vector<RoutingStats> w = routing_windows(t);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_DOUBLE_EQ(w[0].share[0][0], 0.4);  // 80 / 200
  EXPECT_DOUBLE_EQ(w[0].share[1][3], 0.125);
  EXPECT_DOUBLE_EQ(w[1].share[1][7], 0.4);
  RoutingTrace steps = skewed_routing();
  steps.step_index = {0};
  steps.steps = {t.micro_batches[1]};
  ASSERT_EQ(routing_windows(steps).size(), 1u);
  EXPECT_DOUBLE_EQ(routing_windows(steps)[0].share[1][6], 0.2);  // 40 / 200
  EXPECT_TRUE(routing_windows(skewed_routing()).empty());
}

TEST(ExpertMethods, MicroBatchRoutingStepIsTheMeanOverItsWindows) {
  MoeFixture f;
  RoutingTrace t = skewed_routing();
  // A skewed micro-batch and a uniform one.
  t.micro_batches = {{{80, 40, 20, 20, 10, 10, 10, 10}, {10, 10, 10, 10, 20, 20, 40, 80}},
                     {{10, 10, 10, 10, 10, 10, 10, 10}, {10, 10, 10, 10, 10, 10, 10, 10}}};
  const Problem p = f.problem();
  ExpertMethodOptions o;
  o.redundant = 8;
  ExpertProblem ep(p, o, "test", t);
  const std::vector<ExpertLayerMap> maps = ep.eplb_maps();
  const double step = ep.step(maps);
  EXPECT_EQ(ep.runs(), 2);  // one simulator run per micro-batch
  const std::vector<RoutingStats> w = routing_windows(t);
  SimOptions so;
  so.critical_path = false;
  so.routing = &w[0];
  const double first = f.sim.run(ep.plan_with(maps), so).step_time;
  so.routing = &w[1];
  const double second = f.sim.run(ep.plan_with(maps), so).step_time;
  EXPECT_DOUBLE_EQ(step, (first + second) / 2);
  EXPECT_NE(first, second);
  // Without windows: one run under the window's shares.
  ExpertProblem mean(p, o, "test", skewed_routing());
  so.routing = &f.routing;
  EXPECT_DOUBLE_EQ(mean.step(maps), f.sim.run(ep.plan_with(maps), so).step_time);
  EXPECT_EQ(mean.runs(), 1);
}

}  // namespace
}  // namespace placer
