#pragma once
// The tiny instance with a known optimum shared by the colocrl / hdp tests (the one of
// tests/gdp/gdp_ppo_test.cpp): two independent chains of three heavy ops on a fast and a
// slow device; the optimum (found by brute force in the tests) puts the heavy chain b on the
// fast device 0 and chain a on the slow device 1. Also the option, budget and learning
// checks both tests share.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "agents/seq2seq/colocrl.h"
#include "agents/api/placer.h"
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

/// The small networks of the colocrl / hdp tests (O = ColocrlOptions or HdpOptions): hidden
/// 32, device embedding 8, 16 samples per update, lr 0.01.
template <class O>
O tiny_seq2seq_options(O o = {}) {
  o.net.hidden = 32;
  o.net.device_embedding = 8;
  o.rl.samples = 16;
  o.rl.lr = 0.01;
  return o;
}

/// A seeded evaluation budget: `updates` updates of `samples` + the greedy placement.
inline SearchBudget updates_budget(uint64_t seed, int updates, int samples) {
  SearchBudget b;
  b.seed = seed;
  b.max_evaluations = int64_t(updates) * samples + 1;
  return b;
}

/// The checks of an online run on the two chains that should have learned the optimum
/// `best`: it found it (plan = chain a on the slow device 1, chain b on the fast device 0),
/// the mean reward of the last 5 updates beats the first 5's and at least halves the gap
/// to the optimum's reward, and the trained policy's greedy placement is the optimum.
inline void expect_learned_two_chains(const LearnedSearchResult& r, double best,
                                      const std::string& method) {
  EXPECT_EQ(r.best_time, best);
  EXPECT_FALSE(r.best_oom);
  EXPECT_EQ(r.plan.method, method);
  EXPECT_EQ(r.plan.placement, (std::vector<int>{1, 1, 1, 0, 0, 0}));
  ASSERT_GE(r.mean_reward.size(), 10u);
  double first = 0, last = 0;
  for (size_t i = 0; i < 5; ++i) {
    first += r.mean_reward[i] / 5;
    last += r.mean_reward[r.mean_reward.size() - 1 - i] / 5;
  }
  const double optimum_reward = -std::sqrt(best / r.reference_time);
  std::printf("%s two chains: mean reward %.4f -> %.4f (optimum %.4f), best found at "
              "evaluation %lld\n",
              method.c_str(), first, last, optimum_reward,
              static_cast<long long>(r.best_evaluation));
  EXPECT_GT(last, first + 0.02);
  EXPECT_LT(optimum_reward - last, 0.5 * (optimum_reward - first));
  EXPECT_EQ(r.greedy_time, best);
  EXPECT_EQ(r.greedy_placement, (std::vector<int>{1, 1, 1, 0, 0, 0}));
}

}  // namespace placer::testing
