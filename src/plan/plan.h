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
// Plan format 1.1 adds how large models are really trained (docs/parallelism.md):
//  - a stage is a grid of tensor_parallel x data-parallel devices (TP ranks contiguous);
//  - partitions may be `replicated` (the op runs whole on every device of the group, as
//    Megatron runs LayerNorm / dropout / residual adds on each TP rank) and may name their
//    forward / backward collective (sequence parallelism: reduce-scatter / all-gather);
//  - `tensor_parallel` is a shorthand that expands to those partitions for the transformer
//    graphs it recognises (src/plan/tensor_parallel.h);
//  - activation recomputation (none / selective / full) per plan or stage;
//  - precision (compute dtype, loss scaling, gradient clipping), ZeRO stage and whether
//    the data-parallel gradient sync overlaps backward.
// The plan also records what the simulator predicted for it.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/types.h"
#include "src/plan/moe_layout.h"
#include "src/plan/sync_strategy.h"

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

/// Activation recomputation (Korthikanti et al. 2022): `full` re-runs a layer's forward
/// before its backward and keeps only layer inputs; `selective` re-runs the attention core
/// (ops whose scope contains "core_attention") and keeps everything else; `selective_op`
/// (torchtitan's op-level selective checkpointing) keeps the outputs of matmul-category ops
/// and re-runs every other op of the layer.
enum class Recompute : uint8_t { kInherit, kNone, kSelective, kFull, kSelectiveOp };
const char* to_string(Recompute r);
/// "none", "selective", "full", "selective_op" (kInherit is not spelled in files).
bool parse_recompute(const std::string& s, Recompute* out);

/// The collective a partitioned op runs after its forward or backward instance; kAuto =
/// what the split implies (docs/formats/plan.md), kNone = nothing.
enum class PartitionCollective : uint8_t { kAuto, kNone, kAllReduce, kAllGather, kReduceScatter };
const char* to_string(PartitionCollective c);
/// "auto", "none", "all_reduce", "all_gather", "reduce_scatter".
bool parse_partition_collective(const std::string& s, PartitionCollective* out);

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
  /// The op runs whole on every device of the group, reading its inputs there (no split,
  /// no collective, parameters and gradients replicated). `dim` is ignored.
  bool replicated = false;
  /// Collective after each forward / backward instance (kAuto = implied by the split).
  PartitionCollective forward_collective = PartitionCollective::kAuto;
  PartitionCollective backward_collective = PartitionCollective::kAuto;
};

struct PipelineStage {
  std::vector<OpId> ops;     ///< forward ops of the stage
  /// tensor_parallel x data-parallel grid: devices[r * tensor_parallel + t] is TP rank t of
  /// data-parallel rank r (Megatron's order). tensor_parallel == 1: every device is a
  /// data-parallel copy of the stage.
  std::vector<int> devices;
  int tensor_parallel = 1;  ///< divides devices.size()
  Recompute recompute = Recompute::kInherit;  ///< kInherit = the plan's
  /// Data-parallel copies of the stage.
  int data_parallel() const {
    return tensor_parallel > 0 ? static_cast<int>(devices.size()) / tensor_parallel : 1;
  }
};

struct PipelineConfig {
  std::vector<PipelineStage> stages;  ///< empty = no pipeline
  int micro_batches = 1;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  /// Model chunks per pipeline rank (Megatron's --virtual-pipeline-model-parallel-size).
  /// With v > 1 and S stages there are S / v ranks; stage s runs on rank s % (S / v) (its
  /// devices equal those of stage s % (S / v)) and 1F1B interleaves the chunks of a rank
  /// (Narayanan et al. 2021): the bubble shrinks by v at the cost of v x more transfers.
  int virtual_stages = 1;
  /// Megatron-LM's scatter / gather of stage-boundary activations (on by default there;
  /// --no-scatter-gather-tensors-in-pipeline turns it off): with tensor parallelism each TP
  /// rank sends its peer rank of the next stage 1/tp of a replicated boundary tensor, and
  /// the receiving ranks all-gather it. Off: each TP rank sends its peer the whole tensor.
  bool scatter_gather = true;
  bool enabled() const { return !stages.empty(); }
  /// Pipeline ranks: stages / virtual_stages.
  int ranks() const { return static_cast<int>(stages.size()) / std::max(virtual_stages, 1); }
};

/// FSDP / FSDP2 / HSDP as PyTorch runs it (docs/parallelism.md): parameters sharded over
/// the data-parallel group (zero_stage 3) and all-gathered one transformer block (graph
/// layer) at a time, the next blocks' all-gathers issued ahead of their compute; gradients
/// reduce-scattered per block during the next block's backward. Off = ZeRO-3's accounting
/// (every op waits for its own all-gather, nothing prefetched).
struct FsdpConfig {
  bool enabled = false;
  int forward_prefetch = 1;   ///< blocks whose all-gather is issued ahead in forward (>= 0)
  int backward_prefetch = 1;  ///< ... in backward (>= 0)
  /// true: parameters freed after a block's forward and all-gathered again for its backward
  /// (FSDP FULL_SHARD); false: kept until its backward (SHARD_GRAD_OP): no backward
  /// all-gathers, the unsharded parameters held from forward to backward.
  bool reshard_after_forward = true;
  /// HSDP: devices per shard group (consecutive data-parallel ranks); parameters, gradients
  /// and optimizer state are sharded inside a group and replicated across groups, whose
  /// gradient shards are all-reduced. 0 = one group of the whole data-parallel group.
  int shard_group = 0;
  /// dtype of the all-gathered parameters and of the reduced gradients (MixedPrecisionPolicy
  /// param_dtype / reduce_dtype); *_set false = the graph's parameter / gradient dtype.
  bool param_dtype_set = false, reduce_dtype_set = false;
  DType param_dtype = DType::kBF16, reduce_dtype = DType::kF32;
};

struct DataParallelConfig {
  int replicas = 1;
  SyncScheme sync = SyncScheme::kRing;
  uint64_t bucket_bytes = 25ull << 20;  ///< gradient bucket size (PyTorch DDP's default)
  /// replica_devices[r][d] = the device that placement device d maps to in replica r.
  /// Empty = default: replica r uses device d + r * (num_devices / replicas).
  std::vector<std::vector<int>> replica_devices;
  /// ZeRO stage over the data-parallel group (Rajbhandari et al. 2020): 1 shards the
  /// optimizer state, 2 also the gradients (reduce-scatter + all-gather), 3 also the
  /// parameters (all-gathered per op in forward and backward).
  int zero_stage = 0;
  /// true: gradients all-reduced in buckets during backward; false: one all-reduce per
  /// data-parallel group after the last backward op (Megatron without overlap).
  bool overlap = true;
  FsdpConfig fsdp;  ///< per-block schedule of zero_stage 3 (off by default)
};

/// Shorthand for Megatron-style tensor parallelism (src/plan/tensor_parallel.h).
struct TensorParallelConfig {
  int degree = 1;  ///< default TP degree of stages that do not set one; 1 = off
  bool sequence_parallel = false;
  bool enabled() const { return degree > 1; }
};

/// Numerics of the step.
struct PrecisionConfig {
  /// Compute dtype of floating-point ops (selects the device's peak); nullopt-like
  /// `set == false` = each op's own dtype.
  bool compute_set = false;
  DType compute = DType::kF16;
  /// FP8 GEMMs (Transformer Engine / torchao float8): matmul-category ops run at the
  /// device's f8 peak (the profile's f8 matmul curve), each paying per-tensor scaling (an
  /// amax pass and a cast to FP8 of its inputs); weights stay in the compute dtype.
  bool fp8 = false;
  /// Dynamic loss scaling: one found-inf all-reduce before the optimizer step.
  bool loss_scaling = false;
  /// Gradient clipping: one gradient-norm all-reduce before the optimizer step.
  bool grad_clipping = false;
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
  TensorParallelConfig tensor_parallel;
  ExpertParallelConfig expert_parallel;    ///< mixture-of-experts layers (moe_layout.h)
  ContextParallelConfig context_parallel;  ///< sequence split over ranks (moe_layout.h)
  Recompute recompute = Recompute::kNone;  ///< default for stages (and unpipelined plans)
  /// Recompute only every k-th layer (graph layers k-1, 2k-1, ...; torchtitan's
  /// `selective_ac_option: k`); 1 = every layer.
  int recompute_every = 1;
  PrecisionConfig precision;
  /// Per-variable gradient synchronisation (src/plan/sync_strategy.h); replaces
  /// data_parallel.sync when enabled.
  SynchronizationConfig synchronization;
  PlanPrediction predicted;

  /// Effective recomputation of stage `s` (the plan's when the stage inherits).
  Recompute stage_recompute(size_t s) const {
    const Recompute r = s < pipeline.stages.size() ? pipeline.stages[s].recompute : Recompute::kInherit;
    return r == Recompute::kInherit ? recompute : r;
  }

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

/// Findings that are not errors but probably not what was meant (plan readers print them):
/// a partition over devices of a stage whose devices are data-parallel copies.
std::vector<std::string> plan_warnings(const Plan& p, const Graph& g);

}  // namespace placer
