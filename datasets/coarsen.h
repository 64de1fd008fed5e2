#pragma once
// Coarsening: groups of ops that are placed together, and the coarse graph of the groups.
//
// Placers work on a few hundred groups rather than tens of thousands of ops (ColocRL,
// Mirhoseini et al. 2017; Placeto, Addanki et al. 2019; GDP, Zhou et al. 2019). Three steps,
// each optional (docs/coarsening.md has the algorithm and the acyclicity argument):
//  1. colocation: an op, its gradient ops and its optimizer update (Op::forward_op links)
//     and all ops sharing a non-empty Op::group form one group;
//  2. fusion: a group whose forward outputs feed a single other group is merged into it
//     when one of the two is element-wise / data movement (chains of Add, Relu, Reshape...);
//  3. merging down to `target_groups` by contracting the best-rated edge whose contraction
//     keeps the graph acyclic (same module scope first, then bytes saved per unit of work).
//
// A group of a training step holds forward, backward and optimizer ops, and contracting all
// of them into one node would create cycles (forward edges run A -> B, gradients B -> A).
// So each group becomes one coarse op per phase: "<group>" (forward), "<group>/grad"
// (backward), "<group>/update" (optimizer), linked by Op::forward_op and sharing
// Op::group = the group name, exactly like the ops of one layer in the fine training step.
// A forward-only graph gets exactly one coarse op per group.
//
//   CoarsenOptions opts;
//   opts.target_groups = 256;
//   Coarsening c = coarsen(step, opts);
//   Plan fine = expand_group_plan(c, step, plan_on_c_coarse);
//   save_graph_json(with_group_names(step, c), "step_with_groups.graph.json");

#include <cstdint>
#include <string>
#include <vector>

#include "src/graph/graph.h"
#include "src/plan/plan.h"

namespace placer {

struct CoarsenOptions {
  /// Step 1: colocate forward op + gradient ops + update, and ops sharing an Op::group.
  bool colocate = true;
  /// Step 2: fuse element-wise / data-movement chains into their neighbours.
  bool fuse_elementwise = true;
  /// Step 3: merge until at most this many groups remain; 0 = no merging.
  int target_groups = 0;
  /// Size of an op for balancing: max(flops, flops_per_byte * bytes accessed) (a roofline
  /// with the machine balance of a reference GPU; kInput ops weigh 0).
  double flops_per_byte = 16;
  /// A merge whose result would exceed balance * (total work / target_groups) is tried
  /// only after every merge that stays below it.
  double balance = 2.0;
};

/// What each step did (for reports).
struct CoarsenStats {
  size_t ops = 0;
  size_t groups_after_colocation = 0;  ///< = ops when colocate is off
  size_t groups_after_fusion = 0;      ///< = groups_after_colocation when fusion is off
  size_t groups = 0;                   ///< final
  size_t rejected_merges = 0;          ///< candidate merges refused because of a cycle
  size_t relabels = 0;                 ///< full re-labelling of the topological keys
};

struct Coarsening {
  /// Group of every fine op (0 .. num_groups - 1). Groups are numbered in the order of
  /// their lowest op id.
  std::vector<int> group_of_op;
  /// Fine ops of every group, ascending ids.
  std::vector<std::vector<OpId>> ops_of_group;
  /// Unique readable name of every group (see docs/coarsening.md: the shared Op::group, the
  /// module scope, or the first op's name).
  std::vector<std::string> group_names;
  /// The coarse graph: one op per (group, phase); a DAG with the name, batch size and
  /// training-step flag of the fine graph.
  Graph coarse;
  /// Coarse op of every fine op.
  std::vector<OpId> coarse_op_of_op;
  /// Group of every coarse op.
  std::vector<int> group_of_coarse_op;
  /// Coarse ops of every group, ascending ids.
  std::vector<std::vector<OpId>> coarse_ops_of_group;
  CoarsenStats stats;

  size_t num_groups() const { return ops_of_group.size(); }
};

/// Groups the ops of `g` and builds the coarse graph. Deterministic. Throws ValidationError
/// for bad options (negative target, non-positive balance).
Coarsening coarsen(const Graph& g, const CoarsenOptions& options = {});

/// A plan on the coarse graph that puts every coarse op of group k on device_of_group[k].
Plan plan_from_group_devices(const Coarsening& c, const std::vector<int>& device_of_group);

/// Maps a plan on `c.coarse` to a plan on `fine` (the graph `c` was made from):
///  - placement: every fine op takes the device of its coarse op (empty stays empty);
///  - pipeline: a stage holds the fine forward ops of its coarse forward ops (in the fine
///    graph's topological order); micro-batches and schedule are copied;
///  - data_parallel: copied;
///  - partitions: a coarse op made of one fine forward op maps exactly; a batch (dim 0)
///    split of a larger group splits each of its fine forward ops whose first output can
///    be split that way (the others run unsplit on the group's device); other splits of
///    multi-op groups have no meaning per op and throw ValidationError;
///  - method is copied; graph_name is fine.name(); predicted is cleared (it was for the
///    coarse graph).
Plan expand_group_plan(const Coarsening& c, const Graph& fine, const Plan& coarse_plan);

/// A copy of `fine` whose Op::group is the coarse group name of every op, so that a plan
/// file can place whole groups (`placement.groups`, docs/formats/plan.md). Ids, names and
/// everything else are unchanged.
Graph with_group_names(const Graph& fine, const Coarsening& c);

/// Scope shared by two module paths, component-wise ("a.b.c", "a.b.d" -> "a.b"; "a.b",
/// "a.bc" -> "a"); components are separated by '.' or '/'.
std::string common_scope(const std::string& a, const std::string& b);

}  // namespace placer
