#pragma once
// PyTorch's foreach optimizers (torch.optim's default on CUDA when neither `fused` nor
// `foreach` is set): the update rule runs as a chain of multi-tensor kernels, each one pass
// over the parameter-sized tensors it reads and writes, instead of the one fused pass per
// parameter that expand_training_step's update ops count (docs/training_step.md).
//
//   Graph step = expand_training_step(forward, opts);        // opts.master_weights false
//   step = with_foreach_updates(step, opts.optimizer);       // bytes as torch.optim runs it

#include "src/graph/graph.h"
#include "src/graph/training_step.h"

namespace placer {

/// Passes over parameter-sized tensors of one foreach update (torch.optim's
/// _multi_tensor_* functions, PyTorch 2.x, no master weights):
/// SGD 3: p += -lr g (read p, g; write p).
/// Momentum 8: buf *= momentum (2), buf += g (3), p += -lr buf (3).
/// AdamW 20 (weight decay on): p *= 1 - lr wd (2), m.lerp_(g, 1 - beta1) (3),
/// v *= beta2 (2), v += (1 - beta2) g g (3), d = sqrt(v) (2), d /= bias correction (2),
/// d += eps (2), p += -step m / d (4).
int foreach_update_passes(Optimizer o);

/// `step` (a training step without master weights) with each update op's bytes_accessed
/// set to foreach_update_passes(o) x its parameter bytes; everything else is unchanged.
/// ValidationError when `step` is not a training step or an update op keeps master weights
/// (state bytes other than the optimizer's copies of the parameter).
Graph with_foreach_updates(const Graph& step, Optimizer o);

}  // namespace placer
