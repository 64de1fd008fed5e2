// FP8 GEMMs (plan precision.fp8, docs/parallelism.md "FP8"): the GEMMs of the linear layers
// of transformer blocks (matmul ops with weights, forward and backward; not attention's
// activation x activation products, not the output layer) run at the device's f8 peak with
// the profile's f8 matmul curve, and first scale their 16-bit inputs per tensor as
// Transformer Engine and torchao float8 do: one pass reads
// each input for its amax, a second reads it again and writes the FP8 copy (1 byte per
// element), i.e. 2 + 2 + 1 = 5 bytes per 2-byte input element = 2.5 x the input bytes,
// run as a memory-bound elementwise kernel (with its launch). The activations are split by
// the batch like the GEMM; the weights are not: each device casts its whole share of them
// once per step and keeps the FP8 copy across micro-batches (Transformer Engine's
// first-micro-batch cast, charged as 1/M of it per micro-batch), except under FSDP, where
// the weights are gathered again for every micro-batch and cast again in full.
#include "simulator/simulator_impl.h"

namespace placer {

namespace {
OpId linear_of(const Graph& g, OpId o) {
  const Op& op = g.op(o);
  return op.phase == Phase::kBackward && op.forward_op != kNoOp ? op.forward_op : o;
}
}  // namespace

bool Simulator::Impl::runs_fp8(OpId o) const {
  const Op& op = g.op(o);
  return op.category == OpCategory::kMatMul && op.layer >= 0 &&
         g.op(linear_of(g, o)).param_bytes > 0;
}

double Simulator::Impl::fp8_scaling_time(OpId o, double frac) const {
  const Op& op = g.op(o);
  double activations = 0;
  for (TensorId t : op.inputs) activations += double(g.tensor(t).bytes);
  // The weights are not split by the batch: every data-parallel replica casts its whole
  // (tensor-parallel) share, once per step, or once per micro-batch under FSDP.
  const double micro_batches = op_multi[o] ? double(M) : 1.0;
  const double weight_frac = frac * op_bdiv[o] / (fsdp ? 1.0 : micro_batches);
  const double bytes = activations * frac + double(g.op(linear_of(g, o)).param_bytes) * weight_frac;
  Op cast;
  cast.category = OpCategory::kElementwise;
  cast.dtype = op.dtype;
  return cost.op_time(cast, static_cast<uint64_t>(bytes * 2.5), op_dev[o], 1.0, op.dtype);
}

}  // namespace placer
