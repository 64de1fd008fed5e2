#pragma once
// Recurrent families unrolled over time, as TensorFlow graphs of the placement literature
// are: RNN language models (GDP's 2/4/8-layer RNNLM, Zhou et al. 2019), GNMT-style
// encoder-decoder translation models with attention (Wu et al. 2016; Placeto's "nmt" and
// GDP's GNMT), and ENAS recurrent cells on Penn Treebank (Pham et al. 2018; Placeto's "ptb").
//
// Weights shared across time steps are "Parameter" ops (one per weight matrix, owning the
// parameter bytes) read by every step, so parameters are counted once.
// Token ids enter as one Gather over the whole sequence (the embedding, owning its table)
// and a Split into per-step [b, e] tensors.
//
// LSTM cell at step t (scope "<rnn>.layer.<l>", names "<rnn>.layer.<l>.t<t>.<op>"), unfused
// (TF BasicLSTMCell-like, 12 ops):
//   concat (Concat of the inputs and h[t-1]), gates (MatMul [b, in + h] x [in + h, 4h]),
//   split (Split in 4), i, f, o (Sigmoid), g (Tanh), fc (Mul f * c[t-1]), ig (Mul i * g),
//   c (Add), tanh_c (Tanh), h (Mul o * tanh(c)).
//   FLOPs: 2*b*(in + h)*4h + 24*b*h (3 sigmoids and 2 tanh at 4/element, 3 Mul and 1 Add).
// Fused (cuDNN-like, fused_cells = true): one op "cell" of type LSTM with the same FLOPs,
// reading the inputs, h[t-1], c[t-1] and the weight; writing h[t] and c[t].
// Weight of layer l: (in + h) x 4h + 4h (bias). h[-1] and c[-1] are graph inputs (zero state).

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

/// RNN language model: embedding -> `layers` LSTM layers unrolled over seq_len steps -> per
/// step a projection to the vocabulary (MatMul with one shared weight) -> one loss over all
/// steps. Ops (unfused): 2 + layers + 12 * layers * seq_len + 1 + seq_len + 1.
struct RnnlmOptions {
  int layers = 2;  ///< GDP uses 2, 4, 8
  int64_t hidden = 1024;
  int64_t embedding = 0;  ///< 0 = hidden
  int64_t vocab = 10000;  ///< Penn Treebank
  int64_t seq_len = 35;
  int64_t batch = 64;
  bool fused_cells = false;
  DType dtype = DType::kF32;
  std::string name = "rnnlm";
};
Graph make_rnnlm(const RnnlmOptions& options = {});

/// GNMT-style translation model. Encoder: embedding, layer 0 bidirectional (forward and
/// backward cells, a per-step Concat), layers >= 1 unidirectional, residual Adds from layer
/// `residual_from` on, "encoder.memory" (Concat of the top outputs, [b, S, h]) and
/// "attention.keys" (MatMul memory x W1). Decoder: embedding; layer 0 reads [y[t],
/// context[t-1]] (context[-1] a zero input); attention per step from layer 0's output
/// (query MatMul, Add with the keys, Tanh, scores MatMul with v, Softmax, context MatMul:
/// 6 ops, Bahdanau-style); layers >= 1 read [x, context[t]]; per-step projection to the
/// vocabulary; one loss. Ops (unfused, L = layers, r = max(0, L - residual_from)):
///   encoder 2 + (L + 1) + 12 (L + 1) S + S + r S + 2
///   decoder 2 + L + 12 L T + r T + 6 T + 2 + 1 + T + 1 (loss)
/// Unfused GNMT-8 (L = 8, residual_from = 2): 27 + 224 n ops for S = T = n, so 50,203 ops
/// for n = 224 (GDP's largest graphs have ~50k ops).
struct GnmtOptions {
  int layers = 4;         ///< encoder and decoder layers (GNMT: 8)
  int64_t hidden = 1024;  ///< LSTM width = embedding width
  int64_t vocab = 32000;
  int64_t src_len = 50;  ///< encoder steps S
  int64_t tgt_len = 50;  ///< decoder steps T
  int64_t batch = 128;
  int residual_from = 2;  ///< layers with index >= this (>= 2) get a residual Add (GNMT: 2)
  bool fused_cells = false;
  DType dtype = DType::kF32;
  std::string name = "gnmt";
};
Graph make_gnmt(const GnmtOptions& options = {});

/// Activation of an ENAS recurrent cell node.
enum class RnnAct : uint8_t { kTanh, kRelu, kIdentity, kSigmoid };
const char* to_string(RnnAct a);

/// ENAS recurrent cell: node 0 reads x[t] and h[t-1]; node j >= 1 reads node input[j] < j.
/// Every node is a highway unit: [c, z] = MatMul(in, W) (in = [x, h] for node 0, else the
/// node's input), Split, c = Sigmoid, f = act(z) (no op for identity), out = c * f +
/// (1 - c) * in (one Mul op, 3 FLOPs/element). h[t] = average of the loose ends (an Add).
struct EnasRnnCell {
  std::vector<int> input;   ///< per node; input[0] is ignored
  std::vector<RnnAct> act;  ///< per node
};
EnasRnnCell sample_enas_rnn_cell(int nodes, uint64_t seed);

/// ENAS RNN language model on Penn Treebank: embedding, the cell unrolled over seq_len
/// steps (scope "cell", op names "cell.t<t>.node<j>.<op>"), per-step projection to the
/// vocabulary, one loss. Ops: 2 + nodes (weights) + seq_len * (sum over nodes of 5, or 4
/// for identity nodes, + 1 output average) + 1 + seq_len + 1.
struct EnasRnnOptions {
  int cell_nodes = 8;     ///< ENAS: 12
  int64_t hidden = 1000;  ///< = embedding width
  int64_t vocab = 10000;
  int64_t seq_len = 35;
  int64_t batch = 64;
  uint64_t seed = 1;  ///< samples the cell when it is empty
  EnasRnnCell cell;
  DType dtype = DType::kF32;
  std::string name = "enas_rnn";
};
Graph make_enas_rnn(const EnasRnnOptions& options = {});

}  // namespace placer
