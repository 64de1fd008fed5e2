#pragma once
// Expert maps as JSON (docs/formats/routing.md "Expert maps"): which expert-parallel rank
// holds a copy of each expert of each MoE layer, as the expert placers write it
// (`--set map=FILE`) for a serving or training stack that places experts itself (DeepSeek's
// EPLB output, vLLM / SGLang expert maps). The reader follows src/io/json_read.h.
//
//   {"format": "placer-expert-map", "version": 1, "ep": 4,
//    "layers": [[[0, 2], [1], [2], [3]], ...]}      // layers[l][e]: the ranks of expert e

#include <string>

#include "src/plan/moe_layout.h"

namespace placer {

std::string expert_map_to_json(const ExpertParallelConfig& ep);
/// FormatError naming the file and key path: a rank outside [0, ep), an expert with no
/// copy or two copies on one rank, layers with different expert counts, unknown keys.
ExpertParallelConfig parse_expert_map_json(const std::string& json_text, const std::string& file);
ExpertParallelConfig load_expert_map(const std::string& path);
void save_expert_map(const ExpertParallelConfig& ep, const std::string& path);

}  // namespace placer
