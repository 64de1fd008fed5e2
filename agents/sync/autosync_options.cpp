// Options of the learned `autosync` search and its pretraining (agents/sync/autosync_rl.h);
// torch-free, so the CLI parses them with or without LibTorch.
#include <string>

#include "agents/sync/autosync_rl.h"

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

const OptionTable<AutosyncOptions>& autosync_option_table() {
  static const OptionTable<AutosyncOptions> t = [] {
    OptionTable<AutosyncOptions> v("autosync");
    v.add(
         "policy", "path",
         "a pretrained policy (`placer train-policy --agent autosync`) placed zero-shot; none: "
         "the agent learns online",
         [](AutosyncOptions* o, const std::string& x) { o->policy = x; },
         [](const AutosyncOptions& o) { return o.policy; })
        .integer(
            "episodes", "training episodes (0 = as the budget allows online, none with a policy)",
            [](auto& o) -> auto& { return o.episodes; }, 0)
        .number(
            "polish", "share of the simulation budget for the coordinate polish",
            [](auto& o) -> auto& { return o.polish; })
        .integer(
            "units", "variables decided one by one", [](auto& o) -> auto& { return o.units; }, 1)
        .integer(
            "learn_every", "agent steps between learn() updates",
            [](auto& o) -> auto& { return o.learn_every; }, 1)
        .integer(
            "demo_every", "every N-th episode replays the best builder's plan (0 = none)",
            [](auto& o) -> auto& { return o.demo_every; }, 0);
    return v;
  }();
  return t;
}

const OptionTable<AutosyncTrainOptions>& autosync_train_option_table() {
  static const OptionTable<AutosyncTrainOptions> t = [] {
    OptionTable<AutosyncTrainOptions> v("autosync");
    v.choice("split", {"train", "val", "test"}, "corpus split to train on",
             [](auto& o) -> auto& { return o.split; })
        .integer("max_ops", "skip graphs with more ops (after expansion)",
                 [](auto& o) -> auto& { return o.max_ops; }, 1)
        .integer("graphs", "at most this many graphs (0 = all), seeded choice",
                 [](auto& o) -> auto& { return o.graphs; }, 0)
        .integer("units", "variables decided one by one", [](auto& o) -> auto& { return o.units; },
                 1)
        .integer("learn_every", "agent steps between learn() updates",
                 [](auto& o) -> auto& { return o.learn_every; }, 1)
        .integer("demo_every", "every N-th episode replays the best builder's plan (0 = none)",
                 [](auto& o) -> auto& { return o.demo_every; }, 0)
        .flag("allow_compression", "the lossy actions the policy may learn",
              [](auto& o) -> auto& { return o.allow_compression; })
        .integer("max_staleness", "steps a sync may run late",
                 [](auto& o) -> auto& { return o.max_staleness; }, 0)
        .nest(rainbow_config_table(), [](auto& o) -> auto& { return o.agent; });
    return v;
  }();
  return t;
}

void apply_autosync_train_option(AutosyncTrainOptions* o, const std::string& key_value) {
  autosync_train_option_table().apply(o, {key_value}, "--set");
}

}  // namespace placer
