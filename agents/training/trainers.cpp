// The trainer registry of train-policy (agents/training/trainers.h).
#include "agents/training/trainers.h"

#include <algorithm>

#include "src/util/error.h"

namespace placer {

const std::vector<TrainerInfo>& trainers() {
  static const std::vector<TrainerInfo> all = {
      {"gdp", "GDP placement policy, PPO on a graph corpus, docs/gdp.md", run_train_gdp},
      {"rainbow-pp",
       "Auto-MAP pipeline cuts, Rainbow DQN on generated arrays, docs/rainbow_pp_inference.md",
       run_train_rainbow_pp},
      {"placeto", "Placeto policy, REINFORCE on a graph family, docs/placeto.md",
       run_train_placeto},
      {"autosync", "per-variable sync strategies, Rainbow DQN on a corpus, docs/sync.md",
       run_train_autosync},
      {"expert-rl", "MoE expert maps, REINFORCE on the routing corpus, docs/expert_placement.md",
       run_train_expert_rl}};
  return all;
}

const TrainerInfo& find_trainer(const std::string& name) {
  const std::vector<TrainerInfo>& all = trainers();
  const auto it = std::find_if(all.begin(), all.end(),
                               [&name](const TrainerInfo& t) { return t.name == name; });
  if (it != all.end()) return *it;
  std::string known = all.front().name;
  for (size_t i = 1; i < all.size(); ++i) known += ", " + all[i].name;
  throw ValidationError("--agent: unknown agent '" + name + "' (known: " + known + ")");
}

}  // namespace placer
