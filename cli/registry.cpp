#include <algorithm>

#include "cli/commands.h"

namespace placer::cli {

std::vector<CommandEntry>& command_registry() {
  static std::vector<CommandEntry> entries;  // function-local: safe across static init order
  return entries;
}

CommandRegistrar::CommandRegistrar(int order, const char* name, RegisterFn fn) {
  auto& r = command_registry();
  r.push_back({order, name, fn});
  std::stable_sort(r.begin(), r.end(),
                   [](const CommandEntry& a, const CommandEntry& b) { return a.order < b.order; });
}

}  // namespace placer::cli
