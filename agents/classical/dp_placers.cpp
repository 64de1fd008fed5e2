// The dynamic-programming placers: pipeline-dp (PipeDream / DAPPLE) and partition-dp
// (OptCNN / Tofu). The algorithms live in agents/classical/pipeline_dp.* and agents/classical/partition_dp.*.

#include <memory>

#include "agents/api/methods.h"
#include "agents/common/function_placer.h"
#include "agents/classical/partition_dp.h"
#include "agents/classical/pipeline_dp.h"

namespace placer {

void add_dynamic_programming_methods(std::vector<MethodInfo>* out) {
  out->push_back(function_method(
      "pipeline-dp",
      "PipeDream/DAPPLE dynamic program: stage cuts, per-stage replication, stages on "
      "consecutive devices aligned to hosts where it pays, 1F1B",
      [](const Problem& p, const SearchBudget&) { return pipeline_dp_plan(p); }));
  PartitionPlacerOptions levels;
  levels.try_levels = true;
  out->push_back(function_method(
      "partition-dp",
      "OptCNN/Tofu dynamic program over the op chain: a split dim per op (batch, output "
      "channel or reduction) over all devices, or one per recursive-halving level on 2^L "
      "devices",
      [levels](const Problem& p, const SearchBudget&) { return partition_dp_plan(p, levels); }));
}

}  // namespace placer
