#pragma once
// The one reading discipline of placer's JSON (and YAML) readers (docs/formats.md "Limits"):
//
// - input size: at most kMaxInputBytes (1 GiB) per file; FileError
//   "<file>: <what> is larger than the 1 GiB input limit";
// - nesting: at most kMaxNestingDepth (64) levels of arrays / objects (YAML sequences /
//   maps); FormatError "<file>: line L, column C: nesting deeper than 64 levels";
// - syntax errors name the line and column: FormatError
//   "<file>: line L, column C: malformed JSON: <what the parser expected>";
// - integers are read exactly: a value outside the field's range, a fraction, or a
//   magnitude above 2^53 (the largest integer every JSON reader keeps exact) is refused,
//   never narrowed; wrong types are refused with the key path ("pipeline.parts[1]");
// - messages describe a value ("a string", "an object", "4294967300") and never print a
//   whole array or object.
//
//   const nlohmann::json root = parse_json_text(text, "ds.json");
//   JsonReader r("ds.json");
//   const int stages = r.integer(r.at(root, "pipeline", ""), "pipeline.stages", 1, 1 << 20);

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "src/util/format.h"

namespace placer {

constexpr size_t kMaxInputBytes = size_t(1) << 30;
constexpr int kMaxNestingDepth = 64;
/// The largest integer magnitude a JSON reader takes (2^53: exact in a double).
constexpr int64_t kMaxJsonInteger = int64_t(1) << 53;

/// FormatError "<file>: line L, column C: nesting deeper than 64 levels" when `text` opens
/// more than kMaxNestingDepth brackets ([ and {, outside strings) without closing them.
/// Cheap, and run before any recursive parser sees the text.
void check_nesting_depth(const std::string& text, const std::string& file);

/// FormatError "<file>: <what>: N bytes, above the 1 GiB input limit" for text longer than
/// kMaxInputBytes (for text that did not come from read_text_file).
void check_input_size(size_t bytes, const std::string& file, const std::string& what);

/// "line L, column C" of byte `offset` (0-based) of `text`.
std::string line_column(const std::string& text, size_t offset);

/// Parses JSON text under the limits above. Syntax errors: FormatError
/// "<file>: line L, column C: malformed JSON: <reason>".
nlohmann::json parse_json_text(const std::string& text, const std::string& file);

/// The FormatError message of nlohmann's parse error `e` on `text`:
/// "<file>: line L, column C: malformed JSON: <reason>" (for SAX readers).
std::string json_syntax_message(const std::string& text, const std::string& file,
                                size_t byte_position, const std::string& parser_message);

/// A number as a measurement reader takes it (CSV fields, log columns): the whole text is
/// a number (parse_double), finite, and not subnormal (magnitudes below 2.2e-308, whose
/// reciprocals overflow to inf, are no measurement). False otherwise.
bool parse_measurement(const std::string& text, double* out);

/// A short description of a JSON value for messages: numbers, booleans and short strings
/// as written; long strings cut; arrays and objects by their kind and size.
std::string describe_json(const nlohmann::json& v);

/// Typed reads out of one file's JSON tree; errors are FormatError "<file>: <path>: ..."
/// (`file` may be empty when the caller prefixes it).
class JsonReader {
 public:
  explicit JsonReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& message) const;

  /// `obj[key]`, or nullptr when absent; FormatError when `obj` is not an object.
  const nlohmann::json* find(const nlohmann::json& obj, const char* key,
                             const std::string& path) const;
  /// FormatError "<path>: expected an object, got ..." unless `v` is an object.
  const nlohmann::json& object(const nlohmann::json& v, const std::string& path) const;
  const nlohmann::json& array(const nlohmann::json& v, const std::string& path) const;
  /// An exact integer in [lo, hi] (|v| <= 2^53; 4.0 is 4, 4.5 is refused).
  int64_t integer(const nlohmann::json& v, const std::string& path, int64_t lo, int64_t hi) const;
  /// A finite number.
  double number(const nlohmann::json& v, const std::string& path) const;
  bool boolean(const nlohmann::json& v, const std::string& path) const;
  std::string string(const nlohmann::json& v, const std::string& path) const;

 private:
  std::string file_;
};

}  // namespace placer
