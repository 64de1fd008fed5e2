// The kinds and sizes of a partitioned op's `auto` collectives (partition_collective_rules.h).
#include "simulator/partition_collective_rules.h"

#include <algorithm>

namespace placer {

namespace {

uint64_t ceil_div_bytes(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// 2^(number of levels before `skip` for which `shards(level dim)` holds). Level l's
// collective works on what the earlier levels left: a recursive all-gather of [0, 0, 0]
// over 8 devices costs B/2 + B/4 + B/8 per device (= an 8-way ring's 7/8 B), not 3 x B/8.
template <typename Pred>
uint64_t other_levels_div(const OpPartition& q, size_t skip, Pred shards) {
  uint64_t d = 1;
  for (size_t l = 0; l < skip && l < q.levels.size(); ++l) d *= shards(q.levels[l]) ? 2 : 1;
  return d;
}

// Recursive halving: one collective per level, each on the level's share of the tensor (its
// bytes divided by 2 per earlier level that shards it).
void halving_steps(const OpPartition& q, bool backward, uint64_t act, uint64_t grad,
                   std::vector<PartitionCollectiveStep>* out) {
  for (size_t l = 0; l < q.levels.size(); ++l) {
    const int dl = q.levels[l];
    const int level = static_cast<int>(l);
    if (backward) {
      // Input gradients are sliced by batch / contraction levels, partial sums otherwise.
      const uint64_t b = ceil_div_bytes(act, other_levels_div(q, l, [](int d) { return d <= 0; }));
      out->push_back({level, dl >= 1 ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather, b});
      // Parameter gradients: partial sums across batch levels only; `grad` is already the
      // shard the non-batch levels leave.
      if (dl == 0) out->push_back({level, CollectiveKind::kAllReduce, grad});
    } else {
      // Outputs are sliced by every level except contraction ones (partial sums).
      const uint64_t b = ceil_div_bytes(
          act + grad, other_levels_div(q, l, [](int d) { return d != OpPartition::kReduceDim; }));
      out->push_back(
          {level,
           dl == OpPartition::kReduceDim ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather,
           b});
    }
  }
}

// One split over all the partition's devices.
void split_steps(const OpPartition& q, bool backward, uint64_t act, uint64_t grad,
                 std::vector<PartitionCollectiveStep>* out) {
  if (backward) {
    // Input gradients: partial sums over an output-dim split (all-reduce), slices of a batch
    // or contraction split (all-gather), none under sharded_input. Parameter gradients:
    // partial sums only under a batch split (all-reduce); sharded otherwise.
    const CollectiveKind k = q.dim >= 1 ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather;
    out->push_back({-1, k, q.sharded_input ? 0 : act});
    if (q.dim == 0) out->push_back({-1, CollectiveKind::kAllReduce, grad});
  } else {
    const CollectiveKind k =
        q.dim == OpPartition::kReduceDim ? CollectiveKind::kAllReduce : CollectiveKind::kAllGather;
    out->push_back({-1, k, q.sharded_output ? 0 : act + grad});
  }
}

}  // namespace

std::vector<PartitionCollectiveStep> auto_partition_collectives(const OpPartition& q, bool backward,
                                                                uint64_t act, uint64_t grad) {
  std::vector<PartitionCollectiveStep> steps;
  if (q.levels.empty()) {
    split_steps(q, backward, act, grad, &steps);
  } else {
    halving_steps(q, backward, act, grad, &steps);
  }
  steps.erase(std::remove_if(steps.begin(), steps.end(),
                             [](const PartitionCollectiveStep& s) { return s.bytes == 0; }),
              steps.end());
  return steps;
}

}  // namespace placer
