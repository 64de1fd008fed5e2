// Where the shipped GDP policies are (torch-free: built with or without LibTorch).
#include <cstdlib>
#include <string>

#include "agents/gdp/gdp.h"

namespace placer {

std::string shipped_policy_path(const std::string& file) {
  return std::string(PLACER_SOURCE_DIR) + "/models/pretrained/" + file;
}

std::string default_policy_path() {
  const char* env = std::getenv("PLACER_POLICY");
  if (env && *env) return env;
  return shipped_policy_path("default.pt");
}

}  // namespace placer
