#pragma once
// The error every entry point of a learned placer's stand-in throws when the project is
// built without LibTorch (the no_torch_*.cpp files).

#include <string>

#include "src/util/error.h"

namespace placer {

/// Throws Error "this placer was built without LibTorch: <what>; install libtorch-dev
/// (scripts/setup.sh) and rebuild", e.g. what = "the placeto placer is unavailable".
[[noreturn]] inline void throw_built_without_torch(const std::string& what) {
  throw Error("this placer was built without LibTorch: " + what +
              "; install libtorch-dev (scripts/setup.sh) and rebuild");
}

}  // namespace placer
