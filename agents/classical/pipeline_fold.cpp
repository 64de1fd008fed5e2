#include "agents/classical/pipeline_fold.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <utility>

#include "agents/classical/stage_borders.h"
#include "src/util/error.h"

namespace placer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The DP's tables over states (i, j, d): units [i, j) left for slots [d, N).
struct FoldedDp {
  const FoldedCostTable& t;
  const std::vector<int>& replicas;
  int L, N;
  std::vector<double> best;               // per state
  std::vector<size_t> parent;             // per state: the state it came from
  std::vector<FoldedStageChoice> choice;  // per state: the stage that led to it
  FoldedSolution answer;
  size_t answer_parent = 0;

  FoldedDp(const FoldedCostTable& table, const std::vector<int>& r)
      : t(table), replicas(r), L(table.num_layers), N(table.num_devices) {
    const size_t n = static_cast<size_t>(L + 1) * (L + 1) * (N + 1);
    best.assign(n, kInf);
    parent.assign(n, 0);
    choice.resize(n);
  }
  size_t state(int i, int j, int d) const {
    return (static_cast<size_t>(i) * (L + 1) + j) * (N + 1) + d;
  }

  /// Relaxes every stage that can follow state (i, j, d).
  void expand(int i, int j, int d) {
    const size_t from = state(i, j, d);
    const double so_far = best[from];
    if (so_far == kInf) return;
    for (int r : replicas) {
      if (d + r > N) break;
      // The last stage: the whole middle.
      const double last = std::max(so_far, t.stage_time(i, j, j, j, d, r));
      if (last < answer.bottleneck) {
        answer.bottleneck = last;
        answer.stages = {{i, j, j, j, d, r}};
        answer_parent = from;
      }
      for (int a = i; a < j; ++a) {         // leading segment [i, a)
        for (int c = a + 1; c <= j; ++c) {  // trailing segment [c, j); [a, c) stays
          if (a == i && c == j) continue;   // an empty stage
          const size_t to = state(a, c, d + r);
          if (best[to] <= so_far) continue;
          // An empty trailing segment is written [a, a) (one segment, canonical).
          const FoldedStageChoice s{i, a, c == j ? a : c, c == j ? a : j, d, r};
          const double w =
              std::max(so_far, t.stage_time(s.begin, s.end, s.tail_begin, s.tail_end, d, r));
          if (w < best[to]) {
            best[to] = w;
            parent[to] = from;
            choice[to] = s;
          }
        }
      }
    }
  }

  void run() {
    best[state(0, L, 0)] = 0;
    for (int width = L; width >= 1; --width) {
      for (int i = 0; i + width <= L; ++i) {
        for (int d = 0; d < N; ++d) expand(i, i + width, d);
      }
    }
    if (!answer.feasible()) return;
    // Walk back to the start state, prepending each stage.
    for (size_t s = answer_parent; s != state(0, L, 0); s = parent[s]) {
      answer.stages.insert(answer.stages.begin(), choice[s]);
    }
  }
};

}  // namespace

double folded_bottleneck(const FoldedCostTable& table,
                         const std::vector<FoldedStageChoice>& stages) {
  double worst = 0;
  for (const FoldedStageChoice& s : stages) {
    worst = std::max(
        worst, table.stage_time(s.begin, s.end, s.tail_begin, s.tail_end, s.first, s.replicas));
  }
  return worst;
}

FoldedSolution solve_folded_pipeline(const FoldedCostTable& table,
                                     const std::vector<int>& replica_counts) {
  if (table.num_layers <= 0 || table.num_devices <= 0) return {};
  FoldedDp dp(table, replica_counts);
  dp.run();
  return dp.answer;
}

void UnitBorders::in_out(uint64_t set, double* in, double* out) const {
  *in = *out = 0;
  for (const Crossing& c : crossings) {
    if ((set >> c.from) & 1) {
      if (c.to & ~set) *out += c.bytes;
    } else if (c.to & set) {
      *in += c.bytes;
    }
  }
}

UnitBorders unit_borders(const Graph& g, const LayerChain& chain) {
  PLACER_CHECK(chain.units.size() <= 64,
               "unit_borders: " << chain.units.size() << " units, more than a mask holds");
  std::map<std::pair<int, uint64_t>, double> merged;
  for (const BorderTensor& t : border_tensors(g, chain.unit_of)) {
    if (t.from_input) continue;  // a chain keeps them with their first reader
    uint64_t to = 0;
    for (int v : t.readers) to |= uint64_t(1) << v;
    merged[{t.from, to}] += static_cast<double>(t.bytes);
  }
  UnitBorders b;
  for (const auto& [key, bytes] : merged) b.crossings.push_back({key.first, key.second, bytes});
  return b;
}

uint64_t unit_mask(int a, int b, int c, int d) {
  auto range = [](int lo, int hi) {
    if (hi <= lo) return uint64_t(0);
    const uint64_t upto = hi >= 64 ? ~uint64_t(0) : (uint64_t(1) << hi) - 1;
    return upto & ~((uint64_t(1) << lo) - 1);
  };
  return range(a, b) | range(c, d);
}

long long folded_pipeline_steps(int units, int devices, int replicas) {
  const long long l = units + 1;
  return l * l * l * l / 4 * devices * replicas;
}

}  // namespace placer
