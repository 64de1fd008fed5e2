#pragma once
// Per-op node features for learned placers (GDP / Placeto style), as plain arrays.
//
// compute_node_features() turns a Graph into a row-major [num_nodes x dim] float matrix, an
// op-type vocabulary index per op (for an embedding table in models/), a topological order
// and CSR neighbour lists in both directions (for GraphSAGE aggregation). The feature layout
// is described in docs/env.md and versioned by kFeatureVersion: a checkpoint trained on one
// layout must refuse another.
//
// Scale normalisation: the magnitude features (FLOPs, output bytes, parameter bytes, largest
// dims) are log1p'd and then standardised per graph (z-score over the graph's ops), so a
// graph whose costs are all 10x larger gives the same features (exactly up to the "+1" of
// log1p, i.e. to ~1e-6 for values above 1e5). Depth is divided by the graph's max depth.
#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

/// Bumped whenever the feature layout or the vocabulary changes.
inline constexpr int kFeatureVersion = 1;

/// Column indices of NodeFeatures::x.
namespace feat {
inline constexpr int kLogFlops = 0;        ///< z-scored log1p(flops)
inline constexpr int kLogOutBytes = 1;     ///< z-scored log1p(sum of output tensor bytes)
inline constexpr int kLogParamBytes = 2;   ///< z-scored log1p(param_bytes)
inline constexpr int kRank = 3;            ///< rank of the first output / 8 (0 if unknown)
inline constexpr int kLogDim0 = 4;         ///< z-scored log1p(largest dim of first output)
inline constexpr int kLogDim1 = 5;         ///< z-scored log1p(second largest dim)
inline constexpr int kDepth = 6;           ///< topo depth / max depth (0 when max is 0)
inline constexpr int kInDegree = 7;        ///< log1p(#distinct predecessor ops)
inline constexpr int kOutDegree = 8;       ///< log1p(#distinct successor ops)
inline constexpr int kPhase = 9;           ///< 4 columns: phase one-hot
inline constexpr int kCategory = 13;       ///< 14 columns: OpCategory one-hot
inline constexpr int kBatchScaled = 27;    ///< 1 if the op's work scales with the batch
inline constexpr int kDim = 28;
}  // namespace feat

struct FeatureOptions {
  /// Standardise the magnitude features per graph (z-score). Off: raw log1p values.
  bool standardize = true;
};

struct NodeFeatures {
  int num_nodes = 0;
  int dim = 0;
  std::vector<float> x;             ///< row-major num_nodes x dim
  std::vector<int32_t> op_type;     ///< vocabulary index per op (op_type_vocabulary())
  std::vector<uint32_t> order;      ///< topological order (Graph::topo_order())
  // CSR neighbour lists: in = predecessors, out = successors (deduplicated op edges).
  std::vector<int32_t> in_off, in_idx, out_off, out_idx;
  int version = kFeatureVersion;

  float at(int node, int col) const { return x[size_t(node) * size_t(dim) + size_t(col)]; }
};

/// The fixed op-type vocabulary; index 0 is "other" (unknown types).
const std::vector<std::string>& op_type_vocabulary();
/// Vocabulary index of an op type. Derived backward types ("MatMulGrad") map to their base
/// type (the phase one-hot tells them apart); unknown types map to 0.
int op_type_index(const std::string& type);

NodeFeatures compute_node_features(const Graph& g, const FeatureOptions& options = {});

}  // namespace placer
