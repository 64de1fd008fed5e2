#pragma once
// Training-step expansion: forward graph -> forward + backward + optimizer ops.
//
// Placement plans are judged on a whole training step (GDP, Zhou et al. 2019; Placeto,
// Addanki et al. 2019), so the simulator runs the expanded graph. The rules (which ops get a
// backward op, which forward tensors stay alive for it, FLOP multipliers, optimizer costs)
// are documented with their sources in docs/training_step.md.
//
//   TrainingOptions opts;
//   opts.optimizer = Optimizer::kMomentum;
//   Graph step = expand_training_step(forward, opts);

#include <array>
#include <string>

#include "src/graph/graph.h"
#include "src/graph/types.h"

namespace placer {

/// Parameter update rule; selects the optimizer state size and the update cost.
enum class Optimizer : uint8_t { kSgd, kMomentum, kAdam };
/// "sgd", "momentum", "adam".
const char* to_string(Optimizer o);
/// Parses the names above (case-insensitive; also "adamw"). Returns false on an unknown name.
bool parse_optimizer(const std::string& s, Optimizer* out);

/// Persistent optimizer state per parameter, in copies of the parameter: SGD 0, momentum 1
/// (velocity), Adam 2 (first and second moments).
int optimizer_state_copies(Optimizer o);
/// Floating-point operations per parameter element of one update: SGD 2, momentum 4, Adam 12.
double optimizer_flops_per_element(Optimizer o);
/// Op type of the update op: "SGDUpdate", "MomentumUpdate", "AdamUpdate".
const char* optimizer_op_type(Optimizer o);

/// Backward FLOPs = multiplier[category] * forward FLOPs (see docs/training_step.md).
using BackwardMultipliers = std::array<double, kNumOpCategories>;
/// The defaults: matmul / conv / recurrent 2, normalization 2, attention 2.5, everything else 1.
BackwardMultipliers default_backward_multipliers();

struct TrainingOptions {
  /// Update rule of the optimizer ops.
  Optimizer optimizer = Optimizer::kAdam;
  /// Backward FLOP multiplier per forward op category.
  BackwardMultipliers backward_multiplier = default_backward_multipliers();
  /// Mixed precision as Megatron / ZeRO (Rajbhandari et al. 2020, Sec. 3.1) count it: for
  /// 16-bit parameters (f16, bf16) the optimizer keeps an fp32 master copy plus its fp32
  /// state, so an update op's state_bytes are elements * (4 + 4 * optimizer_state_copies):
  /// Adam (4 + 4 + 4) = 12 bytes per parameter element, momentum 8, SGD 4. Gradients stay in
  /// the parameter's dtype (with the 2-byte parameter, Adam totals 2 + 2 + 12 = 16 bytes per
  /// parameter). The update then reads the gradient, reads and writes the master copy and
  /// the states, and writes the 16-bit parameter: bytes_accessed = 2 * param_bytes +
  /// 2 * state_bytes. Parameters of other dtypes (f32) are unaffected; false (the default)
  /// keeps states in the parameter's dtype.
  bool master_weights = false;
};

/// Bytes of optimizer state an update op keeps for `param_bytes` of parameters of `dtype`
/// (see TrainingOptions::master_weights).
uint64_t optimizer_state_bytes(Optimizer o, uint64_t param_bytes, DType dtype, bool master_weights);

/// Which forward tensors a backward op reads besides the incoming gradients.
enum class SavedTensors : uint8_t { kNone, kInputs, kOutputs, kInputsAndOutputs };
/// The rule for a forward op: outputs for Relu / Sigmoid / Tanh / Exp / Sqrt / Softmax-style
/// ops, nothing for Add / Sub / Neg / Cast / Dropout / data movement / ReduceSum / ReduceMean /
/// AveragePool, inputs and outputs for fused attention (q, k, v, the output and the
/// logsumexp, as FlashAttention's backward reads them), inputs for everything else (MatMul,
/// Conv, norms, Gelu, Mul, losses, ...).
SavedTensors saved_tensors_of(const Op& forward_op);

/// Derives backward ops ("<op>/grad", phase kBackward), gradient tensors ("<tensor>/grad",
/// "<op>/param_grad") and one optimizer update op per parameter owner ("<op>/update", phase
/// kOptimizer) from a forward graph. Forward ops and tensors keep their ids and names;
/// backward ops follow in reverse topological order of their forward ops, then update ops
/// in the same order. The result has is_training_step() == true, the same name and batch
/// size. Throws ValidationError if `forward` already is a training step or holds backward /
/// optimizer ops.
Graph expand_training_step(const Graph& forward, const TrainingOptions& options = {});

}  // namespace placer
