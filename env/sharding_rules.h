#pragma once
// Private to env/sharding*.cpp: variable reconstruction and the per-op propagation rules of
// ShardingPropagator (docs/opp.md). Not part of the env's public interface.
//
// Most rules are "factor" rules (GSPMD / Shardy style): the iteration space of an op is a set
// of factors (batch, M, N, K, channels, ...); each dim of each operand (data input, output,
// variable) maps to at most one factor. One factor at most is split (every split is over the
// same k devices); operands that hold it are split along their dim for it, the others are
// replicated, and an output that lacks a split contraction factor holds partial sums.

#include <cstdint>
#include <string>
#include <vector>

#include "env/sharding.h"
#include "src/graph/graph.h"

namespace placer {
namespace shard {

struct Factor {
  enum class Kind : uint8_t {
    kPass,       ///< split operands stay split (batch dims, output features, ...)
    kContract,   ///< reduced by the op: outputs without it hold partial sums
    kForbidden,  ///< splitting it needs a re-layout: conflict (softmax axis, spatial dims)
  };
  Kind kind = Kind::kPass;
  /// Operands may use different strides (`inner`) for it: a slice along a split axis keeps
  /// every piece split (per-head layout), each with its own contiguous stride.
  bool free_inner = false;
  std::string name;  ///< for conflict messages ("contraction K", "softmax axis 2", ...)
};

struct Operand {
  bool is_var = false;
  bool is_output = false;
  uint32_t id = 0;          ///< TensorId, or variable index when is_var
  std::vector<int> factor;  ///< per dim: factor index, -1 = this dim cannot be split
};

struct OpRule {
  enum class Kind : uint8_t {
    kNone,     ///< no rule (input / constant ops: their outputs are data inputs)
    kFactors,  ///< factor rule (kReplicate = a factor rule without factors)
    kReshape,  ///< operands[0] input, [1] output (flat-stride mapping), the rest replicated
  };
  Kind kind = Kind::kNone;
  std::string name;  ///< rule name for conflict messages
  std::vector<Factor> factors;
  std::vector<Operand> operands;
};

/// A reconstructed trainable variable of one op.
struct VarSpec {
  std::string suffix;  ///< "weight", "bias", "table", "scale", "param"
  std::vector<int64_t> shape;
  uint64_t bytes = 0;
  bool replicate_only = false;  ///< 1-D fallback: no rule splits it
};

/// The variables of forward op `id` (empty when it owns no parameters). Their bytes sum to
/// param_bytes; shapes that do not match param_bytes fall back to one 1-D variable.
std::vector<VarSpec> reconstruct_variables(const Graph& g, OpId id);

/// The rule of forward op `id`; `vars` are its variables' global indices (reconstruct order),
/// `specs` their specs; `degree` = k. An op without parameters tied to another op's
/// (attribute `tied_to`, GPT's output layer) gets that op's variables here.
OpRule build_rule(const Graph& g, OpId id, const std::vector<int>& vars,
                  const std::vector<VarSpec>& specs, int degree);

/// The op whose parameters forward op `id` uses (its `tied_to` attribute names it), or
/// kNoOp.
OpId tied_owner(const Graph& g, OpId id);

/// Ops whose category lets the simulator split a contraction dim (OpPartition::kReduceDim).
bool can_hold_partial(OpCategory c);

}  // namespace shard

struct ShardingPropagator::Rules {
  std::vector<shard::OpRule> rule;          ///< per op (kNone for non-forward ops)
  std::vector<OpId> forward_ops;            ///< topological order
  std::vector<std::vector<OpId>> touching;  ///< per tensor: forward ops reading / writing it
  std::vector<char> var_replicate_only;     ///< per variable
  /// Per variable: forward ops besides its owner whose rule maps it (an output layer tied to
  /// the embedding table, `tied_to`), re-queued when it changes.
  std::vector<std::vector<OpId>> var_users;
};

}  // namespace placer
