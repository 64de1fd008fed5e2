#pragma once
// Seeded generators of routing statistics (docs/formats/routing.md "Generators"), the
// distributions the expert placers are trained and judged on, and their corpus split.
//
// Families (each a pure function of its options and seed):
//   zipf        per layer an independent random order of experts, share of the r-th most
//               loaded proportional to 1 / r^skew; static over steps
//   correlated  Zipf shares; every layer starts from one shared order and swaps each expert
//               with a random other with probability 1 - correlation (layers agree on the hot
//               experts as far as `correlation` says)
//   drifting    correlated, then every step each expert's log-weight takes a Gaussian step
//               of size `drift` (routing drifts while the model trains)
//   hot-moving  `hot` experts per layer take `hot_share` of the tokens, the rest near uniform;
//               every `hot_period` steps the hot set moves to other experts
//   lognormal   shares proportional to exp(skew * N(0, 1)), independent per layer and expert
// Counts: every step routes tokens x top_k assignments per layer, split by the step's shares
// (largest remainder, so each row sums exactly); the window's table is the sum over steps.
//
// Corpus split: the families zipf, correlated and drifting are seen in training; their
// instances go to train / validation / test by disjoint seeds; hot-moving and lognormal are
// never in train or validation (the `unseen` split), for judging generalisation.
//
//   RoutingGenOptions o; o.family = "drifting"; o.layers = 4; o.experts = 64; o.steps = 8;
//   RoutingTrace t = generate_routing(o);

#include <cstdint>
#include <string>
#include <vector>

#include "src/io/routing_io.h"

namespace placer {

struct RoutingGenOptions {
  std::string family = "zipf";
  int layers = 4;
  int experts = 64;
  int top_k = 2;
  int64_t tokens = 16384;    ///< tokens per step (each makes top_k assignments per layer)
  int steps = 1;             ///< > 1: per-step tables are written (drift, moving hot experts)
  int micro_batches = 0;     ///< > 0: the window's table split over micro-batches
  double skew = 1.0;         ///< Zipf exponent (zipf, correlated, drifting); sigma (lognormal)
  double correlation = 0.8;  ///< correlated, drifting: how far layers share their order
  double drift = 0.15;       ///< drifting: Gaussian step of each log-weight per training step
  int hot = 4;               ///< hot-moving: hot experts per layer
  double hot_share = 0.5;    ///< hot-moving: tokens the hot experts take together
  int hot_period = 4;        ///< hot-moving: steps between moves
  uint64_t seed = 1;
};

/// The family names, in the order above.
const std::vector<std::string>& routing_families();
/// ValidationError naming the option ("routing: --experts ...") when an option is out of range.
void validate(const RoutingGenOptions& o);
RoutingTrace generate_routing(const RoutingGenOptions& o);

enum class RoutingSplit { kTrain, kValidation, kTest, kUnseen };
const char* to_string(RoutingSplit s);
bool parse_routing_split(const std::string& s, RoutingSplit* out);
/// The families a split draws from (train / validation / test: the seen ones).
std::vector<std::string> split_families(RoutingSplit s);

/// `count` instances of a split, families in turn, each with its skew, correlation, drift or
/// hot set drawn from a seed no other split uses; `shape` gives layers, experts, top_k,
/// tokens, steps (its family, skew, ... and seed are replaced).
std::vector<RoutingTrace> routing_corpus(RoutingSplit split, int count,
                                         const RoutingGenOptions& shape, uint64_t seed = 1);

}  // namespace placer
