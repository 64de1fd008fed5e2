// Seeded routing-statistics generators and their corpus split (datasets/routing_gen.h).
#include "datasets/routing_gen.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "datasets/family_util.h"
#include "src/util/error.h"

namespace placer {
namespace {

/// Standard normal by Box-Muller (hand-written: the same numbers with every standard library).
double normal(FamilyRng& rng) {
  const double u = 1.0 - rng.uniform();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * rng.uniform());
}

std::vector<int> shuffled(int n, FamilyRng& rng) {
  std::vector<int> p(n);
  std::iota(p.begin(), p.end(), 0);
  for (int i = n - 1; i > 0; --i) std::swap(p[i], p[rng.index(size_t(i) + 1)]);
  return p;
}

/// Log-weights of Zipf shares laid out by `order` (order[r] = the expert of rank r).
std::vector<double> zipf_log_weights(const std::vector<int>& order, double skew) {
  std::vector<double> w(order.size());
  for (size_t r = 0; r < order.size(); ++r) w[order[r]] = -skew * std::log(double(r + 1));
  return w;
}

/// Splits `total` in proportion to exp(log_w) with the largest-remainder rule (sums exactly).
std::vector<int64_t> apportion(const std::vector<double>& log_w, int64_t total) {
  const double top = *std::max_element(log_w.begin(), log_w.end());
  std::vector<double> w(log_w.size());
  double sum = 0;
  for (size_t e = 0; e < w.size(); ++e) sum += (w[e] = std::exp(log_w[e] - top));
  std::vector<int64_t> out(w.size());
  std::vector<std::pair<double, size_t>> rest(w.size());
  int64_t given = 0;
  for (size_t e = 0; e < w.size(); ++e) {
    const double exact = double(total) * w[e] / sum;
    out[e] = int64_t(std::floor(exact));
    given += out[e];
    rest[e] = {exact - double(out[e]), e};
  }
  std::sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (size_t i = 0; given < total; ++i, ++given) ++out[rest[i % rest.size()].second];
  return out;
}

/// The per-layer log-weights of one family as the steps go by.
class RoutingState {
 public:
  RoutingState(const RoutingGenOptions& o) : o_(o), rng_(mix64(o.seed ^ fnv1a64(o.family))) {
    const std::vector<int> shared = shuffled(o.experts, rng_);
    for (int l = 0; l < o.layers; ++l) log_w_.push_back(initial(shared));
  }

  /// Moves the state to step `s` (s >= 1).
  void advance(int s) {
    for (std::vector<double>& w : log_w_) {
      if (o_.family == "drifting") {
        for (double& x : w) x += o_.drift * normal(rng_);
      } else if (o_.family == "hot-moving" && s % o_.hot_period == 0) {
        w = hot_layer();
      }
    }
  }

  const std::vector<std::vector<double>>& log_weights() const { return log_w_; }

 private:
  std::vector<double> initial(const std::vector<int>& shared) {
    const std::string& f = o_.family;
    if (f == "zipf") return zipf_log_weights(shuffled(o_.experts, rng_), o_.skew);
    if (f == "hot-moving") return hot_layer();
    if (f == "lognormal") {
      std::vector<double> w(o_.experts);
      for (double& x : w) x = o_.skew * normal(rng_);
      return w;
    }
    std::vector<int> order = shared;  // correlated, drifting
    for (int r = 0; r < o_.experts; ++r) {
      if (rng_.chance(1.0 - o_.correlation)) std::swap(order[r], order[rng_.index(order.size())]);
    }
    return zipf_log_weights(order, o_.skew);
  }

  /// Hot experts share hot_share evenly, the others the rest (with 10% noise each).
  std::vector<double> hot_layer() {
    const std::vector<int> order = shuffled(o_.experts, rng_);
    const int hot = std::min(o_.hot, o_.experts);
    const int cold = o_.experts - hot;
    std::vector<double> w(o_.experts);
    for (int r = 0; r < o_.experts; ++r) {
      const double share = r < hot ? o_.hot_share / hot : (1.0 - o_.hot_share) / std::max(cold, 1);
      w[order[r]] = std::log(std::max(share, 1e-12)) + 0.1 * normal(rng_);
    }
    return w;
  }

  const RoutingGenOptions& o_;
  FamilyRng rng_;
  std::vector<std::vector<double>> log_w_;
};

LayerTokens counts_of(const std::vector<std::vector<double>>& log_w, int64_t assignments) {
  LayerTokens t;
  for (const std::vector<double>& w : log_w) t.push_back(apportion(w, assignments));
  return t;
}

void add_into(LayerTokens& sum, const LayerTokens& t) {
  if (sum.empty()) return void(sum = t);
  for (size_t l = 0; l < t.size(); ++l) {
    for (size_t e = 0; e < t[l].size(); ++e) sum[l][e] += t[l][e];
  }
}

/// The window's table split over `m` micro-batches: each count in proportion to per-micro-
/// batch weights exp(0.25 N(0, 1)), so the micro-batches sum to the window exactly.
std::vector<LayerTokens> split_micro_batches(const LayerTokens& window, int m, FamilyRng& rng) {
  std::vector<LayerTokens> out(m, LayerTokens(window.size()));
  std::vector<double> log_w(m);
  for (size_t l = 0; l < window.size(); ++l) {
    for (LayerTokens& mb : out) mb[l].assign(window[l].size(), 0);
    for (size_t e = 0; e < window[l].size(); ++e) {
      for (double& x : log_w) x = 0.25 * normal(rng);
      const std::vector<int64_t> part = apportion(log_w, window[l][e]);
      for (int i = 0; i < m; ++i) out[i][l][e] = part[i];
    }
  }
  return out;
}

}  // namespace

const std::vector<std::string>& routing_families() {
  static const std::vector<std::string> f = {"zipf", "correlated", "drifting", "hot-moving",
                                             "lognormal"};
  return f;
}

void validate(const RoutingGenOptions& o) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw ValidationError("routing: " + what);
  };
  const auto& f = routing_families();
  need(std::find(f.begin(), f.end(), o.family) != f.end(),
       "unknown family '" + o.family + "' (zipf, correlated, drifting, hot-moving, lognormal)");
  need(o.layers >= 1 && o.layers <= kMaxRoutingLayers, "--layers must be in [1, 4096]");
  need(o.experts >= 2 && o.experts <= kMaxRoutingExperts, "--experts must be in [2, 65536]");
  need(o.top_k >= 1 && o.top_k <= std::min(o.experts, kMaxRoutingTopK),
       "--top-k must be in [1, min(experts, 64)]");
  need(o.tokens >= 1 && o.tokens <= (int64_t(1) << 40), "--tokens must be in [1, 2^40]");
  need(o.steps >= 1 && o.steps <= 100000, "--steps must be in [1, 100000]");
  need(o.micro_batches >= 0 && o.micro_batches <= 4096, "--micro-batches must be in [0, 4096]");
  need(o.skew >= 0 && o.skew <= 8, "--skew must be in [0, 8]");
  need(o.correlation >= 0 && o.correlation <= 1, "--correlation must be in [0, 1]");
  need(o.drift >= 0 && o.drift <= 4, "--drift must be in [0, 4]");
  need(o.hot >= 1 && (o.hot < o.experts || o.family != "hot-moving"),
       "--hot must be in [1, experts)");
  need(o.hot_share > 0 && o.hot_share < 1, "--hot-share must be in (0, 1)");
  need(o.hot_period >= 1, "--hot-period must be at least 1");
}

RoutingTrace generate_routing(const RoutingGenOptions& o) {
  validate(o);
  RoutingTrace t;
  t.family = o.family;
  t.name = o.family + "-" + std::to_string(o.seed);
  t.experts = o.experts;
  t.top_k = o.top_k;
  RoutingState state(o);
  const int64_t assignments = o.tokens * o.top_k;
  for (int s = 0; s < o.steps; ++s) {
    if (s > 0) state.advance(s);
    const LayerTokens step = counts_of(state.log_weights(), assignments);
    add_into(t.tokens, step);
    if (o.steps > 1) {
      t.step_index.push_back(s);
      t.steps.push_back(step);
    }
  }
  if (o.micro_batches > 0) {
    FamilyRng rng(mix64(o.seed + 0x9e3779b97f4a7c15ull));
    t.micro_batches = split_micro_batches(t.tokens, o.micro_batches, rng);
  }
  return t;
}

const char* to_string(RoutingSplit s) {
  switch (s) {
    case RoutingSplit::kTrain:
      return "train";
    case RoutingSplit::kValidation:
      return "validation";
    case RoutingSplit::kTest:
      return "test";
    case RoutingSplit::kUnseen:
      return "unseen";
  }
  return "?";
}

bool parse_routing_split(const std::string& s, RoutingSplit* out) {
  for (RoutingSplit x : {RoutingSplit::kTrain, RoutingSplit::kValidation, RoutingSplit::kTest,
                         RoutingSplit::kUnseen}) {
    if (s == to_string(x)) return (*out = x), true;
  }
  return false;
}

std::vector<std::string> split_families(RoutingSplit s) {
  if (s == RoutingSplit::kUnseen) return {"hot-moving", "lognormal"};
  return {"zipf", "correlated", "drifting"};
}

std::vector<RoutingTrace> routing_corpus(RoutingSplit split, int count,
                                         const RoutingGenOptions& shape, uint64_t seed) {
  const std::vector<std::string> families = split_families(split);
  std::vector<RoutingTrace> out;
  for (int i = 0; i < count; ++i) {
    // One seed stream per split: no instance of one split shares its seed with another's.
    const uint64_t s = mix64(seed * 4 + uint64_t(split) + (uint64_t(i) << 8));
    FamilyRng rng(s);
    RoutingGenOptions o = shape;
    o.family = families[size_t(i) % families.size()];
    o.seed = s;
    o.skew = o.family == "lognormal" ? 0.5 + rng.uniform() : 0.6 + rng.uniform();
    o.correlation = 0.3 + 0.65 * rng.uniform();
    o.drift = 0.05 + 0.25 * rng.uniform();
    o.hot = int(rng.range(1, std::max(1, std::min(8, o.experts / 4))));
    o.hot_share = 0.3 + 0.4 * rng.uniform();
    out.push_back(generate_routing(o));
  }
  return out;
}

}  // namespace placer
