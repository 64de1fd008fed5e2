#include "agents/sync/sync_env.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "agents/sync/sync_builders.h"
#include "src/graph/sparse_gradients.h"
#include "src/util/error.h"

namespace placer {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kRing = 0, kHier = 1, kPsSharded = 2, kPsNoLocal = 3, kPsServer0 = 4,
              kAllGatherSync = 8, kSfb = 9;
constexpr int kNoCompressor = 0, kFP16 = 1, kPowerSGD = 2, kTopK = 3;

bool float_dtype(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kF64;
}

float clampf(double x, double lo, double hi) { return float(std::min(hi, std::max(lo, x))); }

void decode(int action, int* s, int* c, int* st) {
  *st = action % (SyncEnv::kMaxStaleness + 1);
  const int sc = action / (SyncEnv::kMaxStaleness + 1);
  *c = sc % SyncEnv::kCompressors;
  *s = sc / SyncEnv::kCompressors;
}

}  // namespace

VariableSync SyncEnv::action_strategy(int action, const std::vector<int>& servers) {
  if (action < 0 || action >= kNumActions) {
    throw ValidationError("autosync: action " + std::to_string(action) + " outside [0, " +
                          std::to_string(kNumActions) + ")");
  }
  int s = 0, c = 0, st = 0;
  decode(action, &s, &c, &st);
  VariableSync v;
  if (s == kHier) v.algorithm = SyncScheme::kHierarchical;
  if (s == kPsSharded || s == kPsNoLocal) {
    if (servers.empty()) throw ValidationError("autosync: a PS action needs servers");
    v = sharded_ps(servers);
    v.local_aggregation = s == kPsSharded;
  }
  if (s >= kPsServer0 && s < kAllGatherSync) {
    const size_t k = size_t(s - kPsServer0);
    if (k >= servers.size()) {
      throw ValidationError("autosync: action " + action_name(action) + " needs server " +
                            std::to_string(k) + ", there are " + std::to_string(servers.size()));
    }
    v = sharded_ps({servers[k]});
  }
  if (s == kAllGatherSync) v.synchronizer = Synchronizer::kAllGather;
  if (s == kSfb) v.synchronizer = Synchronizer::kFactorBroadcast;
  if (c == kFP16) v.compressor = Compressor::kFP16;
  if (c == kPowerSGD) v.compressor = Compressor::kPowerSGD, v.powersgd_rank = 4;
  if (c == kTopK) v.compressor = Compressor::kTopK, v.topk_ratio = 0.01;
  v.staleness = st;
  return v;
}

std::string SyncEnv::action_name(int action) {
  static const char* syncs[kSynchronizers] = {
      "ring",       "hierarchical", "ps-sharded", "ps-sharded-nolocal", "ps-server0",
      "ps-server1", "ps-server2",   "ps-server3", "allgather",          "sfb"};
  static const char* comps[kCompressors] = {"", "+fp16", "+powersgd4", "+topk1%"};
  if (action < 0 || action >= kNumActions) return "action " + std::to_string(action) + "?";
  int s = 0, c = 0, st = 0;
  decode(action, &s, &c, &st);
  return std::string(syncs[s]) + comps[c] + (st > 0 ? "+s" + std::to_string(st) : "");
}

// The set-up runs as named steps: checks and units, the reference, the features.
SyncEnv::SyncEnv(const Problem& p, const SyncEnvOptions& o) : p_(p), o_(o) {
  check_and_split_units();
  const double compute = simulate_reference();
  const std::vector<int> devs = problem_devices(p);
  const Bandwidths bw = bandwidths(p.cluster, devs);
  describe_units(compute, bw.inter);
  describe_cluster(devs, compute, bw);
  reset();
}

// The checks, the replicated plan, the PS servers and the units (largest variables first).
void SyncEnv::check_and_split_units() {
  const SyncEnvOptions& o = o_;
  const Problem& p = p_;
  if (o.max_units < 1) {
    throw ValidationError("autosync: units must be >= 1, got " + std::to_string(o.max_units));
  }
  if (o.max_staleness < 0) {
    throw ValidationError("autosync: --max-staleness must be >= 0, got " +
                          std::to_string(o.max_staleness));
  }
  const Graph& g = p.graph;
  if (!g.is_training_step()) {
    throw ValidationError(
        "autosync: the graph must be a training step (forward, backward and "
        "optimizer ops); expand it first");
  }
  base_ = replicated_plan(p, "autosync");
  replicas_ = base_.data_parallel.replicas;
  servers_ = ps_servers(p.cluster, problem_devices(p));

  std::vector<OpId> vars = sync_variables(g);
  if (vars.empty()) throw ValidationError("autosync: the graph has no trainable variables");
  std::stable_sort(vars.begin(), vars.end(),
                   [&](OpId a, OpId b) { return g.op(a).param_bytes > g.op(b).param_bytes; });
  const size_t k = std::min(vars.size(), size_t(o.max_units));
  vars_.assign(vars.begin(), vars.begin() + long(k));
  rest_.assign(vars.begin() + long(k), vars.end());
}

// The reference: the best builder; returns the compute step (the step with the sync free).
double SyncEnv::simulate_reference() {
  const Graph& g = p_.graph;
  double compute = 0;
  for (const SynchronizationConfig& s :
       {horovod_sync(), ps_sync(g, servers_), parallax_sync(g, servers_, replicas_),
        poseidon_sync(g, servers_, replicas_)}) {
    double sync_free = 0;
    const double t = simulate(s, &sync_free);
    if (compute == 0) compute = sync_free;
    if (sims_ == 1 || t < ref_time_) ref_time_ = t, ref_config_ = s;
  }
  return std::max(compute, 1e-9);
}

// Bandwidths between two problem devices on one host / on two hosts (each the other's when
// one kind is missing; inter >= 1 B/s).
SyncEnv::Bandwidths SyncEnv::bandwidths(const Cluster& cluster, const std::vector<int>& devs) {
  double intra = 0, inter = 0;
  for (size_t a = 0; a < devs.size(); ++a) {
    for (size_t b = a + 1; b < devs.size(); ++b) {
      const bool same = cluster.device(devs[a]).host == cluster.device(devs[b]).host;
      double& bw = same ? intra : inter;
      if (bw == 0) bw = cluster.bandwidth(devs[a], devs[b]);
    }
  }
  if (inter == 0) inter = intra;
  if (intra == 0) intra = inter;
  return Bandwidths{intra, std::max(inter, 1.0)};
}

// Per unit: the masks' flags (sparse, SFB, float), its bytes and its features.
void SyncEnv::describe_units(double compute, double inter) {
  const Graph& g = p_.graph;
  double total_flops = 0;
  for (const std::vector<OpId>* list : {&vars_, &rest_}) {
    for (OpId v : *list) total_flops += g.op(v).flops, total_bytes_ += double(g.op(v).param_bytes);
  }
  total_bytes_ = std::max(total_bytes_, 1.0);
  total_flops = std::max(total_flops, 1.0);
  const int n = units();
  double later = total_bytes_;
  for (int u = 0; u < n; ++u) {
    const std::vector<OpId> vs = unit_variables(u);
    double bytes = 0, sparse_bytes = 0, flops = 0;
    bool sparse = u < int(vars_.size()), fl = true;
    for (OpId v : vs) {
      const Op& op = g.op(v);
      bytes += double(op.param_bytes);
      flops += op.flops;
      const SparseGradient sg = sparse_gradient(g, v, replicas_);
      sparse = sparse && sg.sparse;
      sparse_bytes += sg.sparse ? double(sg.bytes()) : double(op.param_bytes);
      fl = fl && float_dtype(op.dtype);
    }
    const bool is_rest = u >= int(vars_.size());
    sparse_.push_back(sparse ? 1 : 0);
    sfb_.push_back(!is_rest && sfb_pays(g, vs.front(), replicas_) ? 1 : 0);
    float_.push_back(fl ? 1 : 0);
    unit_bytes_.push_back(bytes);
    later -= bytes;
    std::array<float, kUnitFeatures> f{};
    f[0] = clampf(std::log10(std::max(bytes, 1.0)) / 10, 0, 2);
    f[1] = float(bytes / total_bytes_);
    f[2] = float(sparse_.back());
    f[3] = float(bytes > 0 ? sparse_bytes / bytes : 1.0);
    f[4] = float(sfb_.back());
    f[5] = float(float_.back());
    f[6] = float(flops / total_flops);
    f[7] = float(double(u) / double(n));
    f[8] = is_rest ? 1.f : 0.f;
    f[9] = float(std::max(later, 0.0) / total_bytes_);
    f[10] = clampf(std::log10(std::max(bytes, 1.0) / inter / compute) / 3, -2, 2);
    f[11] = clampf(std::log10(std::max(sparse_bytes, 1.0) / inter / compute) / 3, -2, 2);
    unit_features_.push_back(f);
  }
}

void SyncEnv::describe_cluster(const std::vector<int>& devs, double compute, const Bandwidths& bw) {
  const double inter = bw.inter, intra = bw.intra;
  int hosts = 0;
  {
    std::vector<int> seen;
    for (int d : devs) {
      const int h = p_.cluster.device(d).host;
      if (std::find(seen.begin(), seen.end(), h) == seen.end()) seen.push_back(h);
    }
    hosts = int(seen.size());
  }
  cluster_features_[0] = clampf(std::log10(inter) - 9, -3, 3);
  cluster_features_[1] = clampf(std::log10(intra) - 10, -3, 3);
  cluster_features_[2] = float(hosts) / 8;
  cluster_features_[3] = float(devs.size()) / 16;
  cluster_features_[4] = clampf(std::log10(total_bytes_ / inter / compute) / 3, -2, 2);
  cluster_features_[5] = float(double(devs.size()) / std::max(hosts, 1)) / 8;
}

std::vector<OpId> SyncEnv::unit_variables(int i) const {
  if (i < 0 || i >= units()) {
    throw ValidationError("autosync: unit " + std::to_string(i) + " outside [0, " +
                          std::to_string(units()) + ")");
  }
  if (i < int(vars_.size())) return {vars_[size_t(i)]};
  return rest_;
}

void SyncEnv::reset() {
  unit_ = 0;
  actions_.clear();
  refresh();
}

bool SyncEnv::allowed(int unit, int action) const {
  int s = 0, c = 0, st = 0;
  decode(action, &s, &c, &st);
  const size_t u = size_t(unit);
  if (st > std::min(o_.max_staleness, kMaxStaleness)) return false;
  if (s >= kPsServer0 && s < kAllGatherSync) {
    const size_t k = size_t(s - kPsServer0);
    if (servers_.size() < 2 || k >= servers_.size()) return false;
  }
  if (s == kAllGatherSync && !sparse_[u]) return false;
  if (s == kSfb && !sfb_[u]) return false;
  if (c != kNoCompressor) {
    if (!o_.allow_compression || !float_[u] || s == kSfb) return false;
    if (c == kPowerSGD && s == kAllGatherSync) return false;
  }
  return true;
}

std::vector<int> SyncEnv::reference_actions() const {
  std::vector<int> out;
  for (int u = 0; u < units(); ++u) {
    const VariableSync& v = u < int(vars_.size())
                                ? ref_config_.strategy_of(p_.graph, vars_[size_t(u)])
                                : ref_config_.default_strategy;
    int s = kRing;
    switch (v.synchronizer) {
      case Synchronizer::kAllReduce:
        s = v.algorithm == SyncScheme::kHierarchical ? kHier : kRing;
        break;
      case Synchronizer::kAllGather:
        s = kAllGatherSync;
        break;
      case Synchronizer::kFactorBroadcast:
        s = kSfb;
        break;
      case Synchronizer::kParameterServer: {
        s = v.local_aggregation ? kPsSharded : kPsNoLocal;
        if (v.destinations.size() == 1 && v.shards == 1) {
          const auto it = std::find(servers_.begin(), servers_.end(), v.destinations[0]);
          const long k = it - servers_.begin();
          if (it != servers_.end() && k < 4) s = kPsServer0 + int(k);
        }
        break;
      }
    }
    int a = action_of(s, 0, 0);
    if (!allowed(u, a))
      a = allowed(u, action_of(kPsSharded, 0, 0)) ? action_of(kPsSharded, 0, 0)
                                                  : action_of(kRing, 0, 0);
    out.push_back(a);
  }
  return out;
}

void SyncEnv::refresh() {
  mask_.assign(kNumActions, 0);
  if (!done()) {
    for (int a = 0; a < kNumActions; ++a) mask_[size_t(a)] = allowed(unit_, a) ? 1 : 0;
  }
  std::vector<float>& x = obs_;
  x.assign(kStateDim, 0.f);
  if (!done()) {
    const auto& f = unit_features_[size_t(unit_)];
    std::copy(f.begin(), f.end(), x.begin());
  }
  std::copy(cluster_features_.begin(), cluster_features_.end(), x.begin() + kUnitFeatures);
  // Share of the model's bytes decided as each kind so far.
  float* ctx = x.data() + kUnitFeatures + kClusterFeatures;
  for (size_t u = 0; u < actions_.size(); ++u) {
    int s = 0, c = 0, st = 0;
    decode(actions_[u], &s, &c, &st);
    const float share = float(unit_bytes_[u] / total_bytes_);
    const int slot = s == kRing            ? 0
                     : s == kHier          ? 1
                     : s <= kPsNoLocal     ? 2
                     : s < kAllGatherSync  ? 3 + (s - kPsServer0)
                     : s == kAllGatherSync ? 7
                                           : 8;
    ctx[slot] += share;
    if (c != kNoCompressor || st > 0) ctx[9] += share;
  }
}

SynchronizationConfig SyncEnv::config_of(const std::vector<int>& actions) const {
  if (int(actions.size()) > units()) {
    throw ValidationError("autosync: " + std::to_string(actions.size()) + " actions for " +
                          std::to_string(units()) + " units");
  }
  SynchronizationConfig s;
  s.enabled = true;
  const bool rest_decided = !rest_.empty() && int(actions.size()) == units();
  if (rest_decided) s.default_strategy = action_strategy(actions.back(), servers_);
  for (size_t i = 0; i < vars_.size() && i < actions.size(); ++i) {
    const VariableSync v = action_strategy(actions[i], servers_);
    if (!(v == s.default_strategy)) {
      s.rules.push_back(SyncRule{SyncMatch::kName, p_.graph.op(vars_[i]).name, v});
    }
  }
  return s;
}

Plan SyncEnv::plan() const {
  Plan plan = base_;
  plan.method = "autosync";
  plan.synchronization = config();
  return plan;
}

double SyncEnv::simulate(const SynchronizationConfig& s, double* sync_free_step) {
  Plan plan = base_;
  plan.synchronization = s;
  SimOptions so;
  so.critical_path = false;
  const SimResult r = p_.simulator.run(plan, so);
  ++sims_;
  if (sync_free_step) *sync_free_step = r.compute_step_time > 0 ? r.compute_step_time : r.step_time;
  return r.oom ? kInf : r.step_time;
}

SyncEnv::StepResult SyncEnv::step(int action) {
  if (done()) throw ValidationError("autosync: step after the last unit (reset first)");
  if (action < 0 || action >= kNumActions || !allowed(unit_, action)) {
    throw ValidationError("autosync: action " + std::to_string(action) + " (" +
                          action_name(action) + ") is not allowed at unit " +
                          std::to_string(unit_));
  }
  actions_.push_back(action);
  ++unit_;
  refresh();
  StepResult r;
  r.done = done();
  if (r.done) {
    step_time_ = simulate(config());
    if (!std::isfinite(step_time_)) {
      r.reward = -1;
    } else if (!std::isfinite(ref_time_)) {
      r.reward = 1;
    } else {
      r.reward = std::clamp(std::log(ref_time_ / step_time_), -1.0, 1.0);
    }
  }
  return r;
}

}  // namespace placer
