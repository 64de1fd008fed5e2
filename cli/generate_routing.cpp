// `placer generate routing`: routing statistics of one family, or a corpus split.
#include "cli/generate_routing.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/common.h"
#include "datasets/routing_gen.h"
#include "src/util/error.h"

namespace placer::cli {
namespace {

struct RoutingArgs {
  RoutingGenOptions gen;
  std::string output, split;
  int count = 10;
};

void print_written(const std::string& path, const RoutingTrace& t) {
  std::cout << path << ": " << t.family << ", " << t.layers() << " layers x " << t.experts
            << " experts, top " << t.top_k;
  if (!t.steps.empty()) std::cout << ", " << t.steps.size() << " steps";
  std::cout << "\n";
}

void run_routing(const RoutingArgs& a) {
  if (a.split.empty()) {
    const RoutingTrace t = generate_routing(a.gen);
    ensure_parent_dir(a.output);
    save_routing(t, a.output);
    return print_written(a.output, t);
  }
  RoutingSplit split;
  if (!parse_routing_split(a.split, &split)) {
    throw Error("--split: unknown split '" + a.split + "' (use train, validation, test or unseen)");
  }
  if (a.count < 1 || a.count > 100000) throw Error("--count: must be in [1, 100000]");
  validate(a.gen);
  const std::vector<RoutingTrace> corpus = routing_corpus(split, a.count, a.gen, a.gen.seed);
  std::filesystem::create_directories(a.output);
  for (const RoutingTrace& t : corpus) {
    const std::string path =
        (std::filesystem::path(a.output) / (t.name + ".routing.json")).string();
    save_routing(t, path);
  }
  std::cout << a.output << ": " << corpus.size() << " routing files of the " << a.split
            << " split\n";
}

void add_shape_options(CLI::App* sub, RoutingGenOptions& g) {
  sub->add_option("--layers", g.layers, "MoE layers")->capture_default_str();
  sub->add_option("--experts", g.experts, "Routed experts per layer")->capture_default_str();
  sub->add_option("--top-k", g.top_k, "Experts each token is routed to")->capture_default_str();
  sub->add_option("--tokens", g.tokens, "Tokens per step")->capture_default_str();
  sub->add_option("--steps", g.steps, "Training steps (> 1: per-step tables, drift)")
      ->capture_default_str();
  sub->add_option("--micro-batches", g.micro_batches,
                  "Split the window's counts over this many micro-batches (0: no split)")
      ->capture_default_str();
  sub->add_option("--seed", g.seed, "Random seed")->capture_default_str();
}

void add_family_options(CLI::App* sub, RoutingGenOptions& g) {
  sub->add_option("--family", g.family, "zipf, correlated, drifting, hot-moving or lognormal")
      ->capture_default_str();
  sub->add_option("--skew", g.skew, "Zipf exponent (lognormal: sigma)")->capture_default_str();
  sub->add_option("--correlation", g.correlation,
                  "correlated / drifting: how far layers share the order of hot experts (0-1)")
      ->capture_default_str();
  sub->add_option("--drift", g.drift, "drifting: Gaussian step of each log-weight per step")
      ->capture_default_str();
  sub->add_option("--hot", g.hot, "hot-moving: hot experts per layer")->capture_default_str();
  sub->add_option("--hot-share", g.hot_share, "hot-moving: tokens the hot experts take together")
      ->capture_default_str();
  sub->add_option("--hot-period", g.hot_period, "hot-moving: steps between moves of the hot set")
      ->capture_default_str();
}

}  // namespace

void add_routing_generator(CLI::App* generate) {
  auto a = std::make_shared<RoutingArgs>();
  CLI::App* sub = generate->add_subcommand(
      "routing",
      "Routing statistics (tokens per expert per layer) of a seeded family, or a "
      "corpus split (docs/formats/routing.md)");
  sub->add_option("-o,--output", a->output,
                  "Routing file to write (*.routing.json); with --split, a folder")
      ->required();
  add_shape_options(sub, a->gen);
  add_family_options(sub, a->gen);
  sub->add_option("--split", a->split,
                  "Write a corpus split instead: train, validation, test (seen families, "
                  "disjoint seeds) or unseen (families never in train)");
  sub->add_option("--count", a->count, "With --split: files to write")->capture_default_str();
  sub->callback([a]() { run_routing(*a); });
}

}  // namespace placer::cli
