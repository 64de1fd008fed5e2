#include "models/seq2seq.h"

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

Seq2SeqOutput Seq2SeqPlacerImpl::forward(const torch::Tensor& inputs, DecodeMode mode,
                                         std::mt19937_64* rng, const torch::Tensor& forced,
                                         bool keep_attention, int64_t decodes) {
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

  // Encoder.
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
  torch::Tensor mem = attn_w1->forward(e);  // [K, T, H]
  if (decodes > 0) {
    mem = mem.expand({k, t_len, mem.size(2)});
    hs = hs.expand({k, hs.size(1)});
    cs = cs.expand({k, cs.size(1)});
  }
  const bool additive = options.attention() == "bahdanau";

  // Decoder.
  torch::Tensor prev = torch::full({k}, options.num_devices(), torch::kLong);  // "go"
  std::vector<torch::Tensor> actions, log_probs, entropies, attention;
  actions.reserve(size_t(t_len));
  log_probs.reserve(size_t(t_len));
  entropies.reserve(size_t(t_len));
  for (int64_t t = 0; t < t_len; ++t) {
    auto state = decoder->forward(device_embed->forward(prev), std::make_tuple(hs, cs));
    hs = std::get<0>(state);
    cs = std::get<1>(state);
    const torch::Tensor q = attn_w2->forward(hs);  // [K, H]
    torch::Tensor score;
    if (additive) {
      score = attn_v->forward(torch::tanh(mem + q.unsqueeze(1))).squeeze(-1);  // [K, T]
    } else {
      score = torch::bmm(mem, q.unsqueeze(-1)).squeeze(-1);
    }
    const torch::Tensor a = torch::softmax(score, -1);
    const torch::Tensor ctx = torch::bmm(a.unsqueeze(1), mem).squeeze(1);  // [K, H]
    torch::Tensor logits = out->forward(torch::cat({hs, ctx}, -1));
    if (options.tanh_constant() > 0) {
      const double c = options.tanh_constant();
      logits = c * torch::tanh(logits / c);
    }
    const torch::Tensor logp = torch::log_softmax(logits, -1);
    torch::Tensor act;
    if (mode == DecodeMode::kForced) {
      act = forced_long.select(1, t);
    } else if (mode == DecodeMode::kGreedy) {
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
