#pragma once
// Recommendation models with large embedding tables, DLRM-style (Naumov et al. 2019): dense
// features through a bottom MLP, `tables` sparse features each looked up `lookups` times per
// sample in its own table (Gather on a rows x dim table, summed by a ReduceSum), the
// pairwise dot-product interaction of the pooled vectors, a top MLP and the loss.
// The tables dominate the parameters but a step touches at most batch x lookups rows of
// each: the workload where a parameter server for the sparse variables pays (Parallax,
// Kim et al. 2019; AutoSync, Zhang et al. 2020).

#include <cstdint>
#include <string>

#include "src/graph/graph.h"

namespace placer {

/// Ops (inputs are tensors without producer): 6 (bottom MLP, 3 x MatMul + Relu) + 2 x tables
/// (Gather, ReduceSum) + 2 (Concat, interaction) + 5 (top MLP, no Relu after the last) +
/// 1 (loss).
struct RecOptions {
  int tables = 8;
  int64_t rows = 1000000;  ///< rows per table
  int64_t dim = 64;        ///< embedding width (= the bottom MLP's output)
  int64_t lookups = 4;     ///< ids per sample and table (pooled by a sum)
  int64_t dense_features = 13;  ///< Criteo's 13 dense features
  int64_t hidden = 512;    ///< MLP width
  int64_t batch = 2048;
  DType dtype = DType::kF32;
  std::string name = "rec";
};
Graph make_rec(const RecOptions& options = {});

}  // namespace placer
