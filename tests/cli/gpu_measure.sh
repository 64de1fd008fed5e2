#!/usr/bin/env bash
# scripts/gpu_measure.sh on a machine without a GPU (its CPU-side parts are tested
# here so that the lent GPU minutes are spent measuring): bad options exit 2 with a usage
# line; a run without a GPU still ends 0 with the machine description and the logs packed,
# placer-calibrate's "no CUDA device" line in them, and never more than the 8 files a device
# call brings back.
# Usage: gpu_measure.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $1"; }
script=$src/scripts/gpu_measure.sh

for args in "--bogus" "--steps-seconds x" "--ppo-seconds" ""; do
  # shellcheck disable=SC2086
  bash "$script" ${args:+$tmp/o} $args > "$tmp/err" 2>&1
  rc=$?
  if [ "$rc" -eq 2 ] && grep -q "usage:\|time limits are whole seconds" "$tmp/err"; then
    ok "bad options '$args' -> exit 2"
  else
    bad "bad options '$args': exit $rc: $(head -c 300 "$tmp/err")"
  fi
done

calibrate=$(dirname "$placer")/placer-calibrate
if [ -x "$calibrate" ]; then
  PLACER_CALIBRATE=$calibrate PYTHON=/bin/false bash "$script" "$tmp/out" --calibrate-seconds 30 \
    --steps-seconds 10 > "$tmp/log" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then ok "no GPU: exit 0"; else bad "no GPU: exit $rc: $(tail -5 "$tmp/log")"; fi
  if [ -s "$tmp/out/machine.txt" ] && grep -q "placer-calibrate" "$tmp/out/machine.txt"; then
    ok "machine.txt written"
  else
    bad "machine.txt missing or without the placer-calibrate line"
  fi
  if tar -xzf "$tmp/out/logs.tar.gz" -O calibrate.log 2>/dev/null | grep -q "no CUDA device"; then
    ok "logs.tar.gz holds placer-calibrate's no-GPU error"
  else
    bad "logs.tar.gz: no calibrate.log with 'no CUDA device'"
  fi
  files=$(find "$tmp/out" -type f | wc -l)
  if [ "$files" -le 8 ]; then ok "$files files (<= 8)"; else bad "$files files in OUT (> 8)"; fi
else
  echo "skip no-GPU run: $calibrate was not built (no CUDA toolkit)"
fi
echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
