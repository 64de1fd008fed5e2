#include "src/graph/foreach_update.h"

#include <string>
#include <utility>

#include "src/util/error.h"

namespace placer {

int foreach_update_passes(Optimizer o) {
  switch (o) {
    case Optimizer::kSgd:
      return 3;
    case Optimizer::kMomentum:
      return 8;
    case Optimizer::kAdam:
      return 20;
  }
  return 20;
}

Graph with_foreach_updates(const Graph& step, Optimizer o) {
  if (!step.is_training_step()) {
    throw ValidationError("graph '" + step.name() + "': foreach updates need a training step");
  }
  GraphBuilder b(step.name());
  b.set_batch_size(step.batch_size());
  b.set_training_step(true);
  b.set_attrs(step.attrs());
  for (const Tensor& t : step.tensors()) b.add_tensor(t);
  const uint64_t copies = static_cast<uint64_t>(optimizer_state_copies(o));
  for (Op op : step.ops()) {
    if (op.phase == Phase::kOptimizer && op.forward_op != kNoOp) {
      const uint64_t owned = step.op(op.forward_op).param_bytes;
      if (op.state_bytes != copies * owned) {
        throw ValidationError("op '" + op.name +
                              "': foreach updates need optimizer state in the parameter's dtype "
                              "(no master weights)");
      }
      op.bytes_accessed = static_cast<uint64_t>(foreach_update_passes(o)) * owned;
    }
    b.add_op(std::move(op));
  }
  return b.build();
}

}  // namespace placer
