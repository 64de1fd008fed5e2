#include "models/seq2seq.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <torch/torch.h>

#include "src/util/error.h"

namespace placer {

Seq2SeqPlacerImpl::Seq2SeqPlacerImpl(const Seq2SeqOptions& o) : options(o) {
  auto fail = [](const std::string& what) { throw ValidationError("Seq2SeqPlacer: " + what); };
  if (o.input_dim() < 1) fail("input_dim must be >= 1");
  if (o.num_devices() < 1) fail("num_devices must be >= 1");
  if (o.hidden() < 1) fail("hidden must be >= 1");
  if (o.device_embedding() < 1) fail("device_embedding must be >= 1");
  if (o.bidirectional() && o.hidden() % 2 != 0)
    fail("hidden must be even with a bidirectional encoder (got " +
         std::to_string(o.hidden()) + ")");
  if (o.attention() != "bahdanau" && o.attention() != "luong")
    fail("unknown attention '" + o.attention() + "' (known: bahdanau, luong)");
  if (o.tanh_constant() < 0) fail("tanh_constant must be >= 0");
  if (!(o.temperature() > 0)) fail("temperature must be > 0");
  const int64_t h = o.hidden();
  in_proj = register_module("in_proj", torch::nn::Linear(o.input_dim(), h));
  const int64_t enc_h = o.bidirectional() ? h / 2 : h;
  encoder = register_module(
      "encoder", torch::nn::LSTM(torch::nn::LSTMOptions(h, enc_h).batch_first(true).bidirectional(
                                     o.bidirectional())));
  attn_w1 = register_module("attn_w1", torch::nn::Linear(torch::nn::LinearOptions(h, h).bias(false)));
  attn_w2 = register_module("attn_w2", torch::nn::Linear(torch::nn::LinearOptions(h, h).bias(false)));
  attn_v = register_module("attn_v", torch::nn::Linear(torch::nn::LinearOptions(h, 1).bias(false)));
  device_embed = register_module("device_embed",
                                 torch::nn::Embedding(o.num_devices() + 1, o.device_embedding()));
  decoder = register_module("decoder", torch::nn::LSTMCell(o.device_embedding(), h));
  out = register_module("out", torch::nn::Linear(2 * h, o.num_devices()));
}

torch::Tensor sample_rows(const torch::Tensor& probs, std::mt19937_64& rng) {
  const torch::Tensor p = probs.detach().to(torch::kCPU, torch::kFloat).contiguous();
  const int64_t k = p.size(0), d = p.size(1);
  auto acc = p.accessor<float, 2>();
  torch::Tensor result = torch::empty({k}, torch::kLong);
  auto r = result.accessor<int64_t, 1>();
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (int64_t i = 0; i < k; ++i) {
    const double u = uniform(rng);
    double cum = 0;
    int64_t pick = d - 1;
    for (int64_t j = 0; j < d; ++j) {
      cum += double(acc[i][j]);
      if (u < cum) {
        pick = j;
        break;
      }
    }
    r[i] = pick;
  }
  return result;
}

torch::Tensor Seq2SeqPlacerImpl::scale_logits(torch::Tensor logits) const {
  if (options.temperature() != 1.0) logits = logits / options.temperature();
  if (options.tanh_constant() > 0) {
    const double c = options.tanh_constant();
    logits = c * torch::tanh(logits / c);
  }
  return logits;
}

Seq2SeqOutput Seq2SeqPlacerImpl::forward(const torch::Tensor& inputs, DecodeMode mode,
                                         std::mt19937_64* rng, const torch::Tensor& forced,
                                         bool keep_attention, int64_t decodes,
                                         double logits_noise) {
  if (inputs.dim() != 3 || inputs.size(2) != options.input_dim() || inputs.size(1) < 1) {
    throw ValidationError("Seq2SeqPlacer: inputs must be [K, T >= 1, " +
                          std::to_string(options.input_dim()) + "], got " +
                          std::to_string(inputs.dim()) + "-d " +
                          (inputs.dim() == 3 ? std::to_string(inputs.size(2)) + " wide" : ""));
  }
  if (decodes > 0 && inputs.size(0) != 1)
    throw ValidationError("Seq2SeqPlacer: decodes > 0 needs inputs of batch 1");
  const int64_t k = decodes > 0 ? decodes : inputs.size(0), t_len = inputs.size(1);
  if (mode == DecodeMode::kSample && rng == nullptr)
    throw ValidationError("Seq2SeqPlacer: sampling needs a random generator");
  if (!(logits_noise >= 0)) throw ValidationError("Seq2SeqPlacer: logits_noise must be >= 0");
  if (mode == DecodeMode::kForced &&
      (!forced.defined() || forced.dim() != 2 || forced.size(0) != k || forced.size(1) != t_len)) {
    throw ValidationError("Seq2SeqPlacer: forced actions must be [K, T] = [" +
                          std::to_string(k) + ", " + std::to_string(t_len) + "]");
  }
  torch::Tensor forced_long;
  if (mode == DecodeMode::kForced) {
    forced_long = forced.to(torch::kLong);
    if (forced_long.min().item<int64_t>() < 0 ||
        forced_long.max().item<int64_t>() >= options.num_devices())
      throw ValidationError("Seq2SeqPlacer: forced device index out of range");
  }

  // Encoder (fused LSTM over the whole sequence).
  const torch::Tensor x = torch::tanh(in_proj->forward(inputs));
  auto enc = encoder->forward(x);
  const torch::Tensor e = std::get<0>(enc);  // [K, T, H]
  const torch::Tensor hn = std::get<0>(std::get<1>(enc));  // [dirs, K, H/dirs]
  const torch::Tensor cn = std::get<1>(std::get<1>(enc));
  torch::Tensor hs, cs;
  if (options.bidirectional()) {
    hs = torch::cat({hn[0], hn[1]}, -1);
    cs = torch::cat({cn[0], cn[1]}, -1);
  } else {
    hs = hn[0];
    cs = cn[0];
  }
  const torch::Tensor mem1 = attn_w1->forward(e);  // [K or 1, T, H]
  torch::Tensor mem = mem1;
  if (decodes > 0) {
    mem = mem.expand({k, t_len, mem.size(2)});
    hs = hs.expand({k, hs.size(1)});
    cs = cs.expand({k, cs.size(1)});
  }
  const bool additive = options.attention() == "bahdanau";
  const int64_t h = options.hidden();
  const torch::Tensor v = attn_v->weight.reshape({h});  // [H]

  if (mode == DecodeMode::kForced) {
    // Teacher forcing: the decoder's inputs are the forced devices shifted by one ("go"
    // first), so the decoder LSTM runs fused over the sequence, then the attention and the
    // logits of all steps at once.
    const torch::Tensor prev = torch::cat(
        {torch::full({k, 1}, options.num_devices(), torch::kLong), forced_long.slice(1, 0, t_len - 1)},
        1);
    auto dec = torch::lstm(device_embed->forward(prev),
                           {hs.unsqueeze(0).contiguous(), cs.unsqueeze(0).contiguous()},
                           {decoder->weight_ih, decoder->weight_hh, decoder->bias_ih,
                            decoder->bias_hh},
                           /*has_biases=*/true, /*num_layers=*/1, /*dropout=*/0.0,
                           /*train=*/is_training(), /*bidirectional=*/false,
                           /*batch_first=*/true);
    const torch::Tensor s = std::get<0>(dec);    // [K, T, H]
    const torch::Tensor q = attn_w2->forward(s);  // [K, T, H]
    torch::Tensor score;                           // [K, T (decoder), T (memory)]
    if (additive) {
      // score[k, t, i] = v . tanh(m[k, i] + q[k, t]); in chunks of decoder steps so that a
      // chunk's [K, c, T, H] stays near 4M floats (16 MB, under glibc's largest mmap threshold, so the blocks get reused).
      const torch::Tensor m4 = (decodes > 0 ? mem1 : mem).unsqueeze(1);  // [K|1, 1, T, H]
      const int64_t chunk =
          std::max<int64_t>(1, (int64_t(1) << 22) / std::max<int64_t>(1, k * t_len * h));
      std::vector<torch::Tensor> parts;
      for (int64_t t0 = 0; t0 < t_len; t0 += chunk) {
        const torch::Tensor qc = q.slice(1, t0, std::min(t_len, t0 + chunk)).unsqueeze(2);
        parts.push_back(torch::matmul(torch::tanh(m4 + qc), v));
      }
      score = parts.size() == 1 ? parts[0] : torch::cat(parts, 1);
    } else {
      score = torch::matmul(q, (decodes > 0 ? mem1 : mem).transpose(1, 2));
    }
    const torch::Tensor a = torch::softmax(score, -1);
    const torch::Tensor ctx = torch::matmul(a, decodes > 0 ? mem1 : mem);  // [K, T, H]
    const torch::Tensor logp =
        torch::log_softmax(scale_logits(out->forward(torch::cat({s, ctx}, -1))), -1);
    Seq2SeqOutput o;
    o.actions = forced_long;
    o.log_prob = logp.gather(2, forced_long.unsqueeze(2)).squeeze(2).sum(1);
    o.entropy = -(logp.exp() * logp).sum(-1).mean(1);
    if (keep_attention) o.attention = a;
    return o;
  }

  // Sampling / greedy: step by step, the next input being the device just chosen.
  const bool grad = torch::GradMode::is_enabled();
  torch::Tensor prev = torch::full({k}, options.num_devices(), torch::kLong);  // "go"
  std::vector<torch::Tensor> actions, log_probs, entropies, attention;
  actions.reserve(size_t(t_len));
  log_probs.reserve(size_t(t_len));
  entropies.reserve(size_t(t_len));
  torch::Tensor buf;  // [K, T, H] scratch of the additive attention without autograd
  if (additive && !grad) buf = torch::empty({k, t_len, h}, mem.options());
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> noise;
  for (int64_t t = 0; t < t_len; ++t) {
    auto state = decoder->forward(device_embed->forward(prev), std::make_tuple(hs, cs));
    hs = std::get<0>(state);
    cs = std::get<1>(state);
    const torch::Tensor q = attn_w2->forward(hs);  // [K, H]
    torch::Tensor score;
    if (additive) {
      if (grad) {
        score = torch::matmul(torch::tanh(mem + q.unsqueeze(1)), v);  // [K, T]
      } else {
        torch::add_out(buf, mem, q.unsqueeze(1));
        buf.tanh_();
        score = torch::matmul(buf, v);
      }
    } else {
      score = torch::bmm(mem, q.unsqueeze(-1)).squeeze(-1);
    }
    const torch::Tensor a = torch::softmax(score, -1);
    const torch::Tensor ctx = torch::bmm(a.unsqueeze(1), mem).squeeze(1);  // [K, H]
    torch::Tensor logits = scale_logits(out->forward(torch::cat({hs, ctx}, -1)));
    if (mode == DecodeMode::kSample && logits_noise > 0) {
      // TF: stddev = logits_std_noise * ||logits|| / sqrt(size), from the caller's generator.
      const torch::Tensor l = logits.detach().to(torch::kFloat).contiguous();
      const float* lp = l.data_ptr<float>();
      double sq = 0;
      for (int64_t i = 0; i < l.numel(); ++i) sq += double(lp[i]) * double(lp[i]);
      const float sd = float(logits_noise * std::sqrt(sq / double(l.numel())));
      noise.resize(size_t(l.numel()));
      for (float& z : noise) z = sd * normal(*rng);
      logits = logits + torch::from_blob(noise.data(), l.sizes(), torch::kFloat).clone();
    }
    const torch::Tensor logp = torch::log_softmax(logits, -1);
    torch::Tensor act;
    if (mode == DecodeMode::kGreedy) {
      act = logp.detach().argmax(-1);
    } else {
      act = sample_rows(logp.detach().exp(), *rng);
    }
    log_probs.push_back(logp.gather(1, act.unsqueeze(1)).squeeze(1));
    entropies.push_back(-(logp.exp() * logp).sum(-1));
    actions.push_back(act);
    if (keep_attention) attention.push_back(a);
    prev = act;
  }
  Seq2SeqOutput o;
  o.actions = torch::stack(actions, 1);
  o.log_prob = torch::stack(log_probs, 1).sum(1);
  o.entropy = torch::stack(entropies, 1).mean(1);
  if (keep_attention) o.attention = torch::stack(attention, 1);
  return o;
}

}  // namespace placer
