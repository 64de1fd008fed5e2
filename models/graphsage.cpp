#include "models/graphsage.h"

#include <mutex>
#include <string>

#include <torch/torch.h>
#include <torch/version.h>

#include "src/util/error.h"

namespace placer {
namespace {

// scatter_reduce() prints a one-time "is in beta" warning (TORCH_WARN_ONCE) on stderr; it
// would show up in every CLI run. Consume it once with a silent handler.
// The handler API changed in PyTorch 2 (process(const Warning&), WarningUtils' guard).
class SilentWarnings : public c10::WarningHandler {
 public:
#if TORCH_VERSION_MAJOR >= 2
  void process(const c10::Warning&) override {}
#else
  void process(const c10::SourceLocation&, const std::string&, const bool) override {}
#endif
};

void consume_scatter_reduce_warning() {
  static std::once_flag once;
  std::call_once(once, [] {
    SilentWarnings silent;
#if TORCH_VERSION_MAJOR >= 2
    c10::WarningUtils::WarningHandlerGuard guard(&silent);
#else
    c10::Warning::WarningHandlerGuard guard(&silent);
#endif
    auto t = torch::zeros({1});
    (void)t.scatter_reduce(0, torch::zeros({1}, torch::kLong), t, "amax", false);
  });
}

}  // namespace

torch::Tensor csr_segment_max(const torch::Tensor& messages, const torch::Tensor& off,
                              const torch::Tensor& idx) {
  PLACER_CHECK(messages.dim() == 2, "csr_segment_max: messages must be [N, D]");
  const int64_t n = off.size(0) - 1;
  const int64_t d = messages.size(1);
  auto off64 = off.to(messages.device(), torch::kLong);
  auto idx64 = idx.to(messages.device(), torch::kLong);
  auto out = torch::zeros({n, d}, messages.options());
  if (idx64.numel() == 0) return out;
  consume_scatter_reduce_warning();
  // Segment id of every entry of the flattened neighbour list.
  auto degree = off64.slice(0, 1) - off64.slice(0, 0, n);
  auto segment = torch::repeat_interleave(torch::arange(n, off64.options()), degree);
  auto gathered = messages.index_select(0, idx64);  // [E, D]
  // include_self=false: a row that receives entries is their exact max; a row that receives
  // none keeps its initial zeros (the "no neighbour" vector).
  return out.scatter_reduce(0, segment.unsqueeze(1).expand({segment.size(0), d}), gathered,
                            "amax", /*include_self=*/false);
}

GraphSageImpl::GraphSageImpl(const GraphSageOptions& opts) : options(opts) {
  PLACER_CHECK(options.in_dim() >= 0 && options.hidden() > 0 && options.layers() >= 1 &&
                   options.op_type_vocab() >= 0 && options.op_type_embedding() > 0,
               "GraphSageOptions: need in_dim >= 0, hidden > 0, layers >= 1, "
               "op_type_vocab >= 0, op_type_embedding > 0");
  int64_t in = options.in_dim();
  if (options.op_type_vocab() > 0) {
    op_embedding = register_module(
        "op_embedding",
        torch::nn::Embedding(options.op_type_vocab(), options.op_type_embedding()));
    in += options.op_type_embedding();
  }
  PLACER_CHECK(in > 0, "GraphSageOptions: the layer-0 input width is 0");
  const int64_t h = options.hidden();
  for (int64_t k = 0; k < options.layers(); ++k) {
    const std::string s = std::to_string(k);
    pool_in.push_back(register_module("pool_in" + s, torch::nn::Linear(in, h)));
    pool_out.push_back(register_module("pool_out" + s, torch::nn::Linear(in, h)));
    combine.push_back(register_module("combine" + s, torch::nn::Linear(in + 2 * h, h)));
    in = h;
  }
}

torch::Tensor GraphSageImpl::forward(const torch::Tensor& x, const torch::Tensor& op_type,
                                     const torch::Tensor& in_off, const torch::Tensor& in_idx,
                                     const torch::Tensor& out_off,
                                     const torch::Tensor& out_idx) {
  PLACER_CHECK(x.dim() == 2 && x.size(1) == options.in_dim(),
               "GraphSage: x must be [N, " + std::to_string(options.in_dim()) + "]");
  const int64_t n = x.size(0);
  PLACER_CHECK(in_off.numel() == n + 1 && out_off.numel() == n + 1,
               "GraphSage: CSR offsets must have N+1 entries");
  torch::Tensor h = x;
  if (op_embedding) {
    PLACER_CHECK(op_type.numel() == n, "GraphSage: op_type must have N entries");
    h = torch::cat({op_embedding->forward(op_type.to(x.device(), torch::kLong)), x}, 1);
  }
  for (size_t k = 0; k < combine.size(); ++k) {
    auto a_in = csr_segment_max(torch::relu(pool_in[k]->forward(h)), in_off, in_idx);
    auto a_out = csr_segment_max(torch::relu(pool_out[k]->forward(h)), out_off, out_idx);
    h = torch::relu(combine[k]->forward(torch::cat({h, a_in, a_out}, 1)));
    if (options.normalize()) {
      h = torch::nn::functional::normalize(
          h, torch::nn::functional::NormalizeFuncOptions().p(2).dim(1).eps(1e-12));
    }
  }
  return h;
}

}  // namespace placer
