#pragma once
// The stage-load objective of the pipeline-split literature, extended to every plan a placer
// emits, and its exact optimum by exhaustive search on small graphs.
//
// A plan is read as an assignment of the forward nodes of an IdealSplitProblem (the forward
// ops of a training step) to stage labels 0..D-1 (pipeline stages, or the devices of a plain
// placement) and a device count per label (its replicas; data-parallel replicas of the whole
// plan multiply every stage's). The load of a stage on r devices is stage_load(work / r,
// transfers / r + all-reduce) (each replica runs, and moves, its share of the samples), the
// all-reduce being that of its parameters' gradients among its
// r devices (0 for one device or no parameters): the sum under `overlap: false`, the larger
// of compute and communication with copy engines; the objective is the largest load. Every plan
// of whole ops scored by plan_stage_load lies in the space exhaustive_stage_load searches (every
// assignment of n nodes to D labels, every device count per used label summing to at most D), so
// its optimum is <= every such plan's score by construction, not only <= the contiguous splits'
// (solve_ideal_split). A plan that splits ops over devices (op partitions, NodeSplits) lies
// outside that space and can score below it.
#include <cstdint>
#include <vector>

#include "agents/api/placer.h"
#include "agents/classical/pipeline_ideals.h"
#include "simulator/cost_model.h"

namespace placer {

/// The objective's data: the split problem of a graph and what replicas cost.
struct StageLoadModel {
  IdealSplitProblem split;       ///< work, transfers and edges of the forward nodes
  std::vector<uint64_t> params;  ///< per node: parameter bytes of its forward op
  const CostModel* cost = nullptr;
  /// groups[r]: the problem's first r devices, where a stage of r replicas all-reduces
  /// (index 0 and 1 unused).
  std::vector<CollectiveGroup> groups;
  int max_replicas() const { return static_cast<int>(groups.size()) - 1; }
  /// The samples of a step (> 0: a stage's replicas must divide it, as every method's plan
  /// splits the batch evenly; 0: any count).
  int64_t batch = 0;
  bool allows(int replicas) const { return replicas == 1 || batch <= 0 || batch % replicas == 0; }
  /// The gradient all-reduce of `bytes` among `replicas` devices (0 for one device).
  double allreduce_time(int replicas, uint64_t bytes) const;
  /// One output tensor of a node read by forward ops of other nodes.
  struct Activation {
    double time = 0;           ///< moving it once
    std::vector<int> readers;  ///< the nodes that read it (sorted)
  };
  /// Per node: its activations, each moved to every other label that reads it (charged there
  /// and once more to the sender per such label), as the simulator moves tensors. Empty:
  /// split.send per node, charged once to every label on either side of a border its output
  /// crosses (the split problem's rule; forward graphs, hand-made models).
  std::vector<std::vector<Activation>> activations;
  /// Per node and successor (aligned with split.succs): the time of the gradients the
  /// successor's backward ops send back to the node's, charged to both sides of every such
  /// edge that crosses (per edge, as the simulator moves them: a coarse successor can send
  /// several partial gradients of one activation). Empty: none apart from split.send.
  std::vector<std::vector<double>> back;
};

/// The model of a problem: ideal_split_problem on its first two devices, `overlap` as the
/// devices say (transfers_overlap), parameter bytes of every forward op, the graph's batch,
/// and for a training step the transfers as the simulator makes them: each activation to the
/// labels that read it, the gradients of each edge back (activations, back).
StageLoadModel stage_load_model(const Problem& problem);

/// Forward nodes split over several labels (a plan's op partitions), outside the space the
/// exhaustive search holds. A split node's work and parameters are shared evenly over its
/// labels, each of which is also charged the node's collectives; its activations are held on
/// every one of its labels (after the forward collective) and sent from its stage_of label to
/// the other labels that read them; a reader split over labels receives on each of them.
struct NodeSplits {
  std::vector<uint64_t> labels;     ///< per node: a mask of its labels (0: whole, on stage_of)
  std::vector<double> collectives;  ///< per node: its forward and backward collectives' time
  bool any() const {
    for (uint64_t l : labels) {
      if (l != 0) return true;
    }
    return false;
  }
};

/// The largest stage load of `stage_of` (a label per node) with replicas[label] devices
/// per label (labels absent from stage_of are ignored), with the nodes `splits` splits.
double assignment_load(const StageLoadModel& m, const std::vector<int>& stage_of,
                       const std::vector<int>& replicas, const NodeSplits* splits = nullptr);

/// A plan read as an assignment (stage_of, replicas per label): a pipeline's stages in order
/// (ops of no stage and plain placements: the device of the op), devices per stage, times
/// the data-parallel replicas.
void plan_assignment(const Graph& g, const Plan& plan, std::vector<int>* stage_of,
                     std::vector<int>* replicas);

/// The split nodes of a plain placement's op partitions (not replicated, collectives implied
/// by the split; the labels are the partition's devices), with the collectives the simulator
/// runs after each instance (docs/simulator.md, "Operator partitioning") at the step's tensor
/// sizes, per level of a recursive halving: forward an all-gather of the output (all-reduce
/// for a contraction split), backward the input gradients' all-reduce (output-dim split) or
/// all-gather, plus the parameter gradients' all-reduce under a batch split. Pipelined plans
/// and other partitions: none split.
NodeSplits plan_splits(const StageLoadModel& m, const Graph& g, const Plan& plan);

/// assignment_load of plan_assignment and plan_splits.
double plan_stage_load(const StageLoadModel& m, const Graph& g, const Plan& plan);

struct StageLoadOptimum {
  double load = 0;
  std::vector<int> stage_of;  ///< per node
  std::vector<int> replicas;  ///< per label (0: unused)
  int64_t assignments = 0;    ///< partial assignments the search visited
};

/// The exact optimum over every assignment of the nodes to `labels` labels (labels <= the
/// model's devices) and every device count per used label (sum <= labels, each one the
/// model allows: dividing the batch): a depth-first
/// search over the nodes in order that cuts a partial assignment when its lower bound (the
/// best device counts for the work and transfers so far, no all-reduce) reaches the best
/// plan found, starting from the best contiguous split and the whole graph
/// on every device. Without extra work (IdealSplitExtra) the labels are interchangeable and
/// only one labelling of each partition is visited. Throws Error past `max_visits` partial
/// assignments.
StageLoadOptimum exhaustive_stage_load(const StageLoadModel& m, int labels,
                                       int64_t max_visits = 50'000'000);

}  // namespace placer
