// The options of `hdp` (`placer place --method hdp --set KEY=VALUE`). Torch-free: built with
// or without LibTorch.
#include "agents/seq2seq/hdp.h"
#include "agents/seq2seq/seq2seq_options.h"

namespace placer {

const OptionTable<HdpOptions>& hdp_option_table() {
  static const OptionTable<HdpOptions> t = [] {
    using O = HdpOptions;
    OptionTable<O> v("hdp");
    add_seq2seq_options(&v);
    v.integer(
         "groups", "groups of the grouper (0 = min(256, 20 x devices))",
         [](auto& o) -> auto& { return o.groups; })
        .integer(
            "grouper_hidden", "grouper hidden width",
            [](auto& o) -> auto& { return o.grouper_hidden; });
    v.add(
        "grouper_activation", "none|relu|tanh", "grouper activation",
        [](O* o, const std::string& x) { o->grouper_activation = x; },
        [](const O& o) { return o.grouper_activation; });
    return v;
  }();
  return t;
}

}  // namespace placer
