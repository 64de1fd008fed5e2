#pragma once
// Generalizable pipeline cuts (Auto-MAP, Wang et al. 2020, sections 3.5 and 4.5): a graph's
// pipeline-cut problem reduced to three arrays over its forward positions and a device
// topology, coarsened and normalised so that a policy trained on *generated* arrays applies
// to real models without training on them. See docs/rainbow_pp_inference.md.
//
// Per forward position i (the positions of PipelineEnv, env/pipeline_env.h):
//   C[i] compute seconds of the ops attached to i (forward + backward + optimizer),
//   A[i] activation bytes crossing a cut at i (forward tensors made at positions < i and
//        consumed at >= i; A[0] = 0),
//   W[i] parameter (gradient) bytes attached to i.
// A and W are converted to seconds over the fastest link of the topology (bytes / peak
// bandwidth) so that the paper's single MAX keeps the three arrays comparable.
// Transform (paper 4.5.1): prefix sums of C and W; 128 evenly spaced coarse points (point j
// ends at boundary b_j = round((j + 1) F / 128), b_127 = F; a cut "at point j" puts the
// positions < b_j in earlier stages; real graphs snap b_j to the nearest pivot); one MAX =
// max(C'[127], max A', W'[127]) divides all three into [0, 1].
//
// The array MDP (ArrayPipelineEnv): S - 1 cuts among the 127 inner points, increasing; the
// terminal reward is L(balanced) / L(cuts) with L the analytic 1F1B pipeline length below
// (pipeline_length). Stages get fixed contiguous device groups in linear device order,
// host-aligned as PipelineEnv does (stage_device_counts).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "simulator/cost_model.h"
#include "src/cluster/cluster.h"
#include "src/graph/graph.h"

namespace placer {

/// Coarse points of the transform (the paper's 128).
constexpr int kCoarsePoints = 128;
/// Cut actions: the inner coarse points 0 .. 126 (point 127 is the end of the model).
constexpr int kCutActions = kCoarsePoints - 1;

/// Raw per-position arrays (all three of size F, the number of positions).
struct PositionArrays {
  std::vector<double> compute;     ///< C: seconds
  std::vector<double> activation;  ///< A: crossing a cut at position i (A[0] = 0)
  std::vector<double> params;      ///< W: per position
};

/// The raw arrays of a training-step graph on the positions of `position_of_op` (size
/// num_ops, values in [0, F), as PipelineEnv::position_of_op()), compute estimated on
/// `device`. A and W in bytes. ValidationError on a size mismatch or a position out of range.
PositionArrays graph_position_arrays(const Graph& graph, const CostModel& cost,
                                     const std::vector<int>& position_of_op, int num_positions,
                                     int device);

/// The coarse, normalised arrays.
struct CoarseArrays {
  std::vector<float> C, A, W;  ///< kCoarsePoints each, in [0, 1]
  /// Per coarse point: the real cut boundary b_j (positions before the cut); b_127 = F.
  std::vector<int> boundary;
  /// Per coarse point: 1 = may be a cut (0 < b_j < F, and the first point of its boundary).
  std::vector<uint8_t> allowed;
  double scale = 0;  ///< MAX (the divisor; 1 when all arrays are zero)
  int positions = 0;  ///< F
};

/// The paper's transform of raw arrays (sizes F >= 1, equal; values finite and >= 0). When
/// `snap` is non-empty (increasing boundaries in (0, F), e.g. PipelineEnv's pivots), every
/// inner b_j moves to the nearest of them (ties: the lower). ValidationError on bad input.
CoarseArrays coarsen_arrays(const PositionArrays& raw, const std::vector<int>& snap = {});

/// A device topology in linear order: host of every device and the bandwidth matrix,
/// normalised so that the fastest link between two distinct devices is 1 (diagonal 1).
struct ArrayTopology {
  std::vector<int> host;         ///< per device
  std::vector<double> bandwidth;  ///< n x n, row-major
  int num_devices() const { return static_cast<int>(host.size()); }
  double bw(int a, int b) const {
    return bandwidth[static_cast<size_t>(a) * host.size() + static_cast<size_t>(b)];
  }
};

/// The topology of `devices` (in that order) under `cost` (effective bandwidths; hosts
/// from the cluster). Stores the peak bandwidth in B/s in `peak_bandwidth` when not null.
/// ValidationError on an empty list or a device outside the cluster.
ArrayTopology cost_topology(const Cluster& cluster, const CostModel& cost,
                            const std::vector<int>& devices, double* peak_bandwidth = nullptr);

/// Devices per stage, contiguous in linear order (PipelineEnv's rule): whole hosts per stage
/// when the hosts are uniform and at least `stages`, else an even split (the first
/// n mod S stages one more). ValidationError when stages < 1 or more stages than devices.
std::vector<int> stage_device_counts(const std::vector<int>& host, int stages);

/// One array pipeline problem.
struct ArrayProblem {
  CoarseArrays arrays;
  ArrayTopology topology;
  std::vector<int> stage_devices;  ///< S entries summing to <= topology.num_devices()
  int micro_batches = 1;           ///< m >= 1
  /// false: the devices carry their cut transfers themselves (cluster key `overlap: false`),
  /// so a stage's steady-state time is t_s + x_{s-1} + x_s (pipeline_length).
  bool overlap = true;
  int stages() const { return static_cast<int>(stage_devices.size()); }
};

/// Analytic 1F1B pipeline length of `cuts` (S - 1 increasing coarse points in [0, 127)), in
/// normalised seconds. Stage s spans (cuts[s-1], cuts[s]] with compute share c_s (difference
/// of C'), parameter share w_s (of W') and d_s devices starting at o_s:
///   t_s = c_s / (d_s m)                                     per-micro-batch compute
///   x_s = 2 A'[cuts[s]] / (d_{s+1} m bw(o_{s+1} - 1, o_{s+1}))  activation + gradient at cut s
///   r_s = 2 (d_s - 1) / d_s  w_s / min ring bandwidth of the group   (ring all-reduce)
///   L = sum t_s + sum x_s + (m - 1) max(t, x) + max r_s
/// (fill and drain traverse every stage and link once; the steady state repeats the
/// bottleneck m - 1 times; the stages' all-reduces run in parallel after the last backward).
/// Without overlap (ArrayProblem::overlap false) the bottleneck is max_s (t_s + x_{s-1} +
/// x_s): a stage's devices are busy with its transfers too.
/// ValidationError on a bad cut set.
double pipeline_length(const ArrayProblem& p, const std::vector<int>& cuts);

/// The balanced cut set: cut k at the allowed point whose C' is nearest to
/// C'[127] x (devices of stages <= k) / (all stage devices), increasing, with room.
std::vector<int> balanced_cuts(const ArrayProblem& p);

/// Options of the random array problems (paper 4.5.1, "Data Generation").
struct ArrayGenOptions {
  int stages = 4;
  int max_devices = 32;  ///< topology size bound (>= stages)
  int min_positions = 128, max_positions = 1024;  ///< raw array length range
  /// Any of "uniform", "normal", "binomial"; each array picks one at random.
  std::vector<std::string> distributions{"uniform", "normal", "binomial"};
};

/// ValidationError when `o` is unusable (names the field).
void validate_array_gen_options(const ArrayGenOptions& o);

/// Random raw arrays (values drawn from a random distribution of `o`, then per-array random
/// sparsity and a log-uniform scale for A and W relative to C) of a seeded length.
PositionArrays generate_position_arrays(std::mt19937_64& rng, const ArrayGenOptions& o);
/// A random topology: hosts x GPUs per host (powers of two, stages <= n <= max_devices),
/// intra-host bandwidth 1, inter-host a log-uniform 1/64 .. 1/2.
ArrayTopology generate_topology(std::mt19937_64& rng, const ArrayGenOptions& o);
/// A full random problem from one seed (deterministic across runs and platforms):
/// arrays, topology, host-aligned stage devices, m uniform in [S, 4 S].
ArrayProblem generate_array_problem(uint64_t seed, const ArrayGenOptions& o);

/// The array MDP. State (state_dim floats): C', A', W' (3 x 128), the bandwidth matrix of
/// the first max_devices devices (padded with 0), the cut flags (128), the devices of every
/// stage / max_devices (S), m / (4 S) and the number of cuts taken / (S - 1).
class ArrayPipelineEnv {
 public:
  ArrayPipelineEnv(ArrayProblem problem, int max_devices);
  static int state_dim(int stages, int max_devices) {
    return 4 * kCoarsePoints + max_devices * max_devices + stages + 2;
  }
  void reset();
  /// Takes coarse point `action` (kCutActions actions). Returns the reward (terminal:
  /// reference / L; else 0). ValidationError when the mask forbids it, Error when done.
  double step(int action);
  bool done() const { return static_cast<int>(cuts_.size()) == problem_.stages() - 1; }
  const std::vector<float>& observation() const { return obs_; }
  const std::vector<uint8_t>& action_mask() const { return mask_; }
  const std::vector<int>& cuts() const { return cuts_; }
  const ArrayProblem& problem() const { return problem_; }
  double reference_length() const { return reference_; }  ///< L of balanced_cuts
  /// reference / L of a full cut set.
  double reward_of(const std::vector<int>& cuts) const {
    return reference_ / pipeline_length(problem_, cuts);
  }

 private:
  void update();
  ArrayProblem problem_;
  int max_devices_;
  double reference_ = 1;
  std::vector<int> cuts_;
  std::vector<int> allowed_after_;  // allowed points at index >= j
  std::vector<float> obs_;
  std::vector<uint8_t> mask_;
};

}  // namespace placer
