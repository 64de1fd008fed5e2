#!/usr/bin/env bash
# FSDP2 / HSDP, FP8 and the checkpointing variants from the command line: the shipped
# example simulates on 4 nodes of 8 H100, --breakdown shows the compute waiting for
# parameter all-gathers, prefetching beats ZeRO-3's per-op gathers, FP8 beats bf16, and
# FSDP without ZeRO-3 is a named error.
# Usage: fsdp_plan.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"
cluster=$src/datasets/clusters/h100_ib_4node.cluster.yaml
profile=$src/datasets/clusters/h100.profile.yaml
plan=$src/examples/llama_fsdp2_hsdp.plan.yaml

# Batch 256 (8 sequences per GPU): under FSDP every micro-batch casts the gathered weights
# to FP8 again, which at 2 sequences per GPU costs what the FP8 GEMMs save.
"$placer" generate llama --layers 4 --hidden 2048 --heads 16 --kv-heads 4 --ffn 5632 \
  --seq-len 2048 --batch 256 --training-step -o "$tmp/llama.graph.json" > /dev/null 2>&1
sim() { "$placer" simulate --graph "$tmp/llama.graph.json" --cluster "$cluster" --profile "$profile" "$@"; }
# The step time in seconds (the report prints three digits and a unit).
step() {
  grep '^step time' "$1" | awk '{ v = $3; if ($4 == "ms") v /= 1e3; else if ($4 == "us") v /= 1e6; print v }'
}
sim --plan "$plan" --breakdown -o "$tmp/out.plan.yaml" > "$tmp/fsdp.txt" 2>&1
check breakdown-fsdp-column grep -q "^device .*fsdp-gath" "$tmp/fsdp.txt"
check written-fsdp grep -q "shard_group: 8" "$tmp/out.plan.yaml"
sim --plan "$tmp/out.plan.yaml" > "$tmp/again.txt" 2>&1
check same-prediction test "$(grep '^step time' "$tmp/fsdp.txt")" = "$(grep '^step time' "$tmp/again.txt")"

# The same plan without the FSDP schedule (ZeRO-3's per-op gathers) and without FP8.
grep -v "fsdp:\|prefetch\|reshard\|shard_group\|_dtype" "$plan" > "$tmp/zero3.plan.yaml"
sim --plan "$tmp/zero3.plan.yaml" > "$tmp/zero3.txt" 2>&1
sed 's/fp8: true/fp8: false/' "$plan" > "$tmp/bf16.plan.yaml"
sim --plan "$tmp/bf16.plan.yaml" > "$tmp/bf16.txt" 2>&1
faster() { awk -v a="$(step "$1")" -v b="$(step "$2")" 'BEGIN { exit !(a + 0 < b + 0) }'; }
check prefetch-beats-zero3 faster "$tmp/fsdp.txt" "$tmp/zero3.txt"
check fp8-beats-bf16 faster "$tmp/fsdp.txt" "$tmp/bf16.txt"

sed 's/zero_stage: 3/zero_stage: 2/' "$plan" > "$tmp/bad.plan.yaml"
expect fsdp-needs-zero3 "bad.plan.yaml: data_parallel.fsdp: needs zero_stage 3 (got 2)" -- \
  simulate --graph "$tmp/llama.graph.json" --cluster "$cluster" --plan "$tmp/bad.plan.yaml"

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
