#include "src/io/json_read.h"

#include <cmath>

#include "src/io/units.h"
#include "src/util/error.h"

namespace placer {

namespace {

/// The reason in nlohmann's message: the text after "column C: " and before "; last read"
/// (which echoes input), without the "[json.exception...]" tag.
std::string parser_reason(const std::string& message) {
  std::string m = message;
  const size_t column = m.find(", column ");
  if (column != std::string::npos) {
    const size_t colon = m.find(": ", column);
    if (colon != std::string::npos) m = m.substr(colon + 2);
  } else if (m.rfind("[json.exception", 0) == 0 && m.find("] ") != std::string::npos) {
    m = m.substr(m.find("] ") + 2);
  }
  const size_t last_read = m.find("; last read");
  if (last_read != std::string::npos) m.resize(last_read);
  return m;
}

}  // namespace

std::string line_column(const std::string& text, size_t offset) {
  size_t line = 1, column = 1;
  const size_t end = std::min(offset, text.size());
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

void check_input_size(size_t bytes, const std::string& file, const std::string& what) {
  if (bytes > kMaxInputBytes) {
    throw FileError(
        format_context(file, what, std::to_string(bytes) + " bytes, above the 1 GiB input limit"));
  }
}

void check_nesting_depth(const std::string& text, const std::string& file) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNestingDepth) {
        throw FormatError(
            format_context(file, line_column(text, i),
                           "nesting deeper than " + std::to_string(kMaxNestingDepth) + " levels"));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

std::string json_syntax_message(const std::string& text, const std::string& file,
                                size_t byte_position, const std::string& parser_message) {
  // nlohmann counts bytes from 1 (the byte it stopped at).
  const size_t offset = byte_position > 0 ? byte_position - 1 : 0;
  return format_context(file, line_column(text, offset),
                        "malformed JSON: " + parser_reason(parser_message));
}

nlohmann::json parse_json_text(const std::string& text, const std::string& file) {
  check_input_size(text.size(), file, "");
  check_nesting_depth(text, file);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw FormatError(json_syntax_message(text, file, e.byte, e.what()));
  } catch (const nlohmann::json::out_of_range&) {  // 406: a number beyond a double's range
    throw FormatError(
        format_context(file, "", "malformed JSON: a number beyond the range of a double"));
  }
}

bool parse_measurement(const std::string& text, double* out) {
  double v = 0;
  if (!parse_double(text, &v) || !std::isfinite(v) || std::fpclassify(v) == FP_SUBNORMAL)
    return false;
  *out = v;
  return true;
}

std::string describe_json(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object:
      return "an object of " + std::to_string(v.size()) + " keys";
    case nlohmann::json::value_t::array:
      return "an array of " + std::to_string(v.size()) + " values";
    case nlohmann::json::value_t::string:
      return "the string " + quote_short(v.get_ref<const std::string&>());
    case nlohmann::json::value_t::null:
      return "null";
    default:
      return v.dump();  // a number or a boolean: short
  }
}

void JsonReader::fail(const std::string& path, const std::string& message) const {
  throw FormatError(format_context(file_, path, message));
}

const nlohmann::json* JsonReader::find(const nlohmann::json& obj, const char* key,
                                       const std::string& path) const {
  const auto it = object(obj, path).find(key);
  return it == obj.end() ? nullptr : &*it;
}

const nlohmann::json& JsonReader::object(const nlohmann::json& v, const std::string& path) const {
  if (!v.is_object()) fail(path, "expected an object, got " + describe_json(v));
  return v;
}

const nlohmann::json& JsonReader::array(const nlohmann::json& v, const std::string& path) const {
  if (!v.is_array()) fail(path, "expected an array, got " + describe_json(v));
  return v;
}

int64_t JsonReader::integer(const nlohmann::json& v, const std::string& path, int64_t lo,
                            int64_t hi) const {
  if (!v.is_number()) fail(path, "expected an integer, got " + describe_json(v));
  const double d = v.get<double>();
  if (v.is_number_float() && d != std::floor(d))
    fail(path, "expected an integer, got " + describe_json(v));
  // Integers are compared as integers (2^53 + 1 is no double); fractions as doubles.
  const bool beyond =
      v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(kMaxJsonInteger)
      : v.is_number_integer()
          ? v.get<int64_t>() > kMaxJsonInteger || v.get<int64_t>() < -kMaxJsonInteger
          : !(std::fabs(d) <= static_cast<double>(kMaxJsonInteger));
  if (beyond) fail(path, describe_json(v) + " is beyond 2^53, the largest integer read exactly");
  const int64_t i = v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(d);
  if (i < lo || i > hi) {
    fail(path, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + " (got " +
                   std::to_string(i) + ")");
  }
  return i;
}

double JsonReader::number(const nlohmann::json& v, const std::string& path) const {
  if (!v.is_number()) fail(path, "expected a number, got " + describe_json(v));
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(path, "expected a finite number, got " + describe_json(v));
  return d;
}

bool JsonReader::boolean(const nlohmann::json& v, const std::string& path) const {
  if (!v.is_boolean()) fail(path, "expected true or false, got " + describe_json(v));
  return v.get<bool>();
}

std::string JsonReader::string(const nlohmann::json& v, const std::string& path) const {
  if (!v.is_string()) fail(path, "expected a string, got " + describe_json(v));
  return v.get<std::string>();
}

}  // namespace placer
