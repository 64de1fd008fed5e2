// Without LibTorch: the pretrained rainbow-pp policy (agents/rainbow/rainbow_pp_policy.h) is not
// available; every entry point says so.
#include "agents/rainbow/rainbow_pp_policy.h"
#include "src/util/error.h"

namespace placer {
namespace {
[[noreturn]] void no_torch() {
  throw Error("the pretrained rainbow-pp policy needs LibTorch; this placer was built without it");
}
}  // namespace

bool rainbow_pp_policy_available() { return false; }
std::string validate_rainbow_pp_train_config(const RainbowPPTrainConfig&) { return ""; }
RainbowPPEvalStats rainbow_pp_heldout(const RainbowPPTrainConfig&, const std::string&, int) {
  no_torch();
}
struct RainbowPPTrainer::Impl {};
RainbowPPTrainer::RainbowPPTrainer(const RainbowPPTrainConfig&) { no_torch(); }
RainbowPPTrainer::~RainbowPPTrainer() = default;
int64_t RainbowPPTrainer::resume() { no_torch(); }
int64_t RainbowPPTrainer::train(const Callbacks&) { no_torch(); }
std::unique_ptr<Placer> make_rainbow_pp_policy_placer(const std::string&,
                                                      const RainbowPPPolicyOptions&) {
  no_torch();
}
RainbowPPInferenceInfo rainbow_pp_inference_info(const Placer&) { no_torch(); }
}  // namespace placer
