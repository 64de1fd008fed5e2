#pragma once
// The one interface of the RL environments (PlacementEnv, PlacetoEnv, PipelineEnv, OppEnv,
// and SyncEnv in agents/sync): reset, observe, the legal actions, step, the plan reached.
//
// The environments differ in what they observe and act with, so the interface is a template
// over three types, each env naming its own:
//  - Observation: what observation() returns (NodeFeatures for PlacementEnv, a flat float
//    vector for the others);
//  - Action: what step() takes. An int for the envs that act on one thing per step, an index
//    into action_mask(); one int per unit (a device) for PlacementEnv, which places every
//    unit in its single step;
//  - Result: what step() returns: at least `double reward` and `bool done`, and whatever the
//    env adds (step time, OOM, ...).
// action_mask() is heads x width, row-major, 1 = allowed, with heads = action_heads(): one
// row for an int action, one per entry of a vector action. A legal action takes an allowed
// column in every row.
//
// The envs' own methods are the interface (step, observation, action_mask, done, ...): code
// that holds a concrete env calls them as before; a template over RlEnv<...> (the
// conformance tests) reaches all five the same way. Torch-free: the agents turn observations
// into tensors.
#include <cstdint>
#include <type_traits>
#include <vector>

#include "src/plan/plan.h"

namespace placer {

template <typename Observation, typename Action, typename Result>
class RlEnv {
 public:
  static_assert(std::is_same_v<decltype(Result::reward), double> &&
                    std::is_same_v<decltype(Result::done), bool>,
                "a step result reports `double reward` and `bool done`");
  using ObservationType = Observation;
  using ActionType = Action;
  using ResultType = Result;
  /// How step() takes its action: an int by value, a vector by const reference.
  using ActionArg = std::conditional_t<std::is_scalar_v<Action>, Action, const Action&>;

  virtual ~RlEnv() = default;

  /// Starts an episode. Envs whose start is random draw it from `seed` (the same seed, the
  /// same start); the others ignore it.
  virtual void reset(uint64_t seed) = 0;
  /// True once the episode ended (the last step was taken).
  virtual bool done() const = 0;
  /// The current state as the policy sees it.
  virtual const Observation& observation() const = 0;
  /// action_heads() x width row-major, 1 = allowed now (see the file comment). Every row has
  /// an allowed column until done.
  virtual const std::vector<uint8_t>& action_mask() const = 0;
  /// Rows of action_mask(): 1 for an int action.
  virtual int action_heads() const { return 1; }
  /// Takes an action. Throws ValidationError for one the mask forbids.
  virtual Result step(ActionArg action) = 0;
  /// Most steps an episode takes from reset() to done.
  virtual int horizon() const = 0;
  /// The plan of the state reached (the last episode's when done). Envs whose plan needs a
  /// finished episode (PlacementEnv, PipelineEnv) throw ValidationError before the end.
  virtual Plan to_plan() const = 0;
};

}  // namespace placer
