#include "src/io/yaml_util.h"

#include <gtest/gtest.h>

#include <string>

#include "src/util/error.h"

namespace placer {
namespace {

using Json = nlohmann::ordered_json;

template <typename E, typename F>
void expect_error(F f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one containing: " << part;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(YamlUtil, EmitQuotesLookalikesAndUsesFlowForShortThings) {
  Json j;
  j["version"] = "1.0";  // a string that looks like a number stays a string
  j["flag"] = "true";
  j["dash"] = "-";
  j["n"] = 3;
  j["x"] = 0.1;
  j["list"] = Json::array({1, "a b", "-"});
  j["small"] = Json{{"a", 1}, {"b", "2 GB/s"}};
  j["nested"] = Json{{"inner", Json{{"k", "v"}}}};
  const std::string text = emit_yaml(j, "line one\nline two");
  EXPECT_EQ(text,
            "# line one\n# line two\n"
            "version: \"1.0\"\n"
            "flag: \"true\"\n"
            "dash: \"-\"\n"
            "n: 3\n"
            "x: 0.1\n"
            "list: [1, a b, \"-\"]\n"
            "small: {a: 1, b: 2 GB/s}\n"
            "nested:\n  inner: {k: v}\n");
  const YAML::Node back = parse_yaml_text(text, "t.yaml");
  EXPECT_EQ(back["version"].Scalar(), "1.0");
  EXPECT_EQ(back["list"][2].Scalar(), "-");
  EXPECT_EQ(back["nested"]["inner"]["k"].Scalar(), "v");
}

TEST(YamlUtil, JsonBecomesTheSameTree) {
  const YAML::Node n = parse_json_as_yaml(
      R"({"a": 1, "b": [true, null, 2.5, "s"], "c": {"d": 18446744073709551615}})", "t.json");
  EXPECT_EQ(n["a"].Scalar(), "1");
  EXPECT_EQ(n["b"][0].Scalar(), "true");
  EXPECT_TRUE(n["b"][1].IsNull());
  EXPECT_EQ(n["b"][2].Scalar(), "2.5");
  EXPECT_EQ(n["c"]["d"].Scalar(), "18446744073709551615");
  expect_error<FormatError>(
      [] { parse_json_as_yaml("[1, 2", "t.json"); },
      "t.json: line 1, column 6: malformed JSON: syntax error while parsing array");
}

TEST(YamlUtil, ReaderMessages) {
  YamlReader r("f.yaml");
  const YAML::Node n = parse_yaml_text("a: 1\nb: x\nc: [1]\nbandwith: 2\n", "f.yaml");
  expect_error<FormatError>(
      [&] {
        r.check_keys(n, "links", {"a", "b", "c", "bandwidth"});
      },
      "f.yaml: links: unknown key 'bandwith' (did you mean 'bandwidth'?)");
  expect_error<FormatError>([&] { r.to_int(n["b"], "b", 0, 5); },
                            "f.yaml: b: expected an integer, got 'x'");
  expect_error<FormatError>([&] { r.to_int(n["a"], "a", 2, 5); },
                            "f.yaml: a: must be between 2 and 5 (got 1)");
  expect_error<FormatError>([&] { r.scalar(n["c"], "c"); },
                            "f.yaml: c: expected a single value, found a list");
  expect_error<FormatError>([&] { r.required(n, "zz", "top"); },
                            "f.yaml: top: missing required key 'zz'");
  EXPECT_EQ(r.to_int(n["a"], "a", 0, 5), 1);
}

TEST(YamlUtil, BoolsTakeTheOptionSpellings) {
  const YamlReader r("f.yaml");
  const YAML::Node n =
      parse_yaml_text("a: 1\nb: Yes\nc: ON\nd: 0\ne: no\nf: False\ng: maybe\n", "f.yaml");
  for (const char* k : {"a", "b", "c"}) EXPECT_TRUE(r.to_bool(n[k], k)) << k;
  for (const char* k : {"d", "e", "f"}) EXPECT_FALSE(r.to_bool(n[k], k)) << k;
  expect_error<FormatError>([&] { r.to_bool(n["g"], "g"); },
                            "f.yaml: g: expected true/false, yes/no, on/off or 1/0, got 'maybe'");
}

TEST(YamlUtil, MissingKeysOfConstMapsNameTheField) {
  // A missing key of a const map is an invalid node: yaml-cpp throws InvalidNode from
  // IsMap() / Scalar() on it. The reader checks name the field instead.
  const YAML::Node root = parse_yaml_text("a: {b: 1}\n", "f.yaml");
  const YamlReader r("f.yaml");
  expect_error<FormatError>([&] { r.expect_map(root["nope"], "nope"); },
                            "f.yaml: nope: expected a mapping (key: value lines), found nothing");
  expect_error<FormatError>([&] { r.expect_sequence(root["nope"], "nope"); },
                            "f.yaml: nope: expected a list, found nothing");
  expect_error<FormatError>([&] { r.scalar(root["nope"], "nope"); },
                            "f.yaml: nope: expected a single value, found nothing");
  expect_error<FormatError>([&] { r.to_double(root["a"]["c"], "a.c"); },
                            "f.yaml: a.c: expected a single value, found nothing");
}

TEST(YamlUtil, NumbersAreFinite) {
  const YamlReader r("f.yaml");
  for (const char* text : {"nan", ".nan", "inf", "-inf", "1e999"}) {
    const YAML::Node n = parse_yaml_text(std::string("x: ") + text + "\n", "f.yaml");
    expect_error<FormatError>([&] { r.to_double(n["x"], "x"); }, "f.yaml: x: expected a");
  }
}

TEST(YamlUtil, EscapingYamlExceptionsNameTheFile) {
  const YAML::Node root = parse_yaml_text("a: 1\n", "f.yaml");
  expect_error<FormatError>(
      [&] { with_yaml_errors("f.yaml", [&] { return root["missing"].as<int>(); }); },
      "f.yaml: unexpected YAML structure (invalid node; first invalid key: \"missing\")");
}

TEST(YamlUtil, FormatVersionPolicy) {
  YamlReader same("f.yaml");
  same.check_format_version(parse_yaml_text("format_version: \"1.0\"\nzz: 1\n", "f"), 1, 0);
  expect_error<FormatError>(
      [&] { same.check_keys(parse_yaml_text("zz: 1\n", "f"), "", {"format_version"}); },
      "unknown key 'zz'");
  YamlReader newer("f.yaml");
  newer.check_format_version(parse_yaml_text("format_version: 1.3\n", "f"), 1, 0);
  EXPECT_NO_THROW(newer.check_keys(parse_yaml_text("zz: 1\n", "f"), "", {"format_version"}));
  YamlReader r("f.yaml");
  expect_error<FormatError>(
      [&] { r.check_format_version(parse_yaml_text("format_version: 0.9\n", "f"), 1, 0); },
      "f.yaml: unsupported format_version '0.9' (this build reads 1.x)");
  expect_error<FormatError>(
      [&] { r.check_format_version(parse_yaml_text("format_version: 1.x\n", "f"), 1, 0); },
      "f.yaml: format_version: cannot read '1.x' as <major>.<minor>");
}

TEST(YamlUtil, NestingIsBounded) {
  // Flow style: refused by the bracket scan before yaml-cpp parses it.
  const std::string flow = "a: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  expect_error<FormatError>([&] { parse_yaml_text(flow, "f.yaml"); },
                            "f.yaml: line 1, column 68: nesting deeper than 64 levels");
  // Block style (indentation): refused on the parsed tree.
  std::string block;
  for (int i = 0; i < 70; ++i) block += std::string(size_t(i), ' ') + "k:\n";
  expect_error<FormatError>([&] { parse_yaml_text(block, "f.yaml"); },
                            "f.yaml: line 65, column 65: nesting deeper than 64 levels");
  std::string ok;
  for (int i = 0; i < 60; ++i) ok += std::string(size_t(i), ' ') + "k:\n";
  EXPECT_NO_THROW(parse_yaml_text(ok, "f.yaml"));
}

TEST(YamlUtil, AliasesCannotExpandWithoutBound) {
  // Ten levels of ten aliases each: 10^10 values once expanded, from a few hundred bytes.
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 10; ++i) {
    const std::string p = "*a" + std::to_string(i - 1);
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + p;
    for (int k = 1; k < 10; ++k) text += ", " + p;
    text += "]\n";
  }
  expect_error<FormatError>([&] { parse_yaml_text(text, "f.yaml"); },
                            "f.yaml: more than 16777216 values (aliases expanded)");
}

TEST(YamlUtil, Files) {
  expect_error<FileError>([] { read_text_file("/nonexistent/dir/x.yaml", "thing"); },
                          "/nonexistent/dir/x.yaml: cannot open thing (No such file or directory)");
  expect_error<FileError>([] { read_text_file("/", "thing"); },
                          "/: cannot open thing (it is a directory)");
  expect_error<FileError>([] { write_text_file("/nonexistent/dir/x.yaml", "a"); },
                          "/nonexistent/dir/x.yaml: cannot write file");
}

}  // namespace
}  // namespace placer
