#pragma once
// The common interface of every placer, classical or learned: search(problem, budget) ->
// Plan, so that `placer place --method X` and `placer compare` treat them alike.
//
// A new method is one class + one registration line in agents/registry.cpp (KaMinPar style:
// name -> factory), plus its CLI options if it has any.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {

/// What to place: a training-step graph on a cluster, with the cost model that judges it.
/// `simulator` is shared by the methods that evaluate candidate plans.
struct Problem {
  const Graph& graph;
  const Cluster& cluster;
  const CostModel& cost;
  Simulator& simulator;
  /// Devices a method may use (default: all). Methods place only on these.
  std::vector<int> devices;
};

/// How much a search may spend. 0 = the method's own default.
struct SearchBudget {
  int64_t max_evaluations = 0;  ///< simulator runs
  double max_seconds = 0;       ///< wall-clock seconds
  uint64_t seed = 1;            ///< every random choice derives from this
  /// Lossy gradient synchronisation a method may choose (docs/sync.md); off by default
  /// because compression and staleness change how many steps training needs.
  bool allow_compression = false;
  int max_staleness = 0;  ///< 0 = synchronous
  /// Optional progress report of long searches: (work done, total or 0 if unknown, short
  /// status). Called often; the receiver throttles (see src/util/progress.h).
  std::function<void(int64_t done, int64_t total, const std::string& status)> progress;
};

class Placer {
 public:
  virtual ~Placer() = default;
  /// The method's name as on the command line ("metis", "m-etf", ...).
  virtual std::string name() const = 0;
  /// Returns a plan for the problem. Throws placer::Error (with a clear message) when the
  /// method cannot produce one (e.g. the graph fits on no device arrangement it considers).
  /// The returned plan's `method` is set to name(); `predicted` may be left empty (the
  /// caller simulates it).
  virtual Plan search(const Problem& problem, const SearchBudget& budget) = 0;
};

struct MethodInfo {
  std::string name;
  std::string description;
  bool fast = true;  ///< part of `--method best` (seconds on 10k-op graphs)
  std::function<std::unique_ptr<Placer>()> make;
};

/// All registered methods, in display order.
const std::vector<MethodInfo>& placer_methods();
/// Factory; throws placer::Error naming the known methods for an unknown name.
std::unique_ptr<Placer> make_placer(const std::string& name);

/// Helpers shared by methods --------------------------------------------------------------

/// Devices of a problem (problem.devices, or all devices of the cluster when empty).
std::vector<int> problem_devices(const Problem& p);
/// Plan with `device_of_op` as placement (size num_ops), method set.
Plan placement_plan(const Problem& p, std::vector<int> device_of_op, const std::string& method);
/// Bytes each op needs resident on its device regardless of time: param + state bytes
/// (gradient of parameters counted too: param bytes again when the op owns parameters).
uint64_t resident_bytes(const Graph& g, OpId op);

}  // namespace placer
