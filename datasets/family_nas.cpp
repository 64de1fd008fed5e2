#include "datasets/family_nas.h"

#include <algorithm>

#include "datasets/family_util.h"
#include "datasets/synthetic.h"
#include "src/util/error.h"

namespace placer {

const char* to_string(NasOp op) {
  switch (op) {
    case NasOp::kIdentity:
      return "identity";
    case NasOp::kSepConv3:
      return "sep_conv_3x3";
    case NasOp::kSepConv5:
      return "sep_conv_5x5";
    case NasOp::kSepConv7:
      return "sep_conv_7x7";
    case NasOp::kDilConv3:
      return "dil_conv_3x3";
    case NasOp::kConv1x7_7x1:
      return "conv_1x7_7x1";
    case NasOp::kAvgPool3:
      return "avg_pool_3x3";
    case NasOp::kMaxPool3:
      return "max_pool_3x3";
  }
  return "identity";
}

std::vector<NasOp> enas_ops() {
  return {NasOp::kIdentity, NasOp::kSepConv3, NasOp::kSepConv5, NasOp::kAvgPool3, NasOp::kMaxPool3};
}

std::vector<NasOp> amoeba_ops() {
  return {NasOp::kIdentity, NasOp::kSepConv3, NasOp::kSepConv5, NasOp::kSepConv7,
          NasOp::kDilConv3, NasOp::kAvgPool3, NasOp::kMaxPool3, NasOp::kConv1x7_7x1};
}

NasCell sample_nas_cell(int nodes, const std::vector<NasOp>& ops, uint64_t seed) {
  PLACER_CHECK(nodes >= 1, "nas cell: need at least one node, got " << nodes);
  PLACER_CHECK(!ops.empty(), "nas cell: empty operation set");
  FamilyRng rng(seed);
  NasCell cell;
  for (int j = 0; j < nodes; ++j) {
    NasNode n;
    for (int k = 0; k < 2; ++k) {
      n.input[k] = static_cast<int>(rng.range(0, j + 1));
      n.op[k] = ops[rng.index(ops.size())];
    }
    cell.nodes.push_back(n);
  }
  // The cell must read h[i-1], or the previous cell's output would be a dead end.
  bool reads_prev = false;
  for (const NasNode& n : cell.nodes) reads_prev = reads_prev || n.input[0] == 1 || n.input[1] == 1;
  if (!reads_prev) cell.nodes[0].input[0] = 1;
  return cell;
}

namespace {

double d(int64_t v) { return static_cast<double>(v); }

// A feature map: tensor [b, c, h, h].
struct Fm {
  TensorId t;
  int64_t c, h;
};

struct NasConfig {
  int cells_per_stage;
  int64_t filters, image, in_channels, classes, batch;
  bool imagenet_stem, double_sep;
  NasCell normal, reduction;
  DType dtype;
  std::string name;
};

class NasBuilder {
 public:
  explicit NasBuilder(const NasConfig& c) : c_(c), m_(c.name, c.batch, c.dtype), b_(c.batch) {}

  Graph build() {
    const TensorId x = m_.act("images", {b_, c_.in_channels, c_.image, c_.image});
    const TensorId labels = m_.tensor("labels", {b_}, DType::kI64);
    // Stem.
    const int64_t s0 = c_.imagenet_stem ? 2 : 1;
    const int64_t stem_c = c_.imagenet_stem ? std::max<int64_t>(8, c_.filters / 4) : c_.filters;
    Fm stem = conv_bn("stem", -1, {x, c_.in_channels, c_.image}, stem_c, 3, s0);
    Fm pp = stem, p = stem;
    int cell = 0;
    int64_t filters = c_.filters;
    if (c_.imagenet_stem) {
      for (int64_t div : {4, 2}) {
        Fm out = make_cell(cell++, pp, p, std::max<int64_t>(8, c_.filters / div), true);
        pp = p;
        p = out;
      }
    }
    for (int stage = 0; stage < 3; ++stage) {
      if (stage > 0) {
        filters *= 2;
        Fm out = make_cell(cell++, pp, p, filters, true);
        pp = p;
        p = out;
      }
      for (int k = 0; k < c_.cells_per_stage; ++k) {
        Fm out = make_cell(cell++, pp, p, filters, false);
        pp = p;
        p = out;
      }
    }
    // Head.
    const std::vector<int64_t> shp = {b_, p.c, p.h, p.h};
    const TensorId r = m_.op("head.relu", "Relu", "head", -1, {p.t}, shp, elems(shp));
    const TensorId gap =
        m_.op("head.global_pool", "GlobalAveragePool", "head", -1, {r}, {b_, p.c}, elems(shp));
    const TensorId logits =
        m_.op("head.classifier", "MatMul", "head", -1, {gap}, {b_, c_.classes},
              2 * d(b_) * d(p.c) * d(c_.classes), static_cast<uint64_t>(p.c * (c_.classes + 1)));
    m_.loss({logits}, labels, d(b_) * d(c_.classes));
    return m_.build();
  }

 private:
  // Conv k x k (stride s) to `cout` channels + BatchNorm.
  Fm conv_bn(const std::string& p, int layer, Fm in, int64_t cout, int64_t k, int64_t s) {
    const int64_t h = strided(in.h, s);
    const TensorId c =
        m_.op(p + ".conv", "Conv", p, layer, {in.t}, {b_, cout, h, h},
              conv2d_flops(b_, in.c, cout, h, h, k, k), static_cast<uint64_t>(cout * in.c * k * k));
    return bn(p, layer, {c, cout, h});
  }
  Fm bn(const std::string& p, int layer, Fm in) {
    const std::vector<int64_t> shp = {b_, in.c, in.h, in.h};
    const TensorId t = m_.op(p + ".bn", "BatchNormalization", p, layer, {in.t}, shp,
                             kFlopsPerElemBatchNorm * elems(shp), static_cast<uint64_t>(2 * in.c));
    return {t, in.c, in.h};
  }
  Fm relu(const std::string& p, int layer, Fm in) {
    const std::vector<int64_t> shp = {b_, in.c, in.h, in.h};
    return {m_.op(p + ".relu", "Relu", p, layer, {in.t}, shp, kFlopsPerElemRelu * elems(shp)), in.c,
            in.h};
  }
  // Relu -> Conv 1x1 (stride s) -> BatchNorm, to `cout` channels.
  Fm relu_conv_bn(const std::string& p, int layer, Fm in, int64_t cout, int64_t s) {
    return conv_bn(p, layer, relu(p, layer, in), cout, 1, s);
  }
  // Relu -> depthwise k x k (stride s) -> pointwise 1x1 -> BatchNorm; C channels kept.
  Fm sep_conv(const std::string& p, int layer, Fm in, int64_t k, int64_t s, bool dilated) {
    Fm r = relu(p, layer, in);
    const int64_t h = strided(in.h, s), c = in.c;
    const TensorId dw =
        m_.op(p + ".depthwise", "Conv", p, layer, {r.t}, {b_, c, h, h},
              conv2d_flops(b_, c, c, h, h, k, k, c), static_cast<uint64_t>(c * k * k));
    if (dilated) m_.last_op().attrs.push_back({"dilations", "2"});
    m_.last_op().attrs.push_back({"group", std::to_string(c)});
    const TensorId pw = m_.op(p + ".pointwise", "Conv", p, layer, {dw}, {b_, c, h, h},
                              conv2d_flops(b_, c, c, h, h, 1, 1), static_cast<uint64_t>(c * c));
    return bn(p, layer, {pw, c, h});
  }

  // One branch operation on state `in`; stride s.
  Fm branch(const std::string& p, int layer, NasOp op, Fm in, int64_t s) {
    switch (op) {
      case NasOp::kIdentity:
        if (s == 1) return in;
        return conv_bn(p + ".reduce", layer, in, in.c, 1, s);
      case NasOp::kSepConv3:
      case NasOp::kSepConv5:
      case NasOp::kSepConv7: {
        const int64_t k = op == NasOp::kSepConv3 ? 3 : op == NasOp::kSepConv5 ? 5 : 7;
        Fm out = sep_conv(c_.double_sep ? p + ".0" : p, layer, in, k, s, false);
        if (c_.double_sep) out = sep_conv(p + ".1", layer, out, k, 1, false);
        return out;
      }
      case NasOp::kDilConv3:
        return sep_conv(p, layer, in, 3, s, true);
      case NasOp::kConv1x7_7x1: {
        Fm r = relu(p, layer, in);
        const int64_t h = strided(in.h, s), c = in.c;
        // 1x7 with stride (1, s) and 7x1 with stride (s, 1): both counted on the output grid.
        const TensorId a =
            m_.op(p + ".conv1x7", "Conv", p, layer, {r.t}, {b_, c, in.h, h},
                  conv2d_flops(b_, c, c, in.h, h, 1, 7), static_cast<uint64_t>(c * c * 7));
        const TensorId bb =
            m_.op(p + ".conv7x1", "Conv", p, layer, {a}, {b_, c, h, h},
                  conv2d_flops(b_, c, c, h, h, 7, 1), static_cast<uint64_t>(c * c * 7));
        return bn(p, layer, {bb, c, h});
      }
      case NasOp::kAvgPool3:
      case NasOp::kMaxPool3: {
        const int64_t h = strided(in.h, s);
        const std::vector<int64_t> shp = {b_, in.c, h, h};
        const char* type = op == NasOp::kAvgPool3 ? "AveragePool" : "MaxPool";
        return {m_.op(p + ".pool", type, p, layer, {in.t}, shp, 9 * elems(shp)), in.c, h};
      }
    }
    return in;
  }

  Fm make_cell(int idx, Fm pp, Fm p, int64_t c, bool reduction) {
    const NasCell& spec = reduction ? c_.reduction : c_.normal;
    const std::string cp = "cells." + std::to_string(idx);
    // Preprocessing brings the inputs the cell reads to C channels at h[i-1]'s resolution
    // (an input no node reads gets none: it would be a dead end).
    bool reads[2] = {false, false};
    for (const NasNode& n : spec.nodes) {
      for (int in : n.input) {
        if (in == 0 || in == 1) reads[in] = true;
      }
    }
    PLACER_CHECK(reads[1], c_.name << ": every cell must read h[i-1] (state 1) in some node, "
                                      "or the previous cell's output would be a dead end");
    std::vector<Fm> states(2, p);
    if (reads[0]) states[0] = relu_conv_bn(cp + ".preprocess0", idx, pp, c, pp.h > p.h ? 2 : 1);
    states[1] = relu_conv_bn(cp + ".preprocess1", idx, p, c, 1);
    std::vector<char> used(spec.nodes.size() + 2, 0);
    for (size_t j = 0; j < spec.nodes.size(); ++j) {
      const NasNode& n = spec.nodes[j];
      const std::string np = cp + ".node" + std::to_string(j);
      TensorId br[2];
      int64_t h = 0;
      for (int k = 0; k < 2; ++k) {
        const int in = n.input[k];
        PLACER_CHECK(in >= 0 && in < static_cast<int>(j) + 2,
                     c_.name << ": cell node " << j << " reads state " << in << " (must be below "
                             << j + 2 << ")");
        used[static_cast<size_t>(in)] = 1;
        const int64_t s = reduction && in < 2 ? 2 : 1;
        const Fm out = branch(np + (k == 0 ? ".left" : ".right"), idx, n.op[k],
                              states[static_cast<size_t>(in)], s);
        br[k] = out.t;
        h = out.h;
      }
      const std::vector<int64_t> shp = {b_, c, h, h};
      states.push_back(
          {m_.op(np + ".add", "Add", cp, idx, {br[0], br[1]}, shp, kFlopsPerElemAdd * elems(shp)),
           c, h});
    }
    std::vector<TensorId> loose;
    int64_t h = 0;
    for (size_t j = 2; j < states.size(); ++j) {
      if (used[j]) continue;
      loose.push_back(states[j].t);
      h = states[j].h;
    }
    const int64_t cout = c * static_cast<int64_t>(loose.size());
    const TensorId out = m_.op(cp + ".concat", "Concat", cp, idx, loose, {b_, cout, h, h}, 0);
    return {out, cout, h};
  }

  NasConfig c_;
  GraphMaker m_;
  int64_t b_;
};

void check_common(const std::string& name, int cells, int nodes, int64_t filters, int64_t image,
                  int64_t in_channels, int64_t classes, int64_t batch) {
  PLACER_CHECK(cells >= 0, name << ": cells_per_stage must be >= 0, got " << cells);
  PLACER_CHECK(nodes >= 1, name << ": cell_nodes must be >= 1, got " << nodes);
  PLACER_CHECK(filters > 0 && image > 0 && in_channels > 0 && classes > 0 && batch > 0,
               name << ": filters, image, in_channels, classes and batch must be positive");
}

}  // namespace

Graph make_enas_cnn(const EnasCnnOptions& o) {
  check_common(o.name, o.cells_per_stage, o.cell_nodes, o.filters, o.image, o.in_channels,
               o.classes, o.batch);
  NasConfig c{o.cells_per_stage, o.filters,   o.image, o.in_channels,
              o.classes,         o.batch,     false,   false,
              o.normal,          o.reduction, o.dtype, o.name};
  if (c.normal.nodes.empty()) c.normal = sample_nas_cell(o.cell_nodes, enas_ops(), mix64(o.seed));
  if (c.reduction.nodes.empty()) {
    c.reduction = sample_nas_cell(o.cell_nodes, enas_ops(), mix64(o.seed ^ 0x5EEDull));
  }
  return NasBuilder(c).build();
}

Graph make_amoebanet(const AmoebaNetOptions& o) {
  check_common(o.name, o.cells_per_stage, o.cell_nodes, o.filters, o.image, o.in_channels,
               o.classes, o.batch);
  NasConfig c{o.cells_per_stage, o.filters,   o.image, o.in_channels,
              o.classes,         o.batch,     true,    true,
              o.normal,          o.reduction, o.dtype, o.name};
  if (c.normal.nodes.empty()) c.normal = sample_nas_cell(o.cell_nodes, amoeba_ops(), mix64(o.seed));
  if (c.reduction.nodes.empty()) {
    c.reduction = sample_nas_cell(o.cell_nodes, amoeba_ops(), mix64(o.seed ^ 0x5EEDull));
  }
  return NasBuilder(c).build();
}

}  // namespace placer
