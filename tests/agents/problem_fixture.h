#pragma once
// A placement problem for the agents' tests: graph, cluster, a uniform cost profile at
// `efficiency`, a simulator, and the Problem over every device. Also `hosts_cluster`: hosts
// of identical devices with one intra-host and one inter-host link.
#include <string>
#include <utility>

#include "agents/api/placer.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"

namespace placer {
namespace testing {

inline Cluster hosts_cluster(int hosts, int per_host, const DeviceSpec& spec, LinkSpec intra,
                             LinkSpec inter) {
  Cluster c;
  c.name = "test";
  for (int h = 0; h < hosts; ++h) c.add_host("host" + std::to_string(h), spec, per_host);
  c.set_link(LinkLevel::kIntraHost, std::move(intra));
  c.set_link(LinkLevel::kInterHost, std::move(inter));
  return c;
}

struct ProblemFixture {
  ProblemFixture(Graph graph, Cluster cl, double efficiency = 1.0)
      : g(std::move(graph)),
        c(std::move(cl)),
        cost(c, uniform_profile(efficiency)),
        sim(g, c, cost) {}
  Problem problem() { return Problem{g, c, cost, sim, {}}; }
  Graph g;
  Cluster c;
  CostModel cost;
  Simulator sim;
};

}  // namespace testing
}  // namespace placer
