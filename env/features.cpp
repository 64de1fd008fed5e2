#include "env/features.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "src/graph/algorithms.h"

namespace placer {

const std::vector<std::string>& op_type_vocabulary() {
  // Append only (and bump kFeatureVersion): indices are embedding rows in checkpoints.
  static const std::vector<std::string> vocab = {
      "other",     "MatMul",      "Gemm",        "Einsum",     "Conv",
      "ConvTranspose", "BatchNormalization", "LayerNormalization", "InstanceNormalization",
      "GroupNormalization", "ReduceSum", "ReduceMean", "ReduceMax", "GlobalAveragePool",
      "Softmax",   "LogSoftmax",  "MaxPool",     "AveragePool", "Gather",
      "Embedding", "LSTM",        "GRU",         "RNN",        "Reshape",
      "Transpose", "Flatten",     "Concat",      "Split",      "Slice",
      "Squeeze",   "Unsqueeze",   "Expand",      "Pad",        "Identity",
      "Add",       "Sub",         "Mul",         "Div",        "Pow",
      "Sqrt",      "Relu",        "Gelu",        "Erf",        "Sigmoid",
      "Tanh",      "Exp",         "Dropout",     "Cast",       "Where",
      "Silu",      "SoftmaxCrossEntropy", "Input", "Constant",  "Send",
      "Recv",      "AllReduce",   "SGDUpdate",   "MomentumUpdate", "AdamUpdate",
      "Linear",    "Shape",       "Max",         "Min",        "Clip",
      "LeakyRelu", "Neg",         "Tile"};
  return vocab;
}

int op_type_index(const std::string& type) {
  static const std::unordered_map<std::string, int> index = [] {
    std::unordered_map<std::string, int> m;
    const auto& v = op_type_vocabulary();
    for (size_t i = 0; i < v.size(); ++i) m.emplace(v[i], int(i));
    return m;
  }();
  auto it = index.find(type);
  if (it != index.end()) return it->second;
  const std::string suffix = "Grad";
  if (type.size() > suffix.size() &&
      type.compare(type.size() - suffix.size(), suffix.size(), suffix) == 0) {
    it = index.find(type.substr(0, type.size() - suffix.size()));
    if (it != index.end()) return it->second;
  }
  return 0;
}

namespace {

// The one-hot has the 14 columns of the categories that existed when the layout was fixed
// (kFeatureVersion 1); fused attention, added later, takes the matmul column (tensor-core
// work, as its unfused scores and context products) so trained checkpoints keep their inputs.
constexpr int kFeatureCategories = 14;
static_assert(feat::kCategory + kFeatureCategories == feat::kBatchScaled, "feature layout");

int feature_category(OpCategory c) {
  return c == OpCategory::kAttention ? int(OpCategory::kMatMul) : int(c);
}

// z-score of column `col` over all rows (population std); constant columns become 0.
void standardize_column(std::vector<float>& x, int n, int dim, int col) {
  if (n == 0) return;
  double sum = 0, sq = 0;
  for (int i = 0; i < n; ++i) sum += x[size_t(i) * dim + col];
  const double mean = sum / n;
  for (int i = 0; i < n; ++i) {
    const double d = x[size_t(i) * dim + col] - mean;
    sq += d * d;
  }
  const double sd = std::sqrt(sq / n);
  for (int i = 0; i < n; ++i) {
    float& v = x[size_t(i) * dim + col];
    v = sd > 1e-9 ? float((v - mean) / sd) : 0.0f;
  }
}

}  // namespace

NodeFeatures compute_node_features(const Graph& g, const FeatureOptions& options) {
  NodeFeatures f;
  const int n = int(g.num_ops());
  const int dim = feat::kDim;
  f.num_nodes = n;
  f.dim = dim;
  f.x.assign(size_t(n) * dim, 0.0f);
  f.op_type.resize(n);
  f.order.assign(g.topo_order().begin(), g.topo_order().end());

  const std::vector<int> depth = topo_depth(g);
  int max_depth = 0;
  for (int d : depth) max_depth = std::max(max_depth, d);

  f.in_off.assign(n + 1, 0);
  f.out_off.assign(n + 1, 0);
  for (int i = 0; i < n; ++i) {
    f.in_off[i + 1] = f.in_off[i] + int32_t(g.preds(OpId(i)).size());
    f.out_off[i + 1] = f.out_off[i] + int32_t(g.succs(OpId(i)).size());
  }
  f.in_idx.reserve(f.in_off[n]);
  f.out_idx.reserve(f.out_off[n]);

  for (int i = 0; i < n; ++i) {
    const Op& op = g.op(OpId(i));
    float* row = &f.x[size_t(i) * dim];
    f.op_type[i] = op_type_index(op.type);

    uint64_t out_bytes = 0;
    for (TensorId t : op.outputs) out_bytes += g.tensor(t).bytes;
    row[feat::kLogFlops] = float(std::log1p(std::max(0.0, op.flops)));
    row[feat::kLogOutBytes] = float(std::log1p(double(out_bytes)));
    row[feat::kLogParamBytes] = float(std::log1p(double(op.param_bytes)));

    // Shape summary of the first output: rank and its two largest dims (unknown dims <= 0
    // count as 0).
    if (!op.outputs.empty()) {
      const std::vector<int64_t>& shape = g.tensor(op.outputs[0]).shape;
      int64_t d0 = 0, d1 = 0;
      for (int64_t d : shape) {
        if (d > d0) {
          d1 = d0;
          d0 = d;
        } else if (d > d1) {
          d1 = d;
        }
      }
      row[feat::kRank] = float(shape.size()) / 8.0f;
      row[feat::kLogDim0] = float(std::log1p(double(d0)));
      row[feat::kLogDim1] = float(std::log1p(double(d1)));
    }

    row[feat::kDepth] = max_depth > 0 ? float(depth[i]) / float(max_depth) : 0.0f;
    const Span<OpId> preds = g.preds(OpId(i));
    const Span<OpId> succs = g.succs(OpId(i));
    row[feat::kInDegree] = float(std::log1p(double(preds.size())));
    row[feat::kOutDegree] = float(std::log1p(double(succs.size())));
    for (OpId p : preds) f.in_idx.push_back(int32_t(p));
    for (OpId s : succs) f.out_idx.push_back(int32_t(s));

    row[feat::kPhase + int(op.phase)] = 1.0f;
    row[feat::kCategory + feature_category(op.category)] = 1.0f;
    row[feat::kBatchScaled] = op.batch_scaled ? 1.0f : 0.0f;
  }

  if (options.standardize) {
    for (int col : {feat::kLogFlops, feat::kLogOutBytes, feat::kLogParamBytes, feat::kLogDim0,
                    feat::kLogDim1}) {
      standardize_column(f.x, n, dim, col);
    }
  }
  return f;
}

}  // namespace placer
