#pragma once
// A framework configuration read back into a plan (docs/export.md): Megatron-LM arguments,
// DeepSpeed configs and torchtitan job files become a MegatronConfig, and megatron_plan builds the
// plan, so a user's current configuration can be simulated and compared with placer's plans.
//
//   FrameworkConfig f = parse_megatron_arguments("--tensor-model-parallel-size 2 ...", 8);
//   Plan p = plan_of_framework_config(f, graph);
//
// Errors name the argument or key: ValidationError "--micro-batch-size: missing" /
// FormatError "zero_optimization.stage: not an integer" (callers prefix the source).

#include <optional>
#include <string>
#include <vector>

#include "src/io/plan_export.h"
#include "src/plan/megatron_plan.h"

namespace placer {

struct FrameworkConfig {
  MegatronConfig config;
  int layers = 0;  ///< layers the configuration names (--num-layers, pipeline.parts); 0 = none
  /// Routed experts per MoE layer and experts per token it names (--num-experts,
  /// --moe-router-topk); 0 = a dense model or not said. Checked against the graph's.
  int experts = 0, top_k = 0;
  DType dtype = DType::kF32;  ///< compute type it trains in
  std::vector<std::string> ignored;  ///< arguments / keys it has that placer does not model
  /// The attention kernel it runs ("flash" for fused attention, "unfused"; "" = not said).
  /// A graph option, not a plan field: the plan simulates the graph it is given.
  std::string attention;
  /// Settings it has that are recorded but not modelled yet (e.g. "compile.enable: ...").
  std::vector<std::string> notes;
  /// Where the configuration sets the global batch and the layers (for messages).
  std::string batch_field = "global batch", layers_field = "layers";
  /// The format the configuration came in: the plan read must export back to it (the same
  /// checks as `placer export`), so nothing imports that cannot export. Unset: no check.
  std::optional<ExportFormat> format;
  /// The argument / key that set the pipeline split (named when the split cannot export).
  std::string stages_field = "pipeline stages";
};

/// Megatron-LM arguments (whitespace-separated; "--name value" or "--name=value"; lines may
/// end in a shell's " \" and '#' starts a comment). Data parallelism is the world size over
/// tp x pp, as in Megatron-LM.
FrameworkConfig parse_megatron_arguments(const std::string& args, int world_size);

/// A DeepSpeed config (JSON text). Data parallelism is the world size over the pipeline
/// stages; pipeline.parts (placer's layer boundaries) sets the layers per stage.
FrameworkConfig parse_deepspeed_config(const std::string& json_text, int world_size);

/// A torchtitan job config (TOML; torchtitan/config/job_config.py's keys): [parallelism]
/// degrees (data_parallel_shard_degree -1 = the rest of the world size), FSDP's reshard
/// setting as ZeRO-2 / ZeRO-3 with the FSDP2 schedule (HSDP: shard groups of the shard
/// degree), the pipeline schedule and module_fqns_per_model_part, [training] batch sizes,
/// max_norm and mixed_precision_param, [activation_checkpoint] (every k-th layer:
/// recompute_every; "op": selective_op), the float8 converter (precision.fp8).
/// FormatError for bad TOML, a wrong type or an unknown key of a section it reads;
/// ValidationError naming the key for what plans cannot express (context / expert
/// parallelism, MX converters, HSDP without resharding).
FrameworkConfig parse_torchtitan_config(const std::string& toml_text, int world_size);

/// megatron_plan of the configuration on `g`, computing in f.dtype (precision.compute is set
/// only when it differs from the graph's own type). ValidationError naming the field when
/// the layers or the global batch differ from the graph's, or when the plan would not export
/// back to f.format: "<stages_field>: the plan read does not export back to megatron:
/// pipeline.stages: 8 layers do not split evenly over 6 stages ...".
Plan plan_of_framework_config(const FrameworkConfig& f, const Graph& g);

}  // namespace placer
