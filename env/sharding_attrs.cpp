#include "env/sharding_attrs.h"

#include <cstdlib>
#include <set>

namespace placer {
namespace shard {

const std::string* find_attr(const Op& o, const char* key) {
  for (const auto& kv : o.attrs) {
    if (kv.first == key) return &kv.second;
  }
  return nullptr;
}

bool whole_number(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || *end != '\0') return false;
  *out = v;
  return true;
}

int64_t attr_int(const Op& o, const char* key, int64_t fallback) {
  const std::string* s = find_attr(o, key);
  int64_t v = 0;
  return s && whole_number(*s, &v) ? v : fallback;
}

// "1,0,2" (also "[1, 0, 2]"); false when absent or malformed.
bool attr_ints(const Op& o, const char* key, std::vector<int64_t>* out) {
  const std::string* s = find_attr(o, key);
  if (!s) return false;
  out->clear();
  std::string cur;
  for (char c : *s + ",") {
    if (c == '[' || c == ']' || c == ' ') continue;
    if (c == ',') {
      if (cur.empty()) continue;
      int64_t v = 0;
      if (!whole_number(cur, &v)) return false;
      out->push_back(v);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return true;
}

// Axis in [0, rank) or -1.
int norm_axis(int64_t a, size_t rank) {
  const int64_t r = int64_t(rank);
  if (a < 0) a += r;
  return a >= 0 && a < r ? int(a) : -1;
}

int64_t prod(const Shape& s) {
  int64_t p = 1;
  for (int64_t v : s) p *= v;
  return p;
}

bool is_elementwise_type(const std::string& t) {
  static const std::set<std::string> kTypes = {"Add",         "Sub",
                                               "Mul",         "Div",
                                               "Pow",         "Sqrt",
                                               "Relu",        "Gelu",
                                               "Tanh",        "Sigmoid",
                                               "Erf",         "Exp",
                                               "Log",         "Neg",
                                               "Abs",         "Where",
                                               "Equal",       "Cast",
                                               "Dropout",     "Identity",
                                               "Clip",        "LeakyRelu",
                                               "Elu",         "Selu",
                                               "Softplus",    "HardSigmoid",
                                               "HardSwish",   "Not",
                                               "And",         "Or",
                                               "Xor",         "Greater",
                                               "Less",        "GreaterOrEqual",
                                               "LessOrEqual", "Min",
                                               "Max",         "Sum",
                                               "Mean",        "Reciprocal",
                                               "Floor",       "Ceil",
                                               "Round",       "Sign",
                                               "Sin",         "Cos",
                                               "Mish",        "Silu",
                                               "PRelu",       "Expand",
                                               "BiasGelu",    "FastGelu",
                                               "IsNaN",       "IsInf",
                                               "Mod",         "BitShift",
                                               "CastLike"};
  return kTypes.count(t) > 0;
}

bool is_reduce_type(const std::string& t) {
  return t == "ReduceMean" || t == "ReduceSum" || t == "ReduceMax" || t == "ReduceMin" ||
         t == "ReduceProd" || t == "ReduceL1" || t == "ReduceL2" || t == "ReduceLogSum" ||
         t == "ReduceLogSumExp" || t == "ReduceSumSquare" || t == "ArgMax" || t == "ArgMin";
}

}  // namespace shard
}  // namespace placer
