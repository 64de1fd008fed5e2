#pragma once
// Subcommands of the `placer` executable. Each registers itself on the CLI11 app; its
// callback does the work and throws placer::Error on user-facing problems (main turns
// them into one line on stderr and exit code 1).

namespace CLI {
class App;
}

namespace placer::cli {

void register_simulate(CLI::App& app);
void register_expand(CLI::App& app);
void register_generate(CLI::App& app);
void register_info(CLI::App& app);

}  // namespace placer::cli
