#pragma once
// ONNX model preparation for the importer (internal to datasets/): load and check the
// ModelProto, classify graph inputs (data / parameter / buffer), substitute symbolic
// dimensions, and run shape inference with folding of integer shape arithmetic.
// The user-facing API is datasets/onnx_import.h; this header exposes the protobuf types.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "datasets/onnx_import.h"

namespace placer::onnx_import {

/// Parses `path` as an ONNX ModelProto. FileError: missing / unreadable file;
/// FormatError: empty, truncated or non-ONNX content, no graph, no ir_version.
onnx::ModelProto load_model(const std::string& path);
/// Parses serialized bytes; `file` names the source in messages.
onnx::ModelProto parse_model(const std::string& bytes, const std::string& file);

/// The oldest default-domain opset the importer reads as it is; older models are upgraded
/// to it first (upgrade_opset).
constexpr int64_t kMinOpset = 7;

/// The default-domain opset of the model. FormatError when there is none, or when it is
/// outside 1 .. max_supported_opset() (below kMinOpset the caller upgrades the model).
int64_t check_opset(const onnx::ModelProto& m, const std::string& file);
/// The newest default-domain opset the linked ONNX library has schemas for.
int64_t max_supported_opset();

/// FormatError naming the domain (and the node) when a node is in a training domain
/// (ai.onnx.training, ai.onnx.preview.training: optimizer and gradient operators, not a
/// forward graph), or when such a domain is the only one imported. Defined in
/// onnx_upgrade.cpp.
void check_inference_domains(const onnx::ModelProto& m, const std::string& file);

/// Rewrites a model of default-domain opset `from` (< kMinOpset) to opset kMinOpset with
/// libonnx's version converter (shapes are inferred first: its adapters need them, so
/// symbolic input dims must be substituted before). FormatError with the converter's reason
/// when an op cannot be upgraded. Defined in onnx_upgrade.cpp.
void upgrade_opset(onnx::ModelProto& m, int64_t from, const std::string& file);

/// Role of a graph input or initializer.
enum class InputRole : uint8_t { kData, kParam, kState, kConst };

/// Roles of every graph input and initializer, by name (rules in docs/import.md).
std::unordered_map<std::string, InputRole> classify_inputs(const onnx::GraphProto& g,
                                                           const ImportOptions& opts);

/// Replaces symbolic / unknown dims of inputs (data inputs: batch, sequence, overrides;
/// parameters: overrides only) and drops stale value_info when a static dim changed.
/// Returns the batch size the graph was computed for (0 = no batch dim found).
int64_t substitute_dims(onnx::ModelProto& m,
                        const std::unordered_map<std::string, InputRole>& roles,
                        const ImportOptions& opts, const std::string& file,
                        std::vector<std::string>* warnings, ImportStats* stats);

/// ONNX shape inference (with data propagation) over the whole graph, then one sweep in node
/// order that folds small shape computations (Shape -> Gather -> Div -> Concat ...) into
/// Constant nodes and re-infers, node by node, the outputs the first pass left unknown (so
/// Slice / Reshape / Expand / Pad fed by such chains get static shapes, layer after layer).
/// Inference errors of single nodes become one warning; the shapes that could be inferred
/// are kept.
void infer_shapes(onnx::ModelProto& m, const std::string& file, std::vector<std::string>* warnings,
                  ImportStats* stats);

/// Values of a small numeric tensor (ints, bools and floats as doubles; raw_data or typed
/// fields). False when the type is not numeric or it has more than `max_elems` elements.
bool tensor_values(const onnx::TensorProto& t, std::vector<double>* out, size_t max_elems = 4096);

}  // namespace placer::onnx_import
