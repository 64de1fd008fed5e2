#pragma once
// Shared between coarsen.cpp (the grouping algorithm) and coarsen_graph.cpp (the coarse
// graph, names, plan mapping). Not part of the public API.

#include <vector>

#include "datasets/coarsen.h"

namespace placer::coarsen_detail {

/// The result of the grouping: every op's part (one coarse op) and every part's group.
struct Partition {
  std::vector<int> part_of_op;     ///< compact part ids, any order
  std::vector<int> group_of_part;  ///< compact group ids, any order
  std::vector<char> part_merged;   ///< the part holds every phase of its group
};

/// Numbers groups and coarse ops by their lowest op id, names them and builds the coarse
/// graph (throws ValidationError if the partition is not acyclic: an internal error).
Coarsening build_coarsening(const Graph& g, const Partition& p, const CoarsenStats& stats);

}  // namespace placer::coarsen_detail
