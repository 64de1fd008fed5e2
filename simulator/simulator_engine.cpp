// Simulator: the event loop. One queue of events ordered by (time, sequence number);
// all events of one timestamp are handled before any device picks its next op, so ties
// never depend on the order events were pushed. See docs/simulator.md.
#include <algorithm>

#include "simulator/simulator_impl.h"
#include "src/util/error.h"

namespace placer {

// ---- small helpers ----------------------------------------------------------------------

uint32_t Simulator::Impl::find_site(TensorId t, int dev) const {
  for (uint32_t s = site_off[t]; s < site_off[t + 1]; ++s) {
    if (sites[s].dev == dev) return s;
  }
  PLACER_DCHECK(false);
  return site_off[t];
}

uint32_t Simulator::Impl::producer_inst(TensorId t, uint32_t i) const {
  const OpId p = t_producer[t];
  return t_mb[t] ? inst_of(p, i) : last_inst(p);
}

void Simulator::Impl::push_event(double time, EventKind kind, uint32_t a, uint32_t b) {
  events.push(time, kind, a, b);
}

void Simulator::Impl::mark_dirty(int d) {
  if (dirty_flag[d]) return;
  dirty_flag[d] = 1;
  dirty.push_back(d);
}

void Simulator::Impl::alloc(int d, uint64_t bytes) {
  mem_cur[d] += static_cast<int64_t>(bytes);
  if (mem_cur[d] > mem_peak[d]) mem_peak[d] = mem_cur[d];
}

void Simulator::Impl::release_ref(uint32_t site, uint32_t i) {
  const Site& s = sites[site];
  if (--ref_of(s, i) == 0) release(s.dev, s.bytes);
}

void Simulator::Impl::add_comm(int d, double start, double end) {
  if (!(end > start)) return;
  std::vector<std::pair<double, double>>& v = comm_iv[d];
  if (!v.empty()) {
    std::pair<double, double>& b = v.back();
    if (start >= b.first && start <= b.second) {  // overlaps or continues the last one
      if (end > b.second) b.second = end;
      return;
    }
    if (start < b.first) comm_unsorted[d] = 1;
  }
  v.emplace_back(start, end);
}

void Simulator::Impl::record_compute(uint32_t inst, int d) {
  if (!opts.record_events) return;
  const OpId o = inst_op[inst];
  SimEvent e;
  e.kind = g.op(o).phase == Phase::kOptimizer ? SimEvent::kOptimizer : SimEvent::kCompute;
  e.device = d;
  e.op = o;
  e.micro_batch = op_multi[o] ? static_cast<int>(mb_of(o, inst)) : -1;
  e.start = start_time[inst];
  e.end = end_time[inst];
  out->events.push_back(e);
}

// ---- readiness and dispatch -------------------------------------------------------------

void Simulator::Impl::dec_pending(uint32_t inst, uint32_t producer) {
  if (--pending[inst] != 0) return;
  ready_time[inst] = now;
  ready_cause[inst] = producer;
  make_ready(inst);
}

// Whether a ready pipeline instance must still wait at its stage's gate.
bool Simulator::Impl::gated(uint32_t inst) const {
  const OpId o = inst_op[inst];
  const int st = op_stage[o];
  const int j = static_cast<int>(mb_of(o, inst));
  if (op_phase[o] == Phase::kForward) {
    const int r = stage_rank(st);
    if (!rank_gated[r]) return false;
    const int64_t k = fwd_vindex(st, j) - rank_warmup[r] - 1;  // the backward to wait for
    if (k < 0) return false;
    // Invert bwd_vindex on rank r: group of n_ranks micro-batches, chunk, micro-batch.
    const int64_t per_group = int64_t(n_ranks) * vstages;
    const int64_t in_group = k % per_group;
    const int chunk = vstages - 1 - static_cast<int>(in_group / n_ranks);
    const int64_t mb = (k / per_group) * n_ranks + in_group % n_ranks;
    const size_t s2 = static_cast<size_t>(chunk) * n_ranks + r;
    return bwd_left[s2 * M + static_cast<size_t>(mb)] > 0;
  }
  if (op_phase[o] == Phase::kBackward) {
    return gpipe ? fwd_left_stage[st] > 0 : fwd_left[static_cast<size_t>(st) * M + j] > 0;
  }
  return false;
}

void Simulator::Impl::release_held(int rank) {
  std::vector<uint32_t>& h = held[rank];
  for (size_t k = 0; k < h.size();) {
    const uint32_t x = h[k];
    if (gated(x)) {
      ++k;
      continue;
    }
    h[k] = h.back();
    h.pop_back();
    const int dev = op_dev[inst_op[x]];
    ready[dev].push_back(ReadyItem{inst_key[x], x});
    std::push_heap(ready[dev].begin(), ready[dev].end(), ReadyAfter());
    mark_dirty(dev);
  }
}

void Simulator::Impl::make_ready(uint32_t inst) {
  const OpId o = inst_op[inst];
  if (pipelined && op_multi[o] && gated(inst)) {
    held[stage_rank(op_stage[o])].push_back(inst);
    return;
  }
  const int d = op_dev[o];
  ready[d].push_back(ReadyItem{inst_key[inst], inst});
  std::push_heap(ready[d].begin(), ready[d].end(), ReadyAfter());
  mark_dirty(d);
}

void Simulator::Impl::dispatch(int d) {
  if (dev_running[d] || dev_lock[d] > 0 || ready[d].empty()) return;
  std::pop_heap(ready[d].begin(), ready[d].end(), ReadyAfter());
  const uint32_t inst = ready[d].back().inst;
  ready[d].pop_back();
  const OpId o = inst_op[inst];
  if (op_gang[o]) {
    start_gang(inst, d);
  } else {
    start_single(inst, d);
  }
}

void Simulator::Impl::alloc_outputs(OpId o) {
  uint64_t b = op_alloc_each[o];
  if (!op_started[o]) {
    op_started[o] = 1;
    b += op_alloc_first[o];  // accumulated over micro-batches: one buffer
  }
  if (b == 0) return;
  int nd = 0;
  const int* d = devs_of(o, &nd);
  for (int k = 0; k < nd; ++k) alloc(d[k], b);
}

// The host of device d issues ops in the order the device runs them, op_disp each; an op
// starts no earlier than its issue. A host that ran ahead (the device was busy) hides it.
double Simulator::Impl::issue_time(int d, OpId o) {
  host_issued[d] += op_disp[o];
  return host_issued[d];
}

void Simulator::Impl::start_single(uint32_t inst, int d) {
  const OpId o = inst_op[inst];
  double start = now;
  if (op_disp[o] > 0) start = std::max(start, issue_time(d, o));
  host_wait[d] += start - now;
  if (any_blocking) start = std::max(start, xfer_busy_until[d]);
  double dur = op_dur[o];
  if (overlap_slowdown > 1 && comm_free[d] > start) dur *= overlap_slowdown;
  const double end = start + dur;
  start_time[inst] = start;
  end_time[inst] = end;
  cause[inst] = start > ready_time[inst] ? dev_cur[d] : ready_cause[inst];
  dev_running[d] = 1;
  dev_busy_until[d] = end;
  dev_cur[d] = inst;
  compute_time[d] += dur;
  host_waits_for(o, end, &d, 1);
  alloc_outputs(o);
  record_compute(inst, d);
  push_event(end, kFinish, inst);
}

// A partitioned op starts when all its devices are free: the primary reserves the others
// (they take no new work until it ends; no backfilling of the gap).
void Simulator::Impl::start_gang(uint32_t inst, int d) {
  const OpId o = inst_op[inst];
  int nd = 0;
  const int* devs = devs_of(o, &nd);
  double start = now;
  int last = d;
  for (int k = 0; k < nd; ++k) {
    const int e = devs[k];
    if (e != d && dev_busy_until[e] > start) start = dev_busy_until[e], last = e;
  }
  if (op_disp[o] > 0) {
    const double free = start;
    for (int k = 0; k < nd; ++k) start = std::max(start, issue_time(devs[k], o));
    for (int k = 0; k < nd; ++k) host_wait[devs[k]] += start - free;
  }
  if (any_blocking) {
    for (int k = 0; k < nd; ++k) start = std::max(start, xfer_busy_until[devs[k]]);
  }
  double dur = op_dur[o];
  if (overlap_slowdown > 1 && comm_free[d] > start) dur *= overlap_slowdown;
  const double end = start + dur;
  start_time[inst] = start;
  end_time[inst] = end;
  cause[inst] = start > ready_time[inst] ? dev_cur[last] : ready_cause[inst];
  host_waits_for(o, end, devs, nd);
  for (int k = 0; k < nd; ++k) {
    const int e = devs[k];
    if (e != d) ++dev_lock[e];
    dev_busy_until[e] = end;
    dev_cur[e] = inst;
  }
  dev_running[d] = 1;
  if (start > now) {
    push_event(start, kGangStart, inst);
  } else {
    begin_gang(inst);
  }
}

void Simulator::Impl::begin_gang(uint32_t inst) {
  const OpId o = inst_op[inst];
  int nd = 0;
  const int* devs = devs_of(o, &nd);
  for (int k = 0; k < nd; ++k) {
    compute_time[devs[k]] += end_time[inst] - start_time[inst];
    record_compute(inst, devs[k]);
  }
  alloc_outputs(o);
  push_event(end_time[inst], kFinish, inst);
}

// ---- completion and data movement -------------------------------------------------------

void Simulator::Impl::on_finish(uint32_t inst) {
  const OpId o = inst_op[inst];
  const uint32_t j = mb_of(o, inst);
  int nd = 0;
  const int* devs = devs_of(o, &nd);
  const int primary = op_dev[o];
  for (int k = 0; k < nd; ++k) {
    const int e = devs[k];
    if (op_ws_run[o] > 0) release(e, op_ws_run[o]);
    if (e == primary) {
      dev_running[e] = 0;
    } else {
      --dev_lock[e];
    }
    mark_dirty(e);
  }
  ++finished;
  // Inputs read by this instance: one reference per (tensor, device).
  for (uint32_t k = in_off[o]; k < in_off[o + 1]; ++k) {
    const TensorId t = in_t[k];
    if (t_recomp[t] && op_phase[o] == Phase::kBackward) continue;  // not held (recomputed)
    const uint32_t idx = t_mb[t] ? (op_multi[o] ? j : static_cast<uint32_t>(M - 1)) : 0;
    for (int q = 0; q < nd; ++q) release_ref(find_site(t, devs[q]), idx);
  }
  // The backward ops of a forward op may start once it has run.
  for (uint32_t k = bwd_off[o]; k < bwd_off[o + 1]; ++k) {
    const OpId b = bwd_of[k];
    dec_pending(inst_of(b, op_multi[b] && op_multi[o] ? j : 0), inst);
  }
  // Pipeline gates: a finished forward / backward micro-batch may open one.
  if (pipelined && op_multi[o]) {
    const int st = op_stage[o];
    const size_t k = static_cast<size_t>(st) * M + j;
    bool open = false;
    if (op_phase[o] == Phase::kBackward) {
      open = --bwd_left[k] == 0 && rank_gated[stage_rank(st)];
    } else if (op_phase[o] == Phase::kForward) {
      open = --fwd_left[k] == 0;
      open = (--fwd_left_stage[st] == 0 && gpipe) || (open && !gpipe);
    }
    if (open && !held[stage_rank(st)].empty()) release_held(stage_rank(st));
  }
  if (op_coll[o] > 0) {
    // Partition-n-reduce: the outputs exist only after the all-gather / all-reduce.
    double start = 0;
    // MoE dispatch / combine carry an all-to-all without being partitioned: their group.
    const std::vector<int>& devs = op_part[o] >= 0 ? part_devs(op_part[o]) : group_devs[op_group[o]];
    const double end = reserve_comm(devs, op_coll[o], &start);
    ++out->num_collectives;
    out->collective_bytes += op_coll_bytes[o];
    if (opts.record_events) {
      for (int d : group_devs[op_group[o]]) {
        SimEvent e;
        e.kind = SimEvent::kCollective;
        e.device = d;
        e.op = o;
        e.micro_batch = op_multi[o] ? static_cast<int>(j) : -1;
        e.start = start;
        e.end = end;
        e.bytes = op_coll_bytes[o];
        e.collective = op_coll_kind[o];
        out->events.push_back(e);
      }
    }
    push_event(end, kPartDone, inst);
  } else {
    produce(inst);
  }
}

double Simulator::Impl::reserve_comm(const std::vector<int>& devs, double duration, double* start) {
  double s = now;
  for (int d : devs) s = std::max(s, comm_free[d]);
  const double end = s + duration;
  for (int d : devs) {
    comm_free[d] = end;
    add_comm(d, s, end);
  }
  *start = s;
  return end;
}

void Simulator::Impl::produce(uint32_t inst) {
  const OpId o = inst_op[inst];
  const uint32_t j = mb_of(o, inst);
  const bool last = ++op_produced[o] == n_inst_of(o);
  for (uint32_t k = out_off[o]; k < out_off[o + 1]; ++k) {
    const TensorId t = out_t[k];
    if (t_mb[t]) {
      make_available(t, j, inst);
    } else if (last) {
      if (t_sync[t] >= 0) {
        bucket_add(t);
      } else {
        make_available(t, 0, inst);
      }
    }
  }
}

void Simulator::Impl::make_available(TensorId t, uint32_t i, uint32_t producer) {
  if (barrier_pending > 0 && t_grad[t]) {
    barrier_cause = producer;
    gradient_ready();
  }
  const bool mb = t_mb[t];
  const uint32_t last = static_cast<uint32_t>(M - 1);
  for (uint32_t s = site_off[t]; s < site_off[t + 1]; ++s) {
    const Site& st = sites[s];
    if (st.source) {
      // Nobody holds it (a sink's output, or read only by backward ops that recompute
      // it): freed at once; its readers on this device still learn it was produced.
      if (ref_of(st, i) == 0) release(st.dev, st.bytes);
      deliver(s, i, producer);
    } else if (!mb || st.refs_mb > 0 || (i == last && st.refs_last > 0)) {
      issue_transfer(s, i);
    }
  }
}

void Simulator::Impl::deliver(uint32_t site, uint32_t i, uint32_t producer) {
  const TensorId t = sites[site].tensor;
  const int x = sites[site].dev;
  const bool mb = t_mb[t];
  for (OpId c : g.consumers(t)) {
    if (!on_device(c, x)) continue;
    if (mb) {
      if (op_multi[c]) {
        dec_pending(inst_of(c, i), producer);
      } else if (i == static_cast<uint32_t>(M - 1)) {
        dec_pending(op_inst[c], producer);
      }
    } else {
      for (uint32_t k = 0; k < n_inst_of(c); ++k) dec_pending(inst_of(c, k), producer);
    }
  }
}

// When a transfer may start on device d: at once on a device with copy engines; on one
// without, after its running op and its earlier transfers.
double Simulator::Impl::blocked_from(int d) const {
  if (!dev_blocking[d]) return 0.0;
  return std::max(dev_busy_until[d], xfer_busy_until[d]);
}

void Simulator::Impl::issue_transfer(uint32_t site, uint32_t i) {
  const TensorId t = sites[site].tensor;
  const int src = site_sender[site];
  const int dst = sites[site].dev;
  const uint64_t bytes = site_wire[site];
  int32_t a, b;
  transfer_channels(src, dst, &a, &b);
  double start = std::max(now, chan_free[a]);
  if (b >= 0) start = std::max(start, chan_free[b]);
  if (any_blocking) start = std::max(start, std::max(blocked_from(src), blocked_from(dst)));
  const double end = start + cost.transfer_time(src, dst, bytes);
  chan_free[a] = end;
  if (b >= 0) chan_free[b] = end;
  if (any_blocking) {
    if (dev_blocking[src]) xfer_busy_until[src] = end;
    if (dev_blocking[dst]) xfer_busy_until[dst] = end;
  }
  // Scatter / gather: the receiver all-gathers the TP ranks' shares, which travel at the
  // same time over symmetric links, as soon as its own share is in.
  const double arrive = end + site_gather[site];
  add_comm(src, start, end);
  add_comm(dst, start, arrive);
  out->num_transfers += dev_mult[dst];
  out->transfer_bytes += bytes * dev_mult[dst];
  if (opts.record_events) {
    SimEvent e;
    e.kind = SimEvent::kTransfer;
    e.device = src;
    e.peer = dst;
    e.op = g.tensor(t).producer;
    e.tensor = t;
    e.micro_batch = pipelined && t_mb[t] ? static_cast<int>(i) : -1;
    e.start = start;
    e.end = arrive;
    e.bytes = bytes;
    out->events.push_back(e);
  }
  push_event(arrive, kArrive, site, i);
}

void Simulator::Impl::on_arrive(uint32_t site, uint32_t i) {
  const Site& s = sites[site];
  if (p2p_host_sync) {
    // Both hosts wait for the transfer before they issue anything else.
    host_issued[s.dev] = std::max(host_issued[s.dev], now);
    const int src = site_sender[site];
    host_issued[src] = std::max(host_issued[src], now);
  }
  alloc(s.dev, s.bytes);
  deliver(site, i, producer_inst(s.tensor, i));
  release_ref(site_off[s.tensor], i);  // the sender's copy
}

// ---- gradient synchronisation -----------------------------------------------------------

void Simulator::Impl::bucket_add(TensorId t) {
  Sync& s = syncs[t_sync[t]];
  if (s.head == kNoTensor) {
    s.head = t;
  } else {
    t_next[s.tail] = t;
  }
  s.tail = t;
  t_next[t] = kNoTensor;
  s.open_bytes += t_sync_bytes[t];
  if (sync_external) grad_ready[t] = now;
  --s.remaining;
  // FSDP reduces each block's gradients together, as soon as the block's backward is done
  // (with overlap off, all of them after the backward, as any sync).
  const bool per_block = fsdp && plan->data_parallel.overlap;
  const bool full = per_block ? fsdp_block_done(t) : s.open_bytes >= bucket_bytes;
  if (full || s.remaining == 0) launch_bucket(t_sync[t]);
}

void Simulator::Impl::launch_bucket(uint32_t sync_index) {
  Sync& s = syncs[sync_index];
  const uint32_t b = static_cast<uint32_t>(buckets.size());
  buckets.push_back(Bucket{sync_index, s.head, s.open_bytes});
  // ZeRO (Megatron's distributed optimizer): gradients are reduce-scattered, and the updated
  // parameter shards all-gathered after the optimizer step; both are charged to the bucket.
  const double dur =
      sync_external ? 0
      : fsdp        ? fsdp_reduce_time(sync_index, s.open_bytes)
      : zero_stage >= 1
          ? cost.group_collective_time(CollectiveKind::kReduceScatter, groups[s.group],
                                       s.open_bytes, SyncScheme::kAuto) +
                cost.group_collective_time(CollectiveKind::kAllGather, groups[s.group],
                                           s.open_bytes, SyncScheme::kAuto)
          : cost.group_collective_time(CollectiveKind::kAllReduce, groups[s.group], s.open_bytes,
                                       sync);
  double start = 0;
  const double end = reserve_comm(group_devs[s.group], dur, &start);
  ++out->num_collectives;
  out->collective_bytes += s.open_bytes;
  if (opts.record_events) {
    for (int d : group_devs[s.group]) {
      SimEvent e;
      e.kind = SimEvent::kCollective;
      e.device = d;
      e.tensor = s.head;
      e.start = start;
      e.end = end;
      e.bytes = s.open_bytes;
      out->events.push_back(e);
    }
  }
  s.head = s.tail = kNoTensor;
  s.open_bytes = 0;
  push_event(end, kBucketDone, b);
}

void Simulator::Impl::on_bucket_done(uint32_t bucket) {
  for (TensorId t = buckets[bucket].head; t != kNoTensor; t = t_next[t]) {
    make_available(t, 0, producer_inst(t, 0));
  }
}

// ---- the step barrier before the optimizer ----------------------------------------------

void Simulator::Impl::gradient_ready() {
  if (--barrier_pending == 0) push_event(now + barrier_time, kBarrier, barrier_cause);
}

void Simulator::Impl::on_barrier() {
  for (int d : barrier_devs) {
    host_issued[d] = std::max(host_issued[d], now);  // the host read the scalar (.item())
    if (barrier_time > 0) add_comm(d, now - barrier_time, now);
    if (barrier_time > 0 && opts.record_events && d < n_dev && dev_used[d]) {
      SimEvent e;
      e.kind = SimEvent::kCollective;
      e.device = d;
      e.start = now - barrier_time;
      e.end = now;
      out->events.push_back(e);
    }
  }
  for (OpId o = 0; o < n_ops; ++o) {
    if (op_phase[o] != Phase::kOptimizer) continue;
    for (uint32_t j = 0; j < n_inst_of(o); ++j) dec_pending(inst_of(o, j), barrier_cause);
  }
}

// ---- the loop ---------------------------------------------------------------------------

void Simulator::Impl::simulate() {
  // By op, then micro-batch: the order devices are first dispatched in (ties between
  // devices) does not depend on how instances are numbered.
  for (OpId o = 0; o < n_ops; ++o) {
    for (uint32_t j = 0; j < n_inst_of(o); ++j) {
      if (pending[inst_of(o, j)] == 0) make_ready(inst_of(o, j));
    }
  }
  for (;;) {
    for (size_t k = 0; k < dirty.size(); ++k) {
      dirty_flag[dirty[k]] = 0;
      dispatch(dirty[k]);
    }
    dirty.clear();
    if (events.empty()) break;
    now = events.top_time();
    while (!events.empty() && events.top_time() == now) {
      const EventQueue::Event e = events.pop();
      switch (e.kind) {
        case kFinish:
          on_finish(e.a);
          break;
        case kGangStart:
          begin_gang(e.a);
          break;
        case kArrive:
          on_arrive(e.a, e.b);
          break;
        case kPartDone:
          produce(e.a);
          break;
        case kBucketDone:
          on_bucket_done(e.a);
          break;
        case kBarrier:
          on_barrier();
          break;
      }
    }
  }
  if (finished != n_inst) {
    // The first instance still pending, by op then micro-batch (else the last one).
    uint32_t stuck = kNoInst;
    for (OpId o = 0; o < n_ops && stuck == kNoInst; ++o) {
      for (uint32_t j = 0; j < n_inst_of(o) && stuck == kNoInst; ++j) {
        if (pending[inst_of(o, j)] != 0) stuck = inst_of(o, j);
      }
    }
    if (stuck == kNoInst) stuck = last_inst(n_ops - 1);
    for (const auto& h : held) {
      if (pending[stuck] == 0 && !h.empty()) stuck = h.front();
    }
    throw Error("simulator: " + std::to_string(n_inst - finished) + " of " +
                std::to_string(n_inst) + " op executions never ran (e.g. '" +
                g.op(inst_op[stuck]).name + "'); the plan deadlocks under this model");
  }
  // Every tensor allocated during the step has been freed again (a cheap self-check).
  for (int d = 0; d < n_dev; ++d) {
    if (mem_cur[d] != mem_resident[d]) {
      throw Error("simulator: internal error: device " + std::to_string(d) +
                  " ends the step with " + std::to_string(mem_cur[d] - mem_resident[d]) +
                  " bytes of tensors still allocated");
    }
  }
}

// ---- results ----------------------------------------------------------------------------

void Simulator::Impl::finish_result(SimResult* r) {
  r->step_time = now;
  r->simulated_ops = n_inst;
  r->expert_load = expert_load;
  r->compute_time = compute_time;
  r->comm_time.assign(n_dev, 0.0);
  for (int d = 0; d < n_dev; ++d) {
    std::vector<std::pair<double, double>>& v = comm_iv[d];
    if (v.empty()) continue;
    if (comm_unsorted[d]) std::sort(v.begin(), v.end());
    double total = 0, s = v[0].first, e = v[0].second;
    for (size_t k = 1; k < v.size(); ++k) {
      if (v[k].first > e) {
        total += e - s;
        s = v[k].first;
        e = v[k].second;
      } else {
        e = std::max(e, v[k].second);
      }
    }
    r->comm_time[d] = total + (e - s);
  }
  r->peak_memory.resize(n_dev);
  for (int d = 0; d < n_dev; ++d) r->peak_memory[d] = static_cast<uint64_t>(mem_peak[d]);
  r->host_wait = host_wait;
  if (fsdp) {
    r->fsdp_forward_wait = fsdp_fwd_wait;
    r->fsdp_backward_wait = fsdp_bwd_wait;
  }
  if (plan->context_parallel.enabled()) {
    r->context_forward_wait = cp_fwd_wait;
    r->context_backward_wait = cp_bwd_wait;
  }

  if (folded) mirror_folded_ranks(r);
  // Devices that replicate a simulated one (data-parallel replicas, the extra devices of a
  // replicated pipeline stage) run the same timeline.
  const Plan& p = *plan;
  auto mirror = [&](int from, int to) {
    if (to == from || to < 0 || to >= n_dev || dev_used[to]) return;
    r->compute_time[to] = r->compute_time[from];
    r->host_wait[to] = r->host_wait[from];
    r->comm_time[to] = std::max(r->comm_time[to], r->comm_time[from]);
    r->peak_memory[to] = r->peak_memory[from];
  };
  if (pipelined) {
    for (const PipelineStage& st : p.pipeline.stages) {
      // Device i of the stage's grid runs what TP rank i % tensor_parallel of copy 0 runs.
      for (size_t i = 0; i < st.devices.size(); ++i) {
        const int from = st.devices[i % size_t(st.tensor_parallel)];
        for (int k = 0; k < R; ++k) mirror(from, p.replica_device(st.devices[i], k, n_dev));
      }
    }
  } else if (R > 1) {
    for (int d = 0; d < n_dev; ++d) {
      if (!dev_used[d]) continue;
      for (int k = 1; k < R; ++k) mirror(d, p.replica_device(d, k, n_dev));
    }
  }
  r->idle_time.resize(n_dev);
  for (int d = 0; d < n_dev; ++d) {
    r->idle_time[d] = std::max(0.0, r->step_time - r->compute_time[d]);
    if (r->peak_memory[d] > c.device(d).spec.memory_bytes) {
      r->oom = true;
      r->oom_devices.push_back(d);
    }
  }

  if (opts.critical_path && n_inst > 0) {
    // The instance that ends last; on a tie the first by op, then micro-batch.
    uint32_t last = op_inst[0];
    for (OpId o = 0; o < n_ops; ++o) {
      for (uint32_t j = 0; j < n_inst_of(o); ++j) {
        if (end_time[inst_of(o, j)] > end_time[last]) last = inst_of(o, j);
      }
    }
    for (uint32_t i = last, steps = 0; i != kNoInst && steps <= n_inst; i = cause[i], ++steps) {
      r->critical_path.push_back(inst_op[i]);
    }
    std::reverse(r->critical_path.begin(), r->critical_path.end());
  }
}

}  // namespace placer
