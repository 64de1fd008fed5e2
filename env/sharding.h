#pragma once
// Sharding propagation over the forward graph: Auto-MAP's "propagation" for operator
// partitioning and auto data parallelism (Wang et al. 2020, sections 3.2-3.3, 4.2-4.3),
// with GSPMD-like per-op rules on our IR. Strict: a tensor has exactly one sharding and a
// rule that would need a re-layout (a split meeting a replicated operand, softmax over a
// split axis, two splits on one tensor, ...) is a conflict. See docs/opp.md.
//
// Every sharding is over the same k devices (the partition degree). Only forward ops
// (Phase::kForward) and the tensors among them take part. Trainable variables are not
// tensors in the IR (ONNX import folds them into Op::param_bytes); their shapes are
// reconstructed from the op that owns them (docs/opp.md, "Variables").
//
//   ShardingPropagator prop(graph, 8);
//   std::vector<Sharding> vars(prop.variables().size());  // all unknown
//   vars[3] = Sharding::split(1, prop.variables()[3].shape[1] / 8);
//   PropagationResult r = prop.propagate(vars, prop.replicated_inputs());
//   if (r.conflict) std::cerr << r.conflict_reason;

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {

/// How a tensor (or variable) is laid out over the k devices.
struct Sharding {
  enum class Kind : uint8_t {
    kUnknown,     ///< not decided / not inferred
    kReplicated,  ///< whole on every device
    kSplit,       ///< split along `dim`, each device holds 1/k
    kPartial,     ///< partial sums on every device (all-reduced before any consumer reads it)
  };
  Kind kind = Kind::kUnknown;
  int dim = -1;  ///< kSplit: the split dimension
  /// kSplit: the stride, in elements of `dim`, of the split factor: element i of `dim` lives
  /// on device (i / inner) % k. inner = size(dim) / k is the contiguous (block) split;
  /// smaller values arise when a reshape merges a split dim into a larger one (the heads
  /// of an attention block inside batch x heads). Variables ignore `inner` (their layout is
  /// free: Megatron interleaves the fused q, k, v weight per head).
  int64_t inner = 0;

  static Sharding unknown() { return {}; }
  static Sharding replicated() { return {Kind::kReplicated, -1, 0}; }
  static Sharding split(int dim, int64_t inner) { return {Kind::kSplit, dim, inner}; }
  static Sharding partial() { return {Kind::kPartial, -1, 0}; }
  bool known() const { return kind != Kind::kUnknown; }
  bool operator==(const Sharding& o) const {
    return kind == o.kind && dim == o.dim && inner == o.inner;
  }
  bool operator!=(const Sharding& o) const { return !(*this == o); }
  /// "?", "R", "P", "S1" (contiguous split of dim 1 is written "S1"; else "S1/64").
  std::string to_string(int64_t dim_size = 0, int degree = 0) const;
};

/// A trainable variable of the forward graph.
struct ShardVariable {
  std::string name;            ///< "<op name>:weight", ":bias", ":table", ":scale", ...
  OpId op = kNoOp;             ///< the forward op that owns it
  std::vector<int64_t> shape;  ///< reconstructed (docs/opp.md); never empty
  uint64_t bytes = 0;          ///< its share of the op's param_bytes
};

/// One decision position of the Auto-MAP state: dimension `dim` of variable `var` (or, for
/// auto data parallelism, of data input `var`).
struct ShardSlot {
  int var = 0;
  int dim = 0;
};

/// Outcome of a propagation.
struct PropagationResult {
  bool conflict = false;
  std::string conflict_reason;      ///< names the op, its type and the rule that failed
  std::vector<Sharding> tensors;    ///< per TensorId (non-forward tensors stay kUnknown)
  std::vector<Sharding> variables;  ///< per variable
  std::vector<Sharding> inputs;     ///< per data input (data_inputs() order)
};

class ShardingPropagator {
 public:
  /// Analyses the forward ops of `g` for degree k >= 2 (ValidationError otherwise, or when
  /// the graph has no forward op). Keeps a reference to `g`.
  ShardingPropagator(const Graph& g, int degree);

  const Graph& graph() const { return g_; }
  int degree() const { return degree_; }
  /// Variables in the topological order of their ops (an op's weight before its bias).
  const std::vector<ShardVariable>& variables() const { return vars_; }
  /// Graph data inputs: forward tensors without a producer, or produced by an
  /// OpCategory::kInput op, that are not variables; in tensor id order. Candidates of
  /// auto data parallelism.
  const std::vector<TensorId>& data_inputs() const { return inputs_; }
  /// Every (variable, dim) in variables() order, dims ascending (operator partitioning).
  const std::vector<ShardSlot>& variable_slots() const { return var_slots_; }
  /// Every (data input, dim) (auto data parallelism), `var` indexing data_inputs().
  const std::vector<ShardSlot>& input_slots() const { return input_slots_; }
  /// data_inputs().size() x replicated: operator partitioning's start (no batch split).
  std::vector<Sharding> replicated_inputs() const;

  /// Propagates the given variable and data-input shardings (kUnknown = undecided; sizes
  /// must match variables() / data_inputs(), else ValidationError) to a fixpoint through
  /// the per-op rules. A split that does not divide its dim into k equal parts, or any rule
  /// violation, is a conflict (reported, never thrown). Deterministic.
  PropagationResult propagate(const std::vector<Sharding>& variables,
                              const std::vector<Sharding>& inputs) const;

 private:
  struct Impl;
  const Graph& g_;
  int degree_;
  std::vector<ShardVariable> vars_;
  std::vector<TensorId> inputs_;
  std::vector<ShardSlot> var_slots_, input_slots_;
  std::vector<std::vector<int>> op_vars_;  ///< per op: its variable indices
  struct Rules;                            ///< per-op rules (env/sharding_rules.h)
  std::shared_ptr<const Rules> rules_;
  friend struct Impl;
};

/// Auto-MAP decision vector <-> shardings. Decisions per slot: 1 partition, 0 replicate,
/// -1 undecided. A variable (input) with exactly one dim at 1 is split there (contiguous);
/// all dims 0 is replicated; otherwise unknown. Two dims at 1 is a conflict: returns false.
bool decisions_to_shardings(const ShardingPropagator& prop, const std::vector<ShardSlot>& slots,
                            const std::vector<int8_t>& decisions, size_t num_targets,
                            std::vector<Sharding>* out);
/// The slot values a propagation implies: for every slot of a target whose sharding is
/// known, 1 at the split dim and 0 elsewhere (all 0 when replicated); -1 when unknown.
/// `targets` = result.variables (operator partitioning) or result.inputs (data parallel).
std::vector<int8_t> implied_decisions(const std::vector<ShardSlot>& slots,
                                      const std::vector<Sharding>& targets);

/// Linkage group of one (slot, decision) (Auto-MAP 3.2.2, figure 10): propagate that single
/// decision alone (every other target undecided; data inputs replicated for operator
/// partitioning) and record the other slots it determines.
struct LinkageGroup {
  int slot = 0;
  int8_t decision = 0;
  bool conflict = false;                      ///< the decision alone already conflicts
  std::vector<std::pair<int, int8_t>> implied;  ///< (slot, value), slot != this slot
};
/// Two groups per slot (decision 1 then 0), slot order. `data_parallel` selects input
/// slots (undecided inputs, no variables decided) instead of variable slots.
std::vector<LinkageGroup> linkage_groups(const ShardingPropagator& prop, bool data_parallel);

/// The plan of a conflict-free propagation on `devices` (size = degree): every forward op
/// that reads or writes a split or partial tensor, or owns a split variable, is partitioned
/// over `devices`: dim = its first output's split dim, or OpPartition::kReduceDim when its
/// output is partial; sharded_output when an output is split, sharded_input when it reads a
/// split tensor. Every other op, unknown shardings included, runs on devices[0]
/// (replicated work is done once per device at the same time, so one copy times it).
/// Backward / optimizer ops follow their forward op (simulator rule). ValidationError on a
/// conflicting result.
Plan sharding_plan(const ShardingPropagator& prop, const PropagationResult& result,
                   const std::vector<int>& devices);

}  // namespace placer
