#pragma once
// Context parallelism's ring attention in numbers (simulator/context_parallel.cpp,
// docs/parallelism.md#context-parallelism).

namespace placer {

/// Seconds of one ring-attention instance that no compute hides, with `cp` ranks, each ring
/// step computing `block_compute` seconds while the next KV chunk takes `kv_transfer`
/// seconds to arrive: forward (cp-1) x max(0, x - c); backward, where the KV chunk and its
/// gradient travel together and the last gradient returns after the ring,
/// (cp-1) x max(0, 2x - c) + x. 0 for cp < 2.
double context_parallel_p2p_exposed(int cp, double block_compute, double kv_transfer,
                                    bool backward);

}  // namespace placer
