#include "agents/common/megatron_outcome.h"

namespace placer {

void add_megatron_config(const MegatronConfig& m, SearchStats* stats) {
  stats->add("tp", m.tp);
  stats->add("pp", m.pp);
  stats->add("dp", m.dp);
  stats->add("micro_batch", m.micro_batch);
  stats->add("virtual_stages", m.virtual_stages);
  stats->add("recompute", static_cast<int>(m.recompute));
  stats->add("sequence_parallel", m.sequence_parallel ? 1 : 0);
  stats->add("zero_stage", m.zero_stage);
}

MegatronConfig megatron_config_of_outcome(const SearchStats& stats) {
  auto get = [&stats](const char* name) { return static_cast<int>(stats.value(name)); };
  MegatronConfig m;
  m.tp = get("tp"), m.pp = get("pp"), m.dp = get("dp");
  m.micro_batch = get("micro_batch");
  m.virtual_stages = get("virtual_stages");
  m.recompute = static_cast<Recompute>(get("recompute"));
  m.sequence_parallel = get("sequence_parallel") != 0;
  m.zero_stage = get("zero_stage");
  return m;
}

}  // namespace placer
