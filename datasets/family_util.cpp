#include "datasets/family_util.h"

#include "datasets/synthetic.h"
#include "src/graph/bounds.h"

namespace placer {

uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

GraphMaker::GraphMaker(const std::string& name, int64_t batch, DType dtype)
    : b_(name), name_(name), dtype_(dtype) {
  b_.set_batch_size(batch);
}

TensorId GraphMaker::tensor(std::string name, std::vector<int64_t> shape, DType dtype,
                            bool batch_scaled) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  const std::string what = name_ + ": tensor '" + t.name + "' bytes";
  t.bytes = checked_bytes(checked_elements(shape, what), dtype, what);
  t.shape = std::move(shape);
  t.batch_scaled = batch_scaled;
  return b_.add_tensor(std::move(t));
}

void GraphMaker::set_cost(Op& o, double flops, uint64_t param_elems) const {
  check_op_flops(flops, name_ + ": op '" + o.name + "' flops");
  o.flops = flops;
  o.param_bytes =
      checked_bytes(param_elems, dtype_, name_ + ": op '" + o.name + "' parameter bytes");
}

uint64_t GraphMaker::bounded_bytes(uint64_t bytes, const std::string& what) const {
  return check_bytes(bytes, name_ + ": " + what);
}

TensorId GraphMaker::op(const std::string& name, const std::string& type, const std::string& scope,
                        int layer, std::vector<TensorId> inputs, std::vector<int64_t> shape,
                        double flops, uint64_t param_elems) {
  const TensorId out = act(name + ".out", std::move(shape));
  Op o;
  o.name = name;
  o.type = type;
  o.category = category_of_op_type(type);
  o.dtype = dtype_;
  o.scope = scope;
  o.layer = layer;
  set_cost(o, flops, param_elems);
  o.inputs = std::move(inputs);
  o.outputs = {out};
  b_.add_op(std::move(o));
  return out;
}

std::vector<TensorId> GraphMaker::op_multi(const std::string& name, const std::string& type,
                                           const std::string& scope, int layer,
                                           std::vector<TensorId> inputs,
                                           const std::vector<std::vector<int64_t>>& shapes,
                                           double flops, uint64_t param_elems) {
  std::vector<TensorId> outs;
  outs.reserve(shapes.size());
  for (size_t k = 0; k < shapes.size(); ++k) {
    outs.push_back(act(name + ".out" + std::to_string(k), shapes[k]));
  }
  Op o;
  o.name = name;
  o.type = type;
  o.category = category_of_op_type(type);
  o.dtype = dtype_;
  o.scope = scope;
  o.layer = layer;
  set_cost(o, flops, param_elems);
  o.inputs = std::move(inputs);
  o.outputs = outs;
  b_.add_op(std::move(o));
  return outs;
}

TensorId GraphMaker::param(const std::string& name, const std::string& scope, int layer,
                           std::vector<int64_t> shape) {
  const uint64_t n = checked_elements(shape, name_ + ": parameter '" + name + "'");
  const TensorId out = tensor(name + ".out", std::move(shape), dtype_, false);
  Op o;
  o.name = name;
  o.type = "Parameter";
  o.category = OpCategory::kInput;
  o.dtype = dtype_;
  o.scope = scope;
  o.layer = layer;
  o.param_bytes = checked_bytes(n, dtype_, name_ + ": parameter '" + name + "' bytes");
  o.batch_scaled = false;
  o.outputs = {out};
  b_.add_op(std::move(o));
  return out;
}

void GraphMaker::loss(std::vector<TensorId> logits, TensorId labels, double logit_elems) {
  const TensorId out = tensor("loss", {}, DType::kF32, false);
  Op o;
  o.name = "loss";
  o.type = "SoftmaxCrossEntropy";
  o.category = OpCategory::kSoftmax;
  o.dtype = dtype_;
  o.scope = "loss";
  o.flops = kFlopsPerElemLoss * logit_elems;
  check_op_flops(o.flops, name_ + ": op 'loss' flops");
  o.inputs = std::move(logits);
  o.inputs.push_back(labels);
  o.outputs = {out};
  b_.add_op(std::move(o));
}

double elems(const std::vector<int64_t>& shape) {
  double n = 1;
  for (int64_t d : shape) n *= static_cast<double>(d);
  return n;
}

double conv2d_flops(int64_t b, int64_t cin, int64_t cout, int64_t ho, int64_t wo, int64_t kh,
                    int64_t kw, int64_t groups) {
  return 2.0 * static_cast<double>(b) * static_cast<double>(ho) * static_cast<double>(wo) *
         static_cast<double>(cout) * static_cast<double>(cin / groups) * static_cast<double>(kh) *
         static_cast<double>(kw);
}

}  // namespace placer
