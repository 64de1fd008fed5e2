#!/usr/bin/env bash
# One command for a GPU machine: builds bench/gdp_ppo_update.cpp alone (bench/gpu_kit/)
# against the machine's LibTorch and the kit of scripts/make_gpu_kit.sh, then times the GDP
# PPO update on the CPU and on the GPU (docs/distributed.md, "Measuring the PPO update on a
# GPU"). Writes at most three files to OUT:
#
#   OUT/ppo.csv    one line per device x timed update (bench/gdp_ppo_update.cpp --csv)
#   OUT/ppo.log    machine and tool versions, configure / build tails, the benchmark's output
#   OUT/build.log  the whole configure + build output (last 3000 lines)
#
#   bash scripts/gpu_ppo_bench.sh OUT
#
# Every phase is time-boxed (seconds): configure CONFIGURE_TIMEOUT (120), build BUILD_TIMEOUT
# (300), benchmark RUN_TIMEOUT (240). Environment overrides:
#   PLACER_GPU_KIT   kit folder (default .gpu/kit, made here by scripts/make_gpu_kit.sh)
#   BUILD_DIR        build folder (default build-gpu-kit)
#   TORCH_DIR        folder holding TorchConfig.cmake (default: asked of PYTHON's torch,
#                    torch.utils.cmake_prefix_path); e.g. /usr/lib/x86_64-linux-gnu/cmake/Torch
#   PYTHON           python with torch (default /opt/torch/.venv/bin/python3, else python3)
#   CUDA_ROOT        CUDA toolkit (default /usr/local/cuda when it exists)
#   JOBS             build jobs (default: all cores)
#   BENCH_ARGS       benchmark options (default: --updates 20 --warmup 3)
set -uo pipefail
OUT=${1:?usage: gpu_ppo_bench.sh OUT}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
KIT=${PLACER_GPU_KIT:-$ROOT/.gpu/kit}
BUILD=${BUILD_DIR:-$ROOT/build-gpu-kit}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
BENCH_ARGS=${BENCH_ARGS:---updates 20 --warmup 3}
LOG=$OUT/ppo.log
BLOG=$OUT/build.log
rm -f "$OUT/ppo.csv" "$LOG" "$BLOG"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t_start=$(date +%s)

say() { echo "gpu_ppo_bench: $*" | tee -a "$LOG"; }
fail() {  # phase, log file to show
  say "FAILED in phase $1 after $(($(date +%s) - t_start)) s (logs: $LOG, $BLOG)"
  [ -n "${2:-}" ] && [ -f "$2" ] && { echo "--- last 40 lines of $1 ---"; tail -40 "$2"; } | tee -a "$LOG"
  exit 1
}

{
  echo "# gpu_ppo_bench $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (+ local changes)')"
  echo "# $(uname -srm); $(nproc) cores"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/# gpu: /'
  echo "# $(${CXX:-g++} --version 2>&1 | head -1)"
  echo "# $(cmake --version 2>&1 | head -1)"
} >"$LOG"

if [ ! -f "$KIT/include/yaml-cpp/yaml.h" ]; then
  say "no kit at $KIT: run scripts/make_gpu_kit.sh on the build machine and carry .gpu/kit"
  fail kit
fi
say "kit $KIT: $(head -3 "$KIT/MANIFEST.txt" 2>/dev/null | tail -1)"

# LibTorch: TORCH_DIR, else the python torch's CMake prefix.
cmake_torch=()
if [ -n "${TORCH_DIR:-}" ]; then
  cmake_torch=(-DTorch_DIR="$TORCH_DIR")
  say "LibTorch from TORCH_DIR=$TORCH_DIR"
else
  PY=${PYTHON:-/opt/torch/.venv/bin/python3}
  [ -x "$PY" ] || PY=$(command -v python3 || true)
  prefix=$([ -n "$PY" ] && "$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
  if [ -z "$prefix" ]; then
    say "no python torch (tried ${PYTHON:-/opt/torch/.venv/bin/python3} and python3); set TORCH_DIR to the folder of TorchConfig.cmake"
    fail find-torch
  fi
  cmake_torch=(-DCMAKE_PREFIX_PATH="$prefix")
  say "LibTorch from $PY: torch $("$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())' 2>&1 | tail -1) ($prefix)"
fi

# CUDA toolkit (a CUDA LibTorch's CMake config looks for it).
CUDA_ROOT=${CUDA_ROOT:-/usr/local/cuda}
cmake_cuda=()
if [ -x "$CUDA_ROOT/bin/nvcc" ]; then
  export PATH="$CUDA_ROOT/bin:$PATH" CUDACXX="$CUDA_ROOT/bin/nvcc" CUDA_HOME="$CUDA_ROOT"
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
  # LibTorch's config may enable CUDA as a CMake language (an nvcc test compile): accept a host
  # g++ newer than this nvcc lists as supported; no CUDA source is compiled.
  export CUDAFLAGS=${CUDAFLAGS:--allow-unsupported-compiler}
  cmake_cuda=(-DCUDAToolkit_ROOT="$CUDA_ROOT" -DCUDA_TOOLKIT_ROOT_DIR="$CUDA_ROOT"
    -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}")
  say "CUDA toolkit $CUDA_ROOT: $("$CUDA_ROOT/bin/nvcc" --version | tail -2 | head -1)"
fi
gen=(-G Ninja)
command -v ninja >/dev/null || gen=(-G "Unix Makefiles")

t0=$(date +%s)
configure() {  # extra cmake arguments
  timeout "${CONFIGURE_TIMEOUT:-120}" cmake -S bench/gpu_kit -B "$BUILD" "${gen[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DPLACER_GPU_KIT="$KIT" "${cmake_torch[@]}" "${cmake_cuda[@]}" \
    "$@" >"$tmp/configure.log" 2>&1
  rc=$?
  cat "$tmp/configure.log" >>"$BLOG"
  { echo "--- configure $* (rc $rc, $(($(date +%s) - t0)) s), last 25 lines ---"; tail -25 "$tmp/configure.log"; } >>"$LOG"
  [ $rc = 0 ] || fail configure "$tmp/configure.log"
  say "configured in $(($(date +%s) - t0)) s: $(grep 'placer-kit: LibTorch' "$tmp/configure.log" | sed 's/^-- //')"
}
configure

t0=$(date +%s)
timeout "${BUILD_TIMEOUT:-300}" cmake --build "$BUILD" --target gdp_ppo_update -j "$JOBS" \
  >"$tmp/build.log" 2>&1
rc=$?
cat "$tmp/build.log" >>"$BLOG"
if [ $rc != 0 ] && grep -q 'C++20 or later' "$tmp/build.log"; then
  # A LibTorch that requires C++20 before the version bench/gpu_kit expects it from.
  say "LibTorch wants C++20: reconfiguring with PLACER_CXX_STANDARD=20"
  configure -DPLACER_CXX_STANDARD=20
  timeout "${BUILD_TIMEOUT:-300}" cmake --build "$BUILD" --target gdp_ppo_update -j "$JOBS" \
    >"$tmp/build.log" 2>&1
  rc=$?
  cat "$tmp/build.log" >>"$BLOG"
fi
tail -3000 "$BLOG" >"$tmp/b" && mv "$tmp/b" "$BLOG"
{ echo "--- build (rc $rc, $(($(date +%s) - t0)) s, $(grep -c 'warning:' "$tmp/build.log") warnings), last 30 lines ---"; tail -30 "$tmp/build.log"; } >>"$LOG"
[ $rc = 0 ] || fail build "$tmp/build.log"
say "built in $(($(date +%s) - t0)) s ($(grep -c 'warning:' "$tmp/build.log") warnings, see $BLOG)"
if [ -f "$BUILD/build.ninja" ]; then  # which third-party headers the build used (report only)
  say "$(bash scripts/make_gpu_kit.sh --check "$BUILD" "$KIT" 2>&1 | tail -5)"
fi

export LD_LIBRARY_PATH="$KIT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
t0=$(date +%s)
# shellcheck disable=SC2086
timeout "${RUN_TIMEOUT:-240}" "$BUILD/gdp_ppo_update" $BENCH_ARGS --csv "$OUT/ppo.csv" \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
{ echo "--- benchmark (rc $rc, $(($(date +%s) - t0)) s): $BUILD/gdp_ppo_update $BENCH_ARGS --csv $OUT/ppo.csv"; cat "$tmp/err" "$tmp/out"; } >>"$LOG"
[ $rc = 0 ] || { cat "$tmp/out" "$tmp/err" | tail -40; fail benchmark; }
say "benchmark ran in $(($(date +%s) - t0)) s; total $(($(date +%s) - t_start)) s; files: $(cd "$OUT" && ls | tr '\n' ' ')"
echo
cat "$tmp/out"
grep -q '^cuda ' "$tmp/out" || echo "gpu_ppo_bench: NOTE: no cuda row (see $LOG)"
