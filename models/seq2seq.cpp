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

namespace {

/// Checks forward's arguments (ValidationError) and returns the forced actions as int64
/// (undefined unless mode is kForced).
torch::Tensor checked_forced_actions(const Seq2SeqOptions& options, const torch::Tensor& inputs,
                                     DecodeMode mode, const std::mt19937_64* rng,
                                     const torch::Tensor& forced, int64_t decodes,
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
  if (mode != DecodeMode::kForced) return {};
  if (!forced.defined() || forced.dim() != 2 || forced.size(0) != k || forced.size(1) != t_len) {
    throw ValidationError("Seq2SeqPlacer: forced actions must be [K, T] = [" +
                          std::to_string(k) + ", " + std::to_string(t_len) + "]");
  }
  torch::Tensor forced_long = forced.to(torch::kLong);
  if (forced_long.min().item<int64_t>() < 0 ||
      forced_long.max().item<int64_t>() >= options.num_devices())
    throw ValidationError("Seq2SeqPlacer: forced device index out of range");
  return forced_long;
}

/// Additive attention scores of all decoder steps at once: score[k, t, i] = v . tanh(m[k, i]
/// + q[k, t]), q [K, T, H], memory [K or 1, T, H]; in chunks of decoder steps so that a
/// chunk's [K, c, T, H] stays near 4M floats (16 MB, under glibc's largest mmap threshold, so
/// the blocks get reused).
torch::Tensor additive_scores(const torch::Tensor& q, const torch::Tensor& memory,
                              const torch::Tensor& v) {
  const int64_t k = q.size(0), t_len = q.size(1), h = q.size(2);
  const torch::Tensor m4 = memory.unsqueeze(1);  // [K|1, 1, T, H]
  const int64_t chunk =
      std::max<int64_t>(1, (int64_t(1) << 22) / std::max<int64_t>(1, k * t_len * h));
  std::vector<torch::Tensor> parts;
  for (int64_t t0 = 0; t0 < t_len; t0 += chunk) {
    const torch::Tensor qc = q.slice(1, t0, std::min(t_len, t0 + chunk)).unsqueeze(2);
    parts.push_back(torch::matmul(torch::tanh(m4 + qc), v));
  }
  return parts.size() == 1 ? parts[0] : torch::cat(parts, 1);
}

/// Adds Gaussian noise to `logits` as TF does: stddev = noise * ||logits|| / sqrt(size),
/// drawn with `normal` from `rng` into the scratch `buf`.
torch::Tensor add_logits_noise(const torch::Tensor& logits, double noise,
                               std::normal_distribution<float>& normal, std::mt19937_64& rng,
                               std::vector<float>& buf) {
  const torch::Tensor l = logits.detach().to(torch::kFloat).contiguous();
  const float* lp = l.data_ptr<float>();
  double sq = 0;
  for (int64_t i = 0; i < l.numel(); ++i) sq += double(lp[i]) * double(lp[i]);
  const float sd = float(noise * std::sqrt(sq / double(l.numel())));
  buf.resize(size_t(l.numel()));
  for (float& z : buf) z = sd * normal(rng);
  return logits + torch::from_blob(buf.data(), l.sizes(), torch::kFloat).clone();
}

}  // namespace

Seq2SeqOutput Seq2SeqPlacerImpl::forward(const torch::Tensor& inputs, DecodeMode mode,
                                         std::mt19937_64* rng, const torch::Tensor& forced,
                                         bool keep_attention, int64_t decodes,
                                         double logits_noise) {
  const torch::Tensor forced_long =
      checked_forced_actions(options, inputs, mode, rng, forced, decodes, logits_noise);
  const int64_t k = decodes > 0 ? decodes : inputs.size(0);
  Encoded enc = encode(inputs, k, decodes);
  if (mode == DecodeMode::kForced) return decode_forced(enc, forced_long, keep_attention);
  return decode_stepwise(std::move(enc), mode, rng, keep_attention, logits_noise);
}

Seq2SeqPlacerImpl::Encoded Seq2SeqPlacerImpl::encode(const torch::Tensor& inputs, int64_t k,
                                                     int64_t decodes) {
  // Encoder (fused LSTM over the whole sequence).
  const torch::Tensor x = torch::tanh(in_proj->forward(inputs));
  auto lstm = encoder->forward(x);
  const torch::Tensor e = std::get<0>(lstm);                // [K, T, H]
  const torch::Tensor hn = std::get<0>(std::get<1>(lstm));  // [dirs, K, H/dirs]
  const torch::Tensor cn = std::get<1>(std::get<1>(lstm));
  Encoded enc;
  if (options.bidirectional()) {
    enc.hs = torch::cat({hn[0], hn[1]}, -1);
    enc.cs = torch::cat({cn[0], cn[1]}, -1);
  } else {
    enc.hs = hn[0];
    enc.cs = cn[0];
  }
  enc.memory = attn_w1->forward(e);  // [K or 1, T, H]
  enc.expanded = enc.memory;
  if (decodes > 0) {
    const int64_t t_len = inputs.size(1);
    enc.expanded = enc.memory.expand({k, t_len, enc.memory.size(2)});
    enc.hs = enc.hs.expand({k, enc.hs.size(1)});
    enc.cs = enc.cs.expand({k, enc.cs.size(1)});
  }
  return enc;
}

Seq2SeqOutput Seq2SeqPlacerImpl::decode_forced(const Encoded& enc, const torch::Tensor& forced_long,
                                               bool keep_attention) {
  // Teacher forcing: the decoder's inputs are the forced devices shifted by one ("go"
  // first), so the decoder LSTM runs fused over the sequence, then the attention and the
  // logits of all steps at once.
  const int64_t k = forced_long.size(0), t_len = forced_long.size(1);
  const torch::Tensor prev = torch::cat({torch::full({k, 1}, options.num_devices(), torch::kLong),
                                         forced_long.slice(1, 0, t_len - 1)},
                                        1);
  auto dec =
      torch::lstm(device_embed->forward(prev),
                  {enc.hs.unsqueeze(0).contiguous(), enc.cs.unsqueeze(0).contiguous()},
                  {decoder->weight_ih, decoder->weight_hh, decoder->bias_ih, decoder->bias_hh},
                  /*has_biases=*/true, /*num_layers=*/1, /*dropout=*/0.0,
                  /*train=*/is_training(), /*bidirectional=*/false,
                  /*batch_first=*/true);
  const torch::Tensor s = std::get<0>(dec);     // [K, T, H]
  const torch::Tensor q = attn_w2->forward(s);  // [K, T, H]
  // [K, T (decoder), T (memory)]; the memory unexpanded, broadcast over the decodes.
  const torch::Tensor score =
      options.attention() == "bahdanau"
          ? additive_scores(q, enc.memory, attn_v->weight.reshape({q.size(2)}))
          : torch::matmul(q, enc.memory.transpose(1, 2));
  const torch::Tensor a = torch::softmax(score, -1);
  const torch::Tensor ctx = torch::matmul(a, enc.memory);  // [K, T, H]
  const torch::Tensor logp =
      torch::log_softmax(scale_logits(out->forward(torch::cat({s, ctx}, -1))), -1);
  Seq2SeqOutput o;
  o.actions = forced_long;
  o.log_prob = logp.gather(2, forced_long.unsqueeze(2)).squeeze(2).sum(1);
  o.entropy = -(logp.exp() * logp).sum(-1).mean(1);
  if (keep_attention) o.attention = a;
  return o;
}

Seq2SeqOutput Seq2SeqPlacerImpl::decode_stepwise(Encoded enc, DecodeMode mode, std::mt19937_64* rng,
                                                 bool keep_attention, double logits_noise) {
  // Sampling / greedy: step by step, the next input being the device just chosen.
  const torch::Tensor& mem = enc.expanded;  // [K, T, H]
  const int64_t k = mem.size(0), t_len = mem.size(1), h = options.hidden();
  const bool additive = options.attention() == "bahdanau";
  const torch::Tensor v = attn_v->weight.reshape({h});  // [H]
  const bool grad = torch::GradMode::is_enabled();
  torch::Tensor hs = enc.hs, cs = enc.cs;
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
      logits = add_logits_noise(logits, logits_noise, normal, *rng, noise);
    }
    const torch::Tensor logp = torch::log_softmax(logits, -1);
    const torch::Tensor act = mode == DecodeMode::kGreedy ? logp.detach().argmax(-1)
                                                          : sample_rows(logp.detach().exp(), *rng);
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
