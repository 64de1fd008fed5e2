// Stand-in for the learned `autosync` search when the project is built without LibTorch:
// every entry point says so, and the method is not registered (autosync-search is).
#include "agents/sync/autosync_rl.h"
#include "src/util/error.h"

namespace placer {
namespace {
[[noreturn]] void no_torch() {
  throw Error(
      "this placer was built without LibTorch: the learned autosync search is "
      "unavailable (autosync-search is not learned and works); install libtorch-dev "
      "(scripts/setup.sh) and rebuild");
}
}  // namespace

bool autosync_rl_available() { return false; }
AutosyncReport autosync_search(const Problem&, const SearchBudget&, const AutosyncOptions&) {
  no_torch();
}
std::unique_ptr<Placer> make_autosync_rl_placer(const AutosyncOptions&) { no_torch(); }
AutosyncTrainResult autosync_train(const AutosyncTrainOptions&) { no_torch(); }
void save_autosync_policy(const RainbowAgent&, const std::string&) { no_torch(); }
std::unique_ptr<RainbowAgent> load_autosync_policy(const std::string&) { no_torch(); }

}  // namespace placer
