#pragma once
// Hand-built graphs with shapes for the sharding propagation and OPP / ADP env tests.

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/graph.h"

namespace placer::testing {

/// Builds graphs op by op with tensor shapes (f32 unless told), 1 byte of memory traffic per
/// op (so with the sim_fixtures devices an op takes exactly FLOPs / 1e12 seconds).
class ShapedGraph {
 public:
  explicit ShapedGraph(const std::string& name = "shaped") : b_(name) {}

  TensorId tensor(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::kF32,
                  bool param_grad = false) {
    Tensor t;
    t.name = name;
    t.dtype = dtype;
    uint64_t n = uint64_t(dtype_bytes(dtype));
    for (int64_t d : shape) n *= uint64_t(d);
    t.shape = std::move(shape);
    t.bytes = n;
    t.is_param_grad = param_grad;
    t.batch_scaled = !param_grad;
    return b_.add_tensor(std::move(t));
  }

  OpId op(const std::string& name, const std::string& type, double flops, std::vector<TensorId> in,
          std::vector<TensorId> out, uint64_t param_bytes = 0,
          std::vector<std::pair<std::string, std::string>> attrs = {},
          Phase phase = Phase::kForward, OpId forward_op = kNoOp) {
    Op o;
    o.name = name;
    o.type = type;
    o.category = category_of_op_type(type);
    o.phase = phase;
    o.flops = flops;
    o.bytes_accessed = 1;
    o.param_bytes = param_bytes;
    o.forward_op = forward_op;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    o.attrs = std::move(attrs);
    return b_.add_op(std::move(o));
  }
  Op& at(OpId id) { return b_.op(id); }
  Graph build() { return b_.build(); }

 private:
  GraphBuilder b_;
};

/// The 2-layer MLP x[8,64] -> mm1 (W1 [64,256]) -> h -> relu -> a -> mm2 (W2 [256,64]) -> y,
/// with hand-made backward ops (mm2_bw: y, a -> da, dW2; relu_bw: da, h -> dh; mm1_bw:
/// dh, x -> dx, dW1). FLOPs: mm1 4e9, relu 1e9, mm2 4e9, mm2_bw 8e9, relu_bw 1e9, mm1_bw 8e9
/// (26 ms on one test device).
inline Graph mlp_graph(bool with_backward = true) {
  ShapedGraph b("mlp");
  const TensorId x = b.tensor("x", {8, 64});
  const TensorId h = b.tensor("h", {8, 256});
  const TensorId a = b.tensor("a", {8, 256});
  const TensorId y = b.tensor("y", {8, 64});
  const OpId mm1 = b.op("mm1", "MatMul", 4e9, {x}, {h}, 64 * 256 * 4);
  const OpId relu = b.op("relu", "Relu", 1e9, {h}, {a});
  const OpId mm2 = b.op("mm2", "MatMul", 4e9, {a}, {y}, 256 * 64 * 4);
  if (with_backward) {
    const TensorId da = b.tensor("da", {8, 256});
    const TensorId dw2 = b.tensor("dW2", {256, 64}, DType::kF32, true);
    const TensorId dh = b.tensor("dh", {8, 256});
    const TensorId dx = b.tensor("dx", {8, 64});
    const TensorId dw1 = b.tensor("dW1", {64, 256}, DType::kF32, true);
    b.op("mm2_bw", "MatMulGrad", 8e9, {y, a}, {da, dw2}, 0, {}, Phase::kBackward, mm2);
    b.op("relu_bw", "ReluGrad", 1e9, {da, h}, {dh}, 0, {}, Phase::kBackward, relu);
    b.op("mm1_bw", "MatMulGrad", 8e9, {dh, x}, {dx, dw1}, 0, {}, Phase::kBackward, mm1);
  }
  return b.build();
}

}  // namespace placer::testing
