#pragma once
// The configuration file of `placer train-policy --agent placeto` (examples/train_placeto.yaml)
// and its command-line overrides, read into placer::PlacetoTrainConfig (agents/placeto/placeto.h) plus
// the cluster and cost profile the run trains on; the effective configuration written back as
// YAML. docs/placeto.md lists the keys.
//
// Keys are PlacetoTrainConfig's field names (`agent: placeto` names the agent); the family's
// parameter ranges sit under `ranges:` (NAME: VALUE fixes one, NAME: [LO, HI] draws it
// uniformly) with the preset in `size:` (default / large); the network under `net:`, REINFORCE
// under `rl:`, the MDP under `mdp:`. Input paths (cluster, profile) are relative to the config
// file's folder; output_dir to the current directory. All paths come out absolute.
// `command` is provenance, not configuration: it is no key.

#include <string>
#include <vector>

#include "agents/placeto/placeto.h"

namespace placer {

struct PlacetoCliConfig {
  PlacetoTrainConfig train;  ///< train.output_dir: absolute; resume / resumable: not keys
  std::string cluster;       ///< cluster file (required to train)
  std::string profile;       ///< cost profile ("" = the shipped default)
  std::string command;       ///< the command line that ran (provenance)
  PlacetoCliConfig();        ///< the library's defaults, output_dir runs/placeto
};

/// Reads `path` on top of the defaults. FileError: unreadable. FormatError "<path>: <key>:
/// ...": malformed YAML, an unknown key (with a "did you mean" suggestion), a value of the
/// wrong type or out of range, an unknown family / family parameter / reward / start,
/// a device beyond net.max_devices.
PlacetoCliConfig load_placeto_train_config(const std::string& path);

/// The parser behind load_placeto_train_config (torch-free): `text` read as the file `file`,
/// relative input paths taken from its folder. Errors as load_placeto_train_config's.
PlacetoCliConfig parse_placeto_train_config(const std::string& text, const std::string& file);

/// One override "key=value" (`--set`): dotted for the sections ("net.hidden=16",
/// "rl.lr=3e-3", "mdp.reward=final", "ranges.layers=[2,4]"), the value parsed as YAML.
/// Errors are those of load_placeto_train_config, naming "--set" as the file.
void apply_placeto_override(PlacetoCliConfig* config, const std::string& assignment);

/// Every key, dotted, in file order ("ranges" stands for its parameters).
std::vector<std::string> placeto_train_config_keys();

/// The configuration as YAML (every key, `header` as leading comment lines), such that
/// load_placeto_train_config of the text gives back an equal configuration (command aside).
std::string placeto_train_config_yaml(const PlacetoCliConfig& config, const std::string& header);

/// Equality of every key (command aside).
bool same_placeto_train_config(const PlacetoCliConfig& a, const PlacetoCliConfig& b);

}  // namespace placer
