#pragma once
// The c10d process group of a distributed GDP run (LibTorch: Gloo; NCCL beside it for the
// gradients of a run on CUDA when this LibTorch has it) and the collectives the trainer needs: bucketed gradient
// all-reduce, parameter broadcast from rank 0, small sums / maxima and string gathers.
// Every call is collective (all ranks, same order) and bounded by the timeout; a rank that
// died or a lost connection throws placer::Error naming the operation.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "agents/gdp/gdp_dist.h"

namespace placer {

class DistGroup {
 public:
  /// Rendezvous at setup.init (tcp: rank 0 serves the store) and creates the process group:
  /// Gloo always (small values, strings; and the tensors of a CPU run). With a CUDA
  /// `device` and a LibTorch built with NCCL (USE_C10D_NCCL), gradients and parameters are
  /// reduced / broadcast on the GPU by an NCCL group beside it; without NCCL, Gloo reduces
  /// CPU copies of them. Throws Error when the other ranks do not show up within
  /// timeout_seconds.
  DistGroup(const DistSetup& setup, double timeout_seconds,
            torch::Device device = torch::Device(torch::kCPU));
  ~DistGroup();
  DistGroup(const DistGroup&) = delete;
  DistGroup& operator=(const DistGroup&) = delete;

  int rank() const { return rank_; }
  /// "gloo", or "nccl" when the gradients go through NCCL.
  std::string backend() const;
  int world_size() const { return world_; }

  /// Sums the gradients of `params` over the ranks (flattened into buckets of at most
  /// bucket_bytes; a missing gradient counts as zeros and is created). The caller scales
  /// the loss so that the sum is the wanted gradient.
  void allreduce_gradients(const std::vector<torch::Tensor>& params,
                           int64_t bucket_bytes = 25 << 20);
  /// Copies rank 0's values of `tensors` (parameters, buffers) to every rank.
  void broadcast(const std::vector<torch::Tensor>& tensors);
  /// Element-wise sum (op "sum") or maximum ("max") of `values` over the ranks.
  std::vector<double> allreduce(const std::vector<double>& values, const std::string& op = "sum");
  /// Every rank's `text`, indexed by rank.
  std::vector<std::string> allgather(const std::string& text);
  void barrier();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, world_ = 1;
};

/// A look inside a trainer for tests: its network's parameters and its place in the job.
struct GdpTrainerAccess {
  static std::vector<torch::Tensor> parameters(const GdpTrainer& t);
  static int rank(const GdpTrainer& t);
  static int world_size(const GdpTrainer& t);
  static std::vector<int> shards(const GdpTrainer& t);
  /// Where the network trains ("cpu", "cuda:0", ...).
  static std::string device(const GdpTrainer& t);
};

}  // namespace placer
