#pragma once
// Placeto's policy network (Addanki et al. 2019): a graph embedding of the MDP state
// (env/placeto_env.h) followed by a three-layer policy network over the devices.
//
//   x [B, N, F] per-node attributes --Linear+ReLU--> e [B, N, H]
//   message passing towards the children (from the parents), `rounds` times:
//     d <- ReLU(S_d e + M_d mean_{u in parents(v)} ReLU(F_d d_u))          (d_0 = e)
//   and towards the parents (from the children), with its own weights:
//     a <- ReLU(S_a e + M_a mean_{w in children(v)} ReLU(F_a a_w))         (a_0 = e)
//   h = [d, a]  [B, N, 2H]
//   pooling relative to the current node v: its ancestors ("parent" side), its descendants
//   ("child" side) and the parallel nodes (neither) are pooled separately, each with its
//   own layer: pool_S = mean_{u in S} ReLU(P_S h_u)   [B, pool]   (0 when S is empty)
//   z = [h_v, pool_anc, pool_desc, pool_par] --Linear+ReLU--Linear+ReLU--Linear--> logits
//   [B, max_devices], squashed to logit_clip * tanh(logits / logit_clip) when logit_clip > 0
//   (Bello et al. 2017's logit clipping); devices outside the mask get -1e9.
//
// Why the clipping: REINFORCE with Adam and normalised advantages drives the logits apart
// within a few updates when one device is consistently best on average (on enas_cnn, "keep
// every group on the first device", since random moves add transfers); a saturated policy
// samples the same placement every episode, every advantage is 0, the gradient vanishes
// (the entropy bonus's too) and it never recovers. Clipped logits keep every allowed
// device at probability >= 1 / (1 + (D - 1) e^(2 logit_clip)) (D allowed devices); a policy
// saturated on one device gives each other device e^(-2c) / (1 + (D - 1) e^(-2c)): with
// the default c = 2.5 and 4 devices 0.66% each, so it still moves about one group in 50
// per episode (a local search around its mode). Greedy episodes are unchanged (argmax).
//
// The paper's sweep in topological order reaches every ancestor; `rounds` synchronous
// rounds reach those within `rounds` hops (the sweep when rounds >= the DAG's depth). Means
// rather than sums keep the scale independent of the fan-in, which matters when one policy
// serves graphs of different shapes.
#include <cstdint>
#include <random>
#include <vector>

#include <torch/arg.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace placer {

struct PlacetoNetOptions {
  PlacetoNetOptions(int64_t input_dim, int64_t max_devices)
      : input_dim_(input_dim), max_devices_(max_devices) {}
  TORCH_ARG(int64_t, input_dim);
  TORCH_ARG(int64_t, max_devices);
  TORCH_ARG(int64_t, hidden) = 32;         ///< H: node embedding width (per direction)
  TORCH_ARG(int64_t, rounds) = 4;          ///< message-passing rounds per direction
  TORCH_ARG(int64_t, pool) = 32;           ///< width of each pooled summary
  TORCH_ARG(int64_t, policy_hidden) = 64;  ///< width of the policy MLP's two hidden layers
  /// Logits squashed to logit_clip * tanh(logits / logit_clip); 0 = unclipped.
  TORCH_ARG(double, logit_clip) = 2.5;
};

/// The static structure of one graph as tensors (built once per graph).
struct PlacetoGraphTensors {
  int64_t num_nodes = 0;
  torch::Tensor parent_mean;  ///< [N, N]: row v = 1/|parents(v)| at v's parents
  torch::Tensor child_mean;   ///< [N, N]: row v = 1/|children(v)| at v's children
  torch::Tensor relation;     ///< [N, N] int64: 0 self, 1 ancestor, 2 descendant, 3 parallel
  torch::Tensor mask;         ///< [max_devices] bool: allowed devices
};

/// From the CSR lists and relation matrix of PlacetoEnv (plain arrays; models/ does not see
/// env/). ValidationError on inconsistent sizes.
PlacetoGraphTensors placeto_graph_tensors(int num_nodes, const std::vector<int>& parent_off,
                                          const std::vector<int>& parents,
                                          const std::vector<int>& child_off,
                                          const std::vector<int>& children,
                                          const std::vector<uint8_t>& relation,
                                          const std::vector<uint8_t>& device_mask);

struct PlacetoEmbedding {
  torch::Tensor nodes;     ///< [B, N, 2H]
  torch::Tensor current;   ///< [B, 2H]
  torch::Tensor ancestors, descendants, parallel;  ///< [B, pool] each
};

class PlacetoNetImpl : public torch::nn::Module {
 public:
  /// ValidationError on non-positive sizes (rounds may be 0). Parameters from the torch RNG.
  explicit PlacetoNetImpl(const PlacetoNetOptions& options);
  /// x [B, N, input_dim] float, current [B] int64 node ids.
  PlacetoEmbedding embed(const torch::Tensor& x, const torch::Tensor& current,
                         const PlacetoGraphTensors& g);
  /// Masked logits [B, max_devices].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& current,
                        const PlacetoGraphTensors& g);

  PlacetoNetOptions options;
  torch::nn::Linear node_in{nullptr};
  torch::nn::Linear down_self{nullptr}, down_msg{nullptr}, down_f{nullptr};
  torch::nn::Linear up_self{nullptr}, up_msg{nullptr}, up_f{nullptr};
  torch::nn::Linear pool_anc{nullptr}, pool_desc{nullptr}, pool_par{nullptr};
  torch::nn::Linear p1{nullptr}, p2{nullptr}, p3{nullptr};
};
TORCH_MODULE(PlacetoNet);

/// One index per row of probs [B, D] drawn with `rng` (the first index whose cumulative
/// probability exceeds a uniform draw; the last nonzero one on rounding).
std::vector<int64_t> placeto_sample_rows(const torch::Tensor& probs, std::mt19937_64& rng);

}  // namespace placer
