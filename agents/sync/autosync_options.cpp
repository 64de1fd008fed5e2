// Options of the learned `autosync` search and its pretraining (agents/sync/autosync_rl.h);
// torch-free, so the CLI parses them with or without LibTorch.
#include <string>

#include "agents/sync/autosync_rl.h"
#include "src/util/error.h"

namespace placer {

RainbowConfig autosync_agent_defaults() {
  RainbowConfig c;
  c.hidden = {64, 64};
  c.atoms = 21;
  c.gamma = 1.0;
  c.n_step = 1;
  c.lr = 5e-4;
  c.replay_capacity = 4000;
  c.epsilon_start = 1.0;
  c.epsilon_end = 0.05;
  c.epsilon_decay_steps = 4000;
  c.v_min = -1.2;
  c.v_max = 1.2;
  c.batch_size = 32;
  c.target_update = 50;
  return c;
}

namespace {

long long parse_int(const std::string& key, const std::string& v) {
  try {
    size_t n = 0;
    const long long x = std::stoll(v, &n);
    if (n == v.size()) return x;
  } catch (const std::exception&) {
  }
  throw ValidationError("autosync option '" + key + "': not an integer: '" + v + "'");
}

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  throw ValidationError("autosync option '" + key + "': not a bool (true/false): '" + v + "'");
}

/// *field = the integer `v` (as T), which must be >= `min`.
template <class T>
void set_at_least(T* field, const std::string& key, const std::string& v, T min) {
  *field = T(parse_int(key, v));
  if (*field < min) {
    throw ValidationError("autosync option '" + key + "': must be >= " + std::to_string(min));
  }
}

}  // namespace

void apply_autosync_train_option(AutosyncTrainOptions* o, const std::string& key_value) {
  const size_t eq = key_value.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ValidationError("autosync option '" + key_value + "': expected KEY=VALUE");
  }
  const std::string key = key_value.substr(0, eq), v = key_value.substr(eq + 1);
  if (key == "split") {
    if (v != "train" && v != "val" && v != "test") {
      throw ValidationError("autosync option 'split': train, val or test, got '" + v + "'");
    }
    o->split = v;
  } else if (key == "max_ops") {
    set_at_least(&o->max_ops, key, v, decltype(o->max_ops)(1));
  } else if (key == "graphs") {
    set_at_least(&o->graphs, key, v, 0);
  } else if (key == "units") {
    set_at_least(&o->units, key, v, 1);
  } else if (key == "learn_every") {
    set_at_least(&o->learn_every, key, v, 1);
  } else if (key == "demo_every") {
    set_at_least(&o->demo_every, key, v, 0);
  } else if (key == "allow_compression") {
    o->allow_compression = parse_bool(key, v);
  } else if (key == "max_staleness") {
    set_at_least(&o->max_staleness, key, v, 0);
  } else {
    try {
      set_rainbow_option(&o->agent, key, v);
    } catch (const ValidationError& e) {
      throw ValidationError("autosync option '" + key +
                            "': neither an autosync key (split, max_ops, graphs, units, "
                            "learn_every, demo_every, allow_compression, max_staleness) nor a "
                            "Rainbow "
                            "option: " +
                            e.what());
    }
  }
}

}  // namespace placer
