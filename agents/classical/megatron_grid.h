#pragma once
// The `megatron` method: the grid of Megatron-LM configurations users know, searched on a
// layered transformer (a graph from `placer generate gpt|llama`, whose op names carry
// Megatron's module paths).
//
// The grid: tp divides the attention heads and fits in one host, cp (context parallelism,
// p2p ring attention; graphs with fused attention only) splits the sequence into 2 x cp
// chunks and leaves each rank at least 1024 tokens, pp divides the layers, dp = devices / (tp x cp
// x pp) divides the global batch, ep (MoE graphs) divides cp x dp and the experts with etp 1 or tp,
// every micro-batch size dividing global_batch / dp, virtual stages (interleaved 1F1B) dividing
// layers / pp, and the memory savers sequence parallelism, ZeRO-1 (distributed optimizer) and
// selective / full recomputation. An analytic memory estimate drops configurations that cannot fit;
// an analytic step-time estimate orders the rest (a deterministic order), and the simulator runs
// them best-first until every survivor has run or the budget is spent: simulator runs (1000 by
// default, more than a typical grid holds), and seconds only when the budget gives them.
//
//   MegatronGrid grid = megatron_grid(problem);   // survivors, ordered
//   Plan plan = MegatronGridPlacer().search(problem, budget);

#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/megatron_outcome.h"  // megatron_config_of_outcome
#include "agents/common/megatron_space.h"    // TransformerShape, MegatronCandidate
#include "src/plan/megatron_plan.h"

namespace placer {

struct MegatronGrid {
  int enumerated = 0;                     ///< configurations in the grid
  std::vector<MegatronCandidate> fitting;  ///< those the memory estimate keeps, fastest first
};

/// The grid on the problem's devices (which must be consecutive device ids).
MegatronGrid megatron_grid(const Problem& problem);

/// The counts of one search; MegatronGridPlacer::search_outcome reports them as named values
/// ("enumerated", "fitting", "simulated", "best_index", and the chosen configuration's
/// fields, read back by megatron_config_of_outcome).
struct MegatronGridStats {
  int enumerated = 0, fitting = 0, simulated = 0;
  int best_index = -1;  ///< position of the chosen one in the fitting list
  MegatronConfig best;
};

class MegatronGridPlacer : public Placer {
 public:
  std::string name() const override { return "megatron"; }
  Plan search(const Problem& problem, const SearchBudget& budget) override;
  /// The plan; runs = configurations simulated; the named values of MegatronGridStats.
  SearchOutcome search_outcome(const Problem& problem, const SearchBudget& budget) override;

 private:
  MegatronGridStats stats_;
};

/// "tp 2, pp 2, dp 2, mb 4, v 1, recompute none, sp off, zero 0".
std::string describe(const MegatronConfig& m);


}  // namespace placer
