// Stand-in for the GDP placer and its training when the project is built without LibTorch
// (-DPLACER_WITH_TORCH=OFF or no libtorch-dev): every entry point says so clearly. The other
// families' stand-ins are in their folders' no_torch_*.cpp.

#include "agents/api/methods.h"
#include "agents/gdp/gdp.h"
#include "src/util/error.h"

namespace placer {
namespace {
[[noreturn]] void no_torch() {
  throw Error("this placer was built without LibTorch: learned placers (gdp, train-policy) "
              "are unavailable; install libtorch-dev (scripts/setup.sh) and rebuild");
}
}  // namespace

bool gdp_available() { return false; }

bool GdpNetConfig::operator==(const GdpNetConfig& o) const {
  return hidden == o.hidden && sage_layers == o.sage_layers && op_embedding == o.op_embedding &&
         txl_layers == o.txl_layers && heads == o.heads && ffn == o.ffn &&
         segment == o.segment && mem_len == o.mem_len && max_devices == o.max_devices &&
         superposition == o.superposition;
}

struct GdpPolicy::Impl {};
GdpPolicy::GdpPolicy() = default;
GdpPolicy::GdpPolicy(const GdpNetConfig&, uint64_t) { no_torch(); }
GdpPolicy::~GdpPolicy() = default;
GdpPolicy::GdpPolicy(GdpPolicy&&) noexcept = default;
GdpPolicy& GdpPolicy::operator=(GdpPolicy&&) noexcept = default;
GdpPolicy GdpPolicy::load(const std::string&) { no_torch(); }
void GdpPolicy::save(const std::string&, PolicyMeta) const { no_torch(); }
const GdpNetConfig& GdpPolicy::config() const { no_torch(); }
const PolicyMeta& GdpPolicy::meta() const { no_torch(); }
int64_t GdpPolicy::num_parameters() const { no_torch(); }
GdpPolicy GdpPolicy::clone() const { no_torch(); }

GdpPlaceResult gdp_place(const GdpPolicy&, const Problem&, const GdpPlaceOptions&,
                         const SearchBudget&) {
  no_torch();
}

std::unique_ptr<Placer> make_gdp_placer(const std::string&, const GdpPlaceOptions&, const std::string&) {
  no_torch();
}

struct GdpTrainer::Impl {};
GdpTrainer::GdpTrainer(TrainConfig) { no_torch(); }
GdpTrainer::~GdpTrainer() = default;
int64_t GdpTrainer::resume() { no_torch(); }
int64_t GdpTrainer::train(const Callbacks&) { no_torch(); }
TrainEvalStats GdpTrainer::evaluate() { no_torch(); }
int64_t GdpTrainer::updates_done() const { no_torch(); }
const TrainConfig& GdpTrainer::config() const { no_torch(); }
size_t GdpTrainer::num_train_instances() const { no_torch(); }
size_t GdpTrainer::num_val_instances() const { no_torch(); }
std::string GdpTrainer::dist_backend() const { no_torch(); }

// Without LibTorch the gdp method is not registered (`placer place --method gdp` then names
// the known methods).
void add_learned_methods(std::vector<MethodInfo>*) {}

}  // namespace placer
