// Megatron-LM arguments of a Megatron-style plan (docs/export.md#megatron). The names are
// those of Megatron-LM's argument parser (megatron/training/arguments.py).
#include <sstream>
#include <string>
#include <vector>

#include "src/io/export_checks.h"
#include "src/io/plan_export.h"

namespace placer {

using export_checks::fail;

namespace {

/// --context-parallel-size / --cp-comm-type, and the mixture-of-experts arguments of an MoE
/// model (the expert tensor-parallel size always written: Megatron-LM's default is tp).
void add_context_and_expert_arguments(const MegatronConfig& m, const MoeShape& moe,
                                      std::vector<std::string>* args) {
  if (m.cp > 1) {
    args->push_back("--context-parallel-size " + std::to_string(m.cp));
    args->push_back(std::string("--cp-comm-type ") + to_string(m.cp_comm));
  }
  if (!moe.present()) {
    if (m.ep > 1 || m.etp > 1) {
      fail("expert_parallel", "the graph has no mixture-of-experts layers to spread over " +
                                  std::to_string(m.ep) + " expert-parallel ranks");
    }
    return;
  }
  args->push_back("--num-experts " + std::to_string(moe.experts));
  args->push_back("--moe-router-topk " + std::to_string(moe.top_k));
  args->push_back("--expert-model-parallel-size " + std::to_string(m.ep));
  args->push_back("--expert-tensor-parallel-size " + std::to_string(m.etp));
  if (m.dispatcher != ExpertDispatcher::kAllToAll) {
    args->push_back("--moe-token-dispatcher-type flex");
    args->push_back(std::string("--moe-flex-dispatcher-backend ") + to_string(m.dispatcher));
  }
  if (m.moe_a2a_overlap) args->push_back("--overlap-moe-expert-parallel-comm");
}

}  // namespace

std::string megatron_arguments(const MegatronConfig& m, int layers, DType dtype,
                               const MoeShape& moe) {
  export_checks::schedule_is_1f1b(m, "Megatron-LM");
  export_checks::loss_scaling_matches(m, dtype, "Megatron-LM");
  if (m.zero_stage > 1) {
    fail("data_parallel.zero_stage", std::to_string(m.zero_stage) +
                                         ": Megatron-LM's distributed optimizer is ZeRO-1 (stage 0 or 1 only)");
  }
  export_checks::recompute_every_layer(m, "Megatron-LM");
  if (m.recompute == Recompute::kSelectiveOp) {
    fail("recompute",
         "selective_op: Megatron-LM's selective recomputation is the core attention's "
         "(recompute: selective)");
  }
  const int chunks = m.pp * m.virtual_stages;
  const bool uneven = m.first_stage_layers > 0 || m.last_stage_layers > 0;
  if (!uneven && layers % chunks != 0) {
    fail("pipeline.stages", std::to_string(layers) + " layers do not split evenly over " +
                                std::to_string(chunks) +
                                " stages and the split is not an even one with a different first / last stage");
  }
  // One argument per line, continued for a shell; the comment says what Megatron infers.
  std::vector<std::string> args = {
      "--tensor-model-parallel-size " + std::to_string(m.tp),
      "--pipeline-model-parallel-size " + std::to_string(m.pp),
      "--num-layers " + std::to_string(layers),
      "--micro-batch-size " + std::to_string(m.micro_batch),
      "--global-batch-size " + std::to_string(m.global_batch),
  };
  if (m.sequence_parallel) args.push_back("--sequence-parallel");
  add_context_and_expert_arguments(m, moe, &args);
  if (m.virtual_stages > 1) {
    args.push_back("--num-layers-per-virtual-pipeline-stage " + std::to_string(layers / chunks));
  }
  if (!m.scatter_gather && m.pp > 1) args.push_back("--no-scatter-gather-tensors-in-pipeline");
  if (m.first_stage_layers > 0) {
    args.push_back("--decoder-first-pipeline-num-layers " + std::to_string(m.first_stage_layers));
  }
  if (m.last_stage_layers > 0) {
    args.push_back("--decoder-last-pipeline-num-layers " + std::to_string(m.last_stage_layers));
  }
  if (m.recompute == Recompute::kFull) {
    args.push_back("--recompute-granularity full");
    args.push_back("--recompute-method uniform");
    args.push_back("--recompute-num-layers 1");
  } else if (m.recompute == Recompute::kSelective) {
    args.push_back("--recompute-granularity selective");
  }
  if (m.zero_stage == 1) args.push_back("--use-distributed-optimizer");
  if (m.overlap_grad_reduce) args.push_back("--overlap-grad-reduce");
  if (dtype == DType::kF16) args.push_back("--fp16");
  if (dtype == DType::kBF16) args.push_back("--bf16");
  // Transformer Engine's hybrid format: E4M3 forward, E5M2 gradients (per-tensor scaling).
  if (m.fp8) args.push_back("--fp8-format hybrid");
  args.push_back(std::string("--clip-grad ") + (m.grad_clipping ? "1.0" : "0.0"));

  std::ostringstream out;
  const int world = m.tp * m.cp * m.pp * m.dp;
  out << "# Megatron-LM arguments (placer export): world size " << world << " = tp " << m.tp
      << (m.cp > 1 ? " x cp " + std::to_string(m.cp) : std::string()) << " x pp " << m.pp
      << " x dp " << m.dp << " on cluster devices " << m.first_device << ".."
      << m.first_device + world - 1 << " (Megatron infers dp from the world size)\n";
  for (size_t i = 0; i < args.size(); ++i) out << args[i] << (i + 1 < args.size() ? " \\\n" : "\n");
  return out.str();
}

}  // namespace placer
