// Text forms of RainbowConfig (agents/common/rainbow_config.h): its option table. Torch-free,
// built with or without LibTorch (the CLI parses options either way).
#include "agents/common/rainbow_config.h"

namespace placer {

const OptionTable<RainbowConfig>& rainbow_config_table() {
  static const OptionTable<RainbowConfig> t = [] {
    using C = RainbowConfig;
    OptionTable<C> v("rainbow agent");
    v.integer_list(
         "hidden", "MLP torso widths", [](auto& c) -> auto& { return c.hidden; })
        .integer(
            "atoms", "C51 atoms", [](auto& c) -> auto& { return c.atoms; })
        .number(
            "v_min", "support lower bound", [](auto& c) -> auto& { return c.v_min; })
        .number(
            "v_max", "support upper bound", [](auto& c) -> auto& { return c.v_max; })
        .flag(
            "noisy", "NoisyLinear layers", [](auto& c) -> auto& { return c.noisy; })
        .number(
            "sigma0", "NoisyLinear initial noise scale", [](auto& c) -> auto& { return c.sigma0; })
        .flag(
            "dueling", "dueling heads", [](auto& c) -> auto& { return c.dueling; })
        .flag(
            "double_q", "double Q-learning", [](auto& c) -> auto& { return c.double_q; })
        .integer(
            "replay_capacity", "replay transitions",
            [](auto& c) -> auto& { return c.replay_capacity; }, 1)
        .number(
            "priority_alpha", "replay priority exponent",
            [](auto& c) -> auto& { return c.priority_alpha; })
        .number(
            "beta_start", "importance-sampling exponent at the start",
            [](auto& c) -> auto& { return c.beta_start; })
        .number(
            "beta_end", "importance-sampling exponent at the end",
            [](auto& c) -> auto& { return c.beta_end; })
        .integer(
            "beta_steps", "learn() updates of the beta annealing",
            [](auto& c) -> auto& { return c.beta_steps; })
        .number(
            "priority_epsilon", "added to every priority",
            [](auto& c) -> auto& { return c.priority_epsilon; })
        .integer(
            "batch_size", "replay batch", [](auto& c) -> auto& { return c.batch_size; })
        .number(
            "lr", "Adam learning rate", [](auto& c) -> auto& { return c.lr; })
        .number(
            "adam_eps", "Adam epsilon", [](auto& c) -> auto& { return c.adam_eps; })
        .number(
            "gamma", "discount", [](auto& c) -> auto& { return c.gamma; })
        .integer(
            "n_step", "multi-step return length", [](auto& c) -> auto& { return c.n_step; })
        .integer(
            "target_update", "learn() updates between target syncs",
            [](auto& c) -> auto& { return c.target_update; })
        .number(
            "epsilon_start", "epsilon-greedy start",
            [](auto& c) -> auto& { return c.epsilon_start; })
        .number(
            "epsilon_end", "epsilon-greedy end", [](auto& c) -> auto& { return c.epsilon_end; })
        .integer(
            "epsilon_decay_steps", "observe() steps of the epsilon decay",
            [](auto& c) -> auto& { return c.epsilon_decay_steps; })
        .integer(
            "learn_start", "transitions before learning",
            [](auto& c) -> auto& { return c.learn_start; })
        .number(
            "grad_clip", "max gradient L2 norm (<= 0: none)",
            [](auto& c) -> auto& { return c.grad_clip; })
        .integer(
            "seed", "seeds init, replay sampling, epsilon and noise",
            [](auto& c) -> auto& { return c.seed; }, 0);
    return v;
  }();
  return t;
}

const std::vector<std::string>& rainbow_option_names() {
  static const std::vector<std::string> names = rainbow_config_table().keys();
  return names;
}

void set_rainbow_option(RainbowConfig* config, const std::string& key, const std::string& value,
                        const std::string& flag) {
  rainbow_config_table().set(config, key, value, flag);
}

void apply_rainbow_overrides(RainbowConfig* config, const std::vector<std::string>& key_values) {
  rainbow_config_table().apply(config, key_values, "--set");
}

void rainbow_config_from_yaml(const std::string& yaml_text, RainbowConfig* config,
                              const std::string& where) {
  rainbow_config_table().apply_yaml(config, yaml_text, where);
}

std::string rainbow_config_to_yaml(const RainbowConfig& config) {
  return rainbow_config_table().to_yaml(config);
}

}  // namespace placer
