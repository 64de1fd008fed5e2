#pragma once
// Subcommands of the `placer` executable. Each lives in its own cli/<name>.cpp and
// registers itself with a static CommandRegistrar (most through define_command of
// cli/command_options.h: Args type, name, help, options builder, run function), so
// adding a command touches no other file. Its callback does the work and throws placer::Error on
// user-facing problems (main turns them into one line on stderr and exit code 1).

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace placer::cli {

using RegisterFn = std::function<void(CLI::App& app)>;

struct CommandEntry {
  int order;            ///< position in `placer --help`
  std::string name;     ///< the subcommand's name (for the unknown-command message)
  RegisterFn register_fn;
};

/// All registered commands, sorted by order.
std::vector<CommandEntry>& command_registry();

/// Define one at namespace scope in a command's .cpp:
///   static CommandRegistrar reg(10, "simulate", register_simulate);
struct CommandRegistrar {
  CommandRegistrar(int order, const char* name, RegisterFn fn);
};

}  // namespace placer::cli
