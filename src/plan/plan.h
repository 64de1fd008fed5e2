#pragma once
// A distributed execution plan for one training step of a graph on a cluster.
//
// Four parts, any combination of which may be used:
//  - placement: the device of every op (for replica 0 when data-parallel);
//  - partitions: operators split partition-n-reduce style over several devices;
//  - pipeline: stages (sets of forward ops, their backward / optimizer ops follow them),
//    each on one or more devices (several = the stage is replicated, data parallel), run
//    with m micro-batches under GPipe or 1F1B;
//  - data_parallel: R replicas of the placed graph, gradients synchronised by ring / tree /
//    hierarchical all-reduce or a parameter server, in buckets overlapped with backward.
// The plan also records what the simulator predicted for it.

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/types.h"

namespace placer {

class Graph;
class Cluster;

enum class PipelineSchedule : uint8_t { kGPipe, k1F1B };
const char* to_string(PipelineSchedule s);
bool parse_pipeline_schedule(const std::string& s, PipelineSchedule* out);  // "gpipe", "1f1b"

/// Gradient synchronisation scheme across replicas.
enum class SyncScheme : uint8_t { kRing, kTree, kHierarchical, kParameterServer, kAuto };
const char* to_string(SyncScheme s);
/// "ring", "tree", "hierarchical", "ps" / "parameter_server", "auto".
bool parse_sync_scheme(const std::string& s, SyncScheme* out);

/// One operator split over several devices (partition-n-reduce). Applies to the forward op
/// and, mirrored, to its backward ops.
struct OpPartition {
  OpId op = kNoOp;
  /// Split dimension of the op's first output; kReduceDim = split the contraction
  /// (reduction) dimension, which leaves partial sums to all-reduce.
  int dim = 0;
  static constexpr int kReduceDim = -1;
  std::vector<int> devices;  ///< degree = devices.size() (>= 2)
  /// Recursive halving (Tofu): empty = one split on `dim` over all devices. Otherwise
  /// devices.size() == 2^levels.size() and level i splits dim levels[i] in two: level 0
  /// separates devices [0, k/2) from [k/2, k), level 1 halves each half, ...; dim ==
  /// levels[0].
  std::vector<int> levels = {};  // initializer: keeps {op, dim, devices} warning-free
  /// Sharded chains (Megatron-style tensor parallelism; single-level partitions only).
  /// sharded_output: the forward collective is skipped and the outputs stay split across
  /// `devices` (1/k of the bytes on each); every forward op that reads them must be
  /// partitioned over the same device list with sharded_input set.
  bool sharded_output = false;
  /// sharded_input: the op reads its inputs that come from sharded_output producers as
  /// local shards (no transfer), and its backward ops skip the input-gradient collective:
  /// those gradients stay sharded (1/k each) for the producers' backward ops.
  bool sharded_input = false;
};

struct PipelineStage {
  std::vector<OpId> ops;     ///< forward ops of the stage
  std::vector<int> devices;  ///< >= 1; more than one = stage replicated data-parallel
};

struct PipelineConfig {
  std::vector<PipelineStage> stages;  ///< empty = no pipeline
  int micro_batches = 1;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  bool enabled() const { return !stages.empty(); }
};

struct DataParallelConfig {
  int replicas = 1;
  SyncScheme sync = SyncScheme::kRing;
  uint64_t bucket_bytes = 25ull << 20;  ///< gradient bucket size (PyTorch DDP's default)
  /// replica_devices[r][d] = the device that placement device d maps to in replica r.
  /// Empty = default: replica r uses device d + r * (num_devices / replicas).
  std::vector<std::vector<int>> replica_devices;
};

/// What the simulator predicted for the plan (written into plan files).
struct PlanPrediction {
  bool valid = false;                 ///< false until a simulation filled it in
  double step_time = 0;               ///< seconds
  std::vector<uint64_t> peak_memory;  ///< bytes per device
  bool oom = false;
};

struct Plan {
  std::string graph_name;  ///< informational, checked against the graph on load (warning)
  std::string method;      ///< who made it ("manual", "metis", "gdp", ...)
  std::vector<int> placement;  ///< device per op; size = graph.num_ops()
  std::vector<OpPartition> partitions;
  PipelineConfig pipeline;
  DataParallelConfig data_parallel;
  PlanPrediction predicted;

  /// A plan with every op on `device`.
  static Plan single_device(const Graph& g, int device = 0);

  /// Device of `d` in replica `r` (applies replica_devices or the default stride).
  int replica_device(int d, int r, int num_devices) const;

  /// Throws ValidationError with a precise message on the first problem: placement size or
  /// unknown/out-of-range device, partition on an unknown op / bad degree / bad dim /
  /// duplicate, pipeline stage overlap or an op in no stage, stage without devices,
  /// micro_batches < 1, replicas that do not fit the cluster, replica device map errors.
  void validate(const Graph& g, const Cluster& c) const;
};

}  // namespace placer
