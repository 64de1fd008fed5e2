#pragma once
// What the two partition-dp chains (one split per op over k devices, partition_dp.cpp; one
// dim per halving level, partition_levels.cpp) compute the same way: which ops form the
// chain, the dims an op may be split on, the collectives' and the spread's times, and the
// bytes one chain op hands to the next.

#include <cstddef>
#include <vector>

#include "simulator/cost_model.h"
#include "src/graph/graph.h"

namespace placer {

/// Whether output `t` can be split `ways` ways on `dim`: the contraction dim always, a
/// tensor of unknown shape only on the batch dim 0, else a dim of at least `ways` (or of
/// unknown size).
bool splittable(const Tensor& t, int dim, size_t ways);

/// The ops of a chain: forward ops with work that are not inputs.
bool is_chain_op(const Op& op);

/// The dims a chain offers for `op` split `ways` ways: the batch dim 0 and the output
/// channel (1 for a conv, else the last) where its first output allows it, then the
/// contraction dim (OpPartition::kReduceDim) of a matmul, conv or reduction.
std::vector<int> chain_split_dims(const Graph& g, const Op& op, size_t ways);

/// Time of collective `kind` of `bytes` over `group` (0 when there are no bytes).
double chain_collective_time(const CostModel& cost, CollectiveKind kind,
                             const CollectiveGroup& group, double bytes);

/// Bytes of the outputs of `from` that `to` consumes.
double bytes_handed(const Graph& g, OpId from, OpId to);

/// Sending `bytes` from devices[0] to each other device: the slowest transfer (0 for none).
double spread_time(const CostModel& cost, const std::vector<int>& devices, double bytes);

}  // namespace placer
