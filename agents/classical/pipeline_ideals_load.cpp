#include "agents/classical/pipeline_ideals_load.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "agents/classical/stage_borders.h"
#include "simulator/partition_collective_rules.h"
#include "src/util/error.h"

namespace placer {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Per label: work, transfers across its border and parameter bytes of an assignment.
struct LabelSums {
  std::vector<double> work, xfer;
  std::vector<uint64_t> params;
  std::vector<char> used;
};

/// The extra work of `p` on the labels that run it (extra_stage), which become used.
void add_extra_work(const IdealSplitProblem& p, const std::vector<int>& stage_of, LabelSums* t) {
  for (const IdealSplitExtra& e : p.extra) {
    const size_t at = static_cast<size_t>(extra_stage(e, stage_of));
    t->work[at] += e.work;
    t->used[at] = 1;
  }
}

/// The labels holding node u's output: its split's (NodeSplits), or its stage_of label.
uint64_t held_by(const NodeSplits* sp, const std::vector<int>& stage_of, int u) {
  const uint64_t own = uint64_t(1) << stage_of[static_cast<size_t>(u)];
  return sp ? own | sp->labels[static_cast<size_t>(u)] : own;
}

/// Node u's activations (StageLoadModel::activations): each to every other label that reads
/// it, charged there and to u's label.
void charge_activations(const StageLoadModel& m, int u, const std::vector<int>& stage_of,
                        const NodeSplits* sp, LabelSums* t) {
  const size_t su = static_cast<size_t>(stage_of[static_cast<size_t>(u)]);
  for (const StageLoadModel::Activation& a : m.activations[static_cast<size_t>(u)]) {
    uint64_t to = 0;
    for (int v : a.readers) to |= held_by(sp, stage_of, v);
    to &= ~held_by(sp, stage_of, u);
    for (size_t l = 0; to != 0; ++l, to >>= 1) {
      if (!(to & 1)) continue;
      t->xfer[l] += a.time;
      t->xfer[su] += a.time;
    }
  }
}

/// Node u's work and parameters on the labels that run it: its stage_of label, or shared
/// evenly by the labels of its split, each also charged the split's collectives.
void add_node_work(const StageLoadModel& m, int u, uint64_t held, double collectives,
                   LabelSums* t) {
  const size_t nu = static_cast<size_t>(u);
  const int k = __builtin_popcountll(held);
  for (size_t l = 0; held != 0; ++l, held >>= 1) {
    if (!(held & 1)) continue;
    t->used[l] = 1;
    t->work[l] += m.split.work[nu] / k;
    t->params[l] += m.params[nu] / static_cast<uint64_t>(k);
    if (k > 1) t->xfer[l] += collectives;
  }
}

LabelSums label_sums(const StageLoadModel& m, const std::vector<int>& stage_of, int labels,
                     const NodeSplits* sp = nullptr) {
  const IdealSplitProblem& p = m.split;
  LabelSums t;
  const size_t L = static_cast<size_t>(labels);
  t.work.assign(L, 0);
  t.xfer.assign(L, 0);
  t.params.assign(L, 0);
  t.used.assign(L, 0);
  for (int u = 0; u < p.size(); ++u) {
    const size_t su = static_cast<size_t>(stage_of[static_cast<size_t>(u)]);
    const uint64_t held = held_by(sp, stage_of, u);
    add_node_work(m, u, held, sp ? sp->collectives[static_cast<size_t>(u)] : 0, &t);
    // u's output crosses the border of its own stage and of every other stage it feeds,
    // once per stage (ideal_stage_load's rule).
    uint64_t crossed = 0;
    const std::vector<int>& succs = p.succs[static_cast<size_t>(u)];
    for (size_t k = 0; k < succs.size(); ++k) {
      const int sv = stage_of[static_cast<size_t>(succs[k])];
      if (held & held_by(sp, stage_of, succs[k])) continue;
      crossed |= (uint64_t(1) << sv) | (uint64_t(1) << su);
      if (m.back.empty()) continue;
      t.xfer[su] += m.back[static_cast<size_t>(u)][k];
      t.xfer[static_cast<size_t>(sv)] += m.back[static_cast<size_t>(u)][k];
    }
    if (!m.activations.empty()) {
      charge_activations(m, u, stage_of, sp, &t);
      continue;
    }
    for (size_t l = 0; crossed != 0; ++l, crossed >>= 1) {
      if (crossed & 1) t.xfer[l] += p.send[static_cast<size_t>(u)];
    }
  }
  add_extra_work(p, stage_of, &t);
  return t;
}

/// The load of `label` on `replicas` devices: its compute share with its communication (its
/// share of the border transfers, each replica moving the samples it runs, and the gradient
/// all-reduce), added or overlapped as the devices say (stage_load). The all-reduce overlaps the
/// whole compute share, as the simulator's steady state counts it (docs/dp_placers.md). Without the
/// all-reduce when `allreduce` is false: a lower bound for the search.
double label_load(const StageLoadModel& m, const LabelSums& t, size_t label, int replicas,
                  bool allreduce = true) {
  const double r = replicas;
  const double sync = allreduce ? m.allreduce_time(replicas, t.params[label]) : 0;
  return m.split.stage_load(t.work[label] / r, t.xfer[label] / r + sync);
}

constexpr int kMaxLabels = 64;  // label_sums keeps a stage's borders in a 64-bit mask

int label_count(const std::vector<int>& stage_of) {
  int labels = 1;
  for (int s : stage_of) labels = std::max(labels, s + 1);
  if (labels > kMaxLabels) {
    throw Error("stage load: " + std::to_string(labels) + " stages (at most " +
                std::to_string(kMaxLabels) + ")");
  }
  return labels;
}

}  // namespace

namespace {

/// The node of every op of a training step: forward ops numbered in topological order (as
/// ideal_split_problem numbers them), the others their forward op's, -1 without one.
std::vector<int> nodes_of_ops(const Graph& g) {
  std::vector<int> node(g.num_ops(), -1);
  int n = 0;
  for (OpId o : g.topo_order()) {
    if (g.op(o).phase == Phase::kForward) node[o] = n++;
  }
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const OpId f = g.op(o).forward_op;
    if (node[o] < 0 && f < g.num_ops()) node[o] = node[f];
  }
  return node;
}

/// StageLoadModel::activations and ::back of a training step, transfers from `device` to
/// `next` and back: each node's tensors read by other nodes' forward ops, and per edge u -> v
/// each gradient tensor v's backward ops send to u's (one transfer each).
void add_edge_transfers(const Problem& problem, int device, int next, StageLoadModel* m) {
  const Graph& g = problem.graph;
  const IdealSplitProblem& p = m->split;
  m->activations.assign(static_cast<size_t>(p.size()), {});
  m->back.assign(static_cast<size_t>(p.size()), {});
  for (int u = 0; u < p.size(); ++u)
    m->back[static_cast<size_t>(u)].assign(p.succs[static_cast<size_t>(u)].size(), 0);
  for (const BorderTensor& t : border_tensors(g, nodes_of_ops(g))) {
    if (!t.gradient) {
      StageLoadModel::Activation a{problem.cost.transfer_time(device, next, t.bytes), t.readers};
      std::sort(a.readers.begin(), a.readers.end());
      a.readers.erase(std::unique(a.readers.begin(), a.readers.end()), a.readers.end());
      m->activations[static_cast<size_t>(t.from)].push_back(std::move(a));
      continue;
    }
    // Once per tensor, to its first reader, when that one's node feeds the sender's.
    const int u = t.readers.front();
    const std::vector<int>& succs = p.succs[static_cast<size_t>(u)];
    const auto k = std::lower_bound(succs.begin(), succs.end(), t.from);
    if (k != succs.end() && *k == t.from) {
      m->back[static_cast<size_t>(u)][static_cast<size_t>(k - succs.begin())] +=
          problem.cost.transfer_time(next, device, t.bytes);
    }
  }
}

}  // namespace

double StageLoadModel::allreduce_time(int replicas, uint64_t bytes) const {
  if (replicas < 2 || bytes == 0) return 0;
  if (replicas > max_replicas()) {
    throw Error("stage load: " + std::to_string(replicas) + " replicas on a problem of " +
                std::to_string(max_replicas()) + " devices");
  }
  return cost->group_collective_time(
      CollectiveKind::kAllReduce, groups[static_cast<size_t>(replicas)], bytes, SyncScheme::kAuto);
}

StageLoadModel stage_load_model(const Problem& problem) {
  const std::vector<int> devices = problem_devices(problem);
  StageLoadModel m;
  const int next = devices.size() > 1 ? devices[1] : devices[0];
  m.split = ideal_split_problem(problem, devices[0], next);
  m.split.overlap = transfers_overlap(problem.cluster, devices);
  m.cost = &problem.cost;
  const Graph& g = problem.graph;
  m.batch = g.batch_size();
  for (OpId o : g.topo_order()) {
    if (g.op(o).phase == Phase::kForward) m.params.push_back(g.op(o).param_bytes);
  }
  if (g.is_training_step()) add_edge_transfers(problem, devices[0], next, &m);
  m.groups.resize(devices.size() + 1);
  for (size_t r = 2; r <= devices.size(); ++r) {
    std::vector<int> members(devices.begin(), devices.begin() + static_cast<long>(r));
    std::sort(members.begin(), members.end());
    m.groups[r] = problem.cost.make_group(members);
  }
  return m;
}

double assignment_load(const StageLoadModel& m, const std::vector<int>& stage_of,
                       const std::vector<int>& replicas, const NodeSplits* splits) {
  int labels = label_count(stage_of);
  if (splits && !splits->any()) splits = nullptr;
  for (size_t u = 0; splits && u < splits->labels.size(); ++u) {
    if (splits->labels[u] != 0) labels = std::max(labels, 64 - __builtin_clzll(splits->labels[u]));
  }
  const LabelSums t = label_sums(m, stage_of, labels, splits);
  double worst = 0;
  for (size_t l = 0; l < t.used.size(); ++l) {
    if (!t.used[l]) continue;
    const int r = l < replicas.size() ? std::max(1, replicas[l]) : 1;
    worst = std::max(worst, label_load(m, t, l, r));
  }
  return worst;
}

void plan_assignment(const Graph& g, const Plan& plan, std::vector<int>* stage_of,
                     std::vector<int>* replicas) {
  std::vector<int> stage_of_op(g.num_ops(), -1);
  std::map<int, int> devices;  // label -> device count
  for (size_t s = 0; s < plan.pipeline.stages.size(); ++s) {
    for (OpId o : plan.pipeline.stages[s].ops) stage_of_op[o] = static_cast<int>(s);
    devices[static_cast<int>(s)] = static_cast<int>(plan.pipeline.stages[s].devices.size());
  }
  stage_of->clear();
  for (OpId o : g.topo_order()) {
    if (g.op(o).phase != Phase::kForward) continue;
    int s = stage_of_op[o];
    if (s < 0) {
      s = plan.placement[o];
      devices.emplace(s, 1);
    }
    stage_of->push_back(s);
  }
  const int R = std::max(1, plan.data_parallel.replicas);
  replicas->assign(static_cast<size_t>(label_count(*stage_of)), 1);
  for (const auto& [label, count] : devices) {
    if (static_cast<size_t>(label) < replicas->size()) {
      (*replicas)[static_cast<size_t>(label)] = std::max(1, count) * R;
    }
  }
}

namespace {

/// The output bytes of `op`: activations (and input gradients) apart from parameter gradients.
void output_bytes(const Graph& g, const Op& op, uint64_t* act, uint64_t* grad) {
  *act = *grad = 0;
  for (TensorId t : op.outputs) (g.tensor(t).is_param_grad ? *grad : *act) += g.tensor(t).bytes;
}

/// The collective groups of partition `q`'s steps (PartitionCollectiveStep::level): the
/// whole partition for a one-level split (index 0), else per recursive-halving level the
/// pair of its first device, which stands for all pairs as they run at once.
std::vector<CollectiveGroup> step_groups(const CostModel& cost, const OpPartition& q) {
  std::vector<CollectiveGroup> out;
  if (q.levels.empty()) {
    std::vector<int> members = q.devices;
    std::sort(members.begin(), members.end());
    out.push_back(cost.make_group(members));
  }
  for (size_t l = 0; l < q.levels.size(); ++l) {
    const size_t stride = q.devices.size() >> (l + 1);
    std::vector<int> pair = {q.devices[0], q.devices[stride]};
    std::sort(pair.begin(), pair.end());
    out.push_back(cost.make_group(pair));
  }
  return out;
}

/// The collectives the simulator runs after every instance of the ops of partition `q`
/// (auto_partition_collectives), forward op `f` and its backward ops, at the step's tensor
/// sizes; the parameter gradients are the shard the non-batch levels leave.
double partition_collectives(const StageLoadModel& m, const Graph& g, const OpPartition& q,
                             OpId f) {
  if (!m.cost) return 0;
  const std::vector<CollectiveGroup> groups = step_groups(*m.cost, q);
  uint64_t sharded = 1;
  for (int dim : q.levels) sharded *= dim != 0 ? 2 : 1;
  auto time = [&](const Op& op, bool backward) {
    uint64_t act = 0, grad = 0;
    output_bytes(g, op, &act, &grad);
    double t = 0;
    for (const PartitionCollectiveStep& s :
         auto_partition_collectives(q, backward, act, backward ? grad / sharded : grad)) {
      t += m.cost->group_collective_time(s.kind, groups[static_cast<size_t>(std::max(0, s.level))],
                                         s.bytes, SyncScheme::kAuto);
    }
    return t;
  };
  double t = time(g.op(f), false);
  for (OpId o = 0; o < g.num_ops(); ++o) {
    if (g.op(o).phase == Phase::kBackward && g.op(o).forward_op == f) t += time(g.op(o), true);
  }
  return t;
}

}  // namespace

NodeSplits plan_splits(const StageLoadModel& m, const Graph& g, const Plan& plan) {
  NodeSplits sp;
  sp.labels.assign(static_cast<size_t>(m.split.size()), 0);
  sp.collectives.assign(sp.labels.size(), 0);
  if (!plan.pipeline.stages.empty()) return sp;
  const std::vector<int> node = nodes_of_ops(g);
  for (const OpPartition& q : plan.partitions) {
    const bool auto_collectives = q.forward_collective == PartitionCollective::kAuto &&
                                  q.backward_collective == PartitionCollective::kAuto;
    if (q.devices.size() < 2 || q.replicated || !auto_collectives || q.op >= g.num_ops() ||
        g.op(q.op).phase != Phase::kForward || node[q.op] < 0)
      continue;
    uint64_t mask = 0;
    for (int d : q.devices) mask |= d >= 0 && d < kMaxLabels ? uint64_t(1) << d : 0;
    const size_t u = static_cast<size_t>(node[q.op]);
    if (u >= sp.labels.size()) continue;
    sp.labels[u] = mask;
    sp.collectives[u] = partition_collectives(m, g, q, q.op);
  }
  return sp;
}

double plan_stage_load(const StageLoadModel& m, const Graph& g, const Plan& plan) {
  std::vector<int> stage_of, replicas;
  plan_assignment(g, plan, &stage_of, &replicas);
  const NodeSplits splits = plan_splits(m, g, plan);
  return assignment_load(m, stage_of, replicas, &splits);
}

namespace {

/// The best device counts of the used labels of `t` (sum <= `devices`, each >= 1 and one the
/// model allows): their largest load (label_load with `allreduce`) and the counts.
double best_replicas(const StageLoadModel& m, const LabelSums& t, int devices,
                     std::vector<int>* best, bool allreduce = true) {
  std::vector<size_t> used;
  for (size_t l = 0; l < t.used.size(); ++l) {
    if (t.used[l]) used.push_back(l);
  }
  std::vector<int> r(t.used.size(), 0);
  double best_load = kInf;
  // Depth-first over the used labels; `left` devices remain, `worst` so far.
  auto visit = [&](auto&& self, size_t i, int left, double worst) -> void {
    if (worst >= best_load) return;
    if (i == used.size()) {
      best_load = worst;
      *best = r;
      return;
    }
    const int spare = left - static_cast<int>(used.size() - i - 1);  // one for each after
    for (int k = 1; k <= spare; ++k) {
      if (!m.allows(k)) continue;
      r[used[i]] = k;
      self(self, i + 1, left - k, std::max(worst, label_load(m, t, used[i], k, allreduce)));
    }
    r[used[i]] = 0;
  };
  visit(visit, 0, devices, 0.0);
  return best_load;
}

}  // namespace

namespace {

/// Depth-first search over the nodes in order (topological), each given a label; partial
/// sums per label grow with every node, so a partial assignment whose lower bound (the best
/// device counts for its sums, without the all-reduce) is not below the best found is cut. Without
/// extra work the labels are interchangeable (one host of equal devices), so node u only opens the
/// next unused label.
class StageLoadSearch {
 public:
  StageLoadSearch(const StageLoadModel& m, int labels, int64_t max_visits)
      : m_(m), labels_(labels), max_visits_(max_visits), preds_(m.split.size()) {
    const IdealSplitProblem& p = m.split;
    for (int u = 0; u < p.size(); ++u) {
      const std::vector<int>& succs = p.succs[static_cast<size_t>(u)];
      for (size_t k = 0; k < succs.size(); ++k) {
        preds_[static_cast<size_t>(succs[k])].push_back(u);
        preds_back_[static_cast<size_t>(succs[k])].push_back(
            m.back.empty() ? 0 : m.back[static_cast<size_t>(u)][k]);
      }
    }
    stage_of_.assign(static_cast<size_t>(p.size()), -1);
    index_activations();
    sums_.work.assign(static_cast<size_t>(labels), 0);
    sums_.xfer.assign(static_cast<size_t>(labels), 0);
    sums_.params.assign(static_cast<size_t>(labels), 0);
    sums_.used.assign(static_cast<size_t>(labels), 0);
    symmetric_ = p.extra.empty();
  }

  /// Starts from `incumbent` (a valid assignment and its replicas) and returns the optimum.
  StageLoadOptimum run(StageLoadOptimum incumbent) {
    best_ = std::move(incumbent);
    visit(0, 0);
    best_.assignments = visits_;
    return best_;
  }

 private:
  struct Change {
    int mask, label;  // charged_[mask] got label's bit (mask -1: none)
    double xfer;
  };

  /// charged_ has one mask per node (the split problem's rule) and one per activation after
  /// them; reads_[u]: (node, activation) of every activation u reads.
  void index_activations() {
    const int n = m_.split.size();
    reads_.assign(static_cast<size_t>(n), {});
    int id = n;
    for (int q = 0; q < static_cast<int>(m_.activations.size()); ++q) {
      for (const StageLoadModel::Activation& a : m_.activations[static_cast<size_t>(q)]) {
        for (int u : a.readers) reads_[static_cast<size_t>(u)].push_back({q, id});
        activation_time_.push_back(a.time);
        ++id;
      }
    }
    charged_.assign(static_cast<size_t>(id), 0);
  }

  void charge(int label, double xfer, int mask = -1) {
    sums_.xfer[static_cast<size_t>(label)] += xfer;
    changes_.push_back({mask, label, xfer});
  }

  /// Charges `label` unless charged_[mask] has its bit already.
  void charge_once(int label, double xfer, int mask) {
    const uint64_t bit = uint64_t(1) << label;
    if (charged_[static_cast<size_t>(mask)] & bit) return;
    charged_[static_cast<size_t>(mask)] |= bit;
    charge(label, xfer, mask);
  }

  void visit(int u, int open) {
    if (++visits_ > max_visits_) {
      throw Error("stage load: the search passed " + std::to_string(max_visits_) +
                  " partial assignments");
    }
    if (u == m_.split.size()) return leaf();
    const int top = symmetric_ ? std::min(labels_, open + 1) : labels_;
    for (int l = 0; l < top; ++l) {
      const size_t trail = assign(u, l);
      if (lower_bound() < best_.load) visit(u + 1, std::max(open, l + 1));
      undo(u, l, trail);
    }
  }

  /// Gives node u label l: its work and parameters, and what now crosses, as label_sums
  /// counts it: the gradients of each edge into u from another label (both sides), and its
  /// predecessors' outputs (once per node and label on either side) or, with activations,
  /// each activation u reads from another label the first time it reaches l (charged to l
  /// and to the sender).
  size_t assign(int u, int l) {
    const size_t trail = changes_.size();
    const IdealSplitProblem& p = m_.split;
    stage_of_[static_cast<size_t>(u)] = l;
    sums_.work[static_cast<size_t>(l)] += p.work[static_cast<size_t>(u)];
    sums_.params[static_cast<size_t>(l)] += m_.params[static_cast<size_t>(u)];
    ++used_count_[static_cast<size_t>(l)];
    const std::vector<int>& preds = preds_[static_cast<size_t>(u)];
    const bool by_node = m_.activations.empty();
    for (size_t k = 0; k < preds.size(); ++k) {
      const int q = preds[k], lq = stage_of_[static_cast<size_t>(q)];
      if (lq == l) continue;
      const double back = preds_back_[static_cast<size_t>(u)][k];
      for (int side : {lq, l}) {
        if (back > 0) charge(side, back);
        if (by_node) charge_once(side, p.send[static_cast<size_t>(q)], q);
      }
    }
    for (const auto& [q, id] : reads_[static_cast<size_t>(u)]) {
      const int lq = stage_of_[static_cast<size_t>(q)];
      if (lq == l || (charged_[static_cast<size_t>(id)] & (uint64_t(1) << l))) continue;
      const double t = activation_time_[static_cast<size_t>(id - p.size())];
      charge_once(l, t, id);
      charge(lq, t);
    }
    return trail;
  }

  void undo(int u, int l, size_t trail) {
    const IdealSplitProblem& p = m_.split;
    while (changes_.size() > trail) {
      const Change& c = changes_.back();
      if (c.mask >= 0) charged_[static_cast<size_t>(c.mask)] &= ~(uint64_t(1) << c.label);
      sums_.xfer[static_cast<size_t>(c.label)] -= c.xfer;
      changes_.pop_back();
    }
    sums_.work[static_cast<size_t>(l)] -= p.work[static_cast<size_t>(u)];
    sums_.params[static_cast<size_t>(l)] -= m_.params[static_cast<size_t>(u)];
    --used_count_[static_cast<size_t>(l)];
    stage_of_[static_cast<size_t>(u)] = -1;
  }

  /// The best device counts for the labels so far, their transfers so far, no all-reduce:
  /// work and transfers only grow with more nodes, so no completion does better.
  double lower_bound() {
    for (size_t l = 0; l < used_count_.size(); ++l) sums_.used[l] = used_count_[l] > 0;
    return best_replicas(m_, sums_, labels_, &scratch_, false);
  }

  /// A complete assignment: the extra work joins its labels, then the best device counts.
  void leaf() {
    LabelSums t = sums_;
    for (size_t l = 0; l < t.used.size(); ++l) t.used[l] = used_count_[l] > 0;
    add_extra_work(m_.split, stage_of_, &t);
    std::vector<int> replicas;
    const double load = best_replicas(m_, t, labels_, &replicas);
    if (load < best_.load) {
      best_.load = load;
      best_.stage_of = stage_of_;
      best_.replicas = std::move(replicas);
    }
  }

  const StageLoadModel& m_;
  const int labels_;
  const int64_t max_visits_;
  std::vector<std::vector<int>> preds_;
  std::vector<std::vector<double>> preds_back_ =
      std::vector<std::vector<double>>(static_cast<size_t>(m_.split.size()));  // with preds_
  std::vector<int> stage_of_;
  std::vector<uint64_t> charged_;  // per node, then per activation: labels charged
  std::vector<std::vector<std::pair<int, int>>> reads_;  // per node: (node, activation mask)
  std::vector<double> activation_time_;                  // per activation
  LabelSums sums_;                 // work, xfer, params per label (used: set by lower_bound)
  std::vector<int> used_count_ = std::vector<int>(static_cast<size_t>(labels_), 0);
  std::vector<Change> changes_;
  std::vector<int> scratch_;  // lower_bound's device counts (unused)
  bool symmetric_ = false;
  int64_t visits_ = 0;
  StageLoadOptimum best_;
};

}  // namespace

StageLoadOptimum exhaustive_stage_load(const StageLoadModel& m, int labels, int64_t max_visits) {
  if (labels < 1 || labels > m.max_replicas() || labels > kMaxLabels) {
    throw Error("stage load: " + std::to_string(labels) + " labels for " +
                std::to_string(m.max_replicas()) + " devices");
  }
  // Incumbents: the best contiguous split on one device per stage, and one stage on as
  // many devices as the batch allows.
  StageLoadOptimum start;
  const IdealSplit split = solve_ideal_split(m.split, labels);
  start.stage_of = split.stage_of;
  start.replicas.assign(static_cast<size_t>(labels), 1);
  start.load = assignment_load(m, start.stage_of, start.replicas);
  const std::vector<int> one(static_cast<size_t>(m.split.size()), 0);
  int all = labels;
  while (!m.allows(all)) --all;
  const double whole = assignment_load(m, one, {all});
  if (whole < start.load) {
    start.stage_of = one;
    start.replicas.assign(static_cast<size_t>(labels), 0);
    start.replicas[0] = all;
    start.load = whole;
  }
  if (m.split.size() == 0) return start;
  // Strictly below the incumbent is searched; nudge it so that equal plans are found too.
  const double incumbent = start.load;
  start.load = std::nextafter(incumbent, std::numeric_limits<double>::infinity());
  StageLoadOptimum best = StageLoadSearch(m, labels, max_visits).run(std::move(start));
  best.load = std::min(best.load, incumbent);
  return best;
}

}  // namespace placer
