#!/usr/bin/env bash
# Builds placer-calibrate from this folder alone (CMake if present, else one nvcc line) and
# runs it, for a bare GPU machine (no Debian -dev packages needed). Writes into OUT_DIR:
# measurements.csv, placer-calibrate.log (progress), machine.txt (nvidia-smi, versions),
# build.log.
#
#   simulator/calibration/cuda/run_on_gpu.sh OUT_DIR [placer-calibrate options...]
#   e.g. simulator/calibration/cuda/run_on_gpu.sh "$OUT" --quick
#
# Environment: PLACER_CALIBRATE_BUILD (build dir, default <repo>/build-cal), CUDA_HOME
# (default /usr/local/cuda), CUDA_ARCH (e.g. 90; default: the GPU's, from nvidia-smi),
# PLACER_CALIBRATE_NO_CMAKE=1 (use the nvcc line even where CMake exists).
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 OUT_DIR [placer-calibrate options...]" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$1; shift
mkdir -p "$out"
build=${PLACER_CALIBRATE_BUILD:-$here/../../../build-cal}
cuda=${CUDA_HOME:-/usr/local/cuda}
export PATH="$cuda/bin:$PATH"

arch=${CUDA_ARCH:-}
if [ -z "$arch" ] && command -v nvidia-smi >/dev/null; then
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d '. ' || true)
fi

{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(hostname)"
  nvidia-smi 2>&1 || echo "nvidia-smi: not available"
  nvidia-smi topo -m 2>&1 || true
  nvcc --version 2>&1 || echo "nvcc: not found"
  cmake --version 2>&1 | head -n1 || echo "cmake: not found"
} > "$out/machine.txt"

bin=$build/placer-calibrate
if [ -z "${PLACER_CALIBRATE_NO_CMAKE:-}" ] && command -v cmake >/dev/null; then
  archs=()
  [ -n "$arch" ] && archs=(-DCMAKE_CUDA_ARCHITECTURES="$arch")
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT="$cuda" \
    "${archs[@]}" > "$out/build.log" 2>&1
  cmake --build "$build" -j "$(nproc)" >> "$out/build.log" 2>&1 || { tail -n 30 "$out/build.log" >&2; exit 1; }
else
  # No CMake: one nvcc line, with cuDNN / NCCL when their headers and libraries are there.
  mkdir -p "$build"
  flags=(-O2 -std=c++17 "-I$here" "-L$cuda/lib64" -Xlinker -rpath -Xlinker "$cuda/lib64")
  [ -n "$arch" ] && flags+=(-arch="sm_$arch")
  libs=(-lcublas)
  have() {  # have HEADER LIB: header and library somewhere usual
    { [ -f "$cuda/include/$1" ] || [ -f "/usr/include/$1" ]; } &&
      { compgen -G "$cuda/lib64/lib$2.so*" >/dev/null || compgen -G "/usr/lib/x86_64-linux-gnu/lib$2.so*" >/dev/null; }
  }
  if have cudnn.h cudnn; then flags+=(-DPLACER_CALIBRATE_CUDNN); libs+=(-lcudnn); fi
  if have nccl.h nccl; then flags+=(-DPLACER_CALIBRATE_NCCL); libs+=(-lnccl); fi
  echo "nvcc ${flags[*]} ... ${libs[*]}" > "$out/build.log"
  nvcc "${flags[@]}" "$here"/*.cpp "$here/kernels.cu" "${libs[@]}" -o "$bin" >> "$out/build.log" 2>&1 ||
    { tail -n 30 "$out/build.log" >&2; exit 1; }
fi
{ echo "# placer-calibrate binary"; ldd "$bin" 2>&1 | grep -E "cublas|cudnn|nccl|mpi" || true; } >> "$out/machine.txt"

set +e
"$bin" --out "$out/measurements.csv" "$@" 2> >(tee "$out/placer-calibrate.log" >&2)
rc=$?
set -e
echo "placer-calibrate exit status $rc; results in $out" >&2
exit $rc
