// The dynamic-programming placers: pipeline-dp (PipeDream / DAPPLE) and partition-dp
// (OptCNN / Tofu). The algorithms live in agents/classical/pipeline_dp.* and agents/classical/partition_dp.*.

#include <memory>

#include "agents/api/methods.h"
#include "agents/classical/partition_dp.h"
#include "agents/classical/pipeline_dp.h"

namespace placer {

namespace {

class PipelineDpPlacer : public Placer {
 public:
  explicit PipelineDpPlacer(PipelinePlacerOptions options = {}) : options_(options) {}
  std::string name() const override { return "pipeline-dp"; }
  Plan search(const Problem& problem, const SearchBudget& /*budget*/) override {
    return pipeline_dp_plan(problem, options_);
  }

 private:
  PipelinePlacerOptions options_;
};

class PartitionDpPlacer : public Placer {
 public:
  explicit PartitionDpPlacer(PartitionPlacerOptions options = {}) : options_(options) {}
  std::string name() const override { return "partition-dp"; }
  Plan search(const Problem& problem, const SearchBudget& /*budget*/) override {
    return partition_dp_plan(problem, options_);
  }

 private:
  PartitionPlacerOptions options_;
};

}  // namespace

void add_dynamic_programming_methods(std::vector<MethodInfo>* out) {
  out->push_back({"pipeline-dp",
                  "PipeDream/DAPPLE dynamic program: stage cuts, per-stage replication, stages "
                  "on consecutive devices aligned to hosts where it pays, 1F1B",
                  true, [] { return std::make_unique<PipelineDpPlacer>(); }});
  out->push_back({"partition-dp",
                  "OptCNN/Tofu dynamic program over the op chain: a split dim per op "
                  "(batch, output channel or reduction) over all devices, or one per "
                  "recursive-halving level on 2^L devices",
                  true, [] {
                    PartitionPlacerOptions o;
                    o.try_levels = true;
                    return std::make_unique<PartitionDpPlacer>(o);
                  }});
}

}  // namespace placer
