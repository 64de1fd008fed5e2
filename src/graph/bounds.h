#pragma once
// Physical bounds of a graph's numbers, shared by the graph reader (src/io/graph_json) and
// the generators (datasets/), so that a generator never writes a graph the reader refuses:
// no op comes near 1e24 FLOPs (a whole training step of the largest models is ~1e21) and no
// tensor near 1 EiB; within them, sums over a graph stay finite and far from uint64 overflow.

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/types.h"

namespace placer {

constexpr double kMaxOpFlops = 1e24;
constexpr uint64_t kMaxBytes = uint64_t(1) << 60;

/// `bytes`, or ValidationError "<what>: N bytes, beyond the physical bound of 1 EiB (2^60
/// bytes)" above kMaxBytes.
uint64_t check_bytes(uint64_t bytes, const std::string& what);

/// Bytes of `elements` values of `dtype`, checked: OverflowError naming `what` when the
/// product wraps, check_bytes' error above kMaxBytes.
uint64_t checked_bytes(uint64_t elements, DType dtype, const std::string& what);

/// Elements of `shape` (1 for a scalar), checked: ValidationError naming `what` on a negative
/// dimension, OverflowError when the product wraps.
uint64_t checked_elements(const std::vector<int64_t>& shape, const std::string& what);

/// ValidationError "<what>: N FLOPs, beyond the physical bound of 1e24 FLOPs per op" when
/// `flops` is not a number in [0, kMaxOpFlops].
void check_op_flops(double flops, const std::string& what);

}  // namespace placer
