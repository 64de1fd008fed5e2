#pragma once
// What agents/placeto/placeto.cpp (instances, rollouts, REINFORCE, policy files, the placer) and
// agents/placeto/placeto_train.cpp (family training, checkpoints) share. LibTorch; agents/ only.
#include <chrono>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "agents/common/policy_file.h"
#include "agents/placeto/placeto.h"
#include "datasets/coarsen.h"
#include "models/placeto_net.h"
#include "simulator/cost_model.h"
#include "src/util/error.h"

namespace placer {
namespace placeto_internal {

using Clock = std::chrono::steady_clock;
using Json = policy_file::Json;
using policy_file::get_field;
constexpr int kPolicyFormat = 1;

double seconds_since(Clock::time_point t0);
std::string format_ms(double seconds);
PlacetoNetOptions net_options(const PlacetoNetConfig& c);

/// One graph ready for episodes: its coarsening, `episodes` envs stepped in lockstep, the
/// graph tensors, and the best placement simulated so far (over all its envs).
struct Instance {
  std::unique_ptr<Coarsening> coarsening;
  const Graph* env_graph = nullptr;
  std::vector<std::unique_ptr<PlacetoEnv>> envs;
  PlacetoGraphTensors tensors;
  int num_nodes = 0;
  int64_t evaluations = 0;
  std::vector<int> best;  // cluster device per group
  double best_time = std::numeric_limits<double>::infinity();
  bool best_oom = true;
  int64_t best_evaluation = 0;

  PlacetoEnv& env(size_t i = 0) { return *envs[i]; }

  /// Records the env's current state when the last call simulated it.
  void note(PlacetoEnv& e, int64_t sims_before) {
    if (e.simulations() == sims_before) return;
    ++evaluations;
    const double t = e.current_time();
    const bool oom = e.current_oom();
    if (best.empty() || (best_oom && !oom) || (best_oom == oom && t < best_time)) {
      best = e.placement();
      best_time = t;
      best_oom = oom;
      best_evaluation = evaluations;
    }
  }
};

std::unique_ptr<Instance> make_instance(const Graph& graph, const Cluster& cluster,
                                        const CostModel& cost, const std::vector<int>& devices,
                                        const PlacetoMdpConfig& mdp, int max_devices,
                                        int episodes, const PlanFrame& frame = {});

/// K episodes run in lockstep: states [T * K, N, F] (step-major), current nodes, actions,
/// rewards [T][K].
struct Rollout {
  int steps = 0, k = 0;
  torch::Tensor x;        // [T * K, N, F]
  torch::Tensor current;  // [T * K]
  torch::Tensor actions;  // [T * K] int64 (device ids)
  std::vector<std::vector<double>> rewards;  // [T][K]
  std::vector<double> final_time;            // per episode, when known (else 0)
  std::vector<bool> final_oom;
};

Rollout rollout(Instance& in, PlacetoNet& net, int k, bool greedy, std::mt19937_64& rng);

struct UpdateStats {
  double loss = 0, mean_return = 0, entropy = 0, grad_norm = 0;
};

UpdateStats reinforce(Instance& in, PlacetoNet& net, torch::optim::Adam& adam,
                      const Rollout& r, const PlacetoRlConfig& rl);

/// The network sizes as recorded in policy metas and training fingerprints.
Json net_json(const PlacetoNetConfig& n);
Json meta_json(const PlacetoPolicyMeta& m);

void save_policy(const std::string& path, PlacetoNet& net, PlacetoPolicyMeta meta);
PlacetoNet load_policy(const std::string& path, PlacetoPolicyMeta* meta_out);
void check_net_config(const PlacetoNetConfig& n, const std::string& prefix);
void check_rl_mdp(const PlacetoRlConfig& rl, const PlacetoMdpConfig& mdp, const std::string& prefix);
void check_devices(const std::vector<int>& devices, int max_devices, const std::string& prefix);

}  // namespace placeto_internal
}  // namespace placer
