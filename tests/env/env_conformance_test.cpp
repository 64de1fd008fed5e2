// The RL-environment conformance suite (tests/env/rl_env_conformance.h) on the four envs of
// env/: GDP's one-shot placement, Placeto, Auto-MAP's pipeline cuts and operator
// partitioning. SyncEnv's instance is in tests/agents/sync_env_conformance_test.cpp.
#include <map>

#include "env/opp_env.h"
#include "env/pipeline_env.h"
#include "env/placement_env.h"
#include "env/placeto_env.h"
#include "tests/env/rl_env_conformance.h"

namespace placer::conformance {
namespace {

/// GDP's one-shot placement: one step places every colocation unit.
struct PlacementMaker {
  static constexpr const char* kName = "placement";
  PlacementEnv env;
  explicit PlacementMaker(const Case& c) : env(c.graph, c.cluster, c.cost, options(c)) {}
  static PlacementEnvOptions options(const Case& c) {
    PlacementEnvOptions o;
    o.max_devices = c.cluster.num_devices();
    return o;
  }
  size_t observation_size() const {
    return size_t(env.observation().num_nodes) * size_t(env.observation().dim);
  }
};

/// Placeto: one group (forward op with its gradient and update ops) per step.
struct PlacetoMaker {
  static constexpr const char* kName = "placeto";
  PlacetoEnv env;
  explicit PlacetoMaker(const Case& c)
      : env(c.graph, c.cluster, c.cost, groups(c.graph), options(c)) {}
  static PlacetoEnvOptions options(const Case& c) {
    PlacetoEnvOptions o;
    o.max_devices = c.cluster.num_devices();
    return o;
  }
  /// Dense group ids: an op's forward op (itself when it has none).
  static std::vector<int> groups(const Graph& g) {
    std::map<OpId, int> id;
    std::vector<int> out(g.num_ops());
    for (OpId i = 0; i < g.num_ops(); ++i) {
      const OpId root = g.op(i).forward_op == kNoOp ? i : g.op(i).forward_op;
      out[i] = id.emplace(root, int(id.size())).first->second;
    }
    return out;
  }
  size_t observation_size() const { return size_t(env.num_nodes()) * env.feature_dim(); }
};

/// Auto-MAP pipeline cuts: one cut per step, S - 1 steps.
struct PipelineMaker {
  static constexpr const char* kName = "pipeline";
  PipelineEnv env;
  explicit PipelineMaker(const Case& c) : env(c.graph, c.cluster, c.cost, options()) {}
  static PipelineEnvOptions options() {
    PipelineEnvOptions o;
    o.stages = 2;
    o.micro_batches = 2;
    return o;
  }
  size_t observation_size() const { return size_t(env.num_pivots()) * env.features_per_pivot(); }
};

/// Auto-MAP operator partitioning: partition or replicate one variable dim per step.
struct OppMaker {
  static constexpr const char* kName = "opp";
  OppEnv env;
  explicit OppMaker(const Case& c) : env(c.graph, c.cluster, c.cost) {}
  size_t observation_size() const { return size_t(env.state_dim()); }
};

using EnvMakers = ::testing::Types<PlacementMaker, PlacetoMaker, PipelineMaker, OppMaker>;
INSTANTIATE_TYPED_TEST_SUITE_P(Env, RlEnvConformance, EnvMakers, MakerNames);

}  // namespace
}  // namespace placer::conformance
