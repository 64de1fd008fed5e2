// No reader's message echoes a whole value: a 100,000-character value in a YAML file comes
// back as its first 40 characters and its length (quote_short, src/util/format.h).

#include <gtest/gtest.h>

#include <string>

#include "src/util/error.h"
#include "tests/fuzz/reader_registry.h"

namespace placer {
namespace {

const std::string kLong(100000, 'x');
const std::string kShown = "'" + std::string(40, 'x') + "...' (100000 characters)";

/// `read` throws an Error whose message names `field`, shows the value cut, and is short.
template <class F>
void expect_cut(F read, const std::string& field) {
  try {
    read();
    ADD_FAILURE() << field << ": no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(field), std::string::npos) << msg.substr(0, 300);
    EXPECT_NE(msg.find(kShown), std::string::npos) << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 400u) << msg.substr(0, 300);
  }
}

TEST(LongValues, YamlReadersCutThemInMessages) {
  const fuzz::ReaderContext& c = fuzz::reader_context();
  std::string cluster = fuzz::file_seed("tests/data/two_gpus.cluster.yaml").text;
  cluster.replace(cluster.find("kind: gpu"), 9, "kind: " + kLong);
  expect_cut([&] { parse_cluster_yaml(cluster, "c.yaml"); },
             "c.yaml: device_types.gpu10t.kind: unknown device kind");

  std::string plan = fuzz::file_seed("tests/data/mlp2_pipeline.plan.yaml").text;
  plan.replace(plan.find("schedule: gpipe"), 15, "schedule: " + kLong);
  expect_cut([&] { parse_plan_yaml(plan, "p.yaml", c.graph, c.cluster, nullptr); },
             "pipeline.schedule: unknown schedule");

  expect_cut([&] { parse_cost_profile("format_version: \"1.0\"\n? " + kLong + "\n: 1\n", "f.yaml"); }, "f.yaml: unknown key");
  expect_cut([&] { parse_train_config("optimizer: " + kLong + "\n", "t.yaml", {}); },
             "t.yaml: optimizer: unknown optimizer");
  expect_cut([&] { parse_train_config("stages: " + kLong + "\n", "t.yaml", {}); },
             "t.yaml: stages: expected");
  expect_cut([&] { parse_rainbow_pp_train_config("? " + kLong + "\n: 1\n", "r.yaml"); },
             "r.yaml: unknown key");
  expect_cut([&] { parse_placeto_train_config("mdp: {reward: " + kLong + "}\n", "p.yaml"); },
             "p.yaml: mdp.reward: unknown");
}

}  // namespace
}  // namespace placer
