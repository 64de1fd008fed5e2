// Annealing over expert maps (src/plan/expert_search.h).
#include "src/plan/expert_search.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace placer {

ExpertSlots slots_of(const ExpertLayerMap& map, int ranks) {
  ExpertSlots slots(ranks);
  for (size_t e = 0; e < map.replicas.size(); ++e) {
    for (int r : map.replicas[e]) slots[r].push_back(int(e));
  }
  return slots;
}

ExpertLayerMap map_of(const ExpertSlots& slots, int experts) {
  ExpertLayerMap map;
  map.replicas.resize(experts);
  for (size_t r = 0; r < slots.size(); ++r) {
    for (int e : slots[r]) map.replicas[e].push_back(int(r));
  }
  return map;
}

namespace {

bool holds(const std::vector<int>& rank, int expert) {
  return std::find(rank.begin(), rank.end(), expert) != rank.end();
}

/// One random move on `slots` (copies[e]: copies of expert e); false when the drawn move is
/// not allowed (the caller draws again).
bool random_move(ExpertSlots& slots, std::vector<int>& copies, std::mt19937_64& rng) {
  const int ranks = int(slots.size());
  std::uniform_int_distribution<int> pick_rank(0, ranks - 1);
  const int a = pick_rank(rng);
  if (slots[a].empty()) return false;
  const int i = std::uniform_int_distribution<int>(0, int(slots[a].size()) - 1)(rng);
  const int ea = slots[a][i];
  if (copies[ea] > 1 && std::uniform_real_distribution<double>(0, 1)(rng) < 0.25) {
    const int e = std::uniform_int_distribution<int>(0, int(copies.size()) - 1)(rng);
    if (e == ea || holds(slots[a], e)) return false;
    --copies[ea];
    ++copies[e];
    slots[a][i] = e;
    return true;
  }
  const int b = pick_rank(rng);
  if (b == a || slots[b].empty()) return false;
  const int j = std::uniform_int_distribution<int>(0, int(slots[b].size()) - 1)(rng);
  const int eb = slots[b][j];
  if (ea == eb || holds(slots[b], ea) || holds(slots[a], eb)) return false;
  std::swap(slots[a][i], slots[b][j]);
  return true;
}

}  // namespace

ExpertSearchResult anneal_expert_maps(const std::vector<ExpertLayerMap>& start, int ranks,
                                      const ExpertObjective& objective,
                                      const ExpertAnnealOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::vector<ExpertSlots> slots;
  std::vector<std::vector<int>> copies;
  for (const ExpertLayerMap& m : start) {
    slots.push_back(slots_of(m, ranks));
    copies.emplace_back();
    for (const std::vector<int>& r : m.replicas) copies.back().push_back(int(r.size()));
  }
  std::vector<ExpertLayerMap> current = start;
  double cur = objective(current);
  ExpertSearchResult out{current, cur, {cur}};
  std::uniform_int_distribution<int> pick_layer(0, std::max(0, int(start.size()) - 1));
  for (int64_t k = 1; k < o.evaluations && !start.empty(); ++k) {
    const double frac = double(k) / double(o.evaluations);
    const double temp =
        o.start_temperature * std::pow(o.end_temperature / o.start_temperature, frac);
    const int l = pick_layer(rng);
    ExpertSlots s = slots[l];
    std::vector<int> c = copies[l];
    for (int tries = 0; tries < 64 && !random_move(s, c, rng); ++tries) {
    }
    const ExpertLayerMap keep = current[l];
    current[l] = map_of(s, int(c.size()));
    const double next = objective(current);
    const double u = std::uniform_real_distribution<double>(1e-12, 1.0)(rng);
    if (next <= cur || (next - cur) / cur < -temp * std::log(u)) {
      cur = next;
      slots[l] = std::move(s);
      copies[l] = std::move(c);
      if (cur < out.best) {
        out.best = cur;
        out.maps = current;
      }
    } else {
      current[l] = keep;
    }
    out.best_curve.push_back(out.best);
  }
  return out;
}

int64_t samples_to_within(const std::vector<double>& best_curve, double tolerance, double target) {
  if (best_curve.empty()) return 0;
  if (target <= 0) target = best_curve.back();
  for (size_t i = 0; i < best_curve.size(); ++i) {
    if (best_curve[i] <= target * (1.0 + tolerance)) return int64_t(i) + 1;
  }
  return int64_t(best_curve.size());
}

}  // namespace placer
