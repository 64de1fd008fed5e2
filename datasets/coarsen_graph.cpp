// The coarse graph of a grouping, group names, and plans on groups mapped back to ops.
#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <unordered_map>

#include "datasets/coarsen.h"
#include "datasets/coarsen_internal.h"
#include "src/util/error.h"

namespace placer {
namespace coarsen_detail {
namespace {

const char* phase_suffix(Phase p) {
  switch (p) {
    case Phase::kForward:
      return "";
    case Phase::kBackward:
      return "/grad";
    case Phase::kOptimizer:
      return "/update";
    case Phase::kCommunication:
      return "/comm";
  }
  return "";
}

/// Index of the largest weight (ties: the lowest index).
template <size_t N>
int argmax(const std::array<double, N>& w) {
  int best = 0;
  for (int k = 1; k < int(N); ++k) {
    if (w[k] > w[best]) best = k;
  }
  return best;
}

struct PartInfo {
  std::vector<OpId> ops;  // fine topological order
  int group = -1;
  bool merged = false;
  Phase phase = Phase::kForward;
};

/// One coarse op from the fine ops of a part.
Op make_coarse_op(const Graph& g, const PartInfo& part) {
  if (part.ops.size() == 1) {
    Op o = g.op(part.ops[0]);  // a single op keeps its type, category, attributes
    o.inputs.clear();
    o.outputs.clear();
    o.forward_op = kNoOp;
    return o;
  }
  Op o;
  o.type = "Group";
  o.phase = part.phase;
  std::array<double, kNumOpCategories> cat_work{};
  std::array<double, kNumDTypes> dtype_flops{};
  std::array<double, 4> phase_work{};
  double scaled = 0, unscaled = 0;
  bool any_compute = false;
  uint64_t bytes = 0;
  bool first = true;
  for (OpId i : part.ops) {
    const Op& f = g.op(i);
    o.flops += f.flops;
    o.param_bytes += f.param_bytes;
    o.state_bytes += f.state_bytes;
    o.workspace_bytes = std::max(o.workspace_bytes, f.workspace_bytes);
    if (f.layer >= 0 && (o.layer < 0 || f.layer < o.layer)) o.layer = f.layer;
    o.scope = first ? f.scope : common_scope(o.scope, f.scope);
    first = false;
    dtype_flops[int(f.dtype)] += f.flops + 1;        // + 1: ops without FLOPs still vote
    if (f.category == OpCategory::kInput) continue;  // costs nothing in the simulator
    any_compute = true;
    const double w = std::max(f.flops, double(g.op_bytes(i)));
    cat_work[int(f.category)] += w + 1;
    phase_work[int(f.phase)] += w + 1;
    (f.batch_scaled ? scaled : unscaled) += w + 1;
    bytes += g.op_bytes(i);
  }
  o.category = any_compute ? OpCategory(argmax(cat_work)) : OpCategory::kInput;
  o.dtype = DType(argmax(dtype_flops));
  if (part.merged && any_compute) o.phase = Phase(argmax(phase_work));
  o.batch_scaled = scaled >= unscaled;
  o.bytes_accessed = bytes;
  o.attrs.emplace_back("ops", std::to_string(part.ops.size()));
  return o;
}

/// Numbers groups and parts by their lowest op id: fills the maps between fine ops, groups
/// and coarse ops, and returns the parts with their ops in fine topological order.
std::vector<PartInfo> number_parts(const Graph& g, const Partition& p, Coarsening* c) {
  const size_t n = g.num_ops();
  std::unordered_map<int, int> group_id, part_id;
  std::vector<PartInfo> parts;
  c->group_of_op.assign(n, -1);
  c->coarse_op_of_op.assign(n, kNoOp);
  for (OpId i = 0; i < n; ++i) {
    const int raw_part = p.part_of_op[i];
    const int raw_group = p.group_of_part[raw_part];
    auto gi = group_id.emplace(raw_group, int(c->ops_of_group.size())).first;
    if (gi->second == int(c->ops_of_group.size())) c->ops_of_group.emplace_back();
    auto pi = part_id.emplace(raw_part, int(parts.size())).first;
    if (pi->second == int(parts.size())) {
      parts.emplace_back();
      parts.back().group = gi->second;
      parts.back().merged = p.part_merged[raw_part];
      parts.back().phase = g.op(i).phase;
    }
    c->group_of_op[i] = gi->second;
    c->ops_of_group[gi->second].push_back(i);
    c->coarse_op_of_op[i] = OpId(pi->second);
  }
  for (OpId i : g.topo_order()) parts[c->coarse_op_of_op[i]].ops.push_back(i);
  const size_t np = parts.size();
  c->group_of_coarse_op.resize(np);
  c->coarse_ops_of_group.assign(c->ops_of_group.size(), {});
  for (size_t k = 0; k < np; ++k) {
    c->group_of_coarse_op[k] = parts[k].group;
    c->coarse_ops_of_group[parts[k].group].push_back(OpId(k));
  }
  return parts;
}

/// Group names: the Op::group all its ops share (and no other op has); else the op's name
/// for a group of one forward op (or one op); else its scope when it holds every op of
/// that scope; else the span "<first scope>..<last scope>" of its first and last forward
/// ops (all ops when it has none) in topological order, or "<first op>..<last op>" when
/// those scopes are equal or empty.
/// Coarse op names: the group name for its forward part (or its only part), the group
/// name + "/grad", "/update", "/comm" for the others; "#2", "#3"... resolve clashes.
class GroupNamer {
 public:
  GroupNamer(const Graph& g, const Coarsening& c, const std::vector<PartInfo>& parts)
      : g_(g), c_(c), parts_(parts), ng_(c.ops_of_group.size()) {
    collect_scopes();
    collect_ends();
    count_ops_per_name();
  }

  /// Sets c->group_names; returns the name of every coarse op.
  std::vector<std::string> name(Coarsening* c) {
    c->group_names.resize(ng_);
    std::vector<std::string> op_names(parts_.size());
    for (size_t k = 0; k < ng_; ++k) name_group(k, base_name(k), c, &op_names);
    return op_names;
  }

 private:
  /// The scope common to a group's ops, and the Op::group they all share ("" if none).
  void collect_scopes() {
    scope_.resize(ng_);
    shared_.resize(ng_);
    for (size_t k = 0; k < ng_; ++k) {
      const auto& ops = c_.ops_of_group[k];
      scope_[k] = g_.op(ops[0]).scope;
      shared_[k] = g_.op(ops[0]).group;
      for (OpId i : ops) {
        scope_[k] = common_scope(scope_[k], g_.op(i).scope);
        if (g_.op(i).group != shared_[k]) shared_[k].clear();
      }
    }
  }

  /// First and last ops (all, and forward) of each group in topological order.
  void collect_ends() {
    first_.assign(ng_, kNoOp);
    first_fwd_.assign(ng_, kNoOp);
    last_.assign(ng_, kNoOp);
    last_fwd_.assign(ng_, kNoOp);
    num_fwd_.assign(ng_, 0);
    for (OpId i : g_.topo_order()) {
      const int k = c_.group_of_op[i];
      if (first_[k] == kNoOp) first_[k] = i;
      last_[k] = i;
      if (g_.op(i).phase != Phase::kForward) continue;
      if (first_fwd_[k] == kNoOp) first_fwd_[k] = i;
      last_fwd_[k] = i;
      ++num_fwd_[k];
    }
  }

  void count_ops_per_name() {
    // An Op::group names a group only when the group holds all of its ops.
    std::unordered_map<std::string, size_t> ops_per_group;
    for (const Op& o : g_.ops()) ++ops_per_group[o.group];
    for (size_t k = 0; k < ng_; ++k) {
      if (!shared_[k].empty() && ops_per_group[shared_[k]] != c_.ops_of_group[k].size())
        shared_[k].clear();
    }
    for (size_t k = 0; k < ng_; ++k) ++scope_count_[scope_[k]];
    // A scope names a group only when the group holds every op of that module.
    for (const Op& o : g_.ops()) ++ops_per_scope_[o.scope];
  }

  /// Ops in scope `pre` and the scopes under it.
  size_t ops_under(const std::string& pre) const {
    size_t count = 0;
    for (auto it = ops_per_scope_.lower_bound(pre);
         it != ops_per_scope_.end() && it->first.compare(0, pre.size(), pre) == 0; ++it) {
      const std::string& sc = it->first;
      if (sc.size() == pre.size() || sc[pre.size()] == '.' || sc[pre.size()] == '/') {
        count += it->second;
      }
    }
    return count;
  }

  std::string base_name(size_t k) const {
    const Op& a = g_.op(first_fwd_[k] != kNoOp ? first_fwd_[k] : first_[k]);
    const Op& z = g_.op(last_fwd_[k] != kNoOp ? last_fwd_[k] : last_[k]);
    const bool single = num_fwd_[k] == 1 || c_.ops_of_group[k].size() == 1;
    const std::string span = !a.scope.empty() && !z.scope.empty() && a.scope != z.scope
                                 ? a.scope + ".." + z.scope
                                 : a.name + ".." + z.name;
    const bool whole = !scope_[k].empty() && scope_count_.at(scope_[k]) == 1 &&
                       ops_under(scope_[k]) == c_.ops_of_group[k].size();
    return !shared_[k].empty() ? shared_[k] : single ? a.name : whole ? scope_[k] : span;
  }

  /// The first of base, base#2, base#3... whose coarse op names are all free.
  void name_group(size_t k, const std::string& base, Coarsening* c,
                  std::vector<std::string>* op_names) {
    const auto& cops = c_.coarse_ops_of_group[k];
    for (int attempt = 1;; ++attempt) {
      const std::string name = attempt == 1 ? base : base + "#" + std::to_string(attempt);
      std::vector<std::string> names;
      for (OpId co : cops) {
        const PartInfo& part = parts_[co];
        const bool plain = cops.size() == 1 || part.merged || part.phase == Phase::kForward;
        names.push_back(plain ? name : name + phase_suffix(part.phase));
      }
      bool clash = false;
      for (size_t a = 0; a < names.size() && !clash; ++a) {
        clash = taken_.count(names[a]) > 0;
        for (size_t b = 0; b < a && !clash; ++b) clash = names[a] == names[b];
      }
      if (clash) continue;
      c->group_names[k] = name;
      for (size_t a = 0; a < cops.size(); ++a) {
        (*op_names)[cops[a]] = names[a];
        taken_.insert(names[a]);
      }
      return;
    }
  }

  const Graph& g_;
  const Coarsening& c_;
  const std::vector<PartInfo>& parts_;
  const size_t ng_;
  std::vector<std::string> scope_, shared_;
  std::vector<OpId> first_, first_fwd_, last_, last_fwd_;
  std::vector<size_t> num_fwd_;
  std::map<std::string, int> scope_count_;
  std::map<std::string, size_t> ops_per_scope_;
  std::set<std::string> taken_;
};

/// Tensors between parts (and graph inputs / outputs) survive, each once: their ids in
/// the coarse graph (kNoTensor for the others).
std::vector<TensorId> add_kept_tensors(const Graph& g, const Coarsening& c, GraphBuilder* b) {
  std::vector<TensorId> new_id(g.num_tensors(), kNoTensor);
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    const OpId prod = g.tensor(t).producer;
    const auto cons = g.consumers(t);
    bool keep = prod == kNoOp ? !cons.empty() : cons.empty();
    for (OpId x : cons)
      keep = keep || (prod != kNoOp && c.coarse_op_of_op[x] != c.coarse_op_of_op[prod]);
    if (!keep) continue;
    Tensor copy = g.tensor(t);
    copy.producer = kNoOp;
    new_id[t] = b->add_tensor(std::move(copy));
  }
  return new_id;
}

/// forward_op of coarse op k: the coarse op of the members' forward op (under colocation,
/// the group's forward part); the first member's when they differ (possible without
/// colocation).
OpId coarse_forward_op(const Graph& g, const Coarsening& c, const PartInfo& part, size_t k) {
  for (OpId i : part.ops) {
    const OpId f = g.op(i).forward_op;
    if (part.merged || part.phase == Phase::kForward) break;
    if (f < g.num_ops() && g.op(f).phase == Phase::kForward && c.coarse_op_of_op[f] != OpId(k)) {
      return c.coarse_op_of_op[f];
    }
  }
  return kNoOp;
}

/// The coarse graph: one op per part, reading the kept tensors other parts write.
Graph build_coarse_graph(const Graph& g, const Coarsening& c, const std::vector<PartInfo>& parts,
                         const std::vector<std::string>& op_names) {
  GraphBuilder b(g.name());
  b.set_batch_size(g.batch_size());
  b.set_training_step(g.is_training_step());
  b.set_attrs(g.attrs());
  const std::vector<TensorId> new_id = add_kept_tensors(g, c, &b);
  std::vector<uint32_t> stamp(g.num_tensors(), UINT32_MAX);
  for (size_t k = 0; k < parts.size(); ++k) {
    const PartInfo& part = parts[k];
    Op o = make_coarse_op(g, part);
    o.name = op_names[k];
    o.group = c.group_names[part.group];
    const OpId fwd = coarse_forward_op(g, c, part, k);
    if (fwd != kNoOp) o.forward_op = fwd;
    for (OpId i : part.ops) {
      for (TensorId t : g.op(i).inputs) {
        const OpId prod = g.tensor(t).producer;
        if (prod != kNoOp && c.coarse_op_of_op[prod] == OpId(k)) continue;
        if (stamp[t] == k) continue;
        stamp[t] = uint32_t(k);
        o.inputs.push_back(new_id[t]);
      }
      for (TensorId t : g.op(i).outputs) {
        if (new_id[t] != kNoTensor) o.outputs.push_back(new_id[t]);
      }
    }
    b.add_op(std::move(o));
  }
  return b.build();
}

}  // namespace

Coarsening build_coarsening(const Graph& g, const Partition& p, const CoarsenStats& stats) {
  Coarsening c;
  c.stats = stats;
  const std::vector<PartInfo> parts = number_parts(g, p, &c);
  const std::vector<std::string> op_names = GroupNamer(g, c, parts).name(&c);
  c.coarse = build_coarse_graph(g, c, parts, op_names);
  return c;
}

}  // namespace coarsen_detail

Plan plan_from_group_devices(const Coarsening& c, const std::vector<int>& device_of_group) {
  if (device_of_group.size() != c.num_groups()) {
    throw ValidationError("plan_from_group_devices: " + std::to_string(device_of_group.size()) +
                          " devices given for " + std::to_string(c.num_groups()) + " groups");
  }
  Plan p;
  p.graph_name = c.coarse.name();
  p.method = "groups";
  p.placement.resize(c.coarse.num_ops());
  for (OpId k = 0; k < c.coarse.num_ops(); ++k) {
    p.placement[k] = device_of_group[c.group_of_coarse_op[k]];
  }
  return p;
}

namespace {

/// Whether a dim-0 split over `degree` devices passes Plan::validate for op `i`.
bool batch_splittable(const Graph& g, OpId i, size_t degree) {
  const Op& o = g.op(i);
  if (o.outputs.empty()) return false;
  const Tensor& t = g.tensor(o.outputs[0]);
  if (t.shape.empty()) return true;
  return t.shape[0] <= 0 || size_t(t.shape[0]) >= degree;
}

}  // namespace

Plan expand_group_plan(const Coarsening& c, const Graph& fine, const Plan& cp) {
  const std::string ctx = "expand_group_plan: ";
  if (c.coarse_op_of_op.size() != fine.num_ops()) {
    throw ValidationError(ctx + "the coarsening was made from a graph of " +
                          std::to_string(c.coarse_op_of_op.size()) + " ops, not graph '" +
                          fine.name() + "' (" + std::to_string(fine.num_ops()) + " ops)");
  }
  const size_t nc = c.coarse.num_ops();
  Plan p;
  p.graph_name = fine.name();
  p.method = cp.method;
  if (!cp.placement.empty()) {
    if (cp.placement.size() != nc) {
      throw ValidationError(ctx + "placement has " + std::to_string(cp.placement.size()) +
                            " entries, but the coarse graph has " + std::to_string(nc) + " ops");
    }
    p.placement.resize(fine.num_ops());
    for (OpId i = 0; i < fine.num_ops(); ++i) p.placement[i] = cp.placement[c.coarse_op_of_op[i]];
  }
  // Fine forward ops of every coarse op, in topological order.
  std::vector<std::vector<OpId>> fwd(nc);
  for (OpId i : fine.topo_order()) {
    if (fine.op(i).phase == Phase::kForward) fwd[c.coarse_op_of_op[i]].push_back(i);
  }
  for (size_t k = 0; k < cp.partitions.size(); ++k) {
    const OpPartition& part = cp.partitions[k];
    const std::string f = ctx + "partitions[" + std::to_string(k) + "]: ";
    if (part.op >= nc)
      throw ValidationError(f + "coarse op #" + std::to_string(part.op) + " does not exist");
    const auto& members = fwd[part.op];
    const std::string& name = c.coarse.op(part.op).name;
    if (members.empty()) {
      throw ValidationError(f + "coarse op '" + name + "' holds no forward op to split");
    }
    if (members.size() == 1) {
      p.partitions.push_back({members[0], part.dim, part.devices, part.levels});
    } else if (part.dim == 0 && part.levels.empty()) {
      for (OpId m : members) {
        if (batch_splittable(fine, m, part.devices.size()))
          p.partitions.push_back({m, 0, part.devices});
      }
    } else {
      throw ValidationError(f + "coarse op '" + name + "' groups " +
                            std::to_string(members.size()) +
                            " forward ops; only a batch split (dim 0) maps to each of them");
    }
  }
  if (cp.pipeline.enabled()) {
    std::vector<int> stage_of(nc, -1);
    for (size_t s = 0; s < cp.pipeline.stages.size(); ++s) {
      for (OpId co : cp.pipeline.stages[s].ops) {
        if (co >= nc) {
          throw ValidationError(ctx + "pipeline.stages[" + std::to_string(s) + "]: coarse op #" +
                                std::to_string(co) + " does not exist");
        }
        stage_of[co] = int(s);
      }
    }
    p.pipeline.stages.resize(cp.pipeline.stages.size());
    for (size_t s = 0; s < cp.pipeline.stages.size(); ++s) {
      p.pipeline.stages[s].devices = cp.pipeline.stages[s].devices;
    }
    for (OpId i : fine.topo_order()) {
      const int s = stage_of[c.coarse_op_of_op[i]];
      if (s >= 0 && fine.op(i).phase == Phase::kForward) p.pipeline.stages[s].ops.push_back(i);
    }
  }
  p.pipeline.micro_batches = cp.pipeline.micro_batches;
  p.pipeline.schedule = cp.pipeline.schedule;
  p.data_parallel = cp.data_parallel;
  return p;
}

Graph with_group_names(const Graph& fine, const Coarsening& c) {
  if (c.group_of_op.size() != fine.num_ops()) {
    throw ValidationError("with_group_names: the coarsening was made from a graph of " +
                          std::to_string(c.group_of_op.size()) + " ops, not graph '" + fine.name() +
                          "' (" + std::to_string(fine.num_ops()) + " ops)");
  }
  GraphBuilder b(fine.name());
  b.set_batch_size(fine.batch_size());
  b.set_training_step(fine.is_training_step());
  b.set_attrs(fine.attrs());
  for (const Tensor& t : fine.tensors()) b.add_tensor(t);
  for (OpId i = 0; i < fine.num_ops(); ++i) {
    Op o = fine.op(i);
    o.group = c.group_names[c.group_of_op[i]];
    b.add_op(std::move(o));
  }
  return b.build();
}

}  // namespace placer
