#pragma once
// NAS-cell CNNs: ENAS micro-search CNNs (Pham et al. 2018; Placeto's "cifar10" benchmark,
// Addanki et al. 2019) and AmoebaNet-like ImageNet networks (Real et al. 2019; a GDP
// benchmark, Zhou et al. 2019). Both stack normal cells in three stages separated by
// reduction cells (stride 2, channels doubled); a cell is a small random DAG.
//
// Cell (inputs h[i-2], h[i-1]; every node has C channels):
//   preprocess0 / preprocess1: Relu -> Conv 1x1 (stride 2 on h[i-2] when the previous cell
//     reduced, a factorized reduce) -> BatchNorm (3 ops each); preprocess0 only when some
//     node reads h[i-2]. Every cell must read h[i-1], so no cell output is a dead end.
//   node j: two branches, each an operation on an earlier state (0 = h[i-2], 1 = h[i-1],
//     2 + k = node k), summed by an Add. In a reduction cell, operations on the cell inputs
//     have stride 2.                                                             (1 op + branches)
//   concat: Concat of the nodes no other node reads (the loose ends): C * loose channels.
// Branch operations and their ops ("sep" = depthwise k x k Conv (groups = C) + pointwise
// 1x1 Conv):
//   identity: none; with stride 2 a factorized reduce Conv 1x1 s2 + BatchNorm       (0 / 2)
//   sep_conv kxk: Relu, depthwise, pointwise, BatchNorm; twice when double_sep_conv (4 / 8)
//   dil_conv 3x3: Relu, depthwise 3x3 (dilation 2), pointwise, BatchNorm              (4)
//   conv 1x7-7x1: Relu, Conv 1x7, Conv 7x1, BatchNorm                                  (4)
//   avg / max pool 3x3: AveragePool / MaxPool                                          (1)
// Network: stem (Conv 3x3 + BatchNorm; with imagenet_stem a stride-2 Conv and two
// reduction cells at C/4 and C/2), 3 stages of cells_per_stage normal cells with a
// reduction cell between stages, head: Relu, GlobalAveragePool, classifier (MatMul + bias),
// loss. Scopes "stem", "cells.<i>.<part>", "head"; an op's layer is its cell index.

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

/// Operation on one branch of a NAS cell node.
enum class NasOp : uint8_t {
  kIdentity,
  kSepConv3,
  kSepConv5,
  kSepConv7,
  kDilConv3,
  kConv1x7_7x1,
  kAvgPool3,
  kMaxPool3,
};
const char* to_string(NasOp op);

/// One node of a cell: two (input state, operation) branches summed.
struct NasNode {
  int input[2] = {0, 1};  ///< 0 = h[i-2], 1 = h[i-1], 2 + k = node k (k < this node's index)
  NasOp op[2] = {NasOp::kIdentity, NasOp::kIdentity};
};
struct NasCell {
  std::vector<NasNode> nodes;
};

/// ENAS's operation set: identity, sep conv 3x3 / 5x5, avg / max pool 3x3.
std::vector<NasOp> enas_ops();
/// NASNet / AmoebaNet's: ENAS's plus sep conv 7x7, dilated sep conv 3x3, conv 1x7-7x1.
std::vector<NasOp> amoeba_ops();
/// A random cell of `nodes` nodes: each branch's input uniform over the earlier states,
/// its operation uniform over `ops`; if no branch reads h[i-1], node 0's first one does.
NasCell sample_nas_cell(int nodes, const std::vector<NasOp>& ops, uint64_t seed);

/// ENAS micro-search CNN on CIFAR-10 (32 x 32 images, 10 classes).
///   EnasCnnOptions o; o.cells_per_stage = 4; o.seed = 7;
///   Graph g = make_enas_cnn(o);  // 14 cells with two sampled cell types
struct EnasCnnOptions {
  int cells_per_stage = 2;  ///< N normal cells per stage (3 stages, 2 reduction cells)
  int cell_nodes = 5;       ///< B nodes per sampled cell
  int64_t filters = 20;     ///< channels of the first stage (doubled at each reduction)
  int64_t image = 32;
  int64_t in_channels = 3;
  int64_t classes = 10;
  int64_t batch = 64;
  uint64_t seed = 1;  ///< samples the normal and reduction cells when they are empty
  NasCell normal, reduction;
  DType dtype = DType::kF32;
  std::string name = "enas_cnn";
};
Graph make_enas_cnn(const EnasCnnOptions& options = {});

/// AmoebaNet-like ImageNet network: NASNet search space, separable convs applied twice,
/// ImageNet stem with two reduction cells.
struct AmoebaNetOptions {
  int cells_per_stage = 6;  ///< N (AmoebaNet-D: 6)
  int cell_nodes = 5;
  int64_t filters = 64;  ///< F: channels of the first stage
  int64_t image = 224;
  int64_t in_channels = 3;
  int64_t classes = 1000;
  int64_t batch = 32;
  uint64_t seed = 1;
  NasCell normal, reduction;
  DType dtype = DType::kF32;
  std::string name = "amoebanet";
};
Graph make_amoebanet(const AmoebaNetOptions& options = {});

}  // namespace placer
