#include "src/graph/sparse_gradients.h"

#include <algorithm>
#include <string>

namespace placer {

SparseGradient sparse_gradient(const Graph& g, OpId op, int replicas) {
  SparseGradient s;
  const Op& o = g.op(op);
  if (o.category != OpCategory::kEmbedding || o.param_bytes == 0 || o.outputs.empty()) return s;
  const std::vector<int64_t>& shape = g.tensor(o.outputs[0]).shape;
  if (shape.size() < 2 || shape.back() <= 0) return s;
  s.row_bytes = static_cast<uint64_t>(shape.back()) * static_cast<uint64_t>(dtype_bytes(o.dtype));
  s.rows = static_cast<int64_t>(o.param_bytes / s.row_bytes);
  if (s.rows <= 0) return s;
  s.lookups = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) s.lookups *= std::max<int64_t>(shape[i], 1);
  const int64_t per_worker = (s.lookups + std::max(replicas, 1) - 1) / std::max(replicas, 1);
  s.rows_touched = std::min(s.rows, per_worker);
  for (const auto& [key, value] : o.attrs) {
    if (key == "rows_touched") s.rows_touched = std::min<int64_t>(s.rows, std::stoll(value));
  }
  s.sparse = true;
  return s;
}

}  // namespace placer
