#include "datasets/decoder_blocks.h"

#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "datasets/synthetic.h"
#include "src/graph/moe_attrs.h"
#include "src/util/checked_math.h"

namespace placer {

namespace decoder_sizes {

uint64_t weight(int64_t rows, int64_t cols) {
  return checked_mul(u(rows), u(cols), "weight elements");
}

std::string str(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace decoder_sizes

namespace {

using namespace decoder_sizes;  // NOLINT: d, u, weight, str

// An RMSNorm over [b, s, width] (MLA's q / kv layernorms).
TensorId rms_norm(const BlockContext& c, const std::string& name, const std::string& scope,
                  int layer, TensorId in, int64_t width) {
  const TensorId out = c.m.op(name, "RMSNormalization", scope, layer, {in}, {c.b, c.s, width},
                              kFlopsPerElemRmsNorm * d(c.b) * d(c.s) * d(width), u(width));
  c.m.last_op().category = OpCategory::kNormalization;
  return out;
}

// Builds one MoE MLP; every op it adds carries the layer's MoE attributes.
class MoeMlp {
 public:
  MoeMlp(const BlockContext& c, const MoeOptions& o, const std::string& mlp, int layer, int index)
      : c_(c),
        o_(o),
        mlp_(mlp),
        layer_(layer),
        index_(std::to_string(index)),
        tokens_(d(c.b) * d(c.s)),
        bsh_(tokens_ * d(c.h)),
        // Drop-and-pad: the experts' inputs are padded to capacity (k' = capacity_factor k).
        rows_(o.capacity_factor > 0
                  ? static_cast<int64_t>(std::ceil(d(c.s) * d(o.top_k) * o.capacity_factor))
                  : checked_mul(c.s, o.top_k, "moe: seq_len x top_k")) {}

  TensorId build(TensorId in, std::vector<TensorId>* aux_losses) {
    const int64_t E = o_.experts, k = o_.top_k, b = c_.b, s = c_.s, h = c_.h;
    const TensorId logits =
        op(".router", "MatMul", OpCategory::kMatMul, kMoeRouter, {in}, {b, s, E}, 2 * bsh_ * d(E),
           weight(h, E) + (o_.router_bias ? u(E) : 0));
    const TensorId topk = op(".router.topk", "MoeTopK", OpCategory::kSoftmax, kMoeRouter, {logits},
                             {b, s, k}, kFlopsPerElemSoftmax * tokens_ * d(E));
    // The load-balancing loss: per expert the fraction of tokens routed and the mean router
    // probability, summed products (about 3 FLOPs per router logit).
    const TensorId aux = op(".aux_loss", "MoeAuxLoss", OpCategory::kReduction, kMoeAuxLoss,
                            {logits, topk}, {1}, 3 * tokens_ * d(E));
    c_.m.tensor_ref(aux).batch_scaled = false;
    aux_losses->push_back(aux);
    const TensorId routed = op(".dispatch", "MoeDispatch", OpCategory::kDataMovement, kMoeDispatch,
                               {in, topk}, {b, rows_, h}, 0);
    const TensorId out = experts(routed);
    const TensorId combined = op(".combine", "MoeCombine", OpCategory::kElementwise, kMoeCombine,
                                 {out, topk}, {b, s, h}, 2 * bsh_ * d(k));
    return o_.shared_ffn > 0 ? shared_experts(in, combined) : combined;
  }

 private:
  TensorId op(const std::string& suffix, const std::string& type, OpCategory cat, const char* role,
              std::vector<TensorId> inputs, std::vector<int64_t> shape, double flops,
              uint64_t params = 0) {
    const TensorId t = c_.m.op(mlp_ + suffix, type, mlp_, layer_, std::move(inputs),
                               std::move(shape), flops, params);
    Op& o = c_.m.last_op();
    o.category = cat;
    o.attrs.emplace_back(kMoeLayerAttr, index_);
    o.attrs.emplace_back(kMoeRoleAttr, role);
    return t;
  }

  // The grouped GEMMs of all E experts over the dispatched rows (SwiGLU experts), with
  // gpt-oss's GLU clamp and fc2 bias where the options ask for them.
  TensorId experts(TensorId routed) {
    const int64_t E = o_.experts, f = o_.expert_ffn, b = c_.b, h = c_.h;
    const double rows = d(b) * d(rows_);
    const uint64_t fc1_bias = o_.expert_bias ? checked_mul(u(E), u(2 * f), "bias elements") : 0;
    const TensorId up = op(".experts.linear_fc1", "GroupedMatMul", OpCategory::kMatMul,
                           kMoeExpertUp, {routed}, {b, rows_, 2 * f}, 2 * rows * d(h) * d(2 * f),
                           checked_add(checked_mul(u(E), weight(h, 2 * f), "weight elements"),
                                       fc1_bias, "fc1 parameters"));
    mark_expert();
    const TensorId glu_in = o_.glu_clamp > 0 ? glu_clamp(up) : up;
    const TensorId act = op(".experts.swiglu", "Swiglu", OpCategory::kElementwise, kMoeExpertAct,
                            {glu_in}, {b, rows_, f}, kFlopsPerElemSwiglu * rows * d(f));
    mark_expert();
    const TensorId down = op(".experts.linear_fc2", "GroupedMatMul", OpCategory::kMatMul,
                             kMoeExpertDown, {act}, {b, rows_, h}, 2 * rows * d(f) * d(h),
                             checked_mul(u(E), weight(f, h), "weight elements"));
    mark_expert();
    return o_.expert_bias ? expert_bias(down) : down;
  }

  // The clamp of the fc1 output (Megatron-core's weighted_bias_quick_geglu_impl): two clamps
  // over its halves and their concatenation, each reading and writing every element
  // (4 element sizes forward); backward the clamps' masked gradients (read the gradient and
  // the saved input, write: 3) and the concatenation of the halves' gradients (2).
  TensorId glu_clamp(TensorId up) {
    const int64_t f2 = 2 * o_.expert_ffn;
    const double elems = d(c_.b) * d(rows_) * d(f2);
    const TensorId out = op(".experts.glu_clamp", "GluClamp", OpCategory::kElementwise,
                            kMoeExpertAct, {up}, {c_.b, rows_, f2}, elems);
    set_bytes(elems, 4, 5);
    mark_expert();
    return out;
  }

  // fc2's bias, weighted by the routing probability and added one local expert at a time
  // (Megatron-core's TEGroupedMLP._apply_bias: t + b * p per expert, then a concatenation;
  // probabilities in the activation dtype): forward the product written (1 element size),
  // the sum reading two and writing one (3), the concatenation (2); backward the product's
  // two gradients, each a product and a reduction (3 each), and the split's concatenation
  // of the row blocks' gradients (2).
  TensorId expert_bias(TensorId down) {
    const int64_t E = o_.experts, h = c_.h;
    const double elems = d(c_.b) * d(rows_) * d(h);
    const TensorId out =
        op(".experts.linear_fc2_bias", "ExpertBias", OpCategory::kElementwise, kMoeExpertDown,
           {down}, {c_.b, rows_, h}, 2 * elems, checked_mul(u(E), u(h), "bias elements"));
    set_bytes(elems, 6, 8);
    mark_expert();
    return out;
  }

  // The last op's traffic: `forward` and `backward` element sizes per element.
  void set_bytes(double elems, int forward, int backward) {
    Op& o = c_.m.last_op();
    const double eb = d(dtype_bytes(c_.dtype));
    const std::string what = "op '" + o.name + "' bytes accessed";
    o.bytes_accessed = c_.m.bounded_bytes(static_cast<uint64_t>(elems * eb * forward), what);
    const uint64_t back = c_.m.bounded_bytes(static_cast<uint64_t>(elems * eb * backward), what);
    o.attrs.emplace_back(kBackwardBytesAttr, std::to_string(back));
  }

  void mark_expert() {
    Op& o = c_.m.last_op();
    o.attrs.emplace_back(kMoeExpertsAttr, std::to_string(o_.experts));
    o.attrs.emplace_back(kMoeTopKAttr, std::to_string(o_.top_k));
    if (o_.capacity_factor > 0) o.attrs.emplace_back(kMoeCapacityAttr, str(o_.capacity_factor));
  }

  // Shared experts: a dense SwiGLU MLP every token passes through, added to the routed
  // output (qwen2_moe scales it by a sigmoid gate first).
  TensorId shared_experts(TensorId in, TensorId routed) {
    const int64_t f = o_.shared_ffn, b = c_.b, s = c_.s, h = c_.h;
    const TensorId up = op(".shared_experts.linear_fc1", "MatMul", OpCategory::kMatMul, kMoeShared,
                           {in}, {b, s, 2 * f}, 2 * bsh_ * d(2 * f), weight(h, 2 * f));
    const TensorId act = op(".shared_experts.swiglu", "Swiglu", OpCategory::kElementwise,
                            kMoeShared, {up}, {b, s, f}, kFlopsPerElemSwiglu * tokens_ * d(f));
    const TensorId down = op(".shared_experts.linear_fc2", "MatMul", OpCategory::kMatMul,
                             kMoeShared, {act}, {b, s, h}, 2 * tokens_ * d(f) * d(h), weight(f, h));
    std::vector<TensorId> sum{routed, down};
    double flops = kFlopsPerElemAdd * bsh_;
    if (o_.shared_expert_gate) {
      sum.push_back(op(".shared_experts.gate", "MatMul", OpCategory::kMatMul, kMoeShared, {in},
                       {b, s, 1}, 2 * bsh_, u(h)));
      flops += (kFlopsPerElemSigmoid + kFlopsPerElemMul) * bsh_;  // sigmoid(gate) * shared
    }
    return op(".shared_experts.add", "Add", OpCategory::kElementwise, kMoeShared, std::move(sum),
              {b, s, h}, flops);
  }

  const BlockContext& c_;
  const MoeOptions& o_;
  const std::string mlp_;
  const int layer_;
  const std::string index_;
  const double tokens_, bsh_;
  const int64_t rows_;
};

}  // namespace

TensorId add_flash_attention(const BlockContext& c, const std::string& name,
                             const std::string& scope, int layer, std::vector<TensorId> inputs,
                             int64_t out_width, const AttentionShape& shape, double flops,
                             uint64_t bytes) {
  const std::vector<TensorId> out =
      c.m.op_multi(name, "FlashAttention", scope, layer, std::move(inputs),
                   {{c.b, c.s, out_width}, {c.b, shape.heads, c.s}}, flops);
  const std::string what = "op '" + name + "' bytes accessed";
  Tensor& lse = c.m.tensor_ref(out[1]);
  lse.bytes = c.m.bounded_bytes(lse.bytes / u(dtype_bytes(c.dtype)) * 4, what);  // fp32
  lse.dtype = DType::kF32;
  const uint64_t bounded = c.m.bounded_bytes(bytes, what);
  Op& op = c.m.last_op();
  op.category = OpCategory::kAttention;
  op.bytes_accessed = bounded;
  op.attrs = {{"causal", "1"},
              {"heads", std::to_string(shape.heads)},
              {"kv_heads", std::to_string(shape.kv_heads)},
              {"head_dim", std::to_string(shape.head_dim)}};
  // The value heads' width where it differs from the query / key heads' (MLA); the cost
  // model counts the op's scores from both (attention_scores, simulator/cost_model.h).
  const int64_t v_head_dim = out_width / shape.heads;
  if (v_head_dim != shape.head_dim) op.attrs.emplace_back("v_head_dim", std::to_string(v_head_dim));
  if (shape.window > 0) op.attrs.emplace_back("window", std::to_string(shape.window));
  if (c.dropout > 0) op.attrs.emplace_back("dropout", str(c.dropout));
  return out[0];
}

TensorId add_mla_core(const BlockContext& c, const MlaOptions& o, int64_t a, int64_t window,
                      const std::string& att, int i, TensorId ln) {
  const int64_t b = c.b, s = c.s, h = c.h, n = o.nope_head_dim, r = o.rope_head_dim,
                v = o.v_head_dim, rq = o.q_lora_rank, rkv = o.kv_lora_rank;
  const double bs = d(b) * d(s);
  const int64_t q_width = a * (n + r);
  TensorId q;
  if (rq > 0) {
    const TensorId down = c.m.op(att + ".linear_q_down_proj", "MatMul", att, i, {ln}, {b, s, rq},
                                 2 * bs * d(h) * d(rq), weight(h, rq));
    const TensorId normed = rms_norm(c, att + ".q_layernorm", att, i, down, rq);
    q = c.m.op(att + ".linear_q_up_proj", "MatMul", att, i, {normed}, {b, s, q_width},
               2 * bs * d(rq) * d(q_width), weight(rq, q_width));
  } else {
    q = c.m.op(att + ".linear_q_proj", "MatMul", att, i, {ln}, {b, s, q_width},
               2 * bs * d(h) * d(q_width), weight(h, q_width));
  }
  // The kv latent and the shared rotary key come out of one down projection.
  const TensorId kv_down = c.m.op(att + ".linear_kv_down_proj", "MatMul", att, i, {ln},
                                  {b, s, rkv + r}, 2 * bs * d(h) * d(rkv + r), weight(h, rkv + r));
  const TensorId kv_normed = rms_norm(c, att + ".kv_layernorm", att, i, kv_down, rkv);
  const int64_t kv_width = a * (n + v);
  const TensorId kv =
      c.m.op(att + ".linear_kv_up_proj", "MatMul", att, i, {kv_normed}, {b, s, kv_width},
             2 * bs * d(rkv) * d(kv_width), weight(rkv, kv_width));
  const int64_t rot_width = a * r + r;
  const TensorId rot = c.m.op(att + ".rotary", "RotaryEmbedding", att, i, {q, kv_down},
                              {b, s, rot_width}, kFlopsPerElemRotary * bs * d(rot_width));
  c.m.last_op().category = OpCategory::kElementwise;
  // Every head scores n + r wide queries against keys as wide and sums v wide values:
  // 2 (n + r) + 2 v FLOPs per pair and head; q, k, v read once, the context written.
  const AttentionShape shape{b, s, a, a, n + r, true, window};
  const double pairs = attention_pairs(shape);
  const double flops = 2 * d(b) * d(a) * pairs * d(n + r + v);
  const uint64_t eb = u(dtype_bytes(c.dtype));
  const uint64_t bytes = u(b) * u(s) * (u(2 * q_width + 2 * a * v) * eb + u(a) * 4);
  const std::string core = att + ".core_attention";
  return add_flash_attention(c, core + ".flash_attention", core, i, {q, kv, rot}, a * v, shape,
                             flops, bytes);
}

TensorId add_moe_mlp(const BlockContext& c, const MoeOptions& moe, const std::string& mlp,
                     int layer, int moe_index, TensorId in, std::vector<TensorId>* aux_losses) {
  return MoeMlp(c, moe, mlp, layer, moe_index).build(in, aux_losses);
}

}  // namespace placer
