// The c10d process group of distributed GDP training (agents/gdp/gdp_dist_group.h): a TCPStore
// (or FileStore) rendezvous, ProcessGroupGloo for everything on a CPU run (and for the small
// values and strings of a GPU run), ProcessGroupNCCL for the gradients and parameters of a
// GPU run when LibTorch has it (USE_C10D_NCCL; else Gloo reduces CPU copies), and the
// collectives with timeouts and clear errors. The NCCL path compiles only against a CUDA
// LibTorch and is untested in this project (no GPU; docs/distributed.md).
#include "agents/gdp/gdp_dist_group.h"

#include <algorithm>
#include <cstring>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace placer {

struct DistGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
#ifdef USE_C10D_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;  // gradients / parameters on the GPU
#endif
  torch::Device device{torch::kCPU};
  /// Where the tensor collectives run: the GPU with NCCL, else the CPU (Gloo).
  torch::Device tensor_device() const {
#ifdef USE_C10D_NCCL
    if (nccl) return device;
#endif
    return torch::Device(torch::kCPU);
  }
  /// Sum (allreduce) or rank 0's values (broadcast) of `bucket` through NCCL when there is
  /// an NCCL group, else Gloo.
  c10::intrusive_ptr<c10d::Work> tensor_allreduce(std::vector<torch::Tensor>& bucket) {
#ifdef USE_C10D_NCCL
    if (nccl) return nccl->allreduce(bucket);
#endif
    return pg->allreduce(bucket);
  }
  c10::intrusive_ptr<c10d::Work> tensor_broadcast(std::vector<torch::Tensor>& bucket) {
    c10d::BroadcastOptions o;
    o.rootRank = 0;
#ifdef USE_C10D_NCCL
    if (nccl) return nccl->broadcast(bucket, o);
#endif
    return pg->broadcast(bucket, o);
  }
  std::chrono::milliseconds timeout{60000};
  std::string where;
  int64_t ops = 0;

  void wait(const c10::intrusive_ptr<c10d::Work>& work, const char* what) {
    ++ops;
    try {
      work->wait(timeout);
    } catch (const std::exception& e) {
      std::string why = e.what();
      why = why.substr(0, why.find('\n'));
      throw Error("distributed: " + std::string(what) + " failed on " + where +
                  " (another rank died or the connection was lost; timeout " +
                  std::to_string(timeout.count() / 1000) + " s): " + why);
    }
  }
};

namespace {
std::string first_line(const std::exception& e) {
  std::string w = e.what();
  return w.substr(0, w.find('\n'));
}
}  // namespace

DistGroup::DistGroup(const DistSetup& setup, double timeout_seconds, torch::Device device)
    : impl_(std::make_unique<Impl>()), rank_(setup.rank), world_(setup.world_size) {
  impl_->device = device;
  if (!(timeout_seconds > 0)) throw ValidationError("--dist-timeout: must be > 0 seconds");
  impl_->timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  impl_->where = "rank " + std::to_string(rank_) + " of " + std::to_string(world_);
  const std::string& url = setup.init;
  try {
    if (url.rfind("file://", 0) == 0) {
      auto fs = c10::make_intrusive<c10d::FileStore>(url.substr(7), world_);
      fs->setTimeout(impl_->timeout);
      impl_->store = fs;
    } else if (url.rfind("tcp://", 0) == 0) {
      const std::string hp = url.substr(6);
      const size_t colon = hp.rfind(':');
      if (colon == std::string::npos || colon + 1 == hp.size()) {
        throw ValidationError("--dist-url: '" + url + "' has no port (tcp://host:port)");
      }
      const int port = dist_detail::parse_int("--dist-url port", hp.substr(colon + 1));
      if (port < 1 || port > 65535) {
        throw ValidationError("--dist-url: port " + std::to_string(port) + " is outside [1, 65535]");
      }
      c10d::TCPStoreOptions o;
      o.port = static_cast<uint16_t>(port);
      o.isServer = rank_ == 0;
      o.numWorkers = static_cast<size_t>(world_);
      o.waitWorkers = true;
      o.timeout = impl_->timeout;
      impl_->store = c10::make_intrusive<c10d::TCPStore>(hp.substr(0, colon), o);
    } else {
      throw ValidationError("--dist-url: '" + url + "' is not tcp://host:port or file:///path");
    }
    auto store = c10::make_intrusive<c10d::PrefixStore>("placer_gdp", impl_->store);
    auto opts = c10d::ProcessGroupGloo::Options::create(impl_->timeout);
    opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    impl_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank_, world_, opts);
#ifdef USE_C10D_NCCL
    if (device.is_cuda()) {
      auto nccl_store = c10::make_intrusive<c10d::PrefixStore>("placer_gdp_nccl", impl_->store);
      auto nccl_opts = c10d::ProcessGroupNCCL::Options::create();
      nccl_opts->timeout = impl_->timeout;
      impl_->nccl =
          c10::make_intrusive<c10d::ProcessGroupNCCL>(nccl_store, rank_, world_, nccl_opts);
    }
#endif
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error("distributed: rank " + std::to_string(rank_) + " of " + std::to_string(world_) +
                " could not join the process group at " + url + " within " +
                std::to_string(impl_->timeout.count() / 1000) + " s: " + first_line(e));
  }
}

DistGroup::~DistGroup() = default;

std::string DistGroup::backend() const {
  return impl_->tensor_device().is_cpu() ? "gloo" : "nccl";
}

void DistGroup::allreduce_gradients(const std::vector<torch::Tensor>& params,
                                    int64_t bucket_bytes) {
  // A gradient no rank has stays undefined (as in one process: the optimiser skips it); one
  // that only some ranks have counts as zeros on the others.
  std::vector<double> has(params.size());
  for (size_t k = 0; k < params.size(); ++k) has[k] = params[k].grad().defined() ? 1 : 0;
  has = allreduce(has, "max");
  std::vector<torch::Tensor> grads;
  for (size_t k = 0; k < params.size(); ++k) {
    if (has[k] == 0) continue;
    const torch::Tensor& p = params[k];
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.mutable_grad());
  }
  size_t i = 0;
  while (i < grads.size()) {  // buckets of consecutive gradients, same on every rank
    size_t j = i;
    int64_t bytes = 0;
    std::vector<torch::Tensor> flat;
    while (j < grads.size() && (j == i || bytes + grads[j].nbytes() <= size_t(bucket_bytes))) {
      bytes += int64_t(grads[j].nbytes());
      flat.push_back(grads[j].detach().reshape({-1}).to(impl_->tensor_device()));
      ++j;
    }
    std::vector<torch::Tensor> bucket{torch::cat(flat)};
    impl_->wait(impl_->tensor_allreduce(bucket), "gradient all-reduce");
    int64_t off = 0;
    for (size_t k = i; k < j; ++k) {
      const int64_t n = grads[k].numel();
      torch::NoGradGuard no_grad;
      grads[k].copy_(bucket[0].slice(0, off, off + n).view(grads[k].sizes()));
      off += n;
    }
    i = j;
  }
}

void DistGroup::broadcast(const std::vector<torch::Tensor>& tensors) {
  if (tensors.empty()) return;
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor& t : tensors) {
    flat.push_back(t.detach().reshape({-1}).to(impl_->tensor_device()));
  }
  std::vector<torch::Tensor> buf{torch::cat(flat)};
  impl_->wait(impl_->tensor_broadcast(buf), "parameter broadcast");
  int64_t off = 0;
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& t : tensors) {
    const int64_t n = t.numel();
    torch::Tensor dst = t;
    dst.copy_(buf[0].slice(0, off, off + n).view(t.sizes()));
    off += n;
  }
}

std::vector<double> DistGroup::allreduce(const std::vector<double>& values, const std::string& op) {
  if (values.empty()) return values;
  std::vector<torch::Tensor> t{torch::tensor(values, torch::kDouble)};
  c10d::AllreduceOptions o;
  o.reduceOp = op == "max" ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM;
  impl_->wait(impl_->pg->allreduce(t, o), op == "max" ? "all-reduce (max)" : "all-reduce (sum)");
  const double* p = t[0].data_ptr<double>();
  return std::vector<double>(p, p + values.size());
}

std::vector<std::string> DistGroup::allgather(const std::string& text) {
  const double len = double(text.size());
  const std::vector<double> lens = [&] {
    std::vector<torch::Tensor> in{torch::tensor({len}, torch::kDouble)};
    std::vector<std::vector<torch::Tensor>> out(1);
    for (int r = 0; r < world_; ++r) out[0].push_back(torch::empty({1}, torch::kDouble));
    impl_->wait(impl_->pg->allgather(out, in), "all-gather (sizes)");
    std::vector<double> v;
    for (const torch::Tensor& t : out[0]) v.push_back(t.item<double>());
    return v;
  }();
  int64_t longest = 1;
  for (double l : lens) longest = std::max(longest, int64_t(l));
  torch::Tensor mine = torch::zeros({longest}, torch::kUInt8);
  std::memcpy(mine.data_ptr<uint8_t>(), text.data(), text.size());
  std::vector<torch::Tensor> in{mine};
  std::vector<std::vector<torch::Tensor>> out(1);
  for (int r = 0; r < world_; ++r) out[0].push_back(torch::empty({longest}, torch::kUInt8));
  impl_->wait(impl_->pg->allgather(out, in), "all-gather");
  std::vector<std::string> texts;
  for (int r = 0; r < world_; ++r) {
    const char* p = reinterpret_cast<const char*>(out[0][size_t(r)].data_ptr<uint8_t>());
    texts.emplace_back(p, size_t(lens[size_t(r)]));
  }
  return texts;
}

void DistGroup::barrier() { allreduce({0.0}); }

}  // namespace placer
