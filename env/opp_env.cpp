#include "env/opp_env.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>

#include "src/util/error.h"

namespace placer {

namespace {

const char* const kCtx = "opp env";

[[noreturn]] void fail(const std::string& field, const std::string& msg) {
  throw ValidationError(format_context(kCtx, field, msg));
}

int checked_degree(const OppEnvOptions& o, const Cluster& c) {
  const int n = c.num_devices();
  const int k = o.degree == 0 ? n : o.degree;
  if (k < 2 || k > n) {
    fail("degree", "must be in [2, " + std::to_string(n) + "] (the cluster's devices; 0 = all)" +
                       ", got " + std::to_string(k));
  }
  for (double v : {o.partition_reward, o.replicate_reward, o.conflict_reward, o.oom_penalty}) {
    if (!std::isfinite(v)) fail("reward", "rewards and penalties must be finite");
  }
  return k;
}

}  // namespace

bool parse_opp_reward(const std::string& s, OppEnvOptions::Reward* out) {
  if (s == "simulator") {
    *out = OppEnvOptions::Reward::kSimulator;
  } else if (s == "paper") {
    *out = OppEnvOptions::Reward::kPaper;
  } else {
    return false;
  }
  return true;
}

struct OppEnv::Impl {
  const Graph& graph;
  const Cluster& cluster;
  OppEnvOptions opt;
  int degree;
  ShardingPropagator prop;
  bool dp;
  const std::vector<ShardSlot>& slots;
  size_t num_targets;
  std::vector<int> order;
  std::vector<LinkageGroup> linkage;
  std::vector<std::vector<int>> tied;  // per slot: the same slot of the other layers
  std::vector<int> devices;
  Simulator sim;
  double t_ref = 0;
  bool ref_oom = false;
  std::unordered_map<std::string, double> cache;  // decision vector -> step time
  int64_t sims = 0;

  // Episode.
  std::vector<int8_t> dec;
  size_t pos = 0;
  bool done = false;
  PropagationResult res;
  double t_prev = 0;  // last finite step time

  Impl(const Graph& g, const Cluster& c, const CostModel& cost, const OppEnvOptions& o)
      : graph(g),
        cluster(c),
        opt(o),
        degree(checked_degree(o, c)),
        prop(g, degree),
        dp(o.task == OppEnvOptions::Task::kDataParallel),
        slots(dp ? prop.input_slots() : prop.variable_slots()),
        num_targets(dp ? prop.data_inputs().size() : prop.variables().size()),
        sim(g, c, cost) {
    if (slots.empty()) {
      fail("task", "graph '" + g.name() + "' has no " +
                       (dp ? "data-input dims" : "trainable-variable dims") + " to decide");
    }
    for (int d = 0; d < degree; ++d) devices.push_back(d);
    order.resize(slots.size());
    for (size_t s = 0; s < slots.size(); ++s) order[s] = int(s);
    if (opt.linkage) {
      linkage = linkage_groups(prop, dp);
      auto size_of = [&](int s) {
        return std::max(linkage[2 * size_t(s)].implied.size(),
                        linkage[2 * size_t(s) + 1].implied.size());
      };
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return size_of(a) > size_of(b); });
    }
    if (opt.tie_layers) tie_slots();
    Plan ref = Plan::single_device(g, 0);
    const SimResult r = sim.run(ref, fast_options());
    ++sims;
    t_ref = r.step_time;
    ref_oom = r.oom && !opt.ignore_memory;
    if (!std::isfinite(t_ref) || t_ref <= 0) {
      fail("reference", "the all-replicated plan has step time " + std::to_string(t_ref));
    }
  }

  // The name of a layer op with its layer index replaced: "layers.3.mlp.fc" -> "layers.#.mlp.fc"
  // (the first dot-delimited component equal to the index); "" when the op has no layer.
  static std::string layer_template(const Op& op) {
    if (op.layer < 0) return "";
    const std::string idx = std::to_string(op.layer);
    size_t at = 0;
    while ((at = op.name.find(idx, at)) != std::string::npos) {
      const size_t end = at + idx.size();
      const bool left = at == 0 || op.name[at - 1] == '.';
      const bool right = end == op.name.size() || op.name[end] == '.';
      if (left && right) return op.name.substr(0, at) + "#" + op.name.substr(end);
      at = end;
    }
    return "";
  }

  void tie_slots() {
    tied.assign(slots.size(), {});
    if (dp) return;  // data inputs have no layers
    std::unordered_map<std::string, std::vector<int>> classes;
    for (size_t s = 0; s < slots.size(); ++s) {
      const ShardVariable& v = prop.variables()[size_t(slots[s].var)];
      const std::string t = layer_template(graph.op(v.op));
      if (t.empty()) continue;
      const std::string suffix = v.name.substr(v.name.rfind(':'));
      classes[t + suffix + "/" + std::to_string(slots[s].dim)].push_back(int(s));
    }
    for (const auto& [key, members] : classes) {
      for (int s : members) {
        for (int o : members) {
          if (o != s) tied[size_t(s)].push_back(o);
        }
      }
    }
  }

  // Sets slot s to `action` in *next, with (tie_layers) the same slot of every other layer
  // and (linkage) each one's linkage consequences; counts the newly decided slots. True when
  // a consequence contradicts a decision or a linkage group conflicts by itself (no
  // propagation: that is step()'s).
  bool apply(int s, int action, std::vector<int8_t>* next, int* decided, int* ones,
             int* zeros) const {
    bool conflict = false;
    auto set = [&](int slot, int8_t val) {
      int8_t& d = (*next)[size_t(slot)];
      if (d == -1) {
        d = val;
        ++*decided;
        (val == 1 ? *ones : *zeros) += 1;
      } else if (d != val) {
        conflict = true;
      }
    };
    std::vector<int> targets{s};
    if (!tied.empty())
      targets.insert(targets.end(), tied[size_t(s)].begin(), tied[size_t(s)].end());
    for (int t : targets) {
      set(t, int8_t(action));
      if (!opt.linkage) continue;
      const LinkageGroup& grp = linkage[2 * size_t(t) + (action == 1 ? 0 : 1)];
      conflict = conflict || grp.conflict;
      for (const auto& [slot, val] : grp.implied) set(slot, val);
    }
    return conflict;
  }

  static SimOptions fast_options() {
    SimOptions o;
    o.critical_path = false;
    return o;
  }

  // Propagates a decision vector; false (reason in *r) on a conflict.
  bool propagate(const std::vector<int8_t>& d, PropagationResult* r) const {
    std::vector<Sharding> targets;
    if (!decisions_to_shardings(prop, slots, d, num_targets, &targets)) {
      r->conflict = true;
      r->conflict_reason =
          "decisions partition two dims of one " + std::string(dp ? "data input" : "variable");
      return false;
    }
    *r = dp ? prop.propagate(std::vector<Sharding>(prop.variables().size()), targets)
            : prop.propagate(targets, prop.replicated_inputs());
    if (r->conflict) return false;
    const std::vector<int8_t> imp = implied_decisions(slots, dp ? r->inputs : r->variables);
    for (size_t s = 0; s < d.size(); ++s) {
      if (d[s] >= 0 && imp[s] >= 0 && imp[s] != d[s]) {
        const ShardSlot& sl = slots[s];
        const std::string name = dp ? graph.tensor(prop.data_inputs()[size_t(sl.var)]).name
                                    : prop.variables()[size_t(sl.var)].name;
        r->conflict = true;
        r->conflict_reason = "decision " + std::to_string(int(d[s])) + " on dim " +
                             std::to_string(sl.dim) + " of '" + name +
                             "' contradicts the propagation (" + std::to_string(int(imp[s])) + ")";
        return false;
      }
    }
    return true;
  }

  void advance() {
    while (pos < order.size() && dec[size_t(order[pos])] != -1) ++pos;
    done = pos >= order.size();
  }

  Plan make_plan() const {
    Plan p = sharding_plan(prop, res, devices);
    p.method = dp ? "adp" : "opp";
    return p;
  }

  double step_time() {
    const std::string key(dec.begin(), dec.end());
    const auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    const Plan p = make_plan();
    double t = ref_oom ? std::numeric_limits<double>::infinity() : t_ref;
    if (!p.partitions.empty()) {  // else: the reference plan itself
      p.validate(graph, cluster);
      const SimResult r = sim.run(p, fast_options());
      ++sims;
      t = r.oom && !opt.ignore_memory ? std::numeric_limits<double>::infinity() : r.step_time;
    }
    cache.emplace(key, t);
    return t;
  }

  void reset() {
    dec.assign(slots.size(), -1);
    pos = 0;
    propagate(dec, &res);  // never conflicts: nothing is split
    advance();
    t_prev = t_ref;
    if (opt.reward == OppEnvOptions::Reward::kSimulator) {
      const double t = step_time();
      if (std::isfinite(t)) t_prev = t;
    }
  }
};

OppEnv::OppEnv(const Graph& g, const Cluster& cluster, const CostModel& cost,
               const OppEnvOptions& options)
    : impl_(std::make_unique<Impl>(g, cluster, cost, options)) {
  reset();
}

OppEnv::~OppEnv() = default;

const OppEnvOptions& OppEnv::options() const { return impl_->opt; }
const ShardingPropagator& OppEnv::propagator() const { return impl_->prop; }
const std::vector<ShardSlot>& OppEnv::slots() const { return impl_->slots; }
const std::vector<int>& OppEnv::order() const { return impl_->order; }
const std::vector<LinkageGroup>& OppEnv::linkage() const { return impl_->linkage; }
int OppEnv::state_dim() const { return 2 * int(impl_->slots.size()) + 1; }

void OppEnv::reset() {
  impl_->reset();
  refresh();
}

void OppEnv::refresh() {
  const Impl& m = *impl_;
  const size_t n = m.slots.size();
  obs_.assign(2 * n + 1, 0.0f);
  for (size_t s = 0; s < n; ++s) obs_[s] = float(m.dec[s]);
  if (!m.done) obs_[n + m.pos] = 1.0f;
  obs_[2 * n] = float(double(m.pos) / double(m.order.size()));

  mask_ = {1, 1};
  if (!m.opt.mask_conflicts || m.done) return;
  for (int a = 0; a < 2; ++a) {
    std::vector<int8_t> next = m.dec;
    int decided = 0, ones = 0, zeros = 0;
    mask_[size_t(a)] = m.apply(m.order[m.pos], a, &next, &decided, &ones, &zeros) ? 0 : 1;
  }
  if (mask_[0] == 0 && mask_[1] == 0) mask_ = {1, 1};  // both conflict: the episode ends either way
}
bool OppEnv::done() const { return impl_->done; }
int OppEnv::current_slot() const { return impl_->done ? -1 : impl_->order[impl_->pos]; }

OppEnv::StepResult OppEnv::step(int action) {
  const StepResult r = decide(action);
  refresh();
  return r;
}

OppEnv::StepResult OppEnv::decide(int action) {
  Impl& m = *impl_;
  if (m.done) throw ValidationError(format_context(kCtx, "step", "the episode is over"));
  if (action != 0 && action != 1) {
    throw ValidationError(format_context(
        kCtx, "step",
        "action must be 0 (replicate) or 1 (partition), got " + std::to_string(action)));
  }
  const int s = m.order[m.pos];
  std::vector<int8_t> next = m.dec;
  StepResult out;
  int ones = 0, zeros = 0;
  bool conflict = m.apply(s, action, &next, &out.decided, &ones, &zeros);
  PropagationResult r;
  if (!conflict) conflict = !m.propagate(next, &r);
  if (conflict) {
    out.conflict = true;
    out.done = true;
    out.reward = m.opt.conflict_reward;
    m.done = true;
    return out;
  }
  m.dec = std::move(next);
  m.res = std::move(r);
  m.advance();
  out.done = m.done;
  if (m.opt.reward == OppEnvOptions::Reward::kPaper) {
    out.reward = ones * m.opt.partition_reward + zeros * m.opt.replicate_reward;
  } else {
    const double t = m.step_time();
    if (!std::isfinite(t)) {
      out.reward = m.opt.oom_penalty;
    } else {
      out.reward = (m.t_prev - t) / m.t_ref;
      m.t_prev = t;
    }
  }
  return out;
}

const std::vector<int8_t>& OppEnv::decisions() const { return impl_->dec; }
const PropagationResult& OppEnv::propagation() const { return impl_->res; }

Plan OppEnv::plan() const {
  Impl& m = *impl_;
  Plan p = m.make_plan();
  p.validate(m.graph, m.cluster);
  const SimResult r = m.sim.run(p);
  ++m.sims;
  p.predicted.valid = true;
  p.predicted.step_time = r.step_time;
  p.predicted.peak_memory = r.peak_memory;
  p.predicted.oom = r.oom;
  return p;
}

double OppEnv::step_time() const { return impl_->step_time(); }
double OppEnv::reference_time() const { return impl_->t_ref; }
int64_t OppEnv::simulations() const { return impl_->sims; }

}  // namespace placer
