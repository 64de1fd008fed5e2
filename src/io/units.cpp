#include "src/io/units.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <vector>

#include "src/util/error.h"
#include "src/util/format.h"

namespace placer {

namespace {

/// value = number * mul / div. Sub-unit prefixes divide by an exact power of ten (so
/// "5 us" is the double nearest to 5e-6, like the literal), bits divide by 8.
struct Unit {
  std::string name;
  double mul = 1;
  double div = 1;
};

double apply(double number, const Unit& u) { return number * u.mul / u.div; }

struct Prefix {
  const char* name;
  double scale;
};
constexpr std::array<Prefix, 6> kDecimal = {
    {{"", 1}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}}};
constexpr std::array<Prefix, 5> kBinary = {{{"Ki", 1024.0},
                                            {"Mi", 1048576.0},
                                            {"Gi", 1073741824.0},
                                            {"Ti", 1099511627776.0},
                                            {"Pi", 1125899906842624.0}}};

std::vector<Unit> make_byte_units() {
  std::vector<Unit> u = {{"", 1, 1}, {"byte", 1, 1}, {"bytes", 1, 1}, {"kB", 1e3, 1}};
  for (const Prefix& p : kDecimal) u.push_back({std::string(p.name) + "B", p.scale, 1});
  for (const Prefix& p : kBinary) u.push_back({std::string(p.name) + "B", p.scale, 1});
  return u;
}

std::vector<Unit> make_bandwidth_units() {
  std::vector<Unit> u = {{"", 1, 1},         {"kB/s", 1e3, 1}, {"kBps", 1e3, 1},
                         {"kbit/s", 1e3, 8}, {"kb/s", 1e3, 8}, {"kbps", 1e3, 8}};
  for (const Prefix& p : kDecimal) {
    const std::string n = p.name;
    u.push_back({n + "B/s", p.scale, 1});
    u.push_back({n + "Bps", p.scale, 1});
    u.push_back({n + "bit/s", p.scale, 8});
    u.push_back({n + "b/s", p.scale, 8});
    u.push_back({n + "bps", p.scale, 8});
  }
  for (const Prefix& p : kBinary) {
    u.push_back({std::string(p.name) + "B/s", p.scale, 1});
    u.push_back({std::string(p.name) + "bit/s", p.scale, 8});
  }
  return u;
}

std::vector<Unit> make_time_units() {
  return {{"", 1, 1},     {"s", 1, 1},           {"sec", 1, 1},         {"ms", 1, 1e3},
          {"us", 1, 1e6}, {"\xC2\xB5s", 1, 1e6}, {"\xCE\xBCs", 1, 1e6}, {"ns", 1, 1e9},
          {"min", 60, 1}};
}

const std::vector<Unit>& units_of(QuantityKind k) {
  static const std::vector<Unit> bytes = make_byte_units();
  static const std::vector<Unit> bandwidth = make_bandwidth_units();
  static const std::vector<Unit> time = make_time_units();
  static const std::vector<Unit> none;
  switch (k) {
    case QuantityKind::kBytes:
      return bytes;
    case QuantityKind::kBandwidth:
      return bandwidth;
    case QuantityKind::kTime:
      return time;
    case QuantityKind::kFlops:
      return none;  // matched case-insensitively below
  }
  return none;
}

/// FLOP/s units, case-insensitive: [k|m|g|t|p|e] + "flops" | "flop/s" (m = mega here).
bool match_flops_unit(const std::string& unit, Unit* out) {
  std::string l;
  for (char c : unit) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l.empty()) {
    *out = {"", 1, 1};
    return true;
  }
  double scale = 1;
  size_t pos = 0;
  switch (l[0]) {
    case 'k':
      scale = 1e3;
      pos = 1;
      break;
    case 'm':
      scale = 1e6;
      pos = 1;
      break;
    case 'g':
      scale = 1e9;
      pos = 1;
      break;
    case 't':
      scale = 1e12;
      pos = 1;
      break;
    case 'p':
      scale = 1e15;
      pos = 1;
      break;
    case 'e':
      scale = 1e18;
      pos = 1;
      break;
    default:
      break;
  }
  const std::string rest = l.substr(pos);
  if (rest != "flops" && rest != "flop/s") return false;
  *out = {unit, scale, 1};
  return true;
}

bool find_unit(const std::string& unit, QuantityKind k, Unit* out) {
  if (k == QuantityKind::kFlops) return match_flops_unit(unit, out);
  for (const Unit& u : units_of(k)) {
    if (u.name == unit) {
      *out = u;
      return true;
    }
  }
  return false;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

enum class ParseStatus { kOk, kBadNumber, kBadUnit, kNegative, kOutOfBounds };

/// Physical bounds of a non-zero quantity read from a file: no device or link comes near
/// them, and beyond them sums and times overflow. The lower bounds keep derived times finite
/// (bytes / bandwidth, FLOPs / rate).
struct Bounds {
  double lo, hi;
  const char* text;
};
Bounds bounds_of(QuantityKind k) {
  switch (k) {
    case QuantityKind::kBytes:
      return {1, 1152921504606846976.0, "between 1 B and 1 EiB"};
    case QuantityKind::kBandwidth:
      return {1, 1e14, "between 1 B/s and 100 TB/s"};
    case QuantityKind::kTime:
      return {0, 1e9, "at most 1e9 s (about 32 years)"};
    case QuantityKind::kFlops:
      return {1, 1e18, "between 1 FLOP/s and 1 EFLOP/s"};
  }
  return {0, 0, ""};
}

ParseStatus parse_impl(const std::string& text, QuantityKind k, double* out) {
  const std::string t = trim(text);
  if (t.empty()) return ParseStatus::kBadNumber;
  const char* begin = t.data();
  const char* end = t.data() + t.size();
  if (*begin == '+') ++begin;  // from_chars does not take a leading '+'
  double number = 0;
  auto res = std::from_chars(begin, end, number, std::chars_format::general);
  if (res.ec != std::errc() || !std::isfinite(number)) return ParseStatus::kBadNumber;
  const std::string unit = trim(std::string(res.ptr, end));
  Unit u;
  if (!find_unit(unit, k, &u)) return ParseStatus::kBadUnit;
  const double v = apply(number, u);
  if (!std::isfinite(v)) return ParseStatus::kBadNumber;
  if (v < 0) return ParseStatus::kNegative;
  const Bounds b = bounds_of(k);
  if (v != 0 && (v < b.lo || v > b.hi)) return ParseStatus::kOutOfBounds;
  *out = v == 0 ? 0.0 : v;  // no negative zero
  return ParseStatus::kOk;
}

const char* hint(QuantityKind k) {
  switch (k) {
    case QuantityKind::kBytes:
      return "(use e.g. '16 GiB' or '512 MB')";
    case QuantityKind::kBandwidth:
      return "(use e.g. '25 Gbit/s' or '3.1 GB/s')";
    case QuantityKind::kTime:
      return "(use e.g. '5 us' or '1.5 ms')";
    case QuantityKind::kFlops:
      return "(use e.g. '15.7 TFLOPS' or '125 TFLOP/s')";
  }
  return "";
}

/// Writes v in unit u if the shortest text reads back exactly; empty string otherwise.
std::string try_format_in(double v, const Unit& u) {
  const double x = v * u.div / u.mul;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  for (const std::string& s : {format_double(x), std::string(buf)}) {
    double back = 0;
    if (parse_double(s, &back) && apply(back, u) == v) {
      return u.name.empty() ? s : s + " " + u.name;
    }
  }
  return "";
}

/// The largest unit of `ladder` (ascending) that is <= v, then the base unit.
std::string format_with_ladder(double v, const std::vector<Unit>& ladder) {
  if (!(v > 0) || !std::isfinite(v)) return format_double(v) + " " + ladder.front().name;
  for (size_t i = ladder.size(); i-- > 0;) {
    const Unit& u = ladder[i];
    if (v >= u.mul / u.div || i == 0) {
      std::string s = try_format_in(v, u);
      if (!s.empty()) return s;
      break;
    }
  }
  // Always exact: the base unit's multiplier is 1.
  return format_double(v) + (ladder.front().name.empty() ? "" : " " + ladder.front().name);
}

}  // namespace

const char* quantity_description(QuantityKind k) {
  switch (k) {
    case QuantityKind::kBytes:
      return "a byte size";
    case QuantityKind::kBandwidth:
      return "a bandwidth";
    case QuantityKind::kTime:
      return "a time";
    case QuantityKind::kFlops:
      return "a FLOP/s rate";
  }
  return "a quantity";
}

std::string format_double(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

bool parse_double(const std::string& text, double* out) {
  const char* b = text.data();
  const char* e = text.data() + text.size();
  if (b != e && *b == '+') ++b;
  double v = 0;
  auto res = std::from_chars(b, e, v, std::chars_format::general);
  if (res.ec != std::errc() || res.ptr != e) return false;
  *out = v;
  return true;
}

bool try_parse_quantity(const std::string& text, QuantityKind k, double* out) {
  return parse_impl(text, k, out) == ParseStatus::kOk;
}

double parse_quantity(const std::string& text, QuantityKind k, const std::string& file,
                      const std::string& field) {
  double v = 0;
  switch (parse_impl(text, k, &v)) {
    case ParseStatus::kOk:
      return v;
    case ParseStatus::kNegative:
      throw FormatError(format_context(
          file, field,
          quote_short(text) + " is negative; " + quantity_description(k) + " must be >= 0"));
    case ParseStatus::kOutOfBounds:
      throw FormatError(format_context(
          file, field,
          quote_short(text) + " is out of physical bounds: " + quantity_description(k) +
              " must be 0 or " + bounds_of(k).text));
    case ParseStatus::kBadNumber:
    case ParseStatus::kBadUnit:
      break;
  }
  throw FormatError(format_context(
      file, field,
      "cannot read " + quote_short(text) + " as " + quantity_description(k) + " " + hint(k)));
}

uint64_t parse_bytes(const std::string& text, const std::string& file, const std::string& field) {
  // Whole numbers with an integral unit are computed in integers: exact beyond 2^53.
  const std::string t = trim(text);
  uint64_t whole = 0;
  auto res = std::from_chars(t.data(), t.data() + t.size(), whole);
  if (res.ec == std::errc() &&
      (res.ptr == t.data() + t.size() || (*res.ptr != '.' && *res.ptr != 'e' && *res.ptr != 'E'))) {
    Unit u;
    if (find_unit(trim(std::string(res.ptr, t.data() + t.size())), QuantityKind::kBytes, &u) &&
        u.div == 1) {
      const uint64_t mul = static_cast<uint64_t>(u.mul);
      if (whole <= UINT64_MAX / mul && static_cast<double>(whole * mul) <= bounds_of(QuantityKind::kBytes).hi) {
        return whole * mul;
      }
    }
  }
  // A fraction of a plain byte is an error; fractions of larger units ("10.5 GiB", as
  // format_bytes writes them) round to the nearest byte.
  double number = 0;
  const char* b = t.data() + (!t.empty() && t[0] == '+');
  auto num = std::from_chars(b, t.data() + t.size(), number, std::chars_format::general);
  Unit u;
  if (num.ec == std::errc() && std::isfinite(number) && number != std::floor(number) &&
      find_unit(trim(std::string(num.ptr, t.data() + t.size())), QuantityKind::kBytes, &u) &&
      u.mul == 1) {
    throw FormatError(
        format_context(file, field, quote_short(text) + " is not a whole number of bytes"));
  }
  return static_cast<uint64_t>(std::round(parse_quantity(text, QuantityKind::kBytes, file, field)));
}
double parse_bandwidth(const std::string& text, const std::string& file, const std::string& field) {
  return parse_quantity(text, QuantityKind::kBandwidth, file, field);
}
double parse_time(const std::string& text, const std::string& file, const std::string& field) {
  return parse_quantity(text, QuantityKind::kTime, file, field);
}
double parse_flops(const std::string& text, const std::string& file, const std::string& field) {
  return parse_quantity(text, QuantityKind::kFlops, file, field);
}

std::string format_bytes(uint64_t bytes) {
  if (bytes == 0) return "0 B";
  // The whole multiple of a unit with the smallest count ("80 GB", not "78125000 KiB");
  // binary units win ties.
  uint64_t best_count = bytes;
  std::string best_unit = "B";
  auto consider = [&](const Prefix& p) {
    const uint64_t unit = static_cast<uint64_t>(p.scale);
    if (unit > 1 && bytes % unit == 0 && bytes / unit < best_count) {
      best_count = bytes / unit;
      best_unit = std::string(p.name) + "B";
    }
  };
  for (const Prefix& p : kBinary) consider(p);
  for (const Prefix& p : kDecimal) consider(p);
  if (best_unit != "B") return std::to_string(best_count) + " " + best_unit;
  // A short fraction of a binary unit ("10.5 GiB"), exact after rounding.
  for (size_t i = kBinary.size(); i-- > 0;) {
    const double unit = kBinary[i].scale;
    if (static_cast<double>(bytes) < unit) continue;
    const std::string s = format_double(static_cast<double>(bytes) / unit);
    double back = 0;
    if (s.size() <= 7 && parse_double(s, &back) &&
        static_cast<uint64_t>(std::round(back * unit)) == bytes) {
      return s + " " + kBinary[i].name + "B";
    }
    break;
  }
  return std::to_string(bytes) + " B";
}

std::string format_bandwidth(double bytes_per_second) {
  static const std::vector<Unit> ladder = {
      {"B/s", 1, 1}, {"KB/s", 1e3, 1}, {"MB/s", 1e6, 1}, {"GB/s", 1e9, 1}, {"TB/s", 1e12, 1}};
  return format_with_ladder(bytes_per_second, ladder);
}

std::string format_time(double seconds) {
  if (seconds == 0) return "0 s";
  static const std::vector<Unit> ladder = {
      {"ns", 1, 1e9}, {"us", 1, 1e6}, {"ms", 1, 1e3}, {"s", 1, 1}};
  // Base unit for the fallback is seconds, so search the ladder by hand.
  if (!(seconds > 0) || !std::isfinite(seconds)) return format_double(seconds) + " s";
  for (size_t i = ladder.size(); i-- > 0;) {
    if (seconds >= ladder[i].mul / ladder[i].div || i == 0) {
      std::string s = try_format_in(seconds, ladder[i]);
      if (!s.empty()) return s;
      break;
    }
  }
  return format_double(seconds) + " s";
}

std::string format_flops(double flops_per_second) {
  static const std::vector<Unit> ladder = {{"FLOPS", 1, 1},     {"KFLOPS", 1e3, 1},
                                           {"MFLOPS", 1e6, 1},  {"GFLOPS", 1e9, 1},
                                           {"TFLOPS", 1e12, 1}, {"PFLOPS", 1e15, 1}};
  return format_with_ladder(flops_per_second, ladder);
}

std::string format_quantity(double value, QuantityKind k) {
  switch (k) {
    case QuantityKind::kBytes:
      return format_bytes(value <= 0 ? 0 : static_cast<uint64_t>(std::round(value)));
    case QuantityKind::kBandwidth:
      return format_bandwidth(value);
    case QuantityKind::kTime:
      return format_time(value);
    case QuantityKind::kFlops:
      return format_flops(value);
  }
  return format_double(value);
}

bool unit_value(const std::string& unit, QuantityKind k, double* out) {
  Unit u;
  if (!find_unit(trim(unit), k, &u)) return false;
  *out = apply(1.0, u);
  return true;
}

double apply_unit(double number, const std::string& unit, QuantityKind k) {
  Unit u;
  if (!find_unit(trim(unit), k, &u)) {
    throw FormatError("unknown unit " + quote_short(unit) + " for " + quantity_description(k));
  }
  return apply(number, u);
}

}  // namespace placer
