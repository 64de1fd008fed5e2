// The hierarchical placer (agents/seq2seq/hdp.h): grouper + seq2seq placer, trained jointly online
// with REINFORCE.
#include "agents/seq2seq/hdp.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>
#include <torch/utils.h>

#include "agents/common/outcome.h"
#include "agents/seq2seq/reinforce.h"
#include "models/grouper.h"
#include "models/seq2seq.h"
#include "src/util/error.h"

namespace placer {
namespace {

/// Group embeddings [K, G, dim + 2G + 1] of K groupings [K, U]: the mean of the members'
/// unit features, the group's out- and in-edge counts to every group (row / max + 1 as TF's
/// group_embedding normaliser), log1p(members) / log1p(U).
torch::Tensor group_inputs(const UnitInputs& in, const torch::Tensor& groups, int g) {
  const torch::Tensor gr = groups.to(torch::kLong).contiguous();
  const int64_t k = gr.size(0);
  const int u_n = in.num_units, dim = in.dim;
  const int width = dim + 2 * g + 1;
  torch::Tensor out = torch::zeros({k, g, width}, torch::kFloat);
  float* o = out.data_ptr<float>();
  const int64_t* ga = gr.data_ptr<int64_t>();
  std::vector<int> count(static_cast<size_t>(g));
  for (int64_t s = 0; s < k; ++s) {
    float* base = o + size_t(s) * size_t(g) * size_t(width);
    const int64_t* gs = ga + size_t(s) * size_t(u_n);
    std::fill(count.begin(), count.end(), 0);
    for (int u = 0; u < u_n; ++u) {
      const int grp = int(gs[u]);
      ++count[size_t(grp)];
      float* r = base + size_t(grp) * size_t(width);
      const float* x = in.x.data() + size_t(u) * size_t(dim);
      for (int c = 0; c < dim; ++c) r[c] += x[c];
    }
    for (const auto& [a, b] : in.edges) {
      const int ga_ = int(gs[a]), gb = int(gs[b]);
      base[size_t(ga_) * size_t(width) + size_t(dim + gb)] += 1.f;      // out-edge a -> b
      base[size_t(gb) * size_t(width) + size_t(dim + g + ga_)] += 1.f;  // in-edge
    }
    for (int grp = 0; grp < g; ++grp) {
      float* r = base + size_t(grp) * size_t(width);
      const int c = count[size_t(grp)];
      if (c > 0)
        for (int i = 0; i < dim; ++i) r[i] /= float(c);
      float amax = 0;
      for (int i = dim; i < dim + 2 * g; ++i) amax = std::max(amax, r[i]);
      for (int i = dim; i < dim + 2 * g; ++i) r[i] /= amax + 1.f;
      r[width - 1] = float(std::log1p(double(c)) / std::log1p(double(u_n)));
    }
  }
  return out;
}

}  // namespace

int hdp_num_groups(const HdpOptions& options, int num_devices) {
  if (options.groups > 0) return options.groups;
  return std::min(256, 20 * std::max(1, num_devices));
}

LearnedSearchResult hdp_search(const Problem& problem, const HdpOptions& options,
                               const SearchBudget& budget) {
  check_seq2seq_config(options.net, "hdp");
  check_reinforce_config(options.rl, "hdp");
  if (options.groups < 0)
    throw ValidationError("hdp: groups must be >= 0 (0 = min(256, 20 x devices)), got " +
                          std::to_string(options.groups));
  if (options.grouper_hidden < 1)
    throw ValidationError("hdp: grouper_hidden must be >= 1");
  PlacementEnv env(problem.graph, problem.cluster, problem.cost,
                   seq2seq_env_options(problem, options.rl, options.colocate));
  const std::vector<int> devices = env.allowed_devices();
  const int n_dev = int(devices.size());
  const int g = hdp_num_groups(options, n_dev);
  const UnitInputs in = unit_inputs(env, options.adjacency_width);
  const int n_units = in.num_units;
  std::vector<int> all(static_cast<size_t>(n_units));
  for (int u = 0; u < n_units; ++u) all[size_t(u)] = u;
  const torch::Tensor x = rows_tensor(in, all);  // [U, dim]

  torch::manual_seed(budget.seed);
  Grouper grouper(GrouperOptions(in.dim, g)
                      .hidden(options.grouper_hidden)
                      .activation(options.grouper_activation));
  Seq2SeqPlacer placer(seq2seq_options(options.net, in.dim + 2 * g + 1, n_dev));
  torch::nn::Module root;  // both networks, for checkpoints
  root.register_module("grouper", grouper.ptr());
  root.register_module("placer", placer.ptr());
  const policy_file::Json meta =
      seq2seq_meta_json("hdp", problem, options.net, in.dim + 2 * g + 1, n_dev, n_units, g,
                        {{"groups", g},
                         {"grouper_hidden", options.grouper_hidden},
                         {"grouper_activation", options.grouper_activation}});
  if (!options.policy.empty()) load_learned_policy(options.policy, root, meta);

  auto per_unit = [&](const torch::Tensor& groups, const torch::Tensor& actions, int64_t row) {
    const torch::Tensor gr = groups[row].to(torch::kLong).contiguous();
    const torch::Tensor a = actions[row].contiguous();
    const int64_t* gp = gr.data_ptr<int64_t>();
    const int64_t* ap = a.data_ptr<int64_t>();
    std::vector<int> d(static_cast<size_t>(n_units));
    for (int u = 0; u < n_units; ++u) d[size_t(u)] = int(ap[gp[u]]);
    return d;
  };
  std::vector<torch::Tensor> parameters = grouper->parameters();
  for (const auto& p : placer->parameters()) parameters.push_back(p);
  ReinforceSearchSpec spec = reinforce_spec("hdp", options, devices, std::move(parameters));
  spec.sample = [&](int k, std::mt19937_64& rng, double noise) {
    GrouperOutput go = grouper->sample(x, k, &rng);
    // The K group sequences decoded as one batch without autograd, then their
    // log-probabilities in one teacher-forced pass with grad.
    const torch::Tensor gin = group_inputs(in, go.groups, g);
    torch::Tensor actions;
    {
      torch::NoGradGuard no_grad;
      actions = placer->forward(gin, DecodeMode::kSample, &rng, {}, false, 0, noise).actions;
    }
    Seq2SeqOutput po = placer->forward(gin, DecodeMode::kForced, nullptr, actions);
    PolicySamples s;
    for (int i = 0; i < k; ++i) s.device_index_per_unit.push_back(per_unit(go.groups, po.actions, i));
    // The gradients of the paper: grad log p(g) + grad log p(d | g), one advantage.
    s.log_prob = go.log_prob + po.log_prob;
    s.entropy = po.entropy.mean() + go.entropy;
    return s;
  };
  spec.greedy = [&] {
    GrouperOutput go = grouper->sample(x, 1, nullptr);
    Seq2SeqOutput po = placer->forward(group_inputs(in, go.groups, g), DecodeMode::kGreedy, nullptr);
    return per_unit(go.groups, po.actions, 0);
  };
  return run_reinforce_search(problem, env, spec, budget, n_units, g, options.save_policy, root,
                              meta);
}

std::unique_ptr<Placer> make_hdp_placer(HdpOptions options) {
  return std::make_unique<OnlineSeq2SeqPlacer<HdpOptions, hdp_search>>("hdp", std::move(options));
}

}  // namespace placer
