#!/usr/bin/env bash
# `placer place --method rainbow-pp`: places the shipped small transformer as a pipeline on a
# DGX-1 (--stages 2 and the default 4), the plan says method rainbow-pp and `placer simulate`
# reproduces its step time, the .place.yaml records the stages, the same seed gives the same
# plan file; --stages with another method and a bad stage count are clear errors.
# Usage: place_rainbow.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0; n=0
source "$src/tests/cli/lib/expect.bash"
graph=$src/datasets/models/transformer_small.graph.json
cluster=$src/datasets/clusters/dgx1_p100.cluster.yaml

ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $1"; }

expect "--stages with another method" "--stages is \`--set stages=...\`, an option --method m-etf does not take" \
  -- place --graph "$graph" --cluster "$cluster" --method m-etf --stages 2 -o x.plan.yaml

if ! "$placer" place --graph "$graph" --cluster "$cluster" --method rainbow-pp --stages 2 \
     --budget-evals 20 --seed 5 -o a/out.plan.yaml > a.out 2> a.err; then
  if grep -q "unknown method" a.err 2>/dev/null; then
    echo "note: placer was built without LibTorch; rainbow-pp checks skipped"
    echo "$n checks, $fail failed"; [ $fail = 0 ]; exit
  fi
  bad "place --method rainbow-pp failed: $(cat a.err)"
  echo "$n checks, $fail failed"; exit 1
fi
ok "place --method rainbow-pp --stages 2 exits 0"
grep -q '^method: rainbow-pp' a/out.plan.yaml && ok "plan method rainbow-pp" || bad "plan method"
grep -q '^method       rainbow-pp' a.out && ok "report names the method" || bad "report: $(cat a.out)"
placed=$(grep '^step time' a.out)
simulated=$("$placer" simulate --graph "$graph" --cluster "$cluster" --plan a/out.plan.yaml 2>/dev/null | grep '^step time')
[ -n "$placed" ] && [ "$placed" = "$simulated" ] && ok "simulate reproduces the step time" ||
  bad "place '$placed' vs simulate '$simulated'"
grep -q '^  stages: 2$' a/out.place.yaml && ok "place.yaml records the stages" ||
  bad "place.yaml: $(cat a/out.place.yaml)"
"$placer" place --graph "$graph" --cluster "$cluster" --method rainbow-pp --stages 2 \
  --budget-evals 20 --seed 5 -o b/out.plan.yaml > /dev/null 2>&1
cmp -s a/out.plan.yaml b/out.plan.yaml && ok "same seed, same plan file" || bad "plans differ"
"$placer" place --graph "$graph" --cluster "$cluster" --method rainbow-pp --budget-evals 10 \
  -o c/out.plan.yaml > c.out 2> c.err && grep -q '^method: rainbow-pp' c/out.plan.yaml &&
  ok "default stages" || bad "default stages: $(cat c.err)"
expect "--stages beyond the devices" "stages must be in [2, 8]" \
  -- place --graph "$graph" --cluster "$cluster" --method rainbow-pp --stages 9 \
  --budget-evals 2 -o x.plan.yaml
# rainbow-3d on a small generated GPT: the plan says so, simulate reproduces its step time,
# the same seed gives the same plan file, a bad option value is a clear error.
"$placer" generate gpt --layers 4 --hidden 256 --heads 8 --seq-len 128 --batch 16 --vocab 1000 \
  --training-step -o gpt.graph.json > /dev/null 2>&1
a100=$src/datasets/clusters/dgx_a100.cluster.yaml
for d in d e; do
  "$placer" place --graph gpt.graph.json --cluster "$a100" --method rainbow-3d --budget-evals 60 \
    --seed 2 -o $d/out.plan.yaml > $d.out 2> $d.err
done
grep -q '^method: rainbow-3d' d/out.plan.yaml && ok "rainbow-3d plan" || bad "rainbow-3d: $(cat d.err)"
placed=$(grep '^step time' d.out)
simulated=$("$placer" simulate --graph gpt.graph.json --cluster "$a100" --plan d/out.plan.yaml 2>/dev/null | grep '^step time')
[ -n "$placed" ] && [ "$placed" = "$simulated" ] && ok "rainbow-3d: simulate reproduces the step time" ||
  bad "rainbow-3d: place '$placed' vs simulate '$simulated'"
cmp -s d/out.plan.yaml e/out.plan.yaml && ok "rainbow-3d: same seed, same plan file" || bad "rainbow-3d plans differ"
expect "rainbow-3d bad share" "opp_share and pp_share must be >= 0 and sum to at most 1" \
  -- place --graph gpt.graph.json --cluster "$a100" --method rainbow-3d --set opp_share=0.9 \
  --budget-evals 5 -o x.plan.yaml
echo "$n checks, $fail failed"; [ $fail = 0 ]
