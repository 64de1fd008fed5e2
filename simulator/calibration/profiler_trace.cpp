#include "simulator/calibration/profiler_trace.h"

#include <zlib.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "src/io/json_read.h"
#include "src/io/yaml_util.h"
#include "src/util/error.h"

namespace placer {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool has(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// Inductor's generated kernels (and the CPU ops torch.compile records for their launches)
// are named triton_<kind>_fused_<the aten ops fused>: "poi" pointwise, "red" / "per"
// reductions (looped / one block per row), "tem" templates (GEMMs). The fused ops' names
// would match the generic rules below wrongly ("cat", "transpose" in a fused rotary kernel),
// so the kind decides: a reduction that squares and normalises (rsqrt, or pow with mean /
// sum: RMSNorm and its backward) is a normalization, a softmax a softmax.
bool classify_triton(const std::string& n, OpCategory* out) {
  if (n.rfind("triton_", 0) != 0) return false;
  if (has(n, "softmax")) return *out = OpCategory::kSoftmax, true;
  if (n.rfind("triton_tem_", 0) == 0) return *out = OpCategory::kMatMul, true;
  if (n.rfind("triton_poi_", 0) == 0) return *out = OpCategory::kElementwise, true;
  const bool norm = has(n, "rsqrt") || (has(n, "_pow_") && (has(n, "_mean_") || has(n, "_sum_")));
  *out = norm ? OpCategory::kNormalization : OpCategory::kReduction;
  return true;
}

// Fused attention: the SDPA ops (aten::_scaled_dot_product_{cudnn,flash,efficient}_attention,
// aten::_{cudnn,flash,efficient}_attention_forward / _backward) and their kernels (cuDNN's
// "..._sdpa_sm90_flash_fprop / bprop", FlashAttention's flash_fwd / flash_bwd, xformers'
// fmha_cutlass*). Checked before the conv rules: "fprop" is also a cuDNN convolution word.
bool attention_name(const std::string& n) {
  return has(n, "attention_forward") || has(n, "attention_backward") ||
         has(n, "scaled_dot_product_cudnn_attention") ||
         has(n, "scaled_dot_product_flash_attention") ||
         has(n, "scaled_dot_product_efficient_attention") || has(n, "_sdpa_") ||
         has(n, "flash_fwd") || has(n, "flash_bwd") || has(n, "fmha_");
}

// Category from a name; kOther when no rule matches. Order matters: convolution kernels
// are implicit GEMMs, so the conv rules come first.
bool classify_name(const std::string& raw, OpCategory* out) {
  const std::string n = lower(raw);
  if (n.empty()) return false;
  auto set = [&](OpCategory c) {
    *out = c;
    return true;
  };
  if (classify_triton(n, out)) return true;
  if (attention_name(n)) return set(OpCategory::kAttention);
  if (has(n, "nccl") || has(n, "all_reduce") || has(n, "allreduce") || has(n, "all_gather") ||
      has(n, "allgather") || has(n, "reduce_scatter") || has(n, "broadcast_")) {
    return set(OpCategory::kCommunication);
  }
  if (has(n, "conv") || has(n, "fprop") || has(n, "dgrad") || has(n, "wgrad") ||
      has(n, "winograd") || has(n, "implicit_gemm") || has(n, "implicit_convolve")) {
    return set(OpCategory::kConv);
  }
  if (has(n, "softmax")) return set(OpCategory::kSoftmax);
  if (has(n, "layer_norm") || has(n, "layernorm") || has(n, "batch_norm") || has(n, "batchnorm") ||
      has(n, "rms_norm") || has(n, "rmsnorm") || has(n, "group_norm") || has(n, "instance_norm") ||
      has(n, "bn_fw") || has(n, "bn_bw")) {
    return set(OpCategory::kNormalization);
  }
  if (has(n, "adam") || has(n, "sgd") || has(n, "optimizer") || has(n, "multi_tensor_apply")) {
    return set(OpCategory::kOptimizer);
  }
  if (has(n, "gemm") || has(n, "matmul") || has(n, "aten::mm") || has(n, "aten::bmm") ||
      has(n, "aten::addmm") || has(n, "aten::linear") || has(n, "cublas") || has(n, "cutlass") ||
      has(n, "xmma") || has(n, "aten::baddbmm") || has(n, "aten::einsum") ||
      has(n, "scaled_dot_product") || has(n, "flash")) {
    return set(OpCategory::kMatMul);
  }
  if (has(n, "pool")) return set(OpCategory::kPooling);
  if (has(n, "embedding") || has(n, "index_select") || has(n, "gather") ||
      has(n, "indexing_backward")) {
    return set(OpCategory::kEmbedding);
  }
  if (has(n, "lstm") || has(n, "gru") || has(n, "aten::rnn")) return set(OpCategory::kRecurrent);
  if (has(n, "reduce") || has(n, "aten::sum") || has(n, "aten::mean") || has(n, "aten::max") ||
      has(n, "aten::min") || has(n, "argmax") || has(n, "aten::norm") || has(n, "nll_loss") ||
      has(n, "cross_entropy")) {
    return set(OpCategory::kReduction);
  }
  if (has(n, "transpose") || has(n, "permute") || has(n, "aten::cat") || has(n, "memcpy") ||
      has(n, "aten::copy_") || has(n, "aten::contiguous") || has(n, "aten::to") || has(n, "cat_") ||
      has(n, "concat")) {
    return set(OpCategory::kDataMovement);
  }
  if (has(n, "elementwise") || has(n, "vectorized") || has(n, "unrolled") || has(n, "aten::add") ||
      has(n, "aten::mul") || has(n, "aten::sub") || has(n, "aten::div") || has(n, "relu") ||
      has(n, "gelu") || has(n, "silu") || has(n, "sigmoid") || has(n, "tanh") ||
      has(n, "dropout") || has(n, "fill") || has(n, "aten::where") || has(n, "aten::exp") ||
      has(n, "aten::pow")) {
    return set(OpCategory::kElementwise);
  }
  return false;
}

// A number or a numeric string; `ok` false for anything else and for values that are not
// finite or are subnormal (no measurement is; such a value is a corrupt field).
double num(const nlohmann::json& v, bool* ok) {
  double d = 0;
  *ok = false;
  if (v.is_number()) {
    d = v.get<double>();
    *ok = true;
  } else if (v.is_string()) {
    try {
      size_t used = 0;
      const std::string s = v.get<std::string>();
      d = std::stod(s, &used);
      *ok = used == s.size();
    } catch (...) {
    }
  }
  *ok = *ok && std::isfinite(d) && std::fpclassify(d) != FP_SUBNORMAL;
  return *ok ? d : 0;
}

// An id (or list entry) read as a double is exact up to 2^53; beyond, it is no id.
bool exact_integer(double d) { return std::fabs(d) <= 9007199254740992.0; }

long long id_of(const nlohmann::json& args, const char* key) {
  if (!args.is_object()) return -1;
  auto it = args.find(key);
  if (it == args.end()) return -1;
  bool ok = false;
  const double d = num(*it, &ok);
  return ok && exact_integer(d) ? static_cast<long long>(d) : -1;
}

// A JSON array of integers -> the integers; false when `v` is not such an array.
bool int_list(const nlohmann::json& v, std::vector<long long>* out) {
  if (!v.is_array()) return false;
  out->clear();
  for (const nlohmann::json& x : v) {
    if (!x.is_number() || !exact_integer(x.get<double>())) return false;
    out->push_back(static_cast<long long>(x.get<double>()));
  }
  return true;
}

// "Input Dims" / "Input Strides" entry: a list of ints (one tensor) or a list of lists
// (a TensorList). Returns false when it is neither (left empty).
bool shapes_of(const nlohmann::json& v, std::vector<std::vector<long long>>* out, bool* list) {
  out->clear();
  *list = false;
  if (!v.is_array()) return false;
  if (!v.empty() && v.front().is_array()) {
    *list = true;
    for (const nlohmann::json& m : v) {
      std::vector<long long> shape;
      if (!int_list(m, &shape)) {
        out->clear();
        return false;
      }
      out->push_back(std::move(shape));
    }
    return true;
  }
  std::vector<long long> shape;
  if (!int_list(v, &shape)) return false;
  out->push_back(std::move(shape));
  return true;
}

// The record_shapes arguments of a cpu_op; whatever is missing or malformed stays empty.
std::vector<ProfiledInput> inputs_of(const nlohmann::json& args) {
  std::vector<ProfiledInput> in;
  if (!args.is_object()) return in;
  auto array = [&](const char* key) -> const nlohmann::json* {
    auto it = args.find(key);
    return it != args.end() && it->is_array() ? &*it : nullptr;
  };
  const nlohmann::json* types = array("Input type");
  const nlohmann::json* dims = array("Input Dims");
  const nlohmann::json* strides = array("Input Strides");
  const nlohmann::json* concrete = array("Concrete Inputs");
  size_t n = 0;
  for (const nlohmann::json* a : {types, dims, strides, concrete}) {
    if (a) n = std::max(n, a->size());
  }
  in.resize(n);
  for (size_t i = 0; i < n; ++i) {
    ProfiledInput& p = in[i];
    if (types && i < types->size() && (*types)[i].is_string()) p.type = (*types)[i].get<std::string>();
    bool list = false;
    if (dims && i < dims->size() && shapes_of((*dims)[i], &p.dims, &list)) p.list = list;
    bool slist = false;
    if (strides && i < strides->size()) shapes_of((*strides)[i], &p.strides, &slist);
    if (concrete && i < concrete->size()) {
      const nlohmann::json& c = (*concrete)[i];
      if (c.is_string()) {
        p.value = c.get<std::string>();
      } else if (c.is_number() || c.is_boolean() || c.is_array()) {
        p.value = c.dump();
      }
    }
    if (p.type == "TensorList") {
      if (!p.list) p.dims.clear(), p.strides.clear();  // [] = members not recorded
      p.list = true;
    }
    if (p.strides.size() != p.dims.size()) p.strides.clear();
  }
  return in;
}

}  // namespace

std::string gunzip(const std::string& data, const std::string& file) {
  z_stream z{};
  // 15 + 32: a zlib or gzip header, detected automatically.
  if (inflateInit2(&z, 15 + 32) != Z_OK) throw FormatError(file + ": cannot start zlib");
  std::string out;
  char buf[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (true) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - z.avail_out);
    if (out.size() > kMaxInputBytes) {  // a gzip bomb: the decompressed text is the input
      inflateEnd(&z);
      throw FileError(file + ": decompressed profiler trace is above the 1 GiB input limit");
    }
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      // Another gzip member follows (concatenated .gz files): start it.
      if (inflateReset(&z) != Z_OK) break;
      continue;
    }
    if (rc != Z_OK) break;
    if (z.avail_in == 0 && z.avail_out != 0) {
      rc = Z_BUF_ERROR;  // input ended inside the stream
      break;
    }
  }
  const std::string msg = z.msg ? z.msg : (rc == Z_BUF_ERROR ? "truncated" : "zlib error");
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    throw FormatError(file + ": corrupt gzip data (" + msg + " after " +
                      std::to_string(out.size()) + " decompressed bytes)");
  }
  return out;
}

namespace {

// PyTorch's TensorIterator kernels say how an element-wise op reads memory: the vectorised
// one (vectorized_elementwise_kernel: contiguous operands, 16-byte loads) streams at the
// copy rate; the generic ones (elementwise_kernel<...> with offset calculators for strided
// or broadcast operands, unrolled_elementwise_kernel for casts and unaligned ones) move
// one element per load at a fraction of it. The first is an element-wise op, the others
// strided data movement, whichever op launched them.
bool tensor_iterator_kind(const std::string& kernel_name, OpCategory* out) {
  const std::string n = lower(kernel_name);
  if (has(n, "vectorized_elementwise_kernel")) return *out = OpCategory::kElementwise, true;
  if (has(n, "native::elementwise_kernel<") || has(n, "unrolled_elementwise_kernel")) {
    return *out = OpCategory::kDataMovement, true;
  }
  return false;
}

}  // namespace

OpCategory classify_kernel(const std::string& op_name, const std::string& kernel_name) {
  OpCategory c = OpCategory::kOther;
  if (!classify_name(op_name, &c) && !classify_name(kernel_name, &c)) return OpCategory::kOther;
  OpCategory kind;
  if ((c == OpCategory::kElementwise || c == OpCategory::kDataMovement) &&
      tensor_iterator_kind(kernel_name, &kind)) {
    return kind;
  }
  return c;
}

namespace {

// The event array of a Chrome trace: the root array, or the object's traceEvents.
const nlohmann::json& trace_events(const nlohmann::json& root, const std::string& file) {
  if (root.is_array()) return root;
  if (root.is_object() && root.contains("traceEvents") && root["traceEvents"].is_array()) {
    return root["traceEvents"];
  }
  throw FormatError(file + ": not a Chrome trace (expected an object with a traceEvents array)");
}

// A cpu_op / operator event (user annotations are counted out): the first one of each
// External id becomes a ProfiledCpuOp.
void read_cpu_op(const nlohmann::json& e, const nlohmann::json& args, const std::string& lc,
                 ProfilerTrace* t) {
  if (lc == "cpu_op" || lc == "operator") ++t->cpu_ops;
  const long long ext = id_of(args, "External id");
  if (ext < 0 || lc == "user_annotation" || t->ops.count(ext)) return;
  ProfiledCpuOp op;
  op.name = e.value("name", std::string());
  op.id = ext;
  op.inputs = inputs_of(args);
  if (args.is_object() && args.contains("flops")) {
    bool ok = false;
    const double f = num(args["flops"], &ok);
    if (ok && f > 0) op.flops = f;
  }
  t->ops.emplace(ext, std::move(op));
}

// The launch's grid size in blocks and the bytes a memcpy / memset moved, when recorded.
void read_kernel_args(const nlohmann::json& args, ProfiledKernel* k) {
  if (!args.is_object()) return;
  if (auto g = args.find("grid"); g != args.end()) {
    std::vector<long long> grid;
    if (int_list(*g, &grid) && !grid.empty()) {
      k->blocks = 1;
      for (long long x : grid) k->blocks *= std::max(1LL, x);
    }
  }
  if (auto b = args.find("bytes"); b != args.end()) {
    bool ok = false;
    const double v = num(*b, &ok);
    if (ok && v > 0) k->bytes = v;
  }
}

// A kernel / memcpy / memset event (traceEvents[index]) with the CPU op that launched it:
// its External id, else the one of the runtime call with its correlation id.
ProfiledKernel read_kernel(size_t index, const nlohmann::json& e, const std::string& file,
                           const ProfilerTrace& t,
                           const std::unordered_map<long long, long long>& runtime) {
  const std::string where = file + ": traceEvents[" + std::to_string(index) + "]";
  ProfiledKernel k;
  k.name = e.value("name", std::string());
  k.cat = e["cat"].get<std::string>();
  bool ok_ts = false, ok_dur = false;
  const double ts = e.contains("ts") ? num(e["ts"], &ok_ts) : 0;
  const double dur = e.contains("dur") ? num(e["dur"], &ok_dur) : 0;
  if (!ok_ts || !ok_dur) {
    throw FormatError(where + ": " + k.cat + " event '" + k.name +
                      "' needs numeric ts and dur (microseconds)");
  }
  if (dur < 0) throw FormatError(where + ": negative dur");
  k.start_s = ts * 1e-6;
  k.dur_s = dur * 1e-6;
  const nlohmann::json args = e.contains("args") ? e["args"] : nlohmann::json::object();
  read_kernel_args(args, &k);
  long long ext = id_of(args, "External id");
  if (ext < 0 || !t.ops.count(ext)) {
    const long long corr = id_of(args, "correlation");
    if (corr >= 0) {
      auto it = runtime.find(corr);
      if (it != runtime.end()) ext = it->second;
    }
  }
  if (auto it = t.ops.find(ext); ext >= 0 && it != t.ops.end()) {
    k.op_name = it->second.name;
    k.op_id = ext;
    k.op_flops = it->second.flops;
  }
  k.category = classify_kernel(k.op_name, k.name);
  return k;
}

}  // namespace

ProfilerTrace parse_profiler_trace(const std::string& json_text, const std::string& file) {
  const nlohmann::json root = parse_json_text(json_text, file);
  const nlohmann::json& events = trace_events(root, file);
  ProfilerTrace t;
  t.source = file;
  std::unordered_map<long long, long long> runtime;  // correlation -> External id
  std::vector<size_t> kernel_events;                 // read once every cpu op is known
  for (size_t i = 0; i < events.size(); ++i) {
    const nlohmann::json& e = events[i];
    if (!e.is_object()) continue;
    const std::string ph = e.value("ph", std::string());
    if (ph != "X") continue;
    const std::string cat =
        e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : std::string();
    const nlohmann::json args = e.contains("args") ? e["args"] : nlohmann::json::object();
    const std::string lc = lower(cat);
    if (lc == "cpu_op" || lc == "operator" || lc == "user_annotation") {
      read_cpu_op(e, args, lc, &t);
    } else if (lc == "cuda_runtime" || lc == "cuda_driver" || lc == "runtime") {
      const long long corr = id_of(args, "correlation");
      const long long ext = id_of(args, "External id");
      if (corr >= 0 && ext >= 0) runtime[corr] = ext;
    } else if (lc == "kernel" || lc == "gpu_memcpy" || lc == "gpu_memset") {
      kernel_events.push_back(i);
    }
  }
  for (size_t i : kernel_events) t.kernels.push_back(read_kernel(i, events[i], file, t, runtime));
  return t;
}

ProfilerTrace load_profiler_trace(const std::string& path) {
  std::string data = read_text_file(path, "profiler trace");
  if (data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
      static_cast<unsigned char>(data[1]) == 0x8b) {
    data = gunzip(data, path);
  } else if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0) {
    throw FormatError(path + ": not gzip data (the file ends in .gz but does not start with "
                             "the gzip magic bytes 1f 8b)");
  }
  return parse_profiler_trace(data, path);
}

}  // namespace placer
