#include "agents/methods.h"

namespace placer {

void add_search_methods(std::vector<MethodInfo>* /*out*/) {}

}  // namespace placer
