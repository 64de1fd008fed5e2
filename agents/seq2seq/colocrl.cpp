// ColocRL (agents/seq2seq/colocrl.h): seq2seq over colocation groups, REINFORCE online on one graph;
// also the registration of "colocrl" and "hdp".
#include "agents/seq2seq/colocrl.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>
#include <torch/utils.h>

#include "agents/seq2seq/hdp.h"
#include "agents/common/method_options.h"
#include "agents/common/outcome.h"
#include "agents/api/methods.h"
#include "agents/seq2seq/reinforce.h"
#include "models/seq2seq.h"
#include "src/util/error.h"

namespace placer {
namespace {

void check_net(const Seq2SeqConfig& n, const std::string& method) {
  auto fail = [&](const std::string& what) { throw ValidationError(method + ": " + what); };
  if (n.hidden < 2) fail("net.hidden must be >= 2 (got " + std::to_string(n.hidden) + ")");
  if (n.bidirectional && n.hidden % 2 != 0)
    fail("net.hidden must be even with a bidirectional encoder (got " + std::to_string(n.hidden) +
         ")");
  if (n.device_embedding < 1) fail("net.device_embedding must be >= 1");
  if (n.attention != "bahdanau" && n.attention != "luong")
    fail("net.attention: unknown attention '" + n.attention + "' (known: bahdanau, luong)");
  if (!(n.tanh_constant >= 0)) fail("net.tanh_constant must be >= 0");
  if (!(n.temperature > 0)) fail("net.temperature must be > 0");
}

}  // namespace

bool seq2seq_available() { return true; }

Seq2SeqOptions seq2seq_options(const Seq2SeqConfig& n, int64_t input_dim, int64_t devices) {
  return Seq2SeqOptions(input_dim, devices)
      .hidden(n.hidden)
      .device_embedding(n.device_embedding)
      .attention(n.attention)
      .bidirectional(n.bidirectional)
      .tanh_constant(n.tanh_constant)
      .temperature(n.temperature);
}

policy_file::Json seq2seq_meta_json(const std::string& method, const Problem& problem,
                                    const Seq2SeqConfig& n, int64_t input_dim, int64_t devices,
                                    int num_units, int num_steps, const policy_file::Json& extra) {
  policy_file::Json meta = {{"method", method},
                            {"graph", problem.graph.name()},
                            {"num_units", num_units},
                            {"num_steps", num_steps},
                            {"input_dim", input_dim},
                            {"num_devices", devices},
                            {"hidden", n.hidden},
                            {"device_embedding", n.device_embedding},
                            {"attention", n.attention},
                            {"bidirectional", n.bidirectional}};
  for (auto it = extra.begin(); it != extra.end(); ++it) meta[it.key()] = it.value();
  return meta;
}

void check_seq2seq_config(const Seq2SeqConfig& n, const std::string& method) { check_net(n, method); }

SearchOutcome learned_search_outcome(LearnedSearchResult r) {
  return search_outcome_of(std::move(r.plan), r.evaluations, r.best_evaluation, r.seconds,
                           {{"updates", double(r.updates)},
                            {"reference_time", r.reference_time},
                            {"greedy_time", r.greedy_time}});
}

LearnedSearchResult colocrl_search(const Problem& problem, const ColocrlOptions& options,
                                   const SearchBudget& budget) {
  check_net(options.net, "colocrl");
  check_reinforce_config(options.rl, "colocrl");
  if (options.max_steps < 1)
    throw ValidationError("colocrl: max_steps must be >= 1 (got " +
                          std::to_string(options.max_steps) + ")");
  PlacementEnv env(problem.graph, problem.cluster, problem.cost,
                   seq2seq_env_options(problem, options.rl, options.colocate));
  const std::vector<int> devices = env.allowed_devices();
  const UnitInputs in = unit_inputs(env, options.adjacency_width);
  const int n_units = in.num_units;
  const int steps = std::min(n_units, options.max_steps);

  // Step t covers the units at topological positions [t * U / T, (t + 1) * U / T).
  std::vector<int> step_of_unit(static_cast<size_t>(n_units));
  std::vector<int> members(size_t(steps), 0);
  torch::Tensor x = torch::zeros({steps, in.dim}, torch::kFloat);
  {
    auto acc = x.accessor<float, 2>();
    for (int u = 0; u < n_units; ++u) {
      const int t = int(int64_t(in.position[size_t(u)]) * steps / n_units);
      step_of_unit[size_t(u)] = t;
      ++members[size_t(t)];
      for (int c = 0; c < in.dim; ++c) acc[t][c] += in.x[size_t(u) * size_t(in.dim) + size_t(c)];
    }
    for (int t = 0; t < steps; ++t)
      for (int c = 0; c < in.dim; ++c) acc[t][c] /= float(std::max(1, members[size_t(t)]));
  }
  x = x.unsqueeze(0);

  torch::manual_seed(budget.seed);
  Seq2SeqPlacer net(seq2seq_options(options.net, in.dim, int64_t(devices.size())));
  const policy_file::Json meta = seq2seq_meta_json("colocrl", problem, options.net, in.dim,
                                                   int64_t(devices.size()), n_units, steps);
  if (!options.policy.empty()) load_learned_policy(options.policy, *net, meta);

  auto per_unit = [&](const torch::Tensor& actions, int64_t row) {
    const torch::Tensor a = actions[row].contiguous();
    const int64_t* p = a.data_ptr<int64_t>();
    std::vector<int> d(static_cast<size_t>(n_units));
    for (int u = 0; u < n_units; ++u) d[size_t(u)] = int(p[step_of_unit[size_t(u)]]);
    return d;
  };
  ReinforceSearchSpec spec = reinforce_spec("colocrl", options, devices, net->parameters());
  spec.sample = [&](int k, std::mt19937_64& rng, double noise) {
    // One encoding of the (sample-independent) group sequence, k decodes as one batch,
    // without autograd; then the log-probabilities in one teacher-forced pass with grad.
    torch::Tensor actions;
    {
      torch::NoGradGuard no_grad;
      actions = net->forward(x, DecodeMode::kSample, &rng, {}, false, k, noise).actions;
    }
    const Seq2SeqOutput o = net->forward(x, DecodeMode::kForced, nullptr, actions, false, k);
    PolicySamples s;
    for (int i = 0; i < k; ++i) s.device_index_per_unit.push_back(per_unit(actions, i));
    s.log_prob = o.log_prob;
    s.entropy = o.entropy;
    return s;
  };
  spec.greedy = [&] {
    Seq2SeqOutput o = net->forward(x, DecodeMode::kGreedy, nullptr);
    return per_unit(o.actions, 0);
  };
  return run_reinforce_search(problem, env, spec, budget, n_units, steps, options.save_policy,
                              *net, meta);
}

std::unique_ptr<Placer> make_colocrl_placer(ColocrlOptions options) {
  return std::make_unique<OnlineSeq2SeqPlacer<ColocrlOptions, colocrl_search>>(
      "colocrl", std::move(options));
}

namespace {

/// The registration of a seq2seq method (not fast) whose placer is make(options), its
/// options read through `table` from their defaults.
template <class O>
MethodInfo seq2seq_method(const char* name, const char* description,
                          const OptionTable<O>& table, std::unique_ptr<Placer> (*make)(O)) {
  const O defaults;
  return with_options(MethodInfo{name, description, false, [make] { return make(O{}); }}, table,
                      defaults, [make](const O& o) { return make(o); });
}

}  // namespace

void add_seq2seq_methods(std::vector<MethodInfo>* out) {
  out->push_back(seq2seq_method(
      "colocrl",
      "ColocRL (Mirhoseini et al. 2017): attentional seq2seq LSTM over colocation groups, "
      "trained online with REINFORCE against the simulator (1000 placements by default)",
      colocrl_option_table(), make_colocrl_placer));
  out->push_back(seq2seq_method(
      "hdp",
      "hierarchical placer (Mirhoseini et al. 2018): feed-forward grouper + seq2seq placer, "
      "trained jointly online with REINFORCE (1000 placements by default)",
      hdp_option_table(), make_hdp_placer));
}

}  // namespace placer
