#include "src/io/export_checks.h"

#include "src/util/error.h"

namespace placer::export_checks {

void fail(const std::string& field, const std::string& message) {
  throw ValidationError(format_context("", field, message));
}

void loss_scaling_matches(const MegatronConfig& m, DType dtype, const std::string& framework) {
  if (dtype == DType::kF16 && !m.loss_scaling) {
    fail("precision.loss_scaling", "false, but " + framework + " trains fp16 with dynamic loss scaling");
  }
  if (dtype != DType::kF16 && m.loss_scaling) {
    fail("precision.loss_scaling", std::string("true, but the step computes in ") + to_string(dtype) +
                                       " and " + framework + " scales the loss only in fp16");
  }
}

void schedule_is_1f1b(const MegatronConfig& m, const std::string& framework) {
  if (m.schedule != PipelineSchedule::k1F1B) {
    fail("pipeline.schedule", std::string(to_string(m.schedule)) + ": " + framework +
                                  " runs 1F1B (interleaved with virtual stages), not GPipe");
  }
}

void recompute_every_layer(const MegatronConfig& m, const std::string& framework) {
  if (m.recompute_every != 1) {
    fail("recompute_every", std::to_string(m.recompute_every) + ": " + framework +
                                " checkpoints groups of consecutive layers, not every k-th layer "
                                "(torchtitan's selective_ac_option does)");
  }
}

std::vector<int> layer_boundaries(const MegatronConfig& m, int layers) {
  std::vector<int> b = {0};
  for (int c : megatron_stage_layers(m, layers)) b.push_back(b.back() + c);
  return b;
}

}  // namespace placer::export_checks
