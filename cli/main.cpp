// placer: finds how to train a deep network across many devices.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include "cli/commands.h"
#include "src/util/error.h"

#ifndef PLACER_VERSION
#define PLACER_VERSION "0.1.0"
#endif

int main(int argc, char** argv) {
  CLI::App app{
      "placer: distributed-training plans (placement, partitioning, pipeline cuts, data\n"
      "parallelism) searched against a calibrated execution simulator.",
      "placer"};
  app.set_version_flag("--version", PLACER_VERSION);
  std::string names;
  for (const auto& c : placer::cli::command_registry()) {
    c.register_fn(app);
    names += (names.empty() ? "" : ", ") + c.name;
  }
  // Set after the subcommands exist: CLI11 copies some settings into subcommands at creation,
  // and they must keep rejecting unknown options.
  app.require_subcommand(0, 1);
  app.allow_extras(true);  // so an unknown command is reported by name below
  app.fallthrough(false);
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      if (!app.remaining().empty()) {
        std::cerr << "placer: error: unknown command '" << app.remaining().front()
                  << "' (commands: " << names << "; see placer --help)\n";
        return 1;
      }
      std::cerr << app.help();
      return 1;
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const placer::Error& e) {
    std::cerr << "placer: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "placer: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    // Anything else is a bug in placer, but still a clean exit with the message.
    std::cerr << "placer: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
