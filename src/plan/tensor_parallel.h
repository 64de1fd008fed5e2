#pragma once
// Megatron-style tensor parallelism as a plan shorthand (docs/parallelism.md).
//
// `tensor_parallel: {degree: 4, style: megatron, sequence_parallel: false}` in a plan stands
// for the per-op partitions Megatron-LM
// uses (Shoeybi et al. 2019; Korthikanti et al. 2022 for sequence parallelism):
//  - column-parallel linears (fused QKV, MLP up-projection, LM head): weights split on the
//    output dim, outputs stay sharded, the input gradient is all-reduced in backward;
//  - sharded ops between them (attention core, bias+GeLU / SwiGLU, rotary) on local shards;
//  - row-parallel linears (attention output, MLP down-projection): split on the contraction
//    dim, the output all-reduced in forward, nothing in backward;
//  - everything else of a layer (norms, bias-dropout-add, embeddings' add and dropout) is
//    replicated on every rank of the group, on full inputs, with no collective;
//  - vocabulary-parallel word embedding (an all-reduce of its output) and cross-entropy.
// With sequence parallelism the replicated ops are split on the sequence dim instead; the
// all-reduces become reduce-scatter (row outputs) and all-gather (before column inputs).
//
// A stage's own `tensor_parallel: k` overrides the degree for that stage when the shorthand
// is present; without the shorthand it only makes the stage a TP x DP grid, and its ops are
// partitioned as the plan's `partitions` say (an unpartitioned op runs on TP rank 0).
// The TP group of an op is the first `degree` devices of its pipeline stage (TP ranks are
// contiguous, as Megatron orders them), or, without a pipeline, `degree` devices starting at
// the op's placement. Ops are matched by name (the GPT / LLaMA generators' Megatron module
// names, and the Transformer generator's names); a forward op that matches nothing is an
// error naming it. Partitions the plan gives explicitly are kept.

#include <optional>
#include <string>

#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {

/// What Megatron does with a forward op under tensor parallelism.
enum class TensorParallelRole : uint8_t {
  kColumn,      ///< column-parallel linear
  kSharded,     ///< element-wise / attention work on local shards
  kRow,         ///< row-parallel linear
  kReplicated,  ///< runs whole on every rank (norms, residual adds, dropout, inputs)
  kVocabEmbedding,
  kVocabLoss,
  kUnknown,
};
const char* to_string(TensorParallelRole r);

/// The role of forward op `op` by its name (and category for inputs); kUnknown when it
/// matches none of the patterns of docs/parallelism.md.
TensorParallelRole megatron_role(const Op& op);

/// True when `plan` uses tensor parallelism that must be expanded (the shorthand, or a
/// stage with tensor_parallel > 1).
bool needs_tensor_parallel_expansion(const Plan& plan);

/// The plan with the shorthand expanded: every stage's tensor_parallel set (the stage's own
/// or the shorthand degree), one partition per forward op of a TP > 1 stage (explicit
/// partitions kept), `tensor_parallel` cleared. Throws ValidationError
/// ("tensor_parallel: ...") naming an op it cannot match or a device group that does not fit.
Plan expand_tensor_parallel(const Plan& plan, const Graph& g, int num_devices);

/// The shorthand that `plan`'s explicit partitions spell, when they do: every pipeline stage
/// has the same tensor_parallel degree d > 1, every column- and row-parallel linear of the
/// layers (Op::layer >= 0) is partitioned exactly (dim, devices, levels, sharded / replicated
/// flags, collectives) as `tensor_parallel: {degree: d}` (sequence parallelism off) expands it, and
/// expanding the shorthand with the partitions that differ from it kept explicit gives the plan's
/// partitions again (as a set). Then that plan: the shorthand set, only the differing
/// partitions left (e.g. a replicated LM head, a split position embedding), so that sequence
/// parallelism can be turned on (and, without leftovers, the plan exported as a framework's
/// configuration); nullopt otherwise (another sharding, ops the shorthand cannot name, no pipeline,
/// a shorthand already set).
std::optional<Plan> as_tensor_parallel_shorthand(const Plan& plan, const Graph& g, int num_devices);

}  // namespace placer
