#pragma once
// The work (FLOPs and bytes) of one profiled PyTorch op from its recorded inputs, by a table
// of rules per op name (profiler_op_rules.cpp); profiled_ops (profiler_ops.h) uses it.
#include <string>
#include <utility>
#include <vector>

#include "simulator/calibration/profiler_trace.h"
#include "src/graph/types.h"

namespace placer {

/// One op's work as its rule gives it: FLOPs, bytes moved, the rule's name, and whether a
/// rule matched the op's name (else the elementwise rule was used).
struct OpWork {
  double flops = 0, bytes = 0;
  std::string rule;
  bool known = true;
  bool backward = false;  ///< a backward op (its phase in a graph)
  /// Attributes a graph op of this work carries for the cost model (attention: head_dim,
  /// and v_head_dim when v's differs).
  std::vector<std::pair<std::string, std::string>> attrs;
};

/// The work of op `name` (with or without "aten::") on `inputs`; `list_es` is the element size
/// of tensor-list members, `es` that of the op's dtype, `kernels` the kernels it launched.
OpWork op_work(const std::string& name, const std::vector<ProfiledInput>& inputs, int list_es,
               const std::vector<const ProfiledKernel*>& kernels, int es);

/// The floating-point dtype of a recorded input type ("float", "c10::BFloat16", ...).
bool floating_dtype(const std::string& type, DType* d);
/// Any dtype of a recorded input type, integers and bool included.
bool any_dtype(const std::string& type, DType* d);

}  // namespace placer
