// Stand-in for Placeto when the project is built without LibTorch: every entry point says
// so, and no method is registered.
#include "agents/common/no_torch.h"
#include "agents/placeto/placeto.h"

namespace placer {
namespace {
[[noreturn]] void no_torch() { throw_built_without_torch("the placeto placer is unavailable"); }
}  // namespace

bool placeto_available() { return false; }
void check_placeto_options(const PlacetoOptions&) { no_torch(); }
PlacetoSearchResult placeto_search(const Problem&, const PlacetoOptions&, const SearchBudget&) {
  no_torch();
}
std::unique_ptr<Placer> make_placeto_placer(PlacetoOptions) { no_torch(); }
void add_placeto_methods(std::vector<MethodInfo>*) {}
PlacetoTrainResult placeto_train(const PlacetoTrainConfig&, const Cluster&, const CostModel&,
                                 const std::function<void(int64_t, int64_t, const std::string&)>&) {
  no_torch();
}
PlacetoTrainResult placeto_train(const PlacetoTrainConfig&, const Cluster&, const CostModel&,
                                 const PlacetoTrainCallbacks&) {
  no_torch();
}
PlacetoPolicyMeta read_placeto_policy_meta(const std::string&) { no_torch(); }

}  // namespace placer
