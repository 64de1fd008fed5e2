#include "models/grouper.h"

#include <string>

#include <torch/torch.h>

#include "models/seq2seq.h"
#include "src/util/error.h"

namespace placer {

GrouperImpl::GrouperImpl(const GrouperOptions& o) : options(o) {
  auto fail = [](const std::string& what) { throw ValidationError("Grouper: " + what); };
  if (o.input_dim() < 1) fail("input_dim must be >= 1");
  if (o.num_groups() < 1) fail("num_groups must be >= 1");
  if (o.hidden() < 1) fail("hidden must be >= 1");
  if (o.activation() != "none" && o.activation() != "relu" && o.activation() != "tanh")
    fail("unknown activation '" + o.activation() + "' (known: none, relu, tanh)");
  ff = register_module("ff", torch::nn::Linear(o.input_dim(), o.hidden()));
  softmax = register_module("softmax", torch::nn::Linear(o.hidden(), o.num_groups()));
}

torch::Tensor GrouperImpl::forward(const torch::Tensor& x) {
  if (x.dim() != 2 || x.size(1) != options.input_dim()) {
    throw ValidationError("Grouper: input must be [N, " + std::to_string(options.input_dim()) +
                          "]");
  }
  torch::Tensor h = ff->forward(x);
  if (options.activation() == "relu") h = torch::relu(h);
  if (options.activation() == "tanh") h = torch::tanh(h);
  return softmax->forward(h);
}

GrouperOutput GrouperImpl::sample(const torch::Tensor& x, int64_t k, std::mt19937_64* rng) {
  const torch::Tensor logp = torch::log_softmax(forward(x), -1);  // [N, G]
  const int64_t n = logp.size(0);
  GrouperOutput o;
  if (rng == nullptr) {
    o.groups = logp.detach().argmax(-1).unsqueeze(0);
  } else {
    if (k < 1) throw ValidationError("Grouper: k must be >= 1");
    const torch::Tensor p = logp.detach().exp();
    std::vector<torch::Tensor> rows;
    for (int64_t i = 0; i < k; ++i) rows.push_back(sample_rows(p, *rng));
    o.groups = torch::stack(rows, 0);  // [K, N]
  }
  // log p of each sample: gather from [N, G] for every row of groups.
  o.log_prob = logp.unsqueeze(0)
                   .expand({o.groups.size(0), n, logp.size(1)})
                   .gather(2, o.groups.unsqueeze(2))
                   .squeeze(2)
                   .sum(1);
  o.entropy = -(logp.exp() * logp).sum(-1).mean();
  return o;
}

torch::Tensor GrouperImpl::log_prob(const torch::Tensor& x, const torch::Tensor& groups) {
  const torch::Tensor logp = torch::log_softmax(forward(x), -1);
  return logp.unsqueeze(0)
      .expand({groups.size(0), logp.size(0), logp.size(1)})
      .gather(2, groups.to(torch::kLong).unsqueeze(2))
      .squeeze(2)
      .sum(1);
}

}  // namespace placer
