#include "simulator/calibration/profiler_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "simulator/calibration/profiler_op_rules.h"
#include "simulator/cost_model.h"
#include "src/util/error.h"

namespace placer {

namespace {

// Dtype from a kernel name's template arguments (foreach kernels name their scalar type).
bool dtype_from_kernel(const std::string& k, DType* d) {
  if (k.find("c10::BFloat16") != std::string::npos || k.find("__nv_bfloat16") != std::string::npos) {
    return *d = DType::kBF16, true;
  }
  if (k.find("c10::Half") != std::string::npos || k.find("__half") != std::string::npos) {
    return *d = DType::kF16, true;
  }
  if (k.find("Functor<double") != std::string::npos || k.find("<double") != std::string::npos) {
    return *d = DType::kF64, true;
  }
  if (k.find("Functor<float") != std::string::npos || k.find("<float") != std::string::npos) {
    return *d = DType::kF32, true;
  }
  return false;
}

std::string memcpy_kind(const ProfiledKernel& k) {
  if (k.cat == "gpu_memset") return "memset";
  for (const char* d : {"DtoD", "HtoD", "DtoH", "PtoP", "HtoH"}) {
    if (k.name.find(d) != std::string::npos) return std::string("memcpy ") + d;
  }
  return "memcpy";
}

std::string us(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f us", s * 1e6);
  return buf;
}

// The trace's kernel, memcpy and memset events grouped per launching CPU op instance, in
// order of first appearance; events without a known CPU op are orphans.
struct OpEvents {
  struct Acc {
    std::vector<const ProfiledKernel*> kernels;
    std::map<std::string, std::vector<const ProfiledKernel*>> copies;  // memcpy / memset kind
    size_t first = 0;
  };
  std::unordered_map<long long, Acc> by_op;
  std::vector<long long> order;
  int orphans = 0;
  double orphan_s = 0;

  explicit OpEvents(const ProfilerTrace& trace) {
    for (size_t i = 0; i < trace.kernels.size(); ++i) {
      const ProfiledKernel& k = trace.kernels[i];
      if (k.op_id < 0 || !trace.ops.count(k.op_id)) {
        ++orphans;
        orphan_s += k.dur_s;
        continue;
      }
      auto [it, fresh] = by_op.try_emplace(k.op_id);
      if (fresh) {
        it->second.first = i;
        order.push_back(k.op_id);
      }
      if (k.cat == "kernel") {
        it->second.kernels.push_back(&k);
      } else {
        it->second.copies[memcpy_kind(k)].push_back(&k);
      }
    }
  }
};

// The most common floating dtype of the ops' first floating inputs (the fallback for
// TensorList-only ops); false when no op has one.
bool majority_dtype(const ProfilerTrace& trace, const std::vector<long long>& order,
                    DType* majority) {
  std::map<DType, int> dtype_votes;
  for (long long id : order) {
    const ProfiledCpuOp& op = trace.ops.at(id);
    for (const ProfiledInput& p : op.inputs) {
      DType d;
      if (!p.list && floating_dtype(p.type, &d)) {
        ++dtype_votes[d];
        break;
      }
    }
  }
  bool have = false;
  int best = 0;
  for (const auto& [d, n] : dtype_votes) {
    if (n > best) best = n, *majority = d, have = true;
  }
  return have;
}

// The floating dtype of the most elements among an op's tensor inputs (an inductor
// kernel's arguments list small fp32 statistics, e.g. RMSNorm's rstd, before its bf16
// activations); false when no input is a floating tensor.
bool bulk_dtype(const ProfiledCpuOp& cpu, DType* out) {
  std::map<DType, double> elements;
  for (const ProfiledInput& p : cpu.inputs) {
    DType d;
    if (p.list || p.dims.size() != 1 || !floating_dtype(p.type, &d)) continue;
    double n = 1;
    for (long long x : p.dims.front()) n *= static_cast<double>(std::max(0LL, x));
    elements[d] += n;
  }
  double most = -1;
  for (const auto& [d, n] : elements) {
    if (n > most) most = n, *out = d;
  }
  return most >= 0;
}

// An op's dtype: its first floating input's (an inductor kernel's: that of most of its
// elements), else its first kernel's template argument, else the trace's majority, else its
// first input of any dtype, else f32.
DType op_dtype(const ProfiledCpuOp& cpu, const std::vector<const ProfiledKernel*>& kernels,
               const DType* majority) {
  DType dtype = DType::kF32;
  if (cpu.name.rfind("triton_", 0) == 0 && bulk_dtype(cpu, &dtype)) return dtype;
  for (const ProfiledInput& p : cpu.inputs) {
    if (!p.list && floating_dtype(p.type, &dtype)) return dtype;
  }
  if (!kernels.empty() && dtype_from_kernel(kernels.front()->name, &dtype)) return dtype;
  if (majority) return *majority;
  for (const ProfiledInput& p : cpu.inputs) {
    if (!p.list && any_dtype(p.type, &dtype)) break;
  }
  return dtype;
}

// The row of an op's kernels, its work from the op's rule.
ProfiledOp kernel_row(const std::string& source, long long id, const ProfiledCpuOp& cpu,
                      const std::vector<const ProfiledKernel*>& kernels, DType dtype) {
  const int es = dtype_bytes(dtype);
  ProfiledOp r;
  r.source = source;
  r.op_id = id;
  r.op = cpu.name;
  r.category = classify_kernel(cpu.name, kernels.front()->name);
  r.dtype = dtype;
  for (const ProfiledKernel* k : kernels) r.measured_s += k->dur_s;
  r.kernels = static_cast<int>(kernels.size());
  r.has_shapes = !cpu.inputs.empty();
  const OpWork w = op_work(cpu.name, cpu.inputs, es, kernels, es);
  r.flops = w.flops;
  r.bytes = w.bytes;
  r.rule = w.rule;
  r.known = w.known;
  r.phase = w.backward ? Phase::kBackward : Phase::kForward;
  r.attrs = w.attrs;
  return r;
}

// The row of an op's copies of one kind (device-to-device copies read and write).
ProfiledOp copy_row(const std::string& source, long long id, const ProfiledCpuOp& cpu,
                    const std::string& kind, const std::vector<const ProfiledKernel*>& ks,
                    DType dtype) {
  ProfiledOp r;
  r.source = source;
  r.op_id = id;
  r.op = cpu.name;
  r.kind = kind;
  r.category = OpCategory::kDataMovement;
  r.dtype = dtype;
  r.rule = kind == "memset" ? "memset bytes"
                            : (kind == "memcpy DtoD" ? "2 x memcpy bytes" : "memcpy bytes");
  double b = 0;
  for (const ProfiledKernel* k : ks) {
    r.measured_s += k->dur_s;
    b += k->bytes;
  }
  r.kernels = static_cast<int>(ks.size());
  r.bytes = kind == "memcpy DtoD" ? 2 * b : b;
  return r;
}

// "name (count), ..."
std::string count_list(const std::map<std::string, int>& m) {
  std::string s;
  for (const auto& [name, n] : m)
    s += (s.empty() ? "" : ", ") + name + " (" + std::to_string(n) + ")";
  return s;
}

// Notes on what the rows leave out or only estimate.
void add_notes(const std::string& source, const OpEvents& events,
               const std::map<std::string, int>& unknown,
               const std::map<std::string, int>& no_shapes, std::vector<std::string>* notes) {
  const std::string src = source + ": ";
  if (events.orphans > 0) {
    notes->push_back(src + std::to_string(events.orphans) + " kernel / memcpy / memset events (" +
                     us(events.orphan_s) + ") without a launching CPU op: left out");
  }
  if (!unknown.empty()) {
    int n = 0;
    for (const auto& [name, c] : unknown) n += c;
    notes->push_back(
        src + std::to_string(n) +
        " ops without a rule of their own, generic elementwise rule: " + count_list(unknown));
  }
  if (!no_shapes.empty()) {
    notes->push_back(
        src + "no recorded inputs (record_shapes=False?), bytes 0: " + count_list(no_shapes));
  }
}

}  // namespace

std::vector<ProfiledOp> profiled_ops(const ProfilerTrace& trace, std::vector<std::string>* notes) {
  const OpEvents events(trace);
  DType majority = DType::kF32;
  const bool have_majority = majority_dtype(trace, events.order, &majority);
  std::vector<ProfiledOp> rows, copy_rows;
  std::map<std::string, int> unknown, no_shapes;
  for (long long id : events.order) {
    const ProfiledCpuOp& cpu = trace.ops.at(id);
    const OpEvents::Acc& acc = events.by_op.at(id);
    const DType dtype = op_dtype(cpu, acc.kernels, have_majority ? &majority : nullptr);
    if (!acc.kernels.empty()) {
      rows.push_back(kernel_row(trace.source, id, cpu, acc.kernels, dtype));
      if (!rows.back().known) ++unknown[cpu.name];
      if (!rows.back().has_shapes) ++no_shapes[cpu.name];
    }
    for (const auto& [kind, ks] : acc.copies) {
      copy_rows.push_back(copy_row(trace.source, id, cpu, kind, ks, dtype));
    }
  }
  rows.insert(rows.end(), copy_rows.begin(), copy_rows.end());
  if (notes) add_notes(trace.source, events, unknown, no_shapes, notes);
  return rows;
}

}  // namespace placer
