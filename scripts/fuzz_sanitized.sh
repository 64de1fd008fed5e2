#!/usr/bin/env bash
# The reader fuzz harness (tests/fuzz) built with -fsanitize=address,undefined in its own
# build folder (build-sanitize/, only the libraries the readers need, without LibTorch) and
# run: the same seeded, fixed cases as the main build's placer_fuzz_tests, where any
# AddressSanitizer or UndefinedBehaviorSanitizer finding (signed overflow included) aborts.
# Usage: scripts/fuzz_sanitized.sh [BUILD_DIR]   (default build-sanitize; run by .ci/run)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$here/build-sanitize}
generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
start=$(date +%s)
mkdir -p "$build"
cmake -S "$here" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
  -DPLACER_SANITIZE=ON -DPLACER_WITH_TORCH=OFF -DPLACER_WITH_CUDA=OFF -DPLACER_BUILD_BENCH=OFF > "$build/configure.log"
nice cmake --build "$build" -j 2 --target placer_fuzz_tests > "$build/build.log" 2>&1 ||
  { tail -n 40 "$build/build.log"; exit 1; }
built=$(date +%s)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$build/tests/placer_fuzz_tests" --gtest_brief=1
echo "fuzz_sanitized.sh: build $((built - start)) s, fuzz run $(($(date +%s) - built)) s"
