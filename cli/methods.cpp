// `placer methods [M]`: the registered placement methods (name, fast or not, one line), or
// one method's options with their types, defaults and docs, from its option schema.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "agents/api/composite_methods.h"
#include "agents/api/placer.h"
#include "cli/command_options.h"

namespace placer::cli {
namespace {

void list_method(const MethodInfo& m) {
  std::cout << m.name << (m.fast ? "  [fast]" : "")
            << (m.options.empty() ? "" : "  [" + std::to_string(m.options.size()) + " options]")
            << "\n    " << m.description << "\n";
}

void list_methods() {
  for (const MethodInfo& m : placer_methods()) list_method(m);
  if (composite_methods().empty()) return;
  std::cout << "\ncomposite methods: one method around another, chosen with --set inner=M "
               "(M+hybrid is `hybrid --set inner=M`, gdp+stages is `stages --set inner=gdp`)\n";
  for (const MethodInfo& m : composite_methods()) list_method(m);
}

void show_method(const std::string& name) {
  const MethodInfo& m = method_info(name);
  std::cout << m.name << (m.fast ? " (fast: part of --method best)" : "") << "\n"
            << m.description << "\n";
  if (m.options.empty()) {
    std::cout << "\nno options\n";
    return;
  }
  std::cout << "\noptions (placer place --method " << m.name << " --set KEY=VALUE):\n";
  for (const OptionSpec& o : m.options) {
    std::cout << "  " << o.key << " (" << o.type << ", default " << o.default_value
              << "): " << o.doc << "\n";
  }
}

}  // namespace

static CommandRegistrar methods_registrar = define_command<std::string>(
    18, "methods",
    "List the placement methods, or one method's options (--set KEY=VALUE of `placer "
    "place`) with their defaults:\n  placer methods rainbow-opp",
    [](CLI::App* sub, std::string& name) {
      sub->add_option("method", name, "A method to show with its options");
    },
    [](const std::string& name) {
      if (name.empty()) {
        list_methods();
      } else {
        show_method(name);
      }
    });

}  // namespace placer::cli
