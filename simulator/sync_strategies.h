#pragma once
// The cost of per-variable gradient synchronisation (a plan's `synchronization` section,
// docs/sync.md). The event engine runs the step with the data-parallel sync free and
// records when each gradient is ready; this model then adds the traffic of every variable's
// strategy on the real links and folds it into a steady-state step time.
//
// Network model: every device has an outgoing and an incoming port per link level (intra
// host, inter host; one inter-host port per host when the cluster shares a NIC per host).
// A point-to-point message of b bytes from a to b loads a's out port and b's in port with
// b / bandwidth(a, b) seconds; a collective (all-reduce, all-gather) loads each
// participant's ports with its cost-model time. A variable alone takes the sum over its
// phases (PS: local reduce, push, pull, local broadcast) of the busiest port plus the
// phase's latency; all variables together are bounded by the busiest port's total.
//  - PS (Li et al. 2014; 002_*.txt): each worker (or each host's leader under local
//    aggregation) pushes 1/shards of its gradient to each of `shards` destinations and
//    pulls the same back; W workers on one server make its in port carry W x the bytes.
//  - all-gather: the sparse rows of each worker gathered by all (W x rows bytes).
//  - sfb (Poseidon, Zhang et al. 2017): an FC layer's gradient sent as its batch factors,
//    b x (m + n) per worker, all-gathered, rebuilt with a matmul.
// Compressors: wire bytes and encode / decode time on the worker (memory passes; PowerSGD's
// matmuls through the cost model), error-feedback buffers in memory.
// Staleness: a window of steps where step k+1 waits only for the syncs of step k - s.

#include <cstdint>
#include <vector>

#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {

/// What one variable costs under its strategy (per step, per worker).
struct VariableSyncCost {
  OpId op = kNoOp;
  uint64_t grad_bytes = 0;   ///< gradient a worker holds (sparse: rows_touched x row bytes)
  uint64_t wire_bytes = 0;   ///< what a worker sends after compression
  double encode_time = 0;    ///< compressing on the worker
  double decode_time = 0;    ///< decompressing what it receives
  double network_time = 0;   ///< the variable alone on the network (phases in sequence)
  uint64_t state_bytes = 0;  ///< compressor state per worker (error feedback, PowerSGD's Q)
  std::vector<double> port_load;  ///< seconds per port (ports of SyncCostModel)
};

/// Wire bytes of `elems` elements of `dtype` under a compressor: fp16 2 bytes each (from a
/// wider float), onebit ceil(elems / 8) + 8 (one bit each plus the two f32 reconstruction
/// values of 1-bit SGD, Seide et al. 2014), topk k = ceil(ratio x elems) values plus 4-byte
/// indices, powersgd (rows + cols) x rank values (P and Q, Vogels et al. 2019).
uint64_t compressed_bytes(const VariableSync& s, uint64_t elems, DType dtype, uint64_t rows,
                          uint64_t cols);

/// Per-variable costs of a plan with a synchronization section.
class SyncCostModel {
 public:
  SyncCostModel(const Graph& g, const Cluster& c, const CostModel& cost, const Plan& plan);
  /// The cost of forward op `v` (a variable) under `s`.
  VariableSyncCost variable_cost(OpId v, const VariableSync& s) const;
  int num_ports() const { return 4 * n_dev_; }
  /// The workers of variable `v`: its device in every replica.
  std::vector<int> workers(OpId v) const;

 private:
  struct Phase {
    std::vector<double> load;  // seconds per port
    double latency = 0;
  };
  int port(int device, bool out, bool inter) const;
  void message(Phase* ph, int a, int b, double bytes) const;
  void collective(Phase* ph, const std::vector<int>& devs, double seconds) const;
  double codec_time(int device, double bytes, double flops) const;
  double fused_collective(CollectiveKind k, const std::vector<int>& devs, double bytes,
                          SyncScheme algo) const;
  // An all-gather of every worker's `bytes_each` (hierarchical when `algo` is, else ring).
  Phase gather_phase(const std::vector<int>& workers, double bytes_each, SyncScheme algo) const;
  // Parameter servers: local sums (local aggregation), push, pull, local broadcasts.
  void parameter_server_phases(const std::vector<int>& workers, const VariableSync& s, double wire,
                               std::vector<Phase>* phases) const;
  // The phases in sequence: their network time and port loads added to *out.
  void add_network(const std::vector<Phase>& phases, VariableSyncCost* out) const;

  const Graph& g_;
  const Cluster& c_;
  const CostModel& cost_;
  const Plan& plan_;
  int n_dev_ = 0;
  std::vector<int> host_leader_;  // per device: the first device of its host
  bool nic_per_host_ = false;
  uint64_t fused_total_ = 0;  // gradient bytes of all variables (tensor fusion's buckets)
};

/// Inputs of the steady-state window: the engine's step with free sync, and per variable
/// its ready time, cost and staleness.
struct SyncWindowInput {
  double compute_step = 0;  ///< step time without sync, codec included
  double tail = 0;          ///< from the last gradient ready to the end of the step
  struct Var {
    double ready = 0;
    double busy = 0;               ///< encode + network + decode alone
    std::vector<double> port_load;
    int staleness = 0;             ///< -1 = async
  };
  std::vector<Var> vars;
};

/// Steady-state step time over a window of steps: step k + 1 starts when step k's compute
/// is done, the staleness-0 syncs of step k have finished (plus the tail) and each stale
/// class's sync of step k - s has finished; the network serves one class after another.
double steady_state_step(const SyncWindowInput& in);

/// Applies the plan's synchronization section to an engine result whose gradient sync was
/// free: step time, network / codec time, compressor memory (and OOM).
/// `grad_ready[t]` = when gradient tensor t was produced (replica 0).
void apply_sync_strategies(const Graph& g, const Cluster& c, const CostModel& cost,
                           const Plan& plan, const std::vector<double>& grad_ready,
                           SimResult* r);

}  // namespace placer
