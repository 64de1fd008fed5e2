#include "agents/common/option_table.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "src/util/error.h"

namespace placer {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

double parse_option_number(const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || errno != 0) {
    throw OptionValueError{"expected a number, got '" + v + "'"};
  }
  return x;
}

int parse_option_int(const std::string& v) {
  const double x = parse_option_number(v);
  if (x != static_cast<double>(static_cast<int>(x))) {
    throw OptionValueError{"expected an integer, got '" + v + "'"};
  }
  return static_cast<int>(x);
}

bool parse_option_bool(const std::string& v) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  throw OptionValueError{"expected true or false, got '" + v + "'"};
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

std::string closest_option(const std::string& key, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = 3;
  for (const std::string& k : known) {
    const size_t d = edit_distance(key, k);
    if (d < best_d) best = k, best_d = d;
  }
  return best;
}

std::pair<std::string, std::string> split_option(const std::string& kv, const std::string& flag) {
  const size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ValidationError(flag + " '" + kv + "': expected KEY=VALUE");
  }
  return {kv.substr(0, eq), kv.substr(eq + 1)};
}

void throw_option_error(const std::string& flag, const std::string& key, const std::string& owner,
                        const std::string& why) {
  throw ValidationError(flag + " " + key + " (" + owner + "): " + why);
}

}  // namespace placer
