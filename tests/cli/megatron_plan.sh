#!/usr/bin/env bash
# Plan format 1.1 from the command line: the shipped Megatron example (TP 2 x PP 2 x DP 2,
# recomputation, fp16) on a generated GPT simulates, its written plan round-trips to the
# same prediction, a TP 4 variant simulates symmetrically with the --exact report, and the
# tensor-parallel shorthand names an op it cannot match.
# Usage: megatron_plan.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"
cluster=$src/datasets/clusters/dgx_a100.cluster.yaml

"$placer" generate gpt --layers 2 --hidden 1024 --heads 16 --seq-len 1024 --batch 16 --tp 2 \
  --training-step -o "$tmp/gpt.graph.json" > /dev/null 2>&1
"$placer" simulate --graph "$tmp/gpt.graph.json" --cluster "$cluster" \
  --plan "$src/examples/gpt_tp2_pp2_dp2.plan.yaml" -o "$tmp/out.plan.yaml" > "$tmp/sim.txt" 2>&1
check simulate grep -q "pipeline 2 stages x 8 micro-batches" "$tmp/sim.txt"
check written-1.1 grep -q 'format_version: "1.1"' "$tmp/out.plan.yaml"
check keeps-shorthand grep -q "tensor_parallel:" "$tmp/out.plan.yaml"
"$placer" simulate --graph "$tmp/gpt.graph.json" --cluster "$cluster" --plan "$tmp/out.plan.yaml" > "$tmp/sim2.txt" 2>&1
# --breakdown: one row per computing device (TP ranks of copy 0 per stage), TP collectives shown.
"$placer" simulate --graph "$tmp/gpt.graph.json" --cluster "$cluster" \
  --plan "$src/examples/gpt_tp2_pp2_dp2.plan.yaml" --breakdown > "$tmp/bd.txt" 2>&1
check breakdown-columns grep -q "^device .*forward .*backward .*tp-allred" "$tmp/bd.txt"
check breakdown-rows test "$(grep -cE '^dgx/gpu[0-9]+ +[01] ' "$tmp/bd.txt")" = 4
check same-prediction test "$(grep '^step time' "$tmp/sim.txt")" = "$(grep '^step time' "$tmp/sim2.txt")"
check tp2-full grep -q "^simulation   full (no tensor-parallel group of more than 2 ranks)" "$tmp/sim.txt"
check breakdown-full grep -q "^simulation   full (events recorded" "$tmp/bd.txt"

# TP 4 x PP 2: the symmetric simulation runs by default and --exact gives the same report.
"$placer" generate gpt --layers 2 --hidden 1024 --heads 16 --seq-len 1024 --batch 16 --tp 4 \
  --training-step -o "$tmp/gpt4.graph.json" > /dev/null 2>&1
sed -e 's/degree: 2/degree: 4/' -e 's/tensor_parallel: 2/tensor_parallel: 4/' \
  "$src/examples/gpt_tp2_pp2_dp2.plan.yaml" > "$tmp/tp4.plan.yaml"
for mode in sym exact; do
  flag=; [ $mode = exact ] && flag=--exact
  "$placer" simulate --graph "$tmp/gpt4.graph.json" --cluster "$cluster" --plan "$tmp/tp4.plan.yaml" \
    $flag > "$tmp/tp4.$mode.txt" 2>&1
done
check tp4-symmetric grep -q "^simulation   symmetric" "$tmp/tp4.sym.txt"
check tp4-exact grep -q "^simulation   full (exact simulation asked for)" "$tmp/tp4.exact.txt"
check tp4-same-report test "$(grep -v '^simulation' "$tmp/tp4.sym.txt")" = "$(grep -v '^simulation' "$tmp/tp4.exact.txt")"

"$placer" generate mlp --training-step -o "$tmp/mlp.graph.json" > /dev/null 2>&1
printf 'format_version: "1.1"\nplacement: {default: 0}\ntensor_parallel: {degree: 2}\n' > "$tmp/tp.plan.yaml"
expect unmatched-op "tensor_parallel: op 'layers.0.linear'" "matches no Megatron role" -- \
  simulate --graph "$tmp/mlp.graph.json" --cluster "$cluster" --plan "$tmp/tp.plan.yaml"
printf 'format_version: "1.1"\nplacement: {default: 0}\nrecompute: sometimes\n' > "$tmp/rc.plan.yaml"
expect bad-recompute "rc.plan.yaml: recompute: unknown recomputation 'sometimes'" -- \
  simulate --graph "$tmp/mlp.graph.json" --cluster "$cluster" --plan "$tmp/rc.plan.yaml"

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
