#pragma once
// The tensors that cross between the units of a graph (chain units of pipeline-dp, its folded
// stages, the forward nodes of the stage-load objective): one count that every stage cost of
// the pipeline placers reads, so that they agree on what a border moves.
//
// A tensor crosses when a forward op makes it and forward ops of other units read it (an
// activation), or a backward op makes it and backward ops of other units read it (a gradient
// sent back). Tensors a phase makes for another phase (saved activations, parameter
// gradients for the update) stay where they are made.

#include <cstdint>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

/// One tensor that crosses out of its producer's unit.
struct BorderTensor {
  int from = 0;              ///< the producer's unit
  std::vector<int> readers;  ///< per reading op in another unit, its unit (consumer order;
                             ///< a unit read by two ops appears twice)
  uint64_t bytes = 0;
  bool gradient = false;    ///< made and read by backward ops; else a forward activation
  bool from_input = false;  ///< made by an op of category input (weights, data, constants)
};

/// Every crossing tensor of `g` in op order, then output order. unit_of: per op its unit, or
/// -1 for none (its tensors and reads are left out).
std::vector<BorderTensor> border_tensors(const Graph& g, const std::vector<int>& unit_of);

/// How often a cut is crossed per byte of activation when gradients are not counted apart:
/// 2 for a graph with a backward pass (the activation forward, its gradient back), 1 for a
/// forward-only graph (inference, or a graph placed without expansion).
int border_trips(const Graph& g);

/// The bytes over each cut of a chain of units (cut j lies between units j - 1 and j; 0 and
/// `units` are the chain's ends and carry none), each tensor once per cut it spans. Tensors
/// of input ops are left out: a chain keeps them with their first reader.
struct ChainCutBytes {
  std::vector<double> forward;  ///< activations made before the cut, read after it
  std::vector<double> back;     ///< gradients made after the cut, read before it
};
ChainCutBytes chain_cut_bytes(const std::vector<BorderTensor>& tensors, int units);

}  // namespace placer
