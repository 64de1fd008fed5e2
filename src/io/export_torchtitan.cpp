// The [training], [parallelism] and [activation_checkpoint] sections of a torchtitan job
// config (TOML) for a Megatron-style plan, with the float8 converter for FP8 plans
// (docs/export.md#torchtitan). Keys are torchtitan's (torchtitan/config/job_config.py).
#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "src/io/export_checks.h"
#include "src/io/plan_export.h"

namespace placer {

using export_checks::fail;

namespace {

std::string toml_string(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

/// The module an op belongs to in a pipeline stage's module list: a layer op's `...layers.<i>`
/// prefix of its scope, another op's scope, or its own name when its scope is an ancestor of
/// the layers (Megatron's final_layernorm sits in `language_model.encoder`). Losses are left
/// out (torchtitan computes the loss outside the model); "" = none.
std::string stage_module(const Op& op, const std::string& layer_parent) {
  if (op.category == OpCategory::kInput) return "";
  if (op.type.find("CrossEntropy") != std::string::npos || op.type.find("Loss") != std::string::npos) return "";
  if (op.layer >= 0) {
    const std::string key = "." + std::to_string(op.layer);
    const size_t at = op.scope.find(key);
    if (at != std::string::npos && (at + key.size() == op.scope.size() || op.scope[at + key.size()] == '.')) {
      return op.scope.substr(0, at + key.size());
    }
    return op.scope;
  }
  if (op.scope.empty() || (!layer_parent.empty() && layer_parent.rfind(op.scope, 0) == 0)) return op.name;
  return op.scope;
}

/// The scope that holds the layer modules (e.g. "language_model.encoder.layers").
std::string layer_parent_of(const Graph& g) {
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.op(o);
    if (op.phase != Phase::kForward || op.layer < 0) continue;
    const std::string m = stage_module(op, "");
    const size_t dot = m.rfind('.');
    return dot == std::string::npos ? "" : m.substr(0, dot);
  }
  return "";
}

std::string module_lists(const Plan& p, const Graph& g) {
  const std::string parent = layer_parent_of(g);
  std::string out = "[";
  for (size_t s = 0; s < p.pipeline.stages.size(); ++s) {
    std::vector<std::string> names;
    std::set<std::string> seen;
    std::vector<OpId> ops = p.pipeline.stages[s].ops;
    std::sort(ops.begin(), ops.end());
    for (OpId o : ops) {
      const std::string m = stage_module(g.op(o), parent);
      if (!m.empty() && seen.insert(m).second) names.push_back(m);
    }
    out += s ? ", [" : "[";
    for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + toml_string(names[i]);
    out += "]";
  }
  return out + "]";
}

/// torchtitan shards with FSDP2: the per-block schedule prefetching one block each way,
/// parameters resharded after forward ("never" reads back as ZeRO-2), its dtypes those of
/// [training]. Returns the shard degree (the HSDP group, else dp). With context parallelism
/// torchtitan's FSDP shards over data_parallel_shard_degree x context_parallel_degree ranks
/// (its dp_shard_cp mesh, CP fastest as in Megatron's order), so a plan's HSDP shard group
/// of data-parallel copies spans whole CP groups: shard degree = shard_group / cp.
int fsdp_shard_degree(const MegatronConfig& m) {
  const FsdpConfig& fs = m.fsdp;
  if (m.zero_stage == 3 && !fs.enabled) {
    fail("data_parallel.fsdp",
         "off with zero_stage 3: torchtitan shards with FSDP2's per-block "
         "schedule (set data_parallel.fsdp.enabled)");
  }
  if (!fs.enabled) return m.dp;
  if (fs.forward_prefetch != 1 || fs.backward_prefetch != 1) {
    fail("data_parallel.fsdp", "prefetch " + std::to_string(fs.forward_prefetch) + " / " +
                                   std::to_string(fs.backward_prefetch) +
                                   ": torchtitan's FSDP2 prefetches one block ahead each way");
  }
  if (!fs.reshard_after_forward) {
    fail("data_parallel.fsdp.reshard_after_forward",
         "false: torchtitan writes it as fsdp_reshard_after_forward \"never\", which reads back as "
         "zero_stage 2 without the FSDP schedule");
  }
  if (fs.param_dtype_set || fs.reduce_dtype_set) {
    fail("data_parallel.fsdp",
         "param_dtype / reduce_dtype: torchtitan takes them from "
         "training.mixed_precision_param / mixed_precision_reduce");
  }
  if (fs.shard_group <= 0) return m.dp;
  if (fs.shard_group % m.cp != 0) {
    fail("data_parallel.fsdp.shard_group",
         std::to_string(fs.shard_group) + " with context_parallel.degree " + std::to_string(m.cp) +
             ": torchtitan's HSDP shard groups hold whole context-parallel groups (a multiple "
             "of " +
             std::to_string(m.cp) + " copies)");
  }
  return fs.shard_group / m.cp;
}

/// [activation_checkpoint]: whole layers ("full", or "selective" every k-th layer) or
/// op-level selective ("op"); Megatron's core-attention recomputation has no mode.
std::string checkpoint_section(const MegatronConfig& m) {
  const bool every_k = m.recompute_every > 1;
  if (m.recompute == Recompute::kSelective) {
    fail("recompute",
         "selective (the core attention's): torchtitan's selective modes are op-level "
         "(selective_op) or every k-th layer");
  }
  if (every_k && m.recompute != Recompute::kFull) {
    fail("recompute_every", std::to_string(m.recompute_every) + " with recompute " +
                                to_string(m.recompute) +
                                ": torchtitan checkpoints every k-th layer whole (recompute full)");
  }
  std::string out = "\n[activation_checkpoint]\n";
  if (every_k) {
    return out + "mode = \"selective\"\nselective_ac_option = " +
           toml_string(std::to_string(m.recompute_every)) + "\n";
  }
  if (m.recompute == Recompute::kSelectiveOp) {
    return out + "mode = \"selective\"\nselective_ac_option = \"op\"\n";
  }
  return out + "mode = " + toml_string(to_string(m.recompute)) + "\n";
}

/// [parallelism] keys of context and expert parallelism. torchtitan's ring attention passes
/// KV shards by all-to-all ("alltoall", placer's p2p ring) or all-gathers them; it has no
/// Ulysses head split, and expert tensor parallelism is 1 or the tensor-parallel degree.
std::string context_and_expert_keys(const MegatronConfig& m) {
  std::string out;
  if (m.cp > 1) {
    if (m.cp_comm == ContextParallelComm::kAllToAll) {
      fail("context_parallel.comm",
           "a2a: torchtitan's context parallelism is ring attention "
           "(p2p or allgather), not the Ulysses head split");
    }
    out += "context_parallel_degree = " + std::to_string(m.cp) + "\n";
    out += "context_parallel_rotate_method = " +
           toml_string(m.cp_comm == ContextParallelComm::kAllGather ? "allgather" : "alltoall") +
           "\n";
  }
  if (m.ep > 1 || m.etp > 1) {
    if (m.etp != 1 && m.etp != m.tp) {
      fail("expert_parallel.tensor_parallel",
           std::to_string(m.etp) +
               ": torchtitan's expert tensor parallelism is 1 or the "
               "tensor-parallel degree " +
               std::to_string(m.tp));
    }
    out += "expert_parallel_degree = " + std::to_string(m.ep) + "\n";
    out += "expert_tensor_parallel_degree = " + std::to_string(m.etp) + "\n";
  }
  return out;
}

}  // namespace

std::string torchtitan_config(const MegatronConfig& m, const Plan& p, const Graph& g, DType dtype) {
  if (m.tp > 1 && !m.sequence_parallel) {
    fail("tensor_parallel.sequence_parallel", "false: torchtitan's tensor parallelism always splits the "
                                              "norms along the sequence (sequence parallelism)");
  }
  if (dtype == DType::kF16) fail("precision", "fp16: torchtitan trains in bf16 or fp32 (mixed_precision_param)");
  export_checks::loss_scaling_matches(m, dtype, "torchtitan");
  if (!m.grad_clipping) {
    fail("precision.grad_clipping", "false: torchtitan always clips the gradient norm (training.max_norm)");
  }
  if (m.zero_stage == 1) {
    fail("data_parallel.zero_stage", "1: torchtitan replicates (DDP) or shards with FSDP (ZeRO-2 / ZeRO-3), "
                                     "it has no ZeRO-1");
  }
  if (!m.overlap_grad_reduce) {
    fail("data_parallel.overlap", "false: torchtitan's DDP and FSDP always overlap the gradient "
                                  "reduction with backward");
  }
  if (m.virtual_stages > 1 && m.schedule != PipelineSchedule::k1F1B) {
    fail("pipeline.schedule", "virtual stages run the interleaved 1F1B schedule only");
  }
  const int shard_degree = fsdp_shard_degree(m);
  const int M = megatron_micro_batches(m);
  const bool pipelined = m.pp > 1;
  std::ostringstream out;
  out << "# torchtitan job config sections (placer export): " << m.tp * m.cp * m.pp * m.dp
      << " ranks = tp " << m.tp << (m.cp > 1 ? " x cp " + std::to_string(m.cp) : std::string())
      << " x pp " << m.pp << " x dp " << m.dp << "\n";
  out << "[training]\n";
  // With a pipeline the micro-batches are the pipeline's; without one they are gradient
  // accumulation steps (global_batch_size above local_batch_size x dp).
  out << "local_batch_size = " << (pipelined ? m.global_batch / m.dp : m.micro_batch) << "\n";
  out << "global_batch_size = " << m.global_batch << "\n";
  out << "max_norm = 1.0\n";
  out << "mixed_precision_param = " << toml_string(dtype == DType::kBF16 ? "bfloat16" : "float32") << "\n";
  out << "\n[parallelism]\n";
  const bool shard = m.zero_stage >= 2;
  out << "data_parallel_replicate_degree = " << (shard ? m.dp / shard_degree : m.dp) << "\n";
  out << "data_parallel_shard_degree = " << (shard ? shard_degree : 1) << "\n";
  if (shard) out << "fsdp_reshard_after_forward = " << toml_string(m.zero_stage == 3 ? "always" : "never") << "\n";
  out << "tensor_parallel_degree = " << m.tp << "\n";
  out << "pipeline_parallel_degree = " << m.pp << "\n";
  out << context_and_expert_keys(m);
  if (pipelined) {
    const char* schedule = m.virtual_stages > 1 ? "Interleaved1F1B"
                           : m.schedule == PipelineSchedule::kGPipe ? "GPipe"
                                                                    : "1F1B";
    out << "pipeline_parallel_schedule = " << toml_string(schedule) << "\n";
    out << "pipeline_parallel_microbatch_size = " << m.micro_batch << "\n";
    out << "module_fqns_per_model_part = " << module_lists(p, g) << "\n";
  } else if (M > 1 && m.schedule == PipelineSchedule::kGPipe) {
    fail("pipeline.schedule", "gpipe on one stage: torchtitan accumulates gradients one micro-batch at a time (1F1B)");
  }
  out << checkpoint_section(m);
  // torchao's float8 linears (per-tensor scaling); the output layer stays 16-bit, as in
  // placer's FP8.
  if (m.fp8) {
    out << "\n[model]\nconverters = [\"quantize.linear.float8\"]\n";
    out << "\n[quantize.linear.float8]\nfilter_fqns = [\"output\"]\n";
  }
  return out.str();
}

}  // namespace placer
