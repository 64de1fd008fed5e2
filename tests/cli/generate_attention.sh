#!/usr/bin/env bash
# `generate gpt|llama --attention unfused|flash --kernels ...`: the graph file records the
# choices, the flash graph has one FlashAttention op per layer (no s x s scores) and simulates
# under tensor parallelism, compile fuses the residual adds with the norms; wrong values are
# one line naming the flag.
# Usage: generate_attention.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
shape=(--layers 2 --hidden 256 --heads 8 --seq-len 512 --batch 8 --vocab 1000)
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0

"$placer" generate gpt "${shape[@]}" -o "$tmp/gpt.graph.json" > /dev/null 2>&1
check gpt-default-unfused grep -q '"attrs": {"attention":"unfused","kernels":"megatron-2021"}' "$tmp/gpt.graph.json"
check gpt-unfused-scores grep -q 'core_attention.scores' "$tmp/gpt.graph.json"
"$placer" generate gpt "${shape[@]}" --attention flash --training-step \
  -o "$tmp/flash.graph.json" > /dev/null 2>&1
check gpt-flash-attr grep -q '"attrs": {"attention":"flash","kernels":"megatron-2021"}' "$tmp/flash.graph.json"
check gpt-flash-op test "$(grep -c '"type":"FlashAttention"' "$tmp/flash.graph.json")" = 2
check gpt-flash-grad test "$(grep -c '"type":"FlashAttentionGrad"' "$tmp/flash.graph.json")" = 2
check gpt-flash-no-scores test "$(grep -c 'core_attention.scores' "$tmp/flash.graph.json")" = 0
"$placer" generate llama "${shape[@]}" --kv-heads 2 --sliding-window 128 --kernels compile \
  -o "$tmp/llama.graph.json" > /dev/null 2>&1
check llama-default-flash grep -q \
  '"attrs": {"attention":"flash","sliding_window":"128","kernels":"compile"}' "$tmp/llama.graph.json"
check llama-compile-fused test "$(grep -c '"type":"AddRMSNormalization"' "$tmp/llama.graph.json")" = 4
printf 'format_version: "1.1"\nplacement: {default: 0}\ntensor_parallel: {degree: 2}\n' > "$tmp/tp.plan.yaml"
"$placer" simulate --graph "$tmp/flash.graph.json" \
  --cluster "$src/datasets/clusters/dgx_a100.cluster.yaml" --plan "$tmp/tp.plan.yaml" \
  > "$tmp/sim.txt" 2>&1
check flash-tp-simulates grep -q '^step time' "$tmp/sim.txt"

expect bad-attention "--attention: unknown value 'sdpa' (use unfused or flash)" -- generate gpt "${shape[@]}" --attention sdpa -o "$tmp/x.graph.json"
expect window-unfused "gpt: sliding_window needs attention = flash" -- \
  generate gpt "${shape[@]}" --sliding-window 64 -o "$tmp/x.graph.json"
expect bad-kernels "--kernels: unknown value 'apex' (use megatron-2021, te, compile, eager or compile-blocks)" -- generate llama "${shape[@]}" --kernels apex -o "$tmp/x.graph.json"
check nothing-written test ! -e "$tmp/x.graph.json"

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
