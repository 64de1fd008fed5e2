#pragma once
// The sync test graph (tests/plan/sync_test_graph.h: a sparse 1000 x 64 embedding table
// and a 64 x 32 FC layer) on two hosts of two devices (PS servers: devices 0 and 2), slow
// 1e8 B/s between hosts, with its cost model and simulator: the problem of the sync
// builder, SyncEnv and autosync tests.

#include "agents/api/placer.h"
#include "simulator/cost_model.h"
#include "tests/plan/sync_test_graph.h"
#include "tests/simulator/sim_fixtures.h"

namespace placer::sync_testing {

struct SyncToy {
  Graph g = make_sync_graph();
  Cluster c = testing::make_cluster(2, 2, testing::link(1e-6, 1e11), testing::link(2e-5, 1e8));
  CostModel cost{c, uniform_profile(1.0)};
  Simulator sim{g, c, cost};
  Problem problem() { return Problem{g, c, cost, sim, {}}; }
};

}  // namespace placer::sync_testing
