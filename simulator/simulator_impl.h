#pragma once
// Internal state of the Simulator (simulator.cpp: set-up per plan; simulator_engine.cpp: the
// event loop). Not a public header: only the simulator's own .cpp files include it.
//
// Vocabulary:
//  - instance: one execution of an op. Without a pipeline every op runs once; with m
//    micro-batches, forward and backward ops run m times ("multi" ops), optimizer ops once.
//  - site: a (tensor, device) pair where a tensor must be present: the devices of its
//    producer (sources; the first is the primary, which sends) and every device of its
//    consumers (destinations, reached by one transfer per tensor instance).
//  - refs: how many reads (consumer instances, outgoing transfers) a tensor instance at a
//    site still waits for; at zero its memory is freed.
//
// All vectors are sized on the first run and reused; the hot loop does not allocate.

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "simulator/cost_model.h"
#include "simulator/event_queue.h"
#include "simulator/fsdp_schedule.h"
#include "simulator/simulator.h"

namespace placer {

inline constexpr uint32_t kNoInst = UINT32_MAX;

inline uint64_t ceil_div(uint64_t a, uint64_t b) { return b <= 1 ? a : (a + b - 1) / b; }

// How many ways a partition shards parameters, their gradients and optimizer work: all k
// devices under a non-batch split, none under a batch split; per non-batch level (x2) for
// recursive halving.
inline uint64_t shard_div(const OpPartition& q) {
  if (q.replicated) return 1;
  if (q.levels.empty()) return q.dim != 0 ? q.devices.size() : 1;
  uint64_t d = 1;
  for (int l : q.levels) d *= l != 0 ? 2 : 1;
  return d;
}

struct Simulator::Impl {
  Impl(const Graph& g, const Cluster& c, const CostModel& cost);
  void index_op_inputs();     // in_t / in_off: inputs some op produces
  void copy_op_fields();      // out_t / out_off and the op_* copies
  void copy_tensor_fields();  // t_* copies
  void index_backward_ops();  // bwd_of / bwd_off: the backward ops of each forward op
  void build_channels();      // the port channels in chan_free

  // ---- set-up (simulator.cpp) ----
  void check_plan(const Plan& plan);
  void check_placement(const Plan& plan) const;
  void check_partitions(const Plan& plan);
  void check_pipeline(const Plan& plan);
  void check_replica_devices(const Plan& plan) const;  // data_parallel.replica_devices given
  void check_replica_stride(const Plan& plan);         // the default stride stays in the cluster
  /// Everything run() needs for `plan`, in named steps (simulator.cpp unless noted).
  void prepare(const Plan& plan, const SimOptions& options);
  void prepare_settings(const Plan& plan, const SimOptions& options);  // replicas, stages, sync
  void assign_partitions(const Plan& plan);   // op -> partition (backward ops too)
  void assign_stages(const Plan& plan);       // op -> pipeline stage
  // Symmetric simulation (symmetry.cpp): whether the plan's tensor-parallel ranks run alike,
  // and if so the two ranks of each group that are simulated (part_run, dev_mult).
  void choose_symmetry(const Plan& plan);
  std::string asymmetry(const Plan& plan) const;  // why not symmetric; empty when it is
  std::string asymmetric_expert_groups(const Plan& plan) const;
  std::string asymmetric_stage_ops(const Plan& plan) const;
  std::string asymmetric_transfers(const Plan& plan) const;
  void mirror_folded_ranks(SimResult* r) const;         // ranks 2.. of each group take rank 1's
  void assign_devices_and_durations(const Plan& plan);  // device, work share, time, instances
  void number_instances();                      // op_inst, inst_stride, n_inst (after op_multi)
  void size_tensor_payloads(const Plan& plan);  // bytes moved and synced per tensor
  void prepare_step_barrier(const Plan& plan);  // loss scaling / clipping / tied embeddings
  void prepare_instances();                     // per-pass pending counts and queue keys
  void prepare_gradient_syncs(const Plan& plan);  // data-parallel groups per device / stage
  void prepare_zero3_gathers(const Plan& plan);   // ZeRO-3 parameter all-gathers
  // FSDP (fsdp.cpp): shard / replica groups of each sync, then the per-block schedule's
  // all-gather waits charged to each block's first forward and backward op.
  void prepare_fsdp_groups(const Plan& plan);
  void prepare_fsdp_schedule(const Plan& plan);
  // One FSDP unit of a group: a block (graph layer) or the root (parameter ops outside
  // blocks); its forward ops in topological order and its parameters' bytes.
  struct FsdpUnitOps {
    std::vector<OpId> forward;
    FsdpUnitBytes bytes;
  };
  // FSDP2's copies of one unit in seconds on the compute stream (copy_out per unshard,
  // reduce after its backward) and on the all-gather stream (copy_in per all-gather).
  struct FsdpCopyTimes {
    double copy_in = 0, copy_out = 0, reduce = 0;
    bool regathered = false;  // unsharded again for its backward
  };
  void assign_gradient_blocks(const FsdpConfig& fs);
  int fsdp_group_shard(int64_t group) const;
  double fsdp_copy_time(double bytes, DType dtype, int d) const;
  FsdpCopyTimes fsdp_copy_times(const FsdpUnitBytes& u, OpId first, int shard) const;
  void charge_fsdp_root(const std::vector<OpId>& fw, const FsdpUnitBytes& bytes, int64_t group);
  void charge_fsdp_blocks(const std::vector<const FsdpUnitOps*>& blocks, int64_t group);
  void charge_fsdp_block(const std::vector<OpId>& fw, const FsdpCopyTimes& c,
                         const FsdpBlockTimeline& tl);
  double fsdp_reduce_time(uint32_t sync_index, uint64_t bytes) const;  // one bucket
  bool fsdp_block_done(TensorId t);   // the last gradient of its block entered a bucket
  uint64_t shard_ways(OpId o) const;  // ZeRO / FSDP sharding of op o's parameters and state
  uint32_t gather_group(int32_t sync_index) const;  // where ZeRO-3 / FSDP all-gathers run
  // fp8.cpp: whether o is a GEMM of a linear layer (FP8 under precision.fp8), and the
  // amax + cast passes over its inputs.
  bool runs_fp8(OpId o) const;
  double fp8_scaling_time(OpId o, double frac) const;
  void charge_micro_batch_overhead();  // host work before each stage's first forward ops
  void prepare_sites();                // where each tensor lives, reference counts
  void prepare_refs();                 // reference counts per site and instance
  void prepare_boundary_transfers();   // pipeline_schedule.cpp: TP peers send, scatter / gather
  void prepare_output_allocations();   // output bytes an instance allocates
  void reset_run_state();              // devices, channels, events
  void place_resident_memory();        // parameters and optimizer state
  void prepare_recompute(const Plan& plan);        // recompute.cpp
  // context_parallel.cpp: the KV exchange of context-parallel attention that no compute
  // hides, charged into the attention ops' durations.
  void prepare_context_parallel(const Plan& plan);
  double cp_exposed_time(OpId f, OpId o, bool backward, const std::vector<int>& ring,
                         ContextParallelComm comm) const;
  double cp_all_to_all_time(const std::vector<int>& ring, double local) const;
  void prepare_tied_embeddings();  // tied_embeddings.cpp
  void prepare_partition_collectives(const Plan& plan);  // partition_collectives.cpp
  void named_partition_collective(OpId o, PartitionCollective pc);  // the plan names it
  // The `auto` collectives of q (one split, or one per recursive-halving level).
  void auto_partition_collective(OpId o, const OpPartition& q,
                                 const std::vector<uint32_t>& level_groups, uint64_t act,
                                 uint64_t grad);
  // Expert parallelism (expert_parallel.cpp): the MoE role and layer of every op (constructor),
  // then per run the expert ops' durations and memory, the all-to-all of dispatch / combine.
  void index_moe_ops();
  void prepare_expert_parallel(const Plan& plan);
  void prepare_expert_gradient_syncs(const Plan& plan);  // after prepare_gradient_syncs
  double expert_work_split(OpId o) const;
  std::vector<int> expert_data_parallel_group(OpId o, const Plan& plan) const;
  void expert_layer_loads(const Plan& plan);
  std::vector<int> expert_ranks(OpId o) const;  // the ranks EP groups are carved from
  std::vector<int> expert_group(OpId o) const;  // the EP group of the simulated rank
  std::vector<int> rank_nodes(size_t layer) const;
  void apply_expert_op(OpId o, const Plan& plan);
  void apply_expert_compute(OpId o, const Plan& plan, const std::vector<int>& ranks);
  double expert_all_to_all_time(size_t layer, const CollectiveGroup& group, uint64_t bytes) const;
  // time < 0: the group's collective time for `bytes`; otherwise that time.
  void set_op_collective(OpId o, CollectiveKind kind, const std::vector<int>& devs, uint64_t bytes,
                         double time = -1);
  // The dtype op o computes in under the plan's precision; *fp8 = it runs as an FP8 GEMM.
  DType run_dtype(OpId o, const Plan& plan, bool* fp8) const;
  void prepare_pipeline_ranks();  // pipeline_schedule.cpp: warm-up per rank
  void prepare_pipeline_gates();  // pipeline_schedule.cpp: gate counters
  uint64_t schedule_slot(OpId o, uint32_t j) const;  // ready-queue priority of a pass
  // Within a slot: the op's topological rank, or with paired passes its place in its pass.
  std::vector<uint32_t> pass_order() const;
  uint32_t group_index(const std::vector<int>& devices);  // cached CollectiveGroup
  uint64_t resident_bytes(OpId o) const;  // parameters + optimizer state per device

  // ---- event loop (simulator_engine.cpp) ----
  void simulate();
  void finish_result(SimResult* r);

  const Graph& g;
  const Cluster& c;
  const CostModel& cost;
  int n_dev = 0;
  uint32_t n_ops = 0, n_tensors = 0;

  // Static, from the graph (constructor).
  std::vector<uint32_t> in_off;  // CSR: distinct inputs with a producer, per op
  std::vector<TensorId> in_t;
  std::vector<uint32_t> out_off;  // CSR: outputs per op
  std::vector<TensorId> out_t;
  std::vector<uint64_t> op_bytes;  // Graph::op_bytes
  std::vector<uint64_t> op_ws;     // workspace bytes
  std::vector<Phase> op_phase;
  std::vector<OpId> op_fwd;       // Op::forward_op
  std::vector<uint32_t> bwd_off;  // CSR: backward ops that follow each forward op
  std::vector<OpId> bwd_of;
  std::vector<uint8_t> op_scaled;     // Op::batch_scaled
  std::vector<uint8_t> op_input;      // category kInput (outputs are not allocated)
  std::vector<uint64_t> op_resident;  // param_bytes + state_bytes
  std::vector<OpId> t_producer;
  std::vector<uint64_t> t_raw;            // Tensor::bytes
  std::vector<uint8_t> t_scaled, t_grad;  // batch_scaled, is_param_grad
  std::vector<uint8_t> mark, dev_mark;    // scratch for plan checks
  // Channels (indices into chan_free): per (device, level) send and receive ports, per
  // (host, level) send and receive ports (the first index of each of the four blocks in
  // port_base), then one per ordered device pair on a per-pair link, numbered when the pair
  // first sends (memory O(devices + pairs that talk), not O(devices^2)).
  std::array<int32_t, 4> port_base{};
  bool all_per_pair = false;  // an explicit per-pair matrix: every link is per pair
  std::unordered_map<uint64_t, int32_t> pair_chan;
  std::vector<double> chan_free;                      // channel -> time it is free again
  std::vector<double> dur_cache_frac, dur_cache_val;  // per op, for the last device / fraction
  std::vector<int32_t> dur_cache_dev;
  std::vector<int8_t> dur_cache_dtype;
  std::vector<uint64_t> op_param, op_state;  // param_bytes, state_bytes

  // ---- per run ----
  Plan staged;    // a micro-batched placement as a staged plan (src/plan/placement_pipeline.h)
  Plan expanded;  // the plan with its tensor-parallel shorthand expanded (when it has one)
  const Plan* plan = nullptr;
  SimOptions opts;
  SimResult* out = nullptr;
  int M = 1;  // micro-batches
  int R = 1;  // data-parallel replicas
  bool pipelined = false;
  int n_stages = 0;
  SyncScheme sync = SyncScheme::kRing;
  int zero_stage = 0;
  uint64_t bucket_bytes = 0;
  // FSDP: on, shard group size (0 = the whole data-parallel group), per sync the shard and
  // replica groups (kNoInst = none), per gradient tensor its block (-1 = none) and per
  // block the gradients not yet bucketed; compute waits per device and pass.
  bool fsdp = false;
  int fsdp_shard = 0;
  std::vector<uint32_t> sync_shard_group, sync_replica_group;
  std::vector<int32_t> t_block, block_left;
  std::vector<double> fsdp_fwd_wait, fsdp_bwd_wait;
  std::vector<double> cp_fwd_wait, cp_bwd_wait;  // per device: exposed CP exchange
  // Per-variable sync (plan.synchronization): buckets cost nothing in the engine and the
  // time each gradient is ready is kept for simulator/sync_strategies.cpp.
  bool sync_external = false;
  std::vector<double> grad_ready;

  // Ops.
  std::vector<int32_t> op_dev;    // primary device
  std::vector<int32_t> op_part;   // partition index, -1 = not partitioned
  std::vector<int32_t> op_stage;  // pipeline stage, -1 without pipeline
  std::vector<uint8_t> op_multi;  // runs once per micro-batch
  std::vector<uint8_t> op_gang;   // partitioned over more than one device (start_gang)
  std::vector<double> op_frac;    // work fraction of one instance on one device
  std::vector<double> op_dur;     // seconds per instance
  std::vector<double> op_coll;    // partition collective after each instance (seconds)
  std::vector<uint64_t> op_coll_bytes;
  std::vector<uint8_t> op_coll_kind;  // CollectiveKind of op_coll (the main one of a level list)
  std::vector<uint32_t> op_group;  // collective group of a partitioned op
  // Instances are numbered micro-batch by micro-batch (the ops of one micro-batch, which
  // run close together, sit close together in the per-instance arrays): op o's instance j
  // is op_inst[o] + j * inst_stride; ops that run once come first.
  std::vector<uint32_t> op_inst;  // instance 0 of each op; size n_ops + 1
  uint32_t inst_stride = 0;       // ops that run once per micro-batch
  std::vector<uint32_t> op_produced;
  std::vector<uint64_t> op_alloc_each;   // output bytes allocated per instance and device
  std::vector<uint64_t> op_alloc_first;  // ... once (accumulated gradients), first instance
  std::vector<uint8_t> op_started;
  std::vector<double> op_disp;       // host dispatch time per instance (profile, per category)
  std::vector<uint64_t> op_ws_run;   // workspace + rematerialised activations (recompute)
  std::vector<uint8_t> op_opt_wait;  // optimizer op waits for the step barrier
  std::vector<int32_t> op_dp;        // data-parallel group size of the op's replicas
  std::vector<double> op_bdiv;       // batch divisor of one instance (replicas x copies x mbs)
  // MoE (expert_parallel.cpp). Static: role (MoeRole, -1 = none) and MoE layer of each op
  // (backward and optimizer ops take their forward op's), routed experts per MoE layer.
  std::vector<int8_t> op_moe_role;
  std::vector<int32_t> op_moe_layer;
  std::vector<int> moe_experts;
  std::vector<int> moe_topk;        // per MoE layer: experts per token
  std::vector<uint8_t> moe_padded;  // per MoE layer: experts padded to a capacity (same work)
  // Per run, under expert parallelism (ep_on): per MoE layer the slowest rank's tokens
  // relative to an even share (ep x its share), the largest fraction of the experts' weights a
  // rank holds, the a2a bytes of one dispatch and each rank's relative load; per op the
  // fraction of its weights a rank holds (1 = all) and its expert-data-parallel group size.
  bool ep_on = false;
  int ep_degree = 1, etp_degree = 1;
  std::vector<double> moe_factor, moe_keep;
  std::vector<uint64_t> moe_a2a_bytes;
  // Per MoE layer: the EP group's devices, and the largest share of one rank's dispatch bytes
  // a rank sends or receives within its node, across nodes, and that one node's NIC carries
  // (expert_parallel.cpp, "map-aware all-to-all").
  std::vector<std::vector<int>> moe_group;
  std::vector<std::array<double, 3>> moe_a2a_frac;
  std::vector<double> moe_a2a_time;  // one all-to-all; < 0: the group's time for the bytes
  std::vector<std::vector<double>> expert_load;
  std::vector<double> op_expert_keep;
  std::vector<uint32_t> op_expert_dp;

  // Instances.
  uint32_t n_inst = 0;
  std::vector<uint32_t> inst_op;
  std::vector<int32_t> pending;
  std::vector<uint64_t> inst_key;  // ready-queue priority: slot << 32 | topo rank
  std::vector<double> ready_time, start_time, end_time;
  std::vector<uint32_t> ready_cause, cause;

  // Tensors and sites.
  struct Site {
    TensorId tensor;
    int32_t dev;
    uint8_t source;      // the producer's device(s)
    uint32_t refs_mb;    // reads per instance (once tensors: all reads)
    uint32_t refs_last;  // extra reads of the last instance (once consumers of multi tensors)
    uint32_t ref_base;   // index into refs of instance 0 (ref_of)
    uint64_t bytes;      // memory held at this site per instance
  };
  std::vector<uint8_t> t_mb;       // one instance per micro-batch
  std::vector<uint8_t> t_recomp;   // activation recomputed before backward (not held)
  std::vector<uint64_t> t_sync_bytes;  // gradient bytes the data-parallel sync moves
  std::vector<uint64_t> t_bytes;   // payload of one instance
  std::vector<int32_t> t_sync;     // gradient sync group, -1 = none
  std::vector<TensorId> t_next;    // bucket lists
  std::vector<uint32_t> site_off;  // CSR over tensors
  std::vector<Site> sites;
  std::vector<uint32_t> refs;
  uint32_t ref_stride = 0;  // sites of tensors made per micro-batch
  // Unread references of instance i of a tensor at site s (i = 0 for a tensor made once).
  uint32_t& ref_of(const Site& s, uint32_t i) { return refs[s.ref_base + i * ref_stride]; }
  // Per site: the device that sends the tensor there (the primary source, or with tensor
  // parallelism across a stage boundary the TP peer), the bytes on the wire and the
  // all-gather inside the receiving TP group that follows (Megatron's scatter / gather).
  std::vector<int32_t> site_sender;
  std::vector<uint64_t> site_wire;
  std::vector<double> site_gather;
  std::vector<uint32_t> site_epoch, site_of_dev;  // scratch for building sites
  uint32_t epoch = 0;

  // Devices.
  std::vector<uint8_t> dev_running, dev_used;
  std::vector<int32_t> dev_lock;
  std::vector<double> dev_busy_until, comm_free, compute_time;
  // Devices without copy engines (DeviceSpec::overlap_transfers false): a transfer they send
  // or receive waits for their running op, and ops issued after it wait for its end.
  std::vector<uint8_t> dev_blocking;
  bool any_blocking = false;
  std::vector<double> xfer_busy_until;  // per device: end of its last blocking transfer
  std::vector<double> host_issued;  // per device: when its host issued its last op
  std::vector<double> host_wait;    // per device: idle time waiting for the host to issue
  double overlap_slowdown = 1.0;
  bool p2p_host_sync = false;
  // Eager MoE host (moe_host.cpp): per op, the host waits for its instance's end before it
  // issues anything else (the forward dispatch op under CostProfile::moe_host_sync).
  std::vector<uint8_t> op_host_sync;
  // Step barrier before the optimizer (loss-scale found-inf / gradient-norm all-reduces).
  uint32_t barrier_pending = 0;  // gradients not yet synchronised; 0 = no barrier
  double barrier_time = 0;       // seconds of the barrier's collectives
  uint32_t barrier_cause = kNoInst;
  std::vector<int> barrier_devs;
  double tied_time = 0;  // tied-embedding gradient all-reduce (part of the barrier)
  std::vector<std::pair<int, uint64_t>> tied_memory;  // (device, bytes) of embedding copies
  std::vector<int64_t> mem_cur, mem_peak, mem_resident;
  struct ReadyItem {
    uint64_t key;
    uint32_t inst;
  };
  std::vector<std::vector<ReadyItem>> ready;
  std::vector<int32_t> dirty;
  std::vector<uint8_t> dirty_flag;
  // Communication intervals per device (start, end), for the union in comm_time; mostly
  // appended in start order, sorted at the end only when they were not.
  std::vector<std::vector<std::pair<double, double>>> comm_iv;
  std::vector<uint8_t> comm_unsorted;

  // Collective groups (cached across runs) and gradient sync.
  std::map<std::vector<int>, uint32_t> group_ids;
  std::vector<std::vector<int>> group_devs;
  std::vector<std::vector<int>> group_sorted;  // per group: its devices, sorted
  std::vector<CollectiveGroup> groups;
  std::vector<int> scratch_devs;
  std::vector<uint32_t> part_group;  // per partition
  struct Sync {
    uint32_t group;
    uint32_t remaining;  // gradients not yet added to a bucket
    uint64_t open_bytes;
    TensorId head, tail;
  };
  std::vector<Sync> syncs;
  std::vector<int32_t> dev_sync;    // non-pipelined: sync of a primary device (-2 = none)
  std::vector<int32_t> stage_sync;  // pipelined: sync of a stage (-2 = none)
  struct Bucket {
    uint32_t sync;
    TensorId head;
    uint64_t bytes;
  };
  std::vector<Bucket> buckets;

  // Pipeline gates. GPipe: a stage's backward starts after all its forward micro-batches
  // (the flush). 1F1B: backward j after forward j of the stage; on a pipeline rank the
  // forward passes are numbered in the order the rank runs them (virtual index k; with
  // interleaving, chunk by chunk in groups of n_ranks micro-batches, as Megatron does) and
  // forward k waits for backward k - warmup - 1 of the rank.
  bool gpipe = false;
  int n_ranks = 1;  // pipeline ranks: stages / virtual stages
  int vstages = 1;  // model chunks per rank
  std::vector<int32_t> rank_warmup;  // forward passes a rank runs before its first backward
  std::vector<uint8_t> rank_gated;   // some forward of the rank waits for a backward
  bool paired_passes = false;        // expert all-to-all overlap: 1F1B steps run F and B together
  std::vector<int32_t> bwd_left;        // [stage * M + mb]: backward instances not finished
  std::vector<int32_t> fwd_left;        // [stage * M + mb]: forward instances not finished
  std::vector<int32_t> fwd_left_stage;  // per stage: forward instances not finished
  std::vector<int32_t> stage_ops_scratch;
  std::vector<std::vector<uint32_t>> held;  // per rank: instances waiting at a gate
  bool gated(uint32_t inst) const;
  void release_held(int rank);
  int stage_rank(int s) const { return s % n_ranks; }
  // Virtual index of micro-batch j's forward / backward pass of stage s on its rank.
  int64_t fwd_vindex(int s, int j) const {
    return int64_t(j / n_ranks) * n_ranks * vstages + int64_t(s / n_ranks) * n_ranks + j % n_ranks;
  }
  int64_t bwd_vindex(int s, int j) const {
    return int64_t(j / n_ranks) * n_ranks * vstages +
           int64_t(vstages - 1 - s / n_ranks) * n_ranks + j % n_ranks;
  }

  // Events.
  enum EventKind : uint8_t { kFinish, kGangStart, kArrive, kPartDone, kBucketDone, kBarrier };
  struct ReadyAfter {  // heap order: smallest key
    bool operator()(const ReadyItem& x, const ReadyItem& y) const { return x.key > y.key; }
  };
  EventQueue events;
  double now = 0;
  uint32_t finished = 0;

  std::vector<uint32_t> dev_cur;  // instance occupying (or last occupying) each device

  // Symmetric simulation: every TP rank of a group but the first two is left out; rank 1
  // stands for ranks 1.. (rank 0 differs: it is the primary, which sends and syncs).
  bool folded = false;
  std::vector<std::vector<int>> part_run;  // per partition: the devices simulated
  std::vector<uint32_t> dev_mult;          // per device: the devices it stands for (>= 1)
  std::string full_reason;                 // why every device is simulated; empty when folded

  // Helpers (inline: the event loop calls them for every tensor and op).
  // The devices partition i runs on in this simulation.
  const std::vector<int>& part_devs(int32_t i) const {
    return folded ? part_run[i] : plan->partitions[i].devices;
  }
  const int* devs_of(OpId o, int* count) const {
    if (op_part[o] >= 0) {
      const std::vector<int>& d = part_devs(op_part[o]);
      *count = static_cast<int>(d.size());
      return d.data();
    }
    *count = 1;
    return &op_dev[o];
  }
  bool on_device(OpId o, int dev) const {
    if (op_part[o] < 0) return op_dev[o] == dev;
    if (folded) {
      const std::vector<int>& run = part_run[op_part[o]];
      return std::find(run.begin(), run.end(), dev) != run.end();
    }
    const std::vector<int>& members = group_sorted[part_group[op_part[o]]];
    return std::binary_search(members.begin(), members.end(), dev);
  }
  uint32_t n_inst_of(OpId o) const { return op_multi[o] ? static_cast<uint32_t>(M) : 1u; }
  uint32_t inst_of(OpId o, uint32_t j) const { return op_inst[o] + j * inst_stride; }
  uint32_t last_inst(OpId o) const { return inst_of(o, n_inst_of(o) - 1); }
  uint32_t mb_of(OpId o, uint32_t inst) const {  // the micro-batch of instance inst of op o
    return op_multi[o] ? (inst - op_inst[o]) / inst_stride : 0;
  }
  uint32_t find_site(TensorId t, int dev) const;
  uint32_t producer_inst(TensorId t, uint32_t i) const;

  // Engine steps (simulator_engine.cpp).
  void push_event(double time, EventKind kind, uint32_t a, uint32_t b = 0);
  void mark_dirty(int d);
  void make_ready(uint32_t inst);
  void dec_pending(uint32_t inst, uint32_t producer);
  void dispatch(int d);
  void prepare_moe_host();
  void host_waits_for(OpId o, double end, const int* devs, int n);
  void start_single(uint32_t inst, int d);
  void start_gang(uint32_t inst, int d);
  void begin_gang(uint32_t inst);
  void on_finish(uint32_t inst);
  void produce(uint32_t inst);
  void make_available(TensorId t, uint32_t i, uint32_t producer);
  void deliver(uint32_t site, uint32_t i, uint32_t producer);
  double blocked_from(int d) const;
  void issue_transfer(uint32_t site, uint32_t i);
  /// The channels a transfer from src to dst holds: *a, and *b when >= 0.
  void transfer_channels(int src, int dst, int32_t* a, int32_t* b);
  void on_arrive(uint32_t site, uint32_t i);
  void bucket_add(TensorId t);
  void launch_bucket(uint32_t sync_index);
  void on_bucket_done(uint32_t bucket);
  void gradient_ready();
  void on_barrier();
  double issue_time(int d, OpId o);
  double reserve_comm(const std::vector<int>& devs, double duration, double* start);
  void alloc_outputs(OpId o);
  void alloc(int d, uint64_t bytes);
  void release(int d, uint64_t bytes) { mem_cur[d] -= static_cast<int64_t>(bytes); }
  void release_ref(uint32_t site, uint32_t i);
  void add_comm(int d, double start, double end);
  void record_compute(uint32_t inst, int d);
};

}  // namespace placer
