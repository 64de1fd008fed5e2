#include "agents/methods.h"

namespace placer {

void add_dynamic_programming_methods(std::vector<MethodInfo>* /*out*/) {}

}  // namespace placer
