// The Scotch static mapping behind the `scotch` placer (agents/classical/partitioners.h).
#include <cstdint>
#include <cstdio>
// scotch.h needs FILE and the fixed-width integer types declared first.
#include <scotch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "agents/classical/partitioners.h"
#include "src/util/error.h"

namespace placer {
namespace {

static_assert(sizeof(SCOTCH_Num) == sizeof(int32_t), "Scotch must use 32-bit SCOTCH_Num");

// RAII holder so that every path (errors included) frees a Scotch structure `v`: Init on
// construction, Exit on destruction.
template <class T, int (*Init)(T*), void (*Exit)(T*)>
struct ScotchHolder {
  T v;
  ScotchHolder() { Init(&v); }
  ~ScotchHolder() { Exit(&v); }
};
using ScotchGraph = ScotchHolder<SCOTCH_Graph, SCOTCH_graphInit, SCOTCH_graphExit>;
using ScotchArch = ScotchHolder<SCOTCH_Arch, SCOTCH_archInit, SCOTCH_archExit>;
using ScotchStrat = ScotchHolder<SCOTCH_Strat, SCOTCH_stratInit, SCOTCH_stratExit>;
using ScotchContext = ScotchHolder<SCOTCH_Context, SCOTCH_contextInit, SCOTCH_contextExit>;

void check(int rc, const char* what) {
  if (rc != 0) throw Error(std::string("scotch: ") + what + " failed");
}

}  // namespace

std::vector<int> scotch_map(const PartitionGraph& pg, const Cluster& cluster,
                            const std::vector<int>& devices, const ScotchOptions& options,
                            uint64_t seed, ScotchArchKind* arch_used) {
  const int k = static_cast<int>(devices.size());
  PLACER_CHECK(k >= 1, "scotch: no devices to map onto");
  const int n = pg.num_vertices;
  if (arch_used) *arch_used = ScotchArchKind::kComplete;
  if (k == 1 || n == 0) return std::vector<int>(n, 0);

  // Terminal t of the architecture is device order[t] (host-major, as tree leaves are).
  std::vector<int> order(k);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const Device& da = cluster.device(devices[a]);
    const Device& db = cluster.device(devices[b]);
    if (da.host != db.host) return da.host < db.host;
    return da.local_index < db.local_index;
  });
  std::map<int, int> per_host;
  for (int i : order) ++per_host[cluster.device(devices[i]).host];
  const int hosts = static_cast<int>(per_host.size());
  const int per = per_host.begin()->second;
  bool uniform_hosts = true;
  for (const auto& h : per_host) uniform_hosts = uniform_hosts && h.second == per;
  std::vector<double> speed(k);
  bool equal_speed = true;
  for (int t = 0; t < k; ++t) {
    speed[t] = device_speed(cluster, devices[order[t]]);
    equal_speed = equal_speed && speed[t] == speed[0];
  }

  ScotchArch arch;
  if (hosts > 1 && uniform_hosts && per > 1) {
    // Two levels: crossing hosts costs bw_intra / bw_inter times a hop inside a host.
    const int a = devices[order[0]], b = devices[order[1]], c = devices[order[per]];
    const double intra = cluster.bandwidth(a, b), inter = cluster.bandwidth(a, c);
    const double ratio = inter > 0 ? intra / inter : 1.0;
    SCOTCH_Num sizes[2] = {hosts, per};
    SCOTCH_Num links[2] = {
        static_cast<SCOTCH_Num>(std::clamp(std::lround(ratio * 10), 10L, 100000L)), 10};
    check(SCOTCH_archTleaf(&arch.v, 2, sizes, links), "SCOTCH_archTleaf");
    if (arch_used) *arch_used = ScotchArchKind::kTreeLeaf;
  } else if (equal_speed) {
    check(SCOTCH_archCmplt(&arch.v, k), "SCOTCH_archCmplt");
  } else {
    // Terminal weights proportional to speed (the slowest device weighs 16).
    const double slowest = *std::min_element(speed.begin(), speed.end());
    std::vector<SCOTCH_Num> w(k);
    for (int t = 0; t < k; ++t)
      w[t] = static_cast<SCOTCH_Num>(std::max(1L, std::lround(16 * speed[t] / slowest)));
    check(SCOTCH_archCmpltw(&arch.v, k, w.data()), "SCOTCH_archCmpltw");
    if (arch_used) *arch_used = ScotchArchKind::kWeightedComplete;
  }

  ScotchGraph graph;
  check(SCOTCH_graphBuild(&graph.v, 0, n, pg.xadj.data(), nullptr, pg.compute_weight.data(),
                          nullptr, static_cast<SCOTCH_Num>(pg.adjncy.size()), pg.adjncy.data(),
                          pg.adjwgt.data()),
        "SCOTCH_graphBuild");
  // A private, single-threaded, fixed-seed context: the same seed gives the same mapping,
  // and concurrent calls do not share Scotch's global random state.
  ScotchContext ctx;
  check(SCOTCH_contextOptionSetNum(&ctx.v, SCOTCH_OPTIONNUMDETERMINISTIC, 1),
        "SCOTCH_contextOptionSetNum(deterministic)");
  check(SCOTCH_contextOptionSetNum(&ctx.v, SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1),
        "SCOTCH_contextOptionSetNum(fixed seed)");
  check(SCOTCH_contextRandomClone(&ctx.v), "SCOTCH_contextRandomClone");
  SCOTCH_contextRandomSeed(&ctx.v, static_cast<SCOTCH_Num>(seed & 0x7fffffff));
  SCOTCH_contextRandomReset(&ctx.v);
  ScotchGraph bound;
  check(SCOTCH_contextBindGraph(&ctx.v, &graph.v, &bound.v), "SCOTCH_contextBindGraph");

  ScotchStrat strat;
  const SCOTCH_Num flags = options.quality ? SCOTCH_STRATQUALITY : SCOTCH_STRATDEFAULT;
  check(SCOTCH_stratGraphMapBuild(&strat.v, flags, k, options.imbalance),
        "SCOTCH_stratGraphMapBuild");
  std::vector<SCOTCH_Num> term(n, 0);
  check(SCOTCH_graphMap(&bound.v, &arch.v, &strat.v, term.data()), "SCOTCH_graphMap");

  std::vector<int> part(n);
  for (int v = 0; v < n; ++v) {
    PLACER_CHECK(term[v] >= 0 && term[v] < k, "scotch: terminal out of range");
    part[v] = order[term[v]];
  }
  return part;
}

}  // namespace placer
