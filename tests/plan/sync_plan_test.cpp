// The plan's synchronization section: rules, validation messages, lossy choices, and the
// YAML round trip of every field.

#include <gtest/gtest.h>

#include "src/io/plan_io.h"
#include "src/util/error.h"
#include "tests/plan/plan_test_util.h"
#include "tests/plan/sync_test_graph.h"

namespace placer {
namespace {

using sync_testing::make_sync_graph;

Plan dp_plan(const Graph& g, int replicas) {
  Plan p = Plan::single_device(g, 0);
  p.data_parallel.replicas = replicas;
  p.synchronization.enabled = true;
  return p;
}

std::string validation_message(const Plan& p, const Graph& g, const Cluster& c) {
  try {
    p.validate(g, c);
  } catch (const ValidationError& e) {
    return e.what();
  }
  return "";
}

TEST(SyncPlan, RulesMatchByNameScopeGroupThenDefault) {
  const Graph g = make_sync_graph();
  SynchronizationConfig s;
  s.default_strategy.compressor = Compressor::kFP16;
  SyncRule by_group{SyncMatch::kGroup, "head", {}};
  by_group.strategy.synchronizer = Synchronizer::kAllGather;
  SyncRule by_scope{SyncMatch::kScope, "emb*", {}};
  by_scope.strategy.synchronizer = Synchronizer::kParameterServer;
  s.rules = {by_group, by_scope};
  EXPECT_EQ(s.strategy_of(g, g.find_op("fc")).synchronizer, Synchronizer::kAllGather);
  EXPECT_EQ(s.strategy_of(g, g.find_op("embedding")).synchronizer,
            Synchronizer::kParameterServer);
  s.rules = {SyncRule{SyncMatch::kName, "fc", {}}};
  EXPECT_EQ(s.strategy_of(g, g.find_op("embedding")).compressor, Compressor::kFP16);
  EXPECT_TRUE(scope_matches("layer.*.fc", "layer.10.fc"));
  EXPECT_FALSE(scope_matches("layer.*.fc", "layer.10.act"));
  EXPECT_EQ(sync_variables(g), (std::vector<OpId>{g.find_op("embedding"), g.find_op("fc")}));
}

TEST(SyncPlan, BadStrategiesGiveNamedErrors) {
  const Graph g = make_sync_graph();
  const Cluster c = testing_plan::make_test_cluster();  // 8 devices
  Plan p = dp_plan(g, 4);
  SyncRule ps{SyncMatch::kName, "embedding", {}};
  ps.strategy.synchronizer = Synchronizer::kParameterServer;
  ps.strategy.destinations = {0, 9};
  p.synchronization.rules = {ps};
  EXPECT_EQ(validation_message(p, g, c),
            "synchronization.variables[0]: ps destination 9 is out of range (the cluster has 8 "
            "devices)");

  p = dp_plan(g, 4);
  p.synchronization.default_strategy.compressor = Compressor::kPowerSGD;
  p.synchronization.default_strategy.powersgd_rank = 0;
  EXPECT_EQ(validation_message(p, g, c), "synchronization.default: powersgd rank 0 must be >= 1");

  p = dp_plan(g, 4);
  p.synchronization.default_strategy.staleness = -1;
  EXPECT_EQ(validation_message(p, g, c),
            "synchronization.default: staleness -1 must be >= 0 (or async)");

  const Graph int_table = make_sync_graph(DType::kI32);
  p = dp_plan(int_table, 4);
  p.synchronization.default_strategy.compressor = Compressor::kOneBit;
  EXPECT_EQ(validation_message(p, int_table, c),
            "synchronization.default: compressor onebit on variable 'embedding' of non-float "
            "dtype i32");

  p = dp_plan(g, 4);
  p.synchronization.rules = {SyncRule{SyncMatch::kScope, "decoder.*", {}}};
  EXPECT_EQ(validation_message(p, g, c),
            "synchronization.variables[0]: no variable has the scope 'decoder.*'");

  p = dp_plan(g, 4);
  p.data_parallel.zero_stage = 1;
  EXPECT_NE(validation_message(p, g, c).find("need plain data parallelism"), std::string::npos);
}

TEST(SyncPlan, YamlRoundTripOfEveryField) {
  const Graph g = make_sync_graph();
  const Cluster c = testing_plan::make_test_cluster();
  Plan p = dp_plan(g, 4);
  p.synchronization.default_strategy.algorithm = SyncScheme::kHierarchical;
  SyncRule ps{SyncMatch::kName, "embedding", {}};
  ps.strategy.synchronizer = Synchronizer::kParameterServer;
  ps.strategy.destinations = {0, 4, 5};
  ps.strategy.shards = 2;
  ps.strategy.local_aggregation = false;
  ps.strategy.compressor = Compressor::kTopK;
  ps.strategy.topk_ratio = 0.05;
  ps.strategy.staleness = 2;
  SyncRule ar{SyncMatch::kGroup, "head", {}};
  ar.strategy.algorithm = SyncScheme::kTree;
  ar.strategy.compressor = Compressor::kPowerSGD;
  ar.strategy.powersgd_rank = 8;
  ar.strategy.async = true;
  p.synchronization.rules = {ps, ar};
  const std::string text = plan_to_yaml(p, g, c);
  EXPECT_NE(text.find("topk compressor on 1 variable"), std::string::npos) << text;
  EXPECT_NE(text.find("async (unbounded staleness) on 1 variable"), std::string::npos);
  EXPECT_NE(text.find("staleness 2 on 1 variable"), std::string::npos);
  const Plan back = parse_plan_yaml(text, "t.plan.yaml", g, c);
  EXPECT_TRUE(back.synchronization.enabled);
  EXPECT_EQ(back.synchronization.default_strategy, p.synchronization.default_strategy);
  ASSERT_EQ(back.synchronization.rules.size(), 2u);
  EXPECT_EQ(back.synchronization.rules[0], p.synchronization.rules[0]);
  EXPECT_EQ(back.synchronization.rules[1], p.synchronization.rules[1]);

  // Every synchronizer and compressor spelled and read back.
  for (Synchronizer s : {Synchronizer::kAllReduce, Synchronizer::kParameterServer,
                         Synchronizer::kAllGather, Synchronizer::kFactorBroadcast}) {
    for (Compressor k : {Compressor::kNone, Compressor::kFP16, Compressor::kOneBit,
                         Compressor::kTopK, Compressor::kPowerSGD}) {
      Plan q = dp_plan(g, 2);
      q.synchronization.default_strategy.synchronizer = s;
      q.synchronization.default_strategy.destinations = {7};
      q.synchronization.default_strategy.compressor = k;
      const Plan qb = parse_plan_yaml(plan_to_yaml(q, g, c), "q.plan.yaml", g, c);
      EXPECT_EQ(qb.synchronization.default_strategy, q.synchronization.default_strategy)
          << to_string(s) << " " << to_string(k);
    }
  }
}

TEST(SyncPlan, YamlErrorsNameTheField) {
  const Graph g = make_sync_graph();
  const Cluster c = testing_plan::make_test_cluster();
  const std::string head =
      "format_version: 1.1\nplacement: {default: 0}\ndata_parallel: {replicas: 2}\n";
  try {
    parse_plan_yaml(head + "synchronization:\n  default: {compressor: twobit}\n", "x.plan.yaml",
                    g, c);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("synchronization.default.compressor: unknown compressor "
                                         "'twobit'"),
              std::string::npos)
        << e.what();
  }
  try {
    parse_plan_yaml(head + "synchronization:\n  default: {staleness: -2}\n", "x.plan.yaml", g, c);
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("staleness -2 must be >= 0"), std::string::npos);
  }
}

}  // namespace
}  // namespace placer
