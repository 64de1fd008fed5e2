#include "agents/methods.h"

namespace placer {

void add_list_scheduling_methods(std::vector<MethodInfo>* /*out*/) {}

}  // namespace placer
