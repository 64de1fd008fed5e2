#include "src/graph/moe_attrs.h"

#include <algorithm>
#include <string>
#include <vector>

#include "src/util/error.h"

namespace placer {

const std::string* find_op_attr(const Op& op, const char* key) {
  for (const auto& [k, v] : op.attrs) {
    if (k == key) return &v;
  }
  return nullptr;
}

int op_attr_int(const Op& op, const char* key, int64_t bound) {
  const std::string* v = find_op_attr(op, key);
  if (v == nullptr) {
    throw ValidationError("MoE op '" + op.name + "' has no '" + key + "' attribute");
  }
  size_t pos = 0;
  long long x = -1;
  try {
    x = std::stoll(*v, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != v->size() || x < 0 || x >= bound) {
    throw ValidationError("MoE op '" + op.name + "': " + key + " '" + *v +
                          "' is not an integer in [0, " + std::to_string(bound) + ")");
  }
  return static_cast<int>(x);
}

std::vector<MoeLayerInfo> moe_layers(const Graph& g) {
  std::vector<MoeLayerInfo> layers;
  const int64_t bound = std::max<int64_t>(static_cast<int64_t>(g.num_ops()), 1);
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.op(o);
    if (op.phase != Phase::kForward || find_op_attr(op, kMoeRoleAttr) == nullptr) continue;
    const size_t l = static_cast<size_t>(op_attr_int(op, kMoeLayerAttr, bound));
    if (l >= layers.size()) layers.resize(l + 1);
    MoeLayerInfo& info = layers[l];
    info.ops.push_back(o);
    if (find_op_attr(op, kMoeExpertsAttr) == nullptr) continue;
    info.experts = op_attr_int(op, kMoeExpertsAttr, int64_t{1} << 24);
    info.top_k = op_attr_int(op, kMoeTopKAttr, int64_t{1} << 24);
    info.padded = info.padded || find_op_attr(op, kMoeCapacityAttr) != nullptr;
  }
  return layers;
}

}  // namespace placer
