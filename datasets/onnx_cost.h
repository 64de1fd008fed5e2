#pragma once
// Per-op FLOP rules of the ONNX importer (internal to datasets/). The table with formulas is
// in docs/import.md; FLOPs count a multiply-add as 2.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/graph/types.h"

namespace placer::onnx_import {

/// What a cost rule sees of one input or output of a node.
struct ValueDesc {
  bool present = false;      ///< the (optional) input / output is given
  bool shape_known = false;  ///< every dim is a known number
  std::vector<int64_t> shape;
  double elems = 0;       ///< product of the shape (1 for a scalar)
  bool is_param = false;  ///< a parameter, buffer or a re-layout of one (a weight)
};

/// The cost of one node.
struct NodeCost {
  double flops = 0;
  OpCategory category = OpCategory::kOther;
  bool has_rule = true;    ///< false: the fallback (1 FLOP per output element) was used
  bool view = false;       ///< moves no data (Reshape, Squeeze, ...): bytes_accessed = 1
  bool rows_only = false;  ///< Gather from a table: reads only the gathered rows of input 0
};

/// Thrown by a rule that needs a shape the importer does not know.
struct MissingShape : std::runtime_error {
  MissingShape(bool is_output, int index)
      : std::runtime_error("missing shape"), output(is_output), slot(index) {}
  bool output;
  int slot;
};

/// Cost of `node` given its inputs and outputs (absent optional ones have present = false).
/// Throws MissingShape when a rule needs an unknown shape.
NodeCost node_cost(const onnx::NodeProto& node, const std::vector<ValueDesc>& in,
                   const std::vector<ValueDesc>& out);

/// True for op types whose output has the (broadcast) shape of their inputs; used to fill
/// outputs that shape inference left unknown.
bool is_elementwise_op(const std::string& op_type);
/// True for ops that return a view of their input (Reshape, Flatten, Squeeze, Unsqueeze,
/// Identity): same elements, no data moved.
bool is_view_op(const std::string& op_type);

}  // namespace placer::onnx_import
