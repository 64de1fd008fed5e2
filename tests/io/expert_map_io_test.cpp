#include "src/io/expert_map_io.h"

#include <gtest/gtest.h>

#include "src/util/error.h"

namespace placer {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_expert_map_json(text, "m.json");
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ExpertMapIo, RoundTrip) {
  ExpertParallelConfig ep;
  ep.degree = 4;
  ep.layers.push_back({{{0, 2}, {1}, {2}, {3}}});
  ep.layers.push_back({{{3}, {2}, {1}, {0, 1}}});
  const ExpertParallelConfig back = parse_expert_map_json(expert_map_to_json(ep), "m.json");
  EXPECT_EQ(back.degree, 4);
  ASSERT_EQ(back.layers.size(), 2u);
  EXPECT_EQ(back.layers[0].replicas, ep.layers[0].replicas);
  EXPECT_EQ(back.layers[1].replicas, ep.layers[1].replicas);
  EXPECT_EQ(expert_map_to_json(back), expert_map_to_json(ep));
}

TEST(ExpertMapIo, ErrorsNameTheKeyPath) {
  const std::string head = R"({"format": "placer-expert-map", "version": 1, "ep": 2, "layers": )";
  EXPECT_NE(error_of(head + "[[[0], [2]]]}")
                .find("m.json: layers[0][1][0]: must be between 0 and 1 (got 2)"),
            std::string::npos);
  EXPECT_NE(error_of(head + "[[[0], []]]}").find("layers[0][1]: an expert needs at least one rank"),
            std::string::npos);
  EXPECT_NE(
      error_of(head + "[[[0, 0], [1]]]}").find("layers[0][0][1]: rank 0 holds this expert twice"),
      std::string::npos);
  EXPECT_NE(error_of(head + "[[[0], [1]], [[0]]]}").find("layers[1]: expected 1 to 65536 experts"),
            std::string::npos);
  EXPECT_NE(error_of(head + "[], \"x\": 1}").find("x: unknown key"), std::string::npos);
}

}  // namespace
}  // namespace placer
