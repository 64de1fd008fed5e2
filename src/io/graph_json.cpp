// Reader of *.graph.json (the writer is graph_json_writer.cpp).

#include "src/io/graph_json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>

#include "src/graph/bounds.h"
#include "src/io/json_read.h"
#include "src/util/error.h"

namespace placer {
namespace {

// Where a value sits in the file ("ops[12].inputs[0]"). Rendered only when reporting an
// error, so the happy path builds no strings.
struct Where {
  const char* array = nullptr;  // "tensors" / "ops", or nullptr for a top-level field
  size_t index = 0;
  const char* key = nullptr;
  long sub = -1;  // index inside an array field, -1 = none

  std::string str() const {
    std::string s;
    if (array) s = std::string(array) + "[" + std::to_string(index) + "]";
    if (key) s += (s.empty() ? "" : ".") + std::string(key);
    if (sub >= 0) s += "[" + std::to_string(sub) + "]";
    return s;
  }
  Where at(size_t i) const {
    Where w = *this;
    w.sub = static_cast<long>(i);
    return w;
  }
};

// One SAX event's value: a scalar, or the start of an object / array.
struct Value {
  enum Kind { kNull, kBool, kInt, kUInt, kFloat, kString, kObject, kArray } kind = kNull;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string* s = nullptr;          // kString (may be moved from)
  const std::string* raw = nullptr;  // kFloat: the number as written
};

std::string describe(const Value& v) {
  switch (v.kind) {
    case Value::kNull:
      return "null";
    case Value::kBool:
      return v.b ? "true" : "false";
    case Value::kInt:
      return std::to_string(v.i);
    case Value::kUInt:
      return std::to_string(v.u);
    case Value::kFloat:
      return *v.raw;
    case Value::kString:
      return "'" + (v.s->size() > 40 ? v.s->substr(0, 40) + "..." : *v.s) + "'";
    case Value::kObject:
      return "an object";
    case Value::kArray:
      return "an array";
  }
  return "?";
}

[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& msg) {
  throw FormatError(format_context(file, field, msg));
}

// Checks "MAJOR.MINOR" and returns the minor version.
int check_version(const std::string& file, const std::string& version) {
  int major = -1, minor = 0;
  char extra = 0;
  const int got = std::sscanf(version.c_str(), "%d.%d%c", &major, &minor, &extra);
  if (got < 1 || got > 2 || major < 0 || minor < 0) {
    fail(file, "format_version", "malformed version '" + version + "' (expected \"MAJOR.MINOR\")");
  }
  if (major != kGraphFormatMajor) {
    fail(file, "format_version",
         "unsupported graph format version '" + version + "' (this build of placer reads version " +
             std::to_string(kGraphFormatMajor) + ".x)");
  }
  return minor;
}

// Streams the file into Tensor / Op structs with nlohmann's SAX interface: no DOM, so a
// 50k-op graph loads in a fraction of the time a json tree would take. Errors carry the
// field path. Checks that need the whole file (tensor / op indices, unknown fields seen
// before format_version) run in finish().
class GraphSax {
 public:
  using string_t = std::string;
  using number_integer_t = int64_t;
  using number_unsigned_t = uint64_t;
  using number_float_t = double;
  using binary_t = nlohmann::json::binary_t;

  GraphSax(const std::string& file, const std::string& text) : file_(file), text_(text) {}

  bool version_seen() const { return version_seen_; }

  // ---- SAX interface ----
  bool null() { return skipping() || value(Value{}); }
  bool boolean(bool b) {
    if (skipping()) return true;
    Value v;
    v.kind = Value::kBool;
    v.b = b;
    return value(v);
  }
  bool number_integer(int64_t i) {
    if (skipping()) return true;
    Value v;
    v.kind = Value::kInt;
    v.i = i;
    return value(v);
  }
  bool number_unsigned(uint64_t u) {
    if (skipping()) return true;
    Value v;
    v.kind = Value::kUInt;
    v.u = u;
    return value(v);
  }
  bool number_float(double d, const std::string& raw) {
    if (skipping()) return true;
    Value v;
    v.kind = Value::kFloat;
    v.d = d;
    v.raw = &raw;
    return value(v);
  }
  bool string(std::string& s) {
    if (skipping()) return true;
    Value v;
    v.kind = Value::kString;
    v.s = &s;
    return value(v);
  }
  bool binary(binary_t&) { return true; }  // not produced by the JSON parser
  bool start_object(size_t) {
    if (skip_ > 0) return ++skip_, true;
    Value v;
    v.kind = Value::kObject;
    return value(v);
  }
  bool start_array(size_t) {
    if (skip_ > 0) return ++skip_, true;
    Value v;
    v.kind = Value::kArray;
    return value(v);
  }
  bool end_object() { return skip_ > 0 ? (--skip_, true) : end(); }
  bool end_array() { return skip_ > 0 ? (--skip_, true) : end(); }
  bool key(std::string& k);
  bool parse_error(size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) {
    throw FormatError(json_syntax_message(text_, file_, position, e.what()));
  }

  Graph finish(const std::string& default_name);

 private:
  enum State {
    kStart,
    kRoot,
    kTensors,
    kTensor,
    kShape,
    kOps,
    kOp,
    kIdList,
    kAttrs,
    kAttrList,
    kAttrPair,
    kDone
  };
  enum Field {
    kUnknown,
    kFormatVersion,
    kName,
    kBatchSize,
    kTrainingStep,
    kTensorsField,
    kOpsField,
    kType,
    kDType,
    kShapeField,
    kBytes,
    kBatchScaled,
    kParamGrad,
    kCategory,
    kPhase,
    kScope,
    kLayer,
    kGroup,
    kFlops,
    kBytesAccessed,
    kParamBytes,
    kStateBytes,
    kWorkspaceBytes,
    kForwardOp,
    kInputs,
    kOutputs,
    kAttrsField
  };

  bool skipping() const { return skip_ > 0; }
  bool value(const Value& v);
  bool end();
  void root_value(const Value& v);
  void tensor_value(const Value& v);
  void op_value(const Value& v);
  void unknown_field(const Value& v, const Where& obj);

  [[noreturn]] void fail_at(const Where& w, const std::string& msg) const {
    fail(file_, w.str(), msg);
  }
  Where tensor_where(const char* key) const { return {"tensors", tensors_.size(), key}; }
  Where op_where(const char* key) const { return {"ops", ops_.size(), key}; }

  std::string take_string(const Value& v, const Where& w) const {
    if (v.kind != Value::kString) fail_at(w, "expected a string, got " + describe(v));
    return std::move(*v.s);
  }
  bool boolean_of(const Value& v, const Where& w) const {
    if (v.kind != Value::kBool) fail_at(w, "expected true or false, got " + describe(v));
    return v.b;
  }
  double number_of(const Value& v, const Where& w) const {
    if (v.kind == Value::kFloat) return v.d;
    if (v.kind == Value::kUInt) return static_cast<double>(v.u);
    if (v.kind == Value::kInt) return static_cast<double>(v.i);
    fail_at(w, "expected a number, got " + describe(v));
  }
  uint64_t u64_of(const Value& v, const Where& w) const {
    if (v.kind == Value::kUInt) return v.u;
    // 1e9 style is accepted when it is an exact non-negative integer.
    if (v.kind == Value::kFloat && v.d >= 0 && v.d < 18446744073709551616.0 &&
        v.d == std::floor(v.d)) {
      return static_cast<uint64_t>(v.d);
    }
    fail_at(w, "expected a non-negative integer, got " + describe(v));
  }
  /// A byte count: a non-negative integer within the physical bound (1 EiB), so that sums
  /// over a graph stay far from uint64 overflow.
  uint64_t bytes_of(const Value& v, const Where& w) const {
    const uint64_t b = u64_of(v, w);
    if (b > kMaxBytes) {
      fail_at(w, "is " + describe(v) + " bytes, beyond the physical bound of 1 EiB");
    }
    return b;
  }
  int64_t i64_of(const Value& v, const Where& w) const {
    if (v.kind == Value::kInt) return v.i;
    if (v.kind == Value::kUInt) {
      if (v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        fail_at(w, "integer " + std::to_string(v.u) + " is too large");
      }
      return static_cast<int64_t>(v.u);
    }
    if (v.kind == Value::kFloat && v.d >= -9223372036854775808.0 && v.d < 9223372036854775808.0 &&
        v.d == std::floor(v.d)) {
      return static_cast<int64_t>(v.d);
    }
    fail_at(w, "expected an integer, got " + describe(v));
  }
  DType dtype_of(const Value& v, const Where& w) const {
    DType d;
    if (v.kind != Value::kString || !parse_dtype(*v.s, &d)) {
      fail_at(w, "unknown dtype " + describe(v) +
                     " (expected f32, f16, bf16, f64, i64, i32, i16, i8, u8 or bool)");
    }
    return d;
  }
  Phase phase_of(const Value& v, const Where& w) const {
    Phase p;
    if (v.kind != Value::kString || !parse_phase(*v.s, &p)) {
      fail_at(w, "unknown phase " + describe(v) +
                     " (expected forward, backward, optimizer or communication)");
    }
    return p;
  }
  OpCategory category_of(const Value& v, const Where& w) const {
    OpCategory c;
    if (v.kind != Value::kString || !parse_op_category(*v.s, &c)) {
      std::string names;
      for (int i = 0; i < kNumOpCategories; ++i) {
        names += (i ? ", " : "") + std::string(to_string(static_cast<OpCategory>(i)));
      }
      fail_at(w, "unknown category " + describe(v) + " (expected one of " + names + ")");
    }
    return c;
  }
  OpCategory default_category(const std::string& type) {
    auto it = category_cache_.find(type);
    if (it != category_cache_.end()) return it->second;
    const OpCategory c = category_of_op_type(type);
    category_cache_.emplace(type, c);
    return c;
  }

  const std::string& file_;
  const std::string& text_;  // for the line and column of syntax errors
  std::vector<State> stack_{kStart};
  int skip_ = 0;  // depth inside a value being skipped (unknown field)
  Field field_ = kUnknown;
  std::string unknown_key_, attr_key_;

  bool version_seen_ = false, strict_ = true;
  std::string deferred_unknown_;  // "field: message" of an unknown field seen before the version
  std::string name_;
  bool have_name_ = false, have_tensors_ = false, have_ops_ = false, tensors_done_ = false;
  int64_t batch_size_ = 0;
  bool training_step_ = false;

  std::vector<Tensor> tensors_;
  std::vector<Op> ops_;
  Tensor tensor_;
  Op op_;
  bool have_bytes_ = false, have_field_name_ = false, have_type_ = false, have_category_ = false;
  std::vector<TensorId>* id_list_ = nullptr;
  const char* id_list_key_ = nullptr;
  uint64_t forward_op_ = 0;
  bool have_forward_op_ = false;
  std::vector<uint64_t> forward_ops_;  // per op, kNoForward or the index (checked in finish())
  static constexpr uint64_t kNoForward = UINT64_MAX;
  int pair_n_ = 0;
  std::unordered_map<std::string, OpCategory> category_cache_;
};

bool GraphSax::key(std::string& k) {
  if (skip_ > 0) return true;
  const State st = stack_.back();
  if (st == kAttrs) {
    attr_key_ = std::move(k);
    return true;
  }
  Field f = kUnknown;
  if (st == kRoot) {
    if (k == "format_version")
      f = kFormatVersion;
    else if (k == "name")
      f = kName;
    else if (k == "batch_size")
      f = kBatchSize;
    else if (k == "training_step")
      f = kTrainingStep;
    else if (k == "tensors")
      f = kTensorsField;
    else if (k == "ops")
      f = kOpsField;
  } else if (st == kTensor) {
    if (k == "name")
      f = kName;
    else if (k == "dtype")
      f = kDType;
    else if (k == "shape")
      f = kShapeField;
    else if (k == "bytes")
      f = kBytes;
    else if (k == "batch_scaled")
      f = kBatchScaled;
    else if (k == "param_grad")
      f = kParamGrad;
  } else {  // kOp
    if (k == "name")
      f = kName;
    else if (k == "type")
      f = kType;
    else if (k == "inputs")
      f = kInputs;
    else if (k == "outputs")
      f = kOutputs;
    else if (k == "flops")
      f = kFlops;
    else if (k == "category")
      f = kCategory;
    else if (k == "phase")
      f = kPhase;
    else if (k == "dtype")
      f = kDType;
    else if (k == "scope")
      f = kScope;
    else if (k == "layer")
      f = kLayer;
    else if (k == "group")
      f = kGroup;
    else if (k == "bytes_accessed")
      f = kBytesAccessed;
    else if (k == "param_bytes")
      f = kParamBytes;
    else if (k == "state_bytes")
      f = kStateBytes;
    else if (k == "workspace_bytes")
      f = kWorkspaceBytes;
    else if (k == "batch_scaled")
      f = kBatchScaled;
    else if (k == "forward_op")
      f = kForwardOp;
    else if (k == "attrs")
      f = kAttrsField;
  }
  field_ = f;
  if (f == kUnknown) unknown_key_ = k;
  return true;
}

// Unknown fields are typos in files of a version this reader knows (strict) and later
// additions in newer 1.x files. Before format_version is seen, the first one is remembered.
void GraphSax::unknown_field(const Value& v, const Where& obj) {
  const std::string msg = "unknown field '" + unknown_key_ + "'";
  if (version_seen_ && strict_) fail_at(obj, msg);
  if (!version_seen_ && deferred_unknown_.empty()) {
    deferred_unknown_ = format_context(file_, obj.str(), msg);
  }
  if (v.kind == Value::kObject || v.kind == Value::kArray) skip_ = 1;
}

bool GraphSax::value(const Value& v) {
  switch (stack_.back()) {
    case kStart:
      if (v.kind != Value::kObject) {
        fail(file_, "", "expected a JSON object at the top level, got " + describe(v));
      }
      stack_.back() = kDone;
      stack_.push_back(kRoot);
      return true;
    case kRoot:
      root_value(v);
      return true;
    case kTensors:
      if (v.kind != Value::kObject) {
        fail_at({"tensors", tensors_.size()}, "expected an object, got " + describe(v));
      }
      tensor_ = Tensor();
      have_field_name_ = have_bytes_ = false;
      stack_.push_back(kTensor);
      return true;
    case kTensor:
      tensor_value(v);
      return true;
    case kShape:
      tensor_.shape.push_back(i64_of(v, tensor_where("shape").at(tensor_.shape.size())));
      return true;
    case kOps:
      if (v.kind != Value::kObject) {
        fail_at({"ops", ops_.size()}, "expected an object, got " + describe(v));
      }
      op_ = Op();
      have_field_name_ = have_type_ = have_category_ = have_forward_op_ = false;
      stack_.push_back(kOp);
      return true;
    case kOp:
      op_value(v);
      return true;
    case kIdList: {
      const Where w = op_where(id_list_key_).at(id_list_->size());
      const uint64_t t = u64_of(v, w);
      // When the tensors array comes after the ops (hand-written files), finish() checks.
      if (tensors_done_ ? t >= tensors_.size() : t >= kNoTensor) {
        fail_at(w, "tensor index " + std::to_string(t) + " out of range (graph has " +
                       (tensors_done_ ? std::to_string(tensors_.size()) : "fewer") + " tensors)");
      }
      id_list_->push_back(static_cast<TensorId>(t));
      return true;
    }
    case kAttrs:
      if (v.kind != Value::kString) {
        fail(file_, op_where("attrs").str() + "." + attr_key_,
             "expected a string, got " + describe(v) + " (attribute values are strings)");
      }
      op_.attrs.emplace_back(std::move(attr_key_), std::move(*v.s));
      return true;
    case kAttrList:
      if (v.kind != Value::kArray) {
        fail_at(op_where("attrs").at(op_.attrs.size()),
                "expected a [\"key\", \"value\"] pair of strings, got " + describe(v));
      }
      op_.attrs.emplace_back();
      pair_n_ = 0;
      stack_.push_back(kAttrPair);
      return true;
    case kAttrPair:
      if (v.kind != Value::kString || pair_n_ >= 2) {
        fail_at(op_where("attrs").at(op_.attrs.size() - 1),
                "expected a [\"key\", \"value\"] pair of strings");
      }
      (pair_n_++ == 0 ? op_.attrs.back().first : op_.attrs.back().second) = std::move(*v.s);
      return true;
    case kDone:
      return true;
  }
  return true;
}

void GraphSax::root_value(const Value& v) {
  const Where w{nullptr, 0, nullptr};
  switch (field_) {
    case kFormatVersion:
      if (v.kind != Value::kString) {
        fail(file_, "format_version", "expected a string like \"1.0\", got " + describe(v));
      }
      strict_ = check_version(file_, *v.s) <= kGraphFormatMinor;
      version_seen_ = true;
      break;
    case kName:
      name_ = take_string(v, {nullptr, 0, "name"});
      have_name_ = true;
      break;
    case kBatchSize:
      batch_size_ = i64_of(v, {nullptr, 0, "batch_size"});
      if (batch_size_ < 0) {
        fail(file_, "batch_size", "must be >= 0, got " + std::to_string(batch_size_));
      }
      break;
    case kTrainingStep:
      training_step_ = boolean_of(v, {nullptr, 0, "training_step"});
      break;
    case kTensorsField:
      if (v.kind != Value::kArray) fail(file_, "tensors", "expected an array, got " + describe(v));
      have_tensors_ = true;
      stack_.push_back(kTensors);
      break;
    case kOpsField:
      if (v.kind != Value::kArray) fail(file_, "ops", "expected an array, got " + describe(v));
      have_ops_ = true;
      stack_.push_back(kOps);
      break;
    default:
      unknown_field(v, w);
  }
}

void GraphSax::tensor_value(const Value& v) {
  Tensor& t = tensor_;
  switch (field_) {
    case kName:
      t.name = take_string(v, tensor_where("name"));
      have_field_name_ = true;
      break;
    case kDType:
      t.dtype = dtype_of(v, tensor_where("dtype"));
      break;
    case kShapeField:
      if (v.kind != Value::kArray) {
        fail_at(tensor_where("shape"), "expected an array, got " + describe(v));
      }
      t.shape.clear();
      stack_.push_back(kShape);
      break;
    case kBytes:
      t.bytes = bytes_of(v, tensor_where("bytes"));
      have_bytes_ = true;
      break;
    case kBatchScaled:
      t.batch_scaled = boolean_of(v, tensor_where("batch_scaled"));
      break;
    case kParamGrad:
      t.is_param_grad = boolean_of(v, tensor_where("param_grad"));
      break;
    default:
      unknown_field(v, {"tensors", tensors_.size()});
  }
}

void GraphSax::op_value(const Value& v) {
  Op& o = op_;
  switch (field_) {
    case kName:
      o.name = take_string(v, op_where("name"));
      if (o.name.empty()) fail_at(op_where("name"), "op name is empty");
      have_field_name_ = true;
      break;
    case kType:
      o.type = take_string(v, op_where("type"));
      have_type_ = true;
      break;
    case kInputs:
    case kOutputs: {
      const bool in = field_ == kInputs;
      id_list_key_ = in ? "inputs" : "outputs";
      if (v.kind != Value::kArray) {
        fail_at(op_where(id_list_key_), "expected an array, got " + describe(v));
      }
      id_list_ = in ? &o.inputs : &o.outputs;
      id_list_->clear();
      stack_.push_back(kIdList);
      break;
    }
    case kFlops:
      o.flops = number_of(v, op_where("flops"));
      if (!(o.flops >= 0)) fail_at(op_where("flops"), "must be >= 0, got " + describe(v));
      if (!(o.flops <= kMaxOpFlops)) {
        fail_at(op_where("flops"), "is " + describe(v) +
                                       ", beyond the physical bound of 1e24 FLOPs per op "
                                       "(a training step of the largest models is ~1e21)");
      }
      break;
    case kCategory:
      o.category = category_of(v, op_where("category"));
      have_category_ = true;
      break;
    case kPhase:
      o.phase = phase_of(v, op_where("phase"));
      break;
    case kDType:
      o.dtype = dtype_of(v, op_where("dtype"));
      break;
    case kScope:
      o.scope = take_string(v, op_where("scope"));
      break;
    case kLayer: {
      const int64_t l = i64_of(v, op_where("layer"));
      if (l < std::numeric_limits<int32_t>::min() || l > std::numeric_limits<int32_t>::max()) {
        fail_at(op_where("layer"), "layer " + std::to_string(l) + " is out of the 32-bit range");
      }
      o.layer = static_cast<int32_t>(l);
      break;
    }
    case kGroup:
      o.group = take_string(v, op_where("group"));
      break;
    case kBytesAccessed:
      o.bytes_accessed = bytes_of(v, op_where("bytes_accessed"));
      break;
    case kParamBytes:
      o.param_bytes = bytes_of(v, op_where("param_bytes"));
      break;
    case kStateBytes:
      o.state_bytes = bytes_of(v, op_where("state_bytes"));
      break;
    case kWorkspaceBytes:
      o.workspace_bytes = bytes_of(v, op_where("workspace_bytes"));
      break;
    case kBatchScaled:
      o.batch_scaled = boolean_of(v, op_where("batch_scaled"));
      break;
    case kForwardOp:
      forward_op_ = u64_of(v, op_where("forward_op"));
      have_forward_op_ = true;
      break;
    case kAttrsField:
      // {"key": "value", ...}, or [["key", "value"], ...] when keys repeat (the writer picks).
      o.attrs.clear();
      if (v.kind == Value::kObject) {
        stack_.push_back(kAttrs);
      } else if (v.kind == Value::kArray) {
        stack_.push_back(kAttrList);
      } else {
        fail_at(op_where("attrs"), "expected an object of strings, got " + describe(v));
      }
      break;
    default:
      unknown_field(v, {"ops", ops_.size()});
  }
}

bool GraphSax::end() {
  const State st = stack_.back();
  stack_.pop_back();
  if (st == kTensors) {
    tensors_done_ = true;
  } else if (st == kTensor) {
    const Where obj{"tensors", tensors_.size()};
    if (!have_field_name_) fail_at(obj, "missing field 'name'");
    if (!have_bytes_) {
      // Hand-written files may give a fully known shape instead of the byte count.
      uint64_t b = static_cast<uint64_t>(dtype_bytes(tensor_.dtype));
      bool known = !tensor_.shape.empty();
      for (int64_t d : tensor_.shape) {
        if (d < 0 || __builtin_mul_overflow(b, static_cast<uint64_t>(d), &b)) known = false;
      }
      if (!known) {
        fail_at(obj,
                "missing field 'bytes' (needed unless the shape is non-empty and fully known)");
      }
      if (b > kMaxBytes)
        fail_at(obj,
                "shape of " + std::to_string(b) + " bytes, beyond the physical bound of 1 EiB");
      tensor_.bytes = b;
    }
    tensors_.push_back(std::move(tensor_));
  } else if (st == kOp) {
    const Where obj{"ops", ops_.size()};
    if (!have_field_name_) fail_at(obj, "missing field 'name'");
    if (!have_type_) fail_at(obj, "missing field 'type'");
    if (!have_category_) op_.category = default_category(op_.type);
    forward_ops_.push_back(have_forward_op_ ? forward_op_ : kNoForward);
    ops_.push_back(std::move(op_));
  } else if (st == kAttrPair && pair_n_ != 2) {
    fail_at(op_where("attrs").at(op_.attrs.size() - 1),
            "expected a [\"key\", \"value\"] pair of strings");
  }
  return true;
}

Graph GraphSax::finish(const std::string& default_name) {
  if (!version_seen_) fail(file_, "", "missing field 'format_version'");
  if (strict_ && !deferred_unknown_.empty()) throw FormatError(deferred_unknown_);
  if (!have_tensors_) fail(file_, "", "missing field 'tensors'");
  if (!have_ops_) fail(file_, "", "missing field 'ops'");

  const size_t nt = tensors_.size(), no = ops_.size();
  for (size_t i = 0; i < no; ++i) {
    for (const char* key : {"inputs", "outputs"}) {
      const std::vector<TensorId>& ids = key[0] == 'i' ? ops_[i].inputs : ops_[i].outputs;
      for (size_t e = 0; e < ids.size(); ++e) {
        if (ids[e] < nt) continue;
        fail_at(Where{"ops", i, key}.at(e), "tensor index " + std::to_string(ids[e]) +
                                                " out of range (graph has " + std::to_string(nt) +
                                                " tensors)");
      }
    }
    const uint64_t f = forward_ops_[i];
    if (f != kNoForward && f >= no) {
      fail_at(Where{"ops", i, "forward_op"}, "op index " + std::to_string(f) +
                                                 " out of range (graph has " + std::to_string(no) +
                                                 " ops)");
    }
    ops_[i].forward_op = f == kNoForward ? kNoOp : static_cast<OpId>(f);
  }

  GraphBuilder b(have_name_ ? std::move(name_) : default_name);
  b.set_batch_size(batch_size_);
  b.set_training_step(training_step_);
  for (Tensor& t : tensors_) b.add_tensor(std::move(t));
  for (Op& o : ops_) b.add_op(std::move(o));
  try {
    return b.build();
  } catch (const ValidationError& e) {
    throw ValidationError(format_context(file_, "", e.what()));
  }
}

// "dir/mlp2.graph.json" -> "mlp2".
std::string stem_of(const std::string& path) {
  std::string s =
      path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  for (const char* ext : {".graph.json", ".json"}) {
    const size_t n = std::strlen(ext);
    if (s.size() > n && s.compare(s.size() - n, n, ext) == 0) {
      s.resize(s.size() - n);
      break;
    }
  }
  return s.empty() || s[0] == '<' ? "graph" : s;
}

}  // namespace

Graph parse_graph_json(const std::string& text, const std::string& filename) {
  check_input_size(text.size(), filename, "");
  check_nesting_depth(text, filename);
  GraphSax sax(filename, text);
  try {
    nlohmann::json::sax_parse(text, &sax);
  } catch (const FormatError&) {
    // A file of another version may fail anywhere; when the error came before
    // format_version, the version is the better message.
    if (!sax.version_seen()) {
      const nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (root.is_object()) {
        auto it = root.find("format_version");
        if (it != root.end() && it->is_string()) check_version(filename, it->get<std::string>());
      }
    }
    throw;
  }
  return sax.finish(stem_of(filename));
}

Graph load_graph_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw FileError(
        format_context(path, "", std::string("cannot open graph file: ") + std::strerror(errno)));
  }
  std::string text;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw FileError(format_context(path, "", "cannot read graph file"));
  check_input_size(static_cast<size_t>(size), path, "graph file");
  text.resize(static_cast<size_t>(size));
  in.seekg(0, std::ios::beg);
  in.read(&text[0], size);
  if (!in) throw FileError(format_context(path, "", "cannot read graph file"));
  return parse_graph_json(text, path);
}

}  // namespace placer
