#include "datasets/family_rnn.h"

#include <utility>

#include "datasets/family_util.h"
#include "datasets/synthetic.h"
#include "src/util/error.h"

namespace placer {

namespace {

double d(int64_t v) { return static_cast<double>(v); }
std::string step(int64_t t) { return ".t" + std::to_string(t); }

struct HC {
  TensorId h, c;
};

// One LSTM cell step (see family_rnn.h). `inputs` are concatenated with h[t-1]; `in` is
// their total width.
HC lstm_cell(GraphMaker& m, const std::string& scope, int layer, int64_t t,
             std::vector<TensorId> inputs, int64_t in, HC prev, TensorId weight, int64_t b,
             int64_t h, bool fused) {
  const std::string p = scope + step(t);
  const double bh = d(b) * d(h);
  const double gemm = 2 * d(b) * d(in + h) * d(4 * h);
  const std::vector<int64_t> bh_shape = {b, h};
  if (fused) {
    inputs.push_back(prev.h);
    inputs.push_back(prev.c);
    inputs.push_back(weight);
    const std::vector<TensorId> out = m.op_multi(
        p + ".cell", "LSTM", scope, layer, std::move(inputs), {bh_shape, bh_shape}, gemm + 24 * bh);
    return {out[0], out[1]};
  }
  inputs.push_back(prev.h);
  const TensorId cat =
      m.op(p + ".concat", "Concat", scope, layer, std::move(inputs), {b, in + h}, 0);
  const TensorId gates =
      m.op(p + ".gates", "MatMul", scope, layer, {cat, weight}, {b, 4 * h}, gemm);
  const std::vector<TensorId> g4 = m.op_multi(p + ".split", "Split", scope, layer, {gates},
                                              {bh_shape, bh_shape, bh_shape, bh_shape}, 0);
  const TensorId i =
      m.op(p + ".i", "Sigmoid", scope, layer, {g4[0]}, bh_shape, kFlopsPerElemSigmoid * bh);
  const TensorId f =
      m.op(p + ".f", "Sigmoid", scope, layer, {g4[1]}, bh_shape, kFlopsPerElemSigmoid * bh);
  const TensorId o =
      m.op(p + ".o", "Sigmoid", scope, layer, {g4[2]}, bh_shape, kFlopsPerElemSigmoid * bh);
  const TensorId g =
      m.op(p + ".g", "Tanh", scope, layer, {g4[3]}, bh_shape, kFlopsPerElemTanh * bh);
  const TensorId fc =
      m.op(p + ".fc", "Mul", scope, layer, {f, prev.c}, bh_shape, kFlopsPerElemMul * bh);
  const TensorId ig = m.op(p + ".ig", "Mul", scope, layer, {i, g}, bh_shape, kFlopsPerElemMul * bh);
  const TensorId c = m.op(p + ".c", "Add", scope, layer, {fc, ig}, bh_shape, kFlopsPerElemAdd * bh);
  const TensorId tc =
      m.op(p + ".tanh_c", "Tanh", scope, layer, {c}, bh_shape, kFlopsPerElemTanh * bh);
  const TensorId hh = m.op(p + ".h", "Mul", scope, layer, {o, tc}, bh_shape, kFlopsPerElemMul * bh);
  return {hh, c};
}

// LSTM weight (in + h) x 4h plus bias 4h, as a Parameter op.
TensorId lstm_weight(GraphMaker& m, const std::string& scope, int layer, int64_t in, int64_t h) {
  return m.param(scope + ".weights", scope, layer, {in + h + 1, 4 * h});
}

// Zero initial state of one layer: graph inputs h[-1], c[-1].
HC zero_state(GraphMaker& m, const std::string& scope, int64_t b, int64_t h) {
  return {m.act(scope + ".h0", {b, h}), m.act(scope + ".c0", {b, h})};
}

// Embedding Gather over [b, steps] tokens and a Split into per-step [b, e] tensors.
std::vector<TensorId> embed(GraphMaker& m, const std::string& scope, TensorId tokens, int64_t b,
                            int64_t steps, int64_t e, int64_t vocab) {
  const TensorId all = m.op(scope, "Gather", scope, -1, {tokens}, {b, steps, e}, 0,
                            static_cast<uint64_t>(vocab * e));
  const std::vector<std::vector<int64_t>> shapes(static_cast<size_t>(steps), {b, e});
  return m.op_multi(scope + ".split", "Split", scope, -1, {all}, shapes, 0);
}

// Per-step projection to the vocabulary with one shared weight, then the loss.
void project_and_loss(GraphMaker& m, const std::string& scope, const std::vector<TensorId>& hs,
                      TensorId labels, int64_t b, int64_t h, int64_t vocab) {
  const TensorId w = m.param(scope + ".weights", scope, -1, {h + 1, vocab});
  std::vector<TensorId> logits;
  for (size_t t = 0; t < hs.size(); ++t) {
    logits.push_back(m.op(scope + step(static_cast<int64_t>(t)) + ".logits", "MatMul", scope, -1,
                          {hs[t], w}, {b, vocab}, 2 * d(b) * d(h) * d(vocab)));
  }
  m.loss(std::move(logits), labels, d(b) * d(static_cast<int64_t>(hs.size())) * d(vocab));
}

void check_rnn(const std::string& name, int layers, int64_t hidden, int64_t vocab, int64_t steps,
               int64_t batch) {
  PLACER_CHECK(layers >= 1, name << ": layers must be >= 1, got " << layers);
  PLACER_CHECK(hidden > 0 && vocab > 0 && steps > 0 && batch > 0,
               name << ": hidden, vocab, sequence length and batch must be positive");
}

}  // namespace

Graph make_rnnlm(const RnnlmOptions& o) {
  check_rnn(o.name, o.layers, o.hidden, o.vocab, o.seq_len, o.batch);
  const int64_t b = o.batch, h = o.hidden, e = o.embedding > 0 ? o.embedding : o.hidden;
  GraphMaker m(o.name, b, o.dtype);
  const TensorId tokens = m.tensor("tokens", {b, o.seq_len}, DType::kI64);
  const TensorId labels = m.tensor("labels", {b, o.seq_len}, DType::kI64);
  std::vector<TensorId> xs = embed(m, "embedding", tokens, b, o.seq_len, e, o.vocab);
  int64_t in = e;
  for (int l = 0; l < o.layers; ++l) {
    const std::string scope = "rnn.layer." + std::to_string(l);
    const TensorId w = lstm_weight(m, scope, l, in, h);
    HC s = zero_state(m, scope, b, h);
    for (int64_t t = 0; t < o.seq_len; ++t) {
      s = lstm_cell(m, scope, l, t, {xs[static_cast<size_t>(t)]}, in, s, w, b, h, o.fused_cells);
      xs[static_cast<size_t>(t)] = s.h;
    }
    in = h;
  }
  project_and_loss(m, "softmax", xs, labels, b, h, o.vocab);
  return m.build();
}

Graph make_gnmt(const GnmtOptions& o) {
  check_rnn(o.name, o.layers, o.hidden, o.vocab, o.src_len, o.batch);
  PLACER_CHECK(o.tgt_len > 0, o.name << ": tgt_len must be positive, got " << o.tgt_len);
  PLACER_CHECK(o.residual_from >= 2,
               o.name << ": residual_from must be >= 2 (layer 1 changes the width), got "
                      << o.residual_from);
  const int64_t b = o.batch, h = o.hidden, S = o.src_len, T = o.tgt_len;
  const std::vector<int64_t> bh = {b, h};
  GraphMaker m(o.name, b, o.dtype);
  const TensorId src = m.tensor("source_tokens", {b, S}, DType::kI64);
  const TensorId tgt = m.tensor("target_tokens", {b, T}, DType::kI64);
  const TensorId labels = m.tensor("labels", {b, T}, DType::kI64);

  // Encoder.
  std::vector<TensorId> xs = embed(m, "encoder.embedding", src, b, S, h, o.vocab);
  {
    const std::string fw = "encoder.layer.0.fw", bw = "encoder.layer.0.bw";
    const TensorId wf = lstm_weight(m, fw, 0, h, h), wb = lstm_weight(m, bw, 0, h, h);
    std::vector<TensorId> hf(static_cast<size_t>(S)), hb(static_cast<size_t>(S));
    HC s = zero_state(m, fw, b, h);
    for (int64_t t = 0; t < S; ++t) {
      s = lstm_cell(m, fw, 0, t, {xs[static_cast<size_t>(t)]}, h, s, wf, b, h, o.fused_cells);
      hf[static_cast<size_t>(t)] = s.h;
    }
    s = zero_state(m, bw, b, h);
    for (int64_t t = S - 1; t >= 0; --t) {
      s = lstm_cell(m, bw, 0, t, {xs[static_cast<size_t>(t)]}, h, s, wb, b, h, o.fused_cells);
      hb[static_cast<size_t>(t)] = s.h;
    }
    for (int64_t t = 0; t < S; ++t) {
      xs[static_cast<size_t>(t)] =
          m.op("encoder.layer.0" + step(t) + ".concat", "Concat", "encoder.layer.0", 0,
               {hf[static_cast<size_t>(t)], hb[static_cast<size_t>(t)]}, {b, 2 * h}, 0);
    }
  }
  int64_t in = 2 * h;
  for (int l = 1; l < o.layers; ++l) {
    const std::string scope = "encoder.layer." + std::to_string(l);
    const TensorId w = lstm_weight(m, scope, l, in, h);
    HC s = zero_state(m, scope, b, h);
    for (int64_t t = 0; t < S; ++t) {
      TensorId& x = xs[static_cast<size_t>(t)];
      s = lstm_cell(m, scope, l, t, {x}, in, s, w, b, h, o.fused_cells);
      x = l >= o.residual_from ? m.op(scope + step(t) + ".residual", "Add", scope, l, {x, s.h}, bh,
                                      kFlopsPerElemAdd * d(b) * d(h))
                               : s.h;
    }
    in = h;
  }
  const TensorId memory = m.op("encoder.memory", "Concat", "encoder", -1, xs, {b, S, h}, 0);
  const TensorId keys = m.op("attention.keys", "MatMul", "attention", -1, {memory}, {b, S, h},
                             2 * d(b) * d(S) * d(h) * d(h), static_cast<uint64_t>(h * h));

  // Decoder.
  std::vector<TensorId> ys = embed(m, "decoder.embedding", tgt, b, T, h, o.vocab);
  const TensorId wq = m.param("attention.query.weights", "attention", -1, {h, h});
  const TensorId v = m.param("attention.v", "attention", -1, {h});
  std::vector<TensorId> ws;
  std::vector<HC> states;
  for (int l = 0; l < o.layers; ++l) {
    const std::string scope = "decoder.layer." + std::to_string(l);
    ws.push_back(lstm_weight(m, scope, l, 2 * h, h));
    states.push_back(zero_state(m, scope, b, h));
  }
  TensorId context = m.act("decoder.context0", bh);
  const double bsh = d(b) * d(S) * d(h);
  for (int64_t t = 0; t < T; ++t) {
    TensorId x = ys[static_cast<size_t>(t)];
    for (int l = 0; l < o.layers; ++l) {
      const std::string scope = "decoder.layer." + std::to_string(l);
      HC& s = states[static_cast<size_t>(l)];
      s = lstm_cell(m, scope, l, t, {x, context}, 2 * h, s, ws[static_cast<size_t>(l)], b, h,
                    o.fused_cells);
      const TensorId out = l >= o.residual_from
                               ? m.op(scope + step(t) + ".residual", "Add", scope, l, {x, s.h}, bh,
                                      kFlopsPerElemAdd * d(b) * d(h))
                               : s.h;
      if (l == 0) {  // attention from the bottom layer's output; its context feeds the rest
        const std::string a = "attention" + step(t);
        const TensorId q =
            m.op(a + ".query", "MatMul", "attention", -1, {out, wq}, bh, 2 * d(b) * d(h) * d(h));
        const TensorId e = m.op(a + ".energy", "Add", "attention", -1, {keys, q}, {b, S, h},
                                kFlopsPerElemAdd * bsh);
        const TensorId th =
            m.op(a + ".tanh", "Tanh", "attention", -1, {e}, {b, S, h}, kFlopsPerElemTanh * bsh);
        const TensorId sc =
            m.op(a + ".scores", "MatMul", "attention", -1, {th, v}, {b, S}, 2 * bsh);
        const TensorId pr = m.op(a + ".softmax", "Softmax", "attention", -1, {sc}, {b, S},
                                 kFlopsPerElemSoftmax * d(b) * d(S));
        context = m.op(a + ".context", "MatMul", "attention", -1, {pr, memory}, bh, 2 * bsh);
      }
      x = out;
    }
    ys[static_cast<size_t>(t)] = x;
  }
  project_and_loss(m, "decoder.softmax", ys, labels, b, h, o.vocab);
  return m.build();
}

const char* to_string(RnnAct a) {
  switch (a) {
    case RnnAct::kTanh:
      return "tanh";
    case RnnAct::kRelu:
      return "relu";
    case RnnAct::kIdentity:
      return "identity";
    case RnnAct::kSigmoid:
      return "sigmoid";
  }
  return "tanh";
}

EnasRnnCell sample_enas_rnn_cell(int nodes, uint64_t seed) {
  PLACER_CHECK(nodes >= 1, "enas_rnn: cell needs at least one node, got " << nodes);
  FamilyRng rng(seed);
  EnasRnnCell c;
  for (int j = 0; j < nodes; ++j) {
    c.input.push_back(j == 0 ? 0 : static_cast<int>(rng.range(0, j - 1)));
    c.act.push_back(static_cast<RnnAct>(rng.range(0, 3)));
  }
  return c;
}

Graph make_enas_rnn(const EnasRnnOptions& o) {
  check_rnn(o.name, 1, o.hidden, o.vocab, o.seq_len, o.batch);
  const EnasRnnCell cell =
      o.cell.act.empty() ? sample_enas_rnn_cell(o.cell_nodes, mix64(o.seed)) : o.cell;
  const size_t n = cell.act.size();
  PLACER_CHECK(cell.input.size() == n,
               o.name << ": cell has " << cell.input.size() << " inputs for " << n << " nodes");
  for (size_t j = 1; j < n; ++j) {
    PLACER_CHECK(cell.input[j] >= 0 && static_cast<size_t>(cell.input[j]) < j,
                 o.name << ": cell node " << j << " reads node " << cell.input[j]
                        << " (must be below " << j << ")");
  }
  const int64_t b = o.batch, h = o.hidden;
  const double bh = d(b) * d(h);
  const std::vector<int64_t> bh_shape = {b, h};
  GraphMaker m(o.name, b, o.dtype);
  const TensorId tokens = m.tensor("tokens", {b, o.seq_len}, DType::kI64);
  const TensorId labels = m.tensor("labels", {b, o.seq_len}, DType::kI64);
  const std::vector<TensorId> xs = embed(m, "embedding", tokens, b, o.seq_len, h, o.vocab);
  std::vector<TensorId> ws;
  for (size_t j = 0; j < n; ++j) {
    const int64_t in = j == 0 ? 2 * h : h;
    ws.push_back(m.param("cell.node" + std::to_string(j) + ".weights", "cell", -1, {in, 2 * h}));
  }
  std::vector<char> used(n, 0);
  for (size_t j = 1; j < n; ++j) used[static_cast<size_t>(cell.input[j])] = 1;
  TensorId hprev = m.act("cell.h0", bh_shape);
  std::vector<TensorId> hs, node_out(n);
  for (int64_t t = 0; t < o.seq_len; ++t) {
    const std::string p = "cell" + step(t);
    for (size_t j = 0; j < n; ++j) {
      const std::string np = p + ".node" + std::to_string(j);
      const TensorId in = j == 0 ? hprev : node_out[static_cast<size_t>(cell.input[j])];
      std::vector<TensorId> mm_in = {in, ws[j]};
      if (j == 0) mm_in.insert(mm_in.begin(), xs[static_cast<size_t>(t)]);
      const int64_t width = j == 0 ? 2 * h : h;
      const TensorId cz = m.op(np + ".matmul", "MatMul", "cell", -1, mm_in, {b, 2 * h},
                               2 * d(b) * d(width) * d(2 * h));
      const std::vector<TensorId> parts =
          m.op_multi(np + ".split", "Split", "cell", -1, {cz}, {bh_shape, bh_shape}, 0);
      const TensorId c = m.op(np + ".gate", "Sigmoid", "cell", -1, {parts[0]}, bh_shape,
                              kFlopsPerElemSigmoid * bh);
      TensorId f = parts[1];
      switch (cell.act[j]) {
        case RnnAct::kTanh:
          f = m.op(np + ".tanh", "Tanh", "cell", -1, {f}, bh_shape, kFlopsPerElemTanh * bh);
          break;
        case RnnAct::kRelu:
          f = m.op(np + ".relu", "Relu", "cell", -1, {f}, bh_shape, kFlopsPerElemRelu * bh);
          break;
        case RnnAct::kSigmoid:
          f = m.op(np + ".sigmoid", "Sigmoid", "cell", -1, {f}, bh_shape,
                   kFlopsPerElemSigmoid * bh);
          break;
        case RnnAct::kIdentity:
          break;
      }
      node_out[j] = m.op(np + ".highway", "Mul", "cell", -1, {c, f, in}, bh_shape, 3 * bh);
    }
    std::vector<TensorId> loose;
    for (size_t j = 0; j < n; ++j) {
      if (!used[j]) loose.push_back(node_out[j]);
    }
    hprev = m.op(p + ".output", "Add", "cell", -1, loose, bh_shape,
                 d(static_cast<int64_t>(loose.size())) * bh);
    hs.push_back(hprev);
  }
  project_and_loss(m, "softmax", hs, labels, b, h, o.vocab);
  return m.build();
}

}  // namespace placer
