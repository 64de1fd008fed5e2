#include "src/io/routing_io.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "src/util/error.h"

namespace placer {
namespace {

RoutingTrace two_layer_trace() {
  RoutingTrace t;
  t.name = "tiny";
  t.family = "zipf";
  t.experts = 4;
  t.top_k = 2;
  t.tokens = {{6, 2, 1, 1}, {0, 0, 5, 5}};
  t.micro_batches = {{{3, 1, 1, 0}, {0, 0, 2, 3}}, {{3, 1, 0, 1}, {0, 0, 3, 2}}};
  t.step_index = {0, 10};
  t.steps = {{{4, 1, 0, 0}, {0, 0, 2, 2}}, {{2, 1, 1, 1}, {0, 0, 3, 3}}};
  return t;
}

std::string error_of(const std::string& text) {
  try {
    parse_routing_json(text, "r.json");
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RoutingIo, RoundTripKeepsEveryField) {
  const RoutingTrace t = two_layer_trace();
  const RoutingTrace back = parse_routing_json(routing_to_json(t), "r.json");
  EXPECT_EQ(back.name, "tiny");
  EXPECT_EQ(back.family, "zipf");
  EXPECT_EQ(back.experts, 4);
  EXPECT_EQ(back.top_k, 2);
  EXPECT_EQ(back.tokens, t.tokens);
  EXPECT_EQ(back.micro_batches, t.micro_batches);
  EXPECT_EQ(back.step_index, t.step_index);
  EXPECT_EQ(back.steps, t.steps);
  EXPECT_EQ(routing_to_json(back), routing_to_json(t));
}

TEST(RoutingIo, SharesSumToOnePerLayer) {
  const RoutingStats s = two_layer_trace().stats();
  ASSERT_EQ(s.share.size(), 2u);
  EXPECT_DOUBLE_EQ(s.share[0][0], 0.6);  // 6 of 10
  EXPECT_DOUBLE_EQ(s.share[0][3], 0.1);
  EXPECT_DOUBLE_EQ(s.share[1][2], 0.5);
  EXPECT_DOUBLE_EQ(shares_of({{0, 0}}).share[0][1], 0.5);  // no tokens: uniform
}

TEST(RoutingIo, SaveAndLoadFile) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "placer_routing_io_test.routing.json").string();
  save_routing(two_layer_trace(), path);
  EXPECT_EQ(load_routing(path).tokens, two_layer_trace().tokens);
  std::filesystem::remove(path);
}

TEST(RoutingIo, MinimalFileDefaultsTopKToOne) {
  const RoutingTrace t = parse_routing_json(
      R"({"format": "placer-routing", "version": 1, "experts": 2, "layers": [[1, 3]]})", "r.json");
  EXPECT_EQ(t.top_k, 1);
  EXPECT_EQ(t.layers(), 1);
  EXPECT_TRUE(t.steps.empty());
}

TEST(RoutingIo, ErrorsNameTheFileAndKeyPath) {
  const std::string head = R"({"format": "placer-routing", "version": 1, "experts": 2, )";
  EXPECT_NE(error_of(head + R"("layers": [[1, -1]]})").find("r.json: layers[0][1]"),
            std::string::npos);
  EXPECT_NE(error_of(head + R"("layers": [[1, 2, 3]]})")
                .find("layers[0]: expected 2 token counts (one per expert), got 3"),
            std::string::npos);
  EXPECT_NE(error_of(head + R"("layers": [[1, 2]], "extra": 1})").find("extra: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of(head + R"("layers": [[1, 2]], "micro_batches": [[[1, 2], [1, 2]]]})")
                .find("micro_batches[0]: expected 1 layers (as in \"layers\"), got 2"),
            std::string::npos);
  EXPECT_NE(error_of(head + R"("layers": [[1, 2]], "steps": [{"step": 5, "layers": [[1, 2]]},
                               {"step": 5, "layers": [[1, 2]]}]})")
                .find("steps[1].step"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format": "other", "version": 1, "experts": 2, "layers": [[1]]})")
                .find("r.json: format: expected \"placer-routing\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format": "placer-routing", "version": 1, "layers": [[1]]})")
                .find("experts: missing (required)"),
            std::string::npos);
  EXPECT_NE(error_of(head + R"("layers": [[1, 2]],)").find("r.json: line 1, column"),
            std::string::npos);
  EXPECT_NE(error_of(head + R"("top_k": 3, "layers": [[1, 2]]})").find("top_k"), std::string::npos);
}

}  // namespace
}  // namespace placer
