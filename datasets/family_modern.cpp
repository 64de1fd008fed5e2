#include "datasets/family_modern.h"

#include <algorithm>
#include <vector>

#include "datasets/family_util.h"
#include "datasets/synthetic.h"
#include "src/util/error.h"

namespace placer {

namespace {

double d(int64_t v) { return static_cast<double>(v); }

/// Conv + BatchNorm (+ Relu) writing [b, cout, h, h]; returns the last output.
TensorId conv_bn(GraphMaker& m, const std::string& p, int layer, TensorId x, int64_t b, int64_t cin,
                 int64_t cout, int64_t h, int64_t k, bool relu) {
  const std::vector<int64_t> shape = {b, cout, h, h};
  const double e = d(b) * d(cout) * d(h) * d(h);
  TensorId y =
      m.op(p + ".conv", "Conv", p, layer, {x}, shape, conv2d_flops(b, cin, cout, h, h, k, k),
           static_cast<uint64_t>(cout * cin * k * k));
  y = m.op(p + ".bn", "BatchNormalization", p, layer, {y}, shape, kFlopsPerElemBatchNorm * e,
           static_cast<uint64_t>(2 * cout));
  if (relu) y = m.op(p + ".relu", "Relu", p, layer, {y}, shape, kFlopsPerElemRelu * e);
  return y;
}

/// Shapes of one sequence model: batch, length, width.
struct Seq {
  int64_t b, s, dm, heads;
  std::vector<int64_t> shape() const { return {b, s, dm}; }
  double elems() const { return d(b) * d(s) * d(dm); }
};

/// Multi-head attention of `q_in` over `kv_in` (same length) with its output projection.
TensorId attention(GraphMaker& m, const std::string& p, int layer, TensorId q_in, TensorId kv_in,
                   const Seq& t) {
  const uint64_t w = static_cast<uint64_t>(t.dm * t.dm + t.dm);
  const double proj = 2 * t.elems() * d(t.dm);
  const TensorId q = m.op(p + ".q", "MatMul", p, layer, {q_in}, t.shape(), proj, w);
  const TensorId k = m.op(p + ".k", "MatMul", p, layer, {kv_in}, t.shape(), proj, w);
  const TensorId v = m.op(p + ".v", "MatMul", p, layer, {kv_in}, t.shape(), proj, w);
  const std::vector<int64_t> scores = {t.b, t.heads, t.s, t.s};
  const double qk = 2 * t.elems() * d(t.s);
  const TensorId sc = m.op(p + ".scores", "MatMul", p, layer, {q, k}, scores, qk);
  const TensorId pr = m.op(p + ".softmax", "Softmax", p, layer, {sc}, scores,
                           kFlopsPerElemSoftmax * d(t.b) * d(t.heads) * d(t.s) * d(t.s));
  const TensorId ctx = m.op(p + ".context", "MatMul", p, layer, {pr, v}, t.shape(), qk);
  return m.op(p + ".out", "MatMul", p, layer, {ctx}, t.shape(), proj, w);
}

/// Residual Add and LayerNorm (post-norm), or the Add alone.
TensorId add_norm(GraphMaker& m, const std::string& p, int layer, TensorId x, TensorId y,
                  const Seq& t, bool norm) {
  TensorId r =
      m.op(p + ".residual", "Add", p, layer, {x, y}, t.shape(), kFlopsPerElemAdd * t.elems());
  if (!norm) return r;
  return m.op(p + ".layernorm", "LayerNormalization", p, layer, {r}, t.shape(),
              kFlopsPerElemLayerNorm * t.elems(), static_cast<uint64_t>(2 * t.dm));
}

/// Two MatMuls around an activation (4 x d_model wide).
TensorId ffn(GraphMaker& m, const std::string& p, int layer, TensorId x, const Seq& t,
             const char* act) {
  const int64_t f = 4 * t.dm;
  const uint64_t w = static_cast<uint64_t>(t.dm * f);
  const double e = d(t.b) * d(t.s) * d(f);
  const TensorId up = m.op(p + ".fc1", "MatMul", p, layer, {x}, {t.b, t.s, f}, 2 * t.elems() * d(f),
                           w + static_cast<uint64_t>(f));
  const double per = std::string(act) == "Gelu" ? kFlopsPerElemGelu : kFlopsPerElemRelu;
  const TensorId a = m.op(p + "." + act, act, p, layer, {up}, {t.b, t.s, f}, per * e);
  return m.op(p + ".fc2", "MatMul", p, layer, {a}, t.shape(), 2 * t.elems() * d(f),
              w + static_cast<uint64_t>(t.dm));
}

void check_seq(const std::string& name, int64_t dm, int64_t heads) {
  PLACER_CHECK(dm > 0 && heads > 0 && dm % heads == 0,
               name << ": heads (" << heads << ") must divide d_model (" << dm << ")");
}

}  // namespace

Graph make_resnet(const ResNetOptions& o) {
  PLACER_CHECK(o.blocks.size() == 4, o.name << ": four stages of blocks expected");
  PLACER_CHECK(o.width > 0 && o.image >= 32 && o.classes > 0 && o.batch > 0,
               o.name << ": width, classes and batch must be positive, image >= 32");
  const int64_t b = o.batch;
  GraphMaker m(o.name, b, o.dtype);
  const TensorId image = m.act("image", {b, 3, o.image, o.image});
  const TensorId labels = m.tensor("labels", {b}, DType::kI64);
  int64_t h = strided(o.image, 2), c = o.width;
  TensorId x = conv_bn(m, "stem", 0, image, b, 3, c, h, 7, true);
  h = strided(h, 2);
  x = m.op("stem.maxpool", "MaxPool", "stem", 0, {x}, {b, c, h, h}, 9 * d(b) * d(c) * d(h) * d(h));
  int layer = 1;
  for (int s = 0; s < 4; ++s) {
    const int64_t mid = o.width << s, out = 4 * mid;
    for (int k = 0; k < o.blocks[static_cast<size_t>(s)]; ++k, ++layer) {
      const std::string p = "layer" + std::to_string(s + 1) + "." + std::to_string(k);
      const int64_t ho = k == 0 && s > 0 ? strided(h, 2) : h;
      const TensorId a = conv_bn(m, p + ".a", layer, x, b, c, mid, h, 1, true);
      const TensorId bb = conv_bn(m, p + ".b", layer, a, b, mid, mid, ho, 3, true);
      const TensorId cc = conv_bn(m, p + ".c", layer, bb, b, mid, out, ho, 1, false);
      const TensorId skip =
          k == 0 ? conv_bn(m, p + ".downsample", layer, x, b, c, out, ho, 1, false) : x;
      const std::vector<int64_t> shape = {b, out, ho, ho};
      const double e = d(b) * d(out) * d(ho) * d(ho);
      const TensorId sum =
          m.op(p + ".add", "Add", p, layer, {cc, skip}, shape, kFlopsPerElemAdd * e);
      x = m.op(p + ".relu", "Relu", p, layer, {sum}, shape, kFlopsPerElemRelu * e);
      h = ho;
      c = out;
    }
  }
  x = m.op("head.pool", "GlobalAveragePool", "head", layer, {x}, {b, c}, d(b) * d(c) * d(h) * d(h));
  const TensorId logits =
      m.op("head.fc", "MatMul", "head", layer, {x}, {b, o.classes}, 2 * d(b) * d(c) * d(o.classes),
           static_cast<uint64_t>(c * o.classes + o.classes));
  m.loss({logits}, labels, d(b) * d(o.classes));
  return m.build();
}

Graph make_vit(const VitOptions& o) {
  check_seq(o.name, o.d_model, o.heads);
  PLACER_CHECK(o.layers >= 1 && o.patch > 0 && o.image >= o.patch && o.batch > 0 && o.classes > 0,
               o.name << ": layers >= 1, patch <= image, batch and classes > 0");
  const int64_t b = o.batch, g = o.image / o.patch, n = g * g, dm = o.d_model;
  const Seq t{b, n + 1, dm, o.heads};
  GraphMaker m(o.name, b, o.dtype);
  const TensorId image = m.act("image", {b, 3, o.image, o.image});
  const TensorId labels = m.tensor("labels", {b}, DType::kI64);
  const TensorId cls = m.param("class_token", "embed", 0, {1, 1, dm});
  const TensorId patches = m.op("patch_embed", "Conv", "embed", 0, {image}, {b, dm, g, g},
                                conv2d_flops(b, 3, dm, g, g, o.patch, o.patch),
                                static_cast<uint64_t>(dm * 3 * o.patch * o.patch + dm));
  TensorId x = m.op("embed.tokens", "Concat", "embed", 0, {cls, patches}, t.shape(), 0);
  x = m.op("embed.positions", "Add", "embed", 0, {x}, t.shape(), kFlopsPerElemAdd * t.elems(),
           static_cast<uint64_t>((n + 1) * dm));
  for (int l = 0; l < o.layers; ++l) {
    const std::string p = "encoder.layers." + std::to_string(l);
    const int layer = l + 1;
    const TensorId n1 = m.op(p + ".ln1", "LayerNormalization", p, layer, {x}, t.shape(),
                             kFlopsPerElemLayerNorm * t.elems(), static_cast<uint64_t>(2 * dm));
    x = add_norm(m, p + ".attn", layer, x, attention(m, p + ".attn", layer, n1, n1, t), t, false);
    const TensorId n2 = m.op(p + ".ln2", "LayerNormalization", p, layer, {x}, t.shape(),
                             kFlopsPerElemLayerNorm * t.elems(), static_cast<uint64_t>(2 * dm));
    x = add_norm(m, p + ".mlp", layer, x, ffn(m, p + ".mlp", layer, n2, t, "Gelu"), t, false);
  }
  const int last = o.layers + 1;
  x = m.op("encoder.ln", "LayerNormalization", "encoder", last, {x}, t.shape(),
           kFlopsPerElemLayerNorm * t.elems(), static_cast<uint64_t>(2 * dm));
  const TensorId first = m.op("head.class_token", "Slice", "head", last, {x}, {b, dm}, 0);
  const TensorId logits =
      m.op("head.fc", "MatMul", "head", last, {first}, {b, o.classes},
           2 * d(b) * d(dm) * d(o.classes), static_cast<uint64_t>(dm * o.classes + o.classes));
  m.loss({logits}, labels, d(b) * d(o.classes));
  return m.build();
}

namespace {

/// One Swin block on a `side` x `side` token grid: LayerNorm, windowed attention (scores
/// per window of w^2 tokens, the relative position bias table on them), residual Add,
/// LayerNorm, MLP, residual Add. Shifted windows cost the same as unshifted ones here.
TensorId swin_block(GraphMaker& m, const std::string& p, int layer, TensorId x, const Seq& t,
                    int64_t side, int64_t window) {
  const int64_t w = std::min(window, side), windows = ((side + w - 1) / w) * ((side + w - 1) / w);
  const uint64_t proj_w = static_cast<uint64_t>(t.dm * t.dm + t.dm);
  const double proj = 2 * t.elems() * d(t.dm);
  const TensorId n1 = m.op(p + ".ln1", "LayerNormalization", p, layer, {x}, t.shape(),
                           kFlopsPerElemLayerNorm * t.elems(), static_cast<uint64_t>(2 * t.dm));
  const TensorId q = m.op(p + ".attn.q", "MatMul", p, layer, {n1}, t.shape(), proj, proj_w);
  const TensorId k = m.op(p + ".attn.k", "MatMul", p, layer, {n1}, t.shape(), proj, proj_w);
  const TensorId v = m.op(p + ".attn.v", "MatMul", p, layer, {n1}, t.shape(), proj, proj_w);
  const std::vector<int64_t> scores = {t.b * windows, t.heads, w * w, w * w};
  const double qk = 2 * t.elems() * d(w * w);
  const uint64_t bias_table = static_cast<uint64_t>((2 * window - 1) * (2 * window - 1) * t.heads);
  const TensorId sc = m.op(p + ".attn.scores", "MatMul", p, layer, {q, k}, scores, qk, bias_table);
  const TensorId pr = m.op(p + ".attn.softmax", "Softmax", p, layer, {sc}, scores,
                           kFlopsPerElemSoftmax * d(t.b * windows) * d(t.heads) * d(w * w * w * w));
  const TensorId ctx = m.op(p + ".attn.context", "MatMul", p, layer, {pr, v}, t.shape(), qk);
  const TensorId out = m.op(p + ".attn.out", "MatMul", p, layer, {ctx}, t.shape(), proj, proj_w);
  x = add_norm(m, p + ".attn", layer, x, out, t, false);
  const TensorId n2 = m.op(p + ".ln2", "LayerNormalization", p, layer, {x}, t.shape(),
                           kFlopsPerElemLayerNorm * t.elems(), static_cast<uint64_t>(2 * t.dm));
  return add_norm(m, p + ".mlp", layer, x, ffn(m, p + ".mlp", layer, n2, t, "Gelu"), t, false);
}

/// Patch merging: the 2 x 2 neighbours of a `side` grid of `dim` channels concatenated
/// (4 dim), a LayerNorm and a bias-free reduction to 2 dim on the halved grid.
TensorId patch_merge(GraphMaker& m, const std::string& p, int layer, TensorId x, int64_t b,
                     int64_t side, int64_t dim) {
  const int64_t half = (side + 1) / 2;
  const std::vector<int64_t> wide = {b, half * half, 4 * dim};
  const double e = d(b) * d(half * half) * d(4 * dim);
  x = m.op(p + ".concat", "Concat", p, layer, {x}, wide, 0);
  x = m.op(p + ".norm", "LayerNormalization", p, layer, {x}, wide, kFlopsPerElemLayerNorm * e,
           static_cast<uint64_t>(8 * dim));
  return m.op(p + ".reduction", "MatMul", p, layer, {x}, {b, half * half, 2 * dim},
              2 * e * d(2 * dim), static_cast<uint64_t>(8 * dim * dim));
}

}  // namespace

Graph make_swin(const SwinOptions& o) {
  PLACER_CHECK(o.depths.size() == 4 && o.heads.size() == 4,
               o.name << ": four stages of depths and heads expected");
  PLACER_CHECK(o.embed > 0 && o.window > 0 && o.patch > 0 && o.image >= 8 * o.patch &&
                   o.classes > 0 && o.batch > 0,
               o.name << ": embed, window, patch, classes and batch > 0, image >= 8 x patch");
  const int64_t b = o.batch;
  int64_t side = o.image / o.patch, dim = o.embed;
  GraphMaker m(o.name, b, o.dtype);
  const TensorId image = m.act("image", {b, 3, o.image, o.image});
  const TensorId labels = m.tensor("labels", {b}, DType::kI64);
  TensorId x = m.op("patch_embed", "Conv", "embed", 0, {image}, {b, dim, side, side},
                    conv2d_flops(b, 3, dim, side, side, o.patch, o.patch),
                    static_cast<uint64_t>(dim * 3 * o.patch * o.patch + dim));
  x = m.op("patch_norm", "LayerNormalization", "embed", 0, {x}, {b, side * side, dim},
           kFlopsPerElemLayerNorm * d(b) * d(side * side) * d(dim), static_cast<uint64_t>(2 * dim));
  int layer = 1;
  for (size_t s = 0; s < 4; ++s) {
    const int64_t heads = o.heads[s];
    check_seq(o.name, dim, heads);
    const Seq t{b, side * side, dim, heads};
    for (int k = 0; k < o.depths[s]; ++k, ++layer) {
      const std::string p = "stages." + std::to_string(s) + ".blocks." + std::to_string(k);
      x = swin_block(m, p, layer, x, t, side, o.window);
    }
    if (s + 1 < 4) {
      x = patch_merge(m, "stages." + std::to_string(s) + ".merge", layer, x, b, side, dim);
      side = (side + 1) / 2;
      dim *= 2;
    }
  }
  const std::vector<int64_t> tokens = {b, side * side, dim};
  x = m.op("norm", "LayerNormalization", "head", layer, {x}, tokens,
           kFlopsPerElemLayerNorm * d(b) * d(side * side) * d(dim), static_cast<uint64_t>(2 * dim));
  x = m.op("head.pool", "GlobalAveragePool", "head", layer, {x}, {b, dim},
           d(b) * d(side * side) * d(dim));
  const TensorId logits =
      m.op("head.fc", "MatMul", "head", layer, {x}, {b, o.classes},
           2 * d(b) * d(dim) * d(o.classes), static_cast<uint64_t>(dim * o.classes + o.classes));
  m.loss({logits}, labels, d(b) * d(o.classes));
  return m.build();
}

Graph make_encdec(const EncDecOptions& o) {
  check_seq(o.name, o.d_model, o.heads);
  PLACER_CHECK(
      o.encoder_layers >= 1 && o.decoder_layers >= 1 && o.seq_len > 0 && o.vocab > 0 && o.batch > 0,
      o.name << ": layers >= 1, seq_len, vocab and batch > 0");
  const Seq t{o.batch, o.seq_len, o.d_model, o.heads};
  const uint64_t table = static_cast<uint64_t>(o.vocab * o.d_model);
  GraphMaker m(o.name, o.batch, o.dtype);
  const TensorId src = m.tensor("src", {t.b, t.s}, DType::kI64);
  const TensorId tgt = m.tensor("tgt", {t.b, t.s}, DType::kI64);
  const TensorId labels = m.tensor("labels", {t.b, t.s}, DType::kI64);
  TensorId x =
      m.op("encoder.embed", "Gather", "encoder.embed", 0, {src}, t.shape(), t.elems(), table);
  for (int l = 0; l < o.encoder_layers; ++l) {
    const std::string p = "encoder.layers." + std::to_string(l);
    const int layer = l + 1;
    x = add_norm(m, p + ".self", layer, x, attention(m, p + ".self", layer, x, x, t), t, true);
    x = add_norm(m, p + ".ff", layer, x, ffn(m, p + ".ff", layer, x, t, "Relu"), t, true);
  }
  const TensorId memory = x;
  TensorId y =
      m.op("decoder.embed", "Gather", "decoder.embed", 0, {tgt}, t.shape(), t.elems(), table);
  for (int l = 0; l < o.decoder_layers; ++l) {
    const std::string p = "decoder.layers." + std::to_string(l);
    const int layer = o.encoder_layers + l + 1;
    y = add_norm(m, p + ".self", layer, y, attention(m, p + ".self", layer, y, y, t), t, true);
    y = add_norm(m, p + ".cross", layer, y, attention(m, p + ".cross", layer, y, memory, t), t,
                 true);
    y = add_norm(m, p + ".ff", layer, y, ffn(m, p + ".ff", layer, y, t, "Relu"), t, true);
  }
  const int last = o.encoder_layers + o.decoder_layers + 1;
  const TensorId logits = m.op("generator", "MatMul", "generator", last, {y}, {t.b, t.s, o.vocab},
                               2 * t.elems() * d(o.vocab), table);
  m.loss({logits}, labels, d(t.b) * d(t.s) * d(o.vocab));
  return m.build();
}

Graph make_gnn(const GnnOptions& o) {
  PLACER_CHECK(o.layers >= 1 && o.heads >= 1 && o.hidden > 0 && o.hidden % o.heads == 0 &&
                   o.features > 0 && o.nodes > 0 && o.classes > 0 && o.batch > 0,
               o.name << ": layers, heads >= 1 (dividing hidden); features, nodes, classes and "
                         "batch > 0");
  const int64_t b = o.batch, n = o.nodes, hd = o.hidden, per = hd / o.heads;
  const double bn = d(b) * d(n);
  const std::vector<int64_t> shape = {b, n, hd};
  GraphMaker m(o.name, b, o.dtype);
  TensorId x = m.act("features", {b, n, o.features});
  const TensorId adj = m.act("adjacency", {b, n, n});
  const TensorId labels = m.tensor("labels", {b}, DType::kI64);
  int64_t in = o.features;
  for (int l = 0; l < o.layers; ++l) {
    const std::string p = "layers." + std::to_string(l);
    std::vector<TensorId> heads;
    for (int64_t h = 0; h < o.heads; ++h) {
      const std::string q = p + ".heads." + std::to_string(h);
      const TensorId proj = m.op(q + ".proj", "MatMul", p, l, {x}, {b, n, per},
                                 2 * bn * d(in) * d(per), static_cast<uint64_t>(in * per));
      heads.push_back(
          m.op(q + ".aggregate", "MatMul", p, l, {adj, proj}, {b, n, per}, 2 * bn * d(n) * d(per)));
    }
    const TensorId cat = m.op(p + ".concat", "Concat", p, l, heads, shape, 0);
    const TensorId skip = in == hd ? x
                                   : m.op(p + ".skip", "MatMul", p, l, {x}, shape,
                                          2 * bn * d(in) * d(hd), static_cast<uint64_t>(in * hd));
    const TensorId sum =
        m.op(p + ".add", "Add", p, l, {cat, skip}, shape, kFlopsPerElemAdd * bn * d(hd));
    x = m.op(p + ".relu", "Relu", p, l, {sum}, shape, kFlopsPerElemRelu * bn * d(hd));
    in = hd;
  }
  const TensorId pooled =
      m.op("readout.mean", "ReduceMean", "readout", o.layers, {x}, {b, hd}, bn * d(hd));
  const TensorId logits =
      m.op("readout.fc", "MatMul", "readout", o.layers, {pooled}, {b, o.classes},
           2 * d(b) * d(hd) * d(o.classes), static_cast<uint64_t>(hd * o.classes + o.classes));
  m.loss({logits}, labels, d(b) * d(o.classes));
  return m.build();
}

}  // namespace placer
