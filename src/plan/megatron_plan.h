#pragma once
// A Megatron-LM parallel configuration as a plan (docs/parallelism.md).
//
// Megatron orders ranks tensor-parallel fastest, then context-parallel, then data-parallel,
// then pipeline: with tp = 2, dp = 2, pp = 2 on devices 0..7, stage 0 is devices 0..3 (TP
// pairs {0, 1} and {2, 3}) and stage 1 devices 4..7; with cp = 2 as well, stage 0 is devices
// 0..7, CP pairs {0, 2}, {1, 3} (per TP rank) of data-parallel rank 0, {4, 6}, {5, 7} of rank 1.
// Layers are split evenly over the stages (the first stage also holds the embedding, the last the
// final norm, LM head and loss), each stage runs global_batch / (micro_batch x dp) micro-batches
// under 1F1B, and the tensor-parallel shorthand expands to Megatron's per-op partitions when the
// plan is simulated.
//
//   MegatronConfig m;
//   m.tp = 2; m.pp = 2; m.dp = 2; m.micro_batch = 4; m.global_batch = 64;
//   Plan p = megatron_plan(gpt_graph, m);

#include <string>
#include <vector>

#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {

struct MegatronConfig {
  int tp = 1, pp = 1, dp = 1;
  /// Context parallelism (--context-parallel-size, --cp-comm-type): the world is
  /// tp x cp x dp x pp. Expert parallelism (--expert-model-parallel-size,
  /// --expert-tensor-parallel-size) is carved from the cp x dp ranks of each stage.
  int cp = 1;
  ContextParallelComm cp_comm = ContextParallelComm::kP2P;
  int ep = 1, etp = 1;
  /// --moe-token-dispatcher-type alltoall, or flex with --moe-flex-dispatcher-backend.
  ExpertDispatcher dispatcher = ExpertDispatcher::kAllToAll;
  /// --overlap-moe-expert-parallel-comm (ExpertParallelConfig::overlap).
  bool moe_a2a_overlap = false;
  int micro_batch = 1;    ///< samples per micro-batch per data-parallel rank
  int global_batch = 1;   ///< samples per step; the graph's batch size must equal it
  Recompute recompute = Recompute::kNone;
  bool sequence_parallel = false;
  int zero_stage = 0;               ///< 1 = Megatron's distributed optimizer
  bool overlap_grad_reduce = false;  ///< Megatron's --overlap-grad-reduce
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  /// Model chunks per pipeline rank (--virtual-pipeline-model-parallel-size): the layers
  /// are split into pp x virtual_stages chunks, chunk c on rank c % pp, interleaved 1F1B.
  int virtual_stages = 1;
  /// Scatter / gather of stage-boundary activations over the TP ranks (Megatron-LM's
  /// default; --no-scatter-gather-tensors-in-pipeline turns it off): PipelineConfig.
  bool scatter_gather = true;
  /// Uneven pipelines (--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers):
  /// the layers of the first / last stage; 0 = the even split. The other stages share the
  /// remaining layers evenly (they must divide). Only without virtual stages.
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  int first_device = 0;  ///< devices first_device .. first_device + tp*cp*dp*pp - 1
  /// Mixed precision as Megatron runs it: fp16 with dynamic loss scaling, or bf16; both
  /// with gradient clipping (1.0 by default).
  bool loss_scaling = true;
  bool grad_clipping = true;
  /// FP8 GEMMs (Transformer Engine's --fp8-format, torchtitan's float8 converter):
  /// precision.fp8, the weights and the other ops in the 16-bit type.
  bool fp8 = false;
  /// Recompute every k-th layer only (Plan::recompute_every; torchtitan's
  /// selective_ac_option = k); 1 = every layer.
  int recompute_every = 1;
  /// FSDP2 / HSDP per-block schedule of zero_stage 3 (data_parallel.fsdp).
  FsdpConfig fsdp;
};

/// Micro-batches per step: global_batch / (micro_batch * dp). Throws ValidationError
/// naming the field when it is not a positive integer.
int megatron_micro_batches(const MegatronConfig& m);

/// Layers per pipeline stage (model chunk, pp x virtual_stages of them) of `m` for a model of
/// `layers` layers: the even split (extra layers first) or the uneven first / last stage.
/// Throws ValidationError when the stages outnumber the layers or the uneven split does not
/// divide.
std::vector<int> megatron_stage_layers(const MegatronConfig& m, int layers);

/// Sets m->first_stage_layers / last_stage_layers so that megatron_stage_layers(*m, layers)
/// gives `count` (one entry per stage). Prefers the form Megatron-LM accepts: the plain even
/// split only when the stages divide the layers. False when no form gives `count`.
bool megatron_fit_stage_layers(MegatronConfig* m, const std::vector<int>& count, int layers);

/// The plan of configuration `m` on graph `g` (a forward-and-backward training step of a
/// layered transformer: forward ops carry their layer index). Throws ValidationError when
/// pp exceeds the layers, the batch does not divide, or the graph's batch differs.
Plan megatron_plan(const Graph& g, const MegatronConfig& m);

}  // namespace placer
