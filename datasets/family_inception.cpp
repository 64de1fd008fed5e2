#include "datasets/family_inception.h"

#include <algorithm>

#include "datasets/family_util.h"
#include "datasets/synthetic.h"
#include "src/util/error.h"

namespace placer {

namespace {

double d(int64_t v) { return static_cast<double>(v); }

struct Fm {
  TensorId t;
  int64_t c, h;
};

class InceptionBuilder {
 public:
  explicit InceptionBuilder(const InceptionOptions& o)
      : o_(o), m_(o.name, o.batch, o.dtype), b_(o.batch), rng_(mix64(o.seed)) {}

  Graph build() {
    const TensorId x = m_.act("images", {b_, o_.in_channels, o_.image, o_.image});
    const TensorId labels = m_.tensor("labels", {b_}, DType::kI64);
    Fm f{x, o_.in_channels, o_.image};
    f = unit("stem.conv0", "stem", -1, f, 32, 3, 3, 2);
    f = unit("stem.conv1", "stem", -1, f, 32, 3, 3, 1);
    f = unit("stem.conv2", "stem", -1, f, 64, 3, 3, 1);
    f = max_pool("stem.pool0", "stem", -1, f, 2);
    f = unit("stem.conv3", "stem", -1, f, 80, 1, 1, 1);
    f = unit("stem.conv4", "stem", -1, f, 192, 3, 3, 1);
    f = max_pool("stem.pool1", "stem", -1, f, 2);
    int layer = 0;
    for (size_t s = 0; s < o_.modules_per_stage.size(); ++s) {
      const int64_t w = o_.width * (2 * static_cast<int64_t>(s) + 1);
      const std::string sp = "stage" + std::to_string(s);
      if (s > 0) f = reduction(sp + ".reduction", layer++, f, w);
      for (int k = 0; k < o_.modules_per_stage[s]; ++k) {
        f = module(sp + ".module" + std::to_string(k), layer++, f, w);
      }
    }
    const TensorId gap = m_.op("head.global_pool", "GlobalAveragePool", "head", -1, {f.t},
                               {b_, f.c}, d(b_) * d(f.c) * d(f.h) * d(f.h));
    const TensorId logits =
        m_.op("head.classifier", "MatMul", "head", -1, {gap}, {b_, o_.classes},
              2 * d(b_) * d(f.c) * d(o_.classes), static_cast<uint64_t>(f.c * (o_.classes + 1)));
    m_.loss({logits}, labels, d(b_) * d(o_.classes));
    return m_.build();
  }

 private:
  // Conv kh x kw (stride s) + BatchNorm + Relu.
  Fm unit(const std::string& p, const std::string& scope, int layer, Fm in, int64_t cout,
          int64_t kh, int64_t kw, int64_t s) {
    const int64_t h = strided(in.h, s);
    const std::vector<int64_t> shp = {b_, cout, h, h};
    const TensorId c = m_.op(p + ".conv", "Conv", scope, layer, {in.t}, shp,
                             conv2d_flops(b_, in.c, cout, h, h, kh, kw),
                             static_cast<uint64_t>(cout * in.c * kh * kw));
    const TensorId n = m_.op(p + ".bn", "BatchNormalization", scope, layer, {c}, shp,
                             kFlopsPerElemBatchNorm * elems(shp), static_cast<uint64_t>(2 * cout));
    const TensorId r =
        m_.op(p + ".relu", "Relu", scope, layer, {n}, shp, kFlopsPerElemRelu * elems(shp));
    return {r, cout, h};
  }
  Fm max_pool(const std::string& p, const std::string& scope, int layer, Fm in, int64_t s) {
    const int64_t h = strided(in.h, s);
    const std::vector<int64_t> shp = {b_, in.c, h, h};
    return {m_.op(p, "MaxPool", scope, layer, {in.t}, shp, 9 * elems(shp)), in.c, h};
  }
  int64_t draw_width(int64_t w) {
    const int64_t lo = std::max<int64_t>(1, w / 2 / 8), hi = std::max(lo, 3 * w / 2 / 8);
    return 8 * rng_.range(lo, hi);
  }

  Fm module(const std::string& mp, int layer, Fm in, int64_t w) {
    const int n = static_cast<int>(rng_.range(o_.min_branches, o_.max_branches));
    std::vector<TensorId> outs;
    int64_t cout = 0;
    for (int k = 0; k < n; ++k) {
      const std::string bp = mp + ".branch" + std::to_string(k);
      const int64_t bw = draw_width(w);
      Fm f = in;
      if (k == 0) {
        f = unit(bp + ".conv1x1", bp, layer, f, bw, 1, 1, 1);
      } else if (k == n - 1) {
        const std::vector<int64_t> shp = {b_, in.c, in.h, in.h};
        f = {m_.op(bp + ".pool", "AveragePool", bp, layer, {in.t}, shp, 9 * elems(shp)), in.c,
             in.h};
        f = unit(bp + ".conv1x1", bp, layer, f, bw, 1, 1, 1);
      } else {
        const int64_t reduce = std::max<int64_t>(8, bw * 3 / 4 / 8 * 8);
        f = unit(bp + ".conv1x1", bp, layer, f, reduce, 1, 1, 1);
        switch (rng_.range(0, 3)) {
          case 0:
            f = unit(bp + ".conv3x3", bp, layer, f, bw, 3, 3, 1);
            break;
          case 1:
            f = unit(bp + ".conv3x3a", bp, layer, f, bw, 3, 3, 1);
            f = unit(bp + ".conv3x3b", bp, layer, f, bw, 3, 3, 1);
            break;
          case 2:
            f = unit(bp + ".conv5x5", bp, layer, f, bw, 5, 5, 1);
            break;
          default:
            f = unit(bp + ".conv1x7", bp, layer, f, reduce, 1, 7, 1);
            f = unit(bp + ".conv7x1", bp, layer, f, bw, 7, 1, 1);
            break;
        }
      }
      outs.push_back(f.t);
      cout += f.c;
    }
    return {m_.op(mp + ".concat", "Concat", mp, layer, outs, {b_, cout, in.h, in.h}, 0), cout,
            in.h};
  }

  Fm reduction(const std::string& rp, int layer, Fm in, int64_t w) {
    const Fm a = unit(rp + ".branch0.conv3x3", rp + ".branch0", layer, in, w, 3, 3, 2);
    Fm b = unit(rp + ".branch1.conv1x1", rp + ".branch1", layer, in, w, 1, 1, 1);
    b = unit(rp + ".branch1.conv3x3a", rp + ".branch1", layer, b, w, 3, 3, 1);
    b = unit(rp + ".branch1.conv3x3b", rp + ".branch1", layer, b, w, 3, 3, 2);
    const Fm c = max_pool(rp + ".branch2.pool", rp + ".branch2", layer, in, 2);
    const int64_t cout = a.c + b.c + c.c;
    return {m_.op(rp + ".concat", "Concat", rp, layer, {a.t, b.t, c.t}, {b_, cout, a.h, a.h}, 0),
            cout, a.h};
  }

  InceptionOptions o_;
  GraphMaker m_;
  int64_t b_;
  FamilyRng rng_;
};

}  // namespace

Graph make_inception(const InceptionOptions& o) {
  PLACER_CHECK(o.min_branches >= 2 && o.max_branches >= o.min_branches,
               o.name << ": need 2 <= min_branches <= max_branches");
  PLACER_CHECK(o.width >= 8, o.name << ": width must be >= 8, got " << o.width);
  PLACER_CHECK(o.image > 0 && o.in_channels > 0 && o.classes > 0 && o.batch > 0,
               o.name << ": image, in_channels, classes and batch must be positive");
  for (int m : o.modules_per_stage) {
    PLACER_CHECK(m >= 0, o.name << ": modules_per_stage must be >= 0, got " << m);
  }
  return InceptionBuilder(o).build();
}

}  // namespace placer
