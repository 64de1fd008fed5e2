#include "datasets/eager_kernels.h"

#include <cmath>

namespace placer {

namespace {

constexpr OpCategory kEw = OpCategory::kElementwise, kDm = OpCategory::kDataMovement,
                     kRed = OpCategory::kReduction, kSm = OpCategory::kSoftmax;
constexpr DType kF32 = DType::kF32;

// Appends kernels to a list; sizes in bytes (fractions rounded).
struct KernelAdder {
  std::vector<KernelWork>* out;
  void operator()(OpCategory c, DType d, double bytes) const {
    out->push_back({c, d, static_cast<uint64_t>(std::llround(bytes))});
  }
};

double es(DType d) { return static_cast<double>(dtype_bytes(d)); }

}  // namespace

EagerKernels eager_rms_norm(double rows, double width, DType dtype, int grad_sums) {
  const double n = rows * width, e = es(dtype), w = width * e;
  const bool cast = dtype != kF32;  // x.float() of an fp32 tensor launches nothing
  EagerKernels k;
  const KernelAdder f{&k.forward}, b{&k.backward};
  if (cast) f(kDm, kF32, n * (e + 4));   // x.float()
  f(kEw, kF32, 8 * n);                   // pow(2)
  f(kRed, kF32, 4 * n + 4 * rows);       // mean(-1)
  f(kEw, kF32, 8 * rows);                // + eps
  f(kEw, kF32, 8 * rows);                // rsqrt
  f(kDm, kF32, 8 * n + 4 * rows);        // x * rsqrt (broadcast)
  if (cast) f(kEw, dtype, n * (4 + e));  // .type_as(x)
  f(kDm, dtype, 2 * n * e + w);          // * weight (broadcast)
  b(kEw, dtype, 3 * n * e);              // grad * normed (weight gradient)
  b(kDm, dtype, 2 * n * e + w);          // grad * weight
  b(kDm, dtype, w);                      // memset of the weight gradient
  b(kRed, dtype, n * e + w);             // its sum over rows
  if (cast) b(kDm, kF32, n * (e + 4));   // the gradient to fp32
  b(kEw, kF32, 12 * n);                  // * rsqrt
  b(kDm, kF32, 8 * n + 4 * rows);        // * x (broadcast)
  b(kRed, kF32, 4 * n + 4 * rows);       // sum(-1)
  b(kEw, kF32, 8 * rows);                // rsqrt's backward: pow,
  b(kEw, kF32, 8 * rows);                //   times -1/2,
  b(kEw, kF32, 12 * rows);               //   times the gradient
  b(kDm, kF32, 8 * n);                   // mean's backward: expand / width
  b(kDm, kF32, 8 * n);                   // its device-to-device copy
  b(kEw, kF32, 8 * n);                   // pow's backward: 2 x
  b(kEw, kF32, 12 * n);                  // * grad
  b(kEw, kF32, 12 * n);                  // the two paths summed
  if (cast) b(kEw, dtype, n * (4 + e));  // back to the dtype
  // The input gradients of the separate linears reading the norm, summed.
  for (int i = 0; i < grad_sums; ++i) b(kEw, dtype, 3 * n * e);
  return k;
}

EagerKernels eager_rotary(double tokens, double seq, double heads, double kv_heads, double head_dim,
                          DType dtype) {
  const double e = es(dtype), table = seq * head_dim * e;
  EagerKernels k;
  const KernelAdder f{&k.forward}, b{&k.backward};
  for (const double x : {tokens * heads * head_dim * e, tokens * kv_heads * head_dim * e}) {
    // Forward: * cos, neg of the second half, cat, * sin, add; all strided (q and k are
    // transposed views of their projections).
    for (const double bytes : {2 * x + table, x, 2 * x, 2 * x + table, 3 * x}) f(kDm, dtype, bytes);
  }
  // Backward, k then q: * sin, neg, * cos, cat; the sum of the two paths (vectorised for k,
  // strided for q); k's gradient made contiguous for its linear.
  const double kx = tokens * kv_heads * head_dim * e, qx = tokens * heads * head_dim * e;
  for (const double bytes : {2 * kx + table, kx, 2 * kx + table, 2 * kx}) b(kDm, dtype, bytes);
  b(kEw, dtype, 3 * kx);
  for (const double bytes : {2 * qx + table, qx, 2 * qx + table, 2 * qx, 3 * qx}) {
    b(kDm, dtype, bytes);
  }
  b(kDm, dtype, 2 * kx);
  return k;
}

EagerKernels eager_repeat_kv(double tokens, double heads, double kv_heads, double head_dim,
                             DType dtype) {
  const double e = es(dtype), copy = tokens * head_dim * (kv_heads + heads) * e;
  EagerKernels k;
  const KernelAdder f{&k.forward}, b{&k.backward};
  f(kDm, dtype, copy);                                  // keys: read at kv heads, written at heads
  f(kDm, dtype, copy);                                  // values
  b(kRed, dtype, copy);                                 // the copies' gradients summed back, keys
  b(kRed, dtype, copy);                                 // values
  b(kDm, dtype, 2 * tokens * kv_heads * head_dim * e);  // the value gradient made contiguous
  return k;
}

EagerKernels eager_swiglu(double elements, DType dtype) {
  const double x = elements * es(dtype);
  EagerKernels k;
  const KernelAdder f{&k.forward}, b{&k.backward};
  f(kEw, dtype, 2 * x);  // silu(gate)
  f(kEw, dtype, 3 * x);  // * up
  b(kEw, dtype, 3 * x);  // grad * up
  b(kEw, dtype, 3 * x);  // grad * silu(gate)
  b(kEw, dtype, 3 * x);  // silu's backward
  return k;
}

EagerKernels eager_cross_entropy(double rows, double vocab, DType dtype) {
  const double n = rows * vocab, e = es(dtype);
  EagerKernels k;
  const KernelAdder f{&k.forward}, b{&k.backward};
  f(kDm, kF32, n * (e + 4));           // logits.float()
  f(kSm, kF32, 8 * n);                 // log_softmax
  f(kRed, kF32, 4 * rows + 8 * rows);  // nll_loss: the target's log-probability, the labels
  b(kEw, kF32, 4);                     // d loss / d loss = 1
  b(kEw, kF32, 4 * n);                 // the zeroed gradient
  b(kRed, kF32, 8 * rows + 4 * rows);  // nll_loss's backward: -1 at each label
  b(kSm, kF32, 12 * n);                // log_softmax's backward
  b(kEw, dtype, n * (4 + e));          // the cast back
  return k;
}

}  // namespace placer
