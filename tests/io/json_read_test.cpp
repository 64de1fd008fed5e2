#include "src/io/json_read.h"

#include <gtest/gtest.h>

#include <string>

#include "src/util/error.h"

namespace placer {
namespace {

template <typename E, typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

TEST(JsonRead, LineAndColumnOfAnOffset) {
  const std::string text = "ab\ncd\n\nefg";
  EXPECT_EQ(line_column(text, 0), "line 1, column 1");
  EXPECT_EQ(line_column(text, 4), "line 2, column 2");
  EXPECT_EQ(line_column(text, 7), "line 4, column 1");
  EXPECT_EQ(line_column(text, 100), "line 4, column 4");  // past the end: its end
}

TEST(JsonRead, SyntaxErrorsNameLineAndColumnAndEchoNoInput) {
  const std::string text = "{\n  \"a\": 1,\n  \"b\": tru\n}\n";
  EXPECT_EQ(error_of<FormatError>([&] { parse_json_text(text, "x.json"); }),
            "x.json: line 3, column 11: malformed JSON: syntax error while parsing value - invalid "
            "literal");
  EXPECT_EQ(error_of<FormatError>([&] { parse_json_text("[1, 2", "x.json"); }),
            "x.json: line 1, column 6: malformed JSON: syntax error while parsing array - "
            "unexpected end of input; "
            "expected ']'");
  EXPECT_EQ(error_of<FormatError>([&] { parse_json_text("[1e999]", "x.json"); }),
            "x.json: malformed JSON: a number beyond the range of a double");
}

TEST(JsonRead, NestingIsBoundedBeforeParsing) {
  const std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_NO_THROW(parse_json_text(ok, "x.json"));
  const std::string deep = "{\"k\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
  EXPECT_EQ(error_of<FormatError>([&] { parse_json_text(deep, "x.json"); }),
            "x.json: line 1, column 70: nesting deeper than 64 levels");
  // Brackets inside strings (escaped quotes too) do not nest.
  const std::string in_string =
      "{\"k\": \"" + std::string(100, '[') + "\\\"" + std::string(100, '{') + "\"}";
  EXPECT_NO_THROW(parse_json_text(in_string, "x.json"));
}

TEST(JsonRead, IntegersAreExactAndInRange) {
  const JsonReader r("x.json");
  const nlohmann::json j = nlohmann::json::parse(
      R"({"a": 4294967300, "b": 4.0, "c": 4.5, "d": 9007199254740993, "e": -3, "f": "7", "g": 1e300})");
  EXPECT_EQ(r.integer(j["a"], "a", 0, int64_t(1) << 40), 4294967300);
  EXPECT_EQ(r.integer(j["b"], "b", 0, 10), 4);
  EXPECT_EQ(error_of<FormatError>([&] { r.integer(j["a"], "a", 0, 1000000000); }),
            "x.json: a: must be between 0 and 1000000000 (got 4294967300)");
  EXPECT_EQ(error_of<FormatError>([&] { r.integer(j["c"], "c", 0, 10); }),
            "x.json: c: expected an integer, got 4.5");
  EXPECT_EQ(error_of<FormatError>([&] { r.integer(j["d"], "d", 0, INT64_MAX); }),
            "x.json: d: 9007199254740993 is beyond 2^53, the largest integer read exactly");
  EXPECT_EQ(error_of<FormatError>([&] { r.integer(j["e"], "e", 0, 10); }),
            "x.json: e: must be between 0 and 10 (got -3)");
  EXPECT_EQ(error_of<FormatError>([&] { r.integer(j["f"], "f", 0, 10); }),
            "x.json: f: expected an integer, got the string '7'");
  EXPECT_EQ(error_of<FormatError>([&] { r.integer(j["g"], "g", 0, 10); }),
            "x.json: g: 1e+300 is beyond 2^53, the largest integer read exactly");
}

TEST(JsonRead, WrongTypesNameThePathAndDescribeTheValueShortly) {
  const JsonReader r("");
  const nlohmann::json j = nlohmann::json::parse(R"({"fp16": true, "p": [1, 2], "s": ")" +
                                                 std::string(100, 'x') + "\"}");
  EXPECT_EQ(error_of<FormatError>([&] { r.object(j["fp16"], "fp16"); }),
            "fp16: expected an object, got true");
  EXPECT_EQ(error_of<FormatError>([&] { r.object(j["p"], "p"); }),
            "p: expected an object, got an array of 2 values");
  EXPECT_EQ(error_of<FormatError>([&] { r.boolean(j["s"], "s"); }),
            "s: expected true or false, got the string '" + std::string(40, 'x') +
                "...' (100 characters)");
  EXPECT_EQ(error_of<FormatError>([&] { r.array(j, "root"); }),
            "root: expected an array, got an object of 3 keys");
}

TEST(JsonRead, QuotedTextIsCut) {
  EXPECT_EQ(quote_short("abc"), "'abc'");
  EXPECT_EQ(quote_short(std::string(40, 'y')), "'" + std::string(40, 'y') + "'");
  EXPECT_EQ(quote_short(std::string(5000, 'y')), "'" + std::string(40, 'y') + "...' (5000 characters)");
}

TEST(JsonRead, MeasurementsAreFiniteAndNormal) {
  double v = 0;
  EXPECT_TRUE(parse_measurement("2.5e-3", &v));
  EXPECT_EQ(v, 2.5e-3);
  EXPECT_TRUE(parse_measurement("0", &v));
  EXPECT_EQ(v, 0);
  for (const char* bad : {"4.9e-324", "1e-310", "inf", "nan", "1e400", "", "1.5ms"}) {
    EXPECT_FALSE(parse_measurement(bad, &v)) << bad;
  }
}

TEST(JsonRead, InputSizeIsBounded) {
  EXPECT_NO_THROW(check_input_size(kMaxInputBytes, "f", "graph file"));
  EXPECT_EQ(error_of<FileError>([] { check_input_size(kMaxInputBytes + 1, "f", "graph file"); }),
            "f: graph file: 1073741825 bytes, above the 1 GiB input limit");
}

}  // namespace
}  // namespace placer
