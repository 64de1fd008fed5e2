#include "src/io/yaml_util.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "src/io/json_read.h"
#include "src/util/error.h"
#include "src/util/files.h"

namespace placer {

namespace {

// YAML nests by indentation too, which check_nesting_depth does not see: the parsed tree's
// depth is checked as well (iteratively, so a deep tree cannot exhaust the stack here).
// Aliases share nodes, so a small file can stand for a huge tree: the walk stops at
// kMaxYamlNodes visits.
void check_yaml_depth(const YAML::Node& root, const std::string& file) {
  constexpr size_t kMaxYamlNodes = size_t(1) << 24;
  std::vector<std::pair<YAML::Node, int>> stack = {{root, 0}};
  size_t visited = 0;
  while (!stack.empty()) {
    if (++visited > kMaxYamlNodes) {
      throw FormatError(format_context(
          file, "", "more than " + std::to_string(kMaxYamlNodes) + " values (aliases expanded)"));
    }
    const auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node.IsMap() && !node.IsSequence()) continue;
    if (depth >= kMaxNestingDepth) {
      const YAML::Mark mark = node.Mark();
      const std::string where = mark.line >= 0 ? "line " + std::to_string(mark.line + 1) +
                                                     ", column " + std::to_string(mark.column + 1)
                                               : "";
      throw FormatError(format_context(
          file, where, "nesting deeper than " + std::to_string(kMaxNestingDepth) + " levels"));
    }
    for (auto it = node.begin(); it != node.end(); ++it) {
      stack.emplace_back(node.IsMap() ? it->second : *it, depth + 1);
    }
  }
}

}  // namespace

std::string read_text_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw FileError(path + ": cannot open " + what + " (it is a directory)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw FileError(path + ": cannot open " + what + " (" + std::strerror(errno) + ")");
  }
  // Read in chunks up to the limit: a device file (/dev/zero) has no size to check first.
  const uintmax_t size =
      std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
  if (!ec) check_input_size(size, path, what);
  std::string text;
  std::vector<char> chunk(size_t(1) << 20);
  while (in.read(chunk.data(), std::streamsize(chunk.size())) || in.gcount() > 0) {
    text.append(chunk.data(), size_t(in.gcount()));
    if (text.size() > kMaxInputBytes) {
      throw FileError(format_context(
          path, what,
          "more than " + std::to_string(kMaxInputBytes) + " bytes, above the 1 GiB input limit"));
    }
  }
  if (in.bad()) throw FileError(path + ": error while reading " + what);
  return text;
}

void write_text_file(const std::string& path, const std::string& text) {
  write_text_atomic(path, text);
}

YAML::Node parse_yaml_text(const std::string& text, const std::string& file) {
  check_input_size(text.size(), file, "");
  check_nesting_depth(text, file);
  try {
    YAML::Node root = YAML::Load(text);
    check_yaml_depth(root, file);
    return root;
  } catch (const YAML::Exception& e) {
    std::string where;
    if (e.mark.line >= 0) {
      where = "line " + std::to_string(e.mark.line + 1) + ", column " +
              std::to_string(e.mark.column + 1);
    }
    throw FormatError(format_context(file, where, "malformed YAML: " + e.msg));
  }
}

namespace {

// A plain (std::map) json: ordered_json's inserts are linear, which makes a 50k-key object
// quadratic to parse. Key order does not matter to the readers.
YAML::Node json_to_yaml(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::object: {
      YAML::Node n(YAML::NodeType::Map);
      // force_insert appends; operator[] would search the map on every insert.
      for (auto it = j.begin(); it != j.end(); ++it)
        n.force_insert(it.key(), json_to_yaml(it.value()));
      return n;
    }
    case nlohmann::json::value_t::array: {
      YAML::Node n(YAML::NodeType::Sequence);
      for (const auto& v : j) n.push_back(json_to_yaml(v));
      return n;
    }
    case nlohmann::json::value_t::string:
      return YAML::Node(j.get<std::string>());
    case nlohmann::json::value_t::boolean:
      return YAML::Node(j.get<bool>() ? "true" : "false");
    case nlohmann::json::value_t::number_integer:
      return YAML::Node(std::to_string(j.get<int64_t>()));
    case nlohmann::json::value_t::number_unsigned:
      return YAML::Node(std::to_string(j.get<uint64_t>()));
    case nlohmann::json::value_t::number_float:
      return YAML::Node(format_double(j.get<double>()));
    default:
      return YAML::Node(YAML::NodeType::Null);
  }
}

bool is_scalar(const nlohmann::ordered_json& j) { return !j.is_object() && !j.is_array(); }

/// Strings a YAML reader would take for another type are quoted.
bool needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  static const std::set<std::string> special = {"true", "false", "yes",  "no",    "on",    "off",
                                                "null", "~",     "True", "False", "Yes",   "No",
                                                "On",   "Off",   "Null", "TRUE",  "FALSE", "NULL"};
  if (special.count(s)) return true;
  double d = 0;
  return parse_double(s, &d);
}

size_t scalar_width(const nlohmann::ordered_json& j) {
  return j.is_string() ? j.get<std::string>().size() + 2 : j.dump().size();
}

void emit_scalar(YAML::Emitter& out, const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::string: {
      const std::string s = j.get<std::string>();
      if (needs_quotes(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case nlohmann::json::value_t::boolean:
      out << (j.get<bool>() ? "true" : "false");
      break;
    case nlohmann::json::value_t::number_integer:
      out << j.get<int64_t>();
      break;
    case nlohmann::json::value_t::number_unsigned:
      out << j.get<uint64_t>();
      break;
    case nlohmann::json::value_t::number_float:
      out << format_double(j.get<double>());
      break;
    default:
      out << YAML::Null;
      break;
  }
}

void emit_node(YAML::Emitter& out, const nlohmann::ordered_json& j) {
  if (j.is_array()) {
    const bool flow = std::all_of(j.begin(), j.end(), is_scalar);
    out << (flow ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
    for (const auto& v : j) emit_node(out, v);
    out << YAML::EndSeq;
  } else if (j.is_object()) {
    size_t width = 0;
    bool flow = j.size() <= 4;
    for (auto it = j.begin(); flow && it != j.end(); ++it) {
      flow = is_scalar(it.value());
      width += it.key().size() + scalar_width(it.value()) + 4;
    }
    flow = flow && (j.empty() || width <= 80);
    out << (flow ? YAML::Flow : YAML::Block) << YAML::BeginMap;
    for (auto it = j.begin(); it != j.end(); ++it) {
      out << YAML::Key;
      if (needs_quotes(it.key())) out << YAML::DoubleQuoted;
      out << it.key() << YAML::Value;
      emit_node(out, it.value());
    }
    out << YAML::EndMap;
  } else {
    emit_scalar(out, j);
  }
}


const char* node_kind(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  return "a scalar";
}

}  // namespace

YAML::Node parse_json_as_yaml(const std::string& text, const std::string& file) {
  return json_to_yaml(parse_json_text(text, file));
}

std::string emit_yaml(const nlohmann::ordered_json& tree, const std::string& header) {
  YAML::Emitter out;
  out.SetIndent(2);
  emit_node(out, tree);
  std::string text;
  std::istringstream lines(header);
  for (std::string line; std::getline(lines, line);) {
    text += line.empty() ? "#\n" : "# " + line + "\n";
  }
  return text + out.c_str() + "\n";
}

void append_unique(nlohmann::ordered_json* obj, const std::string& key,
                   nlohmann::ordered_json value) {
  if (!obj->is_object()) *obj = nlohmann::ordered_json::object();
  // ordered_map is a std::vector of pairs; appending to it directly skips the key search.
  auto& pairs = obj->get_ref<nlohmann::ordered_json::object_t&>();
  using Base = std::vector<std::pair<const std::string, nlohmann::ordered_json>,
                           nlohmann::ordered_json::object_t::allocator_type>;
  static_cast<Base&>(pairs).emplace_back(key, std::move(value));
}

std::string field_join(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string field_index(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

void throw_unexpected_yaml(const std::string& file, const YAML::Exception& e) {
  throw FormatError(format_context(file, "", "unexpected YAML structure (" + e.msg + ")"));
}

void YamlReader::fail(const std::string& field, const std::string& message) const {
  throw FormatError(format_context(file_, field, message));
}

void YamlReader::fail_validation(const std::string& field, const std::string& message) const {
  throw ValidationError(format_context(file_, field, message));
}

// Every check below tests IsDefined() first: a missing key of a const map is an invalid node,
// and yaml-cpp throws InvalidNode (naming no file) from IsMap() / Scalar() on it.
void YamlReader::expect_map(const YAML::Node& n, const std::string& field) const {
  if (!n.IsDefined() || !n.IsMap()) {
    fail(field.empty() ? "" : field,
         std::string("expected a mapping (key: value lines), found ") + node_kind(n));
  }
}

void YamlReader::expect_sequence(const YAML::Node& n, const std::string& field) const {
  if (!n.IsDefined() || !n.IsSequence()) {
    fail(field, std::string("expected a list, found ") + node_kind(n));
  }
}

void YamlReader::check_keys(const YAML::Node& map, const std::string& field,
                            std::initializer_list<const char*> allowed) const {
  expect_map(map, field);
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
    if (!seen.insert(key).second) fail(field_join(field, key), "key given twice");
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (ok || ignore_unknown_keys_) continue;
    std::string all;
    for (const char* a : allowed) all += std::string(all.empty() ? "" : ", ") + a;
    const std::string best = closest_name(key, std::vector<std::string>(allowed.begin(), allowed.end()));
    fail(field,
         "unknown key " + quote_short(key) + " " +
             (best.empty() ? "(expected one of: " + all + ")" : "(did you mean '" + best + "'?)"));
  }
}

YAML::Node YamlReader::required(const YAML::Node& map, const char* key,
                                const std::string& field) const {
  expect_map(map, field);
  YAML::Node v = map[key];
  if (!v.IsDefined() || v.IsNull()) fail(field, std::string("missing required key '") + key + "'");
  return v;
}

std::string YamlReader::scalar(const YAML::Node& n, const std::string& field) const {
  if (!n.IsDefined() || !n.IsScalar()) {
    fail(field, std::string("expected a single value, found ") + node_kind(n));
  }
  return n.Scalar();
}

int64_t YamlReader::to_int(const YAML::Node& n, const std::string& field, int64_t lo,
                           int64_t hi) const {
  const std::string s = scalar(n, field);
  int64_t v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (b != e && *b == '+') ++b;
  auto res = std::from_chars(b, e, v);
  if (res.ec != std::errc() || res.ptr != e) fail(field, "expected an integer, got " + quote_short(s));
  if (v < lo || v > hi) {
    fail(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + " (got " +
                    s + ")");
  }
  return v;
}

double YamlReader::to_double(const YAML::Node& n, const std::string& field) const {
  const std::string s = scalar(n, field);
  double v = 0;
  if (!parse_double(s, &v)) fail(field, "expected a number, got " + quote_short(s));
  if (!std::isfinite(v)) fail(field, "expected a finite number, got " + quote_short(s));
  return v;
}

bool YamlReader::to_bool(const YAML::Node& n, const std::string& field) const {
  bool b = false;
  if (parse_bool_text(scalar(n, field), &b)) return b;
  fail(field, std::string("expected ") + kBoolSpellings + ", got " + quote_short(n.Scalar()));
}

double YamlReader::to_quantity(const YAML::Node& n, QuantityKind k,
                               const std::string& field) const {
  return parse_quantity(scalar(n, field), k, file_, field);
}

uint64_t YamlReader::to_bytes(const YAML::Node& n, const std::string& field) const {
  return parse_bytes(scalar(n, field), file_, field);
}

void YamlReader::check_format_version(const YAML::Node& root, int major, int minor) {
  expect_map(root, "");
  const YAML::Node v = root["format_version"];
  const std::string reads = "this build reads " + std::to_string(major) + ".x";
  if (!v.IsDefined() || v.IsNull()) {
    fail("format_version", "missing (" + reads + "; start the file with format_version: \"" +
                               std::to_string(major) + ".0\")");
  }
  const std::string s = scalar(v, "format_version");
  const std::string head = s.substr(0, s.find('.'));
  int got = -1;
  auto res = std::from_chars(head.data(), head.data() + head.size(), got);
  if (res.ec != std::errc() || res.ptr != head.data() + head.size() || got != major) {
    throw FormatError(format_context(
        file_, "", "unsupported format_version " + quote_short(s) + " (" + reads + ")"));
  }
  int file_minor = 0;
  const size_t dot = s.find('.');
  if (dot != std::string::npos) {
    const std::string tail = s.substr(dot + 1);
    auto r2 = std::from_chars(tail.data(), tail.data() + tail.size(), file_minor);
    if (r2.ec != std::errc() || r2.ptr != tail.data() + tail.size()) {
      fail("format_version", "cannot read " + quote_short(s) + " as <major>.<minor>");
    }
  }
  ignore_unknown_keys_ = file_minor > minor;
}

}  // namespace placer
