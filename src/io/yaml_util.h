#pragma once
// Shared helpers for the YAML (and YAML-shaped JSON) file readers and writers.
//
// Readers walk a YAML::Node tree through a YamlReader, which names the file and the field
// path ("links.inter_host.bandwidth", "hosts[2].repeat") in every error it throws.
// Writers build an nlohmann::ordered_json tree and print it either as JSON or, through
// emit_yaml, as block YAML with short scalar lists and small maps in flow style.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "src/io/units.h"
#include "src/util/option_text.h"

namespace placer {

/// Reads a whole file. Throws FileError "<path>: cannot open <what> (<reason>)".
std::string read_text_file(const std::string& path, const std::string& what);
/// Writes a whole file (replacing it). Throws FileError naming the path.
void write_text_file(const std::string& path, const std::string& text);

/// Parses YAML text. Malformed input throws FormatError
/// "<file>: line 3, column 7: malformed YAML: <yaml-cpp's message>".
YAML::Node parse_yaml_text(const std::string& text, const std::string& file);
/// Parses JSON text into the equivalent YAML tree (objects -> maps, arrays -> sequences,
/// scalars -> scalars; object keys come out sorted), so one reader serves both formats.
/// Malformed input throws FormatError "<file>: malformed JSON: <parser's message>".
YAML::Node parse_json_as_yaml(const std::string& text, const std::string& file);

/// Prints `tree` as YAML. Sequences of scalars and maps of at most 4 scalars that fit on a
/// line are written in flow style ([a, b], {k: v}); everything else in block style.
/// `header` (may be empty) is written first as '#' comment lines.
std::string emit_yaml(const nlohmann::ordered_json& tree, const std::string& header = "");

/// Appends `key: value` to the ordered_json object `obj` without the duplicate-key search
/// of operator[] (linear per insert); for large maps whose keys are known to be unique.
void append_unique(nlohmann::ordered_json* obj, const std::string& key,
                   nlohmann::ordered_json value);

/// "a.b" (or "b" when parent is empty).
std::string field_join(const std::string& parent, const std::string& key);
/// "a[3]".
std::string field_index(const std::string& parent, size_t index);

[[noreturn]] void throw_unexpected_yaml(const std::string& file, const YAML::Exception& e);
/// Runs `read` over one file's YAML tree. A yaml-cpp exception that escapes the reader's own
/// checks becomes FormatError "<file>: unexpected YAML structure (<yaml-cpp's message>)", so
/// no input reaches `main` as an internal error (the checks name the field; this names the
/// file at least).
template <typename Read>
auto with_yaml_errors(const std::string& file, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const YAML::Exception& e) {
    throw_unexpected_yaml(file, e);
  }
}
/// Reads values out of one file's YAML tree; every error names the file and field.
class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }

  /// Throws FormatError "<file>: <field>: <message>".
  [[noreturn]] void fail(const std::string& field, const std::string& message) const;
  /// Throws ValidationError "<file>: <field>: <message>" (well-formed but inconsistent).
  [[noreturn]] void fail_validation(const std::string& field, const std::string& message) const;

  void expect_map(const YAML::Node& n, const std::string& field) const;
  void expect_sequence(const YAML::Node& n, const std::string& field) const;
  /// Rejects keys outside `allowed` ("unknown key 'bandwith' (did you mean 'bandwidth'?)")
  /// and repeated keys.
  void check_keys(const YAML::Node& map, const std::string& field,
                  std::initializer_list<const char*> allowed) const;
  /// The value of `key` in `map`; FormatError "<field>: missing required key '<key>'".
  YAML::Node required(const YAML::Node& map, const char* key, const std::string& field) const;

  /// A scalar's text (FormatError if `n` is a map, sequence or null).
  std::string scalar(const YAML::Node& n, const std::string& field) const;
  /// An integer in [lo, hi].
  int64_t to_int(const YAML::Node& n, const std::string& field, int64_t lo, int64_t hi) const;
  double to_double(const YAML::Node& n, const std::string& field) const;
  /// A bool in the one vocabulary of option values (src/util/option_text.h).
  bool to_bool(const YAML::Node& n, const std::string& field) const;
  /// A quantity with units (see units.h); plain numbers are in base units.
  double to_quantity(const YAML::Node& n, QuantityKind k, const std::string& field) const;
  uint64_t to_bytes(const YAML::Node& n, const std::string& field) const;

  /// Checks root["format_version"]: present, "<major>.<minor>" (or "<major>") with
  /// major == `major`. Otherwise FormatError
  /// "<file>: unsupported format_version '2.0' (this build reads 1.x)".
  /// A file of a newer minor version than `minor` may carry keys this build does not know:
  /// from then on check_keys ignores unknown keys (they are typos only in files of our own
  /// or an older version).
  void check_format_version(const YAML::Node& root, int major, int minor);

 private:
  std::string file_;
  bool ignore_unknown_keys_ = false;
};

}  // namespace placer
