// The dynamic-programming placers: pipeline-dp (PipeDream / DAPPLE) and partition-dp
// (OptCNN / Tofu). The algorithms live in agents/classical/pipeline_dp.* and agents/classical/partition_dp.*.

#include <memory>

#include "agents/api/methods.h"
#include "agents/classical/partition_dp.h"
#include "agents/classical/pipeline_dp.h"
#include "agents/common/function_placer.h"
#include "agents/common/method_options.h"
#include "agents/common/objective.h"

namespace placer {

void add_dynamic_programming_methods(std::vector<MethodInfo>* out) {
  // `objective`: what its stage costs model (PipelinePlacerOptions::objective); `fold`:
  // also search folded stages.
  static const OptionTable<PipelinePlacerOptions> pipeline_options = [] {
    OptionTable<PipelinePlacerOptions> t("pipeline-dp");
    t.flag(
        "fold",
        "also search folded stages, a leading and a trailing segment of the layer chain on "
        "the same devices (V-shaped), and keep that plan when it simulates better by the "
        "objective (docs/dp_placers.md)",
        [](auto& o) -> auto& { return o.fold; });
    add_objective_option(
        t, [](auto& o) -> auto& { return o.objective; },
        "what the stage costs model: the step (a replica's gradient all-reduce added to its "
        "compute), or the steady state of pipelined execution (each device busy for the longer "
        "of its compute share and its communication, all-reduce and its share of the boundary "
        "transfers; their sum without copy engines; docs/dp_placers.md)");
    return t;
  }();
  auto pipeline_dp = [](const PipelinePlacerOptions& o) {
    return std::unique_ptr<Placer>(new FunctionPlacer(
        "pipeline-dp",
        [o](const Problem& p, const SearchBudget&) { return pipeline_dp_plan(p, o); }));
  };
  out->push_back(with_options(
      function_method(
          "pipeline-dp",
          "PipeDream/DAPPLE dynamic program: stage cuts, per-stage replication, stages on "
          "consecutive devices aligned to hosts where it pays, 1F1B",
          [](const Problem& p, const SearchBudget&) { return pipeline_dp_plan(p); }),
      pipeline_options, PipelinePlacerOptions{}, pipeline_dp));
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
