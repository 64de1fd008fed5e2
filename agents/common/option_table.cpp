#include "agents/common/option_table.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "src/io/yaml_util.h"
#include "src/util/error.h"
#include "src/util/format.h"

namespace placer {
double parse_option_number(const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || errno != 0) {
    throw OptionValueError{"expected a number, got " + quote_short(v)};
  }
  return x;
}

int64_t parse_option_int(const std::string& v) {
  const double x = parse_option_number(v);
  // Integral and within int64_t (2^63 itself is not).
  if (!(std::fabs(x) < 9.2233720368547758e18) || x != std::trunc(x)) {
    throw OptionValueError{"expected an integer, got " + quote_short(v)};
  }
  return static_cast<int64_t>(x);
}

bool parse_option_bool(const std::string& v) {
  bool b = false;
  if (!parse_bool_text(v, &b)) {
    throw OptionValueError{std::string("expected ") + kBoolSpellings + ", got " + quote_short(v)};
  }
  return b;
}

std::vector<int64_t> parse_option_int_list(const std::string& v) {
  std::string items = v;
  for (char& ch : items) {
    if (ch == '[' || ch == ']' || ch == ',') ch = ' ';
  }
  std::istringstream in(items);
  std::vector<int64_t> out;
  for (std::string tok; in >> tok;) out.push_back(parse_option_int(tok));
  if (out.empty()) throw OptionValueError{"expected a list of integers such as [128, 128]"};
  return out;
}

std::string print_option_int_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string print_option_number(double x) {
  for (int precision = 6; precision <= 17; ++precision) {
    std::ostringstream s;
    s.precision(precision);
    s << x;
    if (std::strtod(s.str().c_str(), nullptr) == x) return s.str();
  }
  std::ostringstream s;
  s.precision(17);
  s << x;
  return s.str();
}

std::pair<std::string, std::string> split_option(const std::string& kv, const std::string& flag) {
  const size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ValidationError(flag + " " + quote_short(kv) + ": expected KEY=VALUE");
  }
  return {kv.substr(0, eq), kv.substr(eq + 1)};
}

std::vector<std::pair<std::string, std::string>> yaml_key_values(const std::string& yaml_text,
                                                                 const std::string& where) {
  // The limits and syntax errors of every YAML reader (src/io/yaml_util.h).
  const YAML::Node root = parse_yaml_text(yaml_text, where);
  std::vector<std::pair<std::string, std::string>> out;
  if (root.IsNull()) return out;
  if (!root.IsMap()) throw FormatError(where + ": expected a mapping of options");
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) throw FormatError(where + ": expected option names as keys");
    const std::string key = kv.first.Scalar();
    std::string value;
    if (kv.second.IsSequence()) {
      for (const auto& x : kv.second) {
        if (!x.IsScalar()) throw FormatError(where + ": " + key + ": expected a list of values");
        value += (value.empty() ? "" : ",") + x.Scalar();
      }
    } else if (kv.second.IsScalar()) {
      value = kv.second.Scalar();
    } else {
      throw FormatError(where + ": " + key + ": expected a value or a list");
    }
    out.emplace_back(key, value);
  }
  return out;
}

void throw_option_error(const std::string& flag, const std::string& key, const std::string& owner,
                        const std::string& why) {
  throw ValidationError(flag + " " + key + " (" + owner + "): " + why);
}

}  // namespace placer
