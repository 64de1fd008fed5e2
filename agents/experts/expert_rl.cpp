// The learned expert placer's policy (agents/experts/expert_rl.h): a set encoder over the
// layer's experts (an MLP per expert, mean- and max-pooled into the layer's context), a
// scorer of every rank for the copy at hand (an MLP over the rank's features and the
// context) and, when the policy chooses the replicas, a scorer of every expert for the next
// redundant slot (an MLP over the expert's replica features and the context); masked
// softmaxes over the ranks / experts. Layers are placed in one batch, a step at a time.
#include "agents/experts/expert_rl.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "agents/common/policy_file.h"
#include "agents/experts/expert_episode.h"
#include "agents/experts/expert_finetune.h"
#include "src/util/error.h"

namespace placer {

namespace {

constexpr int kPolicyFormat = 1;
constexpr int kReplicaPolicyFormat = 2;  // with the replica head

torch::nn::Sequential scorer(int64_t in, int64_t hidden) {
  return torch::nn::Sequential(torch::nn::Linear(in, hidden), torch::nn::ReLU(),
                               torch::nn::Linear(hidden, hidden), torch::nn::ReLU(),
                               torch::nn::Linear(hidden, 1));
}

struct ExpertNetImpl : torch::nn::Module {
  ExpertNetImpl(int64_t hidden, bool choose_replicas) {
    experts = register_module(
        "experts", torch::nn::Sequential(torch::nn::Linear(kExpertFeatures, hidden),
                                         torch::nn::ReLU(), torch::nn::Linear(hidden, hidden)));
    ranks = register_module("ranks", scorer(kRankFeatures + 2 * hidden, hidden));
    if (choose_replicas) {
      replicas = register_module("replicas", scorer(kReplicaFeatures + 2 * hidden, hidden));
    }
  }
  /// [B, E, kExpertFeatures] -> [B, 2 hidden]: mean and max over the experts.
  torch::Tensor context(const torch::Tensor& ex) {
    const torch::Tensor h = experts->forward(ex);
    return torch::cat({h.mean(1), std::get<0>(h.max(1))}, 1);
  }
  /// [B, N, F] rows (ranks or experts) and [B, 2 hidden] -> [B, N] logits of `head`.
  static torch::Tensor logits(torch::nn::Sequential& head, const torch::Tensor& rows,
                              const torch::Tensor& ctx) {
    const torch::Tensor c = ctx.unsqueeze(1).expand({rows.size(0), rows.size(1), ctx.size(1)});
    return head->forward(torch::cat({rows, c}, 2)).squeeze(2);
  }
  torch::nn::Sequential experts{nullptr}, ranks{nullptr}, replicas{nullptr};
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

/// One decision of every episode of a batch: a masked softmax over `rows` ([B, N, F]) scored
/// by `head`; the picks (greedy where `greedy[i]`, else sampled), with their
/// log-probabilities and entropies appended to `lp` / `ent` when gradients are on.
std::vector<int64_t> decide(torch::nn::Sequential& head, std::vector<float>& x,
                            std::vector<uint8_t>& mask, int64_t features, const torch::Tensor& ctx,
                            const std::vector<uint8_t>& greedy, std::mt19937_64* rng,
                            std::vector<torch::Tensor>* lp, std::vector<torch::Tensor>* ent) {
  const int64_t b = ctx.size(0);
  const int64_t n = int64_t(mask.size()) / b;
  const torch::Tensor rows = torch::from_blob(x.data(), {b, n, features}, torch::kFloat32).clone();
  const torch::Tensor allowed =
      torch::from_blob(mask.data(), {b, n}, torch::kUInt8).clone().to(torch::kBool);
  const torch::Tensor logp =
      torch::log_softmax(ExpertNetImpl::logits(head, rows, ctx).masked_fill(~allowed, -1e9), 1);
  const torch::Tensor p = logp.exp().detach();
  std::vector<int64_t> pick(size_t(b), 0);
  const auto acc = p.accessor<float, 2>();
  for (int64_t i = 0; i < b; ++i) {
    pick[size_t(i)] = greedy[size_t(i)] ? argmax_allowed(acc[i], mask, i * n, n)
                                        : sample_allowed(acc[i], mask, i * n, n, rng);
  }
  if (torch::GradMode::is_enabled()) {
    const torch::Tensor idx = torch::tensor(pick, torch::kInt64).unsqueeze(1);
    lp->push_back(logp.gather(1, idx).squeeze(1));
    ent->push_back(-(p * logp).sum(1));
  }
  return pick;
}

/// Runs the episodes to the end in one batch (the replica phase first, when they have one):
/// episode i greedy (argmax) where `greedy[i]`, else sampled from `rng`.
Rollout rollout(ExpertNet& net, std::vector<ExpertEpisode>& eps, const std::vector<uint8_t>& greedy,
                std::mt19937_64* rng) {
  std::vector<torch::Tensor> lp, ent;
  std::vector<float> x;
  std::vector<uint8_t> mask;
  if (eps.front().choosing_replicas()) {
    const torch::Tensor ctx = net->context(expert_rows(eps));
    while (eps.front().choosing_replicas()) {
      x.clear();
      mask.clear();
      for (const ExpertEpisode& e : eps) e.observe_replicas(&x, &mask);
      const std::vector<int64_t> pick =
          decide(net->replicas, x, mask, kReplicaFeatures, ctx, greedy, rng, &lp, &ent);
      for (size_t i = 0; i < eps.size(); ++i) eps[i].add_replica(int(pick[i]));
    }
  }
  const torch::Tensor ctx = net->context(expert_rows(eps));
  while (!eps.front().done()) {
    x.clear();
    mask.clear();
    for (const ExpertEpisode& e : eps) e.observe(&x, &mask);
    const std::vector<int64_t> pick =
        decide(net->ranks, x, mask, kRankFeatures, ctx, greedy, rng, &lp, &ent);
    for (size_t i = 0; i < eps.size(); ++i) eps[i].place(int(pick[i]));
  }
  Rollout out;
  for (const ExpertEpisode& e : eps) out.maps.push_back(e.map());
  if (!lp.empty()) {
    out.log_prob = torch::stack(lp, 1).sum(1);
    out.entropy = torch::stack(ent, 1).mean(1);
  }
  return out;
}

Rollout rollout(ExpertNet& net, std::vector<ExpertEpisode>& eps, bool greedy,
                std::mt19937_64* rng) {
  return rollout(net, eps, std::vector<uint8_t>(eps.size(), greedy ? 1 : 0), rng);
}

/// The layers of one model: layer l of n at position l / (n - 1).
std::vector<double> model_positions(size_t n) {
  std::vector<double> p;
  for (size_t l = 0; l < n; ++l) p.push_back(n > 1 ? double(l) / double(n - 1) : 0.0);
  return p;
}

std::vector<ExpertEpisode> episodes(const std::vector<std::vector<double>>& shares,
                                    const std::vector<std::vector<int>>& copies,
                                    const ExpertTopology& topo, int slots_per_rank,
                                    bool choose_replicas, const std::vector<double>& positions) {
  std::vector<ExpertEpisode> eps;
  for (size_t l = 0; l < shares.size(); ++l) {
    eps.emplace_back(shares[l], copies[l], topo, slots_per_rank, positions[l], choose_replicas);
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
  Impl(int h, bool r) : hidden(h), choose_replicas(r), net(h, r) {}
  int hidden;
  bool choose_replicas;
  ExpertNet net;
};

ExpertPolicy::ExpertPolicy(int hidden, bool choose_replicas)
    : impl_(std::make_unique<Impl>(hidden, choose_replicas)) {
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
  const bool replicas = meta.contains("chooses_replicas") &&
                        policy_file::get_field<bool>(meta, "chooses_replicas", path + ".meta.json");
  auto p = std::make_unique<ExpertPolicy>(hidden, replicas);
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
  meta["format_version"] = impl_->choose_replicas ? kReplicaPolicyFormat : kPolicyFormat;
  meta["method"] = "expert-rl";
  meta["hidden"] = impl_->hidden;
  meta["rank_features"] = kRankFeatures;
  meta["expert_features"] = kExpertFeatures;
  if (impl_->choose_replicas) {
    meta["chooses_replicas"] = true;
    meta["replica_features"] = kReplicaFeatures;
  }
  meta["trained"] = how;
  policy_file::save_policy_pair(out, path, meta);
}

std::vector<ExpertLayerMap> ExpertPolicy::place(const std::vector<std::vector<double>>& shares,
                                                const std::vector<std::vector<int>>& copies,
                                                const ExpertTopology& topo,
                                                int slots_per_rank) const {
  torch::NoGradGuard guard;
  std::vector<ExpertEpisode> eps = episodes(shares, copies, topo, slots_per_rank,
                                            impl_->choose_replicas, model_positions(shares.size()));
  return rollout(impl_->net, eps, true, nullptr).maps;
}

bool ExpertPolicy::chooses_replicas() const { return impl_->choose_replicas; }

int ExpertPolicy::start_from(const ExpertPolicy& other) {
  torch::NoGradGuard guard;
  const auto theirs = other.impl_->net->named_parameters();
  int copied = 0;
  for (auto& mine : impl_->net->named_parameters()) {
    const torch::Tensor* t = theirs.find(mine.key());
    if (t && t->sizes() == mine.value().sizes()) {
      mine.value().copy_(*t);
      ++copied;
    }
  }
  return copied;
}

namespace {

/// One pretraining update's episodes: `o.layers_per_update` layers of `set`, each sampled
/// `o.samples` times, with EPLB's step of each layer.
struct UpdateBatch {
  std::vector<ExpertEpisode> eps;
  std::vector<double> eplb_step;  // per layer
};

UpdateBatch draw_batch(const ExpertRlLayers& set, const ExpertRlTrainOptions& o,
                       std::mt19937_64* rng) {
  UpdateBatch b;
  const int slots = (int(set.shares.front().size()) + set.eplb.redundant) / set.topo.ranks;
  std::uniform_int_distribution<size_t> pick(0, set.shares.size() - 1);
  for (int i = 0; i < o.layers_per_update; ++i) {
    const size_t l = pick(*rng);
    const ExpertLayerMap base = eplb_layer(set.shares[l], set.topo, set.eplb);
    b.eplb_step.push_back(expert_layer_step(set.shares[l], base, set.topo, set.cost).total);
    const std::vector<int> copies = eplb_copies(set.shares[l], set.topo, set.eplb);
    for (int k = 0; k < o.samples; ++k) {
      b.eps.emplace_back(set.shares[l], copies, set.topo, slots, set.positions[l],
                         o.choose_replicas);
    }
  }
  return b;
}

/// The samples' steps over EPLB's and their advantages (the mean ratio of the same layer's
/// samples minus the sample's: reward = -ratio).
std::vector<double> advantages(const ExpertRlLayers& set, const UpdateBatch& b, const Rollout& r,
                               int samples, double* mean_ratio) {
  std::vector<double> ratio(b.eps.size()), adv(b.eps.size());
  *mean_ratio = 0;
  for (size_t i = 0; i < b.eps.size(); ++i) {
    const size_t layer = i / size_t(samples);
    ratio[i] = expert_layer_step(b.eps[i].shares(), r.maps[i], set.topo, set.cost).total /
               b.eplb_step[layer];
    *mean_ratio += ratio[i] / double(b.eps.size());
  }
  for (size_t i = 0; i < b.eps.size(); ++i) {
    const size_t first = i / size_t(samples) * size_t(samples);
    const double base =
        std::accumulate(ratio.begin() + long(first), ratio.begin() + long(first) + samples, 0.0) /
        samples;
    adv[i] = base - ratio[i];
  }
  return adv;
}

std::vector<torch::Tensor> parameter_copy(ExpertNet& net) {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& p : net->parameters()) out.push_back(p.detach().clone());
  return out;
}

}  // namespace

double ExpertPolicy::pretrain(const std::vector<ExpertRlLayers>& train,
                              const std::vector<ExpertRlLayers>& validation,
                              const ExpertRlTrainOptions& o,
                              const std::function<void(int64_t, double, double)>& progress) {
  std::mt19937_64 rng(o.seed);
  torch::optim::Adam opt(impl_->net->parameters(), torch::optim::AdamOptions(o.learning_rate));
  std::uniform_int_distribution<size_t> shape(0, train.size() - 1);
  const bool validating = o.validate_every > 0 && !validation.empty();
  double best = validating ? validate(validation) : 0;
  std::vector<torch::Tensor> kept = parameter_copy(impl_->net);
  for (int64_t u = 0; u < o.updates; ++u) {
    const ExpertRlLayers& set = train.size() > 1 ? train[shape(rng)] : train.front();
    UpdateBatch batch = draw_batch(set, o, &rng);
    Rollout r = rollout(impl_->net, batch.eps, false, &rng);
    double mean_ratio = 0;
    const std::vector<double> adv = advantages(set, batch, r, o.samples, &mean_ratio);
    reinforce_step(opt, r, adv, o.entropy);
    double checked = 0;
    if (validating && ((u + 1) % o.validate_every == 0 || u + 1 == o.updates)) {
      checked = validate(validation);
      if (checked < best) best = checked, kept = parameter_copy(impl_->net);
    }
    if (progress) progress(u, mean_ratio, checked);
  }
  if (validating) {
    torch::NoGradGuard guard;
    const std::vector<torch::Tensor> now = impl_->net->parameters();
    for (size_t i = 0; i < now.size(); ++i) now[i].copy_(kept[i]);
  }
  return best;
}

double ExpertPolicy::validate(const std::vector<ExpertRlLayers>& layers) const {
  double log_sum = 0;
  size_t n = 0;
  for (const ExpertRlLayers& set : layers) {
    std::vector<std::vector<int>> copies;
    std::vector<double> eplb;
    for (const std::vector<double>& share : set.shares) {
      const ExpertLayerMap m = eplb_layer(share, set.topo, set.eplb);
      eplb.push_back(expert_layer_step(share, m, set.topo, set.cost).total);
      copies.push_back(eplb_copies(share, set.topo, set.eplb));
    }
    const int slots = (int(set.shares.front().size()) + set.eplb.redundant) / set.topo.ranks;
    torch::NoGradGuard guard;
    std::vector<ExpertEpisode> eps =
        episodes(set.shares, copies, set.topo, slots, impl_->choose_replicas, set.positions);
    const std::vector<ExpertLayerMap> maps = rollout(impl_->net, eps, true, nullptr).maps;
    for (size_t l = 0; l < maps.size(); ++l, ++n) {
      log_sum +=
          std::log(expert_layer_step(set.shares[l], maps[l], set.topo, set.cost).total / eplb[l]);
    }
  }
  return n > 0 ? std::exp(log_sum / double(n)) : 0;
}

namespace {

/// The maps fine-tuning judges: each judged once (within the budget of evaluations), the best
/// kept, `curve` the best objective after each evaluation.
struct JudgedMaps {
  const std::function<double(const std::vector<ExpertLayerMap>&)>& objective;
  std::vector<double>* curve;
  int64_t budget;
  ExpertMapCache cache;
  std::vector<ExpertLayerMap> best;
  double best_step = std::numeric_limits<double>::infinity();

  int64_t evaluations() const { return int64_t(curve->size()); }
  /// False when `maps` are new and the budget is spent.
  bool judge(const std::vector<ExpertLayerMap>& maps, double* step) {
    if (const double* seen = cache.find(maps)) return *step = *seen, true;
    if (evaluations() >= budget) return false;
    *step = objective(maps);
    cache.add(maps, *step);
    if (*step < best_step) best_step = *step, best = maps;
    curve->push_back(best_step);
    return true;
  }
};

/// The map rollout `k` proposes: rollout 0 the policy's greedy map of every layer; rollout
/// k >= 1 the best map so far (`incumbent`) with layer `sampled` as the policy sampled it.
std::vector<ExpertLayerMap> rollout_maps(const std::vector<ExpertLayerMap>& all, int k,
                                         int sampled, const std::vector<ExpertLayerMap>& incumbent) {
  const size_t layers = incumbent.size();
  if (k == 0) return {all.begin(), all.begin() + long(layers)};
  std::vector<ExpertLayerMap> maps = incumbent;
  maps[size_t(sampled)] = all[size_t(k) * layers + size_t(sampled)];
  return maps;
}

/// The loss of one fine-tuning update: the sampled episodes' advantages times their
/// log-probabilities, less the entropy bonus, over the sampled episodes.
void finetune_step(torch::optim::Adam& opt, const Rollout& r, const std::vector<double>& adv,
                   const std::vector<uint8_t>& greedy, double entropy) {
  std::vector<float> sampled(greedy.size());
  for (size_t i = 0; i < greedy.size(); ++i) sampled[i] = greedy[i] ? 0.0f : 1.0f;
  const torch::Tensor w = torch::tensor(sampled);
  const double n = std::max(1.0, double(w.sum().item<float>()));
  const torch::Tensor a = torch::tensor(adv, torch::kFloat32);
  const torch::Tensor loss = (-(a * r.log_prob).sum() - entropy * (w * r.entropy).sum()) / n;
  opt.zero_grad();
  loss.backward();
  opt.step();
}

}  // namespace

std::vector<ExpertLayerMap> ExpertPolicy::finetune(
    const std::vector<std::vector<double>>& shares, const std::vector<std::vector<int>>& copies,
    const ExpertTopology& topo, int slots_per_rank,
    const std::function<double(const std::vector<ExpertLayerMap>&)>& objective, int64_t updates,
    int samples, uint64_t seed, std::vector<double>* curve) {
  curve->clear();
  JudgedMaps judged{objective, curve, 1 + updates * samples, {}, {}};
  double step = 0;
  judged.judge(place(shares, copies, topo, slots_per_rank), &step);
  const ExpertFinetuneSchedule schedule;
  std::mt19937_64 rng(seed);
  torch::optim::Adam opt(impl_->net->parameters(),
                         torch::optim::AdamOptions(schedule.learning_rate));
  const int layers = int(shares.size());
  const std::vector<double> positions = model_positions(shares.size());
  // Updates whose maps were all judged before cost nothing: at most 4 x updates in all.
  for (int64_t u = 0; u < 4 * updates && samples > 1; ++u) {
    const double progress = double(judged.evaluations() - 1) / double(updates * samples);
    static_cast<torch::optim::AdamOptions&>(opt.param_groups().front().options())
        .lr(schedule.learning_rate_at(progress));
    std::vector<ExpertEpisode> eps;
    std::vector<uint8_t> greedy;
    for (int k = 0; k < samples; ++k) {
      const int sampled = sampled_layer(u, k, samples, layers);
      for (const ExpertEpisode& e :
           episodes(shares, copies, topo, slots_per_rank, impl_->choose_replicas, positions)) {
        greedy.push_back(int(eps.size()) % layers == sampled ? 0 : 1);
        eps.push_back(e);
      }
    }
    Rollout r = rollout(impl_->net, eps, greedy, &rng);
    const std::vector<ExpertLayerMap> incumbent = judged.best;
    std::vector<double> steps(size_t(samples), judged.best_step);
    for (int k = 0; k < samples; ++k) {
      double step_k = 0;
      if (!judged.judge(rollout_maps(r.maps, k, sampled_layer(u, k, samples, layers), incumbent),
                        &step_k)) {
        return judged.best;
      }
      if (k > 0) steps[size_t(k)] = step_k;  // steps[0]: the incumbent's, the baseline
    }
    const std::vector<double> per_rollout = self_critical_advantages(steps);
    std::vector<double> adv(eps.size(), 0.0);
    for (size_t i = 0; i < eps.size(); ++i) {
      if (!greedy[i]) adv[i] = per_rollout[i / size_t(layers)];
    }
    finetune_step(opt, r, adv, greedy, schedule.entropy_at(progress));
  }
  return judged.best;
}

std::string default_expert_policy_path() {
  return std::string(PLACER_SOURCE_DIR) + "/models/pretrained/expert_rl.pt";
}

}  // namespace placer
