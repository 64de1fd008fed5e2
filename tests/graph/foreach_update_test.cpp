// torch.optim's foreach updates: each update op moves foreach_update_passes x its
// parameter bytes; the rest of the step is unchanged.
#include <gtest/gtest.h>

#include "datasets/synthetic.h"
#include "src/graph/foreach_update.h"
#include "src/graph/training_step.h"
#include "src/util/error.h"

namespace placer {
namespace {

// One bf16 Linear, 64 -> 32 without bias (4096 B of weights), on a batch of 8.
Graph one_linear() {
  MlpOptions o;
  o.layers = 1, o.input = 64, o.classes = 32, o.batch = 8, o.bias = false;
  o.dtype = DType::kBF16;
  return make_mlp(o);
}

// The id of the step's one update op.
OpId update_op(const Graph& step) {
  OpId found = kNoOp;
  for (OpId i = 0; i < step.num_ops(); ++i) {
    if (step.op(i).phase == Phase::kOptimizer) found = i;
  }
  return found;
}

TEST(ForeachUpdate, PassesPerRule) {
  EXPECT_EQ(foreach_update_passes(Optimizer::kSgd), 3);
  EXPECT_EQ(foreach_update_passes(Optimizer::kMomentum), 8);
  EXPECT_EQ(foreach_update_passes(Optimizer::kAdam), 20);
}

TEST(ForeachUpdate, AdamWMovesTwentyPassesOfTheParameters) {
  const Graph step = expand_training_step(one_linear());  // Adam, no master weights
  const OpId u = update_op(step);
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
