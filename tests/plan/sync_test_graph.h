#pragma once
// A small training step for the synchronization tests: tokens [8, 16] -> embedding (a
// Gather on a 1000 x 64 f32 table) -> fc (MatMul, 64 x 32 f32 weights) -> loss, expanded
// with SGD. Variables: "embedding" (256,000 bytes, sparse: 128 lookups per step) and "fc"
// (8,192 bytes, scope "head.fc").

#include <string>

#include "src/graph/graph.h"
#include "src/graph/training_step.h"

namespace placer::sync_testing {

inline constexpr uint64_t kTableRows = 1000, kWidth = 64, kFcOut = 32;
inline constexpr uint64_t kFcBytes = kWidth * kFcOut * 4;        // 8,192
inline constexpr uint64_t kTableBytes = kTableRows * kWidth * 4;  // 256,000

inline Graph make_sync_graph(DType table_dtype = DType::kF32, double fc_flops = 1e9) {
  GraphBuilder b("syncnet");
  b.set_batch_size(8);
  auto tensor = [&](const std::string& name, std::vector<int64_t> shape, DType dt) {
    Tensor t;
    t.name = name;
    t.shape = shape;
    t.dtype = dt;
    t.bytes = uint64_t(dtype_bytes(dt));
    for (int64_t s : shape) t.bytes *= uint64_t(s);
    return b.add_tensor(t);
  };
  const TensorId tok = tensor("tokens", {8, 16}, DType::kI64);
  const TensorId e = tensor("e", {8, 16, int64_t(kWidth)}, table_dtype);
  const TensorId y = tensor("y", {8, 16, int64_t(kFcOut)}, DType::kF32);
  Op in;
  in.name = "tokens_in";
  in.type = "Input";
  in.category = OpCategory::kInput;
  in.outputs = {tok};
  b.add_op(in);
  Op emb;
  emb.name = "embedding";
  emb.type = "Gather";
  emb.category = OpCategory::kEmbedding;
  emb.dtype = table_dtype;
  emb.scope = "embedding";
  emb.inputs = {tok};
  emb.outputs = {e};
  emb.param_bytes = kTableRows * kWidth * uint64_t(dtype_bytes(table_dtype));
  b.add_op(emb);
  Op fc;
  fc.name = "fc";
  fc.type = "MatMul";
  fc.category = OpCategory::kMatMul;
  fc.scope = "head.fc";
  fc.group = "head";
  fc.flops = fc_flops;
  fc.inputs = {e};
  fc.outputs = {y};
  fc.param_bytes = kFcBytes;
  b.add_op(fc);
  TrainingOptions opt;
  opt.optimizer = Optimizer::kSgd;
  return expand_training_step(b.build(), opt);
}

}  // namespace placer::sync_testing
