// The options of `gdp` and `gdp+stages` (`placer place --method gdp --set KEY=VALUE`).
// Torch-free: built with or without LibTorch.
#include "agents/gdp/gdp.h"

namespace placer {

const OptionTable<GdpMethodOptions>& gdp_option_table() {
  static const OptionTable<GdpMethodOptions> t = [] {
    using O = GdpMethodOptions;
    OptionTable<O> v("gdp");
    v.add(
        "policy", "path",
        "policy file (default: the method's shipped policy in models/pretrained/)",
        [](O* o, const std::string& x) { o->policy = x; },
        [](const O& o) { return o.policy.empty() ? std::string("default") : o.policy; });
    v.integer(
         "samples", "sampled placements scored besides the greedy one",
         [](auto& o) -> auto& { return o.place.samples; })
        .integer(
            "refine",
            "block moves around the best placement after the samples, each drawn from the "
            "policy and kept when faster",
            [](auto& o) -> auto& { return o.place.refine; })
        .integer(
            "finetune_refine",
            "block moves after each fine-tuning update, drawn from the policy being tuned: "
            "a climb from the best placement that restarts a few moves away from it after "
            "1024 moves without a better one",
            [](auto& o) -> auto& { return o.place.finetune_refine; })
        .integer(
            "finetune",
            "PPO updates on this graph after zero-shot (0 = zero-shot; "
            "--budget-seconds / --budget-evals stop them early)",
            [](auto& o) -> auto& { return o.place.finetune_updates; })
        .number(
            "lr", "fine-tuning Adam learning rate", [](auto& o) -> auto& { return o.place.ppo.lr; })
        .integer(
            "ppo_samples", "sampled placements per fine-tuning update",
            [](auto& o) -> auto& { return o.place.ppo.samples; })
        .number(
            "entropy", "fine-tuning entropy bonus",
            [](auto& o) -> auto& { return o.place.ppo.entropy; })
        .integer(
            "epochs", "PPO epochs per fine-tuning update",
            [](auto& o) -> auto& { return o.place.ppo.epochs; })
        .flag(
            "colocate", "act on colocation units",
            [](auto& o) -> auto& { return o.place.colocate; });
    return v;
  }();
  return t;
}

}  // namespace placer
