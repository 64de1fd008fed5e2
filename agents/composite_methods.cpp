// The composite methods: one method around another, the inner one chosen by the option
// `inner` (`placer place --method hybrid --set inner=metis`). The older names "M+hybrid"
// and "gdp+stages" stay as aliases of the option form and build the same placer.
#include <map>
#include <mutex>
#include <utility>

#include "agents/api/composite_methods.h"
#include "agents/classical/hybrid_outer.h"
#include "agents/common/option_table.h"
#include "src/util/error.h"

namespace placer {
namespace {

const char kInner[] = "inner";

/// "M+<composite>" -> M; "" when `name` is no such alias.
std::string alias_inner(const std::string& name, const std::string& composite) {
  const std::string suffix = "+" + composite;
  if (name.size() <= suffix.size()) return "";
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return "";
  return name.substr(0, name.size() - suffix.size());
}

/// "M+hybrid": method M inside the micro-batch and replica outer loop
/// (agents/classical/hybrid_outer.h), with M's options.
MethodInfo hybrid_alias(const std::string& name, const std::string& base) {
  const MethodInfo& inner = method_info(base);
  MethodInfo h{name, inner.description + "; in the micro-batch and replica outer loop", false,
               [base] { return std::make_unique<HybridOuterPlacer>(make_placer(base)); }};
  if (inner.make_with) {
    h.options = inner.options;
    h.make_with = [base](const MethodSettings& s) {
      return std::make_unique<HybridOuterPlacer>(make_placer(base, s));
    };
    h.effective_options = inner.effective_options;
  }
  return h;
}

/// A composite: `name --set inner=M` is the method registered (or resolved) as "M+name".
struct Composite {
  std::string name;
  std::string default_inner;
  std::string description;
  /// Whether any method may be inside; else only those registered as "M+name".
  bool any_inner = false;

  std::string alias(const std::string& inner) const { return inner + "+" + name; }

  /// The methods `inner` takes, comma separated.
  std::string known_inner() const {
    std::string out;
    for (const MethodInfo& m : placer_methods()) {
      const std::string inner = any_inner ? m.name : alias_inner(m.name, name);
      if (!inner.empty()) out += (out.empty() ? "" : ", ") + inner;
    }
    return out;
  }

  /// The inner method the settings choose (their last `inner=M`, else the default) and the
  /// other settings, which are the inner method's. ValidationError for an unknown one.
  std::pair<std::string, MethodSettings> split(const MethodSettings& s) const {
    std::string inner = default_inner;
    MethodSettings rest;
    rest.flag = s.flag;
    for (const std::string& kv : s.sets) {
      const auto [key, value] = split_option(kv, s.flag);
      if (key == kInner) {
        inner = value;
      } else {
        rest.sets.push_back(kv);
      }
    }
    if (!takes(inner)) {
      throw_option_error(s.flag, kInner, name,
                         "unknown method '" + inner + "' (known: " + known_inner() + ")");
    }
    return {inner, rest};
  }

  bool takes(const std::string& inner) const {
    for (const MethodInfo& m : placer_methods()) {
      if (m.name == (any_inner ? inner : alias(inner))) return true;
    }
    return false;
  }

  OptionSpec inner_option(const std::string& value) const {
    return {kInner, "method", value,
            "the method inside (" + std::string(any_inner ? "any method" : known_inner()) +
                "); its options are --set keys too"};
  }

  MethodInfo info() const {
    MethodInfo m{name, description, false, [this] { return make_placer(alias(default_inner)); }};
    m.options = {inner_option(default_inner)};
    for (const OptionSpec& o : method_info(alias(default_inner)).options) m.options.push_back(o);
    m.make_with = [this](const MethodSettings& s) {
      const auto [inner, rest] = split(s);
      return make_placer(alias(inner), rest);
    };
    m.effective_options = [this](const MethodSettings& s) {
      const auto [inner, rest] = split(s);
      std::vector<OptionSpec> out = {inner_option(inner)};
      const MethodInfo& method = method_info(alias(inner));
      if (method.effective_options) {
        for (const OptionSpec& o : method.effective_options(rest)) out.push_back(o);
      }
      return out;
    };
    return m;
  }
};

const std::vector<Composite>& composites() {
  static const std::vector<Composite> c = {
      {"hybrid", "m-etf",
       "the inner method (--set inner=X, any method, default m-etf; alias X+hybrid) on a "
       "sub-cluster of N / R devices, R data-parallel replicas and M micro-batches through the "
       "placement, the best (R, M) by simulation",
       true},
      {"stages", "gdp",
       "the inner method's placements read as pipeline stages whose replicas and micro-batches "
       "pipeline-dp picks (--set inner=gdp, the one it takes; alias gdp+stages)",
       false}};
  return c;
}

}  // namespace

const std::vector<MethodInfo>& composite_methods() {
  static const std::vector<MethodInfo> methods = [] {
    std::vector<MethodInfo> out;
    for (const Composite& c : composites()) {
      // A composite whose default inner method is not in this build (gdp without LibTorch).
      if (c.takes(c.default_inner)) out.push_back(c.info());
    }
    return out;
  }();
  return methods;
}

const MethodInfo* composite_method_info(const std::string& name) {
  for (const MethodInfo& m : composite_methods()) {
    if (m.name == name) return &m;
  }
  const std::string base = alias_inner(name, "hybrid");
  if (base.empty()) return nullptr;
  const MethodInfo& inner = method_info(base);  // throws for an unknown M
  static std::mutex mutex;
  static std::map<std::string, MethodInfo> hybrids;  // node-based: references stay valid
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = hybrids.find(name);
  if (it == hybrids.end()) it = hybrids.emplace(name, hybrid_alias(name, inner.name)).first;
  return &it->second;
}

}  // namespace placer
