// The RL-environment conformance suite (tests/env/rl_env_conformance.h) on SyncEnv, the
// per-variable synchronisation MDP of agents/sync (here, as it needs the sync builders of
// placer::agents); the envs of env/ run it in tests/env/env_conformance_test.cpp.
#include "agents/sync/sync_env.h"
#include "tests/env/rl_env_conformance.h"

namespace placer::conformance {
namespace {

/// One strategy per variable (the 31 largest one by one, the rest together), one per step.
struct SyncMaker {
  static constexpr const char* kName = "sync";
  Problem problem;  // SyncEnv keeps a reference to it
  SyncEnv env;
  explicit SyncMaker(Case& c)
      : problem{c.graph, c.cluster, c.cost, c.sim, {}}, env(problem, SyncEnvOptions{}) {}
  size_t observation_size() const { return size_t(SyncEnv::kStateDim); }
};

using SyncMakers = ::testing::Types<SyncMaker>;
INSTANTIATE_TYPED_TEST_SUITE_P(Agents, RlEnvConformance, SyncMakers, MakerNames);

}  // namespace
}  // namespace placer::conformance
