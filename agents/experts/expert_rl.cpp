// The learned expert placer's policy (agents/experts/expert_rl.h): a set encoder over the
// layer's experts (an MLP per expert, mean- and max-pooled into the layer's context) and a
// scorer of every rank for the copy at hand (an MLP over the rank's features and the
// context), a masked softmax over the ranks. Layers are placed in one batch, a step at a time.
#include "agents/experts/expert_rl.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "agents/common/policy_file.h"
#include "agents/experts/expert_episode.h"
#include "src/util/error.h"

namespace placer {

namespace {

constexpr int kPolicyFormat = 1;

struct ExpertNetImpl : torch::nn::Module {
  explicit ExpertNetImpl(int64_t hidden) {
    experts = register_module(
        "experts", torch::nn::Sequential(torch::nn::Linear(kExpertFeatures, hidden),
                                         torch::nn::ReLU(), torch::nn::Linear(hidden, hidden)));
    ranks = register_module(
        "ranks", torch::nn::Sequential(torch::nn::Linear(kRankFeatures + 2 * hidden, hidden),
                                       torch::nn::ReLU(), torch::nn::Linear(hidden, hidden),
                                       torch::nn::ReLU(), torch::nn::Linear(hidden, 1)));
  }
  /// [B, E, kExpertFeatures] -> [B, 2 hidden]: mean and max over the experts.
  torch::Tensor context(const torch::Tensor& ex) {
    const torch::Tensor h = experts->forward(ex);
    return torch::cat({h.mean(1), std::get<0>(h.max(1))}, 1);
  }
  /// [B, R, kRankFeatures] and [B, 2 hidden] -> [B, R] logits.
  torch::Tensor logits(const torch::Tensor& rk, const torch::Tensor& ctx) {
    const torch::Tensor c = ctx.unsqueeze(1).expand({rk.size(0), rk.size(1), ctx.size(1)});
    return ranks->forward(torch::cat({rk, c}, 2)).squeeze(2);
  }
  torch::nn::Sequential experts{nullptr}, ranks{nullptr};
};
TORCH_MODULE(ExpertNet);

struct Rollout {
  std::vector<ExpertLayerMap> maps;
  torch::Tensor log_prob;  ///< [B] (with grad when asked)
  torch::Tensor entropy;   ///< [B]
};

torch::Tensor expert_rows(const std::vector<ExpertEpisode>& eps) {
  std::vector<float> x;
  for (const ExpertEpisode& e : eps) e.describe_experts(&x);
  const int64_t b = int64_t(eps.size());
  return torch::from_blob(x.data(), {b, int64_t(x.size()) / b / kExpertFeatures, kExpertFeatures},
                          torch::kFloat32)
      .clone();
}

using Row = torch::TensorAccessor<float, 1>;

int64_t argmax_allowed(const Row& p, const std::vector<uint8_t>& mask, int64_t first, int64_t n) {
  int64_t best = -1;
  for (int64_t k = 0; k < n; ++k) {
    if (mask[size_t(first + k)] && (best < 0 || p[k] > p[best])) best = k;
  }
  return best;
}

int64_t sample_allowed(const Row& p, const std::vector<uint8_t>& mask, int64_t first, int64_t n,
                       std::mt19937_64* rng) {
  double u = std::uniform_real_distribution<double>(0, 1)(*rng);
  int64_t pick = -1;
  for (int64_t k = 0; k < n; ++k) {
    if (!mask[size_t(first + k)]) continue;
    pick = k;
    u -= p[k];
    if (u <= 0) break;
  }
  return pick;
}

/// Runs the episodes to the end in one batch: greedy (argmax) or sampled from `rng`.
Rollout rollout(ExpertNet& net, std::vector<ExpertEpisode>& eps, bool greedy,
                std::mt19937_64* rng) {
  const int64_t b = int64_t(eps.size());
  const torch::Tensor ctx = net->context(expert_rows(eps));
  std::vector<torch::Tensor> lp, ent;
  std::vector<float> x;
  std::vector<uint8_t> mask;
  while (!eps.front().done()) {
    x.clear();
    mask.clear();
    for (const ExpertEpisode& e : eps) e.observe(&x, &mask);
    const int64_t r = int64_t(mask.size()) / b;
    const torch::Tensor rows =
        torch::from_blob(x.data(), {b, r, kRankFeatures}, torch::kFloat32).clone();
    const torch::Tensor allowed =
        torch::from_blob(mask.data(), {b, r}, torch::kUInt8).clone().to(torch::kBool);
    const torch::Tensor logp =
        torch::log_softmax(net->logits(rows, ctx).masked_fill(~allowed, -1e9), 1);
    const torch::Tensor p = logp.exp().detach();
    std::vector<int64_t> pick(size_t(b), 0);
    const auto acc = p.accessor<float, 2>();
    for (int64_t i = 0; i < b; ++i) {
      pick[size_t(i)] = greedy ? argmax_allowed(acc[i], mask, i * r, r)
                               : sample_allowed(acc[i], mask, i * r, r, rng);
      eps[size_t(i)].place(int(pick[size_t(i)]));
    }
    if (torch::GradMode::is_enabled()) {
      const torch::Tensor idx = torch::tensor(pick, torch::kInt64).unsqueeze(1);
      lp.push_back(logp.gather(1, idx).squeeze(1));
      ent.push_back(-(p * logp).sum(1));
    }
  }
  Rollout out;
  for (const ExpertEpisode& e : eps) out.maps.push_back(e.map());
  if (!lp.empty()) {
    out.log_prob = torch::stack(lp, 1).sum(1);
    out.entropy = torch::stack(ent, 1).mean(1);
  }
  return out;
}

std::vector<ExpertEpisode> episodes(const std::vector<std::vector<double>>& shares,
                                    const std::vector<std::vector<int>>& copies,
                                    const ExpertTopology& topo, int slots_per_rank) {
  std::vector<ExpertEpisode> eps;
  const size_t n = shares.size();
  for (size_t l = 0; l < n; ++l) {
    eps.emplace_back(shares[l], copies[l], topo, slots_per_rank,
                     n > 1 ? double(l) / double(n - 1) : 0.0);
  }
  return eps;
}

void reinforce_step(torch::optim::Adam& opt, const Rollout& r, const std::vector<double>& adv,
                    double entropy) {
  const torch::Tensor a = torch::tensor(adv, torch::kFloat32);
  const torch::Tensor loss = -(a * r.log_prob).mean() - entropy * r.entropy.mean();
  opt.zero_grad();
  loss.backward();
  opt.step();
}

}  // namespace

struct ExpertPolicy::Impl {
  explicit Impl(int h) : hidden(h), net(h) {}
  int hidden;
  ExpertNet net;
};

ExpertPolicy::ExpertPolicy(int hidden) : impl_(std::make_unique<Impl>(hidden)) {
  torch::NoGradGuard guard;
  // Seeded initialisation: the same policy from the same call, whatever ran before.
  std::mt19937_64 rng(12345);
  std::normal_distribution<float> n(0, 1);
  for (torch::Tensor& p : impl_->net->parameters()) {
    std::vector<float> v(size_t(p.numel()));
    const double scale = p.dim() > 1 ? 1.0 / std::sqrt(double(p.size(1))) : 0.0;
    for (float& x : v) x = float(n(rng) * scale);
    p.copy_(torch::from_blob(v.data(), p.sizes(), torch::kFloat32));
  }
}

ExpertPolicy::~ExpertPolicy() = default;

std::unique_ptr<ExpertPolicy> ExpertPolicy::load(const std::string& path) {
  const policy_file::Json meta = policy_file::read_policy_meta(path);
  const std::string method =
      policy_file::get_field<std::string>(meta, "method", path + ".meta.json");
  if (method != "expert-rl") {
    throw FormatError(path + ".meta.json: method: expected \"expert-rl\", found \"" + method +
                      "\"");
  }
  const int hidden = policy_file::get_field<int>(meta, "hidden", path + ".meta.json");
  if (hidden < 1 || hidden > 4096) {
    throw FormatError(path + ".meta.json: hidden: expected 1 .. 4096, found " +
                      std::to_string(hidden));
  }
  auto p = std::make_unique<ExpertPolicy>(hidden);
  torch::serialize::InputArchive in;
  try {
    in.load_from(path);
    p->impl_->net->load(in);
  } catch (const c10::Error& e) {
    throw FormatError(path + ": not an expert-rl policy of hidden " + std::to_string(hidden) +
                      " (" + std::string(e.what_without_backtrace()).substr(0, 200) + ")");
  }
  return p;
}

void ExpertPolicy::save(const std::string& path, const std::string& how) const {
  torch::serialize::OutputArchive out;
  impl_->net->save(out);
  policy_file::Json meta;
  meta["format_version"] = kPolicyFormat;
  meta["method"] = "expert-rl";
  meta["hidden"] = impl_->hidden;
  meta["rank_features"] = kRankFeatures;
  meta["expert_features"] = kExpertFeatures;
  meta["trained"] = how;
  policy_file::save_policy_pair(out, path, meta);
}

std::vector<ExpertLayerMap> ExpertPolicy::place(const std::vector<std::vector<double>>& shares,
                                                const std::vector<std::vector<int>>& copies,
                                                const ExpertTopology& topo,
                                                int slots_per_rank) const {
  torch::NoGradGuard guard;
  std::vector<ExpertEpisode> eps = episodes(shares, copies, topo, slots_per_rank);
  return rollout(impl_->net, eps, true, nullptr).maps;
}

void ExpertPolicy::pretrain(const std::vector<std::vector<double>>& layers,
                            const std::vector<double>& positions, const ExpertRlTrainOptions& o,
                            const std::function<void(int64_t, double)>& progress) {
  std::mt19937_64 rng(o.seed);
  torch::optim::Adam opt(impl_->net->parameters(), torch::optim::AdamOptions(o.learning_rate));
  const int slots = (int(layers.front().size()) + o.eplb.redundant) / o.topo.ranks;
  std::uniform_int_distribution<size_t> pick(0, layers.size() - 1);
  for (int64_t u = 0; u < o.updates; ++u) {
    std::vector<ExpertEpisode> eps;
    std::vector<double> eplb_step;
    for (int i = 0; i < o.layers_per_update; ++i) {
      const size_t l = pick(rng);
      const ExpertLayerMap base = eplb_layer(layers[l], o.topo, o.eplb);
      eplb_step.push_back(expert_layer_step(layers[l], base, o.topo, o.cost).total);
      const std::vector<int> copies = eplb_copies(layers[l], o.topo, o.eplb);
      for (int k = 0; k < o.samples; ++k) {
        eps.emplace_back(layers[l], copies, o.topo, slots, positions[l]);
      }
    }
    Rollout r = rollout(impl_->net, eps, false, &rng);
    std::vector<double> ratio(eps.size()), adv(eps.size());
    double mean_ratio = 0;
    for (size_t i = 0; i < eps.size(); ++i) {
      const size_t layer = i / size_t(o.samples);
      ratio[i] =
          expert_layer_step(eps[i].shares(), r.maps[i], o.topo, o.cost).total / eplb_step[layer];
      mean_ratio += ratio[i] / double(eps.size());
    }
    for (size_t i = 0; i < eps.size(); ++i) {
      const size_t first = i / size_t(o.samples) * size_t(o.samples);
      const double base = std::accumulate(ratio.begin() + long(first),
                                          ratio.begin() + long(first) + o.samples, 0.0) /
                          o.samples;
      adv[i] = base - ratio[i];  // reward = -ratio; the layer's mean is the baseline
    }
    reinforce_step(opt, r, adv, o.entropy);
    if (progress) progress(u, mean_ratio);
  }
}

std::vector<ExpertLayerMap> ExpertPolicy::finetune(
    const std::vector<std::vector<double>>& shares, const std::vector<std::vector<int>>& copies,
    const ExpertTopology& topo, int slots_per_rank,
    const std::function<double(const std::vector<ExpertLayerMap>&)>& objective, int64_t updates,
    int samples, uint64_t seed, std::vector<double>* curve) {
  std::vector<ExpertLayerMap> best = place(shares, copies, topo, slots_per_rank);
  double best_step = objective(best);
  curve->assign(1, best_step);
  std::mt19937_64 rng(seed);
  torch::optim::Adam opt(impl_->net->parameters(), torch::optim::AdamOptions(1e-3));
  const size_t layers = shares.size();
  for (int64_t u = 0; u < updates; ++u) {
    std::vector<ExpertEpisode> eps;
    for (int k = 0; k < samples; ++k) {
      for (ExpertEpisode& e : episodes(shares, copies, topo, slots_per_rank)) eps.push_back(e);
    }
    Rollout r = rollout(impl_->net, eps, false, &rng);
    std::vector<double> step(static_cast<size_t>(samples), 0.0);
    for (int k = 0; k < samples; ++k) {
      const std::vector<ExpertLayerMap> maps(r.maps.begin() + long(size_t(k) * layers),
                                             r.maps.begin() + long(size_t(k + 1) * layers));
      step[size_t(k)] = objective(maps);
      if (step[size_t(k)] < best_step) best_step = step[size_t(k)], best = maps;
      curve->push_back(best_step);
    }
    const double mean = std::accumulate(step.begin(), step.end(), 0.0) / samples;
    std::vector<double> adv(eps.size());
    for (size_t i = 0; i < eps.size(); ++i) adv[i] = (mean - step[i / layers]) / mean;
    reinforce_step(opt, r, adv, 0.0);
  }
  return best;
}

std::string default_expert_policy_path() {
  return std::string(PLACER_SOURCE_DIR) + "/models/pretrained/expert_rl.pt";
}

ExpertStepCost ExpertRlTrainOptions::deepseek_layer_cost() {
  ExpertStepCost c;
  c.seconds_per_assignment = 6.0 * 7168 * 2048 / 400e12;
  c.bytes_per_assignment = 7168 * 2;
  c.intra_bandwidth = 450e9;
  c.inter_bandwidth = 50e9;
  c.latency = 20e-6;
  c.assignments = 4096.0 * 16 * 8;
  return c;
}

}  // namespace placer
