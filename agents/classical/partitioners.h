#pragma once
// Graph-partitioning placers: `metis` (libmetis k-way) and `scotch` (libscotch static
// mapping onto the device topology), the baselines of ColocRL, GDP and Placeto.
//
// Both work on the same contracted, symmetrized graph (PartitionGraph): one vertex per
// colocation group (an op with its gradient ops and optimizer update, Op::forward_op links,
// plus all ops sharing a non-empty Op::group), edge weight = bytes of the tensors flowing
// between two groups (either direction), vertex weights = compute seconds on a reference
// device and resident memory bytes. docs/partitioners.md describes what is fed to the
// libraries and the memory repair that follows.

#include <cstdint>
#include <string>
#include <vector>

#include "agents/api/placer.h"
#include "agents/common/function_placer.h"
#include "simulator/cost_model.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"

namespace placer {

/// The contracted, symmetrized op graph in CSR form (no self loops, each undirected edge
/// stored in both directions). Integer weights are scaled so that every sum fits in 32 bits.
struct PartitionGraph {
  int num_vertices = 0;
  std::vector<int> vertex_of_op;        ///< group vertex of each op
  std::vector<int32_t> xadj, adjncy;    ///< CSR adjacency
  std::vector<int32_t> adjwgt;          ///< scaled tensor bytes, >= 1
  std::vector<uint64_t> edge_bytes;     ///< unscaled bytes per CSR entry
  std::vector<int32_t> compute_weight;  ///< scaled compute time, >= 1
  std::vector<int32_t> memory_weight;   ///< scaled resident bytes, >= 1
  std::vector<double> compute_seconds;  ///< unscaled, on the reference device
  std::vector<uint64_t> resident;       ///< unscaled resident bytes (agents/api/placer.h)
};

/// Builds the partition graph; compute times are CostModel::op_time on `ref_device`.
PartitionGraph build_partition_graph(const Graph& g, const CostModel& cost, int ref_device);

struct MetisOptions {
  /// Allowed imbalance in 1/1000 (METIS_OPTION_UFACTOR): part weight <= (1 + u/1000) x target.
  int ufactor = 30;
  /// Also run METIS_PartGraphRecursive for k <= 8 and keep the smaller cut.
  bool try_recursive = true;
  /// Balance resident memory too (a second vertex-weight constraint).
  bool balance_memory = true;
  int ncuts = 1;  ///< METIS_OPTION_NCUTS
  /// Devices on several hosts: partition into hosts first, then each host's part into its
  /// devices, so that the cut between hosts (the slow links) is what METIS minimises first.
  bool hierarchical = false;
};

/// METIS partition of `pg` into k parts; `target_fraction` (size k, sums to 1; empty =
/// equal) is each part's share of the compute weight. Returns the part of each vertex.
/// Deterministic for a seed. Throws placer::Error when METIS fails.
std::vector<int> metis_partition(const PartitionGraph& pg, int k, const MetisOptions& options,
                                 uint64_t seed, const std::vector<double>& target_fraction = {});

struct ScotchOptions {
  double imbalance = 0.03;  ///< allowed load imbalance ratio of the mapping strategy
  bool quality = true;      ///< SCOTCH_STRATQUALITY rather than SCOTCH_STRATDEFAULT
};

/// How the target architecture was modelled (for tests and docs).
enum class ScotchArchKind { kComplete, kWeightedComplete, kTreeLeaf };

/// Scotch static mapping of `pg` onto `devices` of `cluster`. Returns, per vertex, an index
/// into `devices`. Architecture: complete graph (one host, equal devices), weighted complete
/// graph (one host, unequal speeds: weights proportional to peak FLOP/s), or a tree-leaf
/// hosts x devices-per-host with link costs inversely proportional to bandwidth (several
/// hosts with the same number of the given devices; otherwise the weighted complete graph).
std::vector<int> scotch_map(const PartitionGraph& pg, const Cluster& cluster,
                            const std::vector<int>& devices, const ScotchOptions& options,
                            uint64_t seed, ScotchArchKind* arch_used = nullptr);

/// Memory repair: moves vertices off devices whose resident bytes exceed their capacity,
/// lightest communication loss first, onto devices with room (preferring the one the vertex
/// talks to most). `part` holds indices into `devices`. Throws placer::Error when the
/// groups cannot fit.
void repair_memory(const PartitionGraph& pg, const Cluster& cluster,
                   const std::vector<int>& devices, std::vector<int>* part);

/// For equal devices on several hosts: maps part p (of a flat k-way partition) to a slot,
/// an index into the problem's devices; host_slots[h] lists host h's slots. Parts that
/// exchange many bytes share a host (greedy, host by host: the seed is the unplaced part
/// with the most traffic, then the part talking most with the host's parts). Returns the
/// slot of each vertex.
std::vector<int> map_parts_to_hosts(const PartitionGraph& pg, const std::vector<int>& part,
                                    const std::vector<std::vector<int>>& host_slots);

/// Relative peak speed of a device (f32 peak FLOP/s), used to size partitions.
double device_speed(const Cluster& cluster, int device);

class MetisPlacer : public OptionsPlacer<MetisOptions> {
 public:
  explicit MetisPlacer(MetisOptions options = {}) : OptionsPlacer("metis", options) {}
  Plan search(const Problem& problem, const SearchBudget& budget) override;
};

class ScotchPlacer : public OptionsPlacer<ScotchOptions> {
 public:
  explicit ScotchPlacer(ScotchOptions options = {}) : OptionsPlacer("scotch", options) {}
  Plan search(const Problem& problem, const SearchBudget& budget) override;
};

}  // namespace placer
