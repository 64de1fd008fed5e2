#!/usr/bin/env bash
# Copies into DIR (default .gpu/kit) exactly the third-party headers and libraries that the
# minimal build of bench/gdp_ppo_update.cpp (bench/gpu_kit/) needs besides LibTorch, for a GPU
# machine without the Debian -dev packages (scripts/gpu_ppo_bench.sh, docs/distributed.md):
#
#   DIR/include/{boost,Eigen,yaml-cpp,nlohmann,...}   the header closure of the sources listed
#                                                     in bench/gpu_kit/sources.txt
#   DIR/lib/libyaml-cpp.{a,so*}                       yaml-cpp (static and shared)
#   DIR/MANIFEST.txt                                  Debian packages, versions, file counts
#
#   bash scripts/make_gpu_kit.sh [DIR]
#   bash scripts/make_gpu_kit.sh --check BUILD_DIR [DIR]
#
# The closure is what the compilers report (`-M` dependency lists) for every source, with
# g++ and, when installed, clang++, each in C++17 and C++20, so headers that only another
# compiler or standard would take come along too. LibTorch's headers are not copied (the GPU
# machine has its own LibTorch); any other non-system header from outside the known
# third-party roots makes the script fail, naming it.
#
# --check BUILD_DIR: after a build of bench/gpu_kit with -DPLACER_GPU_KIT=DIR (Ninja), lists
# from the build's dependency records (`ninja -t deps`) every header that came from neither
# DIR/include, the repository, LibTorch, nor the C/C++ standard library and system headers;
# exits 1 if there is any (the kit is then incomplete: those came from this machine's
# /usr/include).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

CHECK=""
if [ "${1:-}" = "--check" ]; then
  CHECK=${2:?usage: make_gpu_kit.sh --check BUILD_DIR [DIR]}
  shift 2
fi
DIR=${1:-.gpu/kit}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

# Third-party include roots on this (Debian) machine: "<prefix>/<top>" is copied to
# DIR/include/<top>. Eigen's headers live one level down (eigen3/).
SYS=/usr/include
THIRD_PARTY_ROOTS=("$SYS/eigen3" "$SYS")
THIRD_PARTY_TOPS="boost Eigen unsupported yaml-cpp nlohmann toml++"
# LibTorch's header folders (Debian: under /usr/include; the GPU machine brings its own).
# Also what Debian's LibTorch headers include of their own dependencies (glog, gflags: the
# pip wheels' c10 does not use them).
TORCH_TOPS="torch ATen c10 caffe2 TH THC THCUNN c10d glog gflags"
TORCH_API_INC=${TORCH_API_INC:-$SYS/torch/csrc/api/include}

# Classifies one dependency path: prints "kit <root> <rel>", "skip" or "other <path>".
classify() {
  local p=$1
  case "$p" in
    "$ROOT"/*) echo skip; return ;;
    /usr/include/c++/* | /usr/lib/gcc/* | /usr/lib/llvm-*/* | /usr/include/x86_64-linux-gnu/*) echo skip; return ;;
  esac
  local r rel top
  for r in "${THIRD_PARTY_ROOTS[@]}"; do
    case "$p" in
      "$r"/*)
        rel=${p#"$r"/}
        top=${rel%%/*}
        if [[ " $THIRD_PARTY_TOPS " == *" $top "* ]]; then echo "kit $r $rel"; return; fi
        ;;
    esac
  done
  case "$p" in
    "$SYS"/*)
      rel=${p#"$SYS"/}
      top=${rel%%/*}
      if [[ " $TORCH_TOPS " == *" $top "* ]]; then echo skip; return; fi
      # C library / kernel headers: plain files or the usual folders.
      if [ "$rel" = "$top" ]; then echo skip; return; fi
      case "$top" in
        sys | bits | linux | asm | asm-generic | netinet | arpa | net | gnu | rpc | scsi | \
          netpacket | protocols) echo skip; return ;;
      esac
      ;;
  esac
  echo "other $p"
}

# Normalises paths (stdin, one per line; ".." removed, links kept) and drops those under any
# of the given prefixes, so that classify() (a fork per path) sees only the few left.
drop_prefixes() {
  xargs -r realpath -s -m -- | awk -v list="$*" '
    BEGIN { n = split(list, pre, " ") }
    { for (i = 1; i <= n; i++) if (index($0, pre[i]) == 1) next; print }'
}
# Prefixes that classify() skips anyway: the repository, LibTorch, the C++ library, the
# compilers' own headers.
skip_prefixes() {
  local t out="$ROOT/ $SYS/c++/ /usr/lib/gcc/ /usr/lib/llvm- $SYS/x86_64-linux-gnu/"
  for t in $TORCH_TOPS; do out="$out $SYS/$t/"; done
  echo "$out"
}

if [ -n "$CHECK" ]; then
  [ -f "$CHECK/build.ninja" ] || { echo "make_gpu_kit: $CHECK is not a Ninja build folder" >&2; exit 2; }
  # Records: "target: #deps ..." then the dependencies indented by 4 spaces (relative ones
  # are relative to the build folder). Only the objects' records (headers): CMake 3.27+ also
  # records the link step's inputs (libraries).
  build_abs=$(cd "$CHECK" && pwd)
  deps=$(ninja -C "$CHECK" -t deps |
    awk '/^[^ ]/ { obj = ($1 ~ /\.o:$/) } /^    / && obj { sub(/^    /, ""); print }' |
    sed -E "s|^([^/])|$build_abs/\1|" | xargs -r realpath -s -m -- | sort -u)
  # A LibTorch outside /usr (a pip wheel: <prefix>/include) and the CUDA toolkit its headers
  # include are the GPU machine's own.
  torch_dir=$(sed -n 's/^Torch_DIR:[A-Z]*=//p' "$CHECK/CMakeCache.txt" 2>/dev/null || true)
  torch_inc=""
  if [ -n "$torch_dir" ]; then
    torch_inc=$(realpath -s -m "$torch_dir/../../../include")
    torch_inc_real=$(realpath -m "$torch_inc")
    [ "$torch_inc_real" = "$SYS" ] && torch_inc=""
  fi
  n=$(grep -c . <<<"$deps" || true)
  kit=$(grep -c -F "$DIR/include/" <<<"$deps" || true)
  extra="$DIR/include/ /usr/local/cuda /opt/cuda"
  [ -n "$torch_inc" ] && extra="$extra $torch_inc/ $torch_inc_real/"
  # Fails on a header of the kit's libraries from elsewhere (the kit is incomplete) and on
  # any other non-system header under /usr/include (a -dev package the GPU machine lacks);
  # headers elsewhere (e.g. a pip wheel's nvidia/* packages, reached through LibTorch's
  # headers) are only counted.
  bad=0 others=0
  while IFS= read -r p; do
    [ -n "$p" ] || continue
    if [[ "/$p" =~ /(boost|Eigen|unsupported|yaml-cpp|nlohmann|toml\+\+)/ ]]; then
      echo "from outside the kit: $p"; bad=$((bad + 1)); continue
    fi
    c=$(classify "$p")
    case "$c" in
      kit*) echo "from outside the kit: $p"; bad=$((bad + 1)) ;;
      other*)
        case "$p" in
          "$SYS"/*) echo "from a -dev package: $p"; bad=$((bad + 1)) ;;
          *) others=$((others + 1)) ;;
        esac ;;
    esac
  done < <(drop_prefixes $(skip_prefixes) $extra <<<"$deps")
  [ "$n" -gt 0 ] || { echo "make_gpu_kit: no dependency records in $CHECK (not built?)" >&2; exit 2; }
  echo "make_gpu_kit --check: $n headers in $CHECK's dependency records, $kit from $DIR/include, $bad third-party ones from elsewhere, $others outside /usr/include (LibTorch's own dependencies)"
  [ "$bad" = 0 ] || exit 1
  exit 0
fi

mapfile -t sources < <(grep -v '^#' bench/gpu_kit/sources.txt | grep -v '^$' | while read -r g; do ls $g; done)
[ "${#sources[@]}" -gt 0 ] || { echo "make_gpu_kit: no sources" >&2; exit 1; }
[ -d "$TORCH_API_INC" ] || { echo "make_gpu_kit: LibTorch headers not found at $TORCH_API_INC (set TORCH_API_INC)" >&2; exit 1; }

compilers=()
command -v g++ >/dev/null && compilers+=(g++)
command -v clang++ >/dev/null && compilers+=(clang++)
[ "${#compilers[@]}" -gt 0 ] || { echo "make_gpu_kit: no C++ compiler" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
jobs=$(nproc 2>/dev/null || echo 2)
echo "make_gpu_kit: header closure of ${#sources[@]} sources with ${compilers[*]} (C++17, C++20)..." >&2
deps_of() {  # compiler standard source index: writes $tmp/index.d
  "$1" -std="$2" -M -w -I"$ROOT" -isystem "$SYS/eigen3" -isystem "$TORCH_API_INC" "$3" \
    >"$tmp/$4.d" 2>"$tmp/$4.err" || echo "$1 $2 $3" >>"$tmp/failed"
}
export -f deps_of
export ROOT SYS TORCH_API_INC tmp
i=0
for cxx in "${compilers[@]}"; do
  for std in c++17 c++20; do
    for s in "${sources[@]}"; do
      i=$((i + 1))
      echo "$cxx $std $s $i"
    done
  done
done | xargs -P "$jobs" -n 4 bash -c 'deps_of "$@"' _
if [ -s "$tmp/failed" ]; then
  # A standard or compiler the code does not build with (e.g. LibTorch 1.13 under C++20 with
  # clang) still contributes what it got; g++ C++17 (the project's build) must succeed.
  if grep -q "^g++ c++17 " "$tmp/failed"; then
    echo "make_gpu_kit: g++ -std=c++17 -M failed:" >&2
    grep "^g++ c++17 " "$tmp/failed" >&2
    cat "$tmp"/*.err | head -20 >&2
    exit 1
  fi
  echo "make_gpu_kit: note: $(wc -l <"$tmp/failed") of $i dependency runs failed (other compiler/standard), their partial lists are used" >&2
fi

# All dependency paths, one per line (make syntax: "obj: a b \" continuation lines).
cat "$tmp"/*.d | sed -e 's/\\$//' -e 's/^[^:]*: *//' | tr ' ' '\n' | grep '^/' | sort -u >"$tmp/all"
rm -rf "$DIR/include" "$DIR/lib"
mkdir -p "$DIR/include" "$DIR/lib"
copied=0 others=()
while IFS= read -r p; do
  read -r kind a b <<<"$(classify "$p")"
  case "$kind" in
    kit)
      mkdir -p "$DIR/include/$(dirname "$b")"
      cp -p "$a/$b" "$DIR/include/$b"
      copied=$((copied + 1)) ;;
    other) others+=("$a") ;;
  esac
done < <(drop_prefixes $(skip_prefixes) <"$tmp/all")
if [ "${#others[@]}" -gt 0 ]; then
  echo "make_gpu_kit: headers outside the known third-party roots and the system (add them to THIRD_PARTY_TOPS or TORCH_TOPS):" >&2
  printf '  %s\n' "${others[@]}" | sort -u | head -40 >&2
  exit 1
fi

# yaml-cpp: the library the Debian build links (its CMake config), static and shared.
ylib=$(ls /usr/lib/x86_64-linux-gnu/libyaml-cpp.so.*.* 2>/dev/null | head -1 || true)
[ -n "$ylib" ] || { echo "make_gpu_kit: libyaml-cpp.so not found (libyaml-cpp-dev)" >&2; exit 1; }
cp -a /usr/lib/x86_64-linux-gnu/libyaml-cpp.so* "$DIR/lib/"
cp -p /usr/lib/x86_64-linux-gnu/libyaml-cpp.a "$DIR/lib/"

{
  echo "placer GPU kit, made $(date -u +%Y-%m-%dT%H:%M:%SZ) by scripts/make_gpu_kit.sh from $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "for: bench/gpu_kit (bench/gdp_ppo_update.cpp), ${#sources[@]} sources; closure by ${compilers[*]} C++17/C++20"
  echo "headers: $copied files; top-level: $(cd "$DIR/include" && ls | tr '\n' ' ')"
  echo "packages (Debian):"
  for pkg in libboost1.74-dev libeigen3-dev libyaml-cpp-dev libyaml-cpp0.7 nlohmann-json3-dev libtomlplusplus-dev; do
    v=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || echo "?")
    echo "  $pkg $v"
  done
  echo "libraries: $(cd "$DIR/lib" && ls | tr '\n' ' ')"
  syms=$(objdump -T "$ylib" 2>/dev/null || true)
  echo "yaml-cpp.so needs: $(grep -o 'GLIBCXX_[0-9.]*' <<<"$syms" | sort -V -u | tail -1) $(grep -o 'GLIBC_[0-9.]*' <<<"$syms" | sort -V -u | tail -1) (the build links libyaml-cpp.a by default)"
  echo "compiler here: $(g++ --version | head -1)"
  echo "licenses: Boost Software License 1.0, MPL 2.0 (Eigen), MIT (yaml-cpp, nlohmann-json, toml++)"
} >"$DIR/MANIFEST.txt"

echo "make_gpu_kit: $copied headers ($(cd "$DIR/include" && ls | tr '\n' ' ')), $(ls "$DIR/lib" | wc -l) library files -> $DIR"
echo "make_gpu_kit: size $(du -sh "$DIR" | cut -f1) ($(du -sb "$DIR" | cut -f1) bytes)"
