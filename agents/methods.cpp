#include "agents/api/methods.h"
#include "agents/staged_methods.h"

namespace placer {

std::vector<MethodInfo> all_methods() {
  std::vector<MethodInfo> m;
  add_list_scheduling_methods(&m);
  add_graph_partitioning_methods(&m);
  add_dynamic_programming_methods(&m);
  add_pipeline_ideal_methods(&m);
  add_megatron_methods(&m);
  add_hybrid_methods(&m);
  add_search_methods(&m);
  add_learned_methods(&m);
  add_staged_methods(&m);
  add_rainbow_methods(&m);
  add_rainbow_opp_methods(&m);
  add_rainbow_3d_methods(&m);
  add_seq2seq_methods(&m);
  add_placeto_methods(&m);
  add_sync_methods(&m);
  add_expert_methods(&m);
  return m;
}

}  // namespace placer
