#pragma once
// The tiny instance with a known optimum shared by the colocrl / hdp tests (the one of
// tests/gdp/gdp_ppo_test.cpp): two independent chains of three heavy ops on a fast and a
// slow device; the optimum (found by brute force in the tests) puts the heavy chain b on the
// fast device 0 and chain a on the slow device 1.
#include <memory>
#include <string>
#include <vector>

#include "agents/placer.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer::testing {

inline Graph two_chains() {
  TestGraph b("two_chains");
  for (const char* c : {"a", "b"}) {
    const double flops = c[0] == 'a' ? 2e10 : 3e10;
    std::vector<TensorId> in;
    for (int i = 0; i < 3; ++i) {
      const std::string name = std::string(c) + std::to_string(i);
      const TensorId out = b.tensor(name + ".out", 4096);
      b.op(name, flops, in, {out});
      in = {out};
    }
  }
  return b.build();
}

inline Cluster fast_and_slow() {
  Cluster c;
  c.name = "fast-and-slow";
  c.add_host("fast", test_spec(), 1);
  DeviceSpec slow = test_spec();
  slow.model = "slow-gpu";
  slow.peak_flops[static_cast<int>(DType::kF32)] = 0.8e12;
  c.add_host("slow", slow, 1);
  c.set_link(LinkLevel::kIntraHost, link(1e-5, 1e10));
  c.set_link(LinkLevel::kInterHost, link(1e-5, 1e10));
  return c;
}

struct ChainsInstance {
  Graph graph = two_chains();
  Cluster cluster = fast_and_slow();
  CostModel cost{cluster, default_profile()};
  Simulator sim{graph, cluster, cost};
  Problem problem() { return Problem{graph, cluster, cost, sim, {}}; }

  /// Step time of a device per op.
  double time_of(const std::vector<int>& device_of_op) {
    Plan p;
    p.placement = device_of_op;
    SimOptions o;
    o.critical_path = false;
    return sim.run(p, o).step_time;
  }
  /// Brute force over the 2^6 placements.
  double optimum() {
    double best = 1e300;
    for (int bits = 0; bits < 64; ++bits) {
      std::vector<int> d(6);
      for (int u = 0; u < 6; ++u) d[size_t(u)] = (bits >> u) & 1;
      best = std::min(best, time_of(d));
    }
    return best;
  }
};

}  // namespace placer::testing
