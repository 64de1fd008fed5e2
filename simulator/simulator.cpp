// Simulator: construction, plan checks and the per-run set-up (which op runs where, how
// often and on how much work; where each tensor must be; gradient sync groups). The event
// loop is in simulator_engine.cpp; the model is described in docs/simulator.md.
#include "simulator/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "simulator/cost_model.h"
#include "simulator/simulator_impl.h"
#include "simulator/sync_strategies.h"
#include "src/plan/placement_pipeline.h"
#include "src/plan/tensor_parallel.h"
#include "src/util/checked_math.h"
#include "src/util/error.h"

namespace placer {

Simulator::Impl::Impl(const Graph& graph, const Cluster& cluster, const CostModel& cm)
    : g(graph), c(cluster), cost(cm) {
  n_dev = c.num_devices();
  n_ops = static_cast<uint32_t>(g.num_ops());
  n_tensors = static_cast<uint32_t>(g.num_tensors());
  if (cost.num_devices() != n_dev) {
    throw ValidationError("simulator: the cost model was built for " +
                          std::to_string(cost.num_devices()) + " devices, the cluster has " +
                          std::to_string(n_dev));
  }
  index_op_inputs();
  copy_op_fields();
  copy_tensor_fields();
  mark.assign(n_ops, 0);
  index_backward_ops();
  index_moe_ops();
  build_channels();
  dur_cache_dev.assign(n_ops, -1);
  dur_cache_frac.assign(n_ops, -1.0);
  dur_cache_val.assign(n_ops, 0.0);
  dur_cache_dtype.assign(n_ops, -1);
  site_epoch.assign(n_dev, 0);
  site_of_dev.assign(n_dev, 0);
  ready.resize(n_dev);
  dirty_flag.assign(n_dev, 0);
}

// Distinct inputs that some op produces (graph inputs are available everywhere at t = 0).
void Simulator::Impl::index_op_inputs() {
  in_off.assign(n_ops + 1, 0);
  std::vector<uint32_t> seen(n_tensors, UINT32_MAX);
  for (OpId o = 0; o < n_ops; ++o) {
    for (TensorId t : g.op(o).inputs) {
      if (seen[t] == o || g.tensor(t).producer == kNoOp) continue;
      seen[t] = o;
      in_t.push_back(t);
    }
    in_off[o + 1] = static_cast<uint32_t>(in_t.size());
  }
}

// Compact copies of what the event loop reads (an Op is a few hundred bytes).
void Simulator::Impl::copy_op_fields() {
  out_off.assign(n_ops + 1, 0);
  op_bytes.resize(n_ops);
  op_ws.resize(n_ops);
  op_phase.resize(n_ops);
  op_fwd.resize(n_ops);
  op_scaled.resize(n_ops);
  op_input.resize(n_ops);
  op_resident.resize(n_ops);
  op_param.resize(n_ops);
  op_state.resize(n_ops);
  for (OpId o = 0; o < n_ops; ++o) {
    const Op& op = g.op(o);
    out_t.insert(out_t.end(), op.outputs.begin(), op.outputs.end());
    out_off[o + 1] = static_cast<uint32_t>(out_t.size());
    op_bytes[o] = g.op_bytes(o);
    op_ws[o] = op.workspace_bytes;
    op_phase[o] = op.phase;
    op_fwd[o] = op.forward_op < n_ops ? op.forward_op : kNoOp;
    op_scaled[o] = op.batch_scaled;
    op_input[o] = op.category == OpCategory::kInput;
    op_resident[o] = op.param_bytes + op.state_bytes;
    op_param[o] = op.param_bytes;
    op_state[o] = op.state_bytes;
  }
}

void Simulator::Impl::copy_tensor_fields() {
  t_producer.resize(n_tensors);
  t_raw.resize(n_tensors);
  t_scaled.resize(n_tensors);
  t_grad.resize(n_tensors);
  for (TensorId t = 0; t < n_tensors; ++t) {
    const Tensor& ten = g.tensor(t);
    t_producer[t] = ten.producer;
    t_raw[t] = ten.bytes;
    t_scaled[t] = ten.batch_scaled;
    t_grad[t] = ten.is_param_grad;
  }
}

// A backward op never starts before its forward op (same micro-batch) has run, even when
// no tensor says so (e.g. the loss-gradient seed of a sink).
void Simulator::Impl::index_backward_ops() {
  bwd_off.assign(n_ops + 1, 0);
  auto follows = [&](OpId o) {
    const OpId f = op_fwd[o];
    return op_phase[o] == Phase::kBackward && f != kNoOp && op_phase[f] == Phase::kForward;
  };
  for (OpId o = 0; o < n_ops; ++o) {
    if (follows(o)) ++bwd_off[op_fwd[o] + 1];
  }
  for (OpId o = 0; o < n_ops; ++o) bwd_off[o + 1] += bwd_off[o];
  bwd_of.resize(bwd_off[n_ops]);
  std::vector<uint32_t> fill(bwd_off.begin(), bwd_off.end() - 1);
  for (OpId o = 0; o < n_ops; ++o) {
    if (follows(o)) bwd_of[fill[op_fwd[o]]++] = o;
  }
}

// Channels: per (device, level) send / receive ports, per (host, level) send / receive
// ports; per-pair channels are added as pairs first send (transfer_channels).
void Simulator::Impl::build_channels() {
  const int L = kNumLinkLevels, H = c.num_hosts();
  port_base = {0, n_dev * L, 2 * n_dev * L, 2 * n_dev * L + H * L};
  chan_free.assign(static_cast<size_t>(port_base[3] + H * L), 0.0);
  all_per_pair = !c.bandwidth_matrix().empty() || !c.latency_matrix().empty();
  dev_blocking.assign(static_cast<size_t>(n_dev), 0);
  for (int d = 0; d < n_dev; ++d) {
    dev_blocking[static_cast<size_t>(d)] = !c.device(d).spec.overlap_transfers;
    any_blocking = any_blocking || dev_blocking[static_cast<size_t>(d)];
  }
}

void Simulator::Impl::transfer_channels(int src, int dst, int32_t* a, int32_t* b) {
  const LinkLevel l = cost.level(src, dst);
  const int li = static_cast<int>(l), L = kNumLinkLevels;
  *b = -1;
  switch (all_per_pair ? LinkSharing::kPerPair : c.link(l).sharing) {
    case LinkSharing::kPerPair: {
      const uint64_t key = static_cast<uint64_t>(src) * static_cast<uint64_t>(n_dev) + dst;
      auto it = pair_chan.emplace(key, static_cast<int32_t>(chan_free.size())).first;
      if (it->second == static_cast<int32_t>(chan_free.size())) chan_free.push_back(0.0);
      *a = it->second;
      return;
    }
    case LinkSharing::kPerDevice:
      *a = port_base[0] + src * L + li;
      *b = port_base[1] + dst * L + li;
      return;
    case LinkSharing::kPerHost:
      *a = port_base[2] + c.device(src).host * L + li;
      *b = port_base[3] + c.device(dst).host * L + li;
      return;
  }
}

// Parameters and optimizer state of op o on each of its devices: sharded by a non-batch
// split, and by ZeRO over the data-parallel group (state from stage 1, parameters at 3).
uint64_t Simulator::Impl::resident_bytes(OpId o) const {
  const uint64_t div = op_part[o] >= 0 ? shard_div(plan->partitions[op_part[o]]) : 1;
  uint64_t par = ceil_div(op_param[o], div), st = ceil_div(op_state[o], div);
  uint64_t dp = shard_ways(o);
  if (ep_on && op_expert_keep[o] < 1) {  // the experts this rank holds, sharded over expert DP
    par = static_cast<uint64_t>(std::ceil(static_cast<double>(par) * op_expert_keep[o]));
    st = static_cast<uint64_t>(std::ceil(static_cast<double>(st) * op_expert_keep[o]));
    dp = op_expert_dp[o];
  }
  if (zero_stage >= 1) st = ceil_div(st, dp);
  // FSDP without resharding holds each block's unsharded parameters from its forward to
  // its backward: counted resident.
  const bool held = fsdp && !plan->data_parallel.fsdp.reshard_after_forward && g.op(o).layer >= 0;
  if (zero_stage >= 3 && !held) par = ceil_div(par, dp);
  return par + st;
}

uint32_t Simulator::Impl::group_index(const std::vector<int>& devices) {
  auto it = group_ids.find(devices);
  if (it != group_ids.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(groups.size());
  groups.push_back(cost.make_group(devices));
  group_devs.push_back(devices);
  group_sorted.push_back(devices);
  std::sort(group_sorted.back().begin(), group_sorted.back().end());
  group_ids.emplace(devices, id);
  return id;
}

// ---- plan checks ------------------------------------------------------------------------

namespace {

[[noreturn]] void plan_fail(const std::string& m) { throw ValidationError("plan: " + m); }

void check_device(int d, int n_dev, const std::string& what) {
  if (d < 0 || d >= n_dev) {
    plan_fail(what + " is device " + std::to_string(d) + ", but the cluster has " +
              std::to_string(n_dev) + " devices");
  }
}

}  // namespace

void Simulator::Impl::check_plan(const Plan& p) {
  const bool pipe = p.pipeline.enabled();
  if (!(pipe && p.placement.empty())) check_placement(p);
  check_partitions(p);
  if (pipe) check_pipeline(p);
  const DataParallelConfig& dp = p.data_parallel;
  if (dp.replicas < 1) plan_fail("data_parallel: replicas must be >= 1");
  if (dp.zero_stage < 0 || dp.zero_stage > 3) plan_fail("data_parallel: zero_stage must be 0..3");
  if (dp.replicas > 1) {
    if (!dp.replica_devices.empty()) {
      check_replica_devices(p);
    } else {
      check_replica_stride(p);
    }
  }
}

void Simulator::Impl::check_placement(const Plan& p) const {
  if (p.placement.size() != n_ops) {
    plan_fail("placement has " + std::to_string(p.placement.size()) + " entries, graph '" +
              g.name() + "' has " + std::to_string(n_ops) + " ops");
  }
  for (OpId o = 0; o < n_ops; ++o) {
    const int d = p.placement[o];
    if (d < 0 || d >= n_dev) check_device(d, n_dev, "op '" + g.op(o).name + "'");
  }
}

void Simulator::Impl::check_partitions(const Plan& p) {
  std::fill(mark.begin(), mark.end(), 0);
  for (size_t i = 0; i < p.partitions.size(); ++i) {
    const OpPartition& q = p.partitions[i];
    const std::string what = "partitions[" + std::to_string(i) + "]";
    if (q.op >= n_ops) plan_fail(what + ": op #" + std::to_string(q.op) + " is not in the graph");
    if (mark[q.op]) plan_fail(what + ": op '" + g.op(q.op).name + "' is partitioned twice");
    mark[q.op] = 1;
    if (q.devices.empty()) plan_fail(what + ": no devices");
    for (size_t a = 0; a < q.devices.size(); ++a) {
      for (size_t b = a + 1; b < q.devices.size(); ++b) {
        if (q.devices[a] == q.devices[b]) {
          plan_fail(what + ": device " + std::to_string(q.devices[a]) + " listed twice");
        }
      }
    }
    if (q.dim < OpPartition::kReduceDim) plan_fail(what + ": bad dim " + std::to_string(q.dim));
    if (!q.levels.empty()) {
      if (q.levels.size() >= 31 || q.devices.size() != (size_t(1) << q.levels.size())) {
        plan_fail(what + ": " + std::to_string(q.levels.size()) + " levels need 2^" +
                  std::to_string(q.levels.size()) + " devices");
      }
      for (int l : q.levels) {
        if (l < OpPartition::kReduceDim) plan_fail(what + ": bad level dim " + std::to_string(l));
      }
    }
    for (int d : q.devices) check_device(d, n_dev, what + " device");
  }
}

void Simulator::Impl::check_pipeline(const Plan& p) {
  if (p.pipeline.micro_batches < 1) plan_fail("pipeline: micro_batches must be >= 1");
  const int v = p.pipeline.virtual_stages;
  if (v < 1 || p.pipeline.stages.size() % size_t(v) != 0) {
    plan_fail("pipeline: virtual_stages must divide the number of stages");
  }
  std::fill(mark.begin(), mark.end(), 0);
  for (size_t s = 0; s < p.pipeline.stages.size(); ++s) {
    const PipelineStage& st = p.pipeline.stages[s];
    const std::string what = "pipeline stage " + std::to_string(s);
    if (st.devices.empty()) plan_fail(what + ": no devices");
    for (int d : st.devices) check_device(d, n_dev, what + " device");
    if (st.tensor_parallel < 1 || st.devices.size() % size_t(st.tensor_parallel) != 0) {
      plan_fail(what + ": tensor_parallel " + std::to_string(st.tensor_parallel) +
                " does not divide its " + std::to_string(st.devices.size()) + " devices");
    }
    for (OpId o : st.ops) {
      if (o >= n_ops) plan_fail(what + ": op #" + std::to_string(o) + " is not in the graph");
      if (mark[o]) plan_fail(what + ": op '" + g.op(o).name + "' is in two stages");
      mark[o] = 1;
    }
  }
}

// Explicit replica devices: a row per replica, an entry per device, each in the cluster.
void Simulator::Impl::check_replica_devices(const Plan& p) const {
  const DataParallelConfig& dp = p.data_parallel;
  if (static_cast<int>(dp.replica_devices.size()) < dp.replicas) {
    plan_fail("data_parallel: replica_devices has " + std::to_string(dp.replica_devices.size()) +
              " rows for " + std::to_string(dp.replicas) + " replicas");
  }
  for (int r = 1; r < dp.replicas; ++r) {
    if (static_cast<int>(dp.replica_devices[r].size()) < n_dev) {
      plan_fail("data_parallel: replica_devices[" + std::to_string(r) + "] has " +
                std::to_string(dp.replica_devices[r].size()) + " entries, need one per device (" +
                std::to_string(n_dev) + ")");
    }
    for (int d = 0; d < n_dev; ++d) {
      check_device(
          dp.replica_devices[r][d], n_dev,
          "data_parallel replica " + std::to_string(r) + " of device " + std::to_string(d));
    }
  }
}

// Default stride: every device the plan uses must have its replicas in the cluster.
void Simulator::Impl::check_replica_stride(const Plan& p) {
  const DataParallelConfig& dp = p.data_parallel;
  if (dp.replicas > n_dev) {
    plan_fail("data_parallel: " + std::to_string(dp.replicas) + " replicas on " +
              std::to_string(n_dev) + " devices");
  }
  std::vector<uint8_t>& used = dev_mark;
  used.assign(n_dev, 0);
  if (p.pipeline.enabled()) {
    for (const PipelineStage& st : p.pipeline.stages) {
      for (int d : st.devices) used[d] = 1;
    }
  } else {
    for (int d : p.placement) used[d] = 1;
  }
  for (const OpPartition& q : p.partitions) {
    for (int d : q.devices) used[d] = 1;
  }
  for (int d = 0; d < n_dev; ++d) {
    if (!used[d]) continue;
    const int last = p.replica_device(d, dp.replicas - 1, n_dev);
    if (last >= n_dev) {
      plan_fail("data_parallel: device " + std::to_string(d) + " would be replicated on device " +
                std::to_string(last) + " (replica " + std::to_string(dp.replicas - 1) +
                "), but the cluster has " + std::to_string(n_dev) +
                " devices; place replica 0 on devices below " +
                std::to_string(n_dev / dp.replicas) + " or give replica_devices");
    }
  }
}

// ---- per-run set-up ---------------------------------------------------------------------

void Simulator::Impl::prepare(const Plan& p, const SimOptions& options) {
  prepare_settings(p, options);
  assign_partitions(p);
  assign_stages(p);
  choose_symmetry(p);
  assign_devices_and_durations(p);
  size_tensor_payloads(p);
  prepare_step_barrier(p);
  prepare_instances();
  prepare_partition_collectives(p);
  prepare_expert_parallel(p);
  prepare_moe_host();
  prepare_gradient_syncs(p);
  prepare_expert_gradient_syncs(p);
  prepare_fsdp_groups(p);
  prepare_zero3_gathers(p);
  prepare_context_parallel(p);
  prepare_recompute(p);
  prepare_fsdp_schedule(p);
  charge_micro_batch_overhead();
  buckets.clear();
  prepare_sites();
  prepare_boundary_transfers();
  prepare_output_allocations();
  prepare_pipeline_gates();
  reset_run_state();
  place_resident_memory();
}

void Simulator::Impl::prepare_settings(const Plan& p, const SimOptions& options) {
  plan = &p;
  opts = options;
  pipelined = p.pipeline.enabled();
  M = pipelined ? p.pipeline.micro_batches : 1;
  R = p.data_parallel.replicas;
  n_stages = pipelined ? static_cast<int>(p.pipeline.stages.size()) : 0;
  vstages = pipelined ? p.pipeline.virtual_stages : 1;
  n_ranks = pipelined ? std::max(n_stages / vstages, 1) : 1;
  prepare_pipeline_ranks();
  sync = p.data_parallel.sync;
  zero_stage = p.data_parallel.zero_stage;
  fsdp = p.data_parallel.fsdp.enabled;
  fsdp_shard = p.data_parallel.fsdp.shard_group;
  // Without overlap every gradient of a sync group goes into one bucket, launched when the
  // last one is ready (after the last backward op that produces one).
  bucket_bytes = p.data_parallel.overlap ? p.data_parallel.bucket_bytes : UINT64_MAX;
  overlap_slowdown = cost.profile().overlap_slowdown;
  p2p_host_sync = cost.profile().p2p_host_sync;
}

void Simulator::Impl::assign_partitions(const Plan& p) {
  // Partitions: an op's partition also covers its backward / optimizer ops.
  op_part.assign(n_ops, -1);
  for (size_t i = 0; i < p.partitions.size(); ++i) {
    op_part[p.partitions[i].op] = static_cast<int32_t>(i);
  }
  if (!p.partitions.empty()) {
    for (OpId o = 0; o < n_ops; ++o) {
      const OpId f = op_fwd[o];
      // Only a partition given on the forward op itself propagates (not a derived one).
      if (op_part[o] < 0 && f != kNoOp && f < n_ops && op_part[f] >= 0 &&
          p.partitions[op_part[f]].op == f) {
        op_part[o] = op_part[f];
      }
    }
  }
}

void Simulator::Impl::assign_stages(const Plan& p) {
  // Pipeline stages: explicit forward ops, then ops following their forward op, then the
  // latest stage among predecessors (topological order), then the earliest stage among
  // successors (reverse order), else stage 0.
  op_stage.assign(n_ops, -1);
  if (pipelined) {
    for (size_t s = 0; s < p.pipeline.stages.size(); ++s) {
      for (OpId o : p.pipeline.stages[s].ops) op_stage[o] = static_cast<int32_t>(s);
    }
    for (OpId o = 0; o < n_ops; ++o) {
      const OpId f = op_fwd[o];
      if (op_stage[o] < 0 && f != kNoOp && f < n_ops && op_stage[f] >= 0) {
        op_stage[o] = op_stage[f];
      }
    }
    for (OpId o : g.topo_order()) {
      if (op_stage[o] >= 0) continue;
      int32_t s = -1;
      for (OpId q : g.preds(o)) s = std::max(s, op_stage[q]);
      op_stage[o] = s;
    }
    const std::vector<OpId>& topo = g.topo_order();
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      const OpId o = *it;
      if (op_stage[o] >= 0) continue;
      int32_t s = std::numeric_limits<int32_t>::max();
      for (OpId q : g.succs(o)) {
        if (op_stage[q] >= 0) s = std::min(s, op_stage[q]);
      }
      op_stage[o] = s == std::numeric_limits<int32_t>::max() ? 0 : s;
    }
  }
}

void Simulator::Impl::assign_devices_and_durations(const Plan& p) {
  // Devices, instances, work fractions and durations.
  op_dev.resize(n_ops);
  op_multi.resize(n_ops);
  op_gang.assign(n_ops, 0);
  op_frac.resize(n_ops);
  op_dur.resize(n_ops);
  op_inst.resize(n_ops + 1);
  op_disp.resize(n_ops);
  op_dp.resize(n_ops);
  op_bdiv.resize(n_ops);
  dev_used.assign(n_dev, 0);
  for (OpId o = 0; o < n_ops; ++o) {
    const Phase phase = op_phase[o];
    int k_stage = 1;
    if (pipelined) {
      const PipelineStage& st = p.pipeline.stages[op_stage[o]];
      op_dev[o] = st.devices[0];
      k_stage = st.data_parallel();
    } else {
      op_dev[o] = p.placement[o];
    }
    const bool multi =
        pipelined && M > 1 && (phase == Phase::kForward || phase == Phase::kBackward);
    op_multi[o] = multi;
    double div = 1;
    if (op_scaled[o]) div = double(R) * k_stage * (multi ? M : 1);
    op_bdiv[o] = div;
    op_dp[o] = R * k_stage;
    if (op_part[o] >= 0) {
      const OpPartition& q = p.partitions[op_part[o]];
      op_dev[o] = q.devices[0];
      // The optimizer updates its shard (1/k), or its replica under a batch split; a
      // replicated op runs whole on every device.
      if (q.replicated) {
      } else if (phase == Phase::kOptimizer) {
        div *= static_cast<double>(shard_div(q));
      } else {
        div *= static_cast<double>(q.devices.size());
      }
      for (int d : q.devices) dev_used[d] = 1;
      op_gang[o] = q.devices.size() > 1;
    }
    dev_used[op_dev[o]] = 1;
    const double frac = 1.0 / div;
    op_frac[o] = frac;
    const Op& op = g.op(o);
    bool fp8 = false;
    const DType dt = run_dtype(o, p, &fp8);
    if (dur_cache_dev[o] != op_dev[o] || dur_cache_frac[o] != frac ||
        dur_cache_dtype[o] != static_cast<int8_t>(dt)) {
      dur_cache_dev[o] = op_dev[o];
      dur_cache_frac[o] = frac;
      dur_cache_dtype[o] = static_cast<int8_t>(dt);
      dur_cache_val[o] = cost.op_time(op, op_bytes[o], op_dev[o], frac, dt);
    }
    // The FP8 scaling depends on the plan's micro-batches and FSDP too: not cached.
    op_dur[o] = dur_cache_val[o] + (fp8 ? fp8_scaling_time(o, frac) : 0.0);
    op_disp[o] = op.category == OpCategory::kInput ? 0.0 : cost.profile().op(op.category).dispatch;
  }
  number_instances();
}

// The ops that run once take the first instance numbers, then come the micro-batches one
// after another, each with every op that runs once per micro-batch (inst_of).
void Simulator::Impl::number_instances() {
  uint32_t once = 0, multi = 0;
  for (OpId o = 0; o < n_ops; ++o) ++(op_multi[o] ? multi : once);
  const char* what = "simulator: op instances (ops x micro-batches)";
  n_inst = checked_add(once, checked_mul(multi, static_cast<uint32_t>(M), what), what);
  inst_stride = multi;
  uint32_t next_once = 0, next_multi = once;
  for (OpId o = 0; o < n_ops; ++o) op_inst[o] = op_multi[o] ? next_multi++ : next_once++;
  op_inst[n_ops] = n_inst;
}

DType Simulator::Impl::run_dtype(OpId o, const Plan& p, bool* fp8) const {
  const Op& op = g.op(o);
  const bool floating =
      op.dtype == DType::kF32 || op.dtype == DType::kF16 || op.dtype == DType::kBF16;
  *fp8 = p.precision.fp8 && floating && runs_fp8(o);
  if (*fp8) return DType::kF8;
  return p.precision.compute_set && floating ? p.precision.compute : op.dtype;
}

void Simulator::Impl::size_tensor_payloads(const Plan& p) {
  // Tensor payloads: batch-scaled tensors shrink with the producer's batch share; parameter
  // gradients of an operator split on a non-batch dim are sharded.
  t_mb.resize(n_tensors);
  t_bytes.resize(n_tensors);
  t_sync_bytes.resize(n_tensors);
  for (TensorId t = 0; t < n_tensors; ++t) {
    const OpId pr = t_producer[t];
    t_mb[t] = pr != kNoOp && op_multi[pr] && !t_grad[t];
    uint64_t b = t_raw[t];
    if (pr != kNoOp) {
      if (t_scaled[t]) {
        uint64_t div = static_cast<uint64_t>(R);
        if (pipelined) {
          div *= p.pipeline.stages[op_stage[pr]].data_parallel() * (op_multi[pr] ? M : 1);
        }
        b = ceil_div(b, div);
      }
      if (op_part[pr] >= 0 && t_grad[t]) b = ceil_div(b, shard_div(p.partitions[op_part[pr]]));
      // Sharded chains: forward outputs of a sharded_output partition and input gradients
      // of a sharded_input one stay split, 1/k on each device.
      if (op_part[pr] >= 0 && !t_grad[t]) {
        const OpPartition& q = p.partitions[op_part[pr]];
        const Phase ph = g.op(pr).phase;
        if ((ph == Phase::kForward && q.sharded_output) ||
            (ph == Phase::kBackward && q.sharded_input)) {
          b = ceil_div(b, q.devices.size());
        }
      }
    }
    t_sync_bytes[t] = b;
    // ZeRO-2/3 keep 1/dp of each gradient after the reduce-scatter.
    if (zero_stage >= 2 && pr != kNoOp && t_grad[t]) b = ceil_div(b, shard_ways(pr));
    t_bytes[t] = b;
  }
}

void Simulator::Impl::prepare_step_barrier(const Plan& p) {
  // Step barrier: dynamic loss scaling and gradient clipping each all-reduce a scalar over
  // every device of the step before the optimizer may run.
  // Tied embeddings across stages add their gradient all-reduce to the barrier.
  barrier_pending = 0;
  barrier_time = 0;
  barrier_devs.clear();
  prepare_tied_embeddings();
  const int n_barrier = int(p.precision.loss_scaling) + int(p.precision.grad_clipping);
  if (n_barrier > 0 || tied_time > 0) {
    std::vector<uint8_t>& all = dev_mark;
    all.assign(n_dev, 0);
    for (int d = 0; d < n_dev; ++d) {
      if (dev_used[d]) all[d] = 1;
    }
    if (pipelined) {
      for (const PipelineStage& st : p.pipeline.stages) {
        for (int d : st.devices) all[d] = 1;
      }
    }
    for (int d = 0; d < n_dev; ++d) {
      if (!all[d]) continue;
      for (int r = 0; r < R; ++r) barrier_devs.push_back(p.replica_device(d, r, n_dev));
    }
    std::sort(barrier_devs.begin(), barrier_devs.end());
    barrier_devs.erase(std::unique(barrier_devs.begin(), barrier_devs.end()), barrier_devs.end());
    for (TensorId t = 0; t < n_tensors; ++t) barrier_pending += t_grad[t] && t_producer[t] != kNoOp;
    if (barrier_devs.size() > 1 && n_barrier > 0) {
      barrier_time = n_barrier * cost.group_collective_time(CollectiveKind::kAllReduce,
                                                            groups[group_index(barrier_devs)],
                                                            sizeof(float), SyncScheme::kAuto);
    }
    barrier_time += tied_time;
  }
}

void Simulator::Impl::prepare_instances() {
  // Instances.
  inst_op.resize(n_inst);
  inst_key.resize(n_inst);
  pending.resize(n_inst);
  ready_time.assign(n_inst, 0.0);
  start_time.assign(n_inst, 0.0);
  end_time.assign(n_inst, 0.0);
  ready_cause.assign(n_inst, kNoInst);
  cause.assign(n_inst, kNoInst);
  const std::vector<uint32_t> rank = pass_order();
  for (OpId o = 0; o < n_ops; ++o) {
    int nd = 0;
    devs_of(o, &nd);
    const OpId f = op_fwd[o];
    const bool after_fwd =
        op_phase[o] == Phase::kBackward && f != kNoOp && op_phase[f] == Phase::kForward;
    const int32_t pend = static_cast<int32_t>(in_off[o + 1] - in_off[o]) * nd + (after_fwd ? 1 : 0);
    const Phase phase = op_phase[o];
    const uint32_t n = n_inst_of(o);
    for (uint32_t j = 0; j < n; ++j) {
      const uint32_t i = inst_of(o, j);
      inst_op[i] = o;
      pending[i] = pend + (barrier_pending > 0 && phase == Phase::kOptimizer ? 1 : 0);
      const uint64_t slot = pipelined ? schedule_slot(o, j) : 0;
      inst_key[i] = (slot << 32) | rank[o];
    }
  }
}

void Simulator::Impl::prepare_gradient_syncs(const Plan& p) {
  // Gradient sync groups: non-pipelined, per primary device d, the devices replicating d;
  // pipelined, per stage, its devices and their replicas.
  syncs.clear();
  dev_sync.assign(n_dev, -1);
  stage_sync.assign(static_cast<size_t>(std::max(n_stages, 1)), -1);
  auto add_sync = [&](std::vector<int>& devs) -> int32_t {
    std::sort(devs.begin(), devs.end());
    devs.erase(std::unique(devs.begin(), devs.end()), devs.end());
    if (devs.size() < 2) return -1;
    Sync s;
    s.group = group_index(devs);
    s.remaining = 0;
    s.open_bytes = 0;
    s.head = s.tail = kNoTensor;
    syncs.push_back(s);
    return static_cast<int32_t>(syncs.size() - 1);
  };
  t_sync.assign(n_tensors, -1);
  for (TensorId t = 0; t < n_tensors; ++t) {
    if (!t_grad[t] || t_producer[t] == kNoOp) continue;
    const OpId pr = t_producer[t];
    int32_t s = -1;
    if (pipelined) {
      const int st = op_stage[pr];
      if (stage_sync[st] == -1) {
        scratch_devs.clear();
        // The stage's data-parallel copies of TP rank 0 (each TP rank syncs its own shard
        // with its copies at the same time, over disjoint devices).
        const PipelineStage& pst = p.pipeline.stages[st];
        for (size_t k = 0; k < pst.devices.size(); k += size_t(pst.tensor_parallel)) {
          for (int r = 0; r < R; ++r) scratch_devs.push_back(p.replica_device(pst.devices[k], r, n_dev));
        }
        const int32_t id = add_sync(scratch_devs);
        stage_sync[st] = id < 0 ? -2 : id;
      }
      s = stage_sync[st];
    } else if (R > 1) {
      const int d = op_dev[pr];
      if (dev_sync[d] == -1) {
        scratch_devs.clear();
        for (int r = 0; r < R; ++r) scratch_devs.push_back(p.replica_device(d, r, n_dev));
        const int32_t id = add_sync(scratch_devs);
        dev_sync[d] = id < 0 ? -2 : id;
      }
      s = dev_sync[d];
    }
    if (s >= 0) {
      t_sync[t] = s;
      ++syncs[s].remaining;
    }
  }
  t_next.assign(n_tensors, kNoTensor);
}

void Simulator::Impl::prepare_zero3_gathers(const Plan& p) {
  // ZeRO-3: a forward op and its first backward op first all-gather the op's parameters
  // from the data-parallel group (no prefetch modelled).
  if (zero_stage >= 3) {
    for (OpId f = 0; f < n_ops; ++f) {
      if (op_phase[f] != Phase::kForward || op_param[f] == 0) continue;
      if (fsdp && g.op(f).layer >= 0) continue;  // per block: prepare_fsdp_schedule
      const int32_t si = pipelined ? stage_sync[op_stage[f]] : (R > 1 ? dev_sync[op_dev[f]] : -2);
      if (si < 0) continue;
      const uint64_t div = op_part[f] >= 0 ? shard_div(p.partitions[op_part[f]]) : 1;
      const double t =
          cost.group_collective_time(CollectiveKind::kAllGather, groups[gather_group(si)],
                                     ceil_div(op_param[f], div), SyncScheme::kAuto);
      op_dur[f] += t;
      if (bwd_off[f] < bwd_off[f + 1]) op_dur[bwd_of[bwd_off[f]]] += t;
    }
  }
}

void Simulator::Impl::charge_micro_batch_overhead() {
  // The framework's per-micro-batch host work, before each stage's first forward ops (those
  // with no forward predecessor in their stage).
  if (const double mbo = cost.profile().micro_batch_overhead; mbo > 0) {
    std::vector<uint8_t> charged(static_cast<size_t>(std::max(n_stages, 1)), 0);
    for (OpId o : g.topo_order()) {
      if (op_phase[o] != Phase::kForward || op_input[o]) continue;
      const size_t st = pipelined ? static_cast<size_t>(op_stage[o]) : 0;
      if (charged[st]) continue;
      bool entry = true;
      for (OpId q : g.preds(o)) {
        if (op_phase[q] == Phase::kForward && !op_input[q] &&
            (!pipelined || op_stage[q] == op_stage[o])) {
          entry = false;
        }
      }
      if (entry) op_disp[o] += mbo, charged[st] = 1;
    }
  }
}

void Simulator::Impl::prepare_sites() {
  // Sites and their reads, then the reference counts (prepare_refs).
  site_off.resize(n_tensors + 1);
  sites.clear();
  for (TensorId t = 0; t < n_tensors; ++t) {
    site_off[t] = static_cast<uint32_t>(sites.size());
    const OpId pr = t_producer[t];
    if (pr == kNoOp) continue;
    if (++epoch == 0) {  // wrapped: clear the scratch stamps
      std::fill(site_epoch.begin(), site_epoch.end(), 0);
      epoch = 1;
    }
    const uint64_t src_bytes = op_input[pr] ? 0 : t_bytes[t];
    auto site_at = [&](int d, bool source) -> Site& {
      if (site_epoch[d] != epoch) {
        site_epoch[d] = epoch;
        site_of_dev[d] = static_cast<uint32_t>(sites.size());
        sites.push_back(
            Site{t, d, static_cast<uint8_t>(source), 0, 0, 0, source ? src_bytes : t_bytes[t]});
      }
      return sites[site_of_dev[d]];
    };
    int nd = 0;
    const int* pd = devs_of(pr, &nd);
    for (int k = 0; k < nd; ++k) site_at(pd[k], true);
    const bool mb = t_mb[t];
    for (OpId cns : g.consumers(t)) {
      // A recomputed activation is not held for the backward ops that read it.
      if (t_recomp[t] && op_phase[cns] == Phase::kBackward) continue;
      int nc = 0;
      const int* cd = devs_of(cns, &nc);
      for (int k = 0; k < nc; ++k) {
        Site& s = site_at(cd[k], false);
        if (mb) {
          (op_multi[cns] ? s.refs_mb : s.refs_last) += 1;
        } else {
          s.refs_mb += op_multi[cns] ? static_cast<uint32_t>(M) : 1u;
        }
      }
    }
  }
  site_off[n_tensors] = static_cast<uint32_t>(sites.size());
  prepare_refs();
}

// Reference counts per site and tensor instance (ref_of), numbered as instances are: the
// sites of tensors made once first, then micro-batch by micro-batch the sites of tensors
// made per micro-batch. The primary source also waits for every outgoing transfer.
void Simulator::Impl::prepare_refs() {
  uint32_t once = 0, multi = 0;
  for (const Site& s : sites) ++(t_mb[s.tensor] ? multi : once);
  const char* what = "simulator: tensor references (sites x micro-batches)";
  refs.assign(checked_add(once, checked_mul(multi, static_cast<uint32_t>(M), what), what), 0);
  ref_stride = multi;
  uint32_t next_once = 0, next_multi = once;
  for (TensorId t = 0; t < n_tensors; ++t) {
    const bool mb = t_mb[t];
    uint32_t out_mb = 0, out_last = 0;
    for (uint32_t s = site_off[t]; s < site_off[t + 1]; ++s) {
      if (sites[s].source) continue;
      ++(!mb || sites[s].refs_mb > 0 ? out_mb : out_last);
    }
    const uint32_t n = mb ? static_cast<uint32_t>(M) : 1u;
    for (uint32_t s = site_off[t]; s < site_off[t + 1]; ++s) {
      Site& st = sites[s];
      st.ref_base = mb ? next_multi++ : next_once++;
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t r = st.refs_mb + (i == n - 1 ? st.refs_last : 0);
        if (s == site_off[t]) r += out_mb + (i == n - 1 ? out_last : 0);
        ref_of(st, i) = r;
      }
    }
  }
}

void Simulator::Impl::prepare_output_allocations() {
  // Output memory an instance allocates on each of its devices when it starts (all source
  // sites of a tensor hold the same bytes).
  op_alloc_each.assign(n_ops, 0);
  op_alloc_first.assign(n_ops, 0);
  op_started.assign(n_ops, 0);
  for (OpId o = 0; o < n_ops; ++o) {
    for (uint32_t k = out_off[o]; k < out_off[o + 1]; ++k) {
      const TensorId t = out_t[k];
      const uint64_t b = sites[site_off[t]].bytes;
      (t_mb[t] ? op_alloc_each[o] : op_alloc_first[o]) += b;
    }
    op_alloc_each[o] += op_ws_run[o];
  }
}

void Simulator::Impl::reset_run_state() {
  // Devices, channels, events.
  dev_running.assign(n_dev, 0);
  dev_lock.assign(n_dev, 0);
  dev_busy_until.assign(n_dev, 0.0);
  xfer_busy_until.assign(n_dev, 0.0);
  comm_free.assign(n_dev, 0.0);
  host_issued.assign(n_dev, 0.0);
  host_wait.assign(n_dev, 0.0);
  compute_time.assign(n_dev, 0.0);
  dev_cur.assign(n_dev, kNoInst);
  mem_cur.assign(n_dev, 0);
  for (auto& q : ready) q.clear();
  dirty.clear();
  std::fill(dirty_flag.begin(), dirty_flag.end(), 0);
  comm_iv.resize(n_dev);
  for (auto& v : comm_iv) v.clear();
  comm_unsorted.assign(n_dev, 0);
  std::fill(chan_free.begin(), chan_free.end(), 0.0);
  events.clear();
  now = 0;
  finished = 0;
  op_produced.assign(n_ops, 0);
}

void Simulator::Impl::place_resident_memory() {
  // Resident memory: parameters and optimizer state (sharded by a non-batch split).
  for (OpId o = 0; o < n_ops; ++o) {
    if (op_resident[o] == 0) continue;
    int nd = 0;
    const int* d = devs_of(o, &nd);
    const uint64_t bytes = resident_bytes(o);
    for (int k = 0; k < nd; ++k) mem_cur[d[k]] += static_cast<int64_t>(bytes);
  }
  for (const auto& [d, bytes] : tied_memory) mem_cur[d] += static_cast<int64_t>(bytes);
  mem_peak = mem_cur;
  mem_resident = mem_cur;
}

// ---- Simulator --------------------------------------------------------------------------

Simulator::Simulator(const Graph& graph, const Cluster& cluster, const CostModel& cost)
    : graph_(graph),
      cluster_(cluster),
      cost_(cost),
      impl_(std::make_unique<Impl>(graph, cluster, cost)) {}

Simulator::~Simulator() = default;

SimResult Simulator::run(const Plan& plan, const SimOptions& options) {
  const Plan* p = &plan;
  if (needs_placement_pipeline(plan)) {
    impl_->staged = pipeline_from_placement(plan, graph_);
    p = &impl_->staged;
  }
  if (needs_tensor_parallel_expansion(*p)) {
    impl_->expanded = expand_tensor_parallel(*p, graph_, cluster_.num_devices());
    p = &impl_->expanded;
  }
  impl_->check_plan(*p);
  impl_->prepare(*p, options);
  impl_->sync_external = p->synchronization.enabled && p->data_parallel.replicas > 1;
  if (impl_->sync_external) impl_->grad_ready.assign(graph_.num_tensors(), -1);
  SimResult r;
  impl_->out = &r;
  impl_->simulate();
  impl_->finish_result(&r);
  r.symmetric = impl_->folded;
  r.full_reason = impl_->full_reason;
  if (impl_->sync_external) {
    apply_sync_strategies(graph_, cluster_, cost_, *p, impl_->grad_ready, &r);
  }
  impl_->out = nullptr;
  impl_->plan = nullptr;
  return r;
}

}  // namespace placer
