#pragma once
// The common interface of every placer, classical or learned: search(problem, budget) ->
// Plan, so that `placer place --method X` and `placer compare` treat them alike.
//
// A new method is one class + one registration (a MethodInfo: name -> factory, KaMinPar
// style, with its option schema) in its family's add_*_methods (agents/api/methods.h). A
// method with options owns them: agents/<family>/<method>_options.cpp holds its OptionTable.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/api/option_spec.h"
#include "agents/api/search_budget.h"
#include "agents/api/search_outcome.h"
#include "simulator/cost_model.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"
#include "src/plan/plan.h"
#include "src/plan/plan_frame.h"

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
  /// How the placement will run (micro-batches, replicas): set by the hybrid outer loop for
  /// placers that honour it (Placer::honours_frame); the returned plan stays a placement.
  PlanFrame frame = {};
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
  /// The plan with how the search went (agents/api/search_outcome.h). Methods that count
  /// their runs override it (and search() returns its plan); the default has empty stats.
  virtual SearchOutcome search_outcome(const Problem& problem, const SearchBudget& budget) {
    return {search(problem, budget), {}};
  }
  /// Whether the search scores its placements inside Problem::frame (see there).
  virtual bool honours_frame() const { return false; }
};

/// The options of one run of a method: `--set KEY=VALUE` strings, applied in order through
/// the method's option table; `flag` is how they were given (named in errors).
struct MethodSettings {
  std::vector<std::string> sets;
  std::string flag = "--set";
};

struct MethodInfo {
  std::string name;
  std::string description;  ///< one line
  bool fast = true;  ///< part of `--method best` (seconds on 10k-op graphs)
  std::function<std::unique_ptr<Placer>()> make;
  /// The options `placer place --method NAME --set KEY=VALUE` takes, with their defaults
  /// (agents/api/option_spec.h); empty for a method without options.
  std::vector<OptionSpec> options = {};
  /// The method with `settings` applied (ValidationError naming a bad key or value); null
  /// for a method without options.
  std::function<std::unique_ptr<Placer>(const MethodSettings&)> make_with = nullptr;
  /// Every option with its value once `settings` are applied (what `placer place` records as
  /// the effective configuration); null for a method without options. make_with,
  /// effective_options and options come from the method's option table
  /// (agents/common/method_options.h with_options).
  std::function<std::vector<OptionSpec>(const MethodSettings&)> effective_options = nullptr;
};

/// All registered methods, in display order.
const std::vector<MethodInfo>& placer_methods();
/// The registration of `name`; throws placer::Error naming the known methods for an unknown
/// name.
const MethodInfo& method_info(const std::string& name);
/// Factory; throws placer::Error naming the known methods for an unknown name.
std::unique_ptr<Placer> make_placer(const std::string& name);
/// Factory with options; also throws for a method without options when settings.sets is
/// non-empty ("<flag> applies to the methods with options (...), not to --method NAME").
std::unique_ptr<Placer> make_placer(const std::string& name, const MethodSettings& settings);
/// Names of the methods that take options, comma separated.
std::string methods_with_options();
/// "<flag> applies to the Rainbow placers and the other methods with options (...), not to
/// --method <method>".
std::string options_not_taken(const std::string& flag, const std::string& method);

/// Helpers shared by methods --------------------------------------------------------------

/// Devices of a problem (problem.devices, or all devices of the cluster when empty).
std::vector<int> problem_devices(const Problem& p);
/// Plan with `device_of_op` as placement (size num_ops), method set.
Plan placement_plan(const Problem& p, std::vector<int> device_of_op, const std::string& method);
/// Bytes each op needs resident on its device regardless of time: param + state bytes
/// (gradient of parameters counted too: param bytes again when the op owns parameters).
uint64_t resident_bytes(const Graph& g, OpId op);

}  // namespace placer
