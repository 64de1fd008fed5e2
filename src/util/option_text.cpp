#include "src/util/option_text.h"

#include <algorithm>
#include <cctype>

namespace placer {

bool parse_bool_text(const std::string& text, bool* out) {
  std::string s = text;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "true" || s == "yes" || s == "on" || s == "1") {
    *out = true;
  } else if (s == "false" || s == "no" || s == "off" || s == "0") {
    *out = false;
  } else {
    return false;
  }
  return true;
}

size_t edit_distance(const std::string& a, const std::string& b, size_t cap) {
  const size_t diff = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (diff > cap) return cap + 1;  // at least that many edits: no need to fill the table
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_name(const std::string& name, const std::vector<std::string>& known,
                         size_t max_distance) {
  std::string best;
  size_t best_d = max_distance;
  for (const std::string& k : known) {
    const size_t d = edit_distance(name, k, max_distance);
    if (d < best_d) best_d = d, best = k;
  }
  return best;
}

}  // namespace placer
