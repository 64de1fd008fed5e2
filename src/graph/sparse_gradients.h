#pragma once
// Sparse gradients of embedding tables: a Gather on a weight table (category kEmbedding)
// only touches the rows its indices select, so its gradient is rows_touched x row_bytes,
// not the whole table. A parameter server or an all-gather can move just those rows; a
// dense all-reduce moves the whole table (docs/sync.md).

#include <cstdint>

#include "src/graph/graph.h"

namespace placer {

struct SparseGradient {
  bool sparse = false;       ///< false: the op is not an embedding lookup with known shape
  int64_t rows = 0;          ///< rows of the table
  uint64_t row_bytes = 0;    ///< bytes of one row
  int64_t lookups = 0;       ///< indices looked up per step (the whole batch: batch x sequence)
  int64_t rows_touched = 0;  ///< rows one worker's gradient touches
  uint64_t bytes() const { return static_cast<uint64_t>(rows_touched) * row_bytes; }
};

/// The sparse gradient of forward op `op` for one of `replicas` workers. The table's width is
/// the last dimension of the op's first output, its rows param_bytes / row_bytes, and the
/// lookups the output's other dimensions. rows_touched = min(rows, lookups / replicas),
/// an upper bound (repeated indices touch fewer rows), unless the op has the attribute
/// `rows_touched` (given per worker).
SparseGradient sparse_gradient(const Graph& g, OpId op, int replicas);

}  // namespace placer
