#!/usr/bin/env bash
# `placer calibrate check --profiler-trace`: per-op predictions on the hand-written Kineto
# fixture (plain and gzipped) with a uniform profile on the two_gpus cluster (hand-computed
# in tests/calibration/profiler_ops_test.cpp), the per-op CSV, --profiler-trace combined
# with --measurements (one CSV each), and one-line errors on bad traces.
# Usage: calibrate_profiler_ops.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"
cal=$data/calibration
cluster=$data/two_gpus.cluster.yaml

has() {  # has NAME FILE SUBSTRING
  n=$((n + 1))
  if grep -qF -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: '$3' not in $2:"; cat "$2"; fail=$((fail + 1)); fi
}
# csv_row NAME FILE OP KIND EXPECTED_FIELDS_5_TO_9 PREDICTED_S: the row's category..kernels
# fields are exact, its predicted time within 1e-9 relative.
csv_row() {
  n=$((n + 1))
  if awk -F, -v op="$3" -v kind="$4" -v mid="$5" -v p="$6" '
      $3 == op && $4 == kind { f = $5 "," $6 "," $7 "," $8 "," $9;
        d = ($11 - p) / p; if (d < 0) d = -d;
        if (f == mid && d < 1e-9) ok = 1 }
      END { exit ok ? 0 : 1 }' "$2"; then
    echo "ok   $1"
  else
    echo "FAIL $1: no row $3 $4 with $5 and predicted $6 in $2:"; cat "$2"; fail=$((fail + 1))
  fi
}
lacks() {  # lacks NAME FILE SUBSTRING
  n=$((n + 1))
  if ! grep -qF -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: '$3' in $2"; fail=$((fail + 1)); fi
}

cat > "$tmp/uniform.profile.yaml" <<'Y'
format_version: "1.0"
name: uniform
ops:
  matmul: {compute_efficiency: 1, memory_efficiency: 1}
  conv: {compute_efficiency: 1, memory_efficiency: 1}
  elementwise: {compute_efficiency: 1, memory_efficiency: 1}
  optimizer: {compute_efficiency: 1, memory_efficiency: 1}
  data_movement: {compute_efficiency: 1, memory_efficiency: 1}
Y

"$placer" calibrate check --profile "$tmp/uniform.profile.yaml" --cluster "$cluster" \
  --profiler-trace "$cal/kineto_ops.json.gz" --csv "$tmp/ops.csv" > "$tmp/check.txt" 2>&1
n=$((n + 1)); if [ $? -eq 0 ]; then echo "ok   check-exit"; else echo "FAIL check-exit"; cat "$tmp/check.txt"; fail=$((fail + 1)); fi
has per-op-table "$tmp/check.txt" "aten::mm f32"
has group-header "$tmp/check.txt" "pred/meas"
has group-conv "$tmp/check.txt" "conv f32                     2"
has all-ops "$tmp/check.txt" "all ops                      9"
has memset "$tmp/check.txt" "all memcpy / memset          1"
has note-unknown "$tmp/check.txt" "generic elementwise rule: aten::frobnicate (1)"
has note-orphan "$tmp/check.txt" "1 kernel / memcpy / memset events (50.0 us) without a launching CPU op"
has csv-header "$tmp/ops.csv" "source,op_id,op,kind,category,dtype,flops,bytes,kernels,measured_s,predicted_s,rel_error"
# Kernel durations against the roofline part (no launch gap): mm 57344 B / 1 TB/s = 57.344 ns
# vs 10 us; two-kernel conv 231104 B / 1 TB/s; the memset 4096 B / 1 TB/s.
csv_row csv-mm "$tmp/ops.csv" aten::mm kernel "matmul,f32,524288,57344,1" 5.7344e-08
csv_row csv-conv "$tmp/ops.csv" aten::cudnn_convolution kernel "conv,f32,1769472,231104,2" 2.31104e-07
csv_row csv-memset "$tmp/ops.csv" aten::cudnn_convolution memset "data_movement,f32,0,4096,1" 4.096e-09
n=$((n + 1))
if [ "$(wc -l < "$tmp/ops.csv")" -eq 11 ]; then echo "ok   csv-rows"; else echo "FAIL csv-rows: $(wc -l < "$tmp/ops.csv")"; fail=$((fail + 1)); fi

# The plain JSON gives the same table; --summary drops the per-op table.
"$placer" calibrate check --profile "$tmp/uniform.profile.yaml" --cluster "$cluster" \
  --profiler-trace "$cal/kineto_ops.json" --summary > "$tmp/summary.txt" 2>&1
has summary-all-ops "$tmp/summary.txt" "all ops                      9"
lacks summary-no-per-op "$tmp/summary.txt" "aten::mm f32"

# Combined with --measurements: both tables, one CSV per kind.
"$placer" calibrate check --profile "$tmp/uniform.profile.yaml" --cluster "$cluster" \
  --measurements "$cal/measurements.csv" --profiler-trace "$cal/kineto_ops.json.gz" \
  --csv "$tmp/both.csv" --summary > "$tmp/both.txt" 2>&1
has both-measurements "$tmp/both.txt" "all rows"
has both-ops "$tmp/both.txt" "all ops"
has both-csv-ops "$tmp/both.txt" "csv $tmp/both.ops.csv"
has both-csv-measurements "$tmp/both.txt" "csv $tmp/both.measurements.csv"
has both-ops-csv "$tmp/both.ops.csv" "aten::mm"

# Bad input: one line naming the file, non-zero exit.
head -c 600 "$cal/kineto_ops.json.gz" > "$tmp/cut.json.gz"
expect truncated-gz "$tmp/cut.json.gz: corrupt gzip data" -- calibrate check --profile "$tmp/uniform.profile.yaml" --cluster "$cluster" --profiler-trace "$tmp/cut.json.gz"
printf '{"traceEvents": []}' > "$tmp/plain.json.gz"
expect not-gz "$tmp/plain.json.gz: not gzip data" -- calibrate check --profile "$tmp/uniform.profile.yaml" --cluster "$cluster" --profiler-trace "$tmp/plain.json.gz"
expect kineto-bad "kineto_bad_dur.json: traceEvents[1]" -- calibrate check --profile "$tmp/uniform.profile.yaml" --cluster "$cluster" --profiler-trace "$cal/kineto_bad_dur.json"
expect no-inputs "give --measurements, --iterations or --profiler-trace" -- calibrate check --profile "$tmp/uniform.profile.yaml" --cluster "$cluster"

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
