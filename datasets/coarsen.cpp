// The grouping algorithm of datasets/coarsen.h (docs/coarsening.md explains it).
//
// Vocabulary: a *group* is a placement unit; a *part* is the set of a group's ops of one
// phase (or of all phases, for the rare groups whose phases had to be merged) and becomes
// one coarse op. Merging two groups merges their parts phase by phase. The part graph is
// kept acyclic at every step: colocation ends with a condensation (strongly connected
// components merged), every later merge is checked first.
//
// The check uses a topological labelling `key` of the parts (key(x) < key(y) on every
// edge x -> y), maintained under contraction: contracting a set S of parts is safe iff no
// path leaves S and comes back to it. A depth-first search from S's successors that skips
// parts with key > max key(S) (they cannot reach S) finds such a path or proves there is
// none; the parts it visited are exactly those that must move after the merged part, and
// they are given new keys in the gap after it.
#include <algorithm>
#include <array>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>
#include <cstdint>
#include <limits>
#include <numeric>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "datasets/coarsen.h"
#include "datasets/coarsen_internal.h"
#include "src/util/error.h"

namespace placer {

std::string common_scope(const std::string& a, const std::string& b) {
  auto sep = [](char ch) { return ch == '.' || ch == '/'; };
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  size_t last = 0;
  while (i < n && a[i] == b[i]) {
    if (sep(a[i])) last = i;
    ++i;
  }
  const bool a_end = i == a.size() || sep(a[i]);
  const bool b_end = i == b.size() || sep(b[i]);
  if (a_end && b_end) return a.substr(0, i);
  return a.substr(0, last);
}

namespace {

using coarsen_detail::Partition;

constexpr int kMergedSlot = 4;  // slots 0..3: one part per Phase; 4: all phases in one part
constexpr int kSlots = 5;
constexpr int64_t kSpacing = int64_t(1) << 20;
constexpr int64_t kMaxKey = int64_t(1) << 60;

int scope_depth(const std::string& s) {
  if (s.empty()) return 0;
  int d = 1;
  for (char ch : s) d += (ch == '.' || ch == '/') ? 1 : 0;
  return d;
}

bool is_elementwise(const Op& o) {
  return o.category == OpCategory::kElementwise || o.category == OpCategory::kDataMovement;
}

/// Union-find whose roots are the smallest ids (deterministic).
struct Dsu {
  std::vector<int> parent;
  explicit Dsu(size_t n = 0) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  }
  int unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b) return a;
    if (b < a) std::swap(a, b);
    parent[b] = a;
    return a;
  }
};

struct Part {
  int64_t key = 0;
  std::vector<int> succ, pred;  // may hold merged-away ids and duplicates until normalized
};

struct Group {
  std::array<int, kSlots> part{{-1, -1, -1, -1, -1}};
  bool merged = false;       // one part holds every phase (slot kMergedSlot)
  bool elementwise = false;  // every op of its primary part is element-wise / data movement
  bool alive = true;
  int version = 0;
  double work = 0;
  std::string scope;
  std::vector<std::pair<int, double>> nbr;  // neighbour group -> bytes between them
  int primary() const { return merged ? part[kMergedSlot] : part[int(Phase::kForward)]; }
};

struct Candidate {
  int over = 0, same = 0, depth = 0;
  double rating = 0;
  int u = 0, v = 0, vu = 0, vv = 0;
};

/// Strict "lower priority than" for std::priority_queue (total order: deterministic).
struct LowerPriority {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.over != b.over) return a.over > b.over;
    if (a.same != b.same) return a.same < b.same;
    if (a.depth != b.depth) return a.depth < b.depth;
    if (a.rating != b.rating) return a.rating < b.rating;
    if (a.u != b.u) return a.u > b.u;
    return a.v > b.v;
  }
};

class Coarsener {
 public:
  Coarsener(const Graph& g, const CoarsenOptions& o) : g_(g), opt_(o) {}

  Partition run(CoarsenStats* stats) {
    stats_.ops = g_.num_ops();
    colocate();
    setup();
    stats_.groups_after_colocation = alive_;
    if (opt_.fuse_elementwise) fuse();
    stats_.groups_after_fusion = alive_;
    if (opt_.target_groups > 0 && alive_ > size_t(opt_.target_groups)) {
      merge_edges();
      merge_independent();
    }
    stats_.groups = alive_;
    *stats = stats_;
    Partition out;
    out.part_of_op.resize(g_.num_ops());
    for (OpId i = 0; i < g_.num_ops(); ++i) out.part_of_op[i] = pdsu_.find(part0_[i]);
    out.group_of_part.assign(parts_.size(), -1);
    out.part_merged.assign(parts_.size(), 0);
    for (size_t p = 0; p < parts_.size(); ++p) {
      if (pdsu_.find(int(p)) != int(p)) continue;
      const int grp = gdsu_.find(part_group_[p]);
      out.group_of_part[p] = grp;
      out.part_merged[p] = groups_[grp].merged;
    }
    return out;
  }

 private:
  double op_work(OpId i) const {
    const Op& o = g_.op(i);
    if (o.category == OpCategory::kInput) return 0;
    return std::max(o.flops, opt_.flops_per_byte * double(g_.op_bytes(i)));
  }

  // ---- Step 1: colocation, then condensation until the part graph is a DAG ----------

  void colocate() {
    const size_t n = g_.num_ops();
    Dsu ops(n);
    std::vector<char> merged(n, 0);  // per root: the group's phases share one part
    if (opt_.colocate) {
      std::unordered_map<std::string, int> first;
      for (OpId i = 0; i < n; ++i) {
        const Op& o = g_.op(i);
        if (o.forward_op < n && o.forward_op != i) ops.unite(int(i), int(o.forward_op));
        if (o.group.empty()) continue;
        auto it = first.emplace(o.group, int(i)).first;
        ops.unite(int(i), it->second);
      }
    }
    for (;;) {
      // Parts: (group root, phase slot), numbered in order of their first op.
      std::unordered_map<int64_t, int> index;
      part0_.assign(n, -1);
      std::vector<int> root_of_part, slot_of_part;
      for (OpId i = 0; i < n; ++i) {
        const int r = ops.find(int(i));
        const int slot = merged[r] ? kMergedSlot : int(g_.op(i).phase);
        auto it = index.emplace(int64_t(r) * kSlots + slot, int(root_of_part.size())).first;
        if (it->second == int(root_of_part.size())) {
          root_of_part.push_back(r);
          slot_of_part.push_back(slot);
        }
        part0_[i] = it->second;
      }
      const size_t np = root_of_part.size();
      edges_.clear();
      for (OpId i = 0; i < n; ++i) {
        for (OpId s : g_.succs(i)) {
          if (part0_[i] != part0_[s]) edges_.emplace_back(part0_[i], part0_[s]);
        }
        // The simulator makes a backward op wait for its forward op: a dependency too.
        const OpId f = g_.op(i).forward_op;
        if (f < n && part0_[f] != part0_[i]) edges_.emplace_back(part0_[f], part0_[i]);
      }
      std::sort(edges_.begin(), edges_.end());
      edges_.erase(std::unique(edges_.begin(), edges_.end()), edges_.end());

      using Digraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
      Digraph pg(np);
      for (const auto& e : edges_) boost::add_edge(e.first, e.second, pg);
      std::vector<int> comp(np);
      const int nc = boost::strong_components(
          pg, boost::make_iterator_property_map(comp.begin(), boost::get(boost::vertex_index, pg)));
      if (size_t(nc) == np) {
        root_of_part_ = std::move(root_of_part);
        slot_of_part_ = std::move(slot_of_part);
        return;
      }
      // Merge the groups of each cycle; a cycle through two phases of one group merges
      // those phases into one part.
      std::vector<int> first_part(nc, -1), first_slot(nc, -1);
      std::vector<char> mixed(nc, 0);
      for (size_t p = 0; p < np; ++p) {
        const int c = comp[p];
        if (first_part[c] < 0) {
          first_part[c] = int(p);
          first_slot[c] = slot_of_part[p];
          continue;
        }
        const int a = ops.find(root_of_part[first_part[c]]);
        const int b = ops.find(root_of_part[p]);
        const char m = merged[a] | merged[b];
        merged[ops.unite(a, b)] = m;
        if (slot_of_part[p] != first_slot[c]) mixed[c] = 1;
      }
      for (int c = 0; c < nc; ++c) {
        if (mixed[c]) merged[ops.find(root_of_part[first_part[c]])] = 1;
      }
    }
  }

  // ---- Dynamic part / group graph ------------------------------------------------------

  void setup() {
    const size_t np = root_of_part_.size();
    parts_.assign(np, Part());
    pdsu_ = Dsu(np);
    for (const auto& e : edges_) {
      parts_[e.first].succ.push_back(e.second);
      parts_[e.second].pred.push_back(e.first);
    }
    in_set_.assign(np, 0);
    seen_.assign(np, 0);
    // Groups, numbered in order of their first part.
    std::unordered_map<int, int> gid;
    part_group_.assign(np, -1);
    for (size_t p = 0; p < np; ++p) {
      auto it = gid.emplace(root_of_part_[p], int(groups_.size())).first;
      if (it->second == int(groups_.size())) groups_.emplace_back();
      part_group_[p] = it->second;
      Group& gr = groups_[it->second];
      gr.part[slot_of_part_[p]] = int(p);
      gr.merged = slot_of_part_[p] == kMergedSlot;
    }
    gdsu_ = Dsu(groups_.size());
    alive_ = groups_.size();
    const size_t n = g_.num_ops();
    std::vector<char> scoped(groups_.size(), 0);
    std::vector<int> ew(groups_.size(), -1);  // -1 unknown, 0 no, 1 yes
    for (size_t p = 0; p < np; ++p) parts_[p].key = std::numeric_limits<int64_t>::max();
    for (OpId i = 0; i < n; ++i) {
      const int p = part0_[i];
      Group& gr = groups_[part_group_[p]];
      total_work_ += op_work(i);
      gr.work += op_work(i);
      parts_[p].key = std::min<int64_t>(parts_[p].key, g_.topo_rank()[i]);
      const std::string& s = g_.op(i).scope;
      gr.scope = scoped[part_group_[p]] ? common_scope(gr.scope, s) : s;
      scoped[part_group_[p]] = 1;
      if (gr.primary() == p) {
        int& e = ew[part_group_[p]];
        e = (e != 0 && is_elementwise(g_.op(i))) ? 1 : 0;
      }
    }
    for (size_t k = 0; k < groups_.size(); ++k) groups_[k].elementwise = ew[k] == 1;
    // Bytes between groups, each tensor counted once per consuming group.
    std::vector<int> cons;
    for (TensorId t = 0; t < g_.num_tensors(); ++t) {
      const OpId prod = g_.tensor(t).producer;
      if (prod == kNoOp) continue;
      const int gp = part_group_[part0_[prod]];
      cons.clear();
      for (OpId c : g_.consumers(t)) {
        const int gc = part_group_[part0_[c]];
        if (gc != gp) cons.push_back(gc);
      }
      std::sort(cons.begin(), cons.end());
      cons.erase(std::unique(cons.begin(), cons.end()), cons.end());
      const double bytes = double(g_.tensor(t).bytes);
      for (int gc : cons) {
        groups_[gp].nbr.emplace_back(gc, bytes);
        groups_[gc].nbr.emplace_back(gp, bytes);
      }
    }
    for (size_t k = 0; k < groups_.size(); ++k) normalize_nbr(int(k));
    relabel();  // keys: a topological order that follows the fine graph's
    stats_.relabels = 0;
  }

  int pf(int p) { return pdsu_.find(p); }
  int gf(int grp) { return gdsu_.find(grp); }
  int group_of_part(int p) { return gf(part_group_[pf(p)]); }

  void normalize(std::vector<int>* v, int self) {
    for (int& x : *v) x = pf(x);
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
    v->erase(std::remove(v->begin(), v->end(), self), v->end());
  }

  void normalize_nbr(int grp) {
    auto& nb = groups_[grp].nbr;
    for (auto& e : nb) e.first = gf(e.first);
    std::sort(nb.begin(), nb.end());
    size_t w = 0;
    for (size_t r = 0; r < nb.size(); ++r) {
      if (nb[r].first == grp) continue;
      if (w > 0 && nb[w - 1].first == nb[r].first) {
        nb[w - 1].second += nb[r].second;
      } else {
        nb[w++] = nb[r];
      }
    }
    nb.resize(w);
  }

  /// Keys = a topological order of the live parts (ties by the old key, then id), spaced
  /// kSpacing apart. Kahn's algorithm with a priority: Boost's topological_sort takes no
  /// tie-break, and the order must follow the old keys to keep phases apart.
  void relabel() {
    ++stats_.relabels;
    const int np = int(parts_.size());
    std::vector<int> indeg(np, 0);
    using Item = std::pair<int64_t, int>;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
    size_t live = 0;
    for (int p = 0; p < np; ++p) {
      if (pf(p) != p) continue;
      ++live;
      normalize(&parts_[p].succ, p);
      normalize(&parts_[p].pred, p);
      indeg[p] = int(parts_[p].pred.size());
    }
    for (int p = 0; p < np; ++p) {
      if (pf(p) == p && indeg[p] == 0) ready.emplace(parts_[p].key, p);
    }
    int64_t next = kSpacing;
    size_t done = 0;
    while (!ready.empty()) {
      const int p = ready.top().second;
      ready.pop();
      parts_[p].key = next;
      next += kSpacing;
      ++done;
      for (int s : parts_[p].succ) {
        if (--indeg[s] == 0) ready.emplace(parts_[s].key, s);
      }
    }
    PLACER_CHECK(done == live, "coarsen: internal error: the part graph has a cycle");
  }

  /// DFS from the successors of `set`, skipping parts with key > max key(set). Returns
  /// false when a path leaves the set and comes back (contracting it would close a cycle).
  /// Otherwise `reached` holds the visited parts (key <= max key) and `limit` the smallest
  /// key of the skipped successors (max int64 if none).
  bool explore(const std::vector<int>& set, std::vector<int>* reached, int64_t* limit) {
    ++stamp_;
    int64_t maxkey = std::numeric_limits<int64_t>::min();
    for (int m : set) {
      in_set_[m] = stamp_;
      maxkey = std::max(maxkey, parts_[m].key);
    }
    reached->clear();
    *limit = std::numeric_limits<int64_t>::max();
    stack_.clear();
    auto visit = [&](int y) {
      if (seen_[y] == stamp_) return;
      seen_[y] = stamp_;
      if (parts_[y].key > maxkey) {
        *limit = std::min(*limit, parts_[y].key);
        return;
      }
      reached->push_back(y);
      stack_.push_back(y);
    };
    for (int m : set) {
      for (int s : parts_[m].succ) {
        s = pf(s);
        if (in_set_[s] != stamp_) visit(s);
      }
    }
    while (!stack_.empty()) {
      const int x = stack_.back();
      stack_.pop_back();
      for (int s : parts_[x].succ) {
        s = pf(s);
        if (in_set_[s] == stamp_) return false;
        visit(s);
      }
    }
    return true;
  }

  /// Contracts a set that explore() accepted into its smallest id; returns that id.
  int contract(const std::vector<int>& set) {
    std::vector<int> reached;
    int64_t limit = 0;
    int64_t maxkey = 0;
    for (int attempt = 0;; ++attempt) {
      const bool ok = explore(set, &reached, &limit);
      PLACER_CHECK(ok, "coarsen: internal error: contracting a set that closes a cycle");
      maxkey = std::numeric_limits<int64_t>::min();
      for (int m : set) maxkey = std::max(maxkey, parts_[m].key);
      const int64_t need = int64_t(reached.size()) + 1;
      const int64_t room =
          limit == std::numeric_limits<int64_t>::max() ? kSpacing * need : limit - maxkey;
      // Parts reachable from the set that sit before it move right after it, in order,
      // packed into the first kSpacing of the gap (the original distance between two
      // parts), so they do not overtake unrelated parts (e.g. of a later phase).
      const int64_t packed = std::min(room, kSpacing);
      const int64_t step = packed > need ? packed / need : room > need ? room / need : 0;
      if (step > 0 && maxkey + room < kMaxKey) {
        std::sort(reached.begin(), reached.end(), [&](int a, int b) {
          return parts_[a].key != parts_[b].key ? parts_[a].key < parts_[b].key : a < b;
        });
        for (size_t k = 0; k < reached.size(); ++k) {
          parts_[reached[k]].key = maxkey + step * int64_t(k + 1);
        }
        break;
      }
      PLACER_CHECK(attempt == 0, "coarsen: internal error: no room for topological keys");
      relabel();
    }
    const int rep = *std::min_element(set.begin(), set.end());
    Part& r = parts_[rep];
    r.key = maxkey;
    for (int m : set) {
      if (m == rep) continue;
      pdsu_.parent[m] = rep;
      r.succ.insert(r.succ.end(), parts_[m].succ.begin(), parts_[m].succ.end());
      r.pred.insert(r.pred.end(), parts_[m].pred.begin(), parts_[m].pred.end());
      std::vector<int>().swap(parts_[m].succ);
      std::vector<int>().swap(parts_[m].pred);
    }
    normalize(&r.succ, rep);
    normalize(&r.pred, rep);
    return rep;
  }

  /// Merges groups u and v (roots) when that keeps the part graph acyclic.
  bool try_merge(int u, int v) {
    Group& a = groups_[u];
    Group& b = groups_[v];
    const bool merged = a.merged || b.merged;
    std::vector<std::vector<int>> sets;
    std::array<int, kSlots> slot_part{{-1, -1, -1, -1, -1}};
    if (merged) {
      std::vector<int> all;
      for (int s = 0; s < kSlots; ++s) {
        if (a.part[s] >= 0) all.push_back(a.part[s]);
        if (b.part[s] >= 0) all.push_back(b.part[s]);
      }
      slot_part[kMergedSlot] = all.size() == 1 ? all[0] : -1;
      if (all.size() > 1) sets.push_back(all);
    } else {
      for (int s = 0; s < kMergedSlot; ++s) {
        if (a.part[s] >= 0 && b.part[s] >= 0) {
          sets.push_back({a.part[s], b.part[s]});
        } else {
          slot_part[s] = std::max(a.part[s], b.part[s]);
        }
      }
    }
    std::vector<int> scratch;
    int64_t limit = 0;
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (const auto& set : sets) {
      if (!explore(set, &scratch, &limit)) {
        ++stats_.rejected_merges;
        return false;
      }
      int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
      for (int m : set) lo = std::min(lo, parts_[m].key), hi = std::max(hi, parts_[m].key);
      spans.emplace_back(lo, hi);
    }
    // Sets with disjoint key spans cannot close a cycle through each other (a path runs
    // from lower to higher keys); overlapping spans are refused rather than searched.
    std::sort(spans.begin(), spans.end());
    for (size_t k = 1; k < spans.size(); ++k) {
      if (spans[k].first <= spans[k - 1].second) {
        ++stats_.rejected_merges;
        return false;
      }
    }
    for (const auto& set : sets) {
      const int rep = contract(set);
      if (merged) {
        slot_part[kMergedSlot] = rep;
      } else {
        for (int s = 0; s < kMergedSlot; ++s) {
          if (a.part[s] >= 0 && b.part[s] >= 0 && (set[0] == a.part[s])) slot_part[s] = rep;
        }
      }
    }
    const int r = std::min(u, v), o = std::max(u, v);
    gdsu_.parent[o] = r;
    Group& keep = groups_[r];
    Group& gone = groups_[o];
    keep.part = slot_part;
    keep.merged = merged;
    keep.elementwise = a.elementwise && b.elementwise;
    keep.work = a.work + b.work;
    keep.scope = common_scope(a.scope, b.scope);
    keep.nbr.insert(keep.nbr.end(), gone.nbr.begin(), gone.nbr.end());
    std::vector<std::pair<int, double>>().swap(gone.nbr);
    gone.alive = false;
    ++keep.version;
    normalize_nbr(r);
    --alive_;
    return true;
  }

  // ---- Step 2: fusion of element-wise chains --------------------------------------------

  /// The groups that read the primary part's outputs (other than `grp` itself).
  void consumers(int grp, std::vector<int>* out) {
    out->clear();
    const int p = groups_[grp].primary();
    if (p < 0) return;
    for (int s : parts_[p].succ) {
      const int c = group_of_part(s);
      if (c != grp) out->push_back(c);
    }
    std::sort(out->begin(), out->end());
    out->erase(std::unique(out->begin(), out->end()), out->end());
  }

  void fuse() {
    std::vector<int> done(groups_.size(), -1), cons;
    for (int pass = 0;; ++pass) {
      bool changed = false;
      for (OpId op : g_.topo_order()) {
        int grp = gf(part_group_[part0_[op]]);
        if (done[grp] == pass) continue;
        done[grp] = pass;
        for (;;) {
          consumers(grp, &cons);
          if (cons.size() != 1) break;
          const int v = cons[0];
          if (!groups_[grp].elementwise && !groups_[v].elementwise) break;
          if (!try_merge(grp, v)) break;
          grp = gf(grp);
          done[grp] = pass;
          changed = true;
        }
      }
      if (!changed) break;
    }
  }

  // ---- Step 3: merging to the target ----------------------------------------------------

  Candidate candidate(int u, int v, double bytes) const {
    const Group& a = groups_[u];
    const Group& b = groups_[v];
    Candidate c;
    const double cap = opt_.balance * total_work_ / double(opt_.target_groups);
    c.over = a.work + b.work > cap ? 1 : 0;
    c.same = a.scope == b.scope ? 1 : 0;
    c.depth = scope_depth(common_scope(a.scope, b.scope));
    c.rating = bytes / (a.work + b.work + 1.0);
    c.u = std::min(u, v);
    c.v = std::max(u, v);
    c.vu = groups_[c.u].version;
    c.vv = groups_[c.v].version;
    return c;
  }

  void merge_edges() {
    std::priority_queue<Candidate, std::vector<Candidate>, LowerPriority> pq;
    for (size_t k = 0; k < groups_.size(); ++k) {
      if (!groups_[k].alive) continue;
      for (const auto& e : groups_[k].nbr) {
        if (groups_[e.first].alive && int(k) < e.first)
          pq.push(candidate(int(k), e.first, e.second));
      }
    }
    const size_t target = size_t(opt_.target_groups);
    while (alive_ > target && !pq.empty()) {
      const Candidate c = pq.top();
      pq.pop();
      const Group& a = groups_[c.u];
      const Group& b = groups_[c.v];
      if (!a.alive || !b.alive || a.version != c.vu || b.version != c.vv) continue;
      if (!try_merge(c.u, c.v)) continue;
      const int r = std::min(c.u, c.v);
      for (const auto& e : groups_[r].nbr) pq.push(candidate(r, e.first, e.second));
    }
  }

  /// Groups without an edge between them (independent branches, separate components):
  /// neighbours in key order, lightest pairs first, until the target or no progress.
  void merge_independent() {
    const size_t target = size_t(opt_.target_groups);
    while (alive_ > target) {
      std::vector<std::pair<int64_t, int>> order;
      for (size_t k = 0; k < groups_.size(); ++k) {
        if (!groups_[k].alive) continue;
        int64_t lo = std::numeric_limits<int64_t>::max();
        for (int p : groups_[k].part) {
          if (p >= 0) lo = std::min(lo, parts_[p].key);
        }
        order.emplace_back(lo, int(k));
      }
      std::sort(order.begin(), order.end());
      std::vector<std::tuple<double, int, int>> pairs;
      for (size_t k = 1; k < order.size(); ++k) {
        const int u = order[k - 1].second, v = order[k].second;
        pairs.emplace_back(groups_[u].work + groups_[v].work, u, v);
      }
      std::sort(pairs.begin(), pairs.end());
      bool progress = false;
      for (const auto& [w, u, v] : pairs) {
        if (alive_ <= target) break;
        if (!groups_[u].alive || !groups_[v].alive) continue;
        progress = try_merge(u, v) || progress;
      }
      if (!progress) break;
    }
  }

  const Graph& g_;
  const CoarsenOptions& opt_;
  CoarsenStats stats_;
  // Step 1 output.
  std::vector<int> part0_;  // initial part of every op
  std::vector<int> root_of_part_, slot_of_part_;
  std::vector<std::pair<int, int>> edges_;
  // Dynamic state.
  std::vector<Part> parts_;
  Dsu pdsu_;
  std::vector<int> part_group_;  // initial group of every part (gf() gives the current one)
  std::vector<Group> groups_;
  Dsu gdsu_;
  size_t alive_ = 0;
  double total_work_ = 0;
  // Scratch for explore().
  std::vector<uint32_t> in_set_, seen_;
  uint32_t stamp_ = 0;
  std::vector<int> stack_;
};

}  // namespace

Coarsening coarsen(const Graph& g, const CoarsenOptions& options) {
  if (options.target_groups < 0) {
    throw ValidationError("coarsen: target_groups must be >= 0 (0 = no merging), got " +
                          std::to_string(options.target_groups));
  }
  if (!(options.balance > 0)) {
    throw ValidationError("coarsen: balance must be > 0, got " + std::to_string(options.balance));
  }
  if (!(options.flops_per_byte >= 0)) {
    throw ValidationError("coarsen: flops_per_byte must be >= 0, got " +
                          std::to_string(options.flops_per_byte));
  }
  CoarsenStats stats;
  const Partition p = Coarsener(g, options).run(&stats);
  return coarsen_detail::build_coarsening(g, p, stats);
}

}  // namespace placer
