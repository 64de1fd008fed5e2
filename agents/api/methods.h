#pragma once
// Registration lists, one per family of methods (each defined in its own .cpp).

#include <vector>

#include "agents/api/placer.h"

namespace placer {

void add_list_scheduling_methods(std::vector<MethodInfo>* out);  // agents/classical/list_placers.cpp
void add_graph_partitioning_methods(std::vector<MethodInfo>* out);  // agents/classical/partitioners.cpp
void add_dynamic_programming_methods(std::vector<MethodInfo>* out);  // agents/classical/dp_placers.cpp
/// "pipeline-ideals" (agents/classical/pipeline_ideals.cpp).
void add_pipeline_ideal_methods(std::vector<MethodInfo>* out);
/// "m-etf+hybrid" (agents/classical/hybrid_outer.cpp).
void add_hybrid_methods(std::vector<MethodInfo>* out);
/// "megatron" (agents/classical/megatron_grid.cpp).
void add_megatron_methods(std::vector<MethodInfo>* out);
void add_search_methods(std::vector<MethodInfo>* out);  // agents/classical/anneal.cpp
/// "gdp" (agents/gdp/gdp_place.cpp; agents/gdp/no_torch_gdp.cpp without LibTorch).
void add_learned_methods(std::vector<MethodInfo>* out);
/// "rainbow-pp" (agents/rainbow/rainbow_pp.cpp; nothing without LibTorch, agents/gdp/no_torch_gdp.cpp).
void add_rainbow_methods(std::vector<MethodInfo>* out);
/// "rainbow-opp", "rainbow-adp" (agents/rainbow/rainbow_opp.cpp; nothing without LibTorch).
void add_rainbow_opp_methods(std::vector<MethodInfo>* out);
/// "rainbow-3d" (agents/rainbow/rainbow_3d.cpp; nothing without LibTorch).
void add_rainbow_3d_methods(std::vector<MethodInfo>* out);
/// "colocrl", "hdp" (agents/seq2seq/colocrl.cpp; nothing without LibTorch, agents/seq2seq/no_torch_learned.cpp).
void add_seq2seq_methods(std::vector<MethodInfo>* out);
/// "placeto" (agents/placeto/placeto.cpp; nothing without LibTorch, agents/placeto/no_torch_placeto.cpp).
void add_placeto_methods(std::vector<MethodInfo>* out);

/// "round-robin", "eplb", "expert-anneal": expert maps of MoE layers (agents/experts/).
void add_expert_methods(std::vector<MethodInfo>* out);

/// "horovod", "ps", "parallax", "poseidon", "autosync" (agents/sync/).
void add_sync_methods(std::vector<MethodInfo>* out);

/// Every method in display order (what placer_methods() returns).
std::vector<MethodInfo> all_methods();

}  // namespace placer
