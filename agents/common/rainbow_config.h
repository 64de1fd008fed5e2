#pragma once
// Options of the Rainbow DQN agent (agents/common/rainbow_agent.h) and their text forms,
// through its option table (agents/common/option_table.h): one option from "key=value" (CLI
// `--set`, `train-policy --set`), a YAML mapping, and back to YAML. Torch-free; the implementation
// (agents/common/rainbow_agent_options.cpp) is built with or without LibTorch. See docs/rainbow.md.

#include <cstdint>
#include <string>
#include <vector>

#include "agents/common/option_table.h"

namespace placer {

/// Every option of RainbowAgent. Defaults: Auto-MAP where the paper gives one (replay 2000,
/// target sync 100, batch 64, Adam lr 1e-3, epsilon 1.0 -> 0.1, noise off), else Rainbow.
struct RainbowConfig {
  std::vector<int64_t> hidden{128, 128};  ///< MLP torso widths
  int64_t atoms = 51;                     ///< C51 atoms (Rainbow)
  double v_min = -10.0;                   ///< support lower bound (Rainbow)
  double v_max = 10.0;                    ///< support upper bound (Rainbow)
  bool noisy = false;                     ///< NoisyLinear layers (Auto-MAP: off, epsilon-greedy)
  double sigma0 = 0.5;                    ///< NoisyLinear initial noise scale (Rainbow)
  bool dueling = true;                    ///< dueling heads (Rainbow)
  bool double_q = true;                   ///< online net picks the next action, target net rates it
  std::size_t replay_capacity = 2000;     ///< Auto-MAP
  double priority_alpha = 0.6;            ///< Schaul et al. / Rainbow used 0.5
  double beta_start = 0.4;                ///< importance-sampling exponent, annealed ...
  double beta_end = 1.0;                  ///< ... to this
  int64_t beta_steps = 10000;             ///< ... over this many learn() updates
  double priority_epsilon = 1e-6;         ///< added to every priority
  int64_t batch_size = 64;                ///< Auto-MAP
  double lr = 1e-3;                       ///< Adam learning rate (Auto-MAP, pipelines)
  double adam_eps = 1.5e-4;               ///< Adam epsilon (Rainbow)
  double gamma = 0.99;                    ///< discount
  int n_step = 3;                         ///< multi-step return length (Rainbow)
  int64_t target_update = 100;            ///< learn() updates between target syncs (Auto-MAP)
  double epsilon_start = 1.0;             ///< epsilon-greedy start (Auto-MAP), noise off only
  double epsilon_end = 0.1;               ///< ... end (Auto-MAP)
  int64_t epsilon_decay_steps = 10000;    ///< observe() steps of the linear decay (per task)
  int64_t learn_start = 0;  ///< learn() waits for max(batch_size, learn_start) transitions
  double grad_clip = 10.0;  ///< max gradient L2 norm (<= 0: no clipping)
  uint64_t seed = 0;        ///< seeds torch init, replay sampling, epsilon and noise
};

/// Empty when `config` is usable, else why not (e.g. "n_step must be >= 1, got 0").
std::string validate_rainbow_config(const RainbowConfig& config);

/// The agent's option table (owner "rainbow agent"; seed >= 0, replay_capacity >= 1).
const OptionTable<RainbowConfig>& rainbow_config_table();

/// The option names accepted by set_rainbow_option, in declaration order.
const std::vector<std::string>& rainbow_option_names();

/// Sets one option from text: `key` is a RainbowConfig field name; `value` is a number, a
/// bool (kBoolSpellings) or, for hidden, "[128, 128]" / "128,128". ValidationError
/// "<flag> key (rainbow agent): ..." on an unknown key (listing the known ones) or a bad
/// value. The config as a whole is not re-validated (call validate_rainbow_config).
void set_rainbow_option(RainbowConfig* config, const std::string& key, const std::string& value,
                        const std::string& flag = "--set");

/// Applies "key=value" strings in order (ValidationError on a missing '=').
void apply_rainbow_overrides(RainbowConfig* config, const std::vector<std::string>& key_values);

/// Reads the options of a YAML mapping (e.g. the `rainbow:` section of a config file);
/// absent keys keep their values. `where` names the source in errors. FormatError on bad
/// YAML or a non-mapping, ValidationError on unknown keys / bad values.
void rainbow_config_from_yaml(const std::string& yaml_text, RainbowConfig* config,
                              const std::string& where = "rainbow config");

/// Every option as a YAML mapping (round-trips through rainbow_config_from_yaml).
std::string rainbow_config_to_yaml(const RainbowConfig& config);

}  // namespace placer
