#pragma once
// Synthetic forward graphs with realistic costs, for examples, tests, benchmarks and the
// training corpora. Every generator is a pure function of its options (random families take
// a seed and use their own PRNG), so the same options give the identical graph everywhere.
//
// Cost conventions (hand-checkable; see docs/training_step.md):
//  - MatMul [m x k] @ [k x n]: 2*m*n*k FLOPs; a weight [k x n] plus bias [n] is k*n + n
//    parameters. Bias additions are folded into the MatMul and not counted as FLOPs, so a
//    transformer layer's MatMuls are exactly 24*b*s*d^2 + 4*b*s^2*d (Narayanan et al. 2021).
//  - Per element: Add / Relu 1 FLOP, LayerNorm 8, Gelu 8, Softmax 5, softmax + cross-entropy
//    loss 5 per logit. Embedding lookup: b*s*d (the position-embedding add).
//  - Tensor bytes = elements * dtype size; activations are batch_scaled, parameters are not.
//
//   TransformerOptions t;
//   t.layers = 12; t.d_model = 768; t.heads = 12; t.seq_len = 512; t.batch = 8;
//   Graph g = make_transformer(t);  // BERT-base-sized forward graph, 12*14 + 4 ops

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

/// Per-element FLOP counts used by the generators (public so tests and docs agree).
inline constexpr double kFlopsPerElemAdd = 1;
inline constexpr double kFlopsPerElemRelu = 1;
inline constexpr double kFlopsPerElemLayerNorm = 8;
inline constexpr double kFlopsPerElemGelu = 8;
inline constexpr double kFlopsPerElemSoftmax = 5;
inline constexpr double kFlopsPerElemLoss = 5;
/// Used by the graph families (datasets/family_*.h): Mul 1, Sigmoid and Tanh 4 (an exp, an
/// add and a division, about), BatchNorm 8 like LayerNorm (mean, variance, normalise, scale
/// and shift); pooling costs one FLOP per window element of each output.
inline constexpr double kFlopsPerElemMul = 1;
inline constexpr double kFlopsPerElemSigmoid = 4;
inline constexpr double kFlopsPerElemTanh = 4;
inline constexpr double kFlopsPerElemBatchNorm = 8;

/// Multi-layer perceptron: x[batch, input] -> (MatMul + Relu) x (layers - 1) -> MatMul
/// -> SoftmaxCrossEntropy loss (the sink). Ops: "layers.<i>.linear", "layers.<i>.relu",
/// "loss"; layer index i on each.
struct MlpOptions {
  int layers = 4;          ///< number of Linear layers (>= 1)
  int64_t input = 1024;    ///< input features
  int64_t hidden = 4096;   ///< width of the hidden layers
  int64_t classes = 1000;  ///< output features of the last layer
  int64_t batch = 64;
  bool bias = true;  ///< add a bias vector to every Linear (parameters only, no FLOPs)
  DType dtype = DType::kF32;
  std::string name = "mlp";
};
Graph make_mlp(const MlpOptions& options = {});

/// Transformer encoder (BERT / GPT style, pre-norm) over token ids [batch, seq_len]:
/// "embedding" (Gather: token + position tables) -> per layer i, with scope
/// "encoder.layer.<i>....": attention.layernorm, attention.self.{query,key,value}, scores
/// (MatMul), softmax, context (MatMul), attention.output.dense, attention.output.residual
/// (Add), intermediate.layernorm, intermediate.dense (d_model -> ffn), intermediate.gelu,
/// output.dense (ffn -> d_model), output.residual (Add) -> "final_layernorm" -> "lm_head"
/// (MatMul to vocab) -> "loss" (SoftmaxCrossEntropy with "labels"; the sink).
/// 14 ops per layer + 4 (embedding, final_layernorm, lm_head, loss). Layer ops carry
/// layer = i; embedding / final_layernorm / lm_head / loss carry layer = -1.
/// Parameters per layer (ffn = 4d, biases on): 12*d^2 + 13*d.
struct TransformerOptions {
  int layers = 2;
  int64_t d_model = 512;
  int64_t heads = 8;  ///< must divide d_model
  int64_t ffn = 0;    ///< 0 = 4 * d_model
  int64_t seq_len = 128;
  int64_t batch = 8;
  int64_t vocab = 32000;
  DType dtype = DType::kF16;
  std::string name = "transformer";
};
Graph make_transformer(const TransformerOptions& options = {});

/// Generic layered random DAG for scale tests: ops in levels of `width`, each op reads
/// fan_in in [min_fan_in, max_fan_in] outputs of the previous `max_skip` levels (at least
/// one from the level right before); level 0 reads the data input "x". A final "loss" op
/// reads every output nobody else reads, so the graph has one sink. n_ops counts every op,
/// the loss included. FLOPs and bytes are log-uniform in their ranges; a param_fraction of
/// the ops own log-uniform parameter bytes. Op types are drawn from MatMul, Conv, Add, Relu,
/// LayerNormalization, Softmax, Concat (category set accordingly). Names "op<k>", scope
/// "level.<l>", layer = l. Linear time; 50k ops in tens of milliseconds.
struct LayeredRandomOptions {
  int n_ops = 1000;  ///< >= 2
  int width = 16;    ///< ops per level (>= 1)
  uint64_t seed = 1;
  int min_fan_in = 1;
  int max_fan_in = 3;
  int max_skip = 2;  ///< how many levels back an input may come from (>= 1)
  double min_flops = 1e6, max_flops = 1e9;
  uint64_t min_bytes = 1 << 10, max_bytes = 16 << 20;  ///< output tensor bytes
  double param_fraction = 0.3;
  uint64_t min_param_bytes = 1 << 10, max_param_bytes = 64 << 20;
  int64_t batch = 32;
  DType dtype = DType::kF32;
  std::string name = "layered_random";
};
Graph make_layered_random(const LayeredRandomOptions& options = {});

/// A chain op0 -> op1 -> ... -> op<n-1> reading the data input "x"; op<n-1> is the sink.
/// Costs are equal unless per-op vectors are given (their size then sets n). Handy for
/// pipeline tests where stage times must be hand-computable. Names "chain.<i>", layer i.
struct ChainOptions {
  int n = 8;
  double flops = 1e9;                        ///< per op, unless per_op_flops is non-empty
  std::vector<double> per_op_flops;          ///< overrides n and flops
  uint64_t activation_bytes = 1 << 20;       ///< each op's output (and "x")
  uint64_t param_bytes = 0;                  ///< per op, unless per_op_param_bytes is non-empty
  std::vector<uint64_t> per_op_param_bytes;  ///< size must match the op count
  std::string op_type = "MatMul";            ///< category follows the type
  int64_t batch = 1;
  DType dtype = DType::kF32;
  std::string name = "chain";
};
Graph make_chain(const ChainOptions& options = {});

}  // namespace placer
