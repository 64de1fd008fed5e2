#include "src/graph/kernel_list.h"

#include <sstream>

#include "src/graph/moe_attrs.h"
#include "src/util/error.h"

namespace placer {

std::string format_kernel_list(const std::vector<KernelWork>& kernels) {
  std::string s;
  for (const KernelWork& k : kernels) {
    if (!s.empty()) s += ',';
    s += std::string(to_string(k.category)) + ':' + to_string(k.dtype) + ':' +
         std::to_string(k.bytes);
  }
  return s;
}

namespace {

// One `category:dtype:bytes` entry; false when it is not one.
bool parse_entry(const std::string& e, KernelWork* k) {
  const size_t a = e.find(':'), b = a == std::string::npos ? a : e.find(':', a + 1);
  if (b == std::string::npos) return false;
  const std::string bytes = e.substr(b + 1);
  if (bytes.empty() || bytes.size() > 19 ||
      bytes.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  k->bytes = std::stoull(bytes);
  return parse_op_category(e.substr(0, a), &k->category) &&
         parse_dtype(e.substr(a + 1, b - a - 1), &k->dtype);
}

}  // namespace

std::vector<KernelWork> listed_kernels(const Op& op) {
  const char* key = op.phase == Phase::kBackward ? kBackwardKernelListAttr : kKernelListAttr;
  const std::string* v = find_op_attr(op, key);
  std::vector<KernelWork> out;
  if (v == nullptr || v->empty()) return out;
  std::istringstream in(*v);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    KernelWork k;
    if (!parse_entry(entry, &k)) {
      throw ValidationError("op '" + op.name + "': attribute " + key + " entry '" + entry +
                            "' is not category:dtype:bytes");
    }
    out.push_back(k);
  }
  return out;
}

uint64_t kernel_list_bytes(const std::vector<KernelWork>& kernels) {
  uint64_t sum = 0;
  for (const KernelWork& k : kernels) sum += k.bytes;
  return sum;
}

}  // namespace placer
