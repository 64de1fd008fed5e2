// The train-policy config loaders: the torch-free parsers of train_config.cpp with what they
// need from the rest of placer_agents (the method registry, rainbow-pp's cross-key checks).
#include <vector>

#include "agents/api/placer.h"
#include "agents/training/train_config.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer {
namespace {

std::vector<std::string> method_names() {
  std::vector<std::string> out;
  for (const MethodInfo& m : placer_methods()) out.push_back(m.name);
  return out;
}

/// rainbow-pp's checks across keys (validate_rainbow_pp_train_config) as "<file>: <key>: why".
void check_pp(const RainbowPPTrainConfig& c, const YamlReader& r) {
  const std::string bad = validate_rainbow_pp_train_config(c);
  if (!bad.empty()) {
    const size_t colon = bad.find(": ");
    r.fail(bad.substr(0, colon), colon == std::string::npos ? bad : bad.substr(colon + 2));
  }
}

}  // namespace

TrainConfig load_train_config(const std::string& path) {
  return parse_train_config(read_text_file(path, "training configuration"), path, method_names());
}

void apply_train_override(TrainConfig* config, const std::string& assignment) {
  apply_train_override(config, assignment, method_names());
}

RainbowPPTrainConfig load_rainbow_pp_train_config(const std::string& path) {
  RainbowPPTrainConfig c =
      parse_rainbow_pp_train_config(read_text_file(path, "training configuration"), path);
  check_pp(c, YamlReader(path));
  return c;
}

void apply_rainbow_pp_override(RainbowPPTrainConfig* config, const std::string& assignment) {
  apply_rainbow_pp_key(config, assignment);
  check_pp(*config, YamlReader("--set"));
}

}  // namespace placer
