// Sharding propagation: analysis, the fixpoint engine, decisions, linkage groups and plans.
// The per-op rules live in env/sharding_rules.cpp (docs/opp.md).
#include "env/sharding.h"

#include <algorithm>
#include <deque>
#include <string>
#include <utility>

#include "env/sharding_rules.h"
#include "src/util/error.h"

namespace placer {

namespace {

using shard::Factor;
using shard::Operand;
using shard::OpRule;

std::string shape_string(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t suffix_product(const std::vector<int64_t>& s, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < s.size(); ++i) p *= s[i];
  return p;
}

// A split of dim `d` (stride `inner`) of a tensor of shape `from` seen through a reshape to
// `to`: element f (flat) lives on device (f / (stride_d * inner)) % k. The output dim e with
// stride T_e dividing P = stride_d * inner and (P / T_e) * k dividing its size holds the
// same layout; it is unique when it exists. False when none does.
bool map_reshape(const std::vector<int64_t>& from, int d, int64_t inner,
                 const std::vector<int64_t>& to, int k, int* e_out, int64_t* inner_out) {
  const int64_t p = suffix_product(from, size_t(d) + 1) * inner;
  for (size_t e = 0; e < to.size(); ++e) {
    const int64_t te = suffix_product(to, e + 1);
    if (te <= 0 || p % te != 0) continue;
    const int64_t ie = p / te;
    if (to[e] > 1 && to[e] % (ie * k) == 0) {
      *e_out = int(e);
      *inner_out = ie;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string Sharding::to_string(int64_t dim_size, int degree) const {
  switch (kind) {
    case Kind::kUnknown:
      return "?";
    case Kind::kReplicated:
      return "R";
    case Kind::kPartial:
      return "P";
    case Kind::kSplit:
      break;
  }
  std::string s = "S" + std::to_string(dim);
  const bool contiguous = inner <= 0 || (dim_size > 0 && degree > 0 && inner * degree == dim_size);
  if (!contiguous) s += "/" + std::to_string(inner);
  return s;
}

ShardingPropagator::ShardingPropagator(const Graph& g, int degree) : g_(g), degree_(degree) {
  if (degree < 2) {
    throw ValidationError("sharding propagation: degree must be >= 2 (got " +
                          std::to_string(degree) + ")");
  }
  auto rules = std::make_shared<Rules>();
  rules->rule.resize(g.num_ops());
  rules->touching.resize(g.num_tensors());
  op_vars_.resize(g.num_ops());
  for (OpId id : g.topo_order()) {
    if (g.op(id).phase == Phase::kForward) rules->forward_ops.push_back(id);
  }
  if (rules->forward_ops.empty()) {
    throw ValidationError("sharding propagation: graph '" + g.name() + "' has no forward op");
  }
  std::vector<std::vector<shard::VarSpec>> specs(g.num_ops());
  for (OpId id : rules->forward_ops) {
    const Op& o = g.op(id);
    specs[id] = shard::reconstruct_variables(g, id);
    for (const shard::VarSpec& s : specs[id]) {
      op_vars_[id].push_back(int(vars_.size()));
      vars_.push_back({o.name + ":" + s.suffix, id, s.shape, s.bytes});
      rules->var_replicate_only.push_back(s.replicate_only ? 1 : 0);
    }
    auto touch = [&](TensorId t) {
      std::vector<OpId>& v = rules->touching[t];
      if (v.empty() || v.back() != id) v.push_back(id);
    };
    for (TensorId t : o.inputs) touch(t);
    for (TensorId t : o.outputs) touch(t);
  }
  for (TensorId t = 0; t < g.num_tensors(); ++t) {
    if (rules->touching[t].empty()) continue;
    const OpId pr = g.tensor(t).producer;
    if (pr == kNoOp || g.op(pr).category == OpCategory::kInput ||
        g.op(pr).phase != Phase::kForward) {
      inputs_.push_back(t);
    }
  }
  for (size_t v = 0; v < vars_.size(); ++v) {
    for (size_t d = 0; d < vars_[v].shape.size(); ++d) var_slots_.push_back({int(v), int(d)});
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    for (size_t d = 0; d < g.tensor(inputs_[i]).shape.size(); ++d) {
      input_slots_.push_back({int(i), int(d)});
    }
  }
  rules->var_users.resize(vars_.size());
  for (OpId id : rules->forward_ops) {
    // An output layer tied to the embedding (no parameters of its own) maps the table.
    const OpId owner = shard::tied_owner(g, id);
    if (owner != kNoOp && op_vars_[id].empty() && !op_vars_[owner].empty()) {
      rules->rule[id] = shard::build_rule(g, id, op_vars_[owner], specs[owner], degree);
      for (int v : op_vars_[owner]) rules->var_users[size_t(v)].push_back(id);
      continue;
    }
    rules->rule[id] = shard::build_rule(g, id, op_vars_[id], specs[id], degree);
  }
  rules_ = std::move(rules);
}

std::vector<Sharding> ShardingPropagator::replicated_inputs() const {
  return std::vector<Sharding>(inputs_.size(), Sharding::replicated());
}

// One propagation: the fixpoint of the per-op rules over a FIFO work list.
struct ShardingPropagator::Impl {
  const ShardingPropagator& p;
  const Rules& r;
  const Graph& g;
  const int k;
  PropagationResult res;
  std::deque<OpId> queue;
  std::vector<char> queued;

  explicit Impl(const ShardingPropagator& prop)
      : p(prop), r(*prop.rules_), g(prop.g_), k(prop.degree_) {
    res.tensors.assign(g.num_tensors(), Sharding::unknown());
    res.variables.assign(p.vars_.size(), Sharding::unknown());
    queued.assign(g.num_ops(), 0);
  }

  bool fail(const std::string& msg) {
    if (!res.conflict) {
      res.conflict = true;
      res.conflict_reason = msg;
    }
    return false;
  }
  void enqueue(OpId id) {
    if (queued[id]) return;
    queued[id] = 1;
    queue.push_back(id);
  }
  std::string who(OpId id) const {
    if (id == kNoOp) return "decision";
    const Op& o = g.op(id);
    return "op '" + o.name + "' (" + o.type + ", " + r.rule[id].name + " rule)";
  }
  std::string str(const Sharding& s, const std::vector<int64_t>& shape) const {
    const int64_t size =
        s.kind == Sharding::Kind::kSplit && s.dim >= 0 && size_t(s.dim) < shape.size()
            ? shape[size_t(s.dim)]
            : 0;
    return s.to_string(size, k);
  }
  std::string tensor_name(TensorId t) const {
    return "tensor '" + g.tensor(t).name + "' " + shape_string(g.tensor(t).shape);
  }
  std::string var_name(int v) const {
    return "variable '" + p.vars_[size_t(v)].name + "' " + shape_string(p.vars_[size_t(v)].shape);
  }

  bool set_tensor(TensorId t, Sharding s, OpId ctx) {
    const std::vector<int64_t>& shape = g.tensor(t).shape;
    if (s.kind == Sharding::Kind::kSplit) {
      if (s.dim < 0 || size_t(s.dim) >= shape.size()) {
        return fail(who(ctx) + ": " + tensor_name(t) + " has no dim " + std::to_string(s.dim) +
                    " to split");
      }
      const int64_t size = shape[size_t(s.dim)];
      if (s.inner < 1 || size % (s.inner * k) != 0) {
        return fail(who(ctx) + ": dim " + std::to_string(s.dim) + " of " + tensor_name(t) +
                    " cannot be split into " + std::to_string(k) + " equal parts" +
                    (s.inner >= 1 && s.inner * k != size ? " with stride " + std::to_string(s.inner)
                                                         : std::string()));
      }
    }
    Sharding& cur = res.tensors[t];
    if (cur == s) return true;
    const bool upgrade =
        cur.kind == Sharding::Kind::kReplicated && s.kind == Sharding::Kind::kPartial;
    if (!cur.known() || upgrade) {
      cur = s;
      for (OpId id : r.touching[t]) enqueue(id);
      return true;
    }
    // Partial sums are all-reduced before any consumer: they read them as replicated.
    if (cur.kind == Sharding::Kind::kPartial && s.kind == Sharding::Kind::kReplicated) return true;
    return fail(who(ctx) + ": " + tensor_name(t) + " is " + str(cur, shape) +
                " but the rule needs " + str(s, shape));
  }

  bool set_var(int v, Sharding s, OpId ctx) {
    const ShardVariable& var = p.vars_[size_t(v)];
    if (s.kind == Sharding::Kind::kPartial) {
      return fail(who(ctx) + ": " + var_name(v) + " cannot hold partial sums");
    }
    if (s.kind == Sharding::Kind::kSplit) {
      if (s.dim < 0 || size_t(s.dim) >= var.shape.size()) {
        return fail(who(ctx) + ": " + var_name(v) + " has no dim " + std::to_string(s.dim));
      }
      const int64_t size = var.shape[size_t(s.dim)];
      if (size % k != 0 || size < k) {
        return fail(who(ctx) + ": dim " + std::to_string(s.dim) + " of " + var_name(v) +
                    " cannot be split into " + std::to_string(k) + " equal parts");
      }
      s.inner = size / k;  // variables: layout is free, stored contiguous
    }
    Sharding& cur = res.variables[size_t(v)];
    if (cur.kind == s.kind && cur.dim == s.dim) return true;
    if (!cur.known()) {
      cur = s;
      enqueue(var.op);
      for (OpId u : p.rules_->var_users[size_t(v)]) enqueue(u);
      return true;
    }
    return fail(who(ctx) + ": " + var_name(v) + " is " + cur.to_string() + " but the rule needs " +
                s.to_string());
  }

  const std::vector<int64_t>& shape_of(const Operand& o) const {
    return o.is_var ? p.vars_[o.id].shape : g.tensor(o.id).shape;
  }
  std::string name_of(const Operand& o) const {
    return o.is_var ? var_name(int(o.id)) : tensor_name(o.id);
  }
  // What the op sees: partial inputs are all-reduced first (replicated).
  Sharding get(const Operand& o) const {
    Sharding s = o.is_var ? res.variables[o.id] : res.tensors[o.id];
    if (!o.is_output && s.kind == Sharding::Kind::kPartial) s = Sharding::replicated();
    return s;
  }
  bool set(const Operand& o, const Sharding& s, OpId ctx) {
    return o.is_var ? set_var(int(o.id), s, ctx) : set_tensor(o.id, s, ctx);
  }

  bool apply_factors(OpId id, const OpRule& rule) {
    int sel = -1;
    int64_t sel_inner = 0;
    const Operand* sel_from = nullptr;
    for (const Operand& o : rule.operands) {
      const Sharding s = get(o);
      if (s.kind != Sharding::Kind::kSplit) continue;
      const int f = size_t(s.dim) < o.factor.size() ? o.factor[size_t(s.dim)] : -1;
      if (f < 0) {
        return fail(who(id) + ": " + name_of(o) + " is split on dim " + std::to_string(s.dim) +
                    ", which the rule cannot split");
      }
      const Factor& fac = rule.factors[size_t(f)];
      if (fac.kind == Factor::Kind::kForbidden) {
        return fail(who(id) + ": " + name_of(o) + " is split on dim " + std::to_string(s.dim) +
                    " (" + fac.name + "), which cannot be split");
      }
      if (sel >= 0 && f != sel) {
        return fail(who(id) + ": " + name_of(*sel_from) + " is split on " +
                    rule.factors[size_t(sel)].name + " but " + name_of(o) + " on " + fac.name);
      }
      sel = f;
      if (!sel_from) sel_from = &o;
      if (!o.is_var && !fac.free_inner) {
        if (sel_inner > 0 && s.inner != sel_inner) {
          return fail(who(id) + ": " + name_of(o) + " is split on " + fac.name + " with stride " +
                      std::to_string(s.inner) + " but another operand with stride " +
                      std::to_string(sel_inner));
        }
        sel_inner = s.inner;
      }
    }
    const OpId ctx = id;
    if (sel >= 0) {
      const Factor& fac = rule.factors[size_t(sel)];
      for (const Operand& o : rule.operands) {
        const auto it = std::find(o.factor.begin(), o.factor.end(), sel);
        if (it == o.factor.end()) {
          const bool partial = o.is_output && fac.kind == Factor::Kind::kContract;
          if (!set(o, partial ? Sharding::partial() : Sharding::replicated(), ctx)) return false;
          continue;
        }
        const int d = int(it - o.factor.begin());
        const Sharding cur = get(o);
        const bool free = o.is_var || fac.free_inner;
        if (free && cur.kind == Sharding::Kind::kSplit && cur.dim == d) continue;
        const int64_t size = shape_of(o)[size_t(d)];
        const int64_t inner = free || sel_inner <= 0 ? size / k : sel_inner;
        if (!set(o, Sharding::split(d, inner), ctx)) return false;
      }
      return true;
    }
    // Nothing split: when every splittable factor is held by a known unsplit operand, the
    // whole op is replicated.
    std::vector<char> present(rule.factors.size(), 0), covered(rule.factors.size(), 0);
    for (const Operand& o : rule.operands) {
      const bool known = get(o).known();
      for (int f : o.factor) {
        if (f < 0) continue;
        present[size_t(f)] = 1;
        if (known) covered[size_t(f)] = 1;
      }
    }
    for (size_t f = 0; f < rule.factors.size(); ++f) {
      if (present[f] && !covered[f] && rule.factors[f].kind != Factor::Kind::kForbidden) {
        return true;
      }
    }
    for (const Operand& o : rule.operands) {
      if (!get(o).known() && !set(o, Sharding::replicated(), ctx)) return false;
    }
    return true;
  }

  bool apply_reshape(OpId id, const OpRule& rule) {
    const OpId ctx = id;
    const Operand& in = rule.operands[0];
    const Operand& out = rule.operands[1];
    for (size_t i = 2; i < rule.operands.size(); ++i) {
      if (!set(rule.operands[i], Sharding::replicated(), ctx)) return false;
    }
    const std::vector<int64_t>& xs = shape_of(in);
    const std::vector<int64_t>& ys = shape_of(out);
    Sharding sx = get(in), sy = get(out);
    if (sy.kind == Sharding::Kind::kPartial) sy = Sharding::replicated();
    int e = 0;
    int64_t ie = 0;
    if (sx.kind == Sharding::Kind::kSplit) {
      if (!map_reshape(xs, sx.dim, sx.inner, ys, k, &e, &ie)) {
        return fail(who(ctx) + ": the split " + str(sx, xs) + " of " + name_of(in) +
                    " has no matching dim in the output shape " + shape_string(ys));
      }
      if (!set(out, Sharding::split(e, ie), ctx)) return false;
    } else if (sx.kind == Sharding::Kind::kReplicated) {
      if (!set(out, Sharding::replicated(), ctx)) return false;
    }
    if (sy.kind == Sharding::Kind::kSplit) {
      if (!map_reshape(ys, sy.dim, sy.inner, xs, k, &e, &ie)) {
        return fail(who(ctx) + ": the split " + str(sy, ys) + " of " + name_of(out) +
                    " has no matching dim in the input shape " + shape_string(xs));
      }
      if (!set(in, Sharding::split(e, ie), ctx)) return false;
    } else if (sy.kind == Sharding::Kind::kReplicated) {
      if (!set(in, Sharding::replicated(), ctx)) return false;
    }
    return true;
  }

  void run() {
    for (OpId id : r.forward_ops) enqueue(id);
    while (!queue.empty() && !res.conflict) {
      const OpId id = queue.front();
      queue.pop_front();
      queued[id] = 0;
      const OpRule& rule = r.rule[id];
      if (rule.kind == OpRule::Kind::kFactors) {
        apply_factors(id, rule);
      } else if (rule.kind == OpRule::Kind::kReshape) {
        apply_reshape(id, rule);
      }
    }
  }
};

PropagationResult ShardingPropagator::propagate(const std::vector<Sharding>& variables,
                                                const std::vector<Sharding>& inputs) const {
  if (variables.size() != vars_.size()) {
    throw ValidationError("sharding propagation: " + std::to_string(variables.size()) +
                          " variable shardings for " + std::to_string(vars_.size()) + " variables");
  }
  if (inputs.size() != inputs_.size()) {
    throw ValidationError("sharding propagation: " + std::to_string(inputs.size()) +
                          " input shardings for " + std::to_string(inputs_.size()) +
                          " data inputs");
  }
  Impl impl(*this);
  for (size_t v = 0; v < vars_.size() && !impl.res.conflict; ++v) {
    if (variables[v].known()) impl.set_var(int(v), variables[v], kNoOp);
  }
  for (size_t i = 0; i < inputs_.size() && !impl.res.conflict; ++i) {
    Sharding s = inputs[i];
    if (!s.known()) continue;
    const Tensor& t = g_.tensor(inputs_[i]);
    if (s.kind == Sharding::Kind::kPartial) {
      impl.fail("decision: data input '" + t.name + "' cannot hold partial sums");
      break;
    }
    if (s.kind == Sharding::Kind::kSplit && s.inner <= 0 && s.dim >= 0 &&
        size_t(s.dim) < t.shape.size()) {
      s.inner = t.shape[size_t(s.dim)] / degree_;  // contiguous
    }
    impl.set_tensor(inputs_[i], s, kNoOp);
  }
  if (!impl.res.conflict) impl.run();
  PropagationResult res = std::move(impl.res);
  res.inputs.reserve(inputs_.size());
  for (TensorId t : inputs_) res.inputs.push_back(res.tensors[t]);
  return res;
}

namespace {

bool same_slots(const std::vector<ShardSlot>& a, const std::vector<ShardSlot>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].var != b[i].var || a[i].dim != b[i].dim) return false;
  }
  return true;
}

}  // namespace

bool decisions_to_shardings(const ShardingPropagator& prop, const std::vector<ShardSlot>& slots,
                            const std::vector<int8_t>& decisions, size_t num_targets,
                            std::vector<Sharding>* out) {
  if (decisions.size() != slots.size()) {
    throw ValidationError("decisions: " + std::to_string(decisions.size()) + " decisions for " +
                          std::to_string(slots.size()) + " slots");
  }
  // The targets' shapes, for the contiguous stride (slots of the propagator's variables or
  // data inputs); unknown slots give inner 0, which propagate() reads as contiguous.
  const bool vars = &slots == &prop.variable_slots() || same_slots(slots, prop.variable_slots());
  const bool inputs =
      !vars && (&slots == &prop.input_slots() || same_slots(slots, prop.input_slots()));
  auto dim_size = [&](size_t t, int d) -> int64_t {
    const std::vector<int64_t>* shape = nullptr;
    if (vars && t < prop.variables().size()) shape = &prop.variables()[t].shape;
    if (inputs && t < prop.data_inputs().size()) {
      shape = &prop.graph().tensor(prop.data_inputs()[t]).shape;
    }
    return shape && d >= 0 && size_t(d) < shape->size() ? (*shape)[size_t(d)] : 0;
  };
  out->assign(num_targets, Sharding::unknown());
  std::vector<int> ones(num_targets, 0), zeros(num_targets, 0), dims(num_targets, 0),
      split_dim(num_targets, -1);
  for (size_t s = 0; s < slots.size(); ++s) {
    const size_t t = size_t(slots[s].var);
    if (t >= num_targets) {
      throw ValidationError("decisions: slot " + std::to_string(s) + " names target " +
                            std::to_string(t) + " of " + std::to_string(num_targets));
    }
    ++dims[t];
    if (decisions[s] == 1) {
      ++ones[t];
      split_dim[t] = slots[s].dim;
    } else if (decisions[s] == 0) {
      ++zeros[t];
    }
  }
  const int64_t k = prop.degree();
  for (size_t t = 0; t < num_targets; ++t) {
    if (ones[t] > 1) return false;
    if (ones[t] == 1) {
      (*out)[t] =
          Sharding::split(split_dim[t], std::max<int64_t>(0, dim_size(t, split_dim[t]) / k));
    } else if (dims[t] > 0 && zeros[t] == dims[t]) {
      (*out)[t] = Sharding::replicated();
    }
  }
  return true;
}

std::vector<int8_t> implied_decisions(const std::vector<ShardSlot>& slots,
                                      const std::vector<Sharding>& targets) {
  std::vector<int8_t> out(slots.size(), -1);
  for (size_t s = 0; s < slots.size(); ++s) {
    const size_t t = size_t(slots[s].var);
    if (t >= targets.size() || !targets[t].known()) continue;
    out[s] = targets[t].kind == Sharding::Kind::kSplit && targets[t].dim == slots[s].dim ? 1 : 0;
  }
  return out;
}

std::vector<LinkageGroup> linkage_groups(const ShardingPropagator& prop, bool data_parallel) {
  const std::vector<ShardSlot>& slots = data_parallel ? prop.input_slots() : prop.variable_slots();
  const size_t nt = data_parallel ? prop.data_inputs().size() : prop.variables().size();
  std::vector<LinkageGroup> out;
  out.reserve(2 * slots.size());
  std::vector<int8_t> dec(slots.size(), -1);
  std::vector<Sharding> targets;
  const std::vector<Sharding> no_vars(prop.variables().size());
  const std::vector<Sharding> base_inputs =
      data_parallel ? std::vector<Sharding>(prop.data_inputs().size()) : prop.replicated_inputs();
  auto run = [&](const std::vector<Sharding>& t) {
    return data_parallel ? prop.propagate(no_vars, t) : prop.propagate(t, base_inputs);
  };
  // A decision that leaves its target unknown (0 on one dim of a multi-dim target)
  // propagates like no decision at all: computed once.
  const PropagationResult baseline = run(std::vector<Sharding>(nt));
  for (size_t s = 0; s < slots.size(); ++s) {
    for (int8_t d : {int8_t(1), int8_t(0)}) {
      LinkageGroup grp;
      grp.slot = int(s);
      grp.decision = d;
      dec[s] = d;
      decisions_to_shardings(prop, slots, dec, nt, &targets);
      dec[s] = -1;
      const bool none =
          std::none_of(targets.begin(), targets.end(), [](const Sharding& x) { return x.known(); });
      const PropagationResult r = none ? baseline : run(targets);
      grp.conflict = r.conflict;
      if (!r.conflict) {
        const std::vector<int8_t> imp =
            implied_decisions(slots, data_parallel ? r.inputs : r.variables);
        for (size_t o = 0; o < imp.size(); ++o) {
          if (o != s && imp[o] >= 0) grp.implied.emplace_back(int(o), imp[o]);
        }
      }
      out.push_back(std::move(grp));
    }
  }
  return out;
}

Plan sharding_plan(const ShardingPropagator& prop, const PropagationResult& result,
                   const std::vector<int>& devices) {
  if (result.conflict) {
    throw ValidationError("sharding plan: the propagation has a conflict: " +
                          result.conflict_reason);
  }
  const Graph& g = prop.graph();
  if (int(devices.size()) != prop.degree()) {
    throw ValidationError("sharding plan: " + std::to_string(devices.size()) +
                          " devices for degree " + std::to_string(prop.degree()));
  }
  if (result.tensors.size() != g.num_tensors() ||
      result.variables.size() != prop.variables().size()) {
    throw ValidationError("sharding plan: the propagation result does not match the graph");
  }
  Plan plan = Plan::single_device(g, devices[0]);
  plan.graph_name = g.name();
  plan.method = "sharding";
  std::vector<char> var_split(g.num_ops(), 0);
  for (size_t v = 0; v < prop.variables().size(); ++v) {
    if (result.variables[v].kind == Sharding::Kind::kSplit) var_split[prop.variables()[v].op] = 1;
  }
  using K = Sharding::Kind;
  for (OpId id = 0; id < g.num_ops(); ++id) {
    const Op& o = g.op(id);
    if (o.phase != Phase::kForward) continue;
    bool reads_split = false, reads_sharded = false, out_split = false, out_partial = false;
    for (TensorId t : o.inputs) {
      if (result.tensors[t].kind != K::kSplit) continue;
      reads_split = true;
      const OpId pr = g.tensor(t).producer;
      if (pr != kNoOp && g.op(pr).phase == Phase::kForward) reads_sharded = true;
    }
    for (TensorId t : o.outputs) {
      out_split |= result.tensors[t].kind == K::kSplit;
      out_partial |= result.tensors[t].kind == K::kPartial;
    }
    if (!reads_split && !out_split && !out_partial && !var_split[id]) continue;
    OpPartition part;
    part.op = id;
    part.devices = devices;
    const Sharding& first = o.outputs.empty() ? Sharding() : result.tensors[o.outputs[0]];
    if (first.kind == K::kSplit)
      part.dim = first.dim;
    else if (out_partial)
      part.dim = OpPartition::kReduceDim;
    else
      part.dim = 0;
    part.sharded_output = out_split;
    part.sharded_input = reads_sharded;
    plan.partitions.push_back(std::move(part));
  }
  return plan;
}

}  // namespace placer
