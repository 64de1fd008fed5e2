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

Graph build_graph(onnx::ModelProto& m, const std::string& file, const ImportOptions& opts,
                  std::vector<std::string>* warnings, ImportStats& st) {
  st.ir_version = m.ir_version();
  onnx_import::check_inference_domains(m, file);
  st.opset = onnx_import::check_opset(m, file);
  st.producer =
      m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
  auto warn = [&](const std::string& w) {
    if (warnings) warnings->push_back(w);
  };

  auto roles = onnx_import::classify_inputs(m.graph(), opts);
  const int64_t batch = onnx_import::substitute_dims(m, roles, opts, file, warnings, &st);
  if (st.opset < onnx_import::kMinOpset) {
    // After the dims are substituted: the converter's adapters need static input shapes.
    onnx_import::upgrade_opset(m, st.opset, file);
    st.upgraded_from = st.opset;
    st.opset = onnx_import::kMinOpset;
    roles = onnx_import::classify_inputs(m.graph(), opts);  // the adapters may add nodes
  }
  st.nodes = static_cast<size_t>(m.graph().node_size());
  onnx_import::infer_shapes(m, file, warnings, &st);
  st.batch_size = batch;
  const onnx::GraphProto& g = m.graph();

  // Types of every named value after inference.
  std::unordered_map<std::string, const onnx::TypeProto*> types;
  for (const auto& vi : g.input()) types[vi.name()] = &vi.type();
  for (const auto& vi : g.value_info()) types[vi.name()] = &vi.type();
  for (const auto& vi : g.output()) types[vi.name()] = &vi.type();
  auto type_of = [&](const std::string& name) -> const onnx::TypeProto* {
    auto it = types.find(name);
    return it == types.end() ? nullptr : it->second;
  };

  GraphBuilder b(opts.name.empty() ? stem_of(file) : opts.name);
  b.set_batch_size(batch);
  std::vector<Value> values;
  std::unordered_map<std::string, uint32_t> index;
  std::vector<Param> params;
  // Every named value gets one slot, reserved up front: the loop below keeps pointers into
  // `values` while it appends outputs.
  size_t n_values = static_cast<size_t>(g.input_size() + g.initializer_size());
  for (const auto& node : g.node()) n_values += static_cast<size_t>(node.output_size());
  values.reserve(n_values);
  index.reserve(n_values);

  auto add_value = [&](const std::string& name, Value v) {
    PLACER_DCHECK(values.size() < values.capacity());
    index[name] = static_cast<uint32_t>(values.size());
    values.push_back(std::move(v));
  };
  auto add_param = [&](const std::string& name, Value v, bool state) {
    params.push_back({v.bytes, state, false});
    (state ? st.state_tensors : st.param_tensors)++;
    v.kind = Kind::kWeight;
    v.origins = {static_cast<uint32_t>(params.size() - 1)};
    add_value(name, std::move(v));
  };

  // Initializers and graph inputs by role.
  for (const auto& t : g.initializer()) {
    Value v;
    v.is_float = is_float_type(t.data_type());
    v.dtype = dtype_of(t.data_type(), opts.dtype);
    set_shape(&v, std::vector<int64_t>(t.dims().begin(), t.dims().end()), true);
    const InputRole role = roles.at(t.name());
    if (role == InputRole::kParam || role == InputRole::kState) {
      add_param(t.name(), std::move(v), role == InputRole::kState);
    } else if (role == InputRole::kConst) {
      v.kind = Kind::kConst;
      add_value(t.name(), std::move(v));
    }  // a forced data initializer is added below as a graph input
  }
  auto add_data_input = [&](const std::string& name, Value v) {
    Tensor t;
    t.name = name;
    t.dtype = v.dtype;
    t.shape = v.shape;
    t.bytes = v.bytes;
    t.batch_scaled = true;
    v.kind = Kind::kData;
    v.tensor = b.add_tensor(std::move(t));
    ++st.data_inputs;
    add_value(name, std::move(v));
  };
  for (const auto& in : g.input()) {
    const InputRole role = roles.at(in.name());
    if (index.count(in.name())) continue;
    Value v = value_of_type(&in.type(), opts.dtype);
    if (role == InputRole::kData) {
      add_data_input(in.name(), std::move(v));
    } else if (role == InputRole::kConst) {
      v.kind = Kind::kConst;
      add_value(in.name(), std::move(v));
    } else {
      if (!v.known) {
        throw FormatError(
            format_context(file, "input '" + in.name() + "'", "parameter without a static shape"));
      }
      add_param(in.name(), std::move(v), role == InputRole::kState);
    }
  }
  for (const auto& t : g.initializer()) {
    if (index.count(t.name())) continue;
    Value v;
    v.is_float = is_float_type(t.data_type());
    v.dtype = dtype_of(t.data_type(), opts.dtype);
    set_shape(&v, std::vector<int64_t>(t.dims().begin(), t.dims().end()), true);
    add_data_input(t.name(), std::move(v));
  }

  // Consumers per value (to tell whether an unknown output shape matters).
  std::unordered_map<std::string, int> uses;
  for (const auto& node : g.node()) {
    for (const auto& name : node.input()) {
      if (!name.empty()) ++uses[name];
    }
  }

  std::unordered_set<std::string> op_names;
  std::vector<const Value*> in_vals;
  std::vector<ValueDesc> in_desc, out_desc;
  std::vector<Value> outs;
  size_t unknown_unused = 0;
  const std::string hint =
      st.exported_batch > 0
          ? "the model's static shapes contradict --batch-size " + std::to_string(batch) +
                " (it was exported for batch " + std::to_string(st.exported_batch) +
                "): import it at that batch or re-export with a dynamic batch dimension"
          : "pass --batch-size/--seq-len or export with static shapes";
  // Why inference gave up, if it said so (the warnings are lost when the import fails).
  const std::string why = st.inference_error.empty()
                              ? ""
                              : " (ONNX shape inference reported: " + st.inference_error + ")";

  for (int ni = 0; ni < g.node_size(); ++ni) {
    const onnx::NodeProto& node = g.node(ni);
    const std::string label = "node '" +
                              (node.name().empty() ? "#" + std::to_string(ni) : node.name()) +
                              "' (" + node.op_type() + ")";
    in_vals.clear();
    bool all_const = true, weights_only = true;
    for (const auto& name : node.input()) {
      if (name.empty()) {
        in_vals.push_back(nullptr);
        continue;
      }
      auto it = index.find(name);
      if (it == index.end()) {
        throw FormatError(
            format_context(file, label,
                           "reads '" + name +
                               "', which is neither a graph input, an initializer nor the output "
                               "of an earlier node (nodes out of order, or a truncated file)"));
      }
      const Value* v = &values[it->second];
      in_vals.push_back(v);
      all_const = all_const && v->kind == Kind::kConst;
      weights_only = weights_only && v->kind != Kind::kData;
    }

    // Outputs as inferred.
    outs.clear();
    for (const auto& name : node.output()) outs.push_back(value_of_type(type_of(name), opts.dtype));

    // Folding: constants and shape computations; re-layouts of weights.
    const bool std_domain = node.domain().empty() || node.domain() == "ai.onnx";
    const bool fold_const = all_const;
    const bool fold_weight = !fold_const && weights_only && std_domain && layout_op(node.op_type());
    if (fold_const || fold_weight) {
      std::vector<uint32_t> origins;
      if (fold_weight) {
        for (const Value* v : in_vals) {
          if (v && v->kind == Kind::kWeight)
            origins.insert(origins.end(), v->origins.begin(), v->origins.end());
        }
        std::sort(origins.begin(), origins.end());
        origins.erase(std::unique(origins.begin(), origins.end()), origins.end());
      }
      for (int k = 0; k < node.output_size(); ++k) {
        if (node.output(k).empty()) continue;
        Value v = std::move(outs[k]);
        v.kind = fold_const ? Kind::kConst : Kind::kWeight;
        v.origins = origins;
        add_value(node.output(k), std::move(v));
      }
      ++st.folded_nodes;
      continue;
    }

    // Fill outputs inference left unknown: elementwise ops broadcast their inputs; a custom
    // op with one output is assumed to keep the shape of its first input.
    for (int k = 0; k < node.output_size(); ++k) {
      Value& o = outs[k];
      if (node.output(k).empty() || o.known || k > 0) continue;
      std::vector<int64_t> shape;
      const Value* first = nullptr;
      for (const Value* v : in_vals) {
        if (v) {
          first = v;
          break;
        }
      }
      if (onnx_import::is_elementwise_op(node.op_type()) && broadcast(in_vals, &shape)) {
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
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty() || outs[k].known) continue;
      if (uses.count(node.output(k))) {
        throw FormatError(format_context(
            file, label, "output shape unknown after shape inference; " + hint + why));
      }
      ++unknown_unused;
    }

    // A view keeps the element count; a mismatch means inference worked from stale shapes.
    if (onnx_import::is_view_op(node.op_type()) && !in_vals.empty() && in_vals[0] &&
        in_vals[0]->known && !outs.empty() && outs[0].known && in_vals[0]->elems != outs[0].elems) {
      throw FormatError(format_context(file, label,
                                       "turns " + shape_str(in_vals[0]->shape) + " into " +
                                           shape_str(outs[0].shape) + " (element counts differ); " +
                                           hint));
    }

    // Cost.
    in_desc.clear();
    out_desc.clear();
    for (const Value* v : in_vals) in_desc.push_back(desc_of(v));
    for (int k = 0; k < node.output_size(); ++k) {
      out_desc.push_back(node.output(k).empty() ? ValueDesc{} : desc_of(&outs[k]));
    }
    NodeCost cost;
    try {
      cost = onnx_import::node_cost(node, in_desc, out_desc);
    } catch (const onnx_import::MissingShape& e) {
      const std::string what =
          e.output ? "output shape" : "shape of input '" + node.input(e.slot) + "'";
      throw FormatError(
          format_context(file, label, what + " unknown after shape inference; " + hint + why));
    }
    if (!cost.has_rule) {
      const std::string key = std_domain ? node.op_type() : node.domain() + "." + node.op_type();
      st.unruled_op_types[key]++;
    }

    Op op;
    std::string name =
        node.name().empty() ? node.op_type() + "_" + std::to_string(ni) : node.name();
    if (!op_names.insert(name).second) {
      for (int k = 2;; ++k) {
        const std::string alt = name + "#" + std::to_string(k);
        if (op_names.insert(alt).second) {
          name = alt;
          break;
        }
      }
    }
    op.name = std::move(name);
    op.type = node.op_type();
    op.category = cost.category;
    op.scope = onnx_node_scope(node.name(), &op.layer);
    op.flops = cost.flops;
    copy_attrs(node, &op);

    bool any_float = false, batch_scaled = false;
    uint64_t read = 0, written = 0;
    DType int_dtype = DType::kI64;
    std::unordered_set<const Value*> seen;
    for (size_t k = 0; k < in_vals.size(); ++k) {
      const Value* v = in_vals[k];
      if (v == nullptr) continue;
      any_float = any_float || v->is_float;
      if (!seen.insert(v).second) continue;
      read += (k == 0 && cost.rows_only) ? 0 : v->bytes;
      if (v->kind == Kind::kData) {
        op.inputs.push_back(v->tensor);
        batch_scaled = batch_scaled || v->batch_scaled;
      } else if (v->kind == Kind::kWeight) {
        for (uint32_t p : v->origins) {
          if (params[p].owned) continue;  // shared weight: owned by its first consumer
          params[p].owned = true;
          (params[p].state ? op.state_bytes : op.param_bytes) += params[p].bytes;
        }
      }
    }
    for (int k = 0; k < node.output_size(); ++k) {
      if (node.output(k).empty()) continue;
      Value& o = outs[k];
      any_float = any_float || o.is_float;
      if (!o.is_float) int_dtype = o.dtype;
      written += o.bytes;
      if (k == 0 && cost.rows_only) read += o.bytes;  // the gathered rows
      Tensor t;
      t.name = node.output(k);
      t.dtype = o.dtype;
      t.shape = o.shape;
      t.bytes = o.bytes;
      t.batch_scaled = batch_scaled;
      o.kind = Kind::kData;
      o.batch_scaled = batch_scaled;
      o.tensor = b.add_tensor(std::move(t));
      op.outputs.push_back(o.tensor);
      add_value(node.output(k), std::move(o));
    }
    op.dtype = any_float ? opts.dtype : int_dtype;
    op.batch_scaled = batch_scaled;
    op.bytes_accessed = cost.view ? 1 : read + written;
    st.param_bytes += op.param_bytes;
    st.state_bytes += op.state_bytes;
    b.add_op(std::move(op));
  }

  for (const auto& kv : st.unruled_op_types) {
    warn("op type '" + kv.first + "' has no cost rule: " + std::to_string(kv.second) +
         (kv.second == 1 ? " node" : " nodes") + " estimated at 1 FLOP per output element");
  }
  if (unknown_unused > 0) {
    warn(std::to_string(unknown_unused) +
         " unused op outputs have unknown shapes and are counted as 0 bytes");
  }
  size_t unowned = 0;
  for (const Param& p : params) unowned += p.owned ? 0 : 1;
  if (unowned > 0) {
    warn(std::to_string(unowned) + " parameter tensors are read by no op and were dropped");
  }
  if (b.num_ops() == 0) {
    throw FormatError(format_context(file, "graph", "has no compute nodes (only constants)"));
  }
  try {
    return b.build();
  } catch (const ValidationError& e) {
    throw ValidationError(format_context(file, "", e.what()));
  }
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
