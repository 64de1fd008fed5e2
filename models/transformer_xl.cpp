#include "models/transformer_xl.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "src/util/error.h"

namespace placer {

TransformerXLOptions::TransformerXLOptions(int64_t d_model, int64_t heads)
    : d_model_(d_model), heads_(heads), ffn_(4 * d_model) {}

torch::Tensor rel_shift(const torch::Tensor& x, int64_t klen) {
  PLACER_CHECK(x.dim() >= 2, "rel_shift: need [..., qlen, R], got " << x.sizes());
  const int64_t qlen = x.size(-2);
  const int64_t r = x.size(-1);
  PLACER_CHECK(r == klen + qlen - 1, "rel_shift: expected " << klen + qlen - 1
                                                              << " relative positions, got " << r);
  // Pad one zero column, view as [r+1, qlen], drop the first row: row i is then
  // x[i] shifted left by qlen-1-i (Dai et al. 2019, appendix B).
  auto lead = x.sizes().slice(0, x.dim() - 2).vec();
  auto pad_shape = lead;
  pad_shape.insert(pad_shape.end(), {qlen, 1});
  auto padded = torch::cat({torch::zeros(pad_shape, x.options()), x}, -1);
  auto view_shape = lead;
  view_shape.insert(view_shape.end(), {r + 1, qlen});
  auto out_shape = lead;
  out_shape.insert(out_shape.end(), {qlen, r});
  auto shifted = padded.reshape(view_shape).narrow(-2, 1, r).reshape(out_shape);
  return shifted.narrow(-1, 0, klen);
}

torch::Tensor relative_sinusoids(int64_t qlen, int64_t klen, int64_t d,
                                 const torch::TensorOptions& options) {
  PLACER_CHECK(d % 2 == 0, "relative_sinusoids: d_model must be even, got " << d);
  // Made on the caller's device (no host-to-device copy per layer call on a GPU).
  const auto on = torch::TensorOptions(torch::kFloat).device(options.device());
  auto pos = torch::arange(klen - 1, -qlen, -1, on);  // klen-1 .. -(qlen-1)
  auto inv_freq = 1.0 / torch::pow(10000.0, torch::arange(0, d, 2, on) / d);
  auto angles = torch::outer(pos, inv_freq);
  return torch::cat({angles.sin(), angles.cos()}, 1)
      .to(torch::TensorOptions().dtype(options.dtype()));
}

TransformerXLLayerImpl::TransformerXLLayerImpl(const TransformerXLOptions& opts) : options(opts) {
  const int64_t d = opts.d_model();
  PLACER_CHECK(opts.heads() > 0 && d % opts.heads() == 0,
               "TransformerXL: d_model " << d << " not divisible by heads " << opts.heads());
  const int64_t dh = d / opts.heads();
  qkv = register_module("qkv", torch::nn::Linear(torch::nn::LinearOptions(d, 3 * d).bias(false)));
  r_net = register_module("r_net", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(false)));
  o_net = register_module("o_net", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(false)));
  // Small random u, v (zeros would make their gradient test vacuous on step one only).
  r_w_bias = register_parameter("r_w_bias", 0.02 * torch::randn({opts.heads(), dh}));
  r_r_bias = register_parameter("r_r_bias", 0.02 * torch::randn({opts.heads(), dh}));
  norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  ff1 = register_module("ff1", torch::nn::Linear(d, opts.ffn()));
  ff2 = register_module("ff2", torch::nn::Linear(opts.ffn(), d));
  norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  drop = register_module("drop", torch::nn::Dropout(opts.dropout()));
}

torch::Tensor TransformerXLLayerImpl::forward(const torch::Tensor& h, const torch::Tensor& mem,
                                              const torch::Tensor& mask) {
  const int64_t d = options.d_model();
  const int64_t nh = options.heads();
  const int64_t dh = d / nh;
  PLACER_CHECK(h.dim() == 2 && h.size(1) == d,
               "TransformerXL: input must be [T, " << d << "], got " << h.sizes());
  const int64_t qlen = h.size(0);
  auto cat = (mem.defined() && mem.numel() > 0) ? torch::cat({mem, h}, 0) : h;
  const int64_t klen = cat.size(0);

  auto heads = qkv->forward(cat).view({klen, 3, nh, dh});
  auto q = heads.select(1, 0).narrow(0, klen - qlen, qlen);  // [qlen, nh, dh]
  auto k = heads.select(1, 1);                                // [klen, nh, dh]
  auto v = heads.select(1, 2);
  auto pos = relative_sinusoids(qlen, klen, d, h.options());
  auto r = r_net->forward(pos).view({klen + qlen - 1, nh, dh});

  // Terms (a)+(c): content with global content bias u; (b)+(d): position with bias v.
  auto ac = torch::einsum("ind,jnd->nij", {q + r_w_bias, k});                 // [nh, qlen, klen]
  auto bd = torch::einsum("ind,jnd->nij", {q + r_r_bias, r});                 // [nh, qlen, R]
  auto scores = (ac + rel_shift(bd, klen)) * (1.0 / std::sqrt(static_cast<double>(dh)));
  if (mask.defined()) {
    PLACER_CHECK(mask.dim() == 2 && mask.size(0) == qlen && mask.size(1) == klen,
                 "TransformerXL: mask must be [" << qlen << ", " << klen << "], got "
                                                 << mask.sizes());
    // The mask may come from elsewhere (a CPU mask for GPU scores): on the scores' device.
    scores = scores.masked_fill(mask.to(scores.device(), torch::kBool).unsqueeze(0),
                                -std::numeric_limits<float>::infinity());
  }
  auto prob = drop->forward(torch::softmax(scores, -1));
  auto attn = torch::einsum("nij,jnd->ind", {prob, v}).reshape({qlen, d});
  auto x = norm1->forward(h + drop->forward(o_net->forward(attn)));
  auto ff = ff2->forward(drop->forward(torch::relu(ff1->forward(x))));
  return norm2->forward(x + drop->forward(ff));
}

torch::Tensor TransformerXLLayerImpl::forward_segments(const torch::Tensor& h,
                                                       const torch::Tensor& mem,
                                                       const torch::Tensor& key_valid) {
  const int64_t d = options.d_model();
  const int64_t nh = options.heads();
  const int64_t dh = d / nh;
  PLACER_CHECK(h.dim() == 3 && h.size(2) == d,
               "TransformerXL: segments must be [S, T, " << d << "], got " << h.sizes());
  const int64_t ns = h.size(0);
  const int64_t qlen = h.size(1);
  const int64_t mlen = mem.size(1);
  const int64_t klen = mlen + qlen;
  PLACER_CHECK(mem.dim() == 3 && mem.size(0) == ns && key_valid.size(0) == ns &&
                   key_valid.size(1) == klen,
               "TransformerXL: memory " << mem.sizes() << " / key mask " << key_valid.sizes()
                                        << " do not match segments " << h.sizes());
  auto cat = mlen > 0 ? torch::cat({mem, h}, 1) : h;                    // [S, K, d]
  auto heads = qkv->forward(cat).view({ns, klen, 3, nh, dh}).permute({2, 0, 3, 1, 4});
  auto q = heads[0].narrow(2, mlen, qlen);                                // [S, nh, T, dh]
  auto k = heads[1];                                                      // [S, nh, K, dh]
  auto v = heads[2];
  auto pos = relative_sinusoids(qlen, klen, d, h.options());
  auto r = r_net->forward(pos).view({klen + qlen - 1, nh, dh}).permute({1, 2, 0});  // [nh,dh,R]
  auto ac = torch::matmul(q + r_w_bias.unsqueeze(1), k.transpose(-1, -2));  // [S, nh, T, K]
  auto bd = torch::matmul(q + r_r_bias.unsqueeze(1), r);                    // [S, nh, T, R]
  auto scores = (ac + rel_shift(bd, klen)) * (1.0 / std::sqrt(static_cast<double>(dh)));
  scores = scores.masked_fill(key_valid.to(scores.device()).logical_not().view({ns, 1, 1, klen}),
                              -std::numeric_limits<float>::infinity());
  auto prob = drop->forward(torch::softmax(scores, -1));
  auto attn = torch::matmul(prob, v).permute({0, 2, 1, 3}).reshape({ns, qlen, d});
  auto x = norm1->forward(h + drop->forward(o_net->forward(attn)));
  auto ff = ff2->forward(drop->forward(torch::relu(ff1->forward(x))));
  return norm2->forward(x + drop->forward(ff));
}

TransformerXLImpl::TransformerXLImpl(const TransformerXLOptions& opts) : options(opts) {
  PLACER_CHECK(opts.layers() > 0 && opts.segment() > 0 && opts.mem_len() >= 0,
               "TransformerXL: need layers > 0, segment > 0, mem_len >= 0");
  for (int64_t l = 0; l < opts.layers(); ++l) {
    layers.push_back(register_module("layer" + std::to_string(l), TransformerXLLayer(opts)));
  }
}

TransformerXLOutput TransformerXLImpl::forward(const torch::Tensor& x,
                                               const std::vector<torch::Tensor>& mems,
                                               const torch::Tensor& mask) {
  const auto nl = static_cast<size_t>(options.layers());
  PLACER_CHECK(mems.empty() || mems.size() == nl,
               "TransformerXL: expected " << nl << " memories, got " << mems.size());
  TransformerXLOutput result;
  auto h = x;
  for (size_t l = 0; l < nl; ++l) {
    torch::Tensor mem = mems.empty() ? torch::Tensor() : mems[l];
    // The memory of layer l is the input of layer l: previous and current, last mem_len rows.
    {
      torch::NoGradGuard no_grad;
      auto all = (mem.defined() && mem.numel() > 0) ? torch::cat({mem, h.detach()}, 0)
                                                     : h.detach();
      const int64_t keep = std::min<int64_t>(options.mem_len(), all.size(0));
      result.mems.push_back(all.narrow(0, all.size(0) - keep, keep).clone());
    }
    h = layers[l]->forward(h, mem.defined() ? mem.detach() : mem, mask);
  }
  result.out = h;
  return result;
}

TransformerXLOutput TransformerXLImpl::forward_sequence(const torch::Tensor& x) {
  PLACER_CHECK(x.dim() == 2, "TransformerXL: sequence must be [N, d], got " << x.sizes());
  const int64_t n = x.size(0);
  const int64_t d = options.d_model();
  if (n == 0) return {x.new_empty({0, d}), {}};
  const int64_t t = options.segment();
  const int64_t m = options.mem_len();
  const int64_t ns = (n + t - 1) / t;
  // Key validity per segment: memory rows at global positions s*t - m + j (j < m) exist when
  // >= 0; current rows s*t + i exist when < n.
  const auto long_on_x = torch::TensorOptions(torch::kLong).device(x.device());
  auto seg = torch::arange(ns, long_on_x).unsqueeze(1);
  auto j = torch::arange(m + t, long_on_x).unsqueeze(0);
  auto gpos = seg * t - m + j;  // [S, M+T]
  auto key_valid = (gpos >= 0).logical_and(gpos < n);
  TransformerXLOutput result;
  auto h = x;  // [N, d] input of the current layer
  for (auto& layer : layers) {
    torch::Tensor mem;
    {
      torch::NoGradGuard no_grad;
      // Memories after the last segment: the last min(m, n) inputs of this layer.
      const int64_t keep = std::min(m, n);
      result.mems.push_back(h.detach().narrow(0, n - keep, keep).clone());
      // Segment s's memory: rows s*t - m .. s*t - 1 of the input (zeros where < 0).
      auto padded = torch::cat({torch::zeros({m, d}, h.options()), h.detach()}, 0);
      if (m > 0) {
        mem = padded.narrow(0, 0, (ns - 1) * t + m)
                  .unfold(0, m, t)       // [S, d, m]: window s starts at row s*t of padded
                  .permute({0, 2, 1})
                  .contiguous();
      } else {
        mem = torch::zeros({ns, 0, d}, h.options());
      }
    }
    auto cur = h;
    if (ns * t > n) cur = torch::cat({h, torch::zeros({ns * t - n, d}, h.options())}, 0);
    cur = cur.view({ns, t, d});
    // Segments go through the layer in chunks so that the attention scores of one call stay
    // near options.max_scores floats (default 2^24, 64 MiB): a 115k-node graph would
    // otherwise hold ~1 GiB of scores at once.
    const int64_t per_segment = options.heads() * t * (2 * (m + t) + t);
    const int64_t chunk = std::max<int64_t>(1, options.max_scores() / per_segment);
    std::vector<torch::Tensor> parts;
    for (int64_t c = 0; c < ns; c += chunk) {
      const int64_t len = std::min(chunk, ns - c);
      parts.push_back(layer->forward_segments(cur.narrow(0, c, len), mem.narrow(0, c, len),
                                              key_valid.narrow(0, c, len)));
    }
    h = (parts.size() == 1 ? parts[0] : torch::cat(parts, 0)).reshape({ns * t, d}).narrow(0, 0, n);
  }
  result.out = h;
  return result;
}

TransformerXLOutput TransformerXLImpl::forward_sequence_stepwise(const torch::Tensor& x) {
  PLACER_CHECK(x.dim() == 2, "TransformerXL: sequence must be [N, d], got " << x.sizes());
  const int64_t n = x.size(0);
  const int64_t s = options.segment();
  std::vector<torch::Tensor> outs;
  TransformerXLOutput step;
  for (int64_t start = 0; start < n; start += s) {
    step = forward(x.narrow(0, start, std::min(s, n - start)), step.mems);
    outs.push_back(step.out);
  }
  if (outs.empty()) return {x.new_empty({0, options.d_model()}), {}};
  return {torch::cat(outs, 0), step.mems};
}

SuperpositionImpl::SuperpositionImpl(int64_t d, int64_t cond_dim) {
  c = register_module("c", torch::nn::Linear(cond_dim, d));
  g = register_module("g", torch::nn::Linear(d, d));
}

torch::Tensor SuperpositionImpl::forward(const torch::Tensor& x, const torch::Tensor& x0) {
  auto gate = c->forward(x0.dim() == 1 ? x0.unsqueeze(0) : x0);  // [1, d], broadcast over nodes
  return torch::relu(g->forward(gate * x));
}

DeviceHeadImpl::DeviceHeadImpl(int64_t d, int64_t max_devices_) : max_devices(max_devices_) {
  PLACER_CHECK(max_devices_ > 0, "DeviceHead: max_devices must be positive");
  proj = register_module("proj", torch::nn::Linear(d, max_devices_));
}

torch::Tensor DeviceHeadImpl::forward(const torch::Tensor& h, const torch::Tensor& available) {
  PLACER_CHECK(available.size(-1) == max_devices,
               "DeviceHead: availability mask must have " << max_devices << " columns");
  auto avail = available.to(h.device(), torch::kBool);
  PLACER_CHECK(avail.any(-1).all().item<bool>(), "DeviceHead: no device available for a node");
  return proj->forward(h).masked_fill(avail.logical_not(),
                                      -std::numeric_limits<float>::infinity());
}

torch::Tensor DeviceHeadImpl::first_devices(int64_t num_devices, torch::Device device) const {
  PLACER_CHECK(num_devices > 0 && num_devices <= max_devices,
               "DeviceHead: device count " << num_devices << " outside [1, " << max_devices
                                           << "]");
  return torch::arange(max_devices, torch::TensorOptions(torch::kLong).device(device)) <
         num_devices;
}

}  // namespace placer
