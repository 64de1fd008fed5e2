// `--agent-set` parsing for the Rainbow placers (src/cli/rainbow_cli.h).
#include "src/cli/rainbow_cli.h"

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <map>
#include <utility>

#include "agents/rainbow_config.h"
#include "src/util/error.h"

namespace placer::cli {
namespace {

[[noreturn]] void bad(const std::string& method, const std::string& key, const std::string& why) {
  throw ValidationError("--agent-set " + key + " (" + method + "): " + why);
}

double num(const std::string& m, const std::string& k, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || errno != 0) bad(m, k, "expected a number, got '" + v + "'");
  return x;
}

int integer(const std::string& m, const std::string& k, const std::string& v) {
  const double x = num(m, k, v);
  if (x != static_cast<double>(static_cast<int>(x))) bad(m, k, "expected an integer, got '" + v + "'");
  return static_cast<int>(x);
}

bool boolean(const std::string& m, const std::string& k, const std::string& v) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  bad(m, k, "expected true or false, got '" + v + "'");
}

std::pair<std::string, std::string> split_kv(const std::string& kv) {
  const size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ValidationError("--agent-set '" + kv + "': expected KEY=VALUE");
  }
  return {kv.substr(0, eq), kv.substr(eq + 1)};
}

template <class O>
using Setters = std::map<std::string, std::function<void(O*, const std::string&)>>;

const Setters<RainbowPPOptions>& pp_setters() {
  static const Setters<RainbowPPOptions> s = [] {
    const std::string m = "rainbow-pp";
    Setters<RainbowPPOptions> v;
    v["stages"] = [m](RainbowPPOptions* o, const std::string& x) { o->stages = integer(m, "stages", x); };
    v["micro_batches"] = [m](RainbowPPOptions* o, const std::string& x) {
      o->micro_batches = integer(m, "micro_batches", x);
    };
    v["episodes"] = [m](RainbowPPOptions* o, const std::string& x) { o->episodes = integer(m, "episodes", x); };
    v["prune"] = [m](RainbowPPOptions* o, const std::string& x) { o->prune = boolean(m, "prune", x); };
    v["scope_depth"] = [m](RainbowPPOptions* o, const std::string& x) {
      o->scope_depth = integer(m, "scope_depth", x);
    };
    v["prune_radius"] = [m](RainbowPPOptions* o, const std::string& x) {
      o->prune_radius = integer(m, "prune_radius", x);
    };
    v["epsilon_decay_fraction"] = [m](RainbowPPOptions* o, const std::string& x) {
      o->epsilon_decay_fraction = num(m, "epsilon_decay_fraction", x);
    };
    v["search_layout"] = [m](RainbowPPOptions* o, const std::string& x) {
      o->search_layout = boolean(m, "search_layout", x);
    };
    v["layout_rounds"] = [m](RainbowPPOptions* o, const std::string& x) {
      o->layout_rounds = integer(m, "layout_rounds", x);
    };
    v["layout_top"] = [m](RainbowPPOptions* o, const std::string& x) {
      o->layout_top = integer(m, "layout_top", x);
    };
    v["batch_size"] = [m](RainbowPPOptions* o, const std::string& x) {
      o->batch_size = integer(m, "batch_size", x);
    };
    v["replay_capacity"] = [m](RainbowPPOptions* o, const std::string& x) {
      o->replay_capacity = integer(m, "replay_capacity", x);
    };
    v["target_update"] = [m](RainbowPPOptions* o, const std::string& x) {
      o->target_update = integer(m, "target_update", x);
    };
    v["lr"] = [m](RainbowPPOptions* o, const std::string& x) { o->lr = num(m, "lr", x); };
    v["hidden"] = [](RainbowPPOptions* o, const std::string& x) {
      RainbowConfig c;
      set_rainbow_option(&c, "hidden", x);
      o->hidden = c.hidden;
    };
    return v;
  }();
  return s;
}

const Setters<RainbowOppOptions>& opp_setters() {
  static const Setters<RainbowOppOptions> s = [] {
    const std::string m = "rainbow-opp/adp";
    Setters<RainbowOppOptions> v;
    v["degree"] = [m](RainbowOppOptions* o, const std::string& x) { o->env.degree = integer(m, "degree", x); };
    v["reward"] = [m](RainbowOppOptions* o, const std::string& x) {
      if (!parse_opp_reward(x, &o->env.reward)) bad(m, "reward", "expected simulator or paper, got '" + x + "'");
    };
    v["linkage"] = [m](RainbowOppOptions* o, const std::string& x) { o->env.linkage = boolean(m, "linkage", x); };
    v["episodes"] = [m](RainbowOppOptions* o, const std::string& x) { o->episodes = integer(m, "episodes", x); };
    v["greedy_prefix"] = [m](RainbowOppOptions* o, const std::string& x) {
      o->greedy_prefix = boolean(m, "greedy_prefix", x);
    };
    v["auto_support"] = [m](RainbowOppOptions* o, const std::string& x) {
      o->auto_support = boolean(m, "auto_support", x);
    };
    v["partition_reward"] = [m](RainbowOppOptions* o, const std::string& x) {
      o->env.partition_reward = num(m, "partition_reward", x);
    };
    v["replicate_reward"] = [m](RainbowOppOptions* o, const std::string& x) {
      o->env.replicate_reward = num(m, "replicate_reward", x);
    };
    v["conflict_reward"] = [m](RainbowOppOptions* o, const std::string& x) {
      o->env.conflict_reward = num(m, "conflict_reward", x);
    };
    v["oom_penalty"] = [m](RainbowOppOptions* o, const std::string& x) {
      o->env.oom_penalty = num(m, "oom_penalty", x);
    };
    return v;
  }();
  return s;
}

/// The keys colocrl and hdp share (O = ColocrlOptions or HdpOptions).
template <class O>
void add_seq2seq_setters(Setters<O>* v, const std::string& m) {
  Setters<O>& s = *v;
  s["samples"] = [m](O* o, const std::string& x) { o->rl.samples = integer(m, "samples", x); };
  s["lr"] = [m](O* o, const std::string& x) { o->rl.lr = num(m, "lr", x); };
  s["lr_decay"] = [m](O* o, const std::string& x) { o->rl.lr_decay = num(m, "lr_decay", x); };
  s["lr_decay_start"] = [m](O* o, const std::string& x) {
    o->rl.lr_decay_start = integer(m, "lr_decay_start", x);
  };
  s["lr_decay_every"] = [m](O* o, const std::string& x) {
    o->rl.lr_decay_every = integer(m, "lr_decay_every", x);
  };
  s["baseline_decay"] = [m](O* o, const std::string& x) {
    o->rl.baseline_decay = num(m, "baseline_decay", x);
  };
  s["entropy"] = [m](O* o, const std::string& x) { o->rl.entropy = num(m, "entropy", x); };
  s["max_grad_norm"] = [m](O* o, const std::string& x) {
    o->rl.max_grad_norm = num(m, "max_grad_norm", x);
  };
  s["failing_runtime"] = [m](O* o, const std::string& x) {
    o->rl.failing_runtime = num(m, "failing_runtime", x);
  };
  s["logits_noise"] = [m](O* o, const std::string& x) {
    o->rl.logits_noise = num(m, "logits_noise", x);
  };
  s["noise_updates"] = [m](O* o, const std::string& x) {
    o->rl.noise_updates = integer(m, "noise_updates", x);
  };
  s["threads"] = [m](O* o, const std::string& x) { o->rl.threads = integer(m, "threads", x); };
  s["hidden"] = [m](O* o, const std::string& x) { o->net.hidden = integer(m, "hidden", x); };
  s["device_embedding"] = [m](O* o, const std::string& x) {
    o->net.device_embedding = integer(m, "device_embedding", x);
  };
  s["attention"] = [](O* o, const std::string& x) { o->net.attention = x; };
  s["bidirectional"] = [m](O* o, const std::string& x) {
    o->net.bidirectional = boolean(m, "bidirectional", x);
  };
  s["tanh_constant"] = [m](O* o, const std::string& x) {
    o->net.tanh_constant = num(m, "tanh_constant", x);
  };
  s["temperature"] = [m](O* o, const std::string& x) {
    o->net.temperature = num(m, "temperature", x);
  };
  s["adjacency_width"] = [m](O* o, const std::string& x) {
    o->adjacency_width = integer(m, "adjacency_width", x);
  };
  s["colocate"] = [m](O* o, const std::string& x) { o->colocate = boolean(m, "colocate", x); };
  s["save_policy"] = [m](O* o, const std::string& x) {
    if (x.empty()) bad(m, "save_policy", "expected a file path");
    o->save_policy = x;
  };
  s["policy"] = [m](O* o, const std::string& x) {
    if (x.empty()) bad(m, "policy", "expected a file path");
    o->policy = x;
  };
}

const Setters<ColocrlOptions>& colocrl_setters() {
  static const Setters<ColocrlOptions> s = [] {
    const std::string m = "colocrl";
    Setters<ColocrlOptions> v;
    add_seq2seq_setters(&v, m);
    v["max_steps"] = [m](ColocrlOptions* o, const std::string& x) {
      o->max_steps = integer(m, "max_steps", x);
    };
    return v;
  }();
  return s;
}

const Setters<HdpOptions>& hdp_setters() {
  static const Setters<HdpOptions> s = [] {
    const std::string m = "hdp";
    Setters<HdpOptions> v;
    add_seq2seq_setters(&v, m);
    v["groups"] = [m](HdpOptions* o, const std::string& x) { o->groups = integer(m, "groups", x); };
    v["grouper_hidden"] = [m](HdpOptions* o, const std::string& x) {
      o->grouper_hidden = integer(m, "grouper_hidden", x);
    };
    v["grouper_activation"] = [](HdpOptions* o, const std::string& x) {
      o->grouper_activation = x;
    };
    return v;
  }();
  return s;
}

template <class O>
void apply_setters(const Setters<O>& setters, const std::string& method, const std::string& known,
                   O* o, const std::vector<std::string>& key_values) {
  for (const std::string& kv : key_values) {
    const auto [k, v] = split_kv(kv);
    const auto it = setters.find(k);
    if (it == setters.end()) bad(method, k, "unknown option (known: " + known + ")");
    it->second(o, v);
  }
}

template <class O>
std::string names(const Setters<O>& s) {
  std::string out;
  for (const auto& kv : s) out += (out.empty() ? "" : ", ") + kv.first;
  return out;
}

}  // namespace

std::string rainbow_pp_option_names() { return names(pp_setters()); }

std::string rainbow_opp_option_names() {
  std::string out = names(opp_setters());
  for (const std::string& n : rainbow_option_names()) {
    if (n != "seed") out += ", " + n;
  }
  return out;
}

std::string colocrl_option_names() { return names(colocrl_setters()); }
std::string hdp_option_names() { return names(hdp_setters()); }

void apply_colocrl_overrides(ColocrlOptions* o, const std::vector<std::string>& key_values) {
  apply_setters(colocrl_setters(), "colocrl", colocrl_option_names(), o, key_values);
}

void apply_hdp_overrides(HdpOptions* o, const std::vector<std::string>& key_values) {
  apply_setters(hdp_setters(), "hdp", hdp_option_names(), o, key_values);
}

void apply_rainbow_pp_overrides(RainbowPPOptions* o, const std::vector<std::string>& key_values) {
  for (const std::string& kv : key_values) {
    const auto [k, v] = split_kv(kv);
    const auto it = pp_setters().find(k);
    if (it == pp_setters().end()) {
      bad("rainbow-pp", k, "unknown option (known: " + rainbow_pp_option_names() + ")");
    }
    it->second(o, v);
  }
}

void apply_rainbow_opp_overrides(RainbowOppOptions* o, const std::vector<std::string>& key_values) {
  for (const std::string& kv : key_values) {
    const auto [k, v] = split_kv(kv);
    const auto it = opp_setters().find(k);
    if (it != opp_setters().end()) {
      it->second(o, v);
      continue;
    }
    if (k == "seed") bad("rainbow-opp/adp", k, "the agent's seed is --seed");
    bool known = false;
    for (const std::string& n : rainbow_option_names()) known = known || n == k;
    if (!known) bad("rainbow-opp/adp", k, "unknown option (known: " + rainbow_opp_option_names() + ")");
    set_rainbow_option(&o->agent, k, v);
    // An explicit support overrides the automatic one.
    if (k == "v_min" || k == "v_max") o->auto_support = false;
  }
}

}  // namespace placer::cli
