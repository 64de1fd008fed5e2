// A DeepSpeed config (JSON) of a Megatron-style plan without tensor parallelism
// (docs/export.md#deepspeed). Keys are DeepSpeed's (deepspeed/runtime/config.py) except
// pipeline.parts, placer's layer boundaries for a PipelineModule subclass (DeepSpeed keeps
// unknown keys of its "pipeline" section).
#include <nlohmann/json.hpp>
#include <string>

#include "src/io/export_checks.h"
#include "src/io/plan_export.h"

namespace placer {

using export_checks::fail;

std::string deepspeed_config(const MegatronConfig& m, int layers, DType dtype) {
  if (m.tp > 1) {
    fail("tensor_parallel.degree", std::to_string(m.tp) +
                                       ": a DeepSpeed config has no tensor parallelism (Megatron-DeepSpeed sets "
                                       "it on the command line; export to megatron)");
  }
  if (m.cp > 1) {
    fail("context_parallel.degree",
         std::to_string(m.cp) +
             ": a DeepSpeed config has no ring attention (DeepSpeed-Ulysses is "
             "set up in the model code; export to megatron or torchtitan)");
  }
  if (m.ep > 1 || m.etp > 1) {
    fail("expert_parallel.degree",
         std::to_string(m.ep) +
             ": DeepSpeed-MoE sets ep_size in the model code (deepspeed.moe.layer.MoE), "
             "not in the config; export to megatron or torchtitan");
  }
  if (m.virtual_stages > 1) {
    fail("pipeline.virtual_stages", std::to_string(m.virtual_stages) +
                                        ": DeepSpeed's pipeline engine has no interleaved schedule");
  }
  if (m.recompute == Recompute::kSelective || m.recompute == Recompute::kSelectiveOp) {
    fail("recompute", std::string(to_string(m.recompute)) +
                          ": DeepSpeed checkpoints whole layers (activation_checkpoint_interval)");
  }
  export_checks::recompute_every_layer(m, "DeepSpeed");
  if (m.fp8)
    fail("precision.fp8",
         "true: a DeepSpeed config has no FP8 GEMMs (export to megatron or torchtitan)");
  if (m.fsdp.enabled) {
    fail("data_parallel.fsdp",
         "enabled: DeepSpeed's ZeRO-3 prefetches by bucket size, not FSDP2's one block "
         "ahead (export to torchtitan)");
  }
  if (m.pp > 1 && m.zero_stage > 1) {
    fail("data_parallel.zero_stage", std::to_string(m.zero_stage) +
                                         " with a pipeline: DeepSpeed's pipeline engine supports ZeRO stage 0 or 1");
  }
  export_checks::schedule_is_1f1b(m, "DeepSpeed");
  export_checks::loss_scaling_matches(m, dtype, "DeepSpeed");

  nlohmann::ordered_json j;
  j["train_batch_size"] = m.global_batch;
  j["train_micro_batch_size_per_gpu"] = m.micro_batch;
  j["gradient_accumulation_steps"] = megatron_micro_batches(m);
  j["gradient_clipping"] = m.grad_clipping ? 1.0 : 0.0;
  j["zero_optimization"] = {{"stage", m.zero_stage}, {"overlap_comm", m.overlap_grad_reduce}};
  if (dtype == DType::kF16) j["fp16"] = {{"enabled", true}, {"loss_scale", 0}};  // 0 = dynamic
  if (dtype == DType::kBF16) j["bf16"] = {{"enabled", true}};
  j["pipeline"] = {{"stages", m.pp},
                   {"activation_checkpoint_interval", m.recompute == Recompute::kFull ? 1 : 0},
                   {"parts", export_checks::layer_boundaries(m, layers)}};
  return j.dump(2) + "\n";
}

}  // namespace placer
