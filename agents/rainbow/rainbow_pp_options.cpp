// The options of `rainbow-pp` (`placer place --method rainbow-pp --set KEY=VALUE`).
// Torch-free: built with or without LibTorch.
#include "agents/rainbow/rainbow_pp.h"

#include <filesystem>

#include "agents/common/option_fields.h"
#include "agents/rainbow/rainbow_pp_policy.h"
#include "src/util/error.h"

namespace placer {

const OptionTable<RainbowPPOptions>& rainbow_pp_option_table() {
  static const OptionTable<RainbowPPOptions> t = [] {
    using O = RainbowPPOptions;
    OptionTable<O> v("rainbow-pp");
    add_fields(&v, R"(
      stages                  pipeline stages (0 = min(4, devices))
      micro_batches           micro-batches (0 = 4 x stages, capped by the batch)
      episodes                distinct cut sets to simulate (budget runs override it)
      prune                   only pivots near the balanced cuts
      scope_depth             pivot granularity (-1 = auto)
      prune_radius            pivots kept either side of a balanced cut
      epsilon_decay_fraction  epsilon 1 -> 0.1 over this fraction of the steps
      search_layout           also search device groups and micro-batch counts
      layout_rounds           rounds of episodes with a layout search after each
      layout_top              cut sets per layout search
      batch_size              replay batch
      replay_capacity         replay transitions
      target_update           learn() updates between target syncs
      lr                      Adam learning rate
      hidden                  MLP torso widths, e.g. [128, 128])",
               &O::stages, &O::micro_batches, &O::episodes, &O::prune, &O::scope_depth,
               &O::prune_radius, &O::epsilon_decay_fraction, &O::search_layout, &O::layout_rounds,
               &O::layout_top, &O::batch_size, &O::replay_capacity, &O::target_update, &O::lr,
               &O::hidden);
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
