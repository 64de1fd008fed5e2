// ONNX model -> forward Graph (rules: docs/import.md).
#include "datasets/onnx_import.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "datasets/onnx_cost.h"
#include "datasets/onnx_model.h"
#include "src/util/error.h"

namespace placer {

namespace {

using onnx_import::InputRole;
using onnx_import::NodeCost;
using onnx_import::ValueDesc;

// What a named ONNX value is to the importer.
enum class Kind : uint8_t {
  kData,    // an activation: a graph tensor (graph input or op output)
  kConst,   // known at import time (Constant, shape computation, integer initializer)
  kWeight,  // a parameter / buffer, or a re-layout of some (Transpose(W), LSTM gate packing)
};

struct Value {
  Kind kind = Kind::kData;
  bool is_float = false;
  DType dtype = DType::kF32;
  bool known = false;  // every dim known
  std::vector<int64_t> shape;
  double elems = 0;
  uint64_t bytes = 0;
  TensorId tensor = kNoTensor;    // kData
  bool batch_scaled = true;       // kData
  std::vector<uint32_t> origins;  // kWeight: parameter indices
};

struct Param {
  uint64_t bytes = 0;
  bool state = false;
  bool owned = false;
};

bool is_float_type(int32_t t) {
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::FLOAT16 ||
         t == onnx::TensorProto::BFLOAT16 || t == onnx::TensorProto::DOUBLE;
}

// ONNX element type -> DType (float types become the compute dtype).
DType dtype_of(int32_t t, DType compute) {
  switch (t) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::DOUBLE:
      return compute;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::COMPLEX64:
      return DType::kI64;
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
      return DType::kI32;
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
      return DType::kI16;
    case onnx::TensorProto::INT8:
      return DType::kI8;
    case onnx::TensorProto::BOOL:
      return DType::kBool;
    case onnx::TensorProto::COMPLEX128:
      return DType::kF64;
    default:
      return DType::kU8;  // uint8, strings (size unknown: one byte per element)
  }
}

void set_shape(Value* v, const std::vector<int64_t>& shape, bool known) {
  v->shape = shape;
  v->known = known;
  v->elems = 1;
  for (int64_t d : shape) v->elems *= static_cast<double>(std::max<int64_t>(d, 0));
  v->bytes =
      known ? static_cast<uint64_t>(v->elems) * static_cast<uint64_t>(dtype_bytes(v->dtype)) : 0;
}

// Value of a type (element type and shape) as far as known.
Value value_of_type(const onnx::TypeProto* t, DType compute) {
  Value v;
  if (t == nullptr || !t->has_tensor_type()) return v;
  const auto& tt = t->tensor_type();
  v.is_float = is_float_type(tt.elem_type());
  v.dtype = dtype_of(tt.elem_type(), compute);
  if (!tt.has_shape()) return v;
  std::vector<int64_t> shape;
  bool known = true;
  for (const auto& d : tt.shape().dim()) {
    known = known && d.has_dim_value() && d.dim_value() >= 0;
    shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
  set_shape(&v, shape, known);
  return v;
}

ValueDesc desc_of(const Value* v) {
  ValueDesc d;
  if (v == nullptr) return d;
  d.present = true;
  d.shape_known = v->known;
  d.shape = v->shape;
  d.elems = v->elems;
  d.is_param = v->kind == Kind::kWeight;
  return d;
}

// Numpy broadcast of known shapes; false if some shape is unknown or they do not broadcast.
bool broadcast(const std::vector<const Value*>& in, std::vector<int64_t>* out) {
  out->clear();
  for (const Value* v : in) {
    if (v == nullptr) continue;
    if (!v->known) return false;
    if (v->shape.size() > out->size()) out->insert(out->begin(), v->shape.size() - out->size(), 1);
    const size_t off = out->size() - v->shape.size();
    for (size_t i = 0; i < v->shape.size(); ++i) {
      int64_t& o = (*out)[off + i];
      const int64_t d = v->shape[i];
      if (o == 1) {
        o = d;
      } else if (d != 1 && d != o) {
        return false;
      }
    }
  }
  return true;
}

// Ops that only re-lay out their input (folded when applied to weights).
bool layout_op(const std::string& op) {
  static const std::unordered_set<std::string> kOps = {"Transpose", "Reshape", "Flatten", "Squeeze",
                                                       "Unsqueeze", "Concat",  "Slice",   "Split",
                                                       "Identity",  "Cast"};
  return kOps.count(op) > 0;
}

std::string stem_of(const std::string& path) {
  std::string s = path.substr(path.find_last_of('/') + 1);
  const std::string ext = ".onnx";
  if (s.size() > ext.size() && s.compare(s.size() - ext.size(), ext.size(), ext) == 0) {
    s.resize(s.size() - ext.size());
  }
  return s.empty() ? "model" : s;
}

// Simple attributes as text ("kernel_shape" -> "3,3"); tensors and graphs are left out.
void copy_attrs(const onnx::NodeProto& n, Op* op) {
  for (const auto& a : n.attribute()) {
    std::string v;
    switch (a.type()) {
      case onnx::AttributeProto::INT:
        v = std::to_string(a.i());
        break;
      case onnx::AttributeProto::FLOAT: {
        std::ostringstream os;
        os << a.f();
        v = os.str();
        break;
      }
      case onnx::AttributeProto::STRING:
        if (a.s().size() > 64) continue;
        v = a.s();
        break;
      case onnx::AttributeProto::INTS:
        if (a.ints_size() > 16) continue;
        for (int i = 0; i < a.ints_size(); ++i) v += (i ? "," : "") + std::to_string(a.ints(i));
        break;
      default:
        continue;
    }
    op->attrs.emplace_back(a.name(), v);
  }
  if (!n.domain().empty() && n.domain() != "ai.onnx") op->attrs.emplace_back("domain", n.domain());
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

// The inputs of one node: their values (nullptr for an absent optional input) and whether
// they are all constants / all known at import time.
struct NodeInputs {
  std::vector<const Value*> vals;
  bool all_const = true;
  bool weights_only = true;  // no activation among them
};

// Imports one model, stage by stage: prepare the model (dims, opset, shape inference), give
// every initializer and graph input a value, turn each node into a folded value or an op,
// then warn about what was estimated or dropped and build the graph.
class OnnxGraphBuilder {
 public:
  OnnxGraphBuilder(onnx::ModelProto& m, const std::string& file, const ImportOptions& opts,
                   std::vector<std::string>* warnings, ImportStats& st)
      : m_(m),
        file_(file),
        opts_(opts),
        warnings_(warnings),
        st_(st),
        b_(opts.name.empty() ? stem_of(file) : opts.name) {}

  Graph build() {
    prepare_model();
    index_types();
    b_.set_batch_size(batch_);
    reserve_values();
    add_initializers();
    add_graph_inputs();
    add_data_initializers();
    count_uses();
    make_hints();
    for (int ni = 0; ni < g().node_size(); ++ni) add_node(ni);
    warn_about_estimates();
    return finish();
  }

 private:
  const onnx::GraphProto& g() const { return m_.graph(); }

  void warn(const std::string& w) {
    if (warnings_) warnings_->push_back(w);
  }

  // Checks the model, substitutes symbolic dims, upgrades an old opset, infers shapes.
  void prepare_model() {
    st_.ir_version = m_.ir_version();
    onnx_import::check_inference_domains(m_, file_);
    st_.opset = onnx_import::check_opset(m_, file_);
    st_.producer =
        m_.producer_name() + (m_.producer_version().empty() ? "" : " " + m_.producer_version());
    roles_ = onnx_import::classify_inputs(m_.graph(), opts_);
    batch_ = onnx_import::substitute_dims(m_, roles_, opts_, file_, warnings_, &st_);
    if (st_.opset < onnx_import::kMinOpset) {
      // After the dims are substituted: the converter's adapters need static input shapes.
      onnx_import::upgrade_opset(m_, st_.opset, file_);
      st_.upgraded_from = st_.opset;
      st_.opset = onnx_import::kMinOpset;
      roles_ = onnx_import::classify_inputs(m_.graph(), opts_);  // the adapters may add nodes
    }
    st_.nodes = static_cast<size_t>(m_.graph().node_size());
    onnx_import::infer_shapes(m_, file_, warnings_, &st_);
    st_.batch_size = batch_;
  }

  // Types of every named value after inference.
  void index_types() {
    for (const auto& vi : g().input()) types_[vi.name()] = &vi.type();
    for (const auto& vi : g().value_info()) types_[vi.name()] = &vi.type();
    for (const auto& vi : g().output()) types_[vi.name()] = &vi.type();
  }

  const onnx::TypeProto* type_of(const std::string& name) const {
    auto it = types_.find(name);
    return it == types_.end() ? nullptr : it->second;
  }

  // Every named value gets one slot, reserved up front: add_node keeps pointers into
  // `values_` while it appends outputs.
  void reserve_values() {
    size_t n_values = static_cast<size_t>(g().input_size() + g().initializer_size());
    for (const auto& node : g().node()) n_values += static_cast<size_t>(node.output_size());
    values_.reserve(n_values);
    index_.reserve(n_values);
  }

  void add_value(const std::string& name, Value v) {
    PLACER_DCHECK(values_.size() < values_.capacity());
    index_[name] = static_cast<uint32_t>(values_.size());
    values_.push_back(std::move(v));
  }

  void add_param(const std::string& name, Value v, bool state) {
    params_.push_back({v.bytes, state, false});
    (state ? st_.state_tensors : st_.param_tensors)++;
    v.kind = Kind::kWeight;
    v.origins = {static_cast<uint32_t>(params_.size() - 1)};
    add_value(name, std::move(v));
  }

  void add_data_input(const std::string& name, Value v) {
    Tensor t;
    t.name = name;
    t.dtype = v.dtype;
    t.shape = v.shape;
    t.bytes = v.bytes;
    t.batch_scaled = true;
    v.kind = Kind::kData;
    v.tensor = b_.add_tensor(std::move(t));
    ++st_.data_inputs;
    add_value(name, std::move(v));
  }

  Value initializer_value(const onnx::TensorProto& t) const {
    Value v;
    v.is_float = is_float_type(t.data_type());
    v.dtype = dtype_of(t.data_type(), opts_.dtype);
    set_shape(&v, std::vector<int64_t>(t.dims().begin(), t.dims().end()), true);
    return v;
  }

  // Initializers by role: parameters, buffers and constants (data ones come later).
  void add_initializers() {
    for (const auto& t : g().initializer()) {
      Value v = initializer_value(t);
      const InputRole role = roles_.at(t.name());
      if (role == InputRole::kParam || role == InputRole::kState) {
        add_param(t.name(), std::move(v), role == InputRole::kState);
      } else if (role == InputRole::kConst) {
        v.kind = Kind::kConst;
        add_value(t.name(), std::move(v));
      }  // a forced data initializer is added by add_data_initializers
    }
  }

  // Graph inputs without an initializer, by role.
  void add_graph_inputs() {
    for (const auto& in : g().input()) {
      const InputRole role = roles_.at(in.name());
      if (index_.count(in.name())) continue;
      Value v = value_of_type(&in.type(), opts_.dtype);
      if (role == InputRole::kData) {
        add_data_input(in.name(), std::move(v));
      } else if (role == InputRole::kConst) {
        v.kind = Kind::kConst;
        add_value(in.name(), std::move(v));
      } else {
        if (!v.known) {
          throw FormatError(format_context(file_, "input '" + in.name() + "'",
                                           "parameter without a static shape"));
        }
        add_param(in.name(), std::move(v), role == InputRole::kState);
      }
    }
  }

  void add_data_initializers() {
    for (const auto& t : g().initializer()) {
      if (index_.count(t.name())) continue;
      add_data_input(t.name(), initializer_value(t));
    }
  }

  // Consumers per value (to tell whether an unknown output shape matters).
  void count_uses() {
    for (const auto& node : g().node()) {
      for (const auto& name : node.input()) {
        if (!name.empty()) ++uses_[name];
      }
    }
  }

  // What to tell the user when a shape stays unknown.
  void make_hints() {
    hint_ = st_.exported_batch > 0
                ? "the model's static shapes contradict --batch-size " + std::to_string(batch_) +
                      " (it was exported for batch " + std::to_string(st_.exported_batch) +
                      "): import it at that batch or re-export with a dynamic batch dimension"
                : "pass --batch-size/--seq-len or export with static shapes";
    // Why inference gave up, if it said so (the warnings are lost when the import fails).
    why_ = st_.inference_error.empty()
               ? ""
               : " (ONNX shape inference reported: " + st_.inference_error + ")";
  }

  void add_node(int ni) {
    const onnx::NodeProto& node = g().node(ni);
    const std::string label = "node '" +
                              (node.name().empty() ? "#" + std::to_string(ni) : node.name()) +
                              "' (" + node.op_type() + ")";
    read_inputs(node, label);
    // Outputs as inferred.
    outs_.clear();
    for (const auto& name : node.output()) {
      outs_.push_back(value_of_type(type_of(name), opts_.dtype));
    }
    const bool std_domain = node.domain().empty() || node.domain() == "ai.onnx";
    if (fold(node, std_domain)) return;
    fill_unknown_outputs(node, label, std_domain);
    check_output_shapes(node, label);
    const NodeCost cost = cost_of(node, label, std_domain);
    add_op(node, ni, cost);
  }

  void read_inputs(const onnx::NodeProto& node, const std::string& label) {
    in_.vals.clear();
    in_.all_const = true;
    in_.weights_only = true;
    for (const auto& name : node.input()) {
      if (name.empty()) {
        in_.vals.push_back(nullptr);
        continue;
      }
      auto it = index_.find(name);
      if (it == index_.end()) {
        throw FormatError(
            format_context(file_, label,
                           "reads '" + name +
                               "', which is neither a graph input, an initializer nor the output "
                               "of an earlier node (nodes out of order, or a truncated file)"));
      }
      const Value* v = &values_[it->second];
      in_.vals.push_back(v);
      in_.all_const = in_.all_const && v->kind == Kind::kConst;
      in_.weights_only = in_.weights_only && v->kind != Kind::kData;
    }
  }

  // Folding: constants and shape computations; re-layouts of weights. True when the node
  // became values without an op.
  bool fold(const onnx::NodeProto& node, bool std_domain) {
    const bool fold_const = in_.all_const;
    const bool fold_weight =
        !fold_const && in_.weights_only && std_domain && layout_op(node.op_type());
    if (!fold_const && !fold_weight) return false;
    std::vector<uint32_t> origins;
    if (fold_weight) {
      for (const Value* v : in_.vals) {
        if (v && v->kind == Kind::kWeight)
          origins.insert(origins.end(), v->origins.begin(), v->origins.end());
      }
      std::sort(origins.begin(), origins.end());
      origins.erase(std::unique(origins.begin(), origins.end()), origins.end());
    }
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty()) continue;
      Value v = std::move(outs_[k]);
      v.kind = fold_const ? Kind::kConst : Kind::kWeight;
      v.origins = origins;
      add_value(node.output(k), std::move(v));
    }
    ++st_.folded_nodes;
    return true;
  }

  // Fill the first output when inference left it unknown: elementwise ops broadcast their
  // inputs; a custom op with one output is assumed to keep the shape of its first input.
  void fill_unknown_outputs(const onnx::NodeProto& node, const std::string& label,
                            bool std_domain) {
    if (node.output_size() == 0 || node.output(0).empty() || outs_[0].known) return;
    Value& o = outs_[0];
    std::vector<int64_t> shape;
    const Value* first = nullptr;
    for (const Value* v : in_.vals) {
      if (v) {
        first = v;
        break;
      }
    }
    if (onnx_import::is_elementwise_op(node.op_type()) && broadcast(in_.vals, &shape)) {
      if (!o.is_float && first) o.is_float = first->is_float, o.dtype = first->dtype;
      set_shape(&o, shape, true);
    } else if (!std_domain && node.output_size() == 1 && first && first->known) {
      o.is_float = first->is_float;
      o.dtype = first->dtype;
      set_shape(&o, first->shape, true);
      warn(label +
           ": custom op without shape inference; output shape assumed equal to its "
           "first input " +
           shape_str(first->shape));
    }
  }

  // An unknown output shape is an error when the output is read, else counted for a warning;
  // a view that changes the element count means inference worked from stale shapes.
  void check_output_shapes(const onnx::NodeProto& node, const std::string& label) {
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty() || outs_[k].known) continue;
      if (uses_.count(node.output(k))) {
        throw FormatError(format_context(
            file_, label, "output shape unknown after shape inference; " + hint_ + why_));
      }
      ++unknown_unused_;
    }
    const std::vector<const Value*>& in = in_.vals;
    if (onnx_import::is_view_op(node.op_type()) && !in.empty() && in[0] && in[0]->known &&
        !outs_.empty() && outs_[0].known && in[0]->elems != outs_[0].elems) {
      throw FormatError(format_context(file_, label,
                                       "turns " + shape_str(in[0]->shape) + " into " +
                                           shape_str(outs_[0].shape) +
                                           " (element counts differ); " + hint_));
    }
  }

  NodeCost cost_of(const onnx::NodeProto& node, const std::string& label, bool std_domain) {
    in_desc_.clear();
    out_desc_.clear();
    for (const Value* v : in_.vals) in_desc_.push_back(desc_of(v));
    for (int k = 0; k < node.output_size(); ++k) {
      out_desc_.push_back(node.output(k).empty() ? ValueDesc{} : desc_of(&outs_[k]));
    }
    NodeCost cost;
    try {
      cost = onnx_import::node_cost(node, in_desc_, out_desc_);
    } catch (const onnx_import::MissingShape& e) {
      const std::string what =
          e.output ? "output shape" : "shape of input '" + node.input(e.slot) + "'";
      throw FormatError(
          format_context(file_, label, what + " unknown after shape inference; " + hint_ + why_));
    }
    if (!cost.has_rule) {
      const std::string key = std_domain ? node.op_type() : node.domain() + "." + node.op_type();
      st_.unruled_op_types[key]++;
    }
    return cost;
  }

  // The node's name, or "<type>_<index>" for an unnamed one; "#2", "#3"... resolve clashes.
  std::string unique_op_name(const onnx::NodeProto& node, int ni) {
    std::string name =
        node.name().empty() ? node.op_type() + "_" + std::to_string(ni) : node.name();
    if (op_names_.insert(name).second) return name;
    for (int k = 2;; ++k) {
      const std::string alt = name + "#" + std::to_string(k);
      if (op_names_.insert(alt).second) return alt;
    }
  }

  // What an op reads and writes, accumulated over its inputs and outputs.
  struct Traffic {
    bool any_float = false, batch_scaled = false;
    uint64_t read = 0, written = 0;
    DType int_dtype = DType::kI64;
  };

  // Data inputs become op inputs; each parameter's bytes go to its first consumer.
  void account_inputs(const NodeCost& cost, Op* op, Traffic* tr) {
    std::unordered_set<const Value*> seen;
    for (size_t k = 0; k < in_.vals.size(); ++k) {
      const Value* v = in_.vals[k];
      if (v == nullptr) continue;
      tr->any_float = tr->any_float || v->is_float;
      if (!seen.insert(v).second) continue;
      tr->read += (k == 0 && cost.rows_only) ? 0 : v->bytes;
      if (v->kind == Kind::kData) {
        op->inputs.push_back(v->tensor);
        tr->batch_scaled = tr->batch_scaled || v->batch_scaled;
      } else if (v->kind == Kind::kWeight) {
        for (uint32_t p : v->origins) {
          if (params_[p].owned) continue;  // shared weight: owned by its first consumer
          params_[p].owned = true;
          (params_[p].state ? op->state_bytes : op->param_bytes) += params_[p].bytes;
        }
      }
    }
  }

  void add_outputs(const onnx::NodeProto& node, const NodeCost& cost, Op* op, Traffic* tr) {
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty()) continue;
      Value& o = outs_[k];
      tr->any_float = tr->any_float || o.is_float;
      if (!o.is_float) tr->int_dtype = o.dtype;
      tr->written += o.bytes;
      if (k == 0 && cost.rows_only) tr->read += o.bytes;  // the gathered rows
      Tensor t;
      t.name = node.output(k);
      t.dtype = o.dtype;
      t.shape = o.shape;
      t.bytes = o.bytes;
      t.batch_scaled = tr->batch_scaled;
      o.kind = Kind::kData;
      o.batch_scaled = tr->batch_scaled;
      o.tensor = b_.add_tensor(std::move(t));
      op->outputs.push_back(o.tensor);
      add_value(node.output(k), std::move(o));
    }
  }

  void add_op(const onnx::NodeProto& node, int ni, const NodeCost& cost) {
    Op op;
    op.name = unique_op_name(node, ni);
    op.type = node.op_type();
    op.category = cost.category;
    op.scope = onnx_node_scope(node.name(), &op.layer);
    op.flops = cost.flops;
    copy_attrs(node, &op);
    Traffic tr;
    account_inputs(cost, &op, &tr);
    add_outputs(node, cost, &op, &tr);
    op.dtype = tr.any_float ? opts_.dtype : tr.int_dtype;
    op.batch_scaled = tr.batch_scaled;
    op.bytes_accessed = cost.view ? 1 : tr.read + tr.written;
    st_.param_bytes += op.param_bytes;
    st_.state_bytes += op.state_bytes;
    b_.add_op(std::move(op));
  }

  void warn_about_estimates() {
    for (const auto& kv : st_.unruled_op_types) {
      warn("op type '" + kv.first + "' has no cost rule: " + std::to_string(kv.second) +
           (kv.second == 1 ? " node" : " nodes") + " estimated at 1 FLOP per output element");
    }
    if (unknown_unused_ > 0) {
      warn(std::to_string(unknown_unused_) +
           " unused op outputs have unknown shapes and are counted as 0 bytes");
    }
    size_t unowned = 0;
    for (const Param& p : params_) unowned += p.owned ? 0 : 1;
    if (unowned > 0) {
      warn(std::to_string(unowned) + " parameter tensors are read by no op and were dropped");
    }
  }

  Graph finish() {
    if (b_.num_ops() == 0) {
      throw FormatError(format_context(file_, "graph", "has no compute nodes (only constants)"));
    }
    try {
      return b_.build();
    } catch (const ValidationError& e) {
      throw ValidationError(format_context(file_, "", e.what()));
    }
  }

  onnx::ModelProto& m_;
  const std::string& file_;
  const ImportOptions& opts_;
  std::vector<std::string>* warnings_;
  ImportStats& st_;
  GraphBuilder b_;

  std::unordered_map<std::string, InputRole> roles_;
  int64_t batch_ = 0;
  std::unordered_map<std::string, const onnx::TypeProto*> types_;
  std::vector<Value> values_;
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<Param> params_;
  std::unordered_map<std::string, int> uses_;
  std::string hint_, why_;

  // Per node (kept between nodes to reuse their storage).
  NodeInputs in_;
  std::vector<Value> outs_;
  std::vector<ValueDesc> in_desc_, out_desc_;
  std::unordered_set<std::string> op_names_;
  size_t unknown_unused_ = 0;
};

Graph build_graph(onnx::ModelProto& m, const std::string& file, const ImportOptions& opts,
                  std::vector<std::string>* warnings, ImportStats& st) {
  return OnnxGraphBuilder(m, file, opts, warnings, st).build();
}

}  // namespace

std::string onnx_node_scope(const std::string& node_name, int32_t* layer) {
  if (layer) *layer = -1;
  std::vector<std::string> segs;
  size_t start = 0;
  while (start <= node_name.size()) {
    size_t slash = node_name.find('/', start);
    if (slash == std::string::npos) slash = node_name.size();
    if (slash > start) segs.push_back(node_name.substr(start, slash - start));
    start = slash + 1;
  }
  if (node_name.find('/') == std::string::npos || segs.size() < 2) return "";
  segs.pop_back();  // the node's own name ("MatMul_1")
  std::string scope, prev;
  for (const std::string& s : segs) {
    // torch repeats the parent path in children of containers: "/layer1/layer1.0/conv1".
    if (!prev.empty() && s.size() > prev.size() + 1 &&
        s.compare(0, prev.size() + 1, prev + ".") == 0) {
      scope += s.substr(prev.size());
    } else {
      scope += (scope.empty() ? "" : ".") + s;
    }
    prev = s;
  }
  if (layer) {
    static const char* const kWords[] = {"layer", "layers", "blocks",  "block",
                                         "h",     "stages", "features"};
    std::vector<std::string> toks;
    size_t p = 0;
    while (p <= scope.size()) {
      size_t dot = scope.find('.', p);
      if (dot == std::string::npos) dot = scope.size();
      toks.push_back(scope.substr(p, dot - p));
      p = dot + 1;
    }
    auto digits = [](const std::string& s) {
      return !s.empty() && s.size() < 9 &&
             std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
    };
    for (size_t i = 0; i < toks.size(); ++i) {
      bool word = false;
      for (const char* w : kWords) word = word || toks[i] == w;
      if (word && i + 1 < toks.size() && digits(toks[i + 1])) {
        *layer = std::stoi(toks[i + 1]);
        break;
      }
      // "encoder_layer_11", "block_3"
      const size_t us = toks[i].rfind('_');
      if (us != std::string::npos && digits(toks[i].substr(us + 1))) {
        const std::string head = toks[i].substr(0, us);
        if (head.size() >= 5 && (head.compare(head.size() - 5, 5, "layer") == 0 ||
                                 head.compare(head.size() - 5, 5, "block") == 0)) {
          *layer = std::stoi(toks[i].substr(us + 1));
          break;
        }
      }
    }
  }
  return scope;
}

Graph import_onnx_bytes(const std::string& bytes, const std::string& filename,
                        const ImportOptions& options, std::vector<std::string>* warnings,
                        ImportStats* stats) {
  ImportStats local;
  ImportStats& st = stats ? *stats : local;
  st = ImportStats{};
  onnx::ModelProto m = onnx_import::parse_model(bytes, filename);
  return build_graph(m, filename, options, warnings, st);
}

Graph import_onnx(const std::string& path, const ImportOptions& options,
                  std::vector<std::string>* warnings, ImportStats* stats) {
  ImportStats local;
  ImportStats& st = stats ? *stats : local;
  st = ImportStats{};
  onnx::ModelProto m = onnx_import::load_model(path);
  return build_graph(m, path, options, warnings, st);
}

}  // namespace placer
