#pragma once
// Discrete-event simulation of one training step of a Graph under a Plan on a Cluster.
//
// Construct once per (graph, cluster, cost model); run(plan) many times. run() reuses
// buffers allocated by the constructor / the first run, so the hot loop does not allocate.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/graph/routing_stats.h"
#include "src/plan/plan.h"

namespace placer {

class CostModel;

struct SimOptions {
  bool record_events = false;  ///< fill SimResult::events (for traces)
  bool critical_path = true;   ///< fill SimResult::critical_path
  /// How the MoE layers route their tokens (share[moe layer][expert]); null or empty =
  /// uniform. Read only under expert parallelism (plan.expert_parallel): the EP rank whose
  /// experts get the most tokens sets each layer's expert time. The caller keeps it alive
  /// for the run.
  const RoutingStats* routing = nullptr;
  /// Simulate every device even when the plan is symmetric (simulator/symmetry.cpp).
  bool exact = false;
};

/// One interval on the timeline (for Chrome/Perfetto traces and tests).
struct SimEvent {
  enum Kind : uint8_t { kCompute, kTransfer, kCollective, kOptimizer };
  Kind kind = kCompute;
  int device = 0;        ///< device that runs it (source device for transfers)
  int peer = -1;         ///< destination device for transfers, -1 otherwise
  OpId op = kNoOp;       ///< op (compute), producer op of the tensor (transfer), or kNoOp
  TensorId tensor = kNoTensor;
  int micro_batch = -1;  ///< pipeline micro-batch, -1 when not pipelined
  double start = 0;      ///< seconds from step start
  double end = 0;
  uint64_t bytes = 0;    ///< transfer / collective payload
  /// kCollective: its CollectiveKind (cost_profile.h) as a number. A collective with an op
  /// is a partition's (tensor parallelism), with a tensor and no op a data-parallel
  /// gradient bucket, with neither the step barrier before the optimizer. An all-to-all
  /// (expert-parallel dispatch / combine) carries its dispatch or combine op.
  uint8_t collective = 0;
};

struct SimResult {
  double step_time = 0;               ///< seconds for one training step (makespan)
  std::vector<double> compute_time;   ///< per device: busy computing
  std::vector<double> comm_time;      ///< per device: sending, receiving or in collectives
  std::vector<double> idle_time;      ///< per device: step_time - compute_time (may overlap comm)
  std::vector<double> host_wait;      ///< per device: idle while its host issued the next op
  /// per device: seconds its forward / backward compute waited for FSDP parameter
  /// all-gathers (inside those ops' times; data_parallel.fsdp only, else empty)
  std::vector<double> fsdp_forward_wait, fsdp_backward_wait;
  /// Per device: exposed key / value exchange of context-parallel attention inside the
  /// forward / backward op times (empty without context parallelism).
  std::vector<double> context_forward_wait, context_backward_wait;
  std::vector<uint64_t> peak_memory;  ///< per device: peak bytes
  /// Expert parallelism: expert_load[l][r] = the routed tokens EP rank r computes in MoE
  /// layer l relative to an even share (1 = balanced; the largest sets the layer's expert
  /// GEMMs). Empty without expert parallelism.
  std::vector<std::vector<double>> expert_load;
  bool oom = false;                   ///< some device's peak exceeds its capacity
  std::vector<int> oom_devices;
  std::vector<OpId> critical_path;    ///< ops on the path that ends last, in order
  std::vector<SimEvent> events;       ///< when SimOptions::record_events
  // Counters (additive to the contract; handy for tests and reports).
  uint64_t simulated_ops = 0;     ///< op executions simulated (ops x micro-batches)
  uint64_t num_transfers = 0;     ///< point-to-point transfers (one per tensor instance, device)
  uint64_t transfer_bytes = 0;
  uint64_t num_collectives = 0;   ///< gradient buckets + partition collectives
  uint64_t collective_bytes = 0;
  // Plans with a synchronization section (simulator/sync_strategies.h): step_time is then
  // the steady-state step over a window of steps.
  double compute_step_time = 0;  ///< the engine's step with the gradient sync free
  double sync_network_time = 0;  ///< sum over variables of their network time alone
  double sync_codec_time = 0;    ///< compression encode + decode on the busiest worker
  /// Which simulation ran: symmetric (true) simulated two ranks of every tensor-parallel
  /// group and gave the others their results (equal to the full simulation's); full (false)
  /// simulated every device, for the reason in `full_reason`.
  bool symmetric = false;
  std::string full_reason;
};

class Simulator {
 public:
  Simulator(const Graph& graph, const Cluster& cluster, const CostModel& cost);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  /// Simulates one step. The plan must be valid (Plan::validate); run() checks cheaply and
  /// throws ValidationError on a mismatch rather than reading out of bounds.
  SimResult run(const Plan& plan, const SimOptions& options = {});

  const Graph& graph() const { return graph_; }
  const Cluster& cluster() const { return cluster_; }
  const CostModel& cost_model() const { return cost_; }

 private:
  struct Impl;
  const Graph& graph_;
  const Cluster& cluster_;
  const CostModel& cost_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace placer
