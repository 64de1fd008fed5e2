#include "src/util/format.h"

#include <cmath>
#include <cstdio>

namespace placer {

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

static std::string three_digits(double v) {
  // 3 significant digits without exponent: 1.23, 12.3, 123.
  const double a = std::fabs(v);
  return fixed(v, a >= 100 ? 0 : a >= 10 ? 1 : 2);
}

std::string human_time(double s) {
  if (!std::isfinite(s)) return "inf";
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-6) return three_digits(s * 1e9) + " ns";
  if (a < 1e-3) return three_digits(s * 1e6) + " us";
  if (a < 1) return three_digits(s * 1e3) + " ms";
  return three_digits(s) + " s";
}

std::string human_bytes(double b) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (std::fabs(b) >= 1024 && u < 5) {
    b /= 1024;
    ++u;
  }
  if (u == 0) return fixed(b, 0) + " B";
  return three_digits(b) + " " + kUnits[u];
}

std::string human_count(double n, const char* unit) {
  static const char* const kPrefix[] = {"", "K", "M", "G", "T", "P", "E"};
  int p = 0;
  while (std::fabs(n) >= 1000 && p < 6) {
    n /= 1000;
    ++p;
  }
  return three_digits(n) + " " + kPrefix[p] + unit;
}

std::string pad_right(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string quote_short(const std::string& text) {
  constexpr size_t kMaxShown = 40;
  if (text.size() <= kMaxShown) return "'" + text + "'";
  return "'" + text.substr(0, kMaxShown) + "...' (" + std::to_string(text.size()) + " characters)";
}

}  // namespace placer
