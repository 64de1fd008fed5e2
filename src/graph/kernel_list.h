#pragma once
// The GPU kernels one graph op stands for, when a framework runs it as several (PyTorch
// eager runs an RMSNorm as eight: a cast, a square, a mean, ..., each a pass over memory at
// its own rate). A generator lists them in two op attributes, read by the cost model
// (simulator/cost_model.cpp): kKernelListAttr for the forward op, kBackwardKernelListAttr
// for its backward op (the training-step expansion copies both with the op's attributes).
// Format: comma-separated `category:dtype:bytes` entries, one per kernel, e.g.
// "data_movement:f32:100663296,elementwise:f32:134217728" (docs/formats/graph.md).
#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

inline constexpr const char* kKernelListAttr = "kernel_list";
/// Which forward tensors the op's backward keeps and reads, where the rule by op type
/// (saved_tensors_of, src/graph/training_step.h) is not what the framework's autograd saves:
/// "none", "inputs", "outputs" or "inputs_outputs" (an eager RMSNorm keeps its fp32 input and
/// its normalised output, not the input itself: extra outputs stand for them).
inline constexpr const char* kSavedTensorsAttr = "saved_tensors";
inline constexpr const char* kBackwardKernelListAttr = "backward_kernel_list";

/// One kernel: the cost-profile category and dtype whose memory curve it runs at, and the
/// bytes it reads and writes.
struct KernelWork {
  OpCategory category = OpCategory::kElementwise;
  DType dtype = DType::kF32;
  uint64_t bytes = 0;
};

/// The attribute value of `kernels` ("" for none).
std::string format_kernel_list(const std::vector<KernelWork>& kernels);
/// The kernels `op` lists for its phase (kBackwardKernelListAttr for a backward op, else
/// kKernelListAttr); empty when it lists none. ValidationError naming the op on an entry
/// that is not `category:dtype:bytes`.
std::vector<KernelWork> listed_kernels(const Op& op);
/// The bytes of all of `kernels`.
uint64_t kernel_list_bytes(const std::vector<KernelWork>& kernels);

}  // namespace placer
