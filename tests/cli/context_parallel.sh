#!/usr/bin/env bash
# Context parallelism from the command line: the megatron grid chooses it for Llama-3-8B
# (the shipped Hugging Face config) at 131072 tokens on 64 H100, --breakdown shows the ring's
# exposed KV exchange, and the plan exports to Megatron-LM arguments that read back as the
# same plan.
# Usage: context_parallel.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"
cluster=$src/datasets/clusters/h100_ib_64node.cluster.yaml
devices=$(seq -s, 0 63)

"$placer" generate hf "$src/datasets/models/hf/llama3_8b.config.json" --seq-len 131072 \
  --batch 16 --training-step -o "$tmp/llama.graph.json" > /dev/null 2>&1
"$placer" place --method megatron --graph "$tmp/llama.graph.json" --cluster "$cluster" \
  --devices "$devices" --budget-evals 20 -o "$tmp/cp.plan.yaml" > "$tmp/place.txt" 2>&1
check grid-uses-cp grep -q "^context_parallel:" "$tmp/cp.plan.yaml"
check written-1.2 grep -q 'format_version: "1.2"' "$tmp/cp.plan.yaml"
"$placer" simulate --graph "$tmp/llama.graph.json" --cluster "$cluster" --plan "$tmp/cp.plan.yaml" \
  --breakdown > "$tmp/bd.txt" 2>&1
check breakdown-cp-column grep -q "^device .*cp-exch" "$tmp/bd.txt"
"$placer" export "$tmp/cp.plan.yaml" --graph "$tmp/llama.graph.json" --cluster "$cluster" \
  --to megatron > "$tmp/args.txt" 2>&1
check exports-cp grep -q "^--context-parallel-size [0-9]* \\\\" "$tmp/args.txt"
check exports-comm grep -q "^--cp-comm-type p2p" "$tmp/args.txt"
"$placer" plan from-megatron "$(cat "$tmp/args.txt")" --graph "$tmp/llama.graph.json" \
  --cluster "$cluster" --world-size 64 -o "$tmp/back.plan.yaml" > /dev/null 2>&1
# The same plan, less the prediction the search wrote.
strip() { sed '/^predicted:/,$d' "$1"; }
check reads-back-the-same test "$(strip "$tmp/cp.plan.yaml")" = "$(strip "$tmp/back.plan.yaml")"

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
