// Text forms of RainbowConfig (agents/rainbow/rainbow_config.h). Torch-free, built with or without
// LibTorch (the CLI parses options either way).
#include "agents/rainbow/rainbow_config.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "src/util/error.h"

namespace placer {
namespace {

[[noreturn]] void bad(const std::string& key, const std::string& why) {
  throw ValidationError("rainbow option '" + key + "': " + why);
}

double to_double(const std::string& key, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || errno != 0) bad(key, "expected a number, got '" + v + "'");
  return x;
}

int64_t to_int(const std::string& key, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || end != v.c_str() + v.size() || errno != 0) {
    bad(key, "expected an integer, got '" + v + "'");
  }
  return static_cast<int64_t>(x);
}

bool to_bool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  bad(key, "expected true or false, got '" + v + "'");
}

std::vector<int64_t> to_ints(const std::string& key, std::string v) {
  for (char& ch : v) {
    if (ch == '[' || ch == ']' || ch == ',') ch = ' ';
  }
  std::istringstream in(v);
  std::vector<int64_t> out;
  std::string tok;
  while (in >> tok) out.push_back(to_int(key, tok));
  if (out.empty()) bad(key, "expected a list of layer widths such as [128, 128]");
  return out;
}

struct Field {
  std::string name;
  std::function<void(RainbowConfig*, const std::string&)> set;
  std::function<std::string(const RainbowConfig&)> get;
};

std::string num(double x) {
  std::ostringstream s;
  s.precision(17);
  s << x;
  return s.str();
}

const std::vector<Field>& fields() {
  static const std::vector<Field> f = [] {
    std::vector<Field> v;
    auto dbl = [&v](const char* n, double RainbowConfig::*m) {
      v.push_back({n, [m, n](RainbowConfig* c, const std::string& s) { c->*m = to_double(n, s); },
                   [m](const RainbowConfig& c) { return num(c.*m); }});
    };
    auto i64 = [&v](const char* n, int64_t RainbowConfig::*m) {
      v.push_back({n, [m, n](RainbowConfig* c, const std::string& s) { c->*m = to_int(n, s); },
                   [m](const RainbowConfig& c) { return std::to_string(c.*m); }});
    };
    auto bln = [&v](const char* n, bool RainbowConfig::*m) {
      v.push_back({n, [m, n](RainbowConfig* c, const std::string& s) { c->*m = to_bool(n, s); },
                   [m](const RainbowConfig& c) { return std::string(c.*m ? "true" : "false"); }});
    };
    v.push_back({"hidden",
                 [](RainbowConfig* c, const std::string& s) { c->hidden = to_ints("hidden", s); },
                 [](const RainbowConfig& c) {
                   std::string s = "[";
                   for (size_t i = 0; i < c.hidden.size(); ++i) {
                     s += (i ? ", " : "") + std::to_string(c.hidden[i]);
                   }
                   return s + "]";
                 }});
    i64("atoms", &RainbowConfig::atoms);
    dbl("v_min", &RainbowConfig::v_min);
    dbl("v_max", &RainbowConfig::v_max);
    bln("noisy", &RainbowConfig::noisy);
    dbl("sigma0", &RainbowConfig::sigma0);
    bln("dueling", &RainbowConfig::dueling);
    bln("double_q", &RainbowConfig::double_q);
    v.push_back({"replay_capacity",
                 [](RainbowConfig* c, const std::string& s) {
                   const int64_t x = to_int("replay_capacity", s);
                   if (x <= 0) bad("replay_capacity", "must be positive, got " + s);
                   c->replay_capacity = static_cast<std::size_t>(x);
                 },
                 [](const RainbowConfig& c) { return std::to_string(c.replay_capacity); }});
    dbl("priority_alpha", &RainbowConfig::priority_alpha);
    dbl("beta_start", &RainbowConfig::beta_start);
    dbl("beta_end", &RainbowConfig::beta_end);
    i64("beta_steps", &RainbowConfig::beta_steps);
    dbl("priority_epsilon", &RainbowConfig::priority_epsilon);
    i64("batch_size", &RainbowConfig::batch_size);
    dbl("lr", &RainbowConfig::lr);
    dbl("adam_eps", &RainbowConfig::adam_eps);
    dbl("gamma", &RainbowConfig::gamma);
    v.push_back({"n_step",
                 [](RainbowConfig* c, const std::string& s) {
                   c->n_step = static_cast<int>(to_int("n_step", s));
                 },
                 [](const RainbowConfig& c) { return std::to_string(c.n_step); }});
    i64("target_update", &RainbowConfig::target_update);
    dbl("epsilon_start", &RainbowConfig::epsilon_start);
    dbl("epsilon_end", &RainbowConfig::epsilon_end);
    i64("epsilon_decay_steps", &RainbowConfig::epsilon_decay_steps);
    i64("learn_start", &RainbowConfig::learn_start);
    dbl("grad_clip", &RainbowConfig::grad_clip);
    v.push_back({"seed",
                 [](RainbowConfig* c, const std::string& s) {
                   const int64_t x = to_int("seed", s);
                   if (x < 0) bad("seed", "must be >= 0, got " + s);
                   c->seed = static_cast<uint64_t>(x);
                 },
                 [](const RainbowConfig& c) { return std::to_string(c.seed); }});
    return v;
  }();
  return f;
}

}  // namespace

const std::vector<std::string>& rainbow_option_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Field& f : fields()) n.push_back(f.name);
    return n;
  }();
  return names;
}

void set_rainbow_option(RainbowConfig* config, const std::string& key, const std::string& value) {
  for (const Field& f : fields()) {
    if (f.name == key) {
      f.set(config, value);
      return;
    }
  }
  std::string known;
  for (const Field& f : fields()) known += (known.empty() ? "" : ", ") + f.name;
  bad(key, "unknown option (known: " + known + ")");
}

void apply_rainbow_overrides(RainbowConfig* config, const std::vector<std::string>& key_values) {
  for (const std::string& kv : key_values) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ValidationError("rainbow option '" + kv + "': expected key=value");
    }
    set_rainbow_option(config, kv.substr(0, eq), kv.substr(eq + 1));
  }
}

void rainbow_config_from_yaml(const std::string& yaml_text, RainbowConfig* config,
                              const std::string& where) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw FormatError(where + ": " + e.what());
  }
  if (root.IsNull()) return;
  if (!root.IsMap()) throw FormatError(where + ": expected a mapping of rainbow options");
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    std::string value;
    if (kv.second.IsSequence()) {
      for (const auto& x : kv.second) value += (value.empty() ? "" : ",") + x.as<std::string>();
    } else if (kv.second.IsScalar()) {
      value = kv.second.as<std::string>();
    } else {
      throw ValidationError(where + ": rainbow option '" + key + "': expected a value");
    }
    try {
      set_rainbow_option(config, key, value);
    } catch (const ValidationError& e) {
      throw ValidationError(where + ": " + e.what());
    }
  }
}

std::string rainbow_config_to_yaml(const RainbowConfig& config) {
  std::string out;
  for (const Field& f : fields()) out += f.name + ": " + f.get(config) + "\n";
  return out;
}

}  // namespace placer
