#pragma once
// The composite methods: one method around another, the inner one chosen by the option
// `inner` (agents/composite_methods.cpp).

#include <string>
#include <vector>

#include "agents/api/placer.h"

namespace placer {

/// The composites in display order: "hybrid" (any method M in the micro-batch and replica
/// outer loop; "M+hybrid" is an alias of `hybrid --set inner=M`) and "stages" (a placement
/// read as pipeline stages; the registered "gdp+stages" is `stages --set inner=gdp`; only
/// with LibTorch). Not in placer_methods(), so not in `best`.
const std::vector<MethodInfo>& composite_methods();
/// The composite `name`, or an "M+hybrid" alias of one (built on first use); null for any
/// other name. Throws placer::Error for "M+hybrid" with an unknown M.
const MethodInfo* composite_method_info(const std::string& name);

}  // namespace placer
