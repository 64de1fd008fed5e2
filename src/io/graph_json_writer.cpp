// Writer of *.graph.json (the reader is graph_json.cpp). One tensor / op per line, keys in
// a fixed readable order, fields equal to their defaults left out.

#include "src/io/graph_json.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "src/util/error.h"
#include "src/util/files.h"

namespace placer {
namespace {

// ordered_json keeps the insertion order of keys.
using Json = nlohmann::ordered_json;

Json tensor_json(const Tensor& t) {
  Json j;
  j["name"] = t.name;
  j["dtype"] = to_string(t.dtype);
  j["shape"] = t.shape;
  j["bytes"] = t.bytes;
  if (!t.batch_scaled) j["batch_scaled"] = false;
  if (t.is_param_grad) j["param_grad"] = true;
  return j;
}

Json op_json(const Graph& g, const Op& o) {
  if (!std::isfinite(o.flops) || o.flops < 0) {
    throw ValidationError("graph '" + g.name() + "': op '" + o.name + "': flops = " +
                          std::to_string(o.flops) + " cannot be saved (must be finite, >= 0)");
  }
  Json j;
  j["name"] = o.name;
  j["type"] = o.type;
  if (o.category != category_of_op_type(o.type)) j["category"] = to_string(o.category);
  if (o.phase != Phase::kForward) j["phase"] = to_string(o.phase);
  if (o.dtype != DType::kF32) j["dtype"] = to_string(o.dtype);
  if (!o.scope.empty()) j["scope"] = o.scope;
  if (o.layer != -1) j["layer"] = o.layer;
  if (!o.group.empty()) j["group"] = o.group;
  j["flops"] = o.flops;
  if (o.bytes_accessed) j["bytes_accessed"] = o.bytes_accessed;
  if (o.param_bytes) j["param_bytes"] = o.param_bytes;
  if (o.state_bytes) j["state_bytes"] = o.state_bytes;
  if (o.workspace_bytes) j["workspace_bytes"] = o.workspace_bytes;
  if (!o.batch_scaled) j["batch_scaled"] = false;
  if (o.forward_op != kNoOp) j["forward_op"] = o.forward_op;
  j["inputs"] = o.inputs;
  j["outputs"] = o.outputs;
  if (!o.attrs.empty()) {
    bool unique = true;
    for (size_t a = 0; a < o.attrs.size() && unique; ++a) {
      for (size_t c = a + 1; c < o.attrs.size(); ++c) {
        if (o.attrs[a].first == o.attrs[c].first) {
          unique = false;
          break;
        }
      }
    }
    Json& attrs = j["attrs"];
    if (unique) {
      attrs = Json::object();
      for (const auto& kv : o.attrs) attrs[kv.first] = kv.second;
    } else {
      // A JSON object cannot hold a key twice; pairs keep every entry and its order.
      attrs = Json::array();
      for (const auto& kv : o.attrs) attrs.push_back(Json::array({kv.first, kv.second}));
    }
  }
  return j;
}

// nlohmann refuses to write strings that are not UTF-8 (they could not be read back).
std::string dump(const Json& j, const Graph& g, const char* what, size_t index) {
  try {
    return j.dump();
  } catch (const nlohmann::json::exception&) {
    throw ValidationError("graph '" + g.name() + "': " + what + " #" + std::to_string(index) +
                          " cannot be saved: a string in it is not valid UTF-8");
  }
}

}  // namespace

std::string graph_to_json(const Graph& g) {
  std::string out;
  out.reserve(64 + g.num_tensors() * 96 + g.num_ops() * 192);
  // Graph-level attrs came with 1.1; a file without them stays a 1.0 file.
  const int minor = g.attrs().empty() ? 0 : 1;
  out += "{\n  \"format_version\": \"" + std::to_string(kGraphFormatMajor) + "." +
         std::to_string(minor) + "\",\n";
  out += "  \"name\": " + dump(Json(g.name()), g, "name", 0) + ",\n";
  out += "  \"batch_size\": " + std::to_string(g.batch_size()) + ",\n";
  out += std::string("  \"training_step\": ") + (g.is_training_step() ? "true" : "false") + ",\n";
  if (!g.attrs().empty()) {
    Json attrs = Json::object();
    for (const auto& kv : g.attrs()) attrs[kv.first] = kv.second;
    out += "  \"attrs\": " + dump(attrs, g, "attrs", 0) + ",\n";
  }
  // One element per line: compact, yet diffable and greppable.
  out += "  \"tensors\": [";
  for (size_t i = 0; i < g.num_tensors(); ++i) {
    out += i ? ",\n    " : "\n    ";
    out += dump(tensor_json(g.tensor(static_cast<TensorId>(i))), g, "tensor", i);
  }
  out += g.num_tensors() ? "\n  ],\n" : "],\n";
  out += "  \"ops\": [";
  for (size_t i = 0; i < g.num_ops(); ++i) {
    out += i ? ",\n    " : "\n    ";
    out += dump(op_json(g, g.op(static_cast<OpId>(i))), g, "op", i);
  }
  out += g.num_ops() ? "\n  ]\n}\n" : "]\n}\n";
  return out;
}

void save_graph_json(const Graph& g, const std::string& path) {
  write_file_atomic(path, graph_to_json(g), "graph file");
}

}  // namespace placer
