#pragma once
// Sampling around the best placement found so far: the last part of gdp+stages' decoding,
// after the greedy placement and the independent samples. A policy draws each unit's device
// independently, so its samples rarely move a whole chain of ops together (an embedding's
// lookup and pool, a layer and its activation), which is what list schedulers and annealing
// get right on branchy graphs. A block move re-draws one unit from the policy's own row,
// without its current device, and lets the neighbouring units that shared its old device
// follow it. Torch-free.

#include <random>
#include <vector>

#include "src/graph/graph.h"

namespace placer {

/// For each unit, the units of its ops' predecessors and successors (sorted, without itself).
/// `unit_of_op` maps every op of `graph` to a unit in [0, num_units).
std::vector<std::vector<int>> unit_neighbours(const Graph& graph,
                                              const std::vector<int>& unit_of_op, int num_units);

/// A placement next to `best` (a device per unit): a unit drawn uniformly among those with
/// another device of probability > 0 in `probs` (units x devices, row-major: the policy's
/// distribution) moves to one drawn from that row without its current device; then each
/// neighbouring unit on the moved unit's old device that may go to the new one
/// (probability > 0 in its row) follows with probability 1/2, and so on
/// from every unit that followed. Returns `best` unchanged only when no unit has such a device.
std::vector<int> propose_block_move(const std::vector<int>& best, const std::vector<float>& probs,
                                    int devices, const std::vector<std::vector<int>>& neighbours,
                                    std::mt19937_64& rng);

/// `moves` block moves in a row, each from the placement the previous one made (the first
/// from `best`): the kick that restarts a local search stuck around `best` a few steps away.
std::vector<int> propose_block_moves(const std::vector<int>& best, const std::vector<float>& probs,
                                     int devices, const std::vector<std::vector<int>>& neighbours,
                                     int moves, std::mt19937_64& rng);

}  // namespace placer
