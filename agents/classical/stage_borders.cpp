#include "agents/classical/stage_borders.h"

#include <algorithm>

namespace placer {

std::vector<BorderTensor> border_tensors(const Graph& g, const std::vector<int>& unit_of) {
  std::vector<BorderTensor> out;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.op(o);
    const int u = unit_of[o];
    if (u < 0 || (op.phase != Phase::kForward && op.phase != Phase::kBackward)) continue;
    for (TensorId t : op.outputs) {
      BorderTensor b;
      for (OpId c : g.consumers(t)) {
        const int v = unit_of[c];
        if (g.op(c).phase == op.phase && v >= 0 && v != u) b.readers.push_back(v);
      }
      if (b.readers.empty()) continue;
      b.from = u;
      b.bytes = g.tensor(t).bytes;
      b.gradient = op.phase == Phase::kBackward;
      b.from_input = op.category == OpCategory::kInput;
      out.push_back(std::move(b));
    }
  }
  return out;
}

int border_trips(const Graph& g) {
  for (OpId o = 0; o < g.num_ops(); ++o) {
    if (g.op(o).phase == Phase::kBackward) return 2;
  }
  return 1;
}

ChainCutBytes chain_cut_bytes(const std::vector<BorderTensor>& tensors, int units) {
  const size_t n = static_cast<size_t>(units) + 1;
  // Differences: a tensor spanning cuts (lo, hi] adds at lo + 1 and leaves after hi.
  std::vector<double> forward(n + 1, 0), back(n + 1, 0);
  for (const BorderTensor& b : tensors) {
    if (b.from_input) continue;
    const auto [lo, hi] = std::minmax_element(b.readers.begin(), b.readers.end());
    std::vector<double>& diff = b.gradient ? back : forward;
    // Activations go to later units, gradients to earlier ones.
    const int first = b.gradient ? *lo : b.from, last = b.gradient ? b.from : *hi;
    if (last <= first) continue;
    diff[static_cast<size_t>(first) + 1] += static_cast<double>(b.bytes);
    diff[static_cast<size_t>(last) + 1] -= static_cast<double>(b.bytes);
  }
  ChainCutBytes cuts{std::vector<double>(n, 0), std::vector<double>(n, 0)};
  double run = 0, run_back = 0;
  for (size_t j = 0; j < n; ++j) {
    run += forward[j];
    run_back += back[j];
    cuts.forward[j] = run;
    cuts.back[j] = run_back;
  }
  return cuts;
}

}  // namespace placer
