#!/usr/bin/env bash
# `placer calibrate fit|check`: fit a profile from the CSV fixture and an nccl-tests log,
# check the hand-computed numbers of `check` (two_gpus cluster, uniform efficiency), the
# CSV it writes, the transfer-constant fit from a simulated trace, and clear errors on bad
# input. Usage: calibrate.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"
cal=$data/calibration
cluster=$data/two_gpus.cluster.yaml

ok() {  # ok NAME COMMAND...: exits 0
  local name=$1; shift
  n=$((n + 1))
  if out=$("$@" 2>&1); then echo "ok   $name"; else echo "FAIL $name: $out"; fail=$((fail + 1)); fi
}
has() {  # has NAME FILE SUBSTRING
  n=$((n + 1))
  if grep -qF -- "$3" "$2"; then echo "ok   $1"; else echo "FAIL $1: '$3' not in $2:"; cat "$2"; fail=$((fail + 1)); fi
}

# fit: the CSV fixture plus a 16-rank nccl-tests log (on the 4 x 8 H100 cluster).
ok fit-csv "$placer" calibrate fit --cluster "$cluster" --measurements "$cal/measurements.csv" \
  --base "$src/datasets/clusters/default.profile.yaml" -o "$tmp/fit.profile.yaml"
"$placer" calibrate fit --cluster "$cluster" --measurements "$cal/measurements.csv" -o "$tmp/fit.profile.yaml" > "$tmp/fit.txt" 2>&1
has fit-table "$tmp/fit.txt" "collective_curves.all_reduce.intra_host"
has fit-link "$tmp/fit.txt" "links.intra_host"
has fit-gemm "$tmp/fit.txt" "ops.matmul.compute_efficiency"
has fit-note "$tmp/fit.txt" "tf32"
has fit-yaml "$tmp/fit.profile.yaml" "bus_bandwidth: 8.398 GB/s"
has fit-errors "$tmp/fit.profile.yaml" "fit_errors:"
# --note goes before the generated description.
"$placer" calibrate fit --cluster "$cluster" --measurements "$cal/measurements.csv" \
  --note "Regenerate: make it." -o "$tmp/note.profile.yaml" > /dev/null 2>&1
has fit-note-text "$tmp/note.profile.yaml" 'description: "Regenerate: make it. Fitted by placer calibrate fit on cluster'
# The written profile is a valid profile: simulate with it.
ok simulate-with-fit "$placer" simulate --graph "$data/mlp2.graph.json" --cluster "$cluster" \
  --plan "$data/mlp2_two_gpus.plan.yaml" --profile "$tmp/fit.profile.yaml"

"$placer" calibrate fit --cluster "$src/datasets/clusters/h100_ib_4node.cluster.yaml" \
  --nccl-tests "$cal/all_reduce_perf.h100_2x8.log" -o "$tmp/h100.profile.yaml" > "$tmp/h100.txt" 2>&1
has fit-nccl "$tmp/h100.txt" "collective_curves.all_reduce.inter_host"
has fit-nccl-ranks "$tmp/h100.profile.yaml" "ranks: 16"

# check: hand-computed predictions with a uniform profile (efficiency 1, ring all-reduce).
cat > "$tmp/uniform.profile.yaml" <<'Y'
format_version: "1.0"
name: uniform
ops:
  matmul: {compute_efficiency: 1, memory_efficiency: 1}
  elementwise: {compute_efficiency: 1, memory_efficiency: 1}
links:
  intra_host: {bandwidth_efficiency: 1}
collectives: {all_reduce: ring}
Y
"$placer" calibrate check --profile "$tmp/uniform.profile.yaml" --cluster "$cluster" \
  --measurements "$cal/measurements.csv" --csv "$tmp/check.csv" > "$tmp/check.txt" 2>&1
# gemm: 5 us + 2^31 / 10 TFLOP/s = 219.7 us vs 224 us (-1.9%); p2p 10 us + 1 MiB / 10 GB/s
# = 114.9 us (0.0%); ring all-reduce of 2 = 124.9 us (0.0%); add 206.3 us vs 206 us (+0.2%).
has check-gemm "$tmp/check.txt" "-1.9%"
has check-add "$tmp/check.txt" "+0.2%"
has check-p2p "$tmp/check.txt" "memcpy p2p intra_host"
has check-overall "$tmp/check.txt" "all rows                         4     0.1%     1.9%"
has check-collectives "$tmp/check.txt" "all collectives                  1     0.0%     0.0%"
has check-note "$tmp/check.txt" "not predicted: 1 row(s): tf32"
has check-csv-header "$tmp/check.csv" "source,line,kind,op,dtype,bytes,flops,devices,hosts,group,measured_s,predicted_s,rel_error"
has check-csv-row "$tmp/check.csv" ",all_reduce,fp32,1048576,0,2,1,all_reduce intra_host,0.0001248576,"
n=$((n + 1))
if [ "$(wc -l < "$tmp/check.csv")" -eq 5 ]; then echo "ok   check-csv-rows"; else echo "FAIL check-csv-rows"; fail=$((fail + 1)); fi

# Transfer constants from a trace of the simulator itself (Placeto's calibration).
cat > "$tmp/truth.profile.yaml" <<'Y'
format_version: "1.0"
links:
  intra_host: {latency: 25 us, bandwidth: 3 GB/s, bandwidth_efficiency: 1}
Y
"$placer" simulate --graph "$data/mlp2.graph.json" --cluster "$cluster" --plan "$data/mlp2_two_gpus.plan.yaml" \
  --profile "$tmp/truth.profile.yaml" --trace "$tmp/trace.json" > /dev/null 2>&1
"$placer" calibrate fit --cluster "$cluster" --trace "$tmp/trace.json" --graph "$data/mlp2.graph.json" \
  --plan "$data/mlp2_two_gpus.plan.yaml" -o "$tmp/trace.profile.yaml" > "$tmp/trace.txt" 2>&1
has trace-fit "$tmp/trace.txt" "trace fit"
has trace-fit-converged "$tmp/trace.txt" "-> 0.0% of the span"

# Bad input: one clear line, non-zero exit, no crash.
expect no-inputs "nothing to fit" -- calibrate fit --cluster "$cluster" -o "$tmp/x.profile.yaml"
expect bad-row "measurements_bad_row.csv:4:" -- calibrate fit --cluster "$cluster" --measurements "$cal/measurements_bad_row.csv" -o "$tmp/x.profile.yaml"
expect malformed-log "malformed.all_gather_perf.log:9: malformed result row" -- calibrate check --profile "$tmp/uniform.profile.yaml" --cluster "$cluster" --measurements "$cal/malformed.all_gather_perf.log"
expect unknown-op "cannot tell which collective" -- calibrate fit --cluster "$cluster" --nccl-tests "$cal/no_op.log" -o "$tmp/x.profile.yaml"
expect too-small-cluster "the measurement spans 2 hosts" -- calibrate check --profile "$tmp/uniform.profile.yaml" --cluster "$cluster" --measurements "$cal/all_reduce_perf.h100_2x8.log"
expect kineto-bad "kineto_bad_dur.json: traceEvents[1]" -- calibrate fit --cluster "$cluster" --profiler-trace "$cal/kineto_bad_dur.json" -o "$tmp/x.profile.yaml"
expect trace-mismatch "one --graph and one --plan per --trace" -- calibrate fit --cluster "$cluster" --trace "$tmp/trace.json" -o "$tmp/x.profile.yaml"
expect missing-file "does/not/exist.csv" -- calibrate check --profile "$tmp/uniform.profile.yaml" --cluster "$cluster" --measurements does/not/exist.csv

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
