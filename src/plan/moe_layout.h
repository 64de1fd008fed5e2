#pragma once
// Expert and context parallelism of a plan (docs/parallelism.md).
//
// Expert parallelism (EP) as Megatron-core builds it: the experts of every mixture-of-experts
// layer are spread over `degree` ranks carved from the data-parallel x context-parallel ranks
// of a pipeline stage; tokens reach their experts by an all-to-all dispatch and come back by
// an all-to-all combine. Each expert may itself be split over `tensor_parallel` ranks (expert
// tensor parallelism, ETP). The expert map says which EP rank holds which expert of each MoE
// layer and which hot experts have replicas (DeepSeek's EPLB, the expert placers).
//
// Context parallelism (CP): the sequence of every micro-batch is split over `degree` ranks;
// attention exchanges keys and values between them (ring of point-to-point sends overlapped
// with compute, an all-to-all of heads as in Ulysses, or an all-gather of keys and values),
// every other op runs on 1/cp of the tokens.

#include <cstdint>
#include <string>
#include <vector>

namespace placer {

/// Where the experts of one MoE layer live: replicas[e] lists the EP ranks (0 .. degree-1)
/// that hold a copy of expert e; tokens routed to a replicated expert are split evenly
/// between its copies.
struct ExpertLayerMap {
  std::vector<std::vector<int>> replicas;
};

/// How tokens reach their experts (Megatron-core's --moe-token-dispatcher-type and
/// --moe-flex-dispatcher-backend). The all-to-all sends one copy of a token per routed expert.
/// The flex dispatcher with DeepEP or HybridEP sends one copy per destination node over the
/// inter-node network, which the receiving GPU forwards over NVLink, one copy per destination
/// rank; within a node it sends one copy per destination rank (docs/simulator.md, "Expert
/// parallelism").
enum class ExpertDispatcher : uint8_t { kAllToAll, kDeepEP, kHybridEP };
const char* to_string(ExpertDispatcher d);  // "alltoall", "deepep", "hybridep"
bool parse_expert_dispatcher(const std::string& s, ExpertDispatcher* out);

struct ExpertParallelConfig {
  int degree = 1;           ///< EP ranks per MoE layer; 1 = off
  int tensor_parallel = 1;  ///< ETP: ranks each expert's GEMMs are split over
  /// One entry per MoE layer in graph order; empty = the default layout (expert e on rank
  /// e / (experts / degree), no replicas).
  std::vector<ExpertLayerMap> layers;
  ExpertDispatcher dispatcher = ExpertDispatcher::kAllToAll;
  /// Megatron-core's --overlap-moe-expert-parallel-comm: the forward of one micro-batch and
  /// the backward of another run together, so each one's dispatch / combine all-to-alls run
  /// while the other computes. The 1F1B schedule keeps one more micro-batch in flight per
  /// pipeline rank (docs/simulator.md, "Expert all-to-all overlap"). Needs degree > 1 and, with
  /// more than one pipeline rank, virtual stages.
  bool overlap = false;
  bool enabled() const { return degree > 1 || tensor_parallel > 1 || !layers.empty(); }
};

/// How context-parallel ranks exchange keys and values (Megatron-core's --cp-comm-type).
enum class ContextParallelComm : uint8_t { kP2P, kAllToAll, kAllGather };
const char* to_string(ContextParallelComm c);  // "p2p", "a2a", "allgather"
bool parse_context_parallel_comm(const std::string& s, ContextParallelComm* out);

struct ContextParallelConfig {
  int degree = 1;  ///< CP ranks a sequence is split over; 1 = off
  ContextParallelComm comm = ContextParallelComm::kP2P;
  bool enabled() const { return degree > 1; }
};

}  // namespace placer
