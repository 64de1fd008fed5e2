#pragma once
// `placer generate routing`: seeded routing statistics (datasets/routing_gen.h).

namespace CLI {
class App;
}

namespace placer::cli {

/// Adds the `routing` subcommand to `placer generate`.
void add_routing_generator(CLI::App* generate);

}  // namespace placer::cli
