// List-scheduling and rule-based placers: single, expert, hash, critical-path, m-topo,
// m-etf, m-sct, tf-greedy (docs/placers.md). Backward and update ops go with their forward
// op (colocation anchors, agents/classical/list_placers_common.h); every memory-respecting method
// ends with a simulator check and a memory-balancing fallback.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "agents/classical/list_placers_common.h"
#include "agents/api/methods.h"
#include "agents/common/function_placer.h"
#include "src/graph/algorithms.h"
#include "src/util/error.h"

namespace placer {
namespace {

using list_sched::ListContext;
using list_sched::Timeline;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- single --------------------------------------------------------------------------

Plan place_single(const Problem& p, const SearchBudget&, const std::string& name) {
  const ListContext c = list_sched::make_context(p);
  // Most memory, then least total compute time, then the first.
  int best = 0;
  double best_time = kInf;
  for (int j = 0; j < c.k; ++j) {
    double total = 0;
    for (OpId o = 0; o < p.graph.num_ops(); ++o) total += c.t(o, j);
    if (j == 0 || c.capacity[j] > c.capacity[best] ||
        (c.capacity[j] == c.capacity[best] && total < best_time)) {
      best = j;
      best_time = total;
    }
  }
  // Returned even when it does not fit: the caller's simulation reports the OOM.
  return list_sched::to_plan(c, std::vector<int>(p.graph.num_ops(), best), name);
}

// ---- hash ----------------------------------------------------------------------------

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ULL;
  return h;
}

Plan place_hash(const Problem& p, const SearchBudget& b, const std::string& name) {
  const ListContext c = list_sched::make_context(p);
  std::vector<int> dev(p.graph.num_ops());
  for (OpId o = 0; o < dev.size(); ++o) {
    const OpId a = c.anchor[o];  // followers hash their anchor's name
    dev[o] = static_cast<int>(splitmix64(fnv1a(p.graph.op(a).name) ^ splitmix64(b.seed)) %
                              static_cast<uint64_t>(c.k));
  }
  return list_sched::to_plan(c, dev, name);  // no memory check (Mayer et al.'s baseline)
}

// ---- expert --------------------------------------------------------------------------

/// Contiguous blocks of anchors in topological order, one per device in problem order.
/// Block time on device j = sum of op times (anchor + followers) on j; block memory <=
/// capacity. Minimises the largest block time (binary search on the bottleneck, greedy
/// feasibility), then moves each boundary towards an even split where the bottleneck
/// allows. Returns false when memory makes every contiguous split infeasible.
bool expert_blocks(const ListContext& c, std::vector<int>* dev_out) {
  const Graph& g = *c.graph;
  std::vector<OpId> seq;
  for (OpId o : g.topo_order()) {
    if (c.is_anchor(o)) seq.push_back(o);
  }
  const size_t n = seq.size();
  std::vector<size_t> pos_of(g.num_ops(), 0);
  for (size_t i = 0; i < n; ++i) pos_of[seq[i]] = i;
  // Prefix sums: time per device (anchor + followers), memory.
  std::vector<std::vector<double>> pt(c.k, std::vector<double>(n + 1, 0));
  std::vector<double> w(n * c.k, 0);
  for (OpId o = 0; o < g.num_ops(); ++o) {
    for (int j = 0; j < c.k; ++j) w[pos_of[c.anchor[o]] * c.k + j] += c.t(o, j);
  }
  std::vector<uint64_t> pm(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    for (int j = 0; j < c.k; ++j) pt[j][i + 1] = pt[j][i] + w[i * c.k + j];
    pm[i + 1] = pm[i] + c.mem[seq[i]];
  }
  // Largest end e >= from such that block [from, e) fits time B and memory on device j.
  auto max_end = [&](int j, size_t from, double B) {
    size_t lo = from, hi = n;
    while (lo < hi) {
      const size_t mid = (lo + hi + 1) / 2;
      if (pt[j][mid] - pt[j][from] <= B && pm[mid] - pm[from] <= c.capacity[j]) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  };
  auto feasible_from = [&](int j0, size_t from, double B) {
    for (int j = j0; j < c.k && from < n; ++j) from = max_end(j, from, B);
    return from == n;
  };
  if (!feasible_from(0, 0, kInf)) return false;
  double lo = 0, hi = 0;
  for (int j = 0; j < c.k; ++j) hi = std::max(hi, pt[j][n]);
  for (int it = 0; it < 200 && hi - lo > 1e-12 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    (feasible_from(0, 0, mid) ? hi : lo) = mid;
  }
  const double B = hi * (1 + 1e-9);
  std::vector<int> block(n, c.k - 1);
  size_t from = 0;
  for (int j = 0; j < c.k && from < n; ++j) {
    size_t end = max_end(j, from, B);
    if (j + 1 < c.k) {
      // Even share of what is left, measured on device j; the closer of the two ends.
      const double target = (pt[j][n] - pt[j][from]) / static_cast<double>(c.k - j);
      size_t e = from;
      while (e < end && pt[j][e + 1] - pt[j][from] <= target) ++e;
      // Ties (within rounding) take the larger block, so results do not hinge on rounding.
      if (e < end && (pt[j][e + 1] - pt[j][from]) - target <=
                         target - (pt[j][e] - pt[j][from]) + 1e-9 * target) {
        ++e;
      }
      if (e == from && from < end) ++e;  // every device gets something when it can
      if (feasible_from(j + 1, e, B)) end = e;
    }
    for (size_t i = from; i < end; ++i) block[i] = j;
    from = end;
  }
  dev_out->assign(g.num_ops(), 0);
  for (OpId o = 0; o < g.num_ops(); ++o) (*dev_out)[o] = block[pos_of[c.anchor[o]]];
  return true;
}

Plan place_expert(const Problem& p, const SearchBudget&, const std::string& name) {
  const ListContext c = list_sched::make_context(p);
  list_sched::check_fits_somewhere(c);
  std::vector<int> dev;
  // No contiguous split fits the memory estimate: balance by memory instead.
  if (!expert_blocks(c, &dev)) dev = list_sched::memory_balanced(c);
  return list_sched::check_memory(c, dev, name);
}

// ---- critical-path and tf-greedy -----------------------------------------------------

int fastest_device(const ListContext& c) {
  int best = 0;
  double best_time = kInf;
  for (int j = 0; j < c.k; ++j) {
    double total = 0;
    for (OpId o = 0; o < c.graph->num_ops(); ++o) total += c.t(o, j);
    if (total < best_time) {
      best_time = total;
      best = j;
    }
  }
  return best;
}

Plan place_critical_path(const Problem& p, const SearchBudget&, const std::string& name) {
  const ListContext c = list_sched::make_context(p);
  list_sched::check_fits_somewhere(c);
  const int fast = fastest_device(c);
  std::vector<double> cost(p.graph.num_ops());
  for (OpId o = 0; o < cost.size(); ++o) cost[o] = c.t(o, fast);
  // Pin the critical path (through its anchors, which carry it) on the fastest device;
  // pins that do not fit under the memory estimate are dropped by the schedule.
  std::vector<int> pin(p.graph.num_ops(), -1);
  for (OpId o : critical_path(p.graph, cost).ops) pin[c.anchor[o]] = fast;
  return list_sched::check_memory(c, list_sched::greedy_finish_schedule(c, pin), name);
}

Plan place_tf_greedy(const Problem& p, const SearchBudget&, const std::string& name) {
  const ListContext c = list_sched::make_context(p);
  list_sched::check_fits_somewhere(c);
  return list_sched::check_memory(c, list_sched::greedy_finish_schedule(c, {}), name);
}

// ---- m-topo --------------------------------------------------------------------------

Plan place_m_topo(const Problem& p, const SearchBudget&, const std::string& name) {
  const ListContext c = list_sched::make_context(p);
  list_sched::check_fits_somewhere(c);
  return list_sched::check_memory(c, list_sched::memory_balanced(c), name);
}

// ---- m-etf and m-sct -----------------------------------------------------------------

/// Favourite child of every op (kNoOp for none): Baechi's SCT finds them with an LP
/// relaxation; here, without the LP, a greedy matching on edge bytes: edges in decreasing
/// bytes, each op gets at most one favourite child and each child at most one favourite
/// parent. Only anchors are children (followers have no choice of device).
std::vector<OpId> favourite_children(const ListContext& c) {
  const Graph& g = *c.graph;
  struct Edge {
    uint64_t bytes;
    OpId from, to;
  };
  std::vector<Edge> edges;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    if (!c.is_anchor(o)) continue;
    for (const auto& [p, bytes] : list_sched::in_edges(g, o)) {
      if (bytes > 0) edges.push_back({bytes, p, o});
    }
  }
  const auto& rank = g.topo_rank();
  std::sort(edges.begin(), edges.end(), [&](const Edge& a, const Edge& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (rank[a.from] != rank[b.from]) return rank[a.from] < rank[b.from];
    return rank[a.to] < rank[b.to];
  });
  std::vector<OpId> child(g.num_ops(), kNoOp);
  std::vector<char> has_parent(g.num_ops(), 0);
  for (const Edge& e : edges) {
    if (child[e.from] != kNoOp || has_parent[e.to]) continue;
    child[e.from] = e.to;
    has_parent[e.to] = 1;
  }
  return child;
}

/// Earliest-task-first list scheduling (Hwang et al. 1989, as in Baechi): repeatedly the
/// ready (op, device) pair with the earliest start (transfers included; ties: lower
/// topological rank, lower device), among devices where the op fits the memory estimate.
/// A follower is ready once its anchor is placed and goes to its anchor's device. With
/// `sct`, an op's favourite child that is ready when the op is placed goes right after it
/// on the same device, unless that delays it by more than the transfer it saves.
class EtfScheduler {
 public:
  EtfScheduler(const ListContext& c, bool sct);
  /// The device index of every op.
  std::vector<int> run();

 private:
  /// Ready: its input arrival time on every device is fixed.
  void make_ready(OpId o) {
    for (int j = 0; j < c_.k; ++j) arrive_[o * c_.k + j] = tl_.arrival(o, j);
    ready_.push_back(o);
  }
  double start_on(OpId o, int j) const { return std::max(tl_.ready[j], arrive_[o * c_.k + j]); }
  double best_start(OpId o, int* j_out) const;
  /// Places a ready op and makes the ops waiting for it ready.
  void place(OpId o, int j, double start);
  /// SCT: chains favourite children onto the parent's device while they are ready.
  void chain_favourites(OpId parent);

  const ListContext& c_;
  const Graph& g_;
  const bool sct_;
  Timeline tl_;
  std::vector<OpId> fav_;
  std::vector<int> waiting_;                   // unplaced dependencies of each op
  std::vector<std::vector<OpId>> extra_succ_;  // followers of each anchor (virtual edges)
  std::vector<OpId> ready_;
  std::vector<double> arrive_;  // [op * k + device]
  size_t placed_ = 0;
};

EtfScheduler::EtfScheduler(const ListContext& c, bool sct)
    : c_(c), g_(*c.graph), sct_(sct), tl_(c), arrive_(g_.num_ops() * c.k, 0) {
  const size_t n = g_.num_ops();
  if (sct) fav_ = favourite_children(c);
  // Dependencies: predecessors, plus the anchor for followers (a virtual edge).
  waiting_.assign(n, 0);
  extra_succ_.resize(n);
  for (OpId o = 0; o < n; ++o) {
    waiting_[o] = static_cast<int>(g_.preds(o).size());
    const OpId a = c.anchor[o];
    if (a != o && std::find(g_.preds(o).begin(), g_.preds(o).end(), a) == g_.preds(o).end()) {
      ++waiting_[o];
      extra_succ_[a].push_back(o);
    }
  }
  for (OpId o = 0; o < n; ++o) {
    if (waiting_[o] == 0) make_ready(o);
  }
}

// Best device of a ready op: forced, else earliest start among fitting devices, else the
// device with most room.
double EtfScheduler::best_start(OpId o, int* j_out) const {
  const int f = tl_.forced(o);
  if (f >= 0) {
    *j_out = f;
    return start_on(o, f);
  }
  double best = kInf;
  int bj = -1;
  for (int j = 0; j < c_.k; ++j) {
    if (!tl_.fits(o, j)) continue;
    const double s = start_on(o, j);
    if (s < best) {
      best = s;
      bj = j;
    }
  }
  if (bj < 0) {
    bj = tl_.best_finish_device(o);  // nothing fits: most room
    best = start_on(o, bj);
  }
  *j_out = bj;
  return best;
}

void EtfScheduler::place(OpId o, int j, double start) {
  auto it = std::find(ready_.begin(), ready_.end(), o);
  *it = ready_.back();
  ready_.pop_back();
  tl_.place(o, j, start);
  ++placed_;
  for (OpId s : g_.succs(o)) {
    if (--waiting_[s] == 0) make_ready(s);
  }
  for (OpId s : extra_succ_[o]) {
    if (--waiting_[s] == 0) make_ready(s);
  }
}

void EtfScheduler::chain_favourites(OpId parent) {
  while (fav_[parent] != kNoOp && tl_.dev[fav_[parent]] < 0) {
    const OpId ch = fav_[parent];
    if (std::find(ready_.begin(), ready_.end(), ch) == ready_.end()) break;
    const int j = tl_.dev[parent];
    if (!tl_.fits(ch, j)) break;
    int other = -1;
    const double elsewhere = best_start(ch, &other);
    const double here = start_on(ch, j);
    uint64_t bytes = 0;
    for (const auto& [p, b] : list_sched::in_edges(g_, ch)) {
      if (p == parent) bytes = b;
    }
    const double saved =
        other == j ? 0 : c_.problem->cost.transfer_time(c_.devices[j], c_.devices[other], bytes);
    if (here > elsewhere + saved) break;
    place(ch, j, here);
    parent = ch;
  }
}

std::vector<int> EtfScheduler::run() {
  const auto& rank = g_.topo_rank();
  while (placed_ < g_.num_ops()) {
    PLACER_CHECK(!ready_.empty(), "m-etf: no ready op (dependency cycle?)");
    OpId pick = kNoOp;
    int pick_dev = -1;
    double pick_start = kInf;
    for (OpId o : ready_) {
      int j = -1;
      const double s = best_start(o, &j);
      if (s < pick_start || (s == pick_start && rank[o] < rank[pick])) {
        pick = o;
        pick_dev = j;
        pick_start = s;
      }
    }
    place(pick, pick_dev, pick_start);
    if (sct_) chain_favourites(pick);
  }
  return tl_.dev;
}

std::vector<int> etf_schedule(const ListContext& c, bool sct) { return EtfScheduler(c, sct).run(); }

Plan place_m_etf(const Problem& p, const SearchBudget&, const std::string& name) {
  const ListContext c = list_sched::make_context(p);
  list_sched::check_fits_somewhere(c);
  return list_sched::check_memory(c, etf_schedule(c, false), name);
}

Plan place_m_sct(const Problem& p, const SearchBudget&, const std::string& name) {
  const ListContext c = list_sched::make_context(p);
  list_sched::check_fits_somewhere(c);
  return list_sched::check_memory(c, etf_schedule(c, true), name);
}

/// A list placer: `place(problem, budget, name)`, the name going into its plan.
using ListPlaceFn = Plan (*)(const Problem&, const SearchBudget&, const std::string&);

MethodInfo info(const std::string& name, const std::string& description, ListPlaceFn place) {
  return function_method(name, description, [name, place](const Problem& p, const SearchBudget& b) {
    return place(p, b, name);
  });
}

}  // namespace

void add_list_scheduling_methods(std::vector<MethodInfo>* out) {
  out->push_back(info("single", "everything on the device with most memory (then fastest)",
                      place_single));
  out->push_back(info("expert",
                      "human expert: contiguous blocks of layers per device, balanced by compute",
                      place_expert));
  out->push_back(info("hash", "op -> device by a seeded hash of the op name (Mayer et al. 2017)",
                      place_hash));
  out->push_back(info("critical-path",
                      "critical path on the fastest device, other ops where they finish earliest",
                      place_critical_path));
  out->push_back(info("m-topo", "Baechi m-TOPO: topological fill up to a memory share per device",
                      place_m_topo));
  out->push_back(info("m-etf", "Baechi m-ETF: earliest-task-first list scheduling, memory-aware",
                      place_m_etf));
  out->push_back(info("m-sct",
                      "Baechi m-SCT: ETF keeping favourite children with their parent",
                      place_m_sct));
  out->push_back(info("tf-greedy",
                      "TensorFlow's old placer: greedy earliest finish in simulated execution",
                      place_tf_greedy));
}

}  // namespace placer
