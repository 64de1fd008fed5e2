#!/usr/bin/env bash
# placer setup: installs the Debian packages the project needs (idempotent, quiet when
# everything is present), then configures and builds placer in Release with ccache.
#
#   bash scripts/setup.sh              # install packages + configure + build the placer executable
#   bash scripts/setup.sh --all        # ... and every target: tests and benchmarks (for ctest)
#   bash scripts/setup.sh --no-build   # install packages only
#   bash scripts/setup.sh --python     # also the optional Python group (model export)
#
# Environment: BUILD_DIR (default build), BUILD_TYPE (default Release), JOBS (default nproc).
#
# Progress goes to stderr: on a terminal one status line that updates in place (packages
# being set up, configure, build percent from ninja's [n/N] lines); otherwise one line per
# stage. A first build of everything (--all) takes 15-30 minutes on 2 cores; the `placer`
# executable alone needs 169 of its 300 compile steps.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build=1
all=0
python=0
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    --all) all=1 ;;
    --python) python=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build ccache pkg-config git python3
  libboost-graph-dev libeigen3-dev libcli11-dev libyaml-cpp-dev nlohmann-json3-dev zlib1g-dev
  libtomlplusplus-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libtorch-dev libonnx-dev protobuf-compiler libprotobuf-dev
  # Debian's libtorch calls the system BLAS (BLAS_INFO=generic); without this the netlib
  # reference BLAS serves it, ~9x slower matmuls (docs/results.md, "GDP: speed and its table suite"). The OpenMP
  # build matches libtorch's own OpenMP threads.
  libopenblas0-openmp
  libmetis-dev libscotch-dev
  gnuplot-nox
  # Function lengths of the lint test (scripts/check_function_length.sh).
  universal-ctags
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

tty=0
if [ -t 2 ]; then tty=1; fi

# status TEXT: on a terminal, rewrite the status line; otherwise nothing (stages print their
# own line with `say`).
status() {
  if [ "$tty" = 1 ]; then
    local cols="${COLUMNS:-100}"
    printf '\r\033[K%s' "${1:0:$((cols - 1))}" >&2
  fi
}
# say TEXT: one line (ends the status line on a terminal).
say() {
  if [ "$tty" = 1 ]; then printf '\r\033[K' >&2; fi
  echo "$1" >&2
}

# Reads apt-get's output and shows which package is being unpacked / set up.
apt_progress() {
  local n=0
  while IFS= read -r line; do
    echo "$line" >>"$apt_log"
    case "$line" in
      Unpacking\ *) status "setup.sh: packages: ${line%% (*}  ($n set up)" ;;
      Setting\ up\ *)
        n=$((n + 1))
        status "setup.sh: packages: ${line%% (*}  ($n set up)" ;;
    esac
  done
}

# Reads the build's output (ninja's "[n/N] ..." or make's "[ p%] ...") into build.log and
# shows the percent done.
build_progress() {
  local re_ninja='^\[([0-9]+)/([0-9]+)\] (.*)$' re_make='^\[ *([0-9]+)%\] (.*)$'
  while IFS= read -r line; do
    echo "$line" >>"$build_log"
    if [[ "$line" =~ $re_ninja ]]; then
      local done_=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]} what=${BASH_REMATCH[3]}
      status "setup.sh: building $((100 * done_ / total))% [$done_/$total] ${what##* }"
    elif [[ "$line" =~ $re_make ]]; then
      status "setup.sh: building ${BASH_REMATCH[1]}% ${BASH_REMATCH[2]##* }"
    fi
  done
}

if [ ${#missing[@]} -gt 0 ]; then
  say "setup.sh: installing ${#missing[@]} package(s): ${missing[*]}"
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  apt_log="$(mktemp -t placer-setup-apt.XXXXXX)"
  status "setup.sh: packages: apt-get update"
  if ! $sudo apt-get update -qq >"$apt_log" 2>&1 ||
     ! $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" 2>&1 | apt_progress; then
    say "setup.sh: package installation failed:"
    tail -n 20 "$apt_log" >&2
    exit 1
  fi
  rm -f "$apt_log"
  say "setup.sh: installed ${#missing[@]} package(s)"
fi

[ "$build" = 1 ] || exit 0

build_dir="${BUILD_DIR:-$here/build}"
build_type="${BUILD_TYPE:-Release}"
jobs="${JOBS:-$(nproc)}"
mkdir -p "$build_dir"
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  generator=()
  if command -v ninja >/dev/null; then generator=(-G Ninja); fi
  say "setup.sh: configuring $build_dir ($build_type)"
  status "setup.sh: configuring (cmake)"
  if ! cmake -S "$here" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="$build_type" \
      >"$build_dir/configure.log" 2>&1; then
    say "setup.sh: cmake configure failed:"
    cat "$build_dir/configure.log" >&2
    echo "setup.sh: cmake configure failed (log: $build_dir/configure.log)" >&2
    exit 1
  fi
fi
# The build's output goes to build.log; the terminal shows the percent done. On failure, the
# compiler's messages are shown.
build_log="$build_dir/build.log"
: >"$build_log"
# By default only what `placer` needs (not the tests, benchmarks or placer-calibrate).
targets=(--target placer)
build_what="the placer executable"
if [ "$all" = 1 ]; then targets=(); build_what="every target (tests and benchmarks too)"; fi
say "setup.sh: building $build_what in $build_dir with $jobs jobs (log: $build_log; a first build of everything takes 15-30 minutes on 2 cores)"
if ! NINJA_STATUS="[%f/%t] " cmake --build "$build_dir" -j "$jobs" "${targets[@]}" 2>&1 | build_progress; then
  say "setup.sh: build failed:"
  grep -v -E '^\[[0-9]+/[0-9]+\] ' "$build_log" | tail -n 80 >&2
  echo "setup.sh: build failed (full log: $build_log)" >&2
  exit 1
fi
say "setup.sh: built $build_what: $build_dir/placer ($build_type)"
