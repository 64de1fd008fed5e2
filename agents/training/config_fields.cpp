#include "agents/training/config_fields.h"

#include <cmath>
#include <filesystem>

#include "src/util/format.h"

namespace placer {

namespace fs = std::filesystem;

std::string absolute_path(const std::string& p) {
  std::string s = fs::absolute(fs::path(p)).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::string resolve_input(const std::string& p, const std::string& base) {
  if (p.empty()) return p;
  const fs::path path(p);
  return absolute_path((path.is_absolute() ? path : fs::path(base) / path).string());
}

std::string read_string(const ConfigSource& s, const YAML::Node& n, const std::string& f) {
  if (n.IsNull()) return "";
  return s.reader.scalar(n, f);
}

std::vector<YAML::Node> list_items(const ConfigSource& s, const YAML::Node& n,
                                   const std::string& f) {
  std::vector<YAML::Node> out;
  if (n.IsNull()) return out;
  if (n.IsScalar()) return {n};
  s.reader.expect_sequence(n, f);
  for (size_t i = 0; i < n.size(); ++i) out.push_back(n[i]);
  return out;
}

double read_double(const ConfigSource& s, const YAML::Node& n, const std::string& f, double lo,
                   double hi, bool lo_open) {
  const double v = s.reader.to_double(n, f);
  if (!std::isfinite(v) || v < lo || v > hi || (lo_open && v == lo)) {
    std::string range = (lo_open ? "> " : ">= ") + ConfigJson(lo).dump();
    if (hi < kConfigMaxDouble) range += " and <= " + ConfigJson(hi).dump();
    s.reader.fail(f, "must be " + range + " (got " + quote_short(n.Scalar()) + ")");
  }
  return v;
}

std::string name_suggestion(const std::string& v, const std::vector<std::string>& known,
                            const std::string& lead) {
  std::string all;
  for (const std::string& k : known) all += (all.empty() ? "" : ", ") + k;
  const std::string best = closest_name(v, known);
  return best.empty() ? "(" + lead + ": " + all + ")" : "(did you mean '" + best + "'?)";
}

void check_name(const YamlReader& r, const std::string& f, const std::string& v,
                const std::vector<std::string>& known, const std::string& what) {
  for (const std::string& k : known) {
    if (k == v) return;
  }
  r.fail(f, "unknown " + what + " " + quote_short(v) + " " + name_suggestion(v, known, "known"));
}

void unknown_key(const YamlReader& r, const std::string& field, const std::string& key,
                 const std::vector<std::string>& allowed) {
  r.fail(field, "unknown key " + quote_short(key) + " " +
                    name_suggestion(key, allowed, "expected one of"));
}

}  // namespace placer
