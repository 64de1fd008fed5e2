#pragma once
// Per-variable gradient synchronisation (the AutoDist / AutoSync strategy representation,
// docs/sync.md): for each trainable variable of a data-parallel plan, a synchronizer (ring /
// tree / hierarchical all-reduce, a parameter server with its destinations, shards and local
// aggregation, an all-gather of sparse rows, or Poseidon's sufficient-factor broadcasting),
// a compressor, and a staleness bound. Variables are matched by op name, by scope pattern
// ('*' wildcards) or by colocation group; the first matching rule wins, else the default.

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/types.h"

namespace placer {

class Graph;
class Cluster;
enum class SyncScheme : uint8_t;

enum class Synchronizer : uint8_t {
  kAllReduce,        ///< all-reduce with `algorithm` (ring, tree, hierarchical)
  kParameterServer,  ///< push to and pull from `destinations`
  kAllGather,        ///< all-gather of each worker's (sparse) gradient
  kFactorBroadcast,  ///< Poseidon's SFB: all-gather of the batch's factors of an FC layer
};
const char* to_string(Synchronizer s);
/// "allreduce", "ps", "allgather", "sfb".
bool parse_synchronizer(const std::string& s, Synchronizer* out);

enum class Compressor : uint8_t { kNone, kFP16, kOneBit, kTopK, kPowerSGD };
const char* to_string(Compressor c);
/// "none", "fp16", "onebit", "topk", "powersgd".
bool parse_compressor(const std::string& s, Compressor* out);
/// Whether the compressor changes the gradient's values (everything but none).
inline bool is_lossy(Compressor c) { return c != Compressor::kNone; }

/// The strategy of one variable.
struct VariableSync {
  Synchronizer synchronizer = Synchronizer::kAllReduce;
  SyncScheme algorithm{};          ///< all-reduce algorithm (SyncScheme::kRing by default)
  std::vector<int> destinations;   ///< ps: server devices (a host is named by one of its devices)
  int shards = 1;                  ///< ps: the variable is split over this many destinations
  bool local_aggregation = true;   ///< ps: sum on each host before pushing once per host
  Compressor compressor = Compressor::kNone;
  double topk_ratio = 0.01;        ///< topk: fraction of elements sent
  int powersgd_rank = 4;           ///< powersgd: rank of the P, Q factors
  /// Stale-synchronous bound: the sync of step t may finish during steps t+1..t+s.
  int staleness = 0;
  bool async = false;              ///< unbounded staleness
  bool operator==(const VariableSync& o) const;
};

/// Which variables a rule covers.
enum class SyncMatch : uint8_t { kName, kScope, kGroup };
const char* to_string(SyncMatch m);

struct SyncRule {
  SyncMatch match = SyncMatch::kName;
  std::string pattern;  ///< op name, scope pattern with '*', or group name
  VariableSync strategy;
  bool operator==(const SyncRule& o) const {
    return match == o.match && pattern == o.pattern && strategy == o.strategy;
  }
};

struct SynchronizationConfig {
  bool enabled = false;  ///< false = the plan's data_parallel sync for the whole model
  VariableSync default_strategy;
  std::vector<SyncRule> rules;  ///< first match wins
  /// The rule covering forward op `op` (its name, scope, group), or the default.
  const VariableSync& strategy_of(const Graph& g, OpId op) const;
};

/// '*' matches any run of characters (also dots); everything else literally.
bool scope_matches(const std::string& pattern, const std::string& scope);

/// Forward ops owning trainable parameters (the variables), in op order.
std::vector<OpId> sync_variables(const Graph& g);

/// One line per lossy choice the section makes ("onebit compressor on 3 variables",
/// "staleness 2 on 1 variable", "async on ..."); empty when it is exact.
std::vector<std::string> lossy_choices(const SynchronizationConfig& s, const Graph& g);

/// Throws ValidationError with a one-line message naming the rule (or "default"): a PS
/// destination out of range or none, shards < 1 or more than destinations, a PowerSGD rank
/// < 1, a top-k ratio outside (0, 1], staleness < 0, an all-reduce algorithm other than
/// ring / tree / hierarchical, a compressor on a non-float variable, a rule matching nothing.
void validate_synchronization(const SynchronizationConfig& s, const Graph& g, const Cluster& c);

}  // namespace placer
