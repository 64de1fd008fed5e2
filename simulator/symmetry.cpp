// Symmetric simulation (Simulator::Impl::choose_symmetry): when every tensor-parallel rank of
// a pipeline stage runs the same ops at the same times, only ranks 0 and 1 of each group are
// simulated and ranks 2.. take rank 1's results. Rank 0 is kept apart because it differs: it
// is the primary that holds each boundary tensor until every rank's copy has arrived and it
// runs the data-parallel gradient syncs of the stage's shards. Collectives keep the cost of
// the whole group; a transfer to rank 1 counts for every rank it stands for. Data-parallel
// replicas are simulated once in every simulation (finish_result mirrors them).
//
// Context parallelism and FSDP fold as they are (their exchanges and all-gathers are charged
// into op durations, alike on every TP rank, and their groups hold TP rank 0's copies only);
// expert parallelism folds under even routing when its expert-data-parallel group holds TP
// rank 0 alone. Pipeline stages are not folded (they do not run alike: docs/simulator.md).
//
// The detection is conservative: anything it does not know to be symmetric (a plan feature,
// a shared host port, a transfer between unlike groups) runs the full simulation, and the
// result says why (SimResult::full_reason). docs/simulator.md, "Symmetric simulation".
#include <algorithm>
#include <string>
#include <vector>

#include "simulator/simulator_impl.h"

namespace placer {

void Simulator::Impl::choose_symmetry(const Plan& p) {
  folded = false;
  part_run.clear();
  dev_mult.assign(static_cast<size_t>(n_dev), 1);
  full_reason = asymmetry(p);
  if (!full_reason.empty()) return;
  folded = true;
  part_run.resize(p.partitions.size());
  for (size_t i = 0; i < p.partitions.size(); ++i) {
    const std::vector<int>& d = p.partitions[i].devices;
    part_run[i].assign(d.begin(),
                       d.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(d.size(), 2)));
  }
  for (const PipelineStage& st : p.pipeline.stages) {
    if (st.tensor_parallel > 2)
      dev_mult[st.devices[1]] = static_cast<uint32_t>(st.tensor_parallel - 1);
  }
}

std::string Simulator::Impl::asymmetry(const Plan& p) const {
  if (opts.exact) return "exact simulation asked for";
  if (opts.record_events) return "events recorded (trace or breakdown)";
  if (!pipelined) return "no pipeline stages";
  const bool wide = std::any_of(p.pipeline.stages.begin(), p.pipeline.stages.end(),
                                [](const PipelineStage& s) { return s.tensor_parallel > 2; });
  if (!wide) return "no tensor-parallel group of more than 2 ranks";
  if (p.synchronization.enabled) return "per-variable synchronization";
  if (all_per_pair) return "per-pair link matrix";
  std::string why = asymmetric_expert_groups(p);
  if (why.empty()) why = asymmetric_stage_ops(p);
  if (why.empty()) why = asymmetric_transfers(p);
  return why;
}

// Expert parallelism adds groups over a stage's grid (expert_parallel.cpp). The dispatch and
// combine all-to-alls run on the ops' own partitions (asymmetric_stage_ops checks those), so
// only their time comes from the EP group; the routed experts' gradients are all-reduced
// over the expert-data-parallel group, the first rank of every ep x etp block of the grid,
// which must hold TP rank 0 alone (ep x etp >= tp), as the stage's other syncs do. Every EP
// rank must run alike: the even routing and contiguous expert blocks of the default, not a
// routing file's shares or a plan's expert map.
std::string Simulator::Impl::asymmetric_expert_groups(const Plan& p) const {
  const ExpertParallelConfig& cfg = p.expert_parallel;
  if (!cfg.enabled() || moe_experts.empty()) return {};
  if (opts.routing != nullptr && !opts.routing->empty())
    return "uneven routing (routing statistics)";
  if (!cfg.layers.empty()) return "an expert map (EP ranks may hold unlike experts)";
  const int grid = std::max(1, cfg.degree) * std::max(1, cfg.tensor_parallel);
  for (const PipelineStage& st : p.pipeline.stages) {
    if (st.tensor_parallel > 2 && grid < st.tensor_parallel) {
      return "expert parallelism: the expert-data-parallel group holds several tensor-parallel "
             "ranks (ep x etp < tp)";
    }
  }
  return {};
}

// Every op of a stage with tensor parallelism runs on the whole TP group of the stage (the
// first tensor_parallel devices), split in one level.
std::string Simulator::Impl::asymmetric_stage_ops(const Plan& p) const {
  for (OpId o = 0; o < n_ops; ++o) {
    const PipelineStage& st = p.pipeline.stages[static_cast<size_t>(op_stage[o])];
    const size_t tp = static_cast<size_t>(st.tensor_parallel);
    auto op = [&](const char* why) { return "op '" + g.op(o).name + "' " + why; };
    if (op_part[o] < 0) {
      if (tp > 1) return op("runs on one rank of its tensor-parallel group");
      continue;
    }
    const OpPartition& q = p.partitions[static_cast<size_t>(op_part[o])];
    if (!q.levels.empty()) return op("is split by recursive halving");
    if (q.devices.size() != tp ||
        !std::equal(q.devices.begin(), q.devices.end(), st.devices.begin())) {
      return op("is partitioned over other devices than its stage's tensor-parallel group");
    }
  }
  return {};
}

// Every tensor that crosses stages goes rank k to rank k, all ranks over the same link
// level, and no two ranks share a port (a per-host link would queue them).
std::string Simulator::Impl::asymmetric_transfers(const Plan& p) const {
  auto group_of = [&](OpId o) -> std::pair<const int*, size_t> {
    if (op_part[o] >= 0) {
      const std::vector<int>& d = p.partitions[static_cast<size_t>(op_part[o])].devices;
      return {d.data(), d.size()};
    }
    return {p.pipeline.stages[static_cast<size_t>(op_stage[o])].devices.data(), 1};
  };
  for (TensorId t = 0; t < n_tensors; ++t) {
    const OpId pr = t_producer[t];
    if (pr == kNoOp) continue;
    const auto [a, na] = group_of(pr);
    for (OpId cns : g.consumers(t)) {
      if (op_stage[cns] == op_stage[pr]) continue;
      const auto [b, nb] = group_of(cns);
      auto tensor = [&](const char* why) { return "tensor '" + g.tensor(t).name + "' " + why; };
      if (na != nb) return tensor("moves between tensor-parallel groups of different sizes");
      const LinkLevel l = cost.level(a[0], b[0]);
      for (size_t k = 1; k < na; ++k) {
        if (cost.level(a[k], b[k]) != l) return tensor("crosses different link levels per rank");
        if (cost.has_topology() &&
            cost.crosses_spine(a[k], b[k]) != cost.crosses_spine(a[0], b[0])) {
          return tensor("crosses the spine on some ranks only");
        }
      }
      if (na > 1 && l != LinkLevel::kSame && c.link(l).sharing == LinkSharing::kPerHost) {
        return tensor("moves over a link whose port each host's devices share");
      }
    }
  }
  return {};
}

void Simulator::Impl::mirror_folded_ranks(SimResult* r) const {
  for (const PipelineStage& st : plan->pipeline.stages) {
    for (int k = 2; k < st.tensor_parallel; ++k) {
      const int from = st.devices[1], to = st.devices[static_cast<size_t>(k)];
      r->compute_time[to] = r->compute_time[from];
      r->host_wait[to] = r->host_wait[from];
      r->comm_time[to] = r->comm_time[from];
      r->peak_memory[to] = r->peak_memory[from];
    }
  }
}

}  // namespace placer
