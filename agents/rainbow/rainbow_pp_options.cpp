// The options of `rainbow-pp` (`placer place --method rainbow-pp --set KEY=VALUE`).
// Torch-free: built with or without LibTorch.
#include "agents/rainbow/rainbow_pp.h"

#include <filesystem>

#include "agents/rainbow/rainbow_pp_policy.h"
#include "src/util/error.h"

namespace placer {

const OptionTable<RainbowPPOptions>& rainbow_pp_option_table() {
  static const OptionTable<RainbowPPOptions> t = [] {
    OptionTable<RainbowPPOptions> v("rainbow-pp");
    v.integer(
         "stages", "pipeline stages (0 = min(4, devices))",
         [](auto& o) -> auto& { return o.stages; })
        .integer(
            "micro_batches", "micro-batches (0 = 4 x stages, capped by the batch)",
            [](auto& o) -> auto& { return o.micro_batches; })
        .integer(
            "episodes", "distinct cut sets to simulate (budget runs override it)",
            [](auto& o) -> auto& { return o.episodes; })
        .flag(
            "prune", "only pivots near the balanced cuts", [](auto& o) -> auto& { return o.prune; })
        .integer(
            "scope_depth", "pivot granularity (-1 = auto)",
            [](auto& o) -> auto& { return o.scope_depth; })
        .integer(
            "prune_radius", "pivots kept either side of a balanced cut",
            [](auto& o) -> auto& { return o.prune_radius; })
        .number(
            "epsilon_decay_fraction", "epsilon 1 -> 0.1 over this fraction of the steps",
            [](auto& o) -> auto& { return o.epsilon_decay_fraction; })
        .flag(
            "search_layout", "also search device groups and micro-batch counts",
            [](auto& o) -> auto& { return o.search_layout; })
        .integer(
            "layout_rounds", "rounds of episodes with a layout search after each",
            [](auto& o) -> auto& { return o.layout_rounds; })
        .integer(
            "layout_top", "cut sets per layout search",
            [](auto& o) -> auto& { return o.layout_top; })
        .integer(
            "batch_size", "replay batch", [](auto& o) -> auto& { return o.batch_size; })
        .integer(
            "replay_capacity", "replay transitions",
            [](auto& o) -> auto& { return o.replay_capacity; })
        .integer(
            "target_update", "learn() updates between target syncs",
            [](auto& o) -> auto& { return o.target_update; })
        .number(
            "lr", "Adam learning rate", [](auto& o) -> auto& { return o.lr; })
        .integer_list(
            "hidden", "MLP torso widths, e.g. [128, 128]",
            [](auto& o) -> auto& { return o.hidden; });
    return v;
  }();
  return t;
}

const OptionTable<RainbowPPMethodOptions>& rainbow_pp_method_option_table() {
  static const OptionTable<RainbowPPMethodOptions> t = [] {
    OptionTable<RainbowPPMethodOptions> v("rainbow-pp");
    v.nest(
         rainbow_pp_option_table(), [](auto& o) -> auto& { return o.search; })
        .add(
            "policy", "path",
            "a pretrained pipeline-cut policy placed zero-shot (models/pretrained/rainbow_pp.pt; "
            "`placer train-policy --agent rainbow-pp`) instead of the online search",
            [](RainbowPPMethodOptions* o, const std::string& x) { o->policy = x; },
            [](const RainbowPPMethodOptions& o) { return o.policy; })
        .integer(
            "samples", "with a policy: cut sets sampled besides the greedy one",
            [](auto& o) -> auto& { return o.samples; }, 0);
    return v;
  }();
  return t;
}

std::unique_ptr<Placer> make_rainbow_pp_method(const RainbowPPMethodOptions& o) {
  const RainbowPPMethodOptions defaults;
  if (o.policy.empty()) {
    if (o.samples != defaults.samples) {
      throw ValidationError("rainbow-pp: samples applies with a policy (zero-shot inference) only");
    }
    return make_rainbow_pp_placer(o.search);
  }
  const OptionTable<RainbowPPOptions>& search = rainbow_pp_option_table();
  for (const std::string& key : search.keys()) {
    if (search.value(o.search, key) != search.value(defaults.search, key)) {
      throw ValidationError("rainbow-pp: " + key +
                            " applies to the online search, not to a "
                            "policy's zero-shot inference");
    }
  }
  if (!std::filesystem::is_regular_file(o.policy)) {
    throw FileError("rainbow-pp: policy '" + o.policy +
                    "' not found (the shipped pipeline-cut "
                    "policy is models/pretrained/rainbow_pp.pt; train one with `placer "
                    "train-policy --agent rainbow-pp`)");
  }
  RainbowPPPolicyOptions p;
  p.samples = o.samples;
  return make_rainbow_pp_policy_placer(o.policy, p);
}

}  // namespace placer
