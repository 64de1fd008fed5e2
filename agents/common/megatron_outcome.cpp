#include "agents/common/megatron_outcome.h"

#include <cmath>
#include <utility>

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
  // Context and expert parallelism only when used (the outcomes of dense, short-sequence
  // searches keep their values).
  if (m.cp > 1) stats->add("cp", m.cp);
  if (m.ep > 1) stats->add("ep", m.ep);
  if (m.etp > 1) stats->add("etp", m.etp);
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
  for (auto [name, field] :
       {std::pair<const char*, int*>{"cp", &m.cp}, {"ep", &m.ep}, {"etp", &m.etp}}) {
    const double v = stats.value(name);
    if (!std::isnan(v)) *field = static_cast<int>(v);
  }
  return m;
}

}  // namespace placer
