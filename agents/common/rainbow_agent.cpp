#include "agents/common/rainbow_agent.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>
#include <utility>

#include <torch/nn/utils/clip_grad.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/utils.h>

#include "models/archive_file.h"
#include "src/util/error.h"
#include "src/util/files.h"

namespace placer {

namespace {

/// Options of the agent's networks.
RainbowNetOptions net_options(int64_t state_dim, int64_t num_actions, const RainbowConfig& c) {
  return RainbowNetOptions(state_dim, num_actions)
      .hidden(c.hidden)
      .atoms(c.atoms)
      .v_min(c.v_min)
      .v_max(c.v_max)
      .noisy(c.noisy)
      .sigma0(c.sigma0)
      .dueling(c.dueling);
}

ReplayConfig replay_config(const RainbowConfig& c) {
  ReplayConfig r;
  r.capacity = c.replay_capacity;
  r.alpha = c.priority_alpha;
  r.beta_start = c.beta_start;
  r.beta_end = c.beta_end;
  r.beta_steps = c.beta_steps;
  r.epsilon = c.priority_epsilon;
  return r;
}

/// Throws ValidationError when the config is invalid (before any member is built).
const RainbowConfig& checked(const RainbowConfig& c, int64_t state_dim, int64_t num_actions) {
  std::string why = validate_rainbow_config(c);
  if (why.empty() && state_dim <= 0) why = "state_dim must be positive";
  if (why.empty() && num_actions <= 0) why = "num_actions must be positive";
  if (!why.empty()) throw ValidationError("rainbow: " + why);
  torch::manual_seed(c.seed);  // network initialisation
  return c;
}

/// Sizes that a checkpoint must share with the agent loading it.
torch::Tensor shape_signature(int64_t state_dim, int64_t num_actions, const RainbowConfig& c) {
  std::vector<int64_t> v{state_dim, num_actions, c.atoms, c.noisy ? 1 : 0, c.dueling ? 1 : 0};
  v.insert(v.end(), c.hidden.begin(), c.hidden.end());
  return torch::tensor(v, torch::kInt64);
}

std::string first_line(const std::exception& e) {
  const std::string what = e.what();
  return what.substr(0, what.find('\n'));
}

/// Concatenates the stream output of parts.
template <class... T>
std::string cat(const T&... parts) {
  std::ostringstream s;
  (s << ... << parts);
  return s.str();
}

}  // namespace

std::string validate_rainbow_config(const RainbowConfig& c) {
  auto in01 = [](double x) { return x >= 0 && x <= 1; };
  if (c.hidden.empty()) return "hidden needs at least one layer width";
  for (int64_t h : c.hidden) {
    if (h <= 0) return "hidden layer widths must be positive";
  }
  if (c.atoms < 2) return cat("atoms must be >= 2, got ", c.atoms);
  if (!(c.v_min < c.v_max) || !std::isfinite(c.v_min) || !std::isfinite(c.v_max)) {
    return cat("v_min (", c.v_min, ") must be below v_max (", c.v_max, ")");
  }
  if (!(c.sigma0 >= 0)) return cat("sigma0 must be >= 0, got ", c.sigma0);
  if (c.replay_capacity == 0) return "replay_capacity must be positive";
  if (!(c.priority_alpha >= 0)) {
    return cat("priority_alpha must be >= 0, got ", c.priority_alpha);
  }
  if (!in01(c.beta_start) || !in01(c.beta_end)) return "beta_start and beta_end must lie in [0, 1]";
  if (c.beta_steps < 0) return cat("beta_steps must be >= 0, got ", c.beta_steps);
  if (!(c.priority_epsilon >= 0)) return "priority_epsilon must be >= 0";
  if (c.batch_size <= 0) return cat("batch_size must be positive, got ", c.batch_size);
  if (!(c.lr > 0)) return cat("lr must be positive, got ", c.lr);
  if (!(c.adam_eps > 0)) return cat("adam_eps must be positive, got ", c.adam_eps);
  if (!in01(c.gamma)) return cat("gamma must lie in [0, 1], got ", c.gamma);
  if (c.n_step < 1) return cat("n_step must be >= 1, got ", c.n_step);
  if (c.target_update < 1) {
    return cat("target_update must be >= 1, got ", c.target_update);
  }
  if (!in01(c.epsilon_start) || !in01(c.epsilon_end)) {
    return "epsilon_start and epsilon_end must lie in [0, 1]";
  }
  if (c.epsilon_decay_steps < 0) return "epsilon_decay_steps must be >= 0";
  if (c.learn_start < 0) return "learn_start must be >= 0";
  return "";
}

torch::Tensor project_distribution(const torch::Tensor& next_probs, const torch::Tensor& rewards,
                                   const torch::Tensor& discounts, double v_min, double v_max) {
  PLACER_CHECK(
      next_probs.dim() == 2 && next_probs.size(1) >= 2,
      "project_distribution: next_probs must be [B, atoms >= 2], got " << next_probs.sizes());
  const int64_t b = next_probs.size(0), n = next_probs.size(1);
  PLACER_CHECK(rewards.numel() == b && discounts.numel() == b,
               "project_distribution: need " << b << " rewards and discounts, got "
                                             << rewards.numel() << " and " << discounts.numel());
  PLACER_CHECK(v_min < v_max,
               "project_distribution: v_min (" << v_min << ") >= v_max (" << v_max << ")");
  torch::NoGradGuard no_grad;
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(next_probs.device());
  const torch::Tensor p = next_probs.to(torch::kFloat64);
  const torch::Tensor z = torch::linspace(v_min, v_max, n, f64);
  const double dz = (v_max - v_min) / static_cast<double>(n - 1);
  const torch::Tensor tz = (rewards.reshape({b, 1}).to(torch::kFloat64) +
                            discounts.reshape({b, 1}).to(torch::kFloat64) * z.unsqueeze(0))
                               .clamp(v_min, v_max);
  const torch::Tensor pos = ((tz - v_min) / dz).clamp(0, static_cast<double>(n - 1));
  torch::Tensor lo = pos.floor().to(torch::kInt64);
  torch::Tensor hi = pos.ceil().to(torch::kInt64);
  // On an atom exactly (lo == hi) give the whole mass to it: widen the pair to a neighbour
  // that then receives weight 0.
  const torch::Tensor same = lo.eq(hi);
  lo = torch::where(same & hi.gt(0), lo - 1, lo);
  hi = torch::where(same & lo.eq(hi), hi + 1, hi);
  const torch::Tensor offset = (torch::arange(b, lo.options()) * n).unsqueeze(1);
  torch::Tensor m = torch::zeros({b * n}, f64);
  m.index_add_(0, (lo + offset).reshape(-1), (p * (hi.to(torch::kFloat64) - pos)).reshape(-1));
  m.index_add_(0, (hi + offset).reshape(-1), (p * (pos - lo.to(torch::kFloat64))).reshape(-1));
  return m.view({b, n}).to(next_probs.scalar_type());
}

// -------------------------------------------------------------------- RainbowAgent ----

RainbowAgent::RainbowAgent(int64_t state_dim, int64_t num_actions, const RainbowConfig& config)
    : state_dim_(state_dim),
      num_actions_(num_actions),
      config_(checked(config, state_dim, num_actions)),
      net_(net_options(state_dim, num_actions, config)),
      target_(net_options(state_dim, num_actions, config)),
      replay_(replay_config(config)),
      nstep_(config.n_step, config.gamma),
      rng_(config.seed) {
  optimizer_ = std::make_unique<torch::optim::Adam>(
      net_->parameters(), torch::optim::AdamOptions(config.lr).eps(config.adam_eps));
  if (config_.noisy) {
    net_->reset_noise(rng_);
  }
  sync_target();
  for (auto& p : target_->parameters()) p.set_requires_grad(false);
}

void RainbowAgent::sync_target() {
  torch::NoGradGuard no_grad;
  const auto src = net_->named_parameters();
  for (auto& item : target_->named_parameters()) item.value().copy_(src[item.key()]);
  const auto src_buffers = net_->named_buffers();
  for (auto& item : target_->named_buffers()) item.value().copy_(src_buffers[item.key()]);
}

void RainbowAgent::check_mask(const std::vector<uint8_t>& mask, const char* what) const {
  if (static_cast<int64_t>(mask.size()) != num_actions_) {
    std::ostringstream s;
    s << "rainbow: " << what << " has " << mask.size() << " entries, expected " << num_actions_;
    throw ValidationError(s.str());
  }
}

double RainbowAgent::epsilon() const {
  if (config_.noisy) return 0.0;
  if (config_.epsilon_decay_steps <= 0 || steps_ >= config_.epsilon_decay_steps) {
    return config_.epsilon_end;
  }
  const double f = static_cast<double>(steps_) / static_cast<double>(config_.epsilon_decay_steps);
  return config_.epsilon_start + f * (config_.epsilon_end - config_.epsilon_start);
}

std::vector<float> RainbowAgent::q_values(const std::vector<float>& state) {
  if (static_cast<int64_t>(state.size()) != state_dim_) {
    std::ostringstream s;
    s << "rainbow: state has " << state.size() << " entries, expected " << state_dim_;
    throw ValidationError(s.str());
  }
  torch::NoGradGuard no_grad;
  net_->eval();
  const torch::Tensor q = net_->q_values(torch::tensor(state)).contiguous();
  net_->train();
  return std::vector<float>(q.data_ptr<float>(), q.data_ptr<float>() + num_actions_);
}

int RainbowAgent::act(const std::vector<float>& state, const std::vector<uint8_t>& mask,
                      bool greedy) {
  check_mask(mask, "mask");
  std::vector<int> allowed;
  for (int a = 0; a < num_actions_; ++a) {
    if (mask[static_cast<std::size_t>(a)]) allowed.push_back(a);
  }
  if (allowed.empty()) throw ValidationError("rainbow: act() with a mask that allows nothing");
  if (!greedy && !config_.noisy) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    if (unit(rng_) < epsilon()) {
      std::uniform_int_distribution<std::size_t> pick(0, allowed.size() - 1);
      return allowed[pick(rng_)];
    }
  }
  std::vector<float> q;
  if (greedy || !config_.noisy) {
    q = q_values(state);
  } else {
    if (static_cast<int64_t>(state.size()) != state_dim_) {
      throw ValidationError("rainbow: state has " + std::to_string(state.size()) +
                            " entries, expected " + std::to_string(state_dim_));
    }
    torch::NoGradGuard no_grad;
    const torch::Tensor t = net_->q_values(torch::tensor(state)).contiguous();
    q.assign(t.data_ptr<float>(), t.data_ptr<float>() + num_actions_);
  }
  // Masked actions count as -inf: only allowed ones compete.
  int best = allowed.front();
  for (int a : allowed) {
    if (q[static_cast<std::size_t>(a)] > q[static_cast<std::size_t>(best)]) best = a;
  }
  return best;
}

void RainbowAgent::observe(const std::vector<float>& state, int action, float reward,
                           const std::vector<float>& next_state, bool done,
                           const std::vector<uint8_t>& mask,
                           const std::vector<uint8_t>& next_mask) {
  if (static_cast<int64_t>(state.size()) != state_dim_ ||
      static_cast<int64_t>(next_state.size()) != state_dim_) {
    std::ostringstream s;
    s << "rainbow: observe() states have " << state.size() << " and " << next_state.size()
      << " entries, expected " << state_dim_;
    throw ValidationError(s.str());
  }
  check_mask(mask, "mask");
  check_mask(next_mask, "next_mask");
  if (action < 0 || action >= num_actions_ || !mask[static_cast<std::size_t>(action)]) {
    throw ValidationError("rainbow: observe() action " + std::to_string(action) +
                          " is out of range or masked");
  }
  if (!std::isfinite(reward)) throw ValidationError("rainbow: observe() reward is not finite");
  EnvStep step;
  step.state = state;
  step.mask = mask;
  step.action = action;
  step.reward = reward;
  step.next_state = next_state;
  step.next_mask = next_mask;
  step.done = done;
  for (Transition& t : nstep_.push(std::move(step))) replay_.add(std::move(t));
  ++steps_;
}

void RainbowAgent::end_episode() {
  for (Transition& t : nstep_.flush()) replay_.add(std::move(t));
}

RainbowLearnStats RainbowAgent::learn() {
  RainbowLearnStats stats;
  const std::size_t batch = static_cast<std::size_t>(config_.batch_size);
  if (replay_.size() < std::max(batch, static_cast<std::size_t>(config_.learn_start))) {
    return stats;
  }
  net_->train();
  target_->train();
  if (config_.noisy) {
    net_->reset_noise(rng_);
    target_->reset_noise(rng_);
  }
  const ReplaySample sample = replay_.sample(batch, updates_, rng_);
  const int64_t b = config_.batch_size, s = state_dim_, a = num_actions_;
  std::vector<float> states, next_states, rewards, discounts, weights;
  std::vector<int64_t> actions;
  std::vector<uint8_t> next_mask;
  states.reserve(static_cast<std::size_t>(b * s));
  next_states.reserve(static_cast<std::size_t>(b * s));
  next_mask.reserve(static_cast<std::size_t>(b * a));
  for (std::size_t k = 0; k < batch; ++k) {
    const Transition& t = replay_.at(sample.indices[k]);
    states.insert(states.end(), t.state.begin(), t.state.end());
    next_states.insert(next_states.end(), t.next_state.begin(), t.next_state.end());
    next_mask.insert(next_mask.end(), t.next_mask.begin(), t.next_mask.end());
    actions.push_back(t.action);
    rewards.push_back(t.reward);
    discounts.push_back(t.discount);
    weights.push_back(static_cast<float>(sample.weights[k]));
  }
  const torch::Tensor st = torch::tensor(states).view({b, s});
  const torch::Tensor nst = torch::tensor(next_states).view({b, s});
  const torch::Tensor act = torch::tensor(actions, torch::kInt64);
  const torch::Tensor rew = torch::tensor(rewards);
  const torch::Tensor disc = torch::tensor(discounts);
  const torch::Tensor w = torch::tensor(weights);
  const torch::Tensor nmask =
      torch::from_blob(next_mask.data(), {b, a}, torch::kUInt8).to(torch::kBool);
  const torch::Tensor rows = torch::arange(b, torch::kInt64);

  torch::Tensor target_dist;
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor target_probs = target_->forward(nst).exp();  // [B, A, N]
    torch::Tensor q_next =
        config_.double_q ? net_->q_values(nst) : (target_probs * target_->support()).sum(2);
    q_next = q_next.masked_fill(nmask.logical_not(), -std::numeric_limits<float>::infinity());
    const torch::Tensor best = q_next.argmax(1);  // all-masked rows (terminal): any action
    target_dist = project_distribution(target_probs.index({rows, best}), rew, disc, config_.v_min,
                                       config_.v_max);
  }
  const torch::Tensor log_p = net_->forward(st).index({rows, act});  // [B, N]
  const torch::Tensor ce = -(target_dist * log_p).sum(1);            // [B]
  const torch::Tensor loss = (w * ce).mean();
  optimizer_->zero_grad();
  loss.backward();
  if (config_.grad_clip > 0)
    torch::nn::utils::clip_grad_norm_(net_->parameters(), config_.grad_clip);
  optimizer_->step();

  // KL(target || online) = cross-entropy - entropy(target).
  const torch::Tensor entropy_term =
      torch::where(target_dist > 0, target_dist * target_dist.clamp_min(1e-30).log(),
                   torch::zeros_like(target_dist))
          .sum(1);
  const torch::Tensor kl =
      (ce.detach() + entropy_term).clamp_min(0).to(torch::kFloat64).contiguous();
  const std::vector<double> kl_v(kl.data_ptr<double>(), kl.data_ptr<double>() + b);
  replay_.update_priorities(sample.indices, kl_v);

  ++updates_;
  if (updates_ % config_.target_update == 0) sync_target();
  stats.updated = true;
  stats.loss = loss.item<double>();
  stats.mean_kl = kl.mean().item<double>();
  return stats;
}

void RainbowAgent::save(const std::string& path) const {
  torch::serialize::OutputArchive archive;
  write(archive);
  save_archive_atomic(archive, path, "checkpoint");
}

void RainbowAgent::write(torch::serialize::OutputArchive& archive) const {
  torch::serialize::OutputArchive net_archive(archive.compilation_unit());
  net_->save(net_archive);
  archive.write("net", net_archive);
  torch::serialize::OutputArchive target_archive(archive.compilation_unit());
  target_->save(target_archive);
  archive.write("target", target_archive);
  torch::serialize::OutputArchive opt_archive(archive.compilation_unit());
  optimizer_->save(opt_archive);
  archive.write("optimizer", opt_archive);
  archive.write("shape", shape_signature(state_dim_, num_actions_, config_));
  archive.write("counters", torch::tensor(std::vector<int64_t>{steps_, updates_}, torch::kInt64));
  std::ostringstream rng_state;
  rng_state << rng_;
  archive.write("rng", c10::IValue(rng_state.str()));
}

void RainbowAgent::load(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw FileError(path + ": no such checkpoint file");
  }
  torch::serialize::InputArchive archive;
  torch::Tensor shape, counters;
  std::string rng_state;
  // Load into fresh networks first so that a bad file leaves this agent untouched.
  RainbowNet net(net_options(state_dim_, num_actions_, config_));
  RainbowNet target(net_options(state_dim_, num_actions_, config_));
  try {
    archive.load_from(path);
    archive.read("shape", shape);
  } catch (const std::exception& e) {
    throw FormatError(path + ": not a Rainbow checkpoint: " + first_line(e));
  }
  const torch::Tensor expected = shape_signature(state_dim_, num_actions_, config_);
  if (!shape.sizes().equals(expected.sizes()) || !torch::equal(shape, expected)) {
    auto show = [](const torch::Tensor& t) {
      std::ostringstream s;
      const torch::Tensor v = t.reshape(-1).to(torch::kInt64).contiguous();
      for (int64_t i = 0; i < v.numel(); ++i) s << (i ? "," : "[") << v[i].item<int64_t>();
      s << "]";
      return s.str();
    };
    throw FormatError(path +
                      ": checkpoint sizes [state_dim, actions, atoms, noisy, dueling, "
                      "hidden...] are " +
                      show(shape) + " but this agent's are " + show(expected));
  }
  try {
    torch::serialize::InputArchive net_archive, target_archive, opt_archive;
    archive.read("net", net_archive);
    net->load(net_archive);
    archive.read("target", target_archive);
    target->load(target_archive);
    archive.read("counters", counters);
    c10::IValue rng_value;
    archive.read("rng", rng_value);
    rng_state = rng_value.toStringRef();
    // Copy into the live networks (the optimizer holds their parameters).
    torch::NoGradGuard no_grad;
    auto copy_into = [](RainbowNet& dst, RainbowNet& src) {
      const auto sp = src->named_parameters();
      for (auto& item : dst->named_parameters()) item.value().copy_(sp[item.key()]);
      const auto sb = src->named_buffers();
      for (auto& item : dst->named_buffers()) item.value().copy_(sb[item.key()]);
    };
    copy_into(net_, net);
    copy_into(target_, target);
    archive.read("optimizer", opt_archive);
    optimizer_->load(opt_archive);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw FormatError(path + ": not a readable Rainbow checkpoint: " + first_line(e));
  }
  if (counters.numel() != 2) throw FormatError(path + ": counters must hold 2 values");
  steps_ = counters[0].item<int64_t>();
  updates_ = counters[1].item<int64_t>();
  std::istringstream in(rng_state);
  in >> rng_;
  if (!in) throw FormatError(path + ": unreadable RNG state");
}

}  // namespace placer
