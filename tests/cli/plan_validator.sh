#!/usr/bin/env bash
# One plan validator whichever way a plan came in (docs/export.md "One validator"): the
# universal checks (Plan::validate) refuse a plan in `simulate` with one error line, exit 1
# and no output file; the framework writers' checks warn in `simulate` and `place`, one line
# per framework that cannot run the plan, and the plan is still simulated and written.
# Usage: plan_validator.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"
cluster=$src/datasets/clusters/dgx_a100.cluster.yaml
g=$tmp/gpt.graph.json
"$placer" generate gpt --layers 4 --hidden 64 --heads 4 --seq-len 32 --batch 16 --vocab 1000 --tp 2 \
  --dtype f16 --training-step -o "$g" > /dev/null 2>&1
W="placer: warning:"
not_grep() { ! grep -q "$1" "$2"; }

# TP 2 x PP 2 x DP 2 in fp16 with loss scaling: Megatron-LM runs it, DeepSpeed's pipeline has
# no tensor parallelism and torchtitan no fp16.
"$placer" plan from-megatron "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
  --micro-batch-size 2 --global-batch-size 16 --sequence-parallel --fp16" \
  --graph "$g" --cluster "$cluster" -o "$tmp/tp.plan.yaml" 2> /dev/null
"$placer" simulate --graph "$g" --cluster "$cluster" --plan "$tmp/tp.plan.yaml" \
  -o "$tmp/out_tp.plan.yaml" > "$tmp/sim.txt" 2> "$tmp/sim_all.err"
grep "$W" "$tmp/sim_all.err" > "$tmp/sim.err"
check simulate-exit-0-and-writes test -s "$tmp/out_tp.plan.yaml"
check simulate-reports-step grep -q '^step time' "$tmp/sim.txt"
printf '%s\n' \
  "$W $tmp/tp.plan.yaml: does not export to deepspeed: tensor_parallel.degree: 2: a DeepSpeed config has no tensor parallelism (Megatron-DeepSpeed sets it on the command line; export to megatron)" \
  "$W $tmp/tp.plan.yaml: does not export to torchtitan: precision: fp16: torchtitan trains in bf16 or fp32 (mixed_precision_param)" \
  > "$tmp/want.err"
check simulate-warns-per-framework diff "$tmp/want.err" "$tmp/sim.err"

# PP 2 in bf16 with clipping and overlapped reduction: every framework writes it, no warning.
"$placer" plan from-megatron "--pipeline-model-parallel-size 2 --micro-batch-size 1 \
  --global-batch-size 16 --bf16 --overlap-grad-reduce --clip-grad 1.0" \
  --graph "$g" --cluster "$cluster" -o "$tmp/pp.plan.yaml" 2> /dev/null
"$placer" simulate --graph "$g" --cluster "$cluster" --plan "$tmp/pp.plan.yaml" > /dev/null 2> "$tmp/pp.err"
check simulate-no-warning-when-every-framework-runs-it not_grep "$W" "$tmp/pp.err"

# An op-level plan (a placement) has no framework configuration: no warning either.
"$placer" simulate --graph "$data/mlp2.graph.json" --cluster "$data/two_gpus.cluster.yaml" \
  --plan "$data/mlp2_two_gpus.plan.yaml" > /dev/null 2> "$tmp/op.err"
check simulate-op-level-plan-no-warning not_grep "$W" "$tmp/op.err"

# `place`: the plan found goes through the same check (megatron's grid on the fp16 graph),
# and so does the same plan simulated from its file.
"$placer" place --graph "$g" --cluster "$cluster" --method megatron \
  -o "$tmp/placed.plan.yaml" > /dev/null 2> "$tmp/place.err"
check place-writes-plan test -s "$tmp/placed.plan.yaml"
"$placer" simulate --graph "$g" --cluster "$cluster" --plan "$tmp/placed.plan.yaml" > /dev/null 2> "$tmp/resim.err"
grep "$W" "$tmp/place.err" > "$tmp/place_w.err"
grep "$W" "$tmp/resim.err" > "$tmp/resim_w.err"
check place-warns test -s "$tmp/place_w.err"
check place-and-simulate-warn-alike cmp -s "$tmp/place_w.err" "$tmp/resim_w.err"

# A pipeline no framework configuration describes (3 micro-batches x 4 data-parallel ranks
# split no batch of 16 evenly): one warning naming the field, still simulated.
sed 's/micro_batches: 4/micro_batches: 3/' "$tmp/pp.plan.yaml" > "$tmp/odd.plan.yaml"
"$placer" simulate --graph "$g" --cluster "$cluster" --plan "$tmp/odd.plan.yaml" > "$tmp/odd.txt" 2> "$tmp/odd_all.err"
grep "$W" "$tmp/odd_all.err" > "$tmp/odd.err"
echo "$W $tmp/odd.plan.yaml: no Megatron-LM, DeepSpeed or torchtitan configuration can express it: pipeline.micro_batches: 3 micro-batches x 4 data-parallel ranks do not divide the batch 16: 1.333333 samples per micro-batch and rank (frameworks need whole samples)" > "$tmp/want_odd.err"
check simulate-warns-no-framework-configuration diff "$tmp/want_odd.err" "$tmp/odd.err"
check simulate-still-simulates grep -q '^step time' "$tmp/odd.txt"

# Universal: a plan Plan::validate refuses is refused by simulate (one line, nothing written).
sed 's/micro_batches: 4/micro_batches: 32/' "$tmp/pp.plan.yaml" > "$tmp/bad.plan.yaml"
refuse simulate-refuses-invalid-plan "placer: error: $tmp/bad.plan.yaml: pipeline.micro_batches: 32 micro-batches, more than the batch of graph 'gpt' (16 samples; each micro-batch needs at least one)" \
  -- simulate --graph "$g" --cluster "$cluster" --plan "$tmp/bad.plan.yaml" -o "$tmp/out/p.plan.yaml"

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
