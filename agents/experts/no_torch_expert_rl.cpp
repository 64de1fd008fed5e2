// Stand-in for the learned expert placer's policy (expert_rl.cpp) when the project is built
// without LibTorch: every entry point says so.
#include "agents/experts/expert_rl.h"
#include "src/util/error.h"

namespace placer {
namespace {
[[noreturn]] void no_torch() {
  throw Error(
      "this placer was built without LibTorch: expert-rl is unavailable (eplb and "
      "expert-anneal are not learned and work); install libtorch-dev (scripts/setup.sh) and "
      "rebuild");
}
}  // namespace

struct ExpertPolicy::Impl {};

ExpertPolicy::ExpertPolicy(int, bool) { no_torch(); }
ExpertPolicy::~ExpertPolicy() = default;
std::unique_ptr<ExpertPolicy> ExpertPolicy::load(const std::string&) { no_torch(); }
void ExpertPolicy::save(const std::string&, const std::string&) const { no_torch(); }
std::vector<ExpertLayerMap> ExpertPolicy::place(const std::vector<std::vector<double>>&,
                                                const std::vector<std::vector<int>>&,
                                                const ExpertTopology&, int) const {
  no_torch();
}
bool ExpertPolicy::chooses_replicas() const { no_torch(); }
int ExpertPolicy::start_from(const ExpertPolicy&) { no_torch(); }
double ExpertPolicy::pretrain(const std::vector<ExpertRlLayers>&,
                              const std::vector<ExpertRlLayers>&, const ExpertRlTrainOptions&,
                              const std::function<void(int64_t, double, double)>&) {
  no_torch();
}
double ExpertPolicy::validate(const std::vector<ExpertRlLayers>&) const { no_torch(); }
std::vector<ExpertLayerMap> ExpertPolicy::finetune(
    const std::vector<std::vector<double>>&, const std::vector<std::vector<int>>&,
    const ExpertTopology&, int, const std::function<double(const std::vector<ExpertLayerMap>&)>&,
    int64_t, int, uint64_t, std::vector<double>*) {
  no_torch();
}
std::string default_expert_policy_path() { return ""; }

}  // namespace placer
