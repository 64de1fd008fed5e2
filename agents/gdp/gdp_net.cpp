// GDP network: observation -> tensors, the GraphSAGE + superposition + Transformer-XL +
// device-head stack, and the action helpers (greedy, sampling, log-probabilities).
#include "agents/gdp/gdp_net.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <torch/nn/functional/activation.h>

#include "src/util/error.h"

namespace placer {
namespace {

/// A CPU int64 tensor copied from any integer vector.
template <typename T>
torch::Tensor to_long_tensor(const std::vector<T>& v) {
  auto t = torch::empty({int64_t(v.size())}, torch::kLong);
  int64_t* p = t.data_ptr<int64_t>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = int64_t(v[i]);
  return t;
}

}  // namespace

GraphTensors to_tensors(const PlacementEnv& env) {
  const NodeFeatures& f = env.observation();
  const int64_t n = f.num_nodes;
  const int64_t dim = f.dim;
  PLACER_CHECK(n > 0, "GDP: the observation has no nodes");
  PLACER_CHECK(f.x.size() == size_t(n * dim),
               "GDP: feature matrix has " << f.x.size() << " values, expected " << n * dim);
  const int64_t u = env.num_units();
  const int64_t m = env.max_devices();
  PLACER_CHECK(env.unit_of_op().size() == size_t(n),
               "GDP: unit map has " << env.unit_of_op().size() << " entries for " << n << " ops");
  PLACER_CHECK(env.action_mask().size() == size_t(u * m), "GDP: action mask has "
                                                              << env.action_mask().size()
                                                              << " entries, expected " << u * m);

  GraphTensors t;
  t.x = torch::from_blob(const_cast<float*>(f.x.data()), {n, dim}, torch::kFloat).clone();
  t.op_type = to_long_tensor(f.op_type);
  t.in_off = to_long_tensor(f.in_off);
  t.in_idx = to_long_tensor(f.in_idx);
  t.out_off = to_long_tensor(f.out_off);
  t.out_idx = to_long_tensor(f.out_idx);
  t.order = to_long_tensor(f.order);
  t.unit_of_node = to_long_tensor(env.unit_of_op());
  t.num_units = u;

  std::vector<float> count(size_t(u), 0.f);
  for (int unit : env.unit_of_op()) {
    PLACER_CHECK(unit >= 0 && unit < u, "GDP: unit " << unit << " outside [0, " << u << ")");
    count[size_t(unit)] += 1.f;
  }
  for (int64_t k = 0; k < u; ++k) {
    PLACER_CHECK(count[size_t(k)] > 0, "GDP: unit " << k << " has no op");
  }
  t.unit_count = torch::tensor(count, torch::kFloat);

  t.mask = torch::empty({u, m}, torch::kBool);
  bool* mp = t.mask.data_ptr<bool>();
  for (size_t i = 0; i < env.action_mask().size(); ++i) mp[i] = env.action_mask()[i] != 0;

  auto extra = torch::tensor({float(std::log1p(double(n)) / 10.0),
                              float(double(env.allowed_devices().size()) / double(m))},
                             torch::kFloat);
  t.cond = torch::cat({t.x.mean(0), extra}, 0);
  return t;
}

GdpNetImpl::GdpNetImpl(const GdpNetConfig& cfg, int64_t feature_dim, int64_t op_vocab)
    : config(cfg) {
  const std::string why = validate_net_config(cfg);
  PLACER_CHECK(why.empty(), "GdpNetConfig: " << why);
  PLACER_CHECK(feature_dim > 0 && op_vocab > 0,
               "GDP: feature width and op vocabulary must be positive");
  const bool embed = cfg.op_embedding > 0;
  sage = register_module("sage", GraphSage(GraphSageOptions(feature_dim, cfg.hidden)
                                               .layers(cfg.sage_layers)
                                               .op_type_vocab(embed ? op_vocab : 0)
                                               .op_type_embedding(embed ? cfg.op_embedding : 1)));
  if (cfg.superposition) {
    cond = register_module("cond", Superposition(cfg.hidden, feature_dim + 2));
  }
  txl = register_module("txl", TransformerXL(TransformerXLOptions(cfg.hidden, cfg.heads)
                                                 .layers(cfg.txl_layers)
                                                 .ffn(cfg.ffn)
                                                 .segment(cfg.segment)
                                                 .mem_len(cfg.mem_len)));
  head = register_module("head", DeviceHead(cfg.hidden, cfg.max_devices));
}

torch::Tensor GdpNetImpl::forward(const GraphTensors& t) {
  PLACER_CHECK(t.mask.dim() == 2 && t.mask.size(1) == config.max_devices,
               "GDP: the action mask has " << (t.mask.dim() == 2 ? t.mask.size(1) : -1)
                                           << " device columns but the network has "
                                           << config.max_devices
                                           << " (env max_devices must equal the policy's)");
  auto h = sage->forward(t.x, t.op_type, t.in_off, t.in_idx, t.out_off, t.out_idx);
  if (cond) h = h + cond->forward(h, t.cond);
  // Transformer-XL over the nodes in topological order (inputs scaled to O(1) entries, see
  // gdp_net.h), then back to node order.
  h = h * std::sqrt(double(config.hidden));
  auto z_seq = txl->forward_sequence(h.index_select(0, t.order)).out;
  auto z = torch::zeros_like(z_seq).index_copy(0, t.order, z_seq);
  // Every op of a unit shares the unit's mask, so -inf entries only meet -inf entries in
  // the per-unit sum (no inf - inf).
  auto node_logits = head->forward(z, t.mask.index_select(0, t.unit_of_node));
  auto sum = torch::zeros({t.num_units, config.max_devices}, node_logits.options())
                 .index_add(0, t.unit_of_node, node_logits);
  auto unit_logits = sum / t.unit_count.unsqueeze(1);
  return unit_logits.masked_fill(t.mask.logical_not(), -std::numeric_limits<float>::infinity());
}

std::vector<int> greedy_action(const torch::Tensor& unit_logits) {
  PLACER_CHECK(unit_logits.dim() == 2, "greedy_action: need [U, D] logits");
  auto l = unit_logits.detach().to(torch::kCPU, torch::kFloat).contiguous();
  const int64_t u = l.size(0), d = l.size(1);
  const float* p = l.data_ptr<float>();
  std::vector<int> action(size_t(u), 0);
  for (int64_t i = 0; i < u; ++i) {
    int best = 0;
    for (int64_t j = 1; j < d; ++j) {
      if (p[i * d + j] > p[i * d + best]) best = int(j);
    }
    action[size_t(i)] = best;
  }
  return action;
}

std::vector<int> sample_action(const torch::Tensor& unit_probs, std::mt19937_64& rng) {
  PLACER_CHECK(unit_probs.dim() == 2, "sample_action: need [U, D] probabilities");
  auto pr = unit_probs.detach().to(torch::kCPU, torch::kFloat).contiguous();
  const int64_t u = pr.size(0), d = pr.size(1);
  const float* p = pr.data_ptr<float>();
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<int> action(size_t(u), 0);
  for (int64_t i = 0; i < u; ++i) {
    const float* row = p + i * d;
    double total = 0;
    int last = -1;  // last device with positive probability (rounding fallback)
    for (int64_t j = 0; j < d; ++j) {
      if (row[j] > 0) {
        total += row[j];
        last = int(j);
      }
    }
    PLACER_CHECK(last >= 0, "sample_action: unit " << i << " has no device with probability > 0");
    // Inverse CDF over the positive entries, scaled by their sum (rows need not sum to
    // exactly 1 in float).
    const double r = uniform(rng) * total;
    double cum = 0;
    int chosen = last;
    for (int64_t j = 0; j < d; ++j) {
      if (!(row[j] > 0)) continue;
      cum += row[j];
      if (r < cum) {
        chosen = int(j);
        break;
      }
    }
    action[size_t(i)] = chosen;
  }
  return action;
}

torch::Tensor action_log_probs(const torch::Tensor& unit_logits, const std::vector<int>& action) {
  PLACER_CHECK(unit_logits.dim() == 2 && unit_logits.size(0) == int64_t(action.size()),
               "action_log_probs: " << action.size() << " actions for logits of shape "
                                    << unit_logits.sizes());
  const int64_t d = unit_logits.size(1);
  for (size_t i = 0; i < action.size(); ++i) {
    PLACER_CHECK(action[i] >= 0 && action[i] < d, "action_log_probs: unit "
                                                      << i << " has device " << action[i]
                                                      << " outside [0, " << d << ")");
  }
  // log_softmax of a row with -inf (masked) entries is finite on the allowed entries and its
  // gradient is finite too (d/dx_j = delta - softmax_j, softmax_j = 0 on masked entries); only
  // gathering a masked entry gives -inf, which the check below rejects.
  auto logp = torch::log_softmax(unit_logits, -1);
  auto idx = to_long_tensor(action).to(unit_logits.device()).unsqueeze(1);
  auto out = logp.gather(1, idx).squeeze(1);
  PLACER_CHECK(torch::isfinite(out.detach()).all().item<bool>(),
               "action_log_probs: an action puts a unit on a masked (disallowed) device");
  return out;
}

}  // namespace placer
