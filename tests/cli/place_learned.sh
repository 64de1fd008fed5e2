#!/usr/bin/env bash
# `placer place --method placeto | colocrl | hdp`: each trains online on a small transformer
# (4 GPUs of a DGX-1, 60 simulated placements), writes a plan naming the method that
# `placer simulate` reproduces; Placeto's --policy / --samples / --finetune errors are clear.
# Usage: place_learned.sh PLACER SOURCE_DIR TEST_DATA_DIR
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

for m in placeto colocrl hdp; do
  if ! "$placer" place --graph "$graph" --cluster "$cluster" --devices 0,1,2,3 --method $m \
       --budget-evals 60 --seed 2 -o $m/out.plan.yaml > $m.out 2> $m.err; then
    if grep -q "unknown method" $m.err 2>/dev/null; then
      echo "note: placer was built without LibTorch; learned-placer checks skipped"
      echo "$n checks, $fail failed"; [ $fail = 0 ]; exit
    fi
    bad "place --method $m failed: $(cat $m.err)"
    continue
  fi
  grep -q "^method: $m" $m/out.plan.yaml && ok "$m: plan names the method" || bad "$m: plan method"
  placed=$(grep '^step time' $m.out)
  simulated=$("$placer" simulate --graph "$graph" --cluster "$cluster" --plan $m/out.plan.yaml 2>/dev/null | grep '^step time')
  [ -n "$placed" ] && [ "$placed" = "$simulated" ] && ok "$m: simulate reproduces the step time" ||
    bad "$m: place '$placed' vs simulate '$simulated'"
done

expect "placeto: missing policy" "not found" \
  -- place --graph "$graph" --cluster "$cluster" --method placeto --policy nope.pt -o x.plan.yaml
expect "placeto: --samples without a policy" "apply to placeto with --policy" \
  -- place --graph "$graph" --cluster "$cluster" --method placeto --samples 3 -o x.plan.yaml
expect "placeto: --finetune-lr" "applies to --method gdp only" \
  -- place --graph "$graph" --cluster "$cluster" --method placeto --finetune-lr 0.1 -o x.plan.yaml
echo "$n checks, $fail failed"; [ $fail = 0 ]
