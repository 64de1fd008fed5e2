#pragma once
// The "rainbow-3d" placer: Auto-MAP's explorers (Wang et al. 2020, "Auto-MAP: A DQN Framework
// for Exploring Distributed Execution Plans for DNN Workloads") composed into one hybrid plan
// search. Torch-free header; the implementation (agents/rainbow/rainbow_3d.cpp) needs LibTorch.
//
//  1. Operator sharding (rainbow-opp's DQN, env/opp_env.h) once per tensor-parallel degree
//     t > 1 that fits in a host: the sharding of every trainable variable over t devices,
//     one decision per block for all layers (OppEnvOptions::tie_layers), attention heads
//     included (the attention-core rule of env/sharding_rules.cpp). Scored on the whole
//     step over t devices with memory ignored (the later stages fit memory).
//  2. Shapes (t, cp, pp, dp = devices / (t cp pp), v virtual stages per rank, and the expert
//     layout ep x etp): each is probed with the balanced cuts and the sharding applied to every
//     stage's first TP group. Context parallelism (cp > 1, ring attention) where the graph
//     is a layered transformer with fused attention and a sequence long enough, expert
//     parallelism (ep, etp) where it has mixture-of-experts layers: the degrees the megatron
//     grid offers (agents/common/megatron_space.h). Such graphs have many shapes: the grid's
//     analytic memory estimate drops those that fit with no memory saver, its step estimate
//     orders the rest, and the first `max_shapes` are probed, with the first savers the
//     estimate fits them with. Elsewhere every (t, pp, v) shape is probed, in loop order.
//  3. Pipeline cuts (rainbow-pp's DQN over PipelineEnv's layer pivots,
//     agents/rainbow/rainbow_pp_episodes.h) on the best `top_shapes` probed shapes with pp > 1,
//     each terminal cut set scored by simulating the whole 3-D plan; when the shape's probe ran out
//     of memory, every cut set is scored with the first memory savers that make the balanced cuts
//     fit (SP and ZeRO-1, then selective, then full recomputation).
//  4. Data parallelism and micro-batches: for the best plans (the cut-searched ones, then the
//     other probed shapes), sequence parallelism (Korthikanti et al. 2022) when the sharding
//     found is Megatron's (the plan then holds the tensor_parallel shorthand,
//     as_tensor_parallel_shorthand in src/plan/tensor_parallel.h), the other key-value
//     exchanges of context parallelism (Ulysses' a2a, allgather) and the shape's other expert
//     layouts (each kept when faster), micro-batch counts, ZeRO-1 and selective then full
//     recomputation (only while no plan fits), while runs are left.
//  0. Warm start (before 1-4), when the `megatron` method applies (a layered transformer with
//     Megatron op names on consecutive devices): the megatron grid (agents/classical/
//     megatron_grid.h) runs first, for `grid_seconds` (and at most `grid_runs` simulations).
//     Its plan is the incumbent and its shape (tp, cp, pp, v, dp, ep, etp, micro-batches,
//     savers) comes first: at its TP degree the sharding is Megatron's (no sharding search
//     there), its shape gets the first cut search (scored with its micro-batches and savers)
//     and the first step 4; then the other shapes as in 1-4. The result is never slower than the grid's plan.
//     Elsewhere (e.g. CNNs) the grid does not apply and the search is 1-4 alone.
// Budgets are simulator runs (SearchBudget::max_evaluations, default `runs`), split over the
// stages by `opp_share` and `pp_share` (the rest: probes and step 4); a stage's unspent share
// passes on. The grid's runs come on top (they are bounded by its time). The fastest plan that
// fits wins. See docs/rainbow.md, "rainbow-3d".

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/outcome.h"
#include "agents/rainbow/rainbow_pp.h"

namespace placer {

struct Rainbow3DOptions {
  int runs = 300;          ///< simulator runs when the budget gives none
  double opp_share = 0.2;  ///< of the runs: the operator-sharding searches (split over t)
  double pp_share = 0.3;   ///< of the runs: the cut searches (split over the top shapes)
  int max_tp = 8;          ///< largest tensor-parallel degree tried (powers of two)
  int max_pp = 8;          ///< largest pipeline depth tried
  /// Most model chunks per pipeline rank (interleaved 1F1B, Narayanan et al. 2021): shapes
  /// with v = 2 and 4 (pp x v stages, cuts searched over all of them) when <= this.
  int max_virtual_stages = 4;
  int top_shapes = 2;  ///< probed shapes with pp > 1 that get a cut search
  /// Most shapes probed where the graph allows context or expert parallelism (the fastest by
  /// the grid's estimate among those it fits); elsewhere every shape is probed.
  int max_shapes = 64;
  /// Most training episodes of one operator-sharding search (repeated states are cached and
  /// cost no run, so the runs usually bind first).
  int opp_episodes = 300;
  bool tie_layers = true;  ///< one sharding decision per block for every layer
  /// Data-parallel gradients all-reduced during backward (false: after the last backward,
  /// Megatron's default and the `megatron` grid's).
  bool overlap_grad_reduce = false;
  /// Warm start: seconds for the megatron grid before the search (0: no warm start); capped
  /// at half of SearchBudget::max_seconds when that is set.
  double grid_seconds = 10;
  /// Most configurations the warm start's grid simulates (0: as many as grid_seconds allow;
  /// a cap makes the warm start independent of the machine's speed).
  int grid_runs = 0;
  /// Cut search: scope_depth (pivots; 0 = layer boundaries), prune_radius, epsilon decay and
  /// the agent settings (the layout search and episodes of RainbowPPOptions are not used).
  RainbowPPOptions cuts = [] {
    RainbowPPOptions o;
    o.scope_depth = 0;
    return o;
  }();
};

/// The counts of one search; Rainbow3DPlacer::search_outcome reports them as named values
/// (SearchOutcome::stats: "tp", "pp", "virtual_stages", "dp", "micro_batches", "opp_runs",
/// "cut_runs", "layout_runs", "step_time", "shapes", "probe_runs", "zero_stage",
/// "recompute": 0 none, 1 selective, 2 full, "sequence_parallel", "cp", "cp_comm" (0 p2p,
/// 1 a2a, 2 allgather), "ep", "etp", "grid_runs", "grid_step_time":
/// the warm start's, 0 without one; "runs_to_5pct": simulator runs until the best plan was
/// within 5% of the returned one, -1 when none fit). SearchStats::runs counts every
/// simulation, the grid's too.
struct Rainbow3DStats {
  int64_t runs = 0;  ///< simulator runs of steps 2-4 (the budgeted ones besides opp_runs)
  int64_t opp_runs = 0, probe_runs = 0, cut_runs = 0, layout_runs = 0;
  int64_t grid_runs = 0;      ///< configurations the warm start's megatron grid simulated
  double grid_step_time = 0;  ///< its plan's simulated step (0: no warm start)
  int shapes = 0;                                 ///< (t, pp, dp) shapes probed
  int tp = 1, pp = 1, dp = 1, micro_batches = 1;  ///< of the returned plan
  int v = 1;                                      ///< its virtual stages per rank
  int cp = 1, ep = 1, etp = 1;                    ///< its context and expert parallelism
  ContextParallelComm cp_comm = ContextParallelComm::kP2P;
  int zero_stage = 0;
  int recompute = 0;               ///< 0 none, 1 selective, 2 full
  bool sequence_parallel = false;  ///< Megatron's sharding as the shorthand, with SP on
  double step_time = 0;  ///< simulated, of the returned plan
  double seconds = 0;
  /// At each improvement of the best fitting plan: (simulator runs so far, the grid's and
  /// the sharding searches' included; its step time). Gives "runs_to_5pct".
  std::vector<std::pair<int64_t, double>> improvements;
};

class Rainbow3DPlacer : public OutcomePlacer {
 public:
  explicit Rainbow3DPlacer(Rainbow3DOptions options = {}) : options_(std::move(options)) {}
  std::string name() const override { return "rainbow-3d"; }
  /// ValidationError on a graph that is not a training step, bad options, or when no shape
  /// gives a runnable plan. Throws placer::Error without LibTorch.
  SearchOutcome search_outcome(const Problem& problem, const SearchBudget& budget) override;

 private:
  Rainbow3DOptions options_;
};

}  // namespace placer
