#pragma once
// The token dispatch of expert parallelism (simulator/expert_parallel.cpp): how many copies of
// a token the flex dispatcher (DeepEP / HybridEP) sends where the all-to-all sends one per
// routed expert (docs/simulator.md, "Expert parallelism").

namespace placer {

/// The chance that a token's top_k experts (distinct, out of `experts`) include at least one
/// of a set that receives the share q of the routed copies: 1 - prod_{i<k} (1 - qE / (E - i)).
/// Under uniform routing, with the set m = qE experts, this is 1 - C(E - m, k) / C(E, k); the
/// expected number of destination nodes (ranks) of a token is its sum over the nodes (ranks).
double routed_to_any(double q, int top_k, int experts);

}  // namespace placer
