#!/usr/bin/env bash
# placer setup: installs the Debian packages the project needs (idempotent, quiet when
# everything is present), then configures and builds placer in Release with ccache.
#
#   bash scripts/setup.sh              # install packages + configure + build (build/)
#   bash scripts/setup.sh --no-build   # install packages only
#   bash scripts/setup.sh --python     # also the optional Python group (model export)
#
# Environment: BUILD_DIR (default build), BUILD_TYPE (default Release), JOBS (default nproc).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build=1
python=0
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    --python) python=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build ccache pkg-config git python3
  libboost-graph-dev libeigen3-dev libcli11-dev libyaml-cpp-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev libonnx-dev protobuf-compiler libprotobuf-dev
  # Debian's libtorch calls the system BLAS (BLAS_INFO=generic); without this the netlib
  # reference BLAS serves it, ~9x slower matmuls (docs/results.md, "GDP speed"). The OpenMP
  # build matches libtorch's own OpenMP threads.
  libopenblas0-openmp
  libmetis-dev libscotch-dev
  gnuplot-nox
  # Headers of the Gloo library that libtorch's c10d ProcessGroupGloo includes (distributed
  # pretraining, docs/distributed.md); the library itself is inside libtorch.
  libgloo-dev
  # placer-calibrate's multi-host bootstrap can use MPI (optional at build time).
  libopenmpi-dev
)
if [ "$python" = 1 ]; then
  packages+=(python3 python3-torch python3-torchvision python3-onnx python3-yaml)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${#missing[@]} package(s): ${missing[*]}" >&2
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ "$build" = 1 ] || exit 0

build_dir="${BUILD_DIR:-$here/build}"
build_type="${BUILD_TYPE:-Release}"
jobs="${JOBS:-$(nproc)}"
mkdir -p "$build_dir"
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  generator=()
  if command -v ninja >/dev/null; then generator=(-G Ninja); fi
  if ! cmake -S "$here" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="$build_type" \
      >"$build_dir/configure.log" 2>&1; then
    cat "$build_dir/configure.log" >&2
    echo "setup.sh: cmake configure failed (log: $build_dir/configure.log)" >&2
    exit 1
  fi
fi
# Build quietly; on failure show the compiler's output.
if ! cmake --build "$build_dir" -j "$jobs" >"$build_dir/build.log" 2>&1; then
  grep -v -E '^\[[0-9]+/[0-9]+\] ' "$build_dir/build.log" | tail -n 80 >&2
  echo "setup.sh: build failed (full log: $build_dir/build.log)" >&2
  exit 1
fi
echo "setup.sh: built $build_dir/placer ($build_type)" >&2
