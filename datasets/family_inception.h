#pragma once
// Inception-like branchy CNNs (after Inception-v3, Szegedy et al. 2016; "Inception-V3" is a
// benchmark of GDP, Zhou et al. 2019, and of HDP/ColocRL). Every convolution is a
// Conv + BatchNorm + Relu triple ("conv unit", 3 ops).
//
//   stem: conv units 3x3/s2 (32), 3x3 (32), 3x3 (64), MaxPool 3x3/s2, 1x1 (80), 3x3 (192),
//         MaxPool 3x3/s2                                                     (17 ops)
//   stage s (s = 0, 1, ...): modules_per_stage[s] inception modules with branch width
//         w_s = width * (2s + 1); a grid-reduction module between stages.
//   inception module: branches concatenated (1 Concat). Branch 0 is a 1x1 unit, the last is
//         AveragePool 3x3 -> 1x1 unit; the others are drawn from: 1x1 -> 3x3; 1x1 -> 3x3 ->
//         3x3; 1x1 -> 5x5; 1x1 -> 1x7 -> 7x1. The number of branches is uniform in
//         [min_branches, max_branches] and each branch's width uniform in [w/2, 3w/2]
//         (multiples of 8).
//   reduction module: 3x3/s2 unit (w); 1x1 -> 3x3 -> 3x3/s2 units (w); MaxPool 3x3/s2;
//         Concat                                                             (14 ops)
//   head: GlobalAveragePool, classifier (MatMul + bias), loss                  (3 ops)
// Spatial sizes use "same" padding (ceil(h / stride)). Scopes "stem", "stage<s>.module<m>.
// branch<k>", "stage<s>.reduction", "head"; an op's layer is its module's index.

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

struct InceptionOptions {
  std::vector<int> modules_per_stage = {3, 4, 2};  ///< Inception-v3: 3, 4 (+1), 2
  int64_t width = 64;                              ///< branch width of stage 0
  int min_branches = 4;                            ///< >= 2 (the 1x1 and the pool branch)
  int max_branches = 4;
  int64_t image = 299;
  int64_t in_channels = 3;
  int64_t classes = 1000;
  int64_t batch = 32;
  uint64_t seed = 1;  ///< draws the branches
  DType dtype = DType::kF32;
  std::string name = "inception";
};
Graph make_inception(const InceptionOptions& options = {});

}  // namespace placer
