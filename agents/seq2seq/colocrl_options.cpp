// The options of `colocrl` (`placer place --method colocrl --set KEY=VALUE`). Torch-free:
// built with or without LibTorch.
#include "agents/seq2seq/colocrl.h"
#include "agents/seq2seq/seq2seq_options.h"

namespace placer {

const OptionTable<ColocrlOptions>& colocrl_option_table() {
  static const OptionTable<ColocrlOptions> t = [] {
    OptionTable<ColocrlOptions> v("colocrl");
    add_seq2seq_options(&v);
    v.integer(
        "max_steps", "decoder steps at most (groups merged into blocks beyond)",
        [](auto& o) -> auto& { return o.max_steps; });
    return v;
  }();
  return t;
}

}  // namespace placer
