#pragma once
// The graph IR: ops and tensors of one forward pass or one training step.
//
// A Graph is immutable once built (through GraphBuilder). Ops and tensors live in flat
// vectors indexed by OpId / TensorId; op adjacency (deduplicated predecessor/successor op
// lists) and tensor consumers are CSR arrays, handed out as spans. A tensor is an edge with
// a byte size: produced by at most one op, consumed by any number of ops.
//
// Batch scaling: work and activations that grow with the batch carry batch_scaled = true.
// Data parallelism (R replicas) and pipelining (m micro-batches) divide exactly those by
// R * m; parameters, gradients of parameters and optimizer work are not divided.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "src/graph/types.h"

namespace placer {

/// A read-only view of a contiguous range (C++17 stand-in for std::span).
template <typename T>
class Span {
 public:
  Span() = default;
  Span(const T* data, size_t size) : data_(data), size_(size) {}
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

/// One tensor (an edge of the graph).
struct Tensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  ///< empty for scalars or unknown shapes
  uint64_t bytes = 0;          ///< size in bytes (authoritative; shape is informational)
  bool batch_scaled = true;    ///< shrinks with data-parallel replicas / micro-batches
  bool is_param_grad = false;  ///< gradient of a parameter (all-reduced under data parallelism)
  OpId producer = kNoOp;       ///< set by GraphBuilder::build(); kNoOp for graph inputs
};

/// One operation (a node of the graph).
struct Op {
  std::string name;                ///< unique within the graph
  std::string type;                ///< ONNX op_type or derived name ("MatMulGrad", "AdamUpdate")
  OpCategory category = OpCategory::kOther;
  Phase phase = Phase::kForward;
  DType dtype = DType::kF32;       ///< arithmetic precision (selects the device's peak FLOP/s)
  std::string scope;               ///< module path, e.g. "encoder.layer.3.attention"
  int32_t layer = -1;              ///< layer index when known
  std::string group;               ///< colocation group ("" = none)
  double flops = 0;                ///< floating-point operations of this op (one execution)
  uint64_t bytes_accessed = 0;     ///< memory traffic (read + written); 0 = sum of tensors
  uint64_t param_bytes = 0;        ///< trainable parameters owned (resident on its device)
  uint64_t state_bytes = 0;        ///< persistent optimizer state owned (Adam m and v, ...)
  uint64_t workspace_bytes = 0;    ///< scratch memory held while the op runs
  bool batch_scaled = true;        ///< work shrinks with replicas / micro-batches
  OpId forward_op = kNoOp;         ///< for backward / optimizer ops: the forward op they derive from
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  std::vector<std::pair<std::string, std::string>> attrs;  ///< free-form attributes
};

class Graph {
 public:
  Graph() = default;

  const std::string& name() const { return name_; }
  /// Global batch size the FLOPs and activation bytes were computed for (0 = unknown).
  int64_t batch_size() const { return batch_size_; }
  /// True when the graph holds backward and optimizer ops (a whole training step).
  bool is_training_step() const { return training_step_; }
  /// Graph-level attributes (key, value), e.g. how a generator built the model
  /// ("attention": "flash", "kernels": "te"); carried by the training-step expansion and the
  /// graph file.
  const std::vector<std::pair<std::string, std::string>>& attrs() const { return attrs_; }
  /// The value of graph attribute `key`, or `fallback` when it is absent.
  std::string attr(const std::string& key, const std::string& fallback = "") const;

  size_t num_ops() const { return ops_.size(); }
  size_t num_tensors() const { return tensors_.size(); }
  const Op& op(OpId id) const { return ops_[id]; }
  const Tensor& tensor(TensorId id) const { return tensors_[id]; }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }

  /// Distinct ops that produce an input of `id` / consume an output of `id`.
  Span<OpId> preds(OpId id) const {
    return {pred_idx_.data() + pred_off_[id], pred_off_[id + 1] - pred_off_[id]};
  }
  Span<OpId> succs(OpId id) const {
    return {succ_idx_.data() + succ_off_[id], succ_off_[id + 1] - succ_off_[id]};
  }
  /// Ops that read tensor `t` (each op once, even if it reads `t` twice).
  Span<OpId> consumers(TensorId t) const {
    return {cons_idx_.data() + cons_off_[t], cons_off_[t + 1] - cons_off_[t]};
  }
  /// A topological order of all ops. Deterministic: a depth-first order that follows op ids,
  /// each op right after the not-yet-listed ops it needs (not "lowest ready id first").
  const std::vector<OpId>& topo_order() const { return topo_; }
  /// Position of each op in topo_order().
  const std::vector<uint32_t>& topo_rank() const { return topo_rank_; }

  /// Op id by name; kNoOp when absent.
  OpId find_op(const std::string& name) const;
  /// Memory traffic of an op: bytes_accessed if set, else input + output tensor bytes.
  uint64_t op_bytes(OpId id) const;

  /// Sum of flops / param_bytes over all ops.
  double total_flops() const;
  uint64_t total_param_bytes() const;

 private:
  friend class GraphBuilder;
  std::string name_;
  int64_t batch_size_ = 0;
  bool training_step_ = false;
  std::vector<std::pair<std::string, std::string>> attrs_;
  std::vector<Op> ops_;
  std::vector<Tensor> tensors_;
  std::vector<uint32_t> pred_off_, succ_off_, cons_off_;
  std::vector<OpId> pred_idx_, succ_idx_, cons_idx_;
  std::vector<OpId> topo_;
  std::vector<uint32_t> topo_rank_;
  std::vector<std::pair<std::string, OpId>> name_index_;  // sorted by name
};

/// Builds a Graph. add_tensor/add_op in any order; build() checks names, producers and
/// acyclicity and throws ValidationError naming the offending op or tensor (for a cycle:
/// the ops on it).
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "graph") { g_.name_ = std::move(name); }

  void set_batch_size(int64_t b) { g_.batch_size_ = b; }
  void set_training_step(bool v) { g_.training_step_ = v; }
  /// Sets graph attribute `key` (replacing its value when it is set already).
  void set_attr(const std::string& key, const std::string& value);
  void set_attrs(const std::vector<std::pair<std::string, std::string>>& attrs) {
    g_.attrs_ = attrs;
  }

  TensorId add_tensor(Tensor t);
  /// Convenience: a tensor of `bytes` bytes (shape unknown).
  TensorId add_tensor(std::string name, uint64_t bytes, DType dtype = DType::kF32);
  /// Adds an op; op.inputs/outputs must name tensors already added. Each tensor may be the
  /// output of one op only.
  OpId add_op(Op op);

  size_t num_ops() const { return g_.ops_.size(); }
  size_t num_tensors() const { return g_.tensors_.size(); }
  Op& op(OpId id) { return g_.ops_[id]; }
  Tensor& tensor(TensorId id) { return g_.tensors_[id]; }

  /// Finishes the graph (CSR adjacency, topological order). The builder is left empty.
  Graph build();

 private:
  Graph g_;
};

}  // namespace placer
