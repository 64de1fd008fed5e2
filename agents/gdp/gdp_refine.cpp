#include "agents/gdp/gdp_refine.h"

#include <algorithm>

namespace placer {

std::vector<std::vector<int>> unit_neighbours(const Graph& graph,
                                              const std::vector<int>& unit_of_op, int num_units) {
  std::vector<std::vector<int>> out(static_cast<size_t>(num_units));
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const int u = unit_of_op[op];
    for (OpId s : graph.succs(op)) {
      const int v = unit_of_op[s];
      if (v == u) continue;
      out[size_t(u)].push_back(v);
      out[size_t(v)].push_back(u);
    }
  }
  for (std::vector<int>& n : out) {
    std::sort(n.begin(), n.end());
    n.erase(std::unique(n.begin(), n.end()), n.end());
  }
  return out;
}

namespace {

/// The mass of `row` off device `skip`.
double mass_without(const float* row, int devices, int skip) {
  double total = 0;
  for (int d = 0; d < devices; ++d) {
    if (d != skip && row[d] > 0) total += row[d];
  }
  return total;
}

/// A device drawn from `row` without `skip` (whose mass without it is `total` > 0).
int draw_without(const float* row, int devices, int skip, double total, std::mt19937_64& rng) {
  const double r = std::uniform_real_distribution<double>(0.0, total)(rng);
  double cum = 0;
  int last = -1;
  for (int d = 0; d < devices; ++d) {
    if (d == skip || !(row[d] > 0)) continue;
    cum += row[d];
    last = d;
    if (r < cum) return d;
  }
  return last;  // rounding
}

}  // namespace

std::vector<int> propose_block_move(const std::vector<int>& best, const std::vector<float>& probs,
                                    int devices, const std::vector<std::vector<int>>& neighbours,
                                    std::mt19937_64& rng) {
  std::vector<int> movable;
  for (size_t u = 0; u < best.size(); ++u) {
    if (mass_without(&probs[u * size_t(devices)], devices, best[u]) > 0) movable.push_back(int(u));
  }
  std::vector<int> action = best;
  if (movable.empty()) return action;
  const int seed = movable[std::uniform_int_distribution<size_t>(0, movable.size() - 1)(rng)];
  const float* row = &probs[size_t(seed) * size_t(devices)];
  const int from = best[size_t(seed)];
  const int to = draw_without(row, devices, from, mass_without(row, devices, from), rng);
  std::bernoulli_distribution follow(0.5);
  std::vector<int> frontier{seed};
  action[size_t(seed)] = to;
  while (!frontier.empty()) {
    const int u = frontier.back();
    frontier.pop_back();
    for (int v : neighbours[size_t(u)]) {
      const bool allowed = probs[size_t(v) * size_t(devices) + size_t(to)] > 0;
      if (action[size_t(v)] != from || !allowed || !follow(rng)) continue;
      action[size_t(v)] = to;
      frontier.push_back(v);
    }
  }
  return action;
}

std::vector<int> propose_block_moves(const std::vector<int>& best, const std::vector<float>& probs,
                                     int devices, const std::vector<std::vector<int>>& neighbours,
                                     int moves, std::mt19937_64& rng) {
  std::vector<int> action = best;
  for (int i = 0; i < moves; ++i)
    action = propose_block_move(action, probs, devices, neighbours, rng);
  return action;
}

}  // namespace placer
