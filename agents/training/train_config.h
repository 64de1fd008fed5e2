#pragma once
// The configuration file of `placer train-policy` (train.yaml) and its command-line
// overrides, read into placer::TrainConfig (agents/gdp/gdp.h), and the effective configuration
// written back as YAML. docs/gdp.md lists the keys.
//
// Keys are TrainConfig's field names; the network sizes sit under `net:` (GdpNetConfig),
// the PPO options under `ppo:` (PpoConfig) and the shard count and timeout under `dist:`
// (`dist.shards`, `dist.timeout` = GdpDistConfig::timeout_seconds; the rest of the distributed
// setup is command-line flags). Every key is optional (defaults: gdp.h) except
// that training needs `corpus` and `clusters`. Input paths (corpus, clusters, profile,
// init_policy) are relative to the config file's folder; output_dir is relative to the
// current directory, like every output path of placer. All paths come out absolute.
// TrainConfig::command is provenance, not configuration: it is no key (the command sets it).
//
// The parsers (parse_*, the writers, the key lists: train_config.cpp) are torch-free and link
// without the placers (library placer_train_configs, which the reader fuzz harness links);
// the load_* / apply_* wrappers (train_config_files.cpp) add the method registry and
// rainbow-pp's checks across keys.

#include <string>
#include <vector>

#include "agents/gdp/gdp.h"
#include "agents/rainbow/rainbow_pp_policy.h"

namespace placer {

/// The `agent:` value of any train-policy config file: "gdp", "rainbow-pp", "placeto"
/// (placeto_train_config.h), or "" when absent. FileError / FormatError (an unknown agent,
/// with a suggestion).
std::string train_config_file_agent(const std::string& path);

/// Reads `path` on top of the defaults. FileError: unreadable. FormatError
/// "<path>: <key>: ...": malformed YAML, an unknown key (with a "did you mean" suggestion),
/// a value of the wrong type or out of range, an unknown method or optimizer name.
TrainConfig load_train_config(const std::string& path);

/// The parser behind load_train_config (torch-free, without the method registry: `methods` are
/// the names reference_methods and eval_baselines may take): `text` read as the file `file`,
/// relative input paths taken from its folder. Errors as load_train_config's.
TrainConfig parse_train_config(const std::string& text, const std::string& file,
                               const std::vector<std::string>& methods);

/// apply_train_override with the method names given (as parse_train_config).
void apply_train_override(TrainConfig* config, const std::string& assignment,
                          const std::vector<std::string>& methods);

/// Applies one override "key=value" (`--set`): the key as in the YAML, dotted for the nested
/// sections ("net.hidden=32", "ppo.lr=3e-4"), the value parsed as YAML ("[2, 4]" is a list;
/// a single value is accepted for a list key). Relative paths are taken from the current
/// directory. Errors are those of load_train_config, naming "--set" as the file.
void apply_train_override(TrainConfig* config, const std::string& assignment);

/// Every key, dotted ("corpus", ..., "net.hidden", ..., "ppo.lr", ...), in file order.
std::vector<std::string> train_config_keys();

/// The configuration as YAML (every key, `header` as leading comment lines), such that
/// load_train_config of the text gives back an equal TrainConfig (command aside).
std::string train_config_yaml(const TrainConfig& config, const std::string& header);

/// Field-by-field equality (command aside); train-policy checks its config.yaml with it.
bool same_train_config(const TrainConfig& a, const TrainConfig& b);

// --- rainbow-pp (`train-policy --agent rainbow-pp`; docs/rainbow_pp_inference.md) -----------
// Keys are RainbowPPTrainConfig's field names; the agent's options sit under `rainbow:`
// (RainbowConfig, rainbow_config_from_yaml). An optional `agent: rainbow-pp` names the agent.
// Input paths (eval_graphs, eval_cluster) are relative to the config file's folder.


/// Reads `path` on top of the defaults. FileError / FormatError "<path>: <key>: ..." /
/// ValidationError (bad rainbow option values).
RainbowPPTrainConfig load_rainbow_pp_train_config(const std::string& path);

/// The parser behind load_rainbow_pp_train_config: every key read and range-checked, without
/// the checks across keys (validate_rainbow_pp_train_config, which needs the agent's code).
RainbowPPTrainConfig parse_rainbow_pp_train_config(const std::string& text,
                                                   const std::string& file);

/// One override as apply_rainbow_pp_override, without the checks across keys.
void apply_rainbow_pp_key(RainbowPPTrainConfig* config, const std::string& assignment);

/// One override "key=value": a top-level key, or "rainbow.<option>".
void apply_rainbow_pp_override(RainbowPPTrainConfig* config, const std::string& assignment);

/// Every key as YAML (reads back to an equal config, command aside).
std::string rainbow_pp_train_config_yaml(const RainbowPPTrainConfig& config,
                                         const std::string& header);

/// Equality of every key (command aside).
bool same_rainbow_pp_train_config(const RainbowPPTrainConfig& a, const RainbowPPTrainConfig& b);

}  // namespace placer
