#include "models/rainbow_net.h"

#include <cmath>
#include <sstream>

#include <torch/nn/functional/activation.h>
#include <torch/nn/init.h>

#include "src/util/error.h"

namespace placer {

// --------------------------------------------------------------------- NoisyLinear ----

NoisyLinearImpl::NoisyLinearImpl(int64_t in, int64_t out, double sigma0)
    : in_features(in), out_features(out) {
  if (in <= 0 || out <= 0) {
    std::ostringstream s;
    s << "NoisyLinear: sizes must be positive, got " << in << " -> " << out;
    throw ValidationError(s.str());
  }
  if (!(sigma0 >= 0)) {
    std::ostringstream s;
    s << "NoisyLinear: sigma0 must be >= 0, got " << sigma0;
    throw ValidationError(s.str());
  }
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  const double sigma = sigma0 / std::sqrt(static_cast<double>(in));
  weight_mu = register_parameter("weight_mu", torch::empty({out, in}).uniform_(-bound, bound));
  weight_sigma = register_parameter("weight_sigma", torch::full({out, in}, sigma));
  bias_mu = register_parameter("bias_mu", torch::empty({out}).uniform_(-bound, bound));
  bias_sigma = register_parameter("bias_sigma", torch::full({out}, sigma));
  weight_epsilon = register_buffer("weight_epsilon", torch::zeros({out, in}));
  bias_epsilon = register_buffer("bias_epsilon", torch::zeros({out}));
}

torch::Tensor NoisyLinearImpl::forward(const torch::Tensor& x) {
  if (!noise_active()) return torch::linear(x, weight_mu, bias_mu);
  return torch::linear(x, weight_mu + weight_sigma * weight_epsilon,
                       bias_mu + bias_sigma * bias_epsilon);
}

void NoisyLinearImpl::reset_noise(std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto draw = [&](int64_t n) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& e : v) e = normal(rng);
    for (float& e : v) e = (e < 0 ? -1.0f : 1.0f) * std::sqrt(std::abs(e));
    return torch::tensor(v);
  };
  const torch::Tensor e_in = draw(in_features);
  const torch::Tensor e_out = draw(out_features);
  torch::NoGradGuard no_grad;
  weight_epsilon.copy_(torch::outer(e_out, e_in));
  bias_epsilon.copy_(e_out);
}

// ---------------------------------------------------------------------- RainbowNet ----

RainbowNetOptions::RainbowNetOptions(int64_t input_dim, int64_t num_actions)
    : input_dim_(input_dim), num_actions_(num_actions) {}

RainbowNetImpl::RainbowNetImpl(const RainbowNetOptions& o) : options(o) {
  auto fail = [](const std::string& what) { throw ValidationError("RainbowNet: " + what); };
  if (o.input_dim() <= 0) fail("input_dim must be positive");
  if (o.num_actions() <= 0) fail("num_actions must be positive");
  if (o.hidden().empty()) fail("hidden needs at least one layer width");
  for (int64_t h : o.hidden()) {
    if (h <= 0) fail("hidden layer widths must be positive");
  }
  if (o.atoms() < 2) fail("atoms must be >= 2, got " + std::to_string(o.atoms()));
  if (!(o.v_min() < o.v_max()) || !std::isfinite(o.v_min()) || !std::isfinite(o.v_max())) {
    std::ostringstream s;
    s << "v_min (" << o.v_min() << ") must be below v_max (" << o.v_max() << ")";
    fail(s.str());
  }
  int64_t width = o.input_dim();
  for (std::size_t i = 0; i < o.hidden().size(); ++i) {
    add_layer("torso" + std::to_string(i), width, o.hidden()[i]);
    width = o.hidden()[i];
  }
  if (o.dueling()) {
    add_layer("value", width, o.atoms());
    add_layer("advantage", width, o.num_actions() * o.atoms());
  } else {
    add_layer("head", width, o.num_actions() * o.atoms());
  }
  support_ = register_buffer("support", torch::linspace(o.v_min(), o.v_max(), o.atoms()));
}

void RainbowNetImpl::add_layer(const std::string& name, int64_t in, int64_t out) {
  if (options.noisy()) {
    noisy_.push_back(register_module(name, NoisyLinear(in, out, options.sigma0())));
  } else {
    plain_.push_back(register_module(name, torch::nn::Linear(in, out)));
  }
}

torch::Tensor RainbowNetImpl::apply(std::size_t i, const torch::Tensor& x) {
  return options.noisy() ? noisy_[i]->forward(x) : plain_[i]->forward(x);
}

torch::Tensor RainbowNetImpl::forward(const torch::Tensor& input) {
  const bool single = input.dim() == 1;
  torch::Tensor h = single ? input.unsqueeze(0) : input;
  PLACER_CHECK(h.dim() == 2 && h.size(1) == options.input_dim(), "RainbowNet: expected input [B, "
                                                                     << options.input_dim()
                                                                     << "], got " << input.sizes());
  const std::size_t torso = options.hidden().size();
  for (std::size_t i = 0; i < torso; ++i) h = torch::relu(apply(i, h));
  const int64_t b = h.size(0), a = options.num_actions(), n = options.atoms();
  torch::Tensor logits;
  if (options.dueling()) {
    const torch::Tensor v = apply(torso, h).view({b, 1, n});
    const torch::Tensor adv = apply(torso + 1, h).view({b, a, n});
    logits = v + adv - adv.mean(1, /*keepdim=*/true);
  } else {
    logits = apply(torso, h).view({b, a, n});
  }
  torch::Tensor log_p = torch::log_softmax(logits, 2);
  return single ? log_p.squeeze(0) : log_p;
}

torch::Tensor RainbowNetImpl::q_values(const torch::Tensor& x) {
  return (forward(x).exp() * support_).sum(-1);
}

void RainbowNetImpl::reset_noise(std::mt19937_64& rng) {
  for (auto& layer : noisy_) layer->reset_noise(rng);
}

void RainbowNetImpl::set_noise_enabled(bool enabled) {
  for (auto& layer : noisy_) layer->set_noise_enabled(enabled);
}

}  // namespace placer
