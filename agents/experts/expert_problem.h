#pragma once
// The problem every expert placer solves (docs/expert_placement.md): a mixture-of-experts
// training-step graph, routing statistics (option `routing`, which `placer place --routing
// FILE` sets) and the
// expert-parallel ranks of a plain Megatron layout (data parallel over the problem's devices,
// expert parallelism of degree `ep` carved from them); the placers choose the expert map
// (which rank holds which expert of each MoE layer, which hot experts get replicas) and the
// objective is the simulated step of the whole plan with that map. Torch-free.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/option_table.h"
#include "src/graph/routing_stats.h"
#include "src/io/routing_io.h"
#include "src/plan/expert_balance.h"
#include "src/plan/expert_search.h"

namespace placer {

/// `placer place --method eplb|round-robin|expert-anneal|expert-rl --set KEY=VALUE`.
struct ExpertMethodOptions {
  std::string routing;      ///< routing statistics (*.routing.json); required
  int64_t ep = 0;           ///< expert-parallel degree; 0 = every device of the problem
  int64_t redundant = 0;    ///< extra expert copies per layer (EPLB's redundant experts)
  int64_t groups = 0;       ///< EPLB's expert groups; 0 = one per node
  int64_t micro_batch = 1;  ///< samples per micro-batch per data-parallel rank
  int64_t evaluations = 0;  ///< expert-anneal: simulator runs (0 = the budget's, else 500)
  std::string map;          ///< also write the chosen map here (*.expert_map.json)
  std::string policy;       ///< expert-rl: policy file ("" = the shipped one)
  int64_t finetune = 0;     ///< expert-rl: REINFORCE updates on the problem (0 = zero-shot)
  int64_t samples = 8;      ///< expert-rl: rollouts per fine-tuning update (>= 2)
};

/// The options `method` (round-robin, eplb, expert-anneal, expert-rl) reads; the keys it
/// does not read are refused naming the methods that do ("--set policy (eplb): eplb does not
/// use it (read by expert-rl)").
const OptionTable<ExpertMethodOptions>& expert_method_option_table(const std::string& method);

/// The routing windows the objective averages over: the shares of each micro-batch table of
/// `t` when it has them, else of each training step's table, else none (the window's table
/// alone, RoutingTrace::stats()).
std::vector<RoutingStats> routing_windows(const RoutingTrace& t);

/// The base plan, the routing and the ranks, and the simulated step of a map. The placers
/// place from the window's shares; with routing windows (per micro-batch or per training
/// step) the step of a map is the mean of its simulated steps under each window's shares.
class ExpertProblem {
 public:
  /// The routing of option `routing`. ValidationError naming the method when it is not
  /// given or the options do not fit the problem's devices and the routing's experts.
  ExpertProblem(const Problem& p, const ExpertMethodOptions& o, const std::string& method);
  /// The window's shares of `trace` and its routing windows (option `routing` is not read).
  ExpertProblem(const Problem& p, const ExpertMethodOptions& o, const std::string& method,
                const RoutingTrace& trace);
  /// The routing given (option `routing` is not read), optionally with its windows.
  ExpertProblem(const Problem& p, const ExpertMethodOptions& o, const std::string& method,
                RoutingStats routing, std::vector<RoutingStats> windows = {});

  const RoutingStats& routing() const { return routing_; }
  int layers() const { return int(routing_.share.size()); }
  int experts() const { return int(routing_.share.front().size()); }
  const ExpertTopology& topology() const { return topo_; }
  int slots_per_rank() const { return slots_per_rank_; }
  /// The base plan with `maps` as its expert map (method set to the placer's name).
  Plan plan_with(const std::vector<ExpertLayerMap>& maps) const;
  const std::vector<RoutingStats>& windows() const { return windows_; }
  /// The simulated step of plan_with(maps), seconds, under the window's shares, or the mean
  /// over the routing windows when there are any (runs() counts the simulator runs).
  double step(const std::vector<ExpertLayerMap>& maps);
  int64_t runs() const { return runs_; }
  /// EPLB's map of every layer (redundant and groups from the options).
  std::vector<ExpertLayerMap> eplb_maps() const;
  /// The plan of the chosen maps; with the option `map`, the maps are written there too.
  Plan finish(const std::vector<ExpertLayerMap>& maps) const;

 private:
  const Problem& problem_;
  std::string method_;
  std::string map_file_;
  RoutingStats routing_;
  std::vector<RoutingStats> windows_;
  ExpertTopology topo_;
  EplbOptions eplb_;
  int slots_per_rank_ = 1;
  Plan base_;
  int64_t runs_ = 0;
};

}  // namespace placer
