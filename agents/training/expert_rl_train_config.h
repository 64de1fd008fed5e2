#pragma once
// The configuration of `placer train-policy --agent expert-rl` (models/pretrained/
// expert_rl.train.yaml is one) and its `--set KEY=VALUE` overrides; the effective
// configuration written back as YAML (the run's config.yaml). docs/expert_placement.md lists
// the keys. Torch-free.
//
// The corpus is every shape of ranks x experts x top_k (ranks_per_node GPUs per node,
// redundant_per_rank redundant copies per rank) with `distributions` train-split and
// `validation_distributions` validation-split routing distributions of 4 layers each
// (datasets/routing_gen.h routing_corpus, seeded by `seed`).

#include <string>
#include <vector>

#include "agents/experts/expert_rl.h"

namespace placer {

struct ExpertRlTrainConfig {
  ExpertRlTrainOptions train;
  std::vector<int> ranks{16}, experts{64}, top_k{8};
  int ranks_per_node = 8;
  int redundant_per_rank = 1;
  int distributions = 48;            ///< train split, per shape
  int validation_distributions = 0;  ///< validation split, per shape (0: no validation)
  std::string init_policy;           ///< start from this policy's parameters ("" = seeded init)
  std::string baseline_policy;       ///< compared on the validation layers at the end
  std::string output_dir = "runs/expert_rl";
  ExpertRlTrainConfig() { train.updates = 3000; }
};

/// Reads `path` on top of the defaults. FileError: unreadable; FormatError "<path>: <key>:
/// ...": malformed YAML, an unknown key (with a suggestion), a value of the wrong type or
/// out of range, a shape whose slots do not divide over its ranks.
ExpertRlTrainConfig load_expert_rl_train_config(const std::string& path);
/// The parser behind it: `text` read as the file `file`.
ExpertRlTrainConfig parse_expert_rl_train_config(const std::string& text, const std::string& file);
/// One override "key=value" (errors name "--set").
void apply_expert_rl_override(ExpertRlTrainConfig* c, const std::string& assignment);
/// The configuration as YAML (`header` as leading comment lines); reads back equal.
std::string expert_rl_train_config_yaml(const ExpertRlTrainConfig& c, const std::string& header);
bool same_expert_rl_train_config(const ExpertRlTrainConfig& a, const ExpertRlTrainConfig& b);

}  // namespace placer
