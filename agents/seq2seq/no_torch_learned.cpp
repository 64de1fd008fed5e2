// Stand-in for the seq2seq placers (colocrl, hdp) when the project is built without
// LibTorch: every entry point says so, and no method is registered.
#include <algorithm>

#include "agents/seq2seq/colocrl.h"
#include "agents/seq2seq/hdp.h"
#include "agents/api/methods.h"
#include "agents/common/no_torch.h"

namespace placer {
namespace {
[[noreturn]] void no_torch() {
  throw_built_without_torch("the colocrl and hdp placers are unavailable");
}
}  // namespace

bool seq2seq_available() { return false; }

LearnedSearchResult colocrl_search(const Problem&, const ColocrlOptions&, const SearchBudget&) {
  no_torch();
}
std::unique_ptr<Placer> make_colocrl_placer(ColocrlOptions) { no_torch(); }

int hdp_num_groups(const HdpOptions& options, int num_devices) {
  if (options.groups > 0) return options.groups;
  return std::min(256, 20 * std::max(1, num_devices));
}
LearnedSearchResult hdp_search(const Problem&, const HdpOptions&, const SearchBudget&) {
  no_torch();
}
std::unique_ptr<Placer> make_hdp_placer(HdpOptions) { no_torch(); }

void add_seq2seq_methods(std::vector<MethodInfo>*) {}

}  // namespace placer
