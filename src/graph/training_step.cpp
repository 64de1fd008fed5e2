#include "src/graph/training_step.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "src/graph/kernel_list.h"
#include "src/graph/moe_attrs.h"
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
  // FlashAttention's backward recomputes the scores and forms dq, dk, dv: 5 products of
  // the forward's 2 (Dao 2023, Sec. 3.1; its benchmark counts backward = 2.5 x forward).
  set(OpCategory::kAttention, 2.5);
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

// The op's kBackwardBytesAttr: decimal digits only; ValidationError naming the op otherwise.
uint64_t stated_backward_bytes(const Op& f) {
  const std::string& v = *find_op_attr(f, kBackwardBytesAttr);
  const bool digits = !v.empty() && v.size() <= 19 &&
                      std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) {
    throw ValidationError("op '" + f.name + "': attribute " + kBackwardBytesAttr + " '" + v +
                          "' is not a byte count");
  }
  return std::stoull(v);
}

}  // namespace

namespace {

// The op's kSavedTensorsAttr, when it has one; ValidationError on an unknown value.
bool stated_saved_tensors(const Op& f, SavedTensors* out) {
  const std::string* v = f.attrs.empty() ? nullptr : find_op_attr(f, kSavedTensorsAttr);
  if (v == nullptr) return false;
  const std::pair<const char*, SavedTensors> names[] = {
      {"none", SavedTensors::kNone},
      {"inputs", SavedTensors::kInputs},
      {"outputs", SavedTensors::kOutputs},
      {"inputs_outputs", SavedTensors::kInputsAndOutputs}};
  for (const auto& [name, saved] : names) {
    if (*v == name) return *out = saved, true;
  }
  throw ValidationError("op '" + f.name + "': attribute " + kSavedTensorsAttr + " '" + *v +
                        "' is not none, inputs, outputs or inputs_outputs");
}

}  // namespace

SavedTensors saved_tensors_of(const Op& f) {
  SavedTensors stated;
  if (stated_saved_tensors(f, &stated)) return stated;
  // FlashAttention keeps q, k, v, its output and the logsumexp (never the probabilities).
  if (f.category == OpCategory::kAttention) return SavedTensors::kInputsAndOutputs;
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
  // An MoE combine scatters the expert outputs back to their tokens. Megatron-core weights
  // them by the routing probabilities inside the experts' activation (experts.py,
  // activation_func_with_probs / weighted_bias_swiglu_impl), whose backward reads the fc1
  // output it saves anyway; the combine's backward is a gather of the gradient by the
  // routing map and keeps no expert output alive.
  if (f.type == "MoeCombine") return SavedTensors::kNone;
  // gpt-oss's fc2 bias, b * p added per expert: its backward reads the routing probabilities
  // and the bias (a few bytes per row), never the rows it was added to.
  if (f.type == "ExpertBias") return SavedTensors::kNone;
  return SavedTensors::kInputs;
}

namespace {

void check_forward_graph(const Graph& fwd) {
  const std::string ctx = "graph '" + fwd.name() + "'";
  if (fwd.is_training_step()) {
    throw ValidationError(ctx + ": already a training step; expand a forward graph");
  }
  for (const Op& o : fwd.ops()) {
    if (o.phase == Phase::kBackward || o.phase == Phase::kOptimizer ||
        o.category == OpCategory::kOptimizer) {
      throw ValidationError(ctx + ": op '" + o.name + "' is a " + to_string(o.phase) + " / " +
                            to_string(o.category) +
                            " op; training-step expansion needs a forward graph");
    }
  }
}

// Which forward ops get a backward op and an update, and which tensors carry gradients.
struct GradientFlow {
  // Input-category ops that own parameters (TF-style Variable nodes). They get no backward
  // op, but the gradients of their outputs feed their update op.
  std::vector<char> param_source;
  // F needs a gradient and is a loss or feeds, through a float tensor, an on-path op.
  std::vector<char> on_path;
  // A tensor gets gradients when it is float and its producer is on the path (or a parameter
  // source); grad_count[t] = how many on-path consumers each write one gradient of it.
  std::vector<char> carries;
  std::vector<uint32_t> grad_count;
  std::vector<char> has_update;

  // t is a float tensor whose producer is flagged or a parameter source.
  bool from_flagged(const Graph& fwd, TensorId t, const std::vector<char>& flag) const {
    const Tensor& ten = fwd.tensor(t);
    return is_float(ten.dtype) && ten.producer != kNoOp &&
           (flag[ten.producer] || param_source[ten.producer]);
  }
};

std::vector<char> parameter_sources(const Graph& fwd) {
  std::vector<char> param_source(fwd.num_ops(), 0);
  for (OpId i = 0; i < fwd.num_ops(); ++i) {
    const Op& o = fwd.op(i);
    param_source[i] = o.category == OpCategory::kInput && o.param_bytes > 0;
  }
  return param_source;
}

// needs[F]: F owns parameters or reads a float tensor that depends on parameters.
std::vector<char> ops_needing_gradients(const Graph& fwd, const GradientFlow& flow) {
  std::vector<char> needs(fwd.num_ops(), 0);
  for (OpId f : fwd.topo_order()) {
    const Op& o = fwd.op(f);
    if (o.category == OpCategory::kInput) continue;
    bool need = o.param_bytes > 0;
    for (TensorId t : o.inputs) need = need || flow.from_flagged(fwd, t, needs);
    needs[f] = need;
  }
  return needs;
}

// on_path[F]: F needs a gradient and is a loss (a sink with a float output or none) or
// feeds, through a float tensor, an op that is on the path.
std::vector<char> ops_on_gradient_path(const Graph& fwd, const std::vector<char>& needs) {
  std::vector<char> on_path(fwd.num_ops(), 0);
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
  return on_path;
}

GradientFlow analyze_gradient_flow(const Graph& fwd) {
  GradientFlow flow;
  flow.param_source = parameter_sources(fwd);
  flow.on_path = ops_on_gradient_path(fwd, ops_needing_gradients(fwd, flow));
  const size_t nt = fwd.num_tensors();
  flow.carries.assign(nt, 0);
  flow.grad_count.assign(nt, 0);
  for (TensorId t = 0; t < nt; ++t) {
    flow.carries[t] = flow.from_flagged(fwd, t, flow.on_path);
    if (!flow.carries[t]) continue;
    for (OpId c : fwd.consumers(t)) flow.grad_count[t] += flow.on_path[c] ? 1 : 0;
  }
  flow.has_update.assign(fwd.num_ops(), 0);
  for (OpId i = 0; i < fwd.num_ops(); ++i) {
    const Op& o = fwd.op(i);
    char& update = flow.has_update[i];
    if (flow.param_source[i]) {
      for (TensorId t : o.outputs) update = update || (flow.carries[t] && flow.grad_count[t]);
    } else {
      update = flow.on_path[i] && o.param_bytes > 0;
    }
  }
  return flow;
}

std::string group_of(const Op& o) { return o.group.empty() ? o.name : o.group; }

// Additions that sum k gradients of tensor t into one: k - 1 per element.
double gradient_sum_flops(const Graph& fwd, TensorId t, size_t k) {
  return static_cast<double>(k - 1) * static_cast<double>(elements(fwd.tensor(t)));
}

// Builds the training step of a forward graph: the forward ops, one backward op per on-path
// op (in reverse topological order), then the optimizer updates.
class TrainingStepBuilder {
 public:
  TrainingStepBuilder(const Graph& fwd, const TrainingOptions& opt)
      : fwd_(fwd),
        opt_(opt),
        flow_(analyze_gradient_flow(fwd)),
        b_(fwd.name()),
        incoming_(fwd.num_tensors()),
        param_grads_(fwd.num_ops()),
        stamp_(fwd.num_tensors(), 0) {}

  Graph build() {
    copy_forward();
    const std::vector<OpId>& topo = fwd_.topo_order();
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      if (flow_.param_source[*it]) {
        add_parameter_gradient_sum(*it);
      } else if (flow_.on_path[*it]) {
        add_backward_op(*it);
      }
    }
    // Optimizer updates, in the order their gradients become ready.
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      if (flow_.has_update[*it] && !param_grads_[*it].empty()) add_update_op(*it);
    }
    return b_.build();
  }

 private:
  void copy_forward() {
    b_.set_batch_size(fwd_.batch_size());
    b_.set_training_step(true);
    b_.set_attrs(fwd_.attrs());
    for (const Tensor& t : fwd_.tensors()) b_.add_tensor(t);
    for (OpId i = 0; i < fwd_.num_ops(); ++i) {
      Op o = fwd_.op(i);
      // Forward op, its backward and its update share a colocation group by default.
      if (o.group.empty() && (flow_.on_path[i] || flow_.has_update[i])) o.group = o.name;
      b_.add_op(std::move(o));
    }
  }

  TensorId make_grad(TensorId t, const std::string& name, bool param_grad, bool batch_scaled) {
    Tensor g = fwd_.tensor(t);
    g.name = name;
    g.producer = kNoOp;
    g.is_param_grad = param_grad;
    g.batch_scaled = batch_scaled;
    return b_.add_tensor(std::move(g));
  }

  // An op derived from forward op f: name suffix, phase and placement fields.
  Op derived_op(OpId f, const char* suffix, Phase phase) const {
    const Op& fo = fwd_.op(f);
    Op d;
    d.name = fo.name + suffix;
    d.phase = phase;
    d.dtype = fo.dtype;
    d.scope = fo.scope;
    d.layer = fo.layer;
    d.group = group_of(fo);
    d.forward_op = f;
    return d;
  }

  // Fan-out of a parameter tensor: the partial gradients are summed (AddN) before the single
  // is_param_grad tensor that data parallelism all-reduces.
  void add_parameter_gradient_sum(OpId f) {
    const Op& fo = fwd_.op(f);
    Op acc = derived_op(f, "/grad", Phase::kBackward);
    acc.type = "AddN";
    acc.category = OpCategory::kElementwise;
    acc.batch_scaled = false;
    for (TensorId t : fo.outputs) {
      if (!flow_.carries[t] || incoming_[t].empty()) continue;
      if (incoming_[t].size() == 1) {
        param_grads_[f].push_back(incoming_[t][0]);
        continue;
      }
      acc.inputs.insert(acc.inputs.end(), incoming_[t].begin(), incoming_[t].end());
      acc.flops += gradient_sum_flops(fwd_, t, incoming_[t].size());
      const TensorId g = make_grad(t, fwd_.tensor(t).name + "/grad", true, false);
      acc.outputs.push_back(g);
      param_grads_[f].push_back(g);
    }
    if (!acc.outputs.empty()) b_.add_op(std::move(acc));
  }

  void add_backward_op(OpId f) {
    const Op& fo = fwd_.op(f);
    Op g = derived_op(f, "/grad", Phase::kBackward);
    g.type = fo.type + "Grad";
    g.category = fo.category;
    g.workspace_bytes = fo.workspace_bytes;
    g.batch_scaled = fo.batch_scaled;
    g.attrs = fo.attrs;
    ++cur_;
    const double acc_flops = read_incoming_gradients(fo, &g);
    read_saved_tensors(f, &g);
    const OperandCount operands = write_gradients(f, &g);
    set_backward_cost(fo, operands, acc_flops, &g);
    b_.add_op(std::move(g));
  }

  // Adds t to g's inputs unless it is there already (stamp_ marks the current op's inputs).
  void add_input_once(TensorId t, Op* g) {
    if (t >= stamp_.size()) stamp_.resize(t + 1, 0);
    if (stamp_[t] == cur_) return;
    stamp_[t] = cur_;
    g->inputs.push_back(t);
  }

  // Incoming gradients, one per on-path consumer of each output (summed inside this op:
  // k gradients cost k - 1 additions per element). Returns the summing FLOPs.
  double read_incoming_gradients(const Op& fo, Op* g) {
    double acc_flops = 0;
    for (TensorId t : fo.outputs) {
      for (TensorId gt : incoming_[t]) add_input_once(gt, g);
      if (incoming_[t].size() > 1) acc_flops += gradient_sum_flops(fwd_, t, incoming_[t].size());
    }
    return acc_flops;
  }

  // Saved forward tensors: reading them keeps them alive until this op has run.
  void read_saved_tensors(OpId f, Op* g) {
    const Op& fo = fwd_.op(f);
    switch (saved_tensors_of(fo)) {
      case SavedTensors::kInputs:
        for (TensorId t : fo.inputs) add_input_once(t, g);
        break;
      case SavedTensors::kOutputs:
        for (TensorId t : fo.outputs) add_input_once(t, g);
        break;
      case SavedTensors::kInputsAndOutputs:
        for (TensorId t : fo.inputs) add_input_once(t, g);
        for (TensorId t : fo.outputs) add_input_once(t, g);
        break;
      case SavedTensors::kNone:
        break;
    }
    // A loss (an on-path sink) seeds backward: its gradient is d loss / d loss = 1, known only
    // once the loss is computed, so its backward op reads the loss value (or, for a sink
    // without outputs, its inputs). Without this edge backward could start before forward.
    if (fwd_.succs(f).empty()) {
      for (TensorId t : fo.outputs) add_input_once(t, g);
      if (fo.outputs.empty()) {
        for (TensorId t : fo.inputs) add_input_once(t, g);
      }
    }
  }

  // Distinct operands of a backward op (inputs and parameters) and those needing a gradient.
  struct OperandCount {
    uint32_t operands = 0;
    uint32_t needed = 0;
  };

  // Outputs: one gradient per distinct input that carries one, then the parameter gradient.
  OperandCount write_gradients(OpId f, Op* g) {
    const Op& fo = fwd_.op(f);
    OperandCount count;
    ++cur_;
    for (TensorId t : fo.inputs) {
      if (stamp_[t] == cur_) continue;
      stamp_[t] = cur_;
      ++count.operands;
      if (!flow_.carries[t]) continue;
      ++count.needed;
      const Tensor& ft = fwd_.tensor(t);
      const bool from_param = flow_.param_source[ft.producer];
      const bool single = flow_.grad_count[t] == 1;
      std::string name = ft.name + "/grad";
      if (!single) name += "@" + fo.name;
      const TensorId gt =
          make_grad(t, name, from_param && single, from_param ? false : ft.batch_scaled);
      g->outputs.push_back(gt);
      incoming_[t].push_back(gt);
    }
    if (fo.param_bytes > 0) {
      ++count.operands;
      ++count.needed;
      Tensor pg;
      pg.name = fo.name + "/param_grad";
      pg.dtype = fo.dtype;
      pg.bytes = fo.param_bytes;
      pg.batch_scaled = false;
      pg.is_param_grad = true;
      const TensorId id = b_.add_tensor(std::move(pg));
      g->outputs.push_back(id);
      param_grads_[f].push_back(id);
    }
    return count;
  }

  void set_backward_cost(const Op& fo, OperandCount count, double acc_flops, Op* g) {
    double mult = opt_.backward_multiplier[static_cast<int>(fo.category)];
    if (fo.category == OpCategory::kMatMul || fo.category == OpCategory::kConv) {
      // One forward-sized product per operand that needs a gradient: a first layer reading
      // only data computes dW but no dX (1x instead of 2x).
      const uint32_t operands = std::min<uint32_t>(count.operands, 2);
      const uint32_t needed = std::min(count.needed, operands);
      if (operands > 0) mult *= static_cast<double>(needed) / operands;
    }
    g->flops = mult * fo.flops + acc_flops;
    if (fo.category == OpCategory::kAttention && fo.bytes_accessed > 0) {
      g->bytes_accessed = attention_backward_bytes(fo);
      return;
    }
    if (find_op_attr(fo, kBackwardBytesAttr) != nullptr) {
      g->bytes_accessed = stated_backward_bytes(fo);
      return;
    }
    uint64_t bytes = fo.param_bytes;  // weights are read to form the input gradients
    for (TensorId t : g->inputs) bytes += b_.tensor(t).bytes;
    for (TensorId t : g->outputs) bytes += b_.tensor(t).bytes;
    g->bytes_accessed = bytes;
  }

  // FlashAttention's backward (Dao 2023, Algorithm 2) reads q, k, v, o, do and the
  // logsumexp L, writes dq, dk, dv, and writes and reads D = rowsum(do * o) (L's size): with
  // the forward's traffic F = q + k + v + o + L that is 2 F + L. The forward op's last
  // output is L.
  uint64_t attention_backward_bytes(const Op& fo) const {
    const uint64_t lse = fo.outputs.empty() ? 0 : fwd_.tensor(fo.outputs.back()).bytes;
    return 2 * fo.bytes_accessed + lse;
  }

  void add_update_op(OpId f) {
    const Op& fo = fwd_.op(f);
    const Optimizer o = opt_.optimizer;
    Op u = derived_op(f, "/update", Phase::kOptimizer);
    u.type = optimizer_op_type(o);
    u.category = OpCategory::kOptimizer;
    u.batch_scaled = false;
    u.inputs = param_grads_[f];
    const double elems =
        static_cast<double>(fo.param_bytes) / static_cast<double>(dtype_bytes(fo.dtype));
    u.flops = optimizer_flops_per_element(o) * elems;
    if (opt_.master_weights && is_16bit_float(fo.dtype)) {
      // Reads the gradient, reads and writes the fp32 master copy and states, writes the
      // 16-bit parameter.
      u.state_bytes = optimizer_state_bytes(o, fo.param_bytes, fo.dtype, true);
      u.bytes_accessed = 2 * fo.param_bytes + 2 * u.state_bytes;
    } else {
      const uint64_t copies = static_cast<uint64_t>(optimizer_state_copies(o));
      u.state_bytes = copies * fo.param_bytes;
      // Reads parameter, gradient and states; writes parameter and states.
      u.bytes_accessed = (3 + 2 * copies) * fo.param_bytes;
    }
    b_.add_op(std::move(u));
  }

  const Graph& fwd_;
  const TrainingOptions& opt_;
  const GradientFlow flow_;
  GraphBuilder b_;
  // incoming_[t]: the gradient tensors of forward tensor t, in creation order.
  std::vector<std::vector<TensorId>> incoming_;
  // param_grads_[f]: the is_param_grad tensors that f's update op reads.
  std::vector<std::vector<TensorId>> param_grads_;
  std::vector<uint32_t> stamp_;  // dedupes tensors within one op (grows with new ids)
  uint32_t cur_ = 0;
};

}  // namespace

Graph expand_training_step(const Graph& fwd, const TrainingOptions& opt) {
  check_forward_graph(fwd);
  return TrainingStepBuilder(fwd, opt).build();
}

}  // namespace placer
