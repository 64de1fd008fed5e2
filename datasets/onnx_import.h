#pragma once
// ONNX import: an ONNX model file -> forward Graph with per-op FLOPs, bytes, parameters,
// module scopes and layer indices. Rules (symbolic dims, parameters, folding, FLOP table)
// are in docs/import.md.
//
//   ImportOptions opts;
//   opts.batch_size = 32;            // the data inputs' first dim
//   opts.seq_len = 128;              // symbolic dims named like "seq" / "sequence_length"
//   opts.dtype = DType::kBF16;       // compute precision: FLOP dtype and float tensor bytes
//   std::vector<std::string> warnings;
//   Graph g = import_onnx("resnet50.onnx", opts, &warnings);
//
// Models below opset 7 are upgraded to 7 with ONNX's version converter first
// (ImportStats::upgraded_from says so).
//
// Errors: FileError (missing / unreadable file), FormatError (empty, truncated or non-ONNX
// file, an opset too new or one the converter cannot upgrade, training-domain operators,
// unresolved symbolic dims, output shapes inference cannot fill, static shapes that
// contradict --batch-size), each naming the file and the node or input.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/graph/graph.h"
#include "src/graph/types.h"

namespace placer {

struct ImportOptions {
  /// First dim of the data inputs. 0 = keep a static one; a symbolic one becomes 1 (with a
  /// warning). > 0 also replaces a static first dim (shapes are re-inferred).
  int64_t batch_size = 0;
  /// Value of symbolic dims whose name looks like a sequence length ("seq", "sequence",
  /// "len", "length", "time", "step"). 0 = such a dim is an error that asks for --seq-len.
  int64_t seq_len = 0;
  /// Compute precision: the dtype of every op computing on floats, and of float tensors and
  /// parameters when counting bytes (whatever the float type in the file).
  DType dtype = DType::kF32;
  /// Symbolic dim name -> value; applied before the batch / sequence rules.
  std::map<std::string, int64_t> dim_overrides;
  /// Graph inputs that are data even if a parameter rule matches them.
  std::vector<std::string> data_inputs;
  /// Graph name; empty = the file name without ".onnx".
  std::string name;
};

/// What the importer saw and did (for the CLI summary and tests).
struct ImportStats {
  int64_t ir_version = 0;
  int64_t opset = 0;            ///< default-domain opset imported (after an upgrade)
  int64_t upgraded_from = 0;    ///< the file's opset when it was older and upgraded (0 = not)
  std::string producer;         ///< producer_name producer_version
  size_t nodes = 0;             ///< nodes in the ONNX graph
  size_t folded_nodes = 0;      ///< constant / shape / weight-layout nodes that became no op
  size_t shape_folds = 0;       ///< integer shape computations folded before re-inference
  size_t inference_passes = 0;  ///< whole-graph ONNX shape-inference runs (1, 2 after an error)
  size_t nodes_reinferred = 0;  ///< nodes inferred one by one after folding (see docs/import.md)
  size_t data_inputs = 0;       ///< graph inputs that are data
  size_t param_tensors = 0;     ///< trainable parameter tensors (inputs or initializers)
  size_t state_tensors = 0;     ///< buffers (BatchNorm running statistics)
  uint64_t param_bytes = 0;     ///< sum of Op::param_bytes
  uint64_t state_bytes = 0;     ///< sum of Op::state_bytes
  int64_t batch_size = 0;       ///< batch the graph was computed for (0 = unknown)
  int64_t exported_batch = 0;   ///< static batch replaced by ImportOptions::batch_size (0 = none)
  std::string inference_error;  ///< what strict ONNX shape inference rejected ("" = nothing)
  std::vector<std::string> data_input_shapes;   ///< "name [d0,d1,...] dtype" per data input
  std::map<std::string, int> unruled_op_types;  ///< op types costed by the fallback -> nodes
};

/// Imports the forward graph of an ONNX model. Warnings (one per op type without a cost
/// rule, defaulted dims, partial shape inference, ...) are appended to `warnings` if given.
Graph import_onnx(const std::string& path, const ImportOptions& options = {},
                  std::vector<std::string>* warnings = nullptr, ImportStats* stats = nullptr);

/// Same from serialized ModelProto bytes; `filename` names the model in messages and gives
/// the default graph name.
Graph import_onnx_bytes(const std::string& bytes, const std::string& filename,
                        const ImportOptions& options = {},
                        std::vector<std::string>* warnings = nullptr, ImportStats* stats = nullptr);

/// Module scope of an ONNX node name written by torch.onnx.export:
/// "/encoder/layer.3/attention/self/MatMul_1" -> "encoder.layer.3.attention.self";
/// "/layer1/layer1.0/conv1/Conv" -> "layer1.0.conv1" (a segment repeating its parent's path
/// is not doubled); "" for names without '/'. Sets *layer to N of the first "layer.N",
/// "layers.N", "blocks.N", "block.N", "h.N" or "stages.N" in the scope, else -1.
std::string onnx_node_scope(const std::string& node_name, int32_t* layer = nullptr);

}  // namespace placer
