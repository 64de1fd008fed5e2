// Variable reconstruction of the sharding propagation (docs/opp.md): the parameters an op
// holds, as the framework would declare them, from its type, shapes and parameter bytes.
#include "env/sharding_rules.h"

#include <algorithm>
#include <string>
#include <vector>

#include "env/sharding_attrs.h"

namespace placer {
namespace shard {

std::vector<VarSpec> reconstruct_variables(const Graph& g, OpId id) {
  const Op& o = g.op(id);
  const uint64_t pb = o.param_bytes;
  if (pb == 0) return {};
  const uint64_t dt = uint64_t(dtype_bytes(o.dtype));
  const std::vector<VarSpec> fallback = {
      {"param", {int64_t(std::max<uint64_t>(1, pb / dt))}, pb, true}};
  auto bytes = [&](const Shape& s) {
    uint64_t n = 1;
    for (int64_t v : s) n *= uint64_t(v > 0 ? v : 0);
    return n * dt;
  };
  auto positive = [](const Shape& s) {
    return std::all_of(s.begin(), s.end(), [](int64_t v) { return v > 0; });
  };
  // weight (+ bias when the bytes say so).
  auto weight_bias = [&](const Shape& w, int64_t bias) -> std::vector<VarSpec> {
    if (!positive(w) || bias <= 0) return fallback;
    if (bytes(w) == pb) return {{"weight", w, pb, false}};
    if (bytes(w) + uint64_t(bias) * dt == pb) {
      return {{"weight", w, bytes(w), false}, {"bias", {bias}, uint64_t(bias) * dt, false}};
    }
    return fallback;
  };
  const Shape empty;
  const Shape& x = o.inputs.empty() ? empty : g.tensor(o.inputs[0]).shape;
  const Shape& y = o.outputs.empty() ? empty : g.tensor(o.outputs[0]).shape;
  const std::string& t = o.type;
  if (t == "MatMul") {
    if (o.inputs.size() != 1 || x.empty() || y.empty()) return fallback;
    return weight_bias({x.back(), y.back()}, y.back());
  }
  if (t == "Gemm") {
    if (o.inputs.size() != 1 || x.size() != 2 || y.size() != 2) return fallback;
    const int64_t k = attr_int(o, "transA", 0) ? x[0] : x[1];
    const int64_t n = y[1];
    return weight_bias(attr_int(o, "transB", 0) ? Shape{n, k} : Shape{k, n}, n);
  }
  if (t == "Conv") {
    if (o.inputs.size() != 1 || x.size() < 3 || y.size() != x.size()) return fallback;
    const int64_t group = attr_int(o, "group", 1);
    std::vector<int64_t> ks;
    if (group < 1 || x[1] % group != 0 || !attr_ints(o, "kernel_shape", &ks) ||
        ks.size() != x.size() - 2) {
      return fallback;
    }
    Shape w = {y[1], x[1] / group};
    w.insert(w.end(), ks.begin(), ks.end());
    return weight_bias(w, y[1]);
  }
  if (t == "Gather" || t == "Embedding") {
    if (y.empty() || y.back() <= 0 || pb % (uint64_t(y.back()) * dt) != 0) return fallback;
    const int64_t d = y.back();
    return {{"table", {int64_t(pb / (uint64_t(d) * dt)), d}, pb, false}};
  }
  if (t == "BatchNormalization" || t == "InstanceNormalization") {
    if (x.size() < 2 || x[1] <= 0) return fallback;
    const uint64_t per = uint64_t(x[1]) * dt;
    const uint64_t m = pb % per == 0 ? pb / per : 0;
    static const char* const kNames[] = {"scale", "bias", "mean", "var"};
    if (m != 1 && m != 2 && m != 4) return fallback;
    std::vector<VarSpec> out;
    for (uint64_t i = 0; i < m; ++i) out.push_back({kNames[i], {x[1]}, per, false});
    return out;
  }
  if (t == "LayerNormalization" || t == "SimplifiedLayerNormalization" || t == "RMSNormalization") {
    const int axis = norm_axis(attr_int(o, "axis", -1), x.size());
    if (axis < 0) return fallback;
    const Shape norm(x.begin() + axis, x.end());
    const uint64_t per = bytes(norm);
    if (!positive(norm) || per == 0) return fallback;
    if (pb == per) return {{"scale", norm, per, false}};
    if (pb == 2 * per) return {{"scale", norm, per, false}, {"bias", norm, per, false}};
    return fallback;
  }
  if (!y.empty() && y.back() > 0 &&
      (is_elementwise_type(t) || o.category == OpCategory::kElementwise) &&
      pb == uint64_t(y.back()) * dt) {
    return {{t == "Mul" ? "scale" : t == "Add" ? "bias" : "param", {y.back()}, pb, false}};
  }
  return fallback;
}

OpId tied_owner(const Graph& g, OpId id) {
  const std::string* name = find_attr(g.op(id), "tied_to");
  if (!name) return kNoOp;
  const OpId owner = g.find_op(*name);
  return owner < g.num_ops() && owner != id ? owner : kNoOp;
}

}  // namespace shard
}  // namespace placer
