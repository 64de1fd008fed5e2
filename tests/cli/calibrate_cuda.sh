#!/usr/bin/env bash
# `placer-calibrate` (simulator/calibration/cuda) without a GPU: --help, precise errors with
# exit 2 on bad arguments or launcher environment, and exit 1 with "no CUDA device" (never a
# crash) when it gets past its arguments on a machine without a usable GPU.
# Usage: calibrate_cuda.sh PLACER SOURCE_DIR TEST_DATA_DIR (placer-calibrate sits next to
# PLACER in the build tree, or is named by $PLACER_CALIBRATE). Skips when it is not built.
set -u
calibrate=${PLACER_CALIBRATE:-$(dirname "$1")/placer-calibrate}
if [ ! -x "$calibrate" ]; then
  echo "skip: $calibrate not built (no CUDA toolkit, or target placer-calibrate not built)"
  exit 0
fi
placer=$calibrate  # expect.bash runs "$placer"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"

# --help: exit 0 and the options the docs promise.
n=$((n + 1))
out=$("$calibrate" --help 2>&1); rc=$?
if [ $rc -ne 0 ]; then echo "FAIL help: exit $rc"; fail=$((fail + 1))
else
  for s in "Usage: placer-calibrate" --out --quick --only --dtypes --min-bytes --max-bytes \
           --warmup --iters --devices MASTER_PORT; do
    if ! echo "$out" | grep -qF -- "$s"; then echo "FAIL help: lacks '$s'"; fail=$((fail + 1)); break; fi
  done
  echo "ok   help"
fi

# Bad arguments: exit 2 with the option named.
expect_rc2() {
  local name=$1; shift
  local needles=()
  while [ "$1" != "--" ]; do needles+=("$1"); shift; done; shift
  n=$((n + 1))
  out=$("$calibrate" "$@" 2>&1); rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL $name: exit $rc, expected 2: $out"; fail=$((fail + 1)); return; fi
  for s in "${needles[@]}"; do
    if ! echo "$out" | grep -qF -- "$s"; then echo "FAIL $name: lacks '$s': $out"; fail=$((fail + 1)); return; fi
  done
  echo "ok   $name: $(echo "$out" | head -n 1)"
}
expect_rc2 unknown-arg "unknown argument '--frobnicate'" "--help" -- --frobnicate
expect_rc2 bad-kind "--only: unknown value 'fft'" -- --only gemm,fft
expect_rc2 bad-dtype "--dtypes: unknown value 'fp8'" -- --dtypes fp8
expect_rc2 bad-size "--max-bytes: unknown size unit 'X'" -- --max-bytes 3X
expect_rc2 min-over-max "--min-bytes 2 MiB is larger than --max-bytes 1 MiB" -- --min-bytes 2M --max-bytes 1M
expect_rc2 zero-iters "--iters: 0 is out of range" -- --iters 0
expect_rc2 missing-value "--out: missing value" -- --out
expect_rc2 dup-device "--devices: device 1 is listed twice" -- --devices 1,1

# A bad launcher environment is named (exit 1, before any CUDA call).
n=$((n + 1))
out=$(WORLD_SIZE=2 RANK=1 MASTER_ADDR=127.0.0.1 "$calibrate" --quick 2>&1); rc=$?
if [ $rc -eq 1 ] && echo "$out" | grep -qF "MASTER_PORT is not"; then echo "ok   env-missing-port"
else echo "FAIL env-missing-port: exit $rc: $out"; fail=$((fail + 1)); fi

# Past the arguments: on a machine with a GPU it would measure; without one it must stop
# with "no CUDA device" and exit 1. Only checked when nvidia-smi shows no GPU.
if ! nvidia-smi -L >/dev/null 2>&1; then
  n=$((n + 1))
  out=$("$calibrate" --quick --out "$tmp/m.csv" 2>&1); rc=$?
  if [ $rc -eq 1 ] && echo "$out" | grep -qF "no CUDA device" && [ ! -e "$tmp/m.csv" ]; then
    echo "ok   no-gpu: $out"
  else
    echo "FAIL no-gpu: exit $rc: $out"; fail=$((fail + 1))
  fi
fi

echo "$((n - fail))/$n checks passed"
[ $fail -eq 0 ]
