// `placer methods [M]`: the registered placement methods (name, fast or not, one line), or
// one method's options with their types, defaults and docs, from its option schema.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "agents/api/placer.h"
#include "src/cli/commands.h"

namespace placer::cli {
namespace {

void list_methods() {
  for (const MethodInfo& m : placer_methods()) {
    std::cout << m.name << (m.fast ? "  [fast]" : "")
              << (m.options.empty() ? "" : "  [" + std::to_string(m.options.size()) + " options]")
              << "\n    " << m.description << "\n";
  }
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

void register_methods(CLI::App& app);
static CommandRegistrar methods_registrar(18, "methods", register_methods);

void register_methods(CLI::App& app) {
  auto name = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "methods",
      "List the placement methods, or one method's options (--set KEY=VALUE of `placer "
      "place`) with their defaults:\n  placer methods rainbow-opp");
  sub->add_option("method", *name, "A method to show with its options");
  sub->callback([name]() {
    if (name->empty()) {
      list_methods();
    } else {
      show_method(*name);
    }
  });
}

}  // namespace placer::cli
