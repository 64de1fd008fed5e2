// placer-calibrate: the shapes and sizes each benchmark sweeps (host-only, no CUDA headers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace placer::calibrate {

// min, min*step, min*step^2, ... up to max (inclusive); max itself is appended when the
// geometric sequence skips it, so the largest size is always measured.
std::vector<std::size_t> size_sweep(std::size_t min_bytes, std::size_t max_bytes, int step);

struct GemmShape {
  std::int64_t m, n, k;  // C[m x n] = A[m x k] * B[k x n]
  std::string shape() const;
  std::uint64_t flops() const { return 2ull * m * n * k; }
  std::uint64_t bytes(std::size_t elem) const { return (m * k + k * n + m * n) * elem; }
};
// Square (256 .. 8192) and skinny/tall shapes (transformer-like projections, small batch).
std::vector<GemmShape> gemm_shapes(bool quick);

struct ConvShape {
  int n, c, h, w, k, r, s, stride, pad;  // NCHW input, KCRS filter
  int out_h() const { return (h + 2 * pad - r) / stride + 1; }
  int out_w() const { return (w + 2 * pad - s) / stride + 1; }
  std::string shape() const;
  std::uint64_t flops() const;  // 2 * N*K*P*Q * C*R*S (multiply-adds of the forward pass)
  std::uint64_t bytes(std::size_t elem) const;  // input + filter + output
};
// ResNet-50 and VGG-16 layer shapes at batch 32 (quick: a subset).
std::vector<ConvShape> conv_shapes(bool quick);

// Element counts for element-wise / reduction / softmax: 4^5 (1 Ki) upwards by 4 (quick:
// 16), while one buffer of `elem` bytes per element fits in max_bytes, at most 2^28.
std::vector<std::size_t> element_counts(std::size_t elem, std::size_t max_bytes, bool quick);

}  // namespace placer::calibrate
