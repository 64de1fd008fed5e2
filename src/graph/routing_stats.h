#pragma once
// How a mixture-of-experts model routes its tokens: the expert load the slowest expert-
// parallel rank is set by. A property of the model and its data, not of a plan; the file
// format and its generators live with the expert placers (docs/formats/routing.md).

#include <vector>

namespace placer {

struct RoutingStats {
  /// share[l][e]: the fraction of MoE layer l's routed token assignments that go to expert
  /// e (each row sums to 1). Empty = uniform routing.
  std::vector<std::vector<double>> share;
  bool empty() const { return share.empty(); }
};

}  // namespace placer
