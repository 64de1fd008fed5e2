#!/usr/bin/env bash
# `placer calibrate fit|check --iterations`: a small measured-runs file fitted and checked
# on the DGX A100 cluster, and bad runs files refused with file, line and column, exit 1,
# nothing written. Usage: calibrate_iterations.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"
cluster=$src/datasets/clusters/dgx_a100.cluster.yaml
header=gpus,global_batch,micro_batch,hidden,heads,layers,seq_len,tp,dp,pp,iteration_ms

# Twelve rows of the shipped file (every 115th).
{ echo $header; grep -v '^#' "$src/datasets/measurements/megatron_gpt_a100_1node.csv" | tail -n +2 | awk 'NR % 115 == 1'; } > "$tmp/runs.csv"
n=$((n + 1))
if "$placer" calibrate check --profile "$src/datasets/clusters/dgx_a100.profile.yaml" --cluster "$cluster" \
    --iterations "$tmp/runs.csv" --csv "$tmp/check.csv" > "$tmp/check.txt" 2>&1 \
   && grep -q "iterations: MAPE" "$tmp/check.txt" && [ "$(wc -l < "$tmp/check.csv")" -eq 13 ]; then
  echo "ok   check"
else
  echo "FAIL check:"; cat "$tmp/check.txt"; fail=$((fail + 1))
fi
n=$((n + 1))
if "$placer" calibrate fit --cluster "$cluster" --base "$src/datasets/clusters/dgx_a100_base.profile.yaml" \
    --iterations "$tmp/runs.csv" --fit-every 1 --fit-iterations 2 -o "$tmp/fit.profile.yaml" > "$tmp/fit.txt" 2>&1 \
   && grep -q "micro_batch_overhead" "$tmp/fit.txt" && grep -q "iteration fit on 12 runs" "$tmp/fit.profile.yaml"; then
  echo "ok   fit"
else
  echo "FAIL fit:"; cat "$tmp/fit.txt"; fail=$((fail + 1))
fi

bad() {  # bad NAME ROW EXPECTED: a runs file with ROW is refused, exit 1, no profile written
  printf '%s\n%s\n' "$header" "$2" > "$tmp/bad.csv"
  rm -f "$tmp/out.profile.yaml"
  expect "$1" "$3" -- calibrate fit --cluster "$cluster" --iterations "$tmp/bad.csv" -o "$tmp/out.profile.yaml"
  n=$((n + 1))
  "$placer" calibrate fit --cluster "$cluster" --iterations "$tmp/bad.csv" -o "$tmp/out.profile.yaml" > /dev/null 2>&1
  rc=$?
  if [ $rc -eq 1 ] && [ ! -e "$tmp/out.profile.yaml" ]; then echo "ok   $1-exit1-nothing-written"; else echo "FAIL $1: exit $rc or file written"; fail=$((fail + 1)); fi
}
bad non-numeric "8,64,4,1024,16,12,1024,2,4,1,slow" "bad.csv:2: column 'iteration_ms': 'slow' is not a finite number of normal magnitude"
bad tp-heads "8,64,4,1024,16,12,1024,3,4,1,100" "bad.csv:2: column 'tp': tp 3 does not divide heads 16"
bad gpus "8,64,4,1024,16,12,1024,2,2,1,100" "column 'gpus': dp x tp x pp = 4, not gpus 8"
bad micro-batches "8,60,8,1024,16,12,1024,2,4,1,100" "column 'global_batch'"
printf 'gpus,global_batch\n8,64\n' > "$tmp/nocol.csv"
expect missing-column "nocol.csv:1: the header has no column 'micro_batch'" -- calibrate check --profile "$src/datasets/clusters/dgx_a100.profile.yaml" --cluster "$cluster" --iterations "$tmp/nocol.csv"

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
