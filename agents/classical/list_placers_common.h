#pragma once
// Shared machinery of the list-scheduling placers (agents/classical/list_placers.cpp): per-op times on
// every problem device, colocation anchors, a memory estimate, a schedule timeline and the
// final simulator check with its memory-balancing fallback.
//
// Device numbers inside this machinery are indices into ListContext::devices (0..k-1); the
// plan maps them back to cluster device ids.

#include <cstdint>
#include <string>
#include <vector>

#include "agents/api/placer.h"

namespace placer {
namespace list_sched {

struct ListContext {
  const Problem* problem = nullptr;
  const Graph* graph = nullptr;
  std::vector<int> devices;     ///< cluster device id of each index
  int k = 0;
  std::vector<double> time;     ///< n * k: op_time of op o on device index j
  /// Colocation anchor of every op: the end of its forward_op chain (itself when it has
  /// none, or when that op comes later in topological order). Followers (anchor != op)
  /// go wherever their anchor goes.
  std::vector<OpId> anchor;
  /// Memory estimate charged when an anchor is placed: resident bytes (placer.h) of the
  /// anchor and all its followers + the anchor's output activations (kept for backward) +
  /// its workspace. 0 for followers (already charged to their anchor).
  std::vector<uint64_t> mem;
  std::vector<uint64_t> capacity;  ///< memory of each device index
  uint64_t total_resident = 0;
  uint64_t total_mem = 0;          ///< sum of mem
  uint64_t total_capacity = 0;

  double t(OpId o, int j) const { return time[static_cast<size_t>(o) * k + j]; }
  bool is_anchor(OpId o) const { return anchor[o] == o; }
};

/// Builds the context. Throws placer::Error when the problem has no devices.
ListContext make_context(const Problem& p);

/// Throws placer::Error "graph 'G' needs X resident (...), cluster has Y on N devices" when
/// the resident bytes exceed the total capacity (no placement can fit).
void check_fits_somewhere(const ListContext& c);

/// Bytes flowing along each distinct (pred -> op) edge: pairs (pred, bytes) of `op`'s
/// inputs, graph inputs skipped.
std::vector<std::pair<OpId, uint64_t>> in_edges(const Graph& g, OpId op);

/// A timeline of placed ops (non-insertion list scheduling: each device runs its ops in
/// the order they were placed).
struct Timeline {
  explicit Timeline(const ListContext& c);
  const ListContext& c;
  std::vector<int> dev;          ///< device index of each op, -1 = unplaced
  std::vector<double> finish;    ///< finish time of each placed op
  std::vector<double> ready;     ///< per device index: when its last op ends
  std::vector<uint64_t> used;    ///< per device index: estimated memory
  bool overflow = false;         ///< some op was placed where it did not fit (estimate)

  /// Earliest time all inputs of `o` can be on device index j (transfers included).
  double arrival(OpId o, int j) const;
  /// Whether `o` fits on j under the estimate (followers always do).
  bool fits(OpId o, int j) const { return used[j] + c.mem[o] <= c.capacity[j]; }
  /// Device index of `o`'s anchor when `o` is a follower whose anchor is placed, else -1.
  int forced(OpId o) const { return c.is_anchor(o) ? -1 : dev[c.anchor[o]]; }
  /// Places o on j starting at max(ready[j], start_at); returns the finish time.
  double place(OpId o, int j, double start_at);
  /// Earliest-finish choice for `o` among fitting devices (its forced device when it has
  /// one, `only` when >= 0); when nothing fits, the device with most room. Returns j.
  int best_finish_device(OpId o, int only = -1) const;
};

/// Places the ops in topological order with Timeline::best_finish_device (pinned ops, when
/// pin_device[o] >= 0, go there if they fit). Returns the device index per op.
std::vector<int> greedy_finish_schedule(const ListContext& c, const std::vector<int>& pin_device);

/// Memory balancing: anchors in topological order fill device after device up to a share
/// of the estimated memory proportional to capacity (Baechi's m-TOPO); when that overflows
/// a device under the estimate, worst-fit decreasing by memory instead. Followers follow.
std::vector<int> memory_balanced(const ListContext& c);

/// Device index per op -> plan over cluster device ids.
Plan to_plan(const ListContext& c, const std::vector<int>& dev_index, const std::string& method);

/// Simulates the plan; when it runs out of memory, falls back to memory_balanced (and keeps
/// whichever of the two does not OOM; the fallback when both do, the caller reports it).
Plan check_memory(const ListContext& c, const std::vector<int>& dev_index,
                  const std::string& method);

}  // namespace list_sched
}  // namespace placer
