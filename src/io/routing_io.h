#pragma once
// Routing-statistics files (docs/formats/routing.md): how many token assignments each expert
// of each mixture-of-experts layer received, over a window of training, optionally per
// micro-batch and per training step (routing drifts as a model trains). What the expert
// placers read (eplb, round-robin, expert-anneal) and `placer generate routing` writes.
//
// The reader follows the JSON discipline of src/io/json_read.h (size and depth limits, exact
// integers, key paths in messages); every error is a FormatError naming the file and the key
// path ("r.json: layers[2][5]: must be between 0 and 9007199254740992 (got -1)").
//
//   RoutingTrace t = load_routing("mixtral.routing.json");
//   RoutingStats s = t.stats();          // shares per layer, each row sums to 1
//   save_routing(t, "copy.routing.json"); // reads back equal

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/routing_stats.h"

namespace placer {

/// Token counts, [layer][expert].
using LayerTokens = std::vector<std::vector<int64_t>>;

struct RoutingTrace {
  std::string name;    ///< optional label
  std::string family;  ///< optional: the generator family that made it ("zipf", ...)
  int experts = 0;     ///< routed experts per MoE layer
  int top_k = 1;       ///< experts each token is routed to
  LayerTokens tokens;  ///< [layer][expert]: assignments over the whole window
  std::vector<LayerTokens> micro_batches;  ///< optional: [micro-batch][layer][expert]
  std::vector<int64_t> step_index;         ///< optional: the training step of steps[i]
  std::vector<LayerTokens> steps;          ///< optional: [step][layer][expert] (drift)

  int layers() const { return static_cast<int>(tokens.size()); }
  /// tokens as shares (each layer's row sums to 1).
  RoutingStats stats() const;
};

/// The shares of one [layer][expert] table of counts (a row of zeros is uniform).
RoutingStats shares_of(const LayerTokens& tokens);

/// Limits of what a routing file may describe (beyond them: FormatError).
constexpr int kMaxRoutingExperts = 1 << 16;
constexpr int kMaxRoutingLayers = 1 << 12;
constexpr int kMaxRoutingTopK = 64;

RoutingTrace parse_routing_json(const std::string& json_text, const std::string& file);
RoutingTrace load_routing(const std::string& path);
/// The file's text; parse_routing_json reads it back equal.
std::string routing_to_json(const RoutingTrace& t);
/// Written atomically (nothing half written on failure).
void save_routing(const RoutingTrace& t, const std::string& path);

}  // namespace placer
