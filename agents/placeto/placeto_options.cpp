// The options of `placeto` (`placer place --method placeto --set KEY=VALUE`). Torch-free:
// built with or without LibTorch.
#include <filesystem>

#include "agents/placeto/placeto.h"
#include "src/util/error.h"

namespace placer {

const OptionTable<PlacetoOptions>& placeto_option_table() {
  static const OptionTable<PlacetoOptions> t = [] {
    using O = PlacetoOptions;
    OptionTable<O> v("placeto");
    v.add(
         "policy", "path",
         "a family-trained policy (`placer train-policy --agent placeto`) placed zero-shot; "
         "none: trained online on the graph",
         [](O* o, const std::string& x) { o->policy = x; }, [](const O& o) { return o.policy; })
        .integer(
            "samples", "with a policy: episodes sampled besides the greedy one",
            [](auto& o) -> auto& { return o.zero_shot_samples; }, 0)
        .add(
            "finetune", "int",
            "with a policy: N > 0 fine-tunes with REINFORCE while the budget lasts",
            [](O* o, const std::string& x) {
              const int64_t n = parse_option_int(x);
              if (n < 0) throw OptionValueError{"must be >= 0, got " + x};
              o->finetune = n > 0;
            },
            [](const O& o) { return std::string(o.finetune ? "1" : "0"); });
    return v;
  }();
  return t;
}

std::unique_ptr<Placer> make_placeto_method(const PlacetoOptions& o) {
  if (o.policy.empty()) {
    if (o.zero_shot_samples != PlacetoOptions{}.zero_shot_samples || o.finetune) {
      throw ValidationError(
          "placeto: samples and finetune apply to placeto with --policy (a "
          "family-trained policy) only; without it placeto trains online on "
          "the graph");
    }
  } else if (!std::filesystem::is_regular_file(o.policy)) {
    throw FileError("placeto: policy '" + o.policy +
                    "' not found (train a Placeto policy on a "
                    "graph family with placer train-policy --agent placeto, docs/placeto.md)");
  }
  return make_placeto_placer(o);
}

}  // namespace placer
