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
    o->max_ops = parse_int(key, v);
    if (o->max_ops < 1) throw ValidationError("autosync option 'max_ops': must be >= 1");
  } else if (key == "graphs") {
    o->graphs = int(parse_int(key, v));
    if (o->graphs < 0) throw ValidationError("autosync option 'graphs': must be >= 0");
  } else if (key == "units") {
    o->units = int(parse_int(key, v));
    if (o->units < 1) throw ValidationError("autosync option 'units': must be >= 1");
  } else if (key == "learn_every") {
    o->learn_every = int(parse_int(key, v));
    if (o->learn_every < 1) throw ValidationError("autosync option 'learn_every': must be >= 1");
  } else if (key == "demo_every") {
    o->demo_every = int(parse_int(key, v));
    if (o->demo_every < 0) throw ValidationError("autosync option 'demo_every': must be >= 0");
  } else if (key == "allow_compression") {
    o->allow_compression = parse_bool(key, v);
  } else if (key == "max_staleness") {
    o->max_staleness = int(parse_int(key, v));
    if (o->max_staleness < 0) {
      throw ValidationError("autosync option 'max_staleness': must be >= 0");
    }
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
