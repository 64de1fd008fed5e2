#include "datasets/family_rec.h"

#include <vector>

#include "datasets/family_util.h"
#include "src/util/error.h"

namespace placer {

namespace {

double d(int64_t x) { return static_cast<double>(x); }

// Linear + Relu layers: widths[0] -> widths[1] -> ...; no Relu after the last when `last_relu`
// is false.
TensorId mlp(GraphMaker& m, const std::string& scope, TensorId x, int64_t b,
             const std::vector<int64_t>& widths, bool last_relu) {
  for (size_t i = 1; i < widths.size(); ++i) {
    const std::string s = scope + ".layer." + std::to_string(i - 1);
    x = m.op(s + ".fc", "MatMul", s, int(i - 1), {x}, {b, widths[i]},
             2 * d(b) * d(widths[i - 1]) * d(widths[i]),
             static_cast<uint64_t>((widths[i - 1] + 1) * widths[i]));
    if (i + 1 < widths.size() || last_relu) {
      x = m.op(s + ".relu", "Relu", s, int(i - 1), {x}, {b, widths[i]}, d(b) * d(widths[i]));
    }
  }
  return x;
}

}  // namespace

Graph make_rec(const RecOptions& o) {
  PLACER_CHECK(o.tables >= 1 && o.rows > 0 && o.dim > 0 && o.lookups > 0 && o.batch > 0 &&
                   o.hidden > 0 && o.dense_features > 0,
               o.name << ": tables, rows, dim, lookups, hidden, dense features and batch must be "
                         "positive");
  const int64_t b = o.batch, e = o.dim;
  GraphMaker m(o.name, b, o.dtype);
  const TensorId dense = m.act("dense_features", {b, o.dense_features});
  std::vector<TensorId> pooled = {
      mlp(m, "bottom_mlp", dense, b, {o.dense_features, o.hidden, o.hidden / 2, e}, true)};
  for (int t = 0; t < o.tables; ++t) {
    const std::string s = "embedding." + std::to_string(t);
    const TensorId ids = m.tensor(s + ".ids", {b, o.lookups}, DType::kI64);
    const TensorId rows = m.op(s + ".lookup", "Gather", s, -1, {ids}, {b, o.lookups, e}, 0,
                               static_cast<uint64_t>(o.rows * e));
    pooled.push_back(m.op(s + ".pool", "ReduceSum", s, -1, {rows}, {b, e},
                          d(b) * d(o.lookups) * d(e)));
  }
  const int64_t f = o.tables + 1;
  const TensorId stacked = m.op("interaction.concat", "Concat", "interaction", -1, pooled,
                                {b, f, e}, 0);
  // Pairwise dot products (the upper triangle kept) next to the bottom MLP's output.
  const int64_t pairs = f * (f - 1) / 2;
  const TensorId inter = m.op("interaction.dot", "MatMul", "interaction", -1, {stacked},
                              {b, pairs + e}, 2 * d(b) * d(f) * d(f) * d(e));
  const TensorId logit = mlp(m, "top_mlp", inter, b, {pairs + e, o.hidden, o.hidden / 2, 1}, false);
  m.loss({logit}, m.tensor("labels", {b}, DType::kF32), d(b));
  return m.build();
}

}  // namespace placer
