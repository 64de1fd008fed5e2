#include "datasets/family_seq.h"

#include <vector>

#include "datasets/family_util.h"
#include "datasets/synthetic.h"
#include "src/util/error.h"

namespace placer {

namespace {
double d(int64_t v) { return static_cast<double>(v); }
}  // namespace

Graph make_transformer_xl(const TransformerXlOptions& o) {
  PLACER_CHECK(o.layers >= 1, o.name << ": layers must be >= 1, got " << o.layers);
  PLACER_CHECK(o.d_model > 0 && o.heads > 0 && o.seq_len > 0 && o.batch > 0 && o.vocab > 0,
               o.name << ": d_model, heads, seq_len, batch and vocab must be positive");
  PLACER_CHECK(o.mem_len >= 0, o.name << ": mem_len must be >= 0, got " << o.mem_len);
  PLACER_CHECK(o.d_model % o.heads == 0,
               o.name << ": heads (" << o.heads << ") must divide d_model (" << o.d_model << ")");
  const int64_t b = o.batch, S = o.seq_len, M = o.mem_len, K = S + M, dm = o.d_model, h = o.heads,
                v = o.vocab;
  const int64_t f = o.ffn > 0 ? o.ffn : 4 * dm;
  const uint64_t ud = static_cast<uint64_t>(dm), uf = static_cast<uint64_t>(f);
  const double bsd = d(b) * d(S) * d(dm);
  const std::vector<int64_t> bsd_shape = {b, S, dm}, bkd_shape = {b, K, dm},
                             scores_shape = {b, h, S, K};
  const double score_elems = d(b) * d(h) * d(S) * d(K);

  GraphMaker m(o.name, b, o.dtype);
  const TensorId tokens = m.tensor("tokens", {b, S}, DType::kI64);
  const TensorId labels = m.tensor("labels", {b, S}, DType::kI64);
  const TensorId pos = m.tensor("pos_emb", {K, dm}, o.dtype, false);
  // Embedding (scaled by sqrt(d): one FLOP per element).
  TensorId x = m.op("embedding", "Gather", "embedding", -1, {tokens}, bsd_shape, bsd,
                    static_cast<uint64_t>(v * dm));
  for (int l = 0; l < o.layers; ++l) {
    const std::string p = "layers." + std::to_string(l);
    const std::string att = p + ".attention", aout = att + ".output", ff = p + ".ff";
    const TensorId mem = m.act("mems." + std::to_string(l), {b, M, dm});
    const TensorId cat = m.op(att + ".mem_concat", "Concat", att, l, {mem, x}, bkd_shape, 0);
    const TensorId q = m.op(att + ".q", "MatMul", att, l, {x}, bsd_shape, 2 * bsd * d(dm), ud * ud);
    const TensorId k = m.op(att + ".k", "MatMul", att, l, {cat}, bkd_shape,
                            2 * d(b) * d(K) * d(dm) * d(dm), ud * ud);
    const TensorId val = m.op(att + ".v", "MatMul", att, l, {cat}, bkd_shape,
                              2 * d(b) * d(K) * d(dm) * d(dm), ud * ud);
    const TensorId r =
        m.op(att + ".r", "MatMul", att, l, {pos}, {K, dm}, 2 * d(K) * d(dm) * d(dm), ud * ud);
    m.last_op().batch_scaled = false;
    m.tensor_ref(r).batch_scaled = false;
    const double qk = 2 * bsd * d(K);
    const TensorId ac = m.op(att + ".ac", "MatMul", att, l, {q, k}, scores_shape, qk, ud);
    const TensorId bd = m.op(att + ".bd", "MatMul", att, l, {q, r}, scores_shape, qk, ud);
    const TensorId shifted = m.op(att + ".rel_shift", "Slice", att, l, {bd}, scores_shape, 0);
    const TensorId sc = m.op(att + ".scores", "Add", att, l, {ac, shifted}, scores_shape,
                             kFlopsPerElemAdd * score_elems);
    const TensorId pr = m.op(att + ".softmax", "Softmax", att, l, {sc}, scores_shape,
                             kFlopsPerElemSoftmax * score_elems);
    const TensorId ctx = m.op(att + ".context", "MatMul", att, l, {pr, val}, bsd_shape, qk);
    const TensorId dense =
        m.op(aout + ".dense", "MatMul", aout, l, {ctx}, bsd_shape, 2 * bsd * d(dm), ud * ud);
    const TensorId res1 =
        m.op(aout + ".residual", "Add", aout, l, {x, dense}, bsd_shape, kFlopsPerElemAdd * bsd);
    const TensorId ln1 = m.op(aout + ".layernorm", "LayerNormalization", aout, l, {res1}, bsd_shape,
                              kFlopsPerElemLayerNorm * bsd, 2 * ud);
    const TensorId up =
        m.op(ff + ".dense1", "MatMul", ff, l, {ln1}, {b, S, f}, 2 * bsd * d(f), ud * uf + uf);
    const TensorId act =
        m.op(ff + ".relu", "Relu", ff, l, {up}, {b, S, f}, kFlopsPerElemRelu * d(b) * d(S) * d(f));
    const TensorId down =
        m.op(ff + ".dense2", "MatMul", ff, l, {act}, bsd_shape, 2 * bsd * d(f), uf * ud + ud);
    const TensorId res2 =
        m.op(ff + ".residual", "Add", ff, l, {ln1, down}, bsd_shape, kFlopsPerElemAdd * bsd);
    x = m.op(ff + ".layernorm", "LayerNormalization", ff, l, {res2}, bsd_shape,
             kFlopsPerElemLayerNorm * bsd, 2 * ud);
  }
  const TensorId logits = m.op("lm_head", "MatMul", "lm_head", -1, {x}, {b, S, v}, 2 * bsd * d(v),
                               ud * static_cast<uint64_t>(v));
  m.loss({logits}, labels, d(b) * d(S) * d(v));
  return m.build();
}

Graph make_wavenet(const WaveNetOptions& o) {
  PLACER_CHECK(o.stacks >= 1 && o.layers_per_stack >= 1,
               o.name << ": stacks and layers_per_stack must be >= 1");
  PLACER_CHECK(o.residual_channels > 0 && o.skip_channels > 0 && o.quantization > 0 &&
                   o.kernel > 0 && o.samples > 0 && o.batch > 0 && o.dilation_channels >= 0,
               o.name << ": channels, kernel, samples and batch must be positive");
  const int64_t b = o.batch, T = o.samples, R = o.residual_channels,
                D = o.dilation_channels > 0 ? o.dilation_channels : R, Sk = o.skip_channels,
                Q = o.quantization, k = o.kernel;
  const double bt = d(b) * d(T);
  // 1-D conv [b, cin, T] -> [b, cout, T] with a kernel of kk taps, with bias.
  auto conv_flops = [&](int64_t cin, int64_t cout, int64_t kk) {
    return 2 * bt * d(cout) * d(cin) * d(kk);
  };
  auto conv_params = [](int64_t cin, int64_t cout, int64_t kk) {
    return static_cast<uint64_t>(cout * cin * kk + cout);
  };
  GraphMaker m(o.name, b, o.dtype);
  const TensorId audio = m.act("audio_one_hot", {b, Q, T});
  const TensorId labels = m.tensor("labels", {b, T}, DType::kI64);
  TensorId x = m.op("input.causal_conv", "Conv", "input", -1, {audio}, {b, R, T},
                    conv_flops(Q, R, k), conv_params(Q, R, k));
  const int n = o.stacks * o.layers_per_stack;
  std::vector<TensorId> skips;
  for (int s = 0; s < o.stacks; ++s) {
    for (int i = 0; i < o.layers_per_stack; ++i) {
      const int layer = s * o.layers_per_stack + i;
      const std::string p = "stacks." + std::to_string(s) + ".layers." + std::to_string(i);
      const std::string dil = std::to_string(int64_t{1} << i);
      const TensorId filt = m.op(p + ".filter", "Conv", p, layer, {x}, {b, D, T},
                                 conv_flops(R, D, k), conv_params(R, D, k));
      m.last_op().attrs.push_back({"dilations", dil});
      const TensorId gate = m.op(p + ".gate", "Conv", p, layer, {x}, {b, D, T}, conv_flops(R, D, k),
                                 conv_params(R, D, k));
      m.last_op().attrs.push_back({"dilations", dil});
      const double btd = bt * d(D);
      const TensorId th =
          m.op(p + ".tanh", "Tanh", p, layer, {filt}, {b, D, T}, kFlopsPerElemTanh * btd);
      const TensorId sg =
          m.op(p + ".sigmoid", "Sigmoid", p, layer, {gate}, {b, D, T}, kFlopsPerElemSigmoid * btd);
      const TensorId z =
          m.op(p + ".gated", "Mul", p, layer, {th, sg}, {b, D, T}, kFlopsPerElemMul * btd);
      if (layer + 1 < n) {
        const TensorId res = m.op(p + ".residual.conv", "Conv", p, layer, {z}, {b, R, T},
                                  conv_flops(D, R, 1), conv_params(D, R, 1));
        x = m.op(p + ".residual.add", "Add", p, layer, {x, res}, {b, R, T},
                 kFlopsPerElemAdd * bt * d(R));
      }
      skips.push_back(m.op(p + ".skip.conv", "Conv", p, layer, {z}, {b, Sk, T},
                           conv_flops(D, Sk, 1), conv_params(D, Sk, 1)));
    }
  }
  const double bts = bt * d(Sk);
  const TensorId sum = m.op("head.skip.sum", "Add", "head", -1, skips, {b, Sk, T},
                            kFlopsPerElemAdd * d(n - 1) * bts);
  const TensorId r1 =
      m.op("head.relu1", "Relu", "head", -1, {sum}, {b, Sk, T}, kFlopsPerElemRelu * bts);
  const TensorId c1 = m.op("head.conv1", "Conv", "head", -1, {r1}, {b, Sk, T},
                           conv_flops(Sk, Sk, 1), conv_params(Sk, Sk, 1));
  const TensorId r2 =
      m.op("head.relu2", "Relu", "head", -1, {c1}, {b, Sk, T}, kFlopsPerElemRelu * bts);
  const TensorId logits = m.op("head.conv2", "Conv", "head", -1, {r2}, {b, Q, T},
                               conv_flops(Sk, Q, 1), conv_params(Sk, Q, 1));
  m.loss({logits}, labels, bt * d(Q));
  return m.build();
}

}  // namespace placer
