#include "agents/methods.h"

namespace placer {

void add_graph_partitioning_methods(std::vector<MethodInfo>* /*out*/) {}

}  // namespace placer
