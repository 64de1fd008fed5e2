#pragma once
// Checks the framework writers share (src/io/export_*.cpp); each throws ValidationError
// "field: why" naming the framework.

#include <string>
#include <vector>

#include "src/plan/megatron_plan.h"

namespace placer::export_checks {

[[noreturn]] void fail(const std::string& field, const std::string& message);

/// fp16 trains with dynamic loss scaling in every framework here, bf16 and f32 without:
/// precision.loss_scaling must match the compute type.
void loss_scaling_matches(const MegatronConfig& m, DType dtype, const std::string& framework);

/// Megatron-LM and DeepSpeed run 1F1B (interleaved with virtual stages), never GPipe.
void schedule_is_1f1b(const MegatronConfig& m, const std::string& framework);

/// Recomputation of every layer (recompute_every 1): Megatron-LM and DeepSpeed checkpoint
/// groups of consecutive layers, never every k-th layer alone.
void recompute_every_layer(const MegatronConfig& m, const std::string& framework);

/// Per-stage layer counts of `m` as a pipeline-rank boundary list: {0, c0, c0 + c1, ..., layers}.
std::vector<int> layer_boundaries(const MegatronConfig& m, int layers);

}  // namespace placer::export_checks
