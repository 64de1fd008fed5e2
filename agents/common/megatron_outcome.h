#pragma once
// The chosen configuration of a `megatron` grid search as named values of its outcome, so
// other families (rainbow-3d's warm start) read it through the method registry without
// including the grid (agents/classical/megatron_grid.h). Torch-free.

#include "agents/api/search_outcome.h"
#include "src/plan/megatron_plan.h"

namespace placer {

/// Adds m's fields to stats as named values ("tp", "pp", "dp", "micro_batch",
/// "virtual_stages", "recompute", "sequence_parallel", "zero_stage"; "cp", "ep", "etp" when
/// not 1).
void add_megatron_config(const MegatronConfig& m, SearchStats* stats);

/// The configuration add_megatron_config recorded (the fields it names; the others keep
/// their defaults).
MegatronConfig megatron_config_of_outcome(const SearchStats& stats);

}  // namespace placer
