#include "datasets/onnx_model.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <sys/stat.h>
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "src/util/error.h"

namespace placer::onnx_import {

// Defined in onnx_fold.cpp: one sweep in node order that rewrites small shape computations
// into Constant nodes and re-infers, node by node, outputs the whole-graph pass left unknown.
// Returns the nodes folded; *reinferred counts the nodes inferred alone.
size_t resolve_shapes(onnx::ModelProto& m, size_t* reinferred);

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_float_type(int32_t t) {
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::FLOAT16 ||
         t == onnx::TensorProto::BFLOAT16 || t == onnx::TensorProto::DOUBLE;
}

// Non-trainable buffers (BatchNorm running statistics and their counter).
bool buffer_name(const std::string& l) {
  return contains(l, "running_mean") || contains(l, "running_var") ||
         contains(l, "num_batches_tracked") || contains(l, "moving_mean") ||
         contains(l, "moving_variance");
}

// Names torch and Keras give trainable parameters.
bool param_name(const std::string& name) {
  const std::string l = lower(name);
  if (name.rfind("onnx::", 0) == 0) return true;  // torch's anonymous parameters
  // A module path ("fc.weight", "encoder.layers.0.linear1.bias"); torch's renamed inputs
  // ("input.1", "x.3") end in a number instead.
  const size_t dot = name.rfind('.');
  if (dot != std::string::npos && dot + 1 < name.size() &&
      !std::all_of(name.begin() + static_cast<std::ptrdiff_t>(dot) + 1, name.end(),
                   [](unsigned char c) { return std::isdigit(c); })) {
    return true;
  }
  static const char* const kSuffixes[] = {"weight",     "bias",        "gamma",         "beta",
                                          "cls_token",  "class_token", "pos_embedding", "pos_embed",
                                          "bias_table", "kernel"};
  for (const char* s : kSuffixes) {
    if (ends_with(l, s)) return true;
  }
  return contains(l, "weight_") || contains(l, "bias_");
}

// Input slots that hold weights, per op type (second: slots that hold buffers).
bool weight_slot(const std::string& op, int slot, bool* is_buffer) {
  *is_buffer = false;
  if (op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "LayerNormalization" ||
      op == "InstanceNormalization" || op == "GroupNormalization") {
    return slot == 1 || slot == 2;
  }
  if (op == "MatMul" || op == "PRelu") return slot == 1;
  if (op == "Gather") return slot == 0;
  if (op == "BatchNormalization") {
    *is_buffer = slot == 3 || slot == 4;
    return slot >= 1 && slot <= 4;
  }
  if (op == "LSTM") return slot == 1 || slot == 2 || slot == 3 || slot == 7;
  if (op == "GRU" || op == "RNN") return slot == 1 || slot == 2 || slot == 3;
  return false;
}

// Ops that only re-lay out a weight (torch's LSTM gate reordering, Linear's W^T).
bool layout_op(const std::string& op) {
  static const char* const kOps[] = {"Transpose", "Reshape", "Flatten", "Squeeze",  "Unsqueeze",
                                     "Concat",    "Slice",   "Split",   "Identity", "Cast"};
  for (const char* o : kOps) {
    if (op == o) return true;
  }
  return false;
}

std::string shape_text(const onnx::TensorShapeProto& s) {
  std::string out = "[";
  for (int i = 0; i < s.dim_size(); ++i) {
    if (i) out += ",";
    const auto& d = s.dim(i);
    if (d.has_dim_value()) {
      out += std::to_string(d.dim_value());
    } else if (d.has_dim_param()) {
      out += d.dim_param();
    } else {
      out += "?";
    }
  }
  return out + "]";
}

bool looks_seq(const std::string& name) {
  const std::string l = lower(name);
  return contains(l, "seq") || contains(l, "len") || contains(l, "time") || contains(l, "step");
}

bool looks_batch(const std::string& name) {
  const std::string l = lower(name);
  return contains(l, "batch") || l == "n" || l == "b" || l == "bs";
}

}  // namespace

onnx::ModelProto parse_model(const std::string& bytes, const std::string& file) {
  if (bytes.empty()) throw FormatError(format_context(file, "", "empty file, not an ONNX model"));
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    throw FormatError(format_context(
        file, "", "larger than 2 GB; store the weights as external data (or export without them)"));
  }
  onnx::ModelProto m;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(INT_MAX);
  if (!m.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
    throw FormatError(
        format_context(file, "",
                       "not a valid ONNX model (protobuf parsing failed: the file is truncated or "
                       "not an ONNX file)"));
  }
  if (m.ir_version() <= 0 || !m.has_graph()) {
    throw FormatError(format_context(file, "",
                                     std::string("not an ONNX model (no ") +
                                         (m.ir_version() <= 0 ? "ir_version" : "graph") +
                                         "; the file is truncated or not an ONNX file)"));
  }
  if (m.graph().node_size() == 0) {
    std::unordered_set<std::string> given;
    for (const auto& in : m.graph().input()) given.insert(in.name());
    for (const auto& t : m.graph().initializer()) given.insert(t.name());
    bool pass_through = m.graph().output_size() > 0;
    for (const auto& out : m.graph().output()) pass_through = pass_through && given.count(out.name());
    throw FormatError(format_context(
        file, "graph",
        pass_through ? "has no nodes: its outputs are its inputs, there is nothing to compute"
                     : "has no nodes (truncated file?)"));
  }
  return m;
}

onnx::ModelProto load_model(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    throw FileError(format_context(path, "", std::string("cannot open: ") + std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) throw FileError(format_context(path, "", "is a directory, not a file"));
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw FileError(format_context(path, "", std::string("cannot open: ") + std::strerror(errno)));
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  f.read(&bytes[0], static_cast<std::streamsize>(bytes.size()));
  if (!f) throw FileError(format_context(path, "", "read failed"));
  return parse_model(bytes, path);
}

int64_t max_supported_opset() {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(onnx::ONNX_DOMAIN);
  return it == map.end() ? 17 : it->second.second;
}

int64_t check_opset(const onnx::ModelProto& m, const std::string& file) {
  int64_t v = -1;
  for (const auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") v = o.version();
  }
  if (v < 0) {
    throw FormatError(format_context(
        file, "opset_import", "no opset for the default (ai.onnx) domain (truncated file?)"));
  }
  const int64_t hi = max_supported_opset();
  if (v > hi) {
    throw FormatError(format_context(
        file, "opset_import",
        "opset " + std::to_string(v) + " is newer than this build's ONNX library supports (ONNX " +
            PLACER_ONNX_VERSION + ": opsets " + std::to_string(kMinOpset) + " to " +
            std::to_string(hi) + "); re-export with opset_version <= " + std::to_string(hi)));
  }
  if (v < 1) {
    throw FormatError(format_context(file, "opset_import",
                                     "opset " + std::to_string(v) +
                                         " is not an ONNX opset (they start at 1; truncated file?)"));
  }
  return v;
}

std::unordered_map<std::string, InputRole> classify_inputs(const onnx::GraphProto& g,
                                                           const ImportOptions& opts) {
  std::unordered_map<std::string, InputRole> roles;
  std::unordered_set<std::string> forced(opts.data_inputs.begin(), opts.data_inputs.end());

  // Consumers of every value: (node, input slot).
  std::unordered_map<std::string, std::vector<std::pair<int, int>>> uses;
  for (int n = 0; n < g.node_size(); ++n) {
    const auto& node = g.node(n);
    for (int s = 0; s < node.input_size(); ++s) {
      if (!node.input(s).empty()) uses[node.input(s)].emplace_back(n, s);
    }
  }
  std::unordered_set<std::string> graph_outputs;
  for (const auto& out : g.output()) graph_outputs.insert(out.name());
  // True when every use of `name` is a weight slot, looking through layout ops (W^T), and
  // there is at least one. A value that reaches a graph output through layout ops only is
  // data passed through (an Identity model), not a weight. *buffer: every slot holds a
  // buffer.
  std::function<bool(const std::string&, int, bool*, bool*)> weight_only =
      [&](const std::string& name, int depth, bool* buffer, bool* slot_seen) -> bool {
    if (graph_outputs.count(name) || depth > 8) return false;
    auto it = uses.find(name);
    if (it == uses.end()) return true;  // a dead end of a layout chain
    for (const auto& u : it->second) {
      const auto& node = g.node(u.first);
      bool buf = false;
      if (weight_slot(node.op_type(), u.second, &buf)) {
        *buffer = *buffer && buf;
        *slot_seen = true;
        continue;
      }
      if (!layout_op(node.op_type())) return false;
      for (const auto& out : node.output()) {
        if (!out.empty() && !weight_only(out, depth + 1, buffer, slot_seen)) return false;
      }
    }
    return true;
  };

  for (const auto& t : g.initializer()) {
    const std::string l = lower(t.name());
    if (forced.count(t.name())) {
      roles[t.name()] = InputRole::kData;
    } else if (!is_float_type(t.data_type())) {
      roles[t.name()] = buffer_name(l) ? InputRole::kState : InputRole::kConst;
    } else if (buffer_name(l)) {
      roles[t.name()] = InputRole::kState;
    } else {
      // A float initializer with a single element is a literal (epsilon, a scale), not a
      // trainable weight, unless a parameter name says otherwise.
      int64_t n = 1;
      for (int64_t d : t.dims()) n *= d;
      roles[t.name()] = (n > 1 || param_name(t.name())) ? InputRole::kParam : InputRole::kConst;
    }
  }
  for (const auto& in : g.input()) {
    const std::string& name = in.name();
    if (roles.count(name)) continue;  // an initializer listed as input (IR < 4)
    const std::string l = lower(name);
    const auto& tt = in.type().tensor_type();
    const bool is_float = is_float_type(tt.elem_type());
    InputRole role = InputRole::kData;
    bool buffer = true;
    if (forced.count(name)) {
      role = InputRole::kData;
    } else if (buffer_name(l)) {
      role = InputRole::kState;
    } else if (!is_float) {
      // Integer buffers of a module (relative position indices) are constants; other
      // integer inputs are token ids, masks, lengths: data.
      role = name.find('.') != std::string::npos ? InputRole::kConst : InputRole::kData;
    } else if (tt.has_shape() && tt.shape().dim_size() > 0 && !tt.shape().dim(0).has_dim_value()) {
      role = InputRole::kData;  // a symbolic first dim is a batch
    } else if (param_name(name)) {
      role = InputRole::kParam;
    } else if (bool slot_seen = false; weight_only(name, 0, &buffer, &slot_seen) && slot_seen) {
      role = buffer ? InputRole::kState : InputRole::kParam;
    }
    roles[name] = role;
  }
  return roles;
}

namespace {

// Gives every dim of the graph inputs a number: symbols from --dim, the batch and sequence
// options, and (with --batch-size) a new static batch; then the exporter-written shapes that
// use them. The first data input's first dim is the batch reference.
class DimSubstitution {
 public:
  DimSubstitution(const ImportOptions& opts, const std::string& file,
                  std::vector<std::string>* warnings, ImportStats* stats)
      : opts_(opts),
        file_(file),
        warnings_(warnings),
        stats_(stats),
        symbols_(opts.dim_overrides.begin(), opts.dim_overrides.end()) {
    for (const auto& kv : symbols_) {
      if (kv.second <= 0) {
        throw FormatError(format_context(file, "--dim " + kv.first,
                                         "must be positive, got " + std::to_string(kv.second)));
      }
    }
  }

  // Returns the batch size the graph was computed for (0 = no batch dim found).
  int64_t run(onnx::ModelProto& m, const std::unordered_map<std::string, InputRole>& roles) {
    onnx::GraphProto* g = m.mutable_graph();
    for (auto& in : *g->mutable_input()) {
      auto it = roles.find(in.name());
      if (it == roles.end() || !in.type().has_tensor_type()) continue;
      substitute_input(&in, it->second == InputRole::kData);
    }
    report_batch_changes();
    update_written_shapes(g);
    return batch_;
  }

 private:
  void warn(const std::string& w) {
    if (warnings_) warnings_->push_back(w);
  }

  void substitute_input(onnx::ValueInfoProto* in, bool data) {
    auto* tt = in->mutable_type()->mutable_tensor_type();
    if (!tt->has_shape()) {
      if (data) {
        throw FormatError(format_context(file_, "input '" + in->name() + "'",
                                         "has no shape (not even a rank); export with shapes"));
      }
      return;
    }
    const std::string before = shape_text(tt->shape());
    auto* shape = tt->mutable_shape();
    for (int i = 0; i < shape->dim_size(); ++i) {
      auto* d = shape->mutable_dim(i);
      if (d->has_dim_value() && d->dim_value() > 0) {
        if (data && i == 0) rebatch_static_dim(d);
        continue;
      }
      const std::string sym = d->has_dim_param() ? d->dim_param() : "";
      const std::string where =
          "input '" + in->name() + "' dim " + std::to_string(i) + " (of " + before + ")";
      const int64_t v = symbolic_dim_value(sym, data, i, where);
      if (!sym.empty()) symbols_[sym] = v;
      if (data && i == 0 && !ref_seen_) ref_seen_ = true, first_static_ = 0, batch_ = v;
      d->clear_dim_param();
      d->set_dim_value(v);
    }
    if (data && stats_) {
      const std::string after = shape_text(tt->shape());
      stats_->data_input_shapes.push_back(in->name() + " " + after);
    }
  }

  // The static first dim of a data input. The first data input is the batch reference; a
  // static first dim of another data input is re-batched only if it equals the reference's.
  void rebatch_static_dim(onnx::TensorShapeProto_Dimension* d) {
    const bool reference = !ref_seen_;
    if (reference) ref_seen_ = true, first_static_ = d->dim_value();
    if (opts_.batch_size > 0 && first_static_ > 0 && d->dim_value() == first_static_ &&
        d->dim_value() != opts_.batch_size) {
      d->set_dim_value(opts_.batch_size);
      static_changed_ = true;
    }
    if (reference) batch_ = d->dim_value();
  }

  // The value of dim i (symbol `sym`, "" when it has none); parameters take overrides only.
  int64_t symbolic_dim_value(const std::string& sym, bool data, int i, const std::string& where) {
    const std::string hint_dims = "; pass --batch-size, --seq-len or --dim NAME=VALUE";
    auto ov = sym.empty() ? symbols_.end() : symbols_.find(sym);
    if (ov != symbols_.end()) return ov->second;
    if (!data) {
      throw FormatError(format_context(file_, where, "is symbolic ('" + sym + "')" + hint_dims));
    }
    if (!sym.empty() && looks_seq(sym)) {
      if (opts_.seq_len <= 0) {
        throw FormatError(format_context(
            file_, where, "is a symbolic sequence length ('" + sym + "'); pass --seq-len"));
      }
      return opts_.seq_len;
    }
    if (i == 0 || (!sym.empty() && looks_batch(sym))) {
      defaulted_batch_ = defaulted_batch_ || opts_.batch_size <= 0;
      return opts_.batch_size > 0 ? opts_.batch_size : 1;
    }
    throw FormatError(
        format_context(file_, where,
                       sym.empty() ? "has no size" + hint_dims
                                   : "is symbolic ('" + sym + "'); pass --dim " + sym + "=VALUE"));
  }

  void report_batch_changes() {
    if (defaulted_batch_) {
      warn("symbolic batch dimension set to 1; pass --batch-size to import another batch");
    }
    if (static_changed_) {
      if (stats_) stats_->exported_batch = first_static_;
      warn("static batch dimension " + std::to_string(first_static_) +
           " of the data inputs replaced by " + std::to_string(opts_.batch_size) +
           " (--batch-size); shapes re-inferred");
    }
  }

  // Exporter-written shapes: substitute known symbols; after a static change they are stale.
  void update_written_shapes(onnx::GraphProto* g) {
    for (auto& out : *g->mutable_output()) update_written_shape(&out, static_changed_);
    if (static_changed_) {
      g->clear_value_info();
    } else {
      for (auto& vi : *g->mutable_value_info()) update_written_shape(&vi, false);
    }
  }

  void update_written_shape(onnx::ValueInfoProto* vi, bool clear_static) {
    if (!vi->type().has_tensor_type() || !vi->type().tensor_type().has_shape()) return;
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    if (clear_static) {
      tt->clear_shape();
      return;
    }
    for (auto& d : *tt->mutable_shape()->mutable_dim()) {
      if (!d.has_dim_param()) continue;
      auto it = symbols_.find(d.dim_param());
      if (it != symbols_.end()) {
        d.clear_dim_param();
        d.set_dim_value(it->second);
      }
    }
  }

  const ImportOptions& opts_;
  const std::string& file_;
  std::vector<std::string>* warnings_;
  ImportStats* stats_;
  std::unordered_map<std::string, int64_t> symbols_;
  bool static_changed_ = false, defaulted_batch_ = false;
  bool ref_seen_ = false;
  int64_t batch_ = 0, first_static_ = 0;  // first_static_: the reference's static first dim
};

}  // namespace

int64_t substitute_dims(onnx::ModelProto& m,
                        const std::unordered_map<std::string, InputRole>& roles,
                        const ImportOptions& opts, const std::string& file,
                        std::vector<std::string>* warnings, ImportStats* stats) {
  return DimSubstitution(opts, file, warnings, stats).run(m, roles);
}

void infer_shapes(onnx::ModelProto& m, const std::string& file, std::vector<std::string>* warnings,
                  ImportStats* stats) {
  auto run = [&](bool strict) {
    if (stats) ++stats->inference_passes;
    onnx::ShapeInferenceOptions o(/*check_type=*/false, /*error_mode=*/strict ? 1 : 0,
                                  /*enable_data_propagation=*/true);
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), o);
  };
  auto lenient = [&]() {
    try {
      run(false);
    } catch (const std::exception& e) {
      std::string msg = std::string("ONNX shape inference failed: ") + e.what();
      if (stats && stats->exported_batch > 0) {
        msg +=
            " (the model's static shapes may contradict --batch-size: it was exported for "
            "batch " +
            std::to_string(stats->exported_batch) + ")";
      }
      throw FormatError(format_context(file, "", msg));
    }
  };
  try {
    run(true);
  } catch (const std::exception& e) {
    // Node-level failures: keep what could be inferred and say which node stopped it.
    std::string msg = e.what();
    if (msg.size() > 400) msg = msg.substr(0, 400) + "...";
    if (warnings) warnings->push_back("ONNX shape inference reported: " + msg);
    if (stats) stats->inference_error = msg;
    lenient();
  }
  size_t reinferred = 0;
  const size_t folded = resolve_shapes(m, &reinferred);
  if (stats) {
    stats->shape_folds += folded;
    stats->nodes_reinferred += reinferred;
  }
}

}  // namespace placer::onnx_import
