#include "agents/sync/sync_builders.h"

#include <algorithm>
#include <numeric>

#include "agents/api/methods.h"
#include "src/graph/sparse_gradients.h"
#include "src/util/error.h"

namespace placer {

Plan replicated_plan(const Problem& p, const std::string& method) {
  const std::vector<int> devs = problem_devices(p);
  if (devs.size() < 2) throw Error(method + ": data parallelism needs at least 2 devices");
  Plan plan = placement_plan(p, std::vector<int>(p.graph.num_ops(), devs.front()), method);
  plan.data_parallel.replicas = static_cast<int>(devs.size());
  const int n = p.cluster.num_devices();
  bool identity = true;
  for (size_t r = 0; r < devs.size(); ++r) identity = identity && devs[r] == int(r);
  if (!identity || static_cast<int>(devs.size()) != n) {
    // Replica r runs on devs[r]; only the row of the placement device matters.
    for (int d : devs) plan.data_parallel.replica_devices.push_back(std::vector<int>(n, d));
  }
  plan.synchronization.enabled = true;
  return plan;
}

std::vector<int> ps_servers(const Cluster& c, const std::vector<int>& workers) {
  std::vector<int> out, hosts;
  for (int w : workers) {
    const int h = c.device(w).host;
    if (std::find(hosts.begin(), hosts.end(), h) != hosts.end()) continue;
    hosts.push_back(h);
    out.push_back(w);
  }
  return out;
}

VariableSync sharded_ps(const std::vector<int>& servers) {
  VariableSync s;
  s.synchronizer = Synchronizer::kParameterServer;
  s.destinations = servers;
  s.shards = static_cast<int>(servers.size());
  s.local_aggregation = true;
  return s;
}

bool sfb_pays(const Graph& g, OpId v, int replicas) {
  const Op& op = g.op(v);
  if (op.category != OpCategory::kMatMul || op.outputs.empty()) return false;
  const Tensor& out = g.tensor(op.outputs[0]);
  if (out.shape.size() < 2 || out.shape.back() <= 0) return false;
  const double eb = dtype_bytes(op.dtype);
  const double n = double(out.shape.back()), m = double(op.param_bytes) / eb / n;
  const double b = double(out.bytes) / eb / n / std::max(replicas, 1);
  return b * (m + n) * replicas < m * n;  // all-gathered factors vs the matrix
}

SynchronizationConfig horovod_sync() {
  SynchronizationConfig s;
  s.enabled = true;
  return s;  // default: ring all-reduce, no compression, synchronous
}

SynchronizationConfig ps_sync(const Graph& g, const std::vector<int>& servers) {
  SynchronizationConfig s;
  s.enabled = true;
  s.default_strategy = sharded_ps(servers);
  std::vector<OpId> vars = sync_variables(g);
  std::stable_sort(vars.begin(), vars.end(),
                   [&](OpId a, OpId b) { return g.op(a).param_bytes > g.op(b).param_bytes; });
  uint64_t total = 0;
  for (OpId v : vars) total += g.op(v).param_bytes;
  const uint64_t fair = total / servers.size();
  std::vector<uint64_t> load(servers.size(), 0);
  for (OpId v : vars) {
    const uint64_t bytes = g.op(v).param_bytes;
    if (bytes > fair || servers.size() == 1) {
      for (uint64_t& l : load) l += bytes / servers.size();
      continue;  // the default: sharded over all servers
    }
    const size_t k = size_t(std::min_element(load.begin(), load.end()) - load.begin());
    load[k] += bytes;
    SyncRule r{SyncMatch::kName, g.op(v).name, sharded_ps({servers[k]})};
    s.rules.push_back(std::move(r));
  }
  return s;
}

SynchronizationConfig parallax_sync(const Graph& g, const std::vector<int>& servers,
                                    int replicas) {
  SynchronizationConfig s = horovod_sync();
  for (OpId v : sync_variables(g)) {
    if (sparse_gradient(g, v, replicas).sparse) {
      s.rules.push_back(SyncRule{SyncMatch::kName, g.op(v).name, sharded_ps(servers)});
    }
  }
  return s;
}

SynchronizationConfig poseidon_sync(const Graph& g, const std::vector<int>& servers,
                                    int replicas) {
  SynchronizationConfig s = ps_sync(g, servers);
  std::vector<SyncRule> sfb;
  for (OpId v : sync_variables(g)) {
    if (!sfb_pays(g, v, replicas)) continue;
    VariableSync f;
    f.synchronizer = Synchronizer::kFactorBroadcast;
    sfb.push_back(SyncRule{SyncMatch::kName, g.op(v).name, f});
  }
  // SFB rules first (first match wins); drop the PS rules they shadow.
  std::vector<SyncRule> rules = sfb;
  for (const SyncRule& r : s.rules) {
    const bool shadowed = std::any_of(sfb.begin(), sfb.end(),
                                      [&](const SyncRule& x) { return x.pattern == r.pattern; });
    if (!shadowed) rules.push_back(r);
  }
  s.rules = std::move(rules);
  return s;
}

namespace {

enum class Builder { kHorovod, kPs, kParallax, kPoseidon };

class SyncBuilderPlacer : public Placer {
 public:
  SyncBuilderPlacer(std::string name, Builder b) : name_(std::move(name)), b_(b) {}
  std::string name() const override { return name_; }
  Plan search(const Problem& p, const SearchBudget&) override {
    Plan plan = replicated_plan(p, name_);
    const std::vector<int> devs = problem_devices(p);
    const std::vector<int> servers = ps_servers(p.cluster, devs);
    const int R = plan.data_parallel.replicas;
    switch (b_) {
      case Builder::kHorovod: plan.synchronization = horovod_sync(); break;
      case Builder::kPs: plan.synchronization = ps_sync(p.graph, servers); break;
      case Builder::kParallax: plan.synchronization = parallax_sync(p.graph, servers, R); break;
      case Builder::kPoseidon: plan.synchronization = poseidon_sync(p.graph, servers, R); break;
    }
    return plan;
  }

 private:
  std::string name_;
  Builder b_;
};

}  // namespace

void add_sync_builder_methods(std::vector<MethodInfo>* out) {
  const std::pair<const char*, const char*> docs[] = {
      {"horovod", "data parallel, ring all-reduce of every variable (Horovod)"},
      {"ps", "data parallel, load-balanced parameter servers, one per host"},
      {"parallax", "data parallel, PS for sparse variables, all-reduce for dense (Parallax)"},
      {"poseidon", "data parallel, sufficient-factor broadcasting for FC layers, PS else"}};
  const Builder kinds[] = {Builder::kHorovod, Builder::kPs, Builder::kParallax,
                           Builder::kPoseidon};
  for (size_t i = 0; i < 4; ++i) {
    const std::string name = docs[i].first;
    const Builder b = kinds[i];
    out->push_back({name, docs[i].second, false,
                    [name, b] { return std::make_unique<SyncBuilderPlacer>(name, b); }});
  }
}

}  // namespace placer
