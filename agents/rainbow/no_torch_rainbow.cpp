// Stand-in for the Rainbow placers (rainbow-pp, rainbow-opp, rainbow-adp, rainbow-3d) when the
// project is built without LibTorch: none is registered, and every entry point says so.
#include "agents/api/methods.h"
#include "agents/rainbow/rainbow_3d.h"
#include "agents/rainbow/rainbow_opp.h"
#include "agents/rainbow/rainbow_pp.h"
#include "src/util/error.h"

namespace placer {
namespace {
[[noreturn]] void no_torch() {
  throw Error(
      "this placer was built without LibTorch: the Rainbow placers (rainbow-pp, "
      "rainbow-opp, rainbow-adp, rainbow-3d) are unavailable; install libtorch-dev "
      "(scripts/setup.sh) and rebuild");
}
}  // namespace

// Without LibTorch no Rainbow method is registered (`placer place --method rainbow-pp` then
// names the known methods).
void add_rainbow_methods(std::vector<MethodInfo>*) {}
void add_rainbow_opp_methods(std::vector<MethodInfo>*) {}
void add_rainbow_3d_methods(std::vector<MethodInfo>*) {}
SearchOutcome Rainbow3DPlacer::search_outcome(const Problem&, const SearchBudget&) { no_torch(); }

std::unique_ptr<Placer> make_rainbow_pp_placer(const RainbowPPOptions&) { no_torch(); }
RainbowOppReport rainbow_opp_search(const Problem&, const SearchBudget&, const RainbowOppOptions&) {
  no_torch();
}
std::unique_ptr<Placer> make_rainbow_opp_placer(const RainbowOppOptions&) { no_torch(); }

}  // namespace placer
