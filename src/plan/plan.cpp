#include "src/plan/plan.h"

#include <algorithm>
#include <cctype>

#include "src/graph/graph.h"

namespace placer {

const char* to_string(PipelineSchedule s) { return s == PipelineSchedule::kGPipe ? "gpipe" : "1f1b"; }

bool parse_pipeline_schedule(const std::string& s, PipelineSchedule* out) {
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  if (l == "gpipe") *out = PipelineSchedule::kGPipe;
  else if (l == "1f1b" || l == "pipedream-flush") *out = PipelineSchedule::k1F1B;
  else return false;
  return true;
}

const char* to_string(SyncScheme s) {
  switch (s) {
    case SyncScheme::kRing: return "ring";
    case SyncScheme::kTree: return "tree";
    case SyncScheme::kHierarchical: return "hierarchical";
    case SyncScheme::kParameterServer: return "ps";
    case SyncScheme::kAuto: return "auto";
  }
  return "ring";
}

bool parse_sync_scheme(const std::string& s, SyncScheme* out) {
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  if (l == "ring") *out = SyncScheme::kRing;
  else if (l == "tree") *out = SyncScheme::kTree;
  else if (l == "hierarchical") *out = SyncScheme::kHierarchical;
  else if (l == "ps" || l == "parameter_server" || l == "parameter-server") *out = SyncScheme::kParameterServer;
  else if (l == "auto") *out = SyncScheme::kAuto;
  else return false;
  return true;
}

namespace {
std::string lower(const std::string& s) {
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  return l;
}
}  // namespace

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::kInherit: return "inherit";
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
    case Recompute::kSelectiveOp: return "selective_op";
  }
  return "none";
}

bool parse_recompute(const std::string& s, Recompute* out) {
  const std::string l = lower(s);
  if (l == "none") *out = Recompute::kNone;
  else if (l == "selective") *out = Recompute::kSelective;
  else if (l == "full") *out = Recompute::kFull;
  else if (l == "selective_op") *out = Recompute::kSelectiveOp;
  else return false;
  return true;
}

const char* to_string(ContextParallelComm c) {
  switch (c) {
    case ContextParallelComm::kP2P: return "p2p";
    case ContextParallelComm::kAllToAll: return "a2a";
    case ContextParallelComm::kAllGather: return "allgather";
  }
  return "?";
}

bool parse_context_parallel_comm(const std::string& s, ContextParallelComm* out) {
  const std::string l = lower(s);
  if (l == "p2p") *out = ContextParallelComm::kP2P;
  else if (l == "a2a") *out = ContextParallelComm::kAllToAll;
  else if (l == "allgather") *out = ContextParallelComm::kAllGather;
  else return false;
  return true;
}

const char* to_string(ExpertDispatcher d) {
  switch (d) {
    case ExpertDispatcher::kAllToAll: return "alltoall";
    case ExpertDispatcher::kDeepEP: return "deepep";
    case ExpertDispatcher::kHybridEP: return "hybridep";
  }
  return "?";
}

bool parse_expert_dispatcher(const std::string& s, ExpertDispatcher* out) {
  const std::string l = lower(s);
  if (l == "alltoall") *out = ExpertDispatcher::kAllToAll;
  else if (l == "deepep") *out = ExpertDispatcher::kDeepEP;
  else if (l == "hybridep") *out = ExpertDispatcher::kHybridEP;
  else return false;
  return true;
}

const char* to_string(PartitionCollective c) {
  switch (c) {
    case PartitionCollective::kAuto: return "auto";
    case PartitionCollective::kNone: return "none";
    case PartitionCollective::kAllReduce: return "all_reduce";
    case PartitionCollective::kAllGather: return "all_gather";
    case PartitionCollective::kReduceScatter: return "reduce_scatter";
  }
  return "auto";
}

bool parse_partition_collective(const std::string& s, PartitionCollective* out) {
  const std::string l = lower(s);
  if (l == "auto") *out = PartitionCollective::kAuto;
  else if (l == "none") *out = PartitionCollective::kNone;
  else if (l == "all_reduce" || l == "allreduce") *out = PartitionCollective::kAllReduce;
  else if (l == "all_gather" || l == "allgather") *out = PartitionCollective::kAllGather;
  else if (l == "reduce_scatter" || l == "reducescatter") *out = PartitionCollective::kReduceScatter;
  else return false;
  return true;
}

Plan Plan::single_device(const Graph& g, int device) {
  Plan p;
  p.graph_name = g.name();
  p.method = "single";
  p.placement.assign(g.num_ops(), device);
  return p;
}

int Plan::replica_device(int d, int r, int num_devices) const {
  if (r == 0) return d;
  if (!data_parallel.replica_devices.empty()) return data_parallel.replica_devices[r][d];
  const int stride = num_devices / std::max(1, data_parallel.replicas);
  return d + r * stride;
}

}  // namespace placer
