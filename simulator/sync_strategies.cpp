#include "simulator/sync_strategies.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "src/graph/sparse_gradients.h"

namespace placer {

namespace {

uint64_t ceil_div_u(uint64_t a, uint64_t b) { return b == 0 ? a : (a + b - 1) / b; }

bool is_wide_float(DType t) { return t == DType::kF32 || t == DType::kF64; }

// Compressors whose payloads cannot be summed on the way (an all-reduce of them becomes an
// all-gather of every worker's payload).
bool nonlinear(Compressor c) { return c == Compressor::kOneBit || c == Compressor::kTopK; }

double max_of(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, x);
  return m;
}

}  // namespace

uint64_t compressed_bytes(const VariableSync& s, uint64_t elems, DType dtype, uint64_t rows,
                          uint64_t cols) {
  const uint64_t eb = static_cast<uint64_t>(dtype_bytes(dtype));
  switch (s.compressor) {
    case Compressor::kNone:
      return elems * eb;
    case Compressor::kFP16:
      return elems * (is_wide_float(dtype) ? 2 : eb);
    case Compressor::kOneBit:
      return ceil_div_u(elems, 8) + 2 * sizeof(float);
    case Compressor::kTopK: {
      const uint64_t k = static_cast<uint64_t>(std::ceil(s.topk_ratio * static_cast<double>(elems)));
      return std::min(elems, k) * (eb + sizeof(int32_t));
    }
    case Compressor::kPowerSGD: {
      const uint64_t r = static_cast<uint64_t>(std::max(s.powersgd_rank, 1));
      return std::min(elems, (rows + cols) * r) * eb;
    }
  }
  return elems * eb;
}

SyncCostModel::SyncCostModel(const Graph& g, const Cluster& c, const CostModel& cost,
                             const Plan& plan)
    : g_(g), c_(c), cost_(cost), plan_(plan), n_dev_(c.num_devices()) {
  host_leader_.resize(n_dev_);
  for (int d = 0; d < n_dev_; ++d) host_leader_[d] = c.host(c.device(d).host).devices.front();
  nic_per_host_ = c.link(LinkLevel::kInterHost).sharing == LinkSharing::kPerHost;
  // Tensor fusion (Horovod): collectives of all variables go out in buckets, so a variable
  // pays the latency term in proportion to its share of a bucket.
  for (OpId v : sync_variables(g)) fused_total_ += v < g.num_ops() ? g.op(v).param_bytes : 0;
}

int SyncCostModel::port(int device, bool out, bool inter) const {
  const int d = inter && nic_per_host_ ? host_leader_[device] : device;
  return 4 * d + (out ? 2 : 0) + (inter ? 1 : 0);
}

void SyncCostModel::message(Phase* ph, int a, int b, double bytes) const {
  if (a == b || bytes <= 0) return;
  const bool inter = c_.device(a).host != c_.device(b).host;
  const double sec = bytes / cost_.bandwidth(a, b);
  ph->load[port(a, true, inter)] += sec;
  ph->load[port(b, false, inter)] += sec;
  ph->latency = std::max(ph->latency, cost_.latency(a, b));
}

void SyncCostModel::collective(Phase* ph, const std::vector<int>& devs, double seconds) const {
  bool inter = false;
  for (int d : devs) inter = inter || c_.device(d).host != c_.device(devs.front()).host;
  for (int d : devs) {
    for (bool out : {true, false}) {
      double& l = ph->load[port(d, out, inter)];
      l = std::max(l, seconds);  // a collective holds each port once, whoever shares it
    }
  }
}

double SyncCostModel::fused_collective(CollectiveKind k, const std::vector<int>& devs,
                                       double bytes, SyncScheme algo) const {
  const double full = cost_.collective_time(k, devs, static_cast<uint64_t>(bytes), algo);
  const double lat = cost_.collective_time(k, devs, 0, algo);
  const double bucket = static_cast<double>(plan_.data_parallel.bucket_bytes);
  const double denom = std::max(std::min(bucket, static_cast<double>(fused_total_)), bytes);
  return full - lat + lat * (denom > 0 ? bytes / denom : 1.0);
}

double SyncCostModel::codec_time(int device, double bytes, double flops) const {
  double t = 0;
  if (bytes > 0) {
    Op pass;
    pass.category = OpCategory::kElementwise;
    t += cost_.op_time(pass, static_cast<uint64_t>(bytes), device);
  }
  if (flops > 0) {
    Op mm;
    mm.category = OpCategory::kMatMul;
    mm.flops = flops;
    t += cost_.op_time(mm, 0, device);
  }
  return t;
}

std::vector<int> SyncCostModel::workers(OpId v) const {
  std::vector<int> w;
  const int d = v < plan_.placement.size() ? plan_.placement[v] : 0;
  for (int r = 0; r < plan_.data_parallel.replicas; ++r) {
    w.push_back(plan_.replica_device(d, r, n_dev_));
  }
  return w;
}

namespace {

// A worker's gradient of one variable as a matrix (PowerSGD's view): rows x cols >= elems.
struct GradientShape {
  uint64_t elems = 0, rows = 0, cols = 0;
};

// The payload: sparse rows for PS / all-gather, else the dense gradient; sets
// out->grad_bytes and out->wire_bytes (after compression).
GradientShape gradient_payload(const Graph& g, OpId v, const VariableSync& s, int replicas,
                               VariableSyncCost* out) {
  const Op& op = g.op(v);
  const uint64_t eb = static_cast<uint64_t>(dtype_bytes(op.dtype));
  const SparseGradient sg = sparse_gradient(g, v, replicas);
  const bool sparse = sg.sparse && (s.synchronizer == Synchronizer::kParameterServer ||
                                    s.synchronizer == Synchronizer::kAllGather);
  out->grad_bytes = sparse ? sg.bytes() : op.param_bytes;
  GradientShape gs;
  gs.elems = out->grad_bytes / std::max<uint64_t>(eb, 1);
  // Matrix view for PowerSGD: columns = the output's last dimension when it divides.
  if (!op.outputs.empty() && !g.tensor(op.outputs[0]).shape.empty()) {
    const int64_t last = g.tensor(op.outputs[0]).shape.back();
    if (last > 0 && gs.elems % static_cast<uint64_t>(last) == 0) {
      gs.cols = static_cast<uint64_t>(last);
    }
  }
  if (gs.cols == 0) {
    gs.cols = std::max<uint64_t>(1, static_cast<uint64_t>(std::sqrt(double(gs.elems))));
  }
  gs.rows = std::max<uint64_t>(1, gs.elems / gs.cols);
  out->wire_bytes = compressed_bytes(s, gs.elems, op.dtype, gs.rows, gs.cols);
  return gs;
}

// Encode / decode work on a worker: memory passes, and PowerSGD's matmuls.
struct CodecWork {
  double enc_bytes = 0, enc_flops = 0, dec_bytes = 0, dec_flops = 0;
};

// The compressor's work on `out`'s gradient; sets out->state_bytes (error feedback, Q).
CodecWork codec_work(const VariableSync& s, const Op& op, const GradientShape& gs,
                     VariableSyncCost* out) {
  const uint64_t eb = static_cast<uint64_t>(dtype_bytes(op.dtype));
  const double grad = static_cast<double>(out->grad_bytes);
  const double wire = static_cast<double>(out->wire_bytes);
  const double rows = double(gs.rows), cols = double(gs.cols);
  CodecWork w;
  switch (s.compressor) {
    case Compressor::kNone: break;
    case Compressor::kFP16:
      w.enc_bytes = grad + wire, w.dec_bytes = wire + grad;
      break;
    case Compressor::kOneBit:  // add the error, quantise, keep the new error
      w.enc_bytes = 3 * grad + wire, w.dec_bytes = wire + grad;
      out->state_bytes = op.param_bytes;
      break;
    case Compressor::kTopK:  // add the error, select, keep the rest as error
      w.enc_bytes = 4 * grad + wire, w.dec_bytes = wire + grad;
      out->state_bytes = op.param_bytes;
      break;
    case Compressor::kPowerSGD: {
      const double r = std::max(s.powersgd_rank, 1);
      w.enc_bytes = 3 * grad;  // error feedback
      w.enc_flops = 4.0 * rows * cols * r + 2.0 * rows * r * r;
      w.dec_flops = 2.0 * rows * cols * r;
      out->state_bytes = op.param_bytes + gs.cols * static_cast<uint64_t>(r) * eb;
      break;
    }
  }
  return w;
}

}  // namespace

SyncCostModel::Phase SyncCostModel::gather_phase(const std::vector<int>& workers, double bytes_each,
                                                 SyncScheme algo) const {
  Phase ph{std::vector<double>(num_ports(), 0), 0};
  const int replicas = static_cast<int>(workers.size());
  collective(&ph, workers,
             fused_collective(CollectiveKind::kAllGather, workers, replicas * bytes_each,
                              algo == SyncScheme::kHierarchical ? algo : SyncScheme::kRing));
  return ph;
}

void SyncCostModel::parameter_server_phases(const std::vector<int>& workers, const VariableSync& s,
                                            double wire, std::vector<Phase>* phases) const {
  auto new_phase = [&]() -> Phase& {
    phases->push_back(Phase{std::vector<double>(num_ports(), 0), 0});
    return phases->back();
  };
  const int shards = std::max(1, std::min<int>(s.shards, int(s.destinations.size())));
  const std::vector<int> servers(s.destinations.begin(), s.destinations.begin() + shards);
  // Senders to the servers: every worker, or each host's first worker after a local sum.
  std::vector<int> senders;
  std::vector<std::pair<int, int>> local;  // (worker, its host's sender)
  for (int w : workers) {
    int leader = w;
    if (s.local_aggregation) {
      for (int x : senders) {
        if (c_.device(x).host == c_.device(w).host) leader = x;
      }
    }
    if (leader == w)
      senders.push_back(w);
    else
      local.emplace_back(w, leader);
  }
  if (!local.empty()) {
    Phase& reduce = new_phase();
    for (auto [w, l] : local) message(&reduce, w, l, wire);
  }
  Phase& push = new_phase();
  for (int w : senders)
    for (int sv : servers) message(&push, w, sv, wire / shards);
  Phase& pull = new_phase();
  for (int w : senders)
    for (int sv : servers) message(&pull, sv, w, wire / shards);
  if (!local.empty()) {
    Phase& bcast = new_phase();
    for (auto [w, l] : local) message(&bcast, l, w, wire);
  }
}

void SyncCostModel::add_network(const std::vector<Phase>& phases, VariableSyncCost* out) const {
  for (const Phase& ph : phases) {
    const double busiest = max_of(ph.load);
    if (busiest <= 0) continue;
    out->network_time += busiest + ph.latency;
    for (int p = 0; p < num_ports(); ++p) {
      if (ph.load[p] > 0) out->port_load[p] += ph.load[p] + ph.latency;
    }
  }
}

VariableSyncCost SyncCostModel::variable_cost(OpId v, const VariableSync& s) const {
  const Op& op = g_.op(v);
  const std::vector<int> W = workers(v);
  const int R = static_cast<int>(W.size());
  const uint64_t eb = static_cast<uint64_t>(dtype_bytes(op.dtype));
  VariableSyncCost out;
  out.op = v;
  out.port_load.assign(num_ports(), 0);
  const GradientShape gs = gradient_payload(g_, v, s, R, &out);
  CodecWork codec = codec_work(s, op, gs, &out);
  const double wire = static_cast<double>(out.wire_bytes);

  std::vector<Phase> phases;
  int decode_copies = 1;  // an all-gather decodes every worker's payload
  const SyncScheme algo = s.algorithm;
  // Poseidon's factors of an FC layer y = x W (W: m x n): b rows of x and of dy per worker.
  const Tensor* fc_out = op.outputs.empty() ? nullptr : &g_.tensor(op.outputs[0]);
  const bool fc = op.category == OpCategory::kMatMul && fc_out && fc_out->shape.size() >= 2 &&
                  fc_out->shape.back() > 0;
  switch (s.synchronizer) {
    case Synchronizer::kFactorBroadcast:
      if (fc) {
        const double n = double(fc_out->shape.back());
        const double m = double(gs.elems) / n;
        const double b = double(g_.tensor(op.outputs[0]).bytes / eb) / n / R;
        out.wire_bytes = static_cast<uint64_t>(b * (m + n)) * eb;
        codec.dec_flops += 2.0 * R * b * m * n;
        phases.push_back(gather_phase(W, double(out.wire_bytes), algo));
        decode_copies = R;
        break;
      }
      [[fallthrough]];  // not a fully connected layer: a dense all-reduce
    case Synchronizer::kAllReduce:
      if (nonlinear(s.compressor)) {
        phases.push_back(gather_phase(W, wire, algo));
        decode_copies = R;
      } else {
        phases.push_back(Phase{std::vector<double>(num_ports(), 0), 0});
        collective(&phases.back(), W, fused_collective(CollectiveKind::kAllReduce, W, wire, algo));
      }
      break;
    case Synchronizer::kAllGather:
      phases.push_back(gather_phase(W, wire, algo));
      decode_copies = R;
      break;
    case Synchronizer::kParameterServer:
      parameter_server_phases(W, s, wire, &phases);
      break;
  }

  add_network(phases, &out);
  const int dev = W.front();
  const double enc_work = codec.enc_bytes + codec.enc_flops;
  const double dec_work = codec.dec_bytes + codec.dec_flops;
  out.encode_time = enc_work > 0 ? codec_time(dev, codec.enc_bytes, codec.enc_flops) : 0;
  out.decode_time = dec_work > 0 ? decode_copies * codec_time(dev, codec.dec_bytes,
                                                              codec.dec_flops / decode_copies)
                                 : 0;
  return out;
}

double steady_state_step(const SyncWindowInput& in) {
  // Classes by staleness: 0 first (blocking), then growing bounds, async (-1) last.
  std::map<int, std::vector<const SyncWindowInput::Var*>> by_s;
  for (const auto& v : in.vars) by_s[v.staleness < 0 ? INT32_MAX : v.staleness].push_back(&v);
  struct Class {
    int s = 0;
    bool async = false;
    double busy = 0, ready = 0, finish = 0;  // finish: staleness 0 only, from step start
  };
  std::vector<Class> classes;
  int max_s = 0;
  for (const auto& [s, vars] : by_s) {
    Class c;
    c.s = s;
    c.async = s == INT32_MAX;
    if (!c.async) max_s = std::max(max_s, s);
    std::vector<double> total;
    for (const auto* v : vars) {
      if (total.size() < v->port_load.size()) total.resize(v->port_load.size(), 0);
      for (size_t p = 0; p < v->port_load.size(); ++p) total[p] += v->port_load[p];
      c.busy = std::max(c.busy, v->busy);
      c.ready = std::max(c.ready, v->ready);
    }
    c.busy = std::max(c.busy, max_of(total));
    if (s == 0) {
      // Fluid bound with overlap: from each ready time on, the port work of the variables
      // ready then or later still has to pass.
      std::vector<const SyncWindowInput::Var*> order(vars);
      std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->ready > b->ready; });
      std::vector<double> suffix(total.size(), 0);
      for (const auto* v : order) {
        for (size_t p = 0; p < v->port_load.size(); ++p) suffix[p] += v->port_load[p];
        c.finish = std::max({c.finish, v->ready + max_of(suffix), v->ready + v->busy});
      }
    }
    classes.push_back(c);
  }
  const int K = 2 * max_s + 64;
  std::vector<std::vector<double>> end(classes.size(), std::vector<double>(K, 0));
  double start = 0, network_free = 0;
  std::vector<double> finish(K, 0);
  for (int k = 0; k < K; ++k) {
    double next = start + in.compute_step;
    for (size_t c = 0; c < classes.size(); ++c) {
      const Class& cl = classes[c];
      if (cl.s == 0) {
        end[c][k] = std::max(start + cl.finish, network_free + cl.busy);
        next = std::max(next, end[c][k] + in.tail);
      } else {
        end[c][k] = std::max(network_free, start + cl.ready) + cl.busy;
      }
      network_free = end[c][k];
      if (cl.s > 0 && !cl.async && k - cl.s >= 0) next = std::max(next, end[c][k - cl.s]);
    }
    finish[k] = std::max(next, network_free);
    start = next;
  }
  const int half = K / 2;
  return (finish[K - 1] - finish[half - 1]) / double(K - half);
}

void apply_sync_strategies(const Graph& g, const Cluster& c, const CostModel& cost,
                           const Plan& plan, const std::vector<double>& grad_ready,
                           SimResult* r) {
  if (!plan.synchronization.enabled || plan.data_parallel.replicas <= 1) return;
  // A variable's gradient is ready when the last gradient its optimizer op reads is.
  std::vector<double> ready(g.num_ops(), -1);
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const Op& op = g.op(o);
    if (op.phase != Phase::kOptimizer || op.forward_op == kNoOp) continue;
    for (TensorId t : op.inputs) {
      if (g.tensor(t).is_param_grad && t < grad_ready.size()) {
        ready[op.forward_op] = std::max({ready[op.forward_op], grad_ready[t], 0.0});
      }
    }
  }
  const SyncCostModel model(g, c, cost, plan);
  SyncWindowInput in;
  std::vector<double> codec(c.num_devices(), 0);
  double last_ready = 0;
  for (OpId v : sync_variables(g)) {
    if (ready[v] < 0) continue;  // no optimizer step: nothing to synchronise
    const VariableSync& s = plan.synchronization.strategy_of(g, v);
    VariableSyncCost vc = model.variable_cost(v, s);
    for (int w : model.workers(v)) {
      codec[w] += vc.encode_time + vc.decode_time;
      r->peak_memory[w] += vc.state_bytes;
    }
    r->collective_bytes += vc.wire_bytes;
    r->sync_network_time += vc.network_time;
    last_ready = std::max(last_ready, ready[v]);
    in.vars.push_back({ready[v], vc.encode_time + vc.network_time + vc.decode_time,
                       std::move(vc.port_load), s.async ? -1 : s.staleness});
  }
  r->compute_step_time = r->step_time;
  r->sync_codec_time = *std::max_element(codec.begin(), codec.end());
  in.compute_step = r->step_time + r->sync_codec_time;
  in.tail = std::max(0.0, r->step_time - last_ready);
  r->step_time = steady_state_step(in);
  r->oom_devices.clear();
  r->oom = false;
  for (int d = 0; d < c.num_devices(); ++d) {
    if (d < int(r->peak_memory.size()) && r->peak_memory[d] > c.device(d).spec.memory_bytes) {
      r->oom = true;
      r->oom_devices.push_back(d);
    }
  }
}

}  // namespace placer
