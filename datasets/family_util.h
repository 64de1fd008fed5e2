#pragma once
// Building blocks shared by the synthetic graph generators (datasets/synthetic.cpp and the
// family_*.cpp files): a portable seeded random source and a small graph builder that
// attaches shapes, scopes and costs to ops. Not a user-facing API.
//
// Cost helpers follow the conventions of datasets/synthetic.h (NCHW / NCT layouts; a Conv
// with a following BatchNorm has no bias).

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

/// Seeded random source for the graph families: std::mt19937_64's raw output (fully
/// specified by the standard) with hand-written distributions, because the std::
/// distributions differ between standard libraries and the same seed must give the same
/// graph everywhere.
class FamilyRng {
 public:
  explicit FamilyRng(uint64_t seed) : engine_(seed) {}
  uint64_t next() { return engine_(); }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [lo, hi] (modulo reduction: the bias is below 2^-32 for the small
  /// spans used here).
  int64_t range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % (static_cast<uint64_t>(hi - lo) + 1));
  }
  /// Uniform index in [0, n).
  size_t index(size_t n) { return static_cast<size_t>(next() % n); }
  bool chance(double p) { return uniform() < p; }

 private:
  std::mt19937_64 engine_;
};

/// SplitMix64's finalizer: a strong 64-bit mix, used to derive seeds and hashes.
uint64_t mix64(uint64_t x);
/// FNV-1a hash of a string (portable, unlike std::hash).
uint64_t fnv1a64(const std::string& s, uint64_t h = 0xcbf29ce484222325ull);

/// GraphBuilder with tensor shapes, dtypes and one-output ops in one call.
class GraphMaker {
 public:
  GraphMaker(const std::string& name, int64_t batch, DType dtype);

  DType dtype() const { return dtype_; }
  /// A tensor of `shape` (bytes = elements * dtype size).
  TensorId tensor(std::string name, std::vector<int64_t> shape, DType dtype,
                  bool batch_scaled = true);
  /// An activation of the graph's dtype.
  TensorId act(std::string name, std::vector<int64_t> shape) {
    return tensor(std::move(name), std::move(shape), dtype_);
  }

  /// Adds an op writing a new activation `<name>.out` of `shape`; returns that tensor.
  /// `param_elems` parameters of the graph's dtype are owned by the op.
  TensorId op(const std::string& name, const std::string& type, const std::string& scope, int layer,
              std::vector<TensorId> inputs, std::vector<int64_t> shape, double flops,
              uint64_t param_elems = 0);
  /// Adds an op with several outputs `<name>.out<k>`, one per shape (Split and friends).
  std::vector<TensorId> op_multi(const std::string& name, const std::string& type,
                                 const std::string& scope, int layer, std::vector<TensorId> inputs,
                                 const std::vector<std::vector<int64_t>>& shapes, double flops,
                                 uint64_t param_elems = 0);
  /// A TF-style variable: a "Parameter" op (category input) owning `shape`'s elements,
  /// writing the weight tensor `<name>.out` (not batch-scaled). Weights shared by many ops
  /// (an RNN unrolled over time) are modelled this way so they are counted once.
  TensorId param(const std::string& name, const std::string& scope, int layer,
                 std::vector<int64_t> shape);
  /// The op added last (to set attributes, batch_scaled...).
  Op& last_op() { return b_.op(static_cast<OpId>(b_.num_ops() - 1)); }
  Tensor& tensor_ref(TensorId t) { return b_.tensor(t); }

  /// Softmax + cross-entropy "loss" over `logits` (kFlopsPerElemLoss per logit element);
  /// writes a scalar f32 tensor "loss" that no op reads (the graph's sink).
  void loss(std::vector<TensorId> logits, TensorId labels, double logit_elems);

  size_t num_ops() const { return b_.num_ops(); }
  Graph build() { return b_.build(); }

  /// `bytes` when within the graph's bound (src/graph/bounds.h), else ValidationError
  /// "<graph>: <what>: ..." (for byte counts a generator sums itself).
  uint64_t bounded_bytes(uint64_t bytes, const std::string& what) const;

 private:
  /// Sets o.flops and o.param_bytes, refusing values beyond the graph's bounds.
  void set_cost(Op& o, double flops, uint64_t param_elems) const;

  GraphBuilder b_;
  std::string name_;  ///< the graph's, for messages
  DType dtype_;
};

/// Number of elements of a shape.
double elems(const std::vector<int64_t>& shape);
/// Output size of a "same"-padded window op with stride s: ceil(x / s).
inline int64_t strided(int64_t x, int64_t s) { return (x + s - 1) / s; }
/// FLOPs of a 2-D convolution writing [b, cout, ho, wo] with a kh x kw kernel:
/// 2 * b * ho * wo * cout * (cin / groups) * kh * kw.
double conv2d_flops(int64_t b, int64_t cin, int64_t cout, int64_t ho, int64_t wo, int64_t kh,
                    int64_t kw, int64_t groups = 1);

}  // namespace placer
