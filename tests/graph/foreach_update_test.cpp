// torch.optim's foreach updates: each update op moves foreach_update_passes x its
// parameter bytes; the rest of the step is unchanged.
#include <gtest/gtest.h>

#include "src/graph/foreach_update.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"

namespace placer {
namespace {

// x -> fc (MatMul, 64 x 32 bf16 weights = 4096 B) -> loss.
Graph one_linear() {
  GraphBuilder b("lin");
  b.set_batch_size(8);
  const TensorId x = b.add_tensor("x", 8 * 64 * 2, DType::kBF16);
  const TensorId y = b.add_tensor("y", 8 * 32 * 2, DType::kBF16);
  Op in;
  in.name = "input";
  in.type = "Input";
  in.category = OpCategory::kInput;
  in.dtype = DType::kBF16;
  in.outputs = {x};
  b.add_op(in);
  Op fc;
  fc.name = "fc";
  fc.type = "MatMul";
  fc.category = OpCategory::kMatMul;
  fc.dtype = DType::kBF16;
  fc.flops = 2.0 * 8 * 64 * 32;
  fc.param_bytes = 64 * 32 * 2;
  fc.inputs = {x};
  fc.outputs = {y};
  b.add_op(fc);
  const TensorId l = b.add_tensor("l", 4, DType::kF32);
  Op loss;
  loss.name = "loss";
  loss.type = "SoftmaxCrossEntropy";
  loss.category = OpCategory::kSoftmax;
  loss.dtype = DType::kBF16;
  loss.inputs = {y};
  loss.outputs = {l};
  b.add_op(loss);
  return b.build();
}

TEST(ForeachUpdate, PassesPerRule) {
  EXPECT_EQ(foreach_update_passes(Optimizer::kSgd), 3);
  EXPECT_EQ(foreach_update_passes(Optimizer::kMomentum), 8);
  EXPECT_EQ(foreach_update_passes(Optimizer::kAdam), 20);
}

TEST(ForeachUpdate, AdamWMovesTwentyPassesOfTheParameters) {
  const Graph step = expand_training_step(one_linear());  // Adam, no master weights
  const OpId u = step.find_op("fc/update");
  ASSERT_NE(u, kNoOp);
  EXPECT_EQ(step.op_bytes(u), 7u * 4096);  // one fused pass: read p, g, m, v; write p, m, v
  const Graph f = with_foreach_updates(step, Optimizer::kAdam);
  EXPECT_EQ(f.op_bytes(u), 20u * 4096);
  EXPECT_EQ(f.num_ops(), step.num_ops());
  EXPECT_TRUE(f.is_training_step());
  EXPECT_EQ(f.batch_size(), 8);
  for (OpId i = 0; i < f.num_ops(); ++i) {
    EXPECT_EQ(f.op(i).name, step.op(i).name);
    if (i != u) {
      EXPECT_EQ(f.op_bytes(i), step.op_bytes(i)) << f.op(i).name;
    }
  }
}

TEST(ForeachUpdate, RefusesMasterWeightsAndForwardGraphs) {
  TrainingOptions o;
  o.master_weights = true;
  EXPECT_THROW(with_foreach_updates(expand_training_step(one_linear(), o), Optimizer::kAdam),
               ValidationError);
  EXPECT_THROW(with_foreach_updates(one_linear(), Optimizer::kAdam), ValidationError);
}

}  // namespace
}  // namespace placer
