#include "agents/classical/pipeline_ideals.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "agents/api/methods.h"
#include "agents/classical/pipeline_dp.h"
#include "agents/classical/stage_borders.h"
#include "agents/common/prediction.h"
#include "src/util/error.h"

namespace placer {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Node sets as bit masks, all of one width, stored back to back.
class IdealList {
 public:
  explicit IdealList(int n) : words_((static_cast<size_t>(n) + 63) / 64) {}
  size_t size() const { return sizes_.size(); }
  size_t words() const { return words_; }
  const uint64_t* at(size_t i) const { return bits_.data() + i * words_; }
  int count(size_t i) const { return sizes_[i]; }
  static bool has(const uint64_t* b, int u) { return (b[u >> 6] >> (u & 63)) & 1; }
  bool subset(size_t a, size_t b) const {  // ideal a within ideal b
    const uint64_t *x = at(a), *y = at(b);
    for (size_t w = 0; w < words_; ++w) {
      if (x[w] & ~y[w]) return false;
    }
    return true;
  }
  /// Adds `b` unless present; returns false when it was there already.
  bool add(const std::vector<uint64_t>& b, int members) {
    std::string key(reinterpret_cast<const char*>(b.data()), b.size() * sizeof(uint64_t));
    if (!index_.emplace(std::move(key), sizes_.size()).second) return false;
    bits_.insert(bits_.end(), b.begin(), b.end());
    sizes_.push_back(members);
    return true;
  }

 private:
  size_t words_;
  std::vector<uint64_t> bits_;
  std::vector<int> sizes_;
  std::unordered_map<std::string, size_t> index_;
};

std::vector<std::vector<int>> predecessors(const IdealSplitProblem& p) {
  std::vector<std::vector<int>> preds(static_cast<size_t>(p.size()));
  for (int u = 0; u < p.size(); ++u) {
    for (int v : p.succs[static_cast<size_t>(u)]) preds[static_cast<size_t>(v)].push_back(u);
  }
  return preds;
}

/// Every ideal, smallest first (breadth-first from the empty set); false past `cap`.
bool enumerate_ideals(const IdealSplitProblem& p, int64_t cap, IdealList* out) {
  const auto preds = predecessors(p);
  std::vector<uint64_t> cur(out->words(), 0);
  out->add(cur, 0);
  std::vector<uint64_t> base;
  for (size_t i = 0; i < out->size(); ++i) {
    base.assign(out->at(i), out->at(i) + out->words());  // add() may move the storage
    const uint64_t* b = base.data();
    for (int v = 0; v < p.size(); ++v) {
      if (IdealList::has(b, v)) continue;
      bool ready = true;
      for (int u : preds[static_cast<size_t>(v)]) ready = ready && IdealList::has(b, u);
      if (!ready) continue;
      cur = base;
      cur[static_cast<size_t>(v) >> 6] |= uint64_t(1) << (v & 63);
      if (out->add(cur, out->count(i) + 1) && static_cast<int64_t>(out->size()) > cap) return false;
    }
  }
  return true;
}

/// The prefixes 0..t of the node order (nodes numbered topologically).
IdealList prefix_ideals(int n) {
  IdealList out(n);
  std::vector<uint64_t> cur(out.words(), 0);
  out.add(cur, 0);
  for (int v = 0; v < n; ++v) {
    cur[static_cast<size_t>(v) >> 6] |= uint64_t(1) << (v & 63);
    out.add(cur, v + 1);
  }
  return out;
}

/// Whether extra work `e` runs on a stage inside the ideal `b` (of `members` nodes): all its
/// nodes inside for the latest stage (any nonempty ideal when it has none), any for the
/// earliest. A stage J..I gets it exactly when it is inside I and not inside J.
bool extra_inside(const IdealSplitExtra& e, const uint64_t* b, int members) {
  if (e.latest) {
    if (e.nodes.empty()) return members > 0;
    for (int u : e.nodes) {
      if (!IdealList::has(b, u)) return false;
    }
    return true;
  }
  for (int u : e.nodes) {
    if (IdealList::has(b, u)) return true;
  }
  return false;
}

/// The DP over a list of ideals (smallest first, the empty one first, the full one last).
IdealSplit split_over(const IdealSplitProblem& p, const IdealList& ideals, int max_stages) {
  const int n = p.size();
  const size_t m = ideals.size();
  const int K = std::max(1, std::min(max_stages, n));
  // Work of each ideal and its frontier (members with a successor outside).
  std::vector<double> work(m, 0);
  std::vector<std::vector<int>> frontier(m);
  for (size_t i = 0; i < m; ++i) {
    const uint64_t* b = ideals.at(i);
    for (const IdealSplitExtra& e : p.extra) {
      if (extra_inside(e, b, ideals.count(i))) work[i] += e.work;
    }
    for (int u = 0; u < n; ++u) {
      if (!IdealList::has(b, u)) continue;
      work[i] += p.work[static_cast<size_t>(u)];
      for (int v : p.succs[static_cast<size_t>(u)]) {
        if (!IdealList::has(b, v)) {
          frontier[i].push_back(u);
          break;
        }
      }
    }
  }
  // f[k][i]: best bottleneck of ideal i in exactly k + 1 stages; arg: the ideal before it.
  std::vector<std::vector<double>> f(static_cast<size_t>(K), std::vector<double>(m, kInf));
  std::vector<std::vector<int>> arg(static_cast<size_t>(K), std::vector<int>(m, -1));
  for (size_t i = 1; i < m; ++i) {
    const uint64_t* I = ideals.at(i);
    double out = 0;
    for (int u : frontier[i]) out += p.send[static_cast<size_t>(u)];
    f[0][i] = p.stage_load(work[i], out);
    for (size_t j = 1; j < i && K > 1; ++j) {
      if (ideals.count(j) >= ideals.count(i) || !ideals.subset(j, i)) continue;
      const uint64_t* J = ideals.at(j);
      double xfer = 0;
      for (int u : frontier[j]) {  // inputs from before the stage
        for (int v : p.succs[static_cast<size_t>(u)]) {
          if (IdealList::has(I, v) && !IdealList::has(J, v)) {
            xfer += p.send[static_cast<size_t>(u)];
            break;
          }
        }
      }
      for (int u : frontier[i]) {  // outputs to the stages after
        if (!IdealList::has(J, u)) xfer += p.send[static_cast<size_t>(u)];
      }
      const double load = p.stage_load(work[i] - work[j], xfer);
      for (int k = 1; k < K; ++k) {
        const double cand = std::max(f[static_cast<size_t>(k - 1)][j], load);
        if (cand < f[static_cast<size_t>(k)][i]) {
          f[static_cast<size_t>(k)][i] = cand;
          arg[static_cast<size_t>(k)][i] = static_cast<int>(j);
        }
      }
    }
  }
  IdealSplit s;
  s.ideals = static_cast<int64_t>(m);
  const size_t full = m - 1;
  int best_k = 0;
  for (int k = 1; k < K; ++k) {
    // Fewer stages unless more are strictly (beyond rounding) better.
    if (f[static_cast<size_t>(k)][full] < f[static_cast<size_t>(best_k)][full] * (1 - 1e-12)) best_k = k;
  }
  s.bottleneck = f[static_cast<size_t>(best_k)][full];
  s.stages = best_k + 1;
  s.stage_of.assign(static_cast<size_t>(n), 0);
  size_t i = full;
  for (int k = best_k; k > 0; --k) {
    const size_t j = static_cast<size_t>(arg[static_cast<size_t>(k)][i]);
    for (int u = 0; u < n; ++u) {
      if (IdealList::has(ideals.at(i), u) && !IdealList::has(ideals.at(j), u)) s.stage_of[static_cast<size_t>(u)] = k;
    }
    i = j;
  }
  return s;
}

/// The problem with the nodes of each group merged into one (groups numbered 0..count-1 in
/// an order that keeps the edges forward): works add up, and a group sends the outputs of
/// its members that leave it (a chain: its tail's).
IdealSplitProblem merge_groups(const IdealSplitProblem& p, const std::vector<int>& group, int count) {
  IdealSplitProblem c;
  c.overlap = p.overlap;
  c.work.assign(static_cast<size_t>(count), 0);
  c.send.assign(static_cast<size_t>(count), 0);
  c.succs.assign(static_cast<size_t>(count), {});
  for (int u = 0; u < p.size(); ++u) {
    const int gu = group[static_cast<size_t>(u)];
    c.work[static_cast<size_t>(gu)] += p.work[static_cast<size_t>(u)];
    bool leaves = false;
    for (int v : p.succs[static_cast<size_t>(u)]) {
      const int gv = group[static_cast<size_t>(v)];
      if (gv == gu) continue;
      c.succs[static_cast<size_t>(gu)].push_back(gv);
      leaves = true;
    }
    if (leaves) c.send[static_cast<size_t>(gu)] += p.send[static_cast<size_t>(u)];
  }
  for (IdealSplitExtra e : p.extra) {
    for (int& u : e.nodes) u = group[static_cast<size_t>(u)];
    std::sort(e.nodes.begin(), e.nodes.end());
    e.nodes.erase(std::unique(e.nodes.begin(), e.nodes.end()), e.nodes.end());
    c.extra.push_back(std::move(e));
  }
  return c;
}

/// Contracts chains (u -> v where u has only v as successor and v only u as predecessor)
/// into pieces of at most `max_work` (a node heavier than that stays alone); group[u] is
/// u's node in the result, numbered by the piece's head (still topological).
IdealSplitProblem contract_chains(const IdealSplitProblem& p, double max_work,
                                  std::vector<int>* group) {
  const int n = p.size();
  const auto preds = predecessors(p);
  std::vector<int> head(static_cast<size_t>(n));
  std::vector<double> piece(static_cast<size_t>(n), 0);  // work of the piece, by its head
  for (int u = 0; u < n; ++u) {
    const auto& pr = preds[static_cast<size_t>(u)];
    const double w = p.work[static_cast<size_t>(u)];
    const bool chained = pr.size() == 1 && p.succs[static_cast<size_t>(pr[0])].size() == 1;
    const int h = chained ? head[static_cast<size_t>(pr[0])] : u;
    const bool joins = chained && piece[static_cast<size_t>(h)] + w <= max_work;
    head[static_cast<size_t>(u)] = joins ? h : u;
    piece[static_cast<size_t>(head[static_cast<size_t>(u)])] += w;
  }
  std::vector<int> id(static_cast<size_t>(n), -1);
  int count = 0;
  for (int u = 0; u < n; ++u) {
    if (head[static_cast<size_t>(u)] == u) id[static_cast<size_t>(u)] = count++;
  }
  group->assign(static_cast<size_t>(n), 0);
  for (int u = 0; u < n; ++u) (*group)[static_cast<size_t>(u)] = id[static_cast<size_t>(head[static_cast<size_t>(u)])];
  return merge_groups(p, *group, count);
}

/// The topological order cut into `chunks` consecutive pieces of about equal work.
IdealSplitProblem chunk_order(const IdealSplitProblem& p, int chunks, std::vector<int>* group) {
  const int n = p.size();
  double total = 0;
  for (double w : p.work) total += w;
  group->assign(static_cast<size_t>(n), 0);
  double seen = 0;
  for (int u = 0; u < n; ++u) {
    const int c = total > 0 ? static_cast<int>(seen / total * chunks) : static_cast<int>(int64_t(u) * chunks / n);
    (*group)[static_cast<size_t>(u)] = std::min(chunks - 1, c);
    seen += p.work[static_cast<size_t>(u)];
  }
  // Renumber the non-empty chunks densely.
  std::vector<int> id(static_cast<size_t>(chunks), -1);
  int count = 0;
  for (int u = 0; u < n; ++u) {
    int& i = id[static_cast<size_t>((*group)[static_cast<size_t>(u)])];
    if (i < 0) i = count++;
    (*group)[static_cast<size_t>(u)] = i;
  }
  return merge_groups(p, *group, count);
}

IdealSplit expand(IdealSplit s, const std::vector<int>& group) {
  std::vector<int> stage_of(group.size());
  for (size_t u = 0; u < group.size(); ++u) stage_of[u] = s.stage_of[static_cast<size_t>(group[u])];
  s.stage_of = std::move(stage_of);
  return s;
}

}  // namespace

int extra_stage(const IdealSplitExtra& e, const std::vector<int>& stage_of) {
  int at = e.nodes.empty() ? 0 : stage_of[static_cast<size_t>(e.nodes[0])];
  for (int u : e.nodes) {
    const int su = stage_of[static_cast<size_t>(u)];
    at = e.latest ? std::max(at, su) : std::min(at, su);
  }
  return at;
}

double ideal_stage_load(const IdealSplitProblem& p, const std::vector<int>& stage_of, int stage) {
  double load = 0, xfer = 0;
  for (const IdealSplitExtra& e : p.extra) {
    if (extra_stage(e, stage_of) == stage) load += e.work;
  }
  for (int u = 0; u < p.size(); ++u) {
    const bool in = stage_of[static_cast<size_t>(u)] == stage;
    if (in) load += p.work[static_cast<size_t>(u)];
    for (int v : p.succs[static_cast<size_t>(u)]) {
      if ((stage_of[static_cast<size_t>(v)] == stage) != in) {
        xfer += p.send[static_cast<size_t>(u)];  // u sends across this stage's border
        break;
      }
    }
  }
  return p.stage_load(load, xfer);
}

namespace {

/// The bottleneck of split `s` on problem `p` (a split of a coarsened problem reports the
/// coarse loads, which may count a merged node's transfers too often).
double split_bottleneck(const IdealSplitProblem& p, const IdealSplit& s) {
  double worst = 0;
  for (int k = 0; k < s.stages; ++k) worst = std::max(worst, ideal_stage_load(p, s.stage_of, k));
  return worst;
}

}  // namespace

IdealSplit solve_prefix_split(const IdealSplitProblem& p, int max_stages) {
  constexpr int kMaxPrefixes = 1024;  // the DP is quadratic in the prefixes
  if (p.size() > kMaxPrefixes) {
    std::vector<int> group;
    const IdealSplitProblem c = chunk_order(p, kMaxPrefixes, &group);
    return expand(solve_prefix_split(c, max_stages), group);
  }
  IdealSplit s = split_over(p, prefix_ideals(p.size()), max_stages);
  s.exact = false;
  return s;
}

IdealSplit solve_ideal_split(const IdealSplitProblem& p, int max_stages, int64_t max_ideals) {
  if (p.size() == 0) return IdealSplit{};
  IdealList ideals(p.size());
  if (enumerate_ideals(p, max_ideals, &ideals)) return split_over(p, ideals, max_stages);
  IdealSplit best = solve_prefix_split(p, max_stages);
  best.bottleneck = split_bottleneck(p, best);
  // Chain pieces of at most 1/16 of a stage's share of the work, coarser (up to whole
  // chains) while the ideals still exceed the cap: fine pieces keep the stages balanced.
  double total = 0;
  for (double w : p.work) total += w;
  const int k = std::max(1, max_stages);
  for (double grain : {16.0, 8.0, 4.0, 2.0, 1.0, 0.0}) {
    const double max_work = grain > 0 ? total / (k * grain) : kInf;
    std::vector<int> group;
    const IdealSplitProblem c = contract_chains(p, max_work, &group);
    if (c.size() == p.size()) continue;
    IdealList coarse(c.size());
    if (!enumerate_ideals(c, max_ideals, &coarse)) continue;
    IdealSplit s = expand(split_over(c, coarse, max_stages), group);
    s.exact = false;  // exact for the contracted graph only
    s.bottleneck = split_bottleneck(p, s);
    if (s.bottleneck <= best.bottleneck) best = std::move(s);
    break;
  }
  return best;
}

namespace {

/// Where each op of a graph runs in a split over its forward ops (the simulator's stage
/// rule): node[o] for forward ops and ops with a forward op (their forward op's node), -1
/// for the others, which follow the latest stage among `anchors[o]` (their predecessors'
/// nodes), or when that is empty the earliest among their successors' (`latest[o]` = 0).
struct OpAnchors {
  std::vector<int> node;
  std::vector<std::vector<int>> anchors;
  std::vector<char> latest;
  std::vector<OpId> forward;  ///< the forward ops, node order
};

void add_anchors(const OpAnchors& a, OpId q, std::vector<int>* out) {
  if (a.node[q] >= 0) {
    out->push_back(a.node[q]);
  } else if (a.latest[q]) {
    out->insert(out->end(), a.anchors[q].begin(), a.anchors[q].end());
  }
}

void sort_unique(std::vector<int>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

OpAnchors op_anchors(const Graph& g) {
  OpAnchors a;
  a.node.assign(g.num_ops(), -1);
  a.anchors.assign(g.num_ops(), {});
  a.latest.assign(g.num_ops(), 1);
  for (OpId o : g.topo_order()) {
    if (g.op(o).phase != Phase::kForward) continue;
    a.node[o] = static_cast<int>(a.forward.size());
    a.forward.push_back(o);
  }
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const OpId f = g.op(o).forward_op;
    if (a.node[o] < 0 && f < g.num_ops()) a.node[o] = a.node[f];
  }
  const auto& topo = g.topo_order();
  for (OpId o : topo) {
    if (a.node[o] >= 0) continue;
    for (OpId q : g.preds(o)) add_anchors(a, q, &a.anchors[o]);
    sort_unique(&a.anchors[o]);
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const OpId o = *it;
    if (a.node[o] >= 0 || !a.anchors[o].empty()) continue;
    for (OpId q : g.succs(o)) add_anchors(a, q, &a.anchors[o]);
    sort_unique(&a.anchors[o]);
    a.latest[o] = a.anchors[o].empty();  // no neighbour with a stage: stage 0
  }
  return a;
}

}  // namespace

IdealSplitProblem ideal_split_problem(const Problem& problem, int device, int next) {
  const Graph& g = problem.graph;
  const OpAnchors a = op_anchors(g);
  const size_t n = a.forward.size();
  IdealSplitProblem p;
  p.work.assign(n, 0);
  p.send.assign(n, 0);
  p.succs.assign(n, {});
  if (n == 0) return p;
  std::map<std::pair<std::vector<int>, bool>, double> extra;  // one entry per node set
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const double t = problem.cost.op_time(g.op(o), g.op_bytes(o), device);
    if (a.node[o] >= 0) {
      p.work[static_cast<size_t>(a.node[o])] += t;
    } else {
      extra[{a.anchors[o], a.latest[o] != 0}] += t;
    }
  }
  for (const auto& [key, t] : extra) p.extra.push_back({key.first, key.second, t});
  // Activations forward, and their gradients back when the graph has a backward pass.
  const double trips = border_trips(g);
  for (size_t u = 0; u < n; ++u) {
    uint64_t bytes = 0;
    for (TensorId t : g.op(a.forward[u]).outputs) {
      bool crosses = false;
      for (OpId c : g.consumers(t)) {
        if (g.op(c).phase != Phase::kForward) continue;
        crosses = true;
        p.succs[u].push_back(a.node[c]);
      }
      if (crosses) bytes += g.tensor(t).bytes;
    }
    sort_unique(&p.succs[u]);
    p.send[u] = trips * problem.cost.transfer_time(device, next, bytes);
  }
  return p;
}

bool transfers_overlap(const Cluster& cluster, const std::vector<int>& devices) {
  for (int d : devices) {
    if (!cluster.device(d).spec.overlap_transfers) return false;
  }
  return true;
}

Plan pipeline_ideals_plan(const Problem& problem, IdealSplit* split) {
  const Graph& g = problem.graph;
  const std::vector<int> devices = problem_devices(problem);
  const int next = devices.size() > 1 ? devices[1] : devices[0];
  IdealSplitProblem p = ideal_split_problem(problem, devices[0], next);
  p.overlap = transfers_overlap(problem.cluster, devices);
  if (p.size() == 0) throw Error("pipeline-ideals: graph '" + g.name() + "' has no forward ops");
  const IdealSplit s = solve_ideal_split(p, static_cast<int>(devices.size()));
  if (split) *split = s;

  Plan plan;
  plan.graph_name = g.name();
  plan.method = "pipeline-ideals";
  plan.pipeline.stages.resize(static_cast<size_t>(s.stages));
  for (int k = 0; k < s.stages; ++k) plan.pipeline.stages[static_cast<size_t>(k)].devices = {devices[static_cast<size_t>(k)]};
  const OpAnchors a = op_anchors(g);
  for (size_t u = 0; u < a.forward.size(); ++u) {
    plan.pipeline.stages[static_cast<size_t>(s.stage_of[u])].ops.push_back(a.forward[u]);
  }
  // Every op on its stage's device, as the simulator places it.
  plan.placement.assign(g.num_ops(), devices[0]);
  for (OpId o = 0; o < g.num_ops(); ++o) {
    int k = 0;
    if (a.node[o] >= 0) {
      k = s.stage_of[static_cast<size_t>(a.node[o])];
    } else if (!a.anchors[o].empty()) {
      k = s.stage_of[static_cast<size_t>(a.anchors[o][0])];
      for (int u : a.anchors[o]) {
        const int su = s.stage_of[static_cast<size_t>(u)];
        k = a.latest[o] ? std::max(k, su) : std::min(k, su);
      }
    }
    plan.placement[o] = devices[static_cast<size_t>(k)];
  }
  plan.validate(g, problem.cluster);
  const int64_t batch = g.batch_size();
  const SimResult res = choose_micro_batches(problem, &plan, batch > 0 ? batch : 0, 0);
  record_prediction(res, &plan);
  return plan;
}

namespace {

class PipelineIdealsPlacer : public Placer {
 public:
  std::string name() const override { return "pipeline-ideals"; }
  Plan search(const Problem& problem, const SearchBudget& /*budget*/) override {
    return pipeline_ideals_plan(problem);
  }
};

}  // namespace

void add_pipeline_ideal_methods(std::vector<MethodInfo>* out) {
  out->push_back({"pipeline-ideals",
                  "exact contiguous pipeline split of a branching graph: DP over its ideals "
                  "(downsets), stage load = compute + the transfers crossing its border, one "
                  "device per stage, 1F1B",
                  true, [] { return std::make_unique<PipelineIdealsPlacer>(); }});
}

}  // namespace placer
