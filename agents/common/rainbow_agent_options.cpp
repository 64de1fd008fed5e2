// Text forms of RainbowConfig (agents/common/rainbow_config.h): its option table. Torch-free,
// built with or without LibTorch (the CLI parses options either way).
#include "agents/common/option_fields.h"
#include "agents/common/rainbow_config.h"

namespace placer {

const OptionTable<RainbowConfig>& rainbow_config_table() {
  static const OptionTable<RainbowConfig> t = [] {
    using C = RainbowConfig;
    OptionTable<C> v("rainbow agent");
    add_fields(&v, R"(
      hidden    MLP torso widths
      atoms     C51 atoms
      v_min     support lower bound
      v_max     support upper bound
      noisy     NoisyLinear layers
      sigma0    NoisyLinear initial noise scale
      dueling   dueling heads
      double_q  double Q-learning)",
               &C::hidden, &C::atoms, &C::v_min, &C::v_max, &C::noisy, &C::sigma0, &C::dueling,
               &C::double_q)
        .integer(
            "replay_capacity", "replay transitions",
            [](auto& c) -> auto& { return c.replay_capacity; }, 1);
    add_fields(&v, R"(
      priority_alpha       replay priority exponent
      beta_start           importance-sampling exponent at the start
      beta_end             importance-sampling exponent at the end
      beta_steps           learn() updates of the beta annealing
      priority_epsilon     added to every priority
      batch_size           replay batch
      lr                   Adam learning rate
      adam_eps             Adam epsilon
      gamma                discount
      n_step               multi-step return length
      target_update        learn() updates between target syncs
      epsilon_start        epsilon-greedy start
      epsilon_end          epsilon-greedy end
      epsilon_decay_steps  observe() steps of the epsilon decay
      learn_start          transitions before learning
      grad_clip            max gradient L2 norm (<= 0: none))",
               &C::priority_alpha, &C::beta_start, &C::beta_end, &C::beta_steps,
               &C::priority_epsilon, &C::batch_size, &C::lr, &C::adam_eps, &C::gamma, &C::n_step,
               &C::target_update, &C::epsilon_start, &C::epsilon_end, &C::epsilon_decay_steps,
               &C::learn_start, &C::grad_clip)
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
