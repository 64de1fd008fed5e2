#include "src/graph/training_step.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "src/util/error.h"

namespace placer {

const char* to_string(Optimizer o) {
  switch (o) {
    case Optimizer::kSgd:
      return "sgd";
    case Optimizer::kMomentum:
      return "momentum";
    case Optimizer::kAdam:
      return "adam";
  }
  return "adam";
}

bool parse_optimizer(const std::string& s, Optimizer* out) {
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  if (l == "sgd")
    *out = Optimizer::kSgd;
  else if (l == "momentum" || l == "sgd_momentum")
    *out = Optimizer::kMomentum;
  else if (l == "adam" || l == "adamw")
    *out = Optimizer::kAdam;
  else
    return false;
  return true;
}

int optimizer_state_copies(Optimizer o) {
  switch (o) {
    case Optimizer::kSgd:
      return 0;
    case Optimizer::kMomentum:
      return 1;
    case Optimizer::kAdam:
      return 2;
  }
  return 2;
}

double optimizer_flops_per_element(Optimizer o) {
  switch (o) {
    case Optimizer::kSgd:
      return 2;  // w -= lr * g
    case Optimizer::kMomentum:
      return 4;  // v = mu * v + g; w -= lr * v
    case Optimizer::kAdam:
      return 12;  // m: 3, v: 4, w -= lr * m / (sqrt(v) + eps): 5
  }
  return 12;
}

const char* optimizer_op_type(Optimizer o) {
  switch (o) {
    case Optimizer::kSgd:
      return "SGDUpdate";
    case Optimizer::kMomentum:
      return "MomentumUpdate";
    case Optimizer::kAdam:
      return "AdamUpdate";
  }
  return "AdamUpdate";
}

namespace {
// fp32 master copy and fp32 optimizer states (ZeRO, Rajbhandari et al. 2020, Sec. 3.1).
constexpr uint64_t kMasterBytesPerElement = 4;
bool is_16bit_float(DType t) { return t == DType::kF16 || t == DType::kBF16; }
}  // namespace

uint64_t optimizer_state_bytes(Optimizer o, uint64_t param_bytes, DType dtype,
                               bool master_weights) {
  const uint64_t copies = static_cast<uint64_t>(optimizer_state_copies(o));
  if (!master_weights || !is_16bit_float(dtype)) return copies * param_bytes;
  const uint64_t elems = param_bytes / static_cast<uint64_t>(dtype_bytes(dtype));
  return elems * kMasterBytesPerElement * (1 + copies);
}

BackwardMultipliers default_backward_multipliers() {
  BackwardMultipliers m;
  m.fill(1.0);
  auto set = [&m](OpCategory c, double v) { m[static_cast<int>(c)] = v; };
  set(OpCategory::kMatMul, 2.0);  // dX and dW: one forward-sized GEMM each
  set(OpCategory::kConv, 2.0);    // data-gradient and weight-gradient convolutions
  set(OpCategory::kRecurrent, 2.0);
  set(OpCategory::kNormalization, 2.0);  // two reductions + elementwise terms
  set(OpCategory::kOptimizer, 0.0);
  set(OpCategory::kInput, 0.0);
  return m;
}

namespace {

bool type_in(const std::string& type, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (type == n) return true;
  }
  return false;
}

bool is_float(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kF64;
}

uint64_t elements(const Tensor& t) {
  const int b = dtype_bytes(t.dtype);
  return b > 0 ? t.bytes / static_cast<uint64_t>(b) : t.bytes;
}

}  // namespace

SavedTensors saved_tensors_of(const Op& f) {
  // Ops whose derivative is a function of their result (PyTorch saves `result` for these).
  if (type_in(f.type, {"Relu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Softmax", "LogSoftmax", "Elu",
                       "Selu", "Reciprocal"})) {
    return SavedTensors::kOutputs;
  }
  // Linear in their inputs with constant coefficients: the backward needs shapes only.
  if (type_in(f.type, {"Add", "Sub", "Neg", "Cast", "Identity", "Dropout", "ReduceSum",
                       "ReduceMean", "AveragePool", "GlobalAveragePool", "AddN", "Sum"})) {
    return SavedTensors::kNone;
  }
  if (f.category == OpCategory::kDataMovement) return SavedTensors::kNone;
  return SavedTensors::kInputs;
}

Graph expand_training_step(const Graph& fwd, const TrainingOptions& opt) {
  const std::string ctx = "graph '" + fwd.name() + "'";
  if (fwd.is_training_step()) {
    throw ValidationError(ctx + ": already a training step; expand a forward graph");
  }
  const size_t n = fwd.num_ops();
  const size_t nt = fwd.num_tensors();
  for (const Op& o : fwd.ops()) {
    if (o.phase == Phase::kBackward || o.phase == Phase::kOptimizer ||
        o.category == OpCategory::kOptimizer) {
      throw ValidationError(ctx + ": op '" + o.name + "' is a " + to_string(o.phase) + " / " +
                            to_string(o.category) +
                            " op; training-step expansion needs a forward graph");
    }
  }

  // Parameter sources: input-category ops that own parameters (TF-style Variable nodes).
  // They get no backward op, but the gradients of their outputs feed their update op.
  std::vector<char> param_source(n, 0);
  for (OpId i = 0; i < n; ++i) {
    const Op& o = fwd.op(i);
    param_source[i] = o.category == OpCategory::kInput && o.param_bytes > 0;
  }
  auto grad_producer = [&](TensorId t, const std::vector<char>& flag) {
    const Tensor& ten = fwd.tensor(t);
    return is_float(ten.dtype) && ten.producer != kNoOp &&
           (flag[ten.producer] || param_source[ten.producer]);
  };

  // (a) needs[F]: F owns parameters or reads a float tensor that depends on parameters.
  std::vector<char> needs(n, 0);
  for (OpId f : fwd.topo_order()) {
    const Op& o = fwd.op(f);
    if (o.category == OpCategory::kInput) continue;
    bool need = o.param_bytes > 0;
    for (TensorId t : o.inputs) need = need || grad_producer(t, needs);
    needs[f] = need;
  }
  // (b) on_path[F]: F needs a gradient and is a loss (a sink with a float output or none) or
  // feeds, through a float tensor, an op that is on the path.
  std::vector<char> on_path(n, 0);
  const std::vector<OpId>& topo = fwd.topo_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const OpId f = *it;
    if (!needs[f]) continue;
    const Op& o = fwd.op(f);
    bool path = false;
    if (fwd.succs(f).empty()) {
      path = o.outputs.empty();
      for (TensorId t : o.outputs) path = path || is_float(fwd.tensor(t).dtype);
    }
    for (TensorId t : o.outputs) {
      if (!is_float(fwd.tensor(t).dtype)) continue;
      for (OpId c : fwd.consumers(t)) path = path || on_path[c];
    }
    on_path[f] = path;
  }
  // A tensor gets gradients when it is float and its producer is on the path (or a parameter
  // source); grad_count[t] = how many on-path consumers each write one gradient of it.
  std::vector<char> carries(nt, 0);
  std::vector<uint32_t> grad_count(nt, 0);
  for (TensorId t = 0; t < nt; ++t) {
    carries[t] = grad_producer(t, on_path);
    if (!carries[t]) continue;
    for (OpId c : fwd.consumers(t)) grad_count[t] += on_path[c] ? 1 : 0;
  }

  auto group_of = [&](const Op& o) { return o.group.empty() ? o.name : o.group; };
  std::vector<char> has_update(n, 0);
  for (OpId i = 0; i < n; ++i) {
    const Op& o = fwd.op(i);
    if (param_source[i]) {
      for (TensorId t : o.outputs) has_update[i] = has_update[i] || (carries[t] && grad_count[t]);
    } else {
      has_update[i] = on_path[i] && o.param_bytes > 0;
    }
  }

  GraphBuilder b(fwd.name());
  b.set_batch_size(fwd.batch_size());
  b.set_training_step(true);
  for (const Tensor& t : fwd.tensors()) b.add_tensor(t);
  for (OpId i = 0; i < n; ++i) {
    Op o = fwd.op(i);
    // Forward op, its backward and its update share a colocation group by default.
    if (o.group.empty() && (on_path[i] || has_update[i])) o.group = o.name;
    b.add_op(std::move(o));
  }

  // incoming[t]: the gradient tensors of forward tensor t, in creation order.
  std::vector<std::vector<TensorId>> incoming(nt);
  // param_grads[f]: the is_param_grad tensors that f's update op reads.
  std::vector<std::vector<TensorId>> param_grads(n);
  std::vector<uint32_t> stamp(nt, 0);  // dedupe tensors within one op (grows with new ids)
  uint32_t cur = 0;

  auto make_grad = [&](TensorId t, const std::string& name, bool param_grad, bool batch_scaled) {
    Tensor g = fwd.tensor(t);
    g.name = name;
    g.producer = kNoOp;
    g.is_param_grad = param_grad;
    g.batch_scaled = batch_scaled;
    return b.add_tensor(std::move(g));
  };

  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const OpId f = *it;
    const Op& fo = fwd.op(f);
    if (param_source[f]) {
      // Fan-out of a parameter tensor: the partial gradients are summed (AddN) before the
      // single is_param_grad tensor that data parallelism all-reduces.
      Op acc;
      acc.name = fo.name + "/grad";
      acc.type = "AddN";
      acc.category = OpCategory::kElementwise;
      acc.phase = Phase::kBackward;
      acc.dtype = fo.dtype;
      acc.scope = fo.scope;
      acc.layer = fo.layer;
      acc.group = group_of(fo);
      acc.batch_scaled = false;
      acc.forward_op = f;
      for (TensorId t : fo.outputs) {
        if (!carries[t] || incoming[t].empty()) continue;
        if (incoming[t].size() == 1) {
          param_grads[f].push_back(incoming[t][0]);
          continue;
        }
        acc.inputs.insert(acc.inputs.end(), incoming[t].begin(), incoming[t].end());
        acc.flops += static_cast<double>(incoming[t].size() - 1) *
                     static_cast<double>(elements(fwd.tensor(t)));
        const TensorId g = make_grad(t, fwd.tensor(t).name + "/grad", true, false);
        acc.outputs.push_back(g);
        param_grads[f].push_back(g);
      }
      if (!acc.outputs.empty()) b.add_op(std::move(acc));
      continue;
    }
    if (!on_path[f]) continue;

    Op g;
    g.name = fo.name + "/grad";
    g.type = fo.type + "Grad";
    g.category = fo.category;
    g.phase = Phase::kBackward;
    g.dtype = fo.dtype;
    g.scope = fo.scope;
    g.layer = fo.layer;
    g.group = group_of(fo);
    g.workspace_bytes = fo.workspace_bytes;
    g.batch_scaled = fo.batch_scaled;
    g.forward_op = f;
    g.attrs = fo.attrs;
    ++cur;
    auto add_input = [&](TensorId t) {
      if (t >= stamp.size()) stamp.resize(t + 1, 0);
      if (stamp[t] == cur) return;
      stamp[t] = cur;
      g.inputs.push_back(t);
    };

    // Incoming gradients, one per on-path consumer of each output (summed inside this op:
    // k gradients cost k - 1 additions per element).
    double acc_flops = 0;
    for (TensorId t : fo.outputs) {
      for (TensorId gt : incoming[t]) add_input(gt);
      if (incoming[t].size() > 1) {
        acc_flops += static_cast<double>(incoming[t].size() - 1) *
                     static_cast<double>(elements(fwd.tensor(t)));
      }
    }
    // Saved forward tensors: reading them keeps them alive until this op has run.
    switch (saved_tensors_of(fo)) {
      case SavedTensors::kInputs:
        for (TensorId t : fo.inputs) add_input(t);
        break;
      case SavedTensors::kOutputs:
        for (TensorId t : fo.outputs) add_input(t);
        break;
      case SavedTensors::kNone:
        break;
    }
    // A loss (an on-path sink) seeds backward: its gradient is d loss / d loss = 1, known only
    // once the loss is computed, so its backward op reads the loss value (or, for a sink
    // without outputs, its inputs). Without this edge backward could start before forward.
    if (fwd.succs(f).empty()) {
      for (TensorId t : fo.outputs) add_input(t);
      if (fo.outputs.empty()) {
        for (TensorId t : fo.inputs) add_input(t);
      }
    }

    // Outputs: one gradient per distinct input that carries one, then the parameter gradient.
    ++cur;
    uint32_t operands = 0, needed = 0;
    for (TensorId t : fo.inputs) {
      if (stamp[t] == cur) continue;
      stamp[t] = cur;
      ++operands;
      if (!carries[t]) continue;
      ++needed;
      const Tensor& ft = fwd.tensor(t);
      const bool from_param = param_source[ft.producer];
      const bool single = grad_count[t] == 1;
      std::string name = ft.name + "/grad";
      if (!single) name += "@" + fo.name;
      const TensorId gt =
          make_grad(t, name, from_param && single, from_param ? false : ft.batch_scaled);
      g.outputs.push_back(gt);
      incoming[t].push_back(gt);
    }
    if (fo.param_bytes > 0) {
      ++operands;
      ++needed;
      Tensor pg;
      pg.name = fo.name + "/param_grad";
      pg.dtype = fo.dtype;
      pg.bytes = fo.param_bytes;
      pg.batch_scaled = false;
      pg.is_param_grad = true;
      const TensorId id = b.add_tensor(std::move(pg));
      g.outputs.push_back(id);
      param_grads[f].push_back(id);
    }

    double mult = opt.backward_multiplier[static_cast<int>(fo.category)];
    if (fo.category == OpCategory::kMatMul || fo.category == OpCategory::kConv) {
      // One forward-sized product per operand that needs a gradient: a first layer reading
      // only data computes dW but no dX (1x instead of 2x).
      operands = std::min<uint32_t>(operands, 2);
      needed = std::min(needed, operands);
      if (operands > 0) mult *= static_cast<double>(needed) / operands;
    }
    g.flops = mult * fo.flops + acc_flops;
    uint64_t bytes = fo.param_bytes;  // weights are read to form the input gradients
    for (TensorId t : g.inputs) bytes += b.tensor(t).bytes;
    for (TensorId t : g.outputs) bytes += b.tensor(t).bytes;
    g.bytes_accessed = bytes;
    b.add_op(std::move(g));
  }

  // Optimizer updates, in the order their gradients become ready.
  const Optimizer o = opt.optimizer;
  const int copies = optimizer_state_copies(o);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const OpId f = *it;
    if (!has_update[f] || param_grads[f].empty()) continue;
    const Op& fo = fwd.op(f);
    Op u;
    u.name = fo.name + "/update";
    u.type = optimizer_op_type(o);
    u.category = OpCategory::kOptimizer;
    u.phase = Phase::kOptimizer;
    u.dtype = fo.dtype;
    u.scope = fo.scope;
    u.layer = fo.layer;
    u.group = group_of(fo);
    u.batch_scaled = false;
    u.forward_op = f;
    u.inputs = param_grads[f];
    const double elems =
        static_cast<double>(fo.param_bytes) / static_cast<double>(dtype_bytes(fo.dtype));
    u.flops = optimizer_flops_per_element(o) * elems;
    if (opt.master_weights && is_16bit_float(fo.dtype)) {
      // Reads the gradient, reads and writes the fp32 master copy and states, writes the
      // 16-bit parameter.
      u.state_bytes = optimizer_state_bytes(o, fo.param_bytes, fo.dtype, true);
      u.bytes_accessed = 2 * fo.param_bytes + 2 * u.state_bytes;
    } else {
      u.state_bytes = static_cast<uint64_t>(copies) * fo.param_bytes;
      // Reads parameter, gradient and states; writes parameter and states.
      u.bytes_accessed = static_cast<uint64_t>(3 + 2 * copies) * fo.param_bytes;
    }
    b.add_op(std::move(u));
  }
  return b.build();
}

}  // namespace placer
