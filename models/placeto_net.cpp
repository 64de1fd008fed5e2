#include "models/placeto_net.h"

#include <cmath>
#include <string>

#include <torch/torch.h>

#include "src/util/error.h"

namespace placer {

PlacetoGraphTensors placeto_graph_tensors(int num_nodes, const std::vector<int>& parent_off,
                                          const std::vector<int>& parents,
                                          const std::vector<int>& child_off,
                                          const std::vector<int>& children,
                                          const std::vector<uint8_t>& relation,
                                          const std::vector<uint8_t>& device_mask) {
  const size_t n = size_t(num_nodes);
  if (num_nodes < 1 || parent_off.size() != n + 1 || child_off.size() != n + 1 ||
      relation.size() != n * n || device_mask.empty() ||
      size_t(parent_off.back()) != parents.size() || size_t(child_off.back()) != children.size()) {
    throw ValidationError("placeto_graph_tensors: inconsistent sizes");
  }
  PlacetoGraphTensors g;
  g.num_nodes = num_nodes;
  g.parent_mean = torch::zeros({num_nodes, num_nodes}, torch::kFloat);
  g.child_mean = torch::zeros({num_nodes, num_nodes}, torch::kFloat);
  auto fill = [&](torch::Tensor& t, const std::vector<int>& off, const std::vector<int>& idx) {
    auto a = t.accessor<float, 2>();
    for (size_t v = 0; v < n; ++v) {
      const int deg = off[v + 1] - off[v];
      for (int j = off[v]; j < off[v + 1]; ++j) {
        const int u = idx[size_t(j)];
        if (u < 0 || u >= num_nodes) throw ValidationError("placeto_graph_tensors: bad node id");
        a[int64_t(v)][u] += 1.f / float(deg);
      }
    }
  };
  fill(g.parent_mean, parent_off, parents);
  fill(g.child_mean, child_off, children);
  g.relation = torch::empty({num_nodes, num_nodes}, torch::kLong);
  int64_t* r = g.relation.data_ptr<int64_t>();
  for (size_t i = 0; i < n * n; ++i) r[i] = relation[i];
  g.mask = torch::empty({int64_t(device_mask.size())}, torch::kBool);
  bool* m = g.mask.data_ptr<bool>();
  for (size_t i = 0; i < device_mask.size(); ++i) m[i] = device_mask[i] != 0;
  return g;
}

PlacetoNetImpl::PlacetoNetImpl(const PlacetoNetOptions& o) : options(o) {
  auto fail = [](const std::string& what) { throw ValidationError("PlacetoNet: " + what); };
  if (o.input_dim() < 1) fail("input_dim must be >= 1");
  if (o.max_devices() < 1) fail("max_devices must be >= 1");
  if (o.hidden() < 1) fail("hidden must be >= 1");
  if (o.rounds() < 0) fail("rounds must be >= 0");
  if (o.pool() < 1) fail("pool must be >= 1");
  if (o.policy_hidden() < 1) fail("policy_hidden must be >= 1");
  if (!(o.logit_clip() >= 0) || !std::isfinite(o.logit_clip()))
    fail("logit_clip must be finite and >= 0 (0 = off)");
  const int64_t h = o.hidden(), p = o.pool(), ph = o.policy_hidden();
  node_in = register_module("node_in", torch::nn::Linear(o.input_dim(), h));
  down_self = register_module("down_self", torch::nn::Linear(h, h));
  down_msg = register_module("down_msg", torch::nn::Linear(h, h));
  down_f = register_module("down_f", torch::nn::Linear(h, h));
  up_self = register_module("up_self", torch::nn::Linear(h, h));
  up_msg = register_module("up_msg", torch::nn::Linear(h, h));
  up_f = register_module("up_f", torch::nn::Linear(h, h));
  pool_anc = register_module("pool_anc", torch::nn::Linear(2 * h, p));
  pool_desc = register_module("pool_desc", torch::nn::Linear(2 * h, p));
  pool_par = register_module("pool_par", torch::nn::Linear(2 * h, p));
  p1 = register_module("p1", torch::nn::Linear(2 * h + 3 * p, ph));
  p2 = register_module("p2", torch::nn::Linear(ph, ph));
  p3 = register_module("p3", torch::nn::Linear(ph, o.max_devices()));
}

PlacetoEmbedding PlacetoNetImpl::embed(const torch::Tensor& x, const torch::Tensor& current,
                                       const PlacetoGraphTensors& g) {
  if (x.dim() != 3 || x.size(1) != g.num_nodes || x.size(2) != options.input_dim()) {
    throw ValidationError("PlacetoNet: x must be [B, " + std::to_string(g.num_nodes) + ", " +
                          std::to_string(options.input_dim()) + "]");
  }
  if (current.dim() != 1 || current.size(0) != x.size(0)) {
    throw ValidationError("PlacetoNet: current must be [B]");
  }
  const torch::Tensor e = torch::relu(node_in->forward(x));  // [B, N, H]
  torch::Tensor d = e, a = e;
  const torch::Tensor ds = down_self->forward(e), as = up_self->forward(e);
  for (int64_t k = 0; k < options.rounds(); ++k) {
    d = torch::relu(ds + down_msg->forward(torch::matmul(g.parent_mean, torch::relu(down_f->forward(d)))));
    a = torch::relu(as + up_msg->forward(torch::matmul(g.child_mean, torch::relu(up_f->forward(a)))));
  }
  PlacetoEmbedding out;
  out.nodes = torch::cat({d, a}, -1);  // [B, N, 2H]
  const int64_t b = x.size(0), width = out.nodes.size(2);
  out.current = out.nodes.gather(1, current.view({b, 1, 1}).expand({b, 1, width})).squeeze(1);
  const torch::Tensor rel = g.relation.index_select(0, current);  // [B, N]
  auto pool = [&](torch::nn::Linear& layer, int64_t kind) {
    const torch::Tensor m = (rel == kind).to(torch::kFloat);        // [B, N]
    const torch::Tensor count = m.sum(1, true).clamp_min(1.0);       // [B, 1]
    const torch::Tensor v = torch::relu(layer->forward(out.nodes));  // [B, N, P]
    return torch::bmm(m.unsqueeze(1), v).squeeze(1) / count;         // [B, P]
  };
  out.ancestors = pool(pool_anc, 1);
  out.descendants = pool(pool_desc, 2);
  out.parallel = pool(pool_par, 3);
  return out;
}

torch::Tensor PlacetoNetImpl::forward(const torch::Tensor& x, const torch::Tensor& current,
                                      const PlacetoGraphTensors& g) {
  if (g.mask.size(0) != options.max_devices()) {
    throw ValidationError("PlacetoNet: the device mask has " + std::to_string(g.mask.size(0)) +
                          " entries for max_devices " + std::to_string(options.max_devices()));
  }
  const PlacetoEmbedding emb = embed(x, current, g);
  torch::Tensor z = torch::cat({emb.current, emb.ancestors, emb.descendants, emb.parallel}, -1);
  z = torch::relu(p1->forward(z));
  z = torch::relu(p2->forward(z));
  torch::Tensor logits = p3->forward(z);
  const double clip = options.logit_clip();
  if (clip > 0) logits = clip * torch::tanh(logits / clip);
  return logits.masked_fill(g.mask.logical_not().unsqueeze(0), -1e9);
}

std::vector<int64_t> placeto_sample_rows(const torch::Tensor& probs, std::mt19937_64& rng) {
  const torch::Tensor p = probs.to(torch::kDouble).contiguous();
  const int64_t rows = p.size(0), cols = p.size(1);
  const double* data = p.data_ptr<double>();
  std::vector<int64_t> out(size_t(rows), 0);
  for (int64_t r = 0; r < rows; ++r) {
    const double u = double(rng() >> 11) * 0x1.0p-53;  // portable uniform [0, 1)
    double acc = 0;
    int64_t pick = -1, last = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double v = data[r * cols + c];
      if (v > 0) last = c;
      acc += v;
      if (pick < 0 && u < acc) pick = c;
    }
    out[size_t(r)] = pick >= 0 && data[r * cols + pick] > 0 ? pick : last;
  }
  return out;
}

}  // namespace placer
