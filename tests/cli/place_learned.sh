#!/usr/bin/env bash
# `placer place --method placeto | colocrl | hdp`: each trains online on a small transformer
# (4 GPUs of a DGX-1, 60 simulated placements), writes a plan naming the method that
# `placer simulate` reproduces; Placeto's --policy / --samples / --finetune errors are clear;
# colocrl / hdp take --agent-set options (samples=4 runs 4 samples per update, save_policy
# writes a policy and its sidecar that policy= reloads) and reject an unknown key, listing
# the valid ones.
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

# colocrl --agent-set: 4 samples per update (13 placements = 3 updates + greedy), a saved
# policy, reloaded for the same graph.
if "$placer" place --graph "$graph" --cluster "$cluster" --devices 0,1,2,3 --method colocrl \
     --budget-evals 13 --seed 2 --agent-set samples=4 --agent-set hidden=32 \
     --agent-set save_policy=pol.pt -o s/out.plan.yaml > s.out 2> s.err &&
   [ -f pol.pt ] && [ -f pol.pt.meta.json ] && grep -q '"hidden": 32' pol.pt.meta.json &&
   grep -q 'samples=4' s/out.place.yaml; then
  ok "colocrl: --agent-set samples / hidden / save_policy"
else
  bad "colocrl: --agent-set: $(cat s.err)"
fi
if "$placer" place --graph "$graph" --cluster "$cluster" --devices 0,1,2,3 --method colocrl \
     --budget-evals 1 --agent-set hidden=32 --agent-set policy=pol.pt -o r/out.plan.yaml \
     > r.out 2> r.err; then
  ok "colocrl: --agent-set policy reloads the saved policy"
else
  bad "colocrl: policy= $(cat r.err)"
fi
expect "colocrl: policy of other sizes" "hidden: the policy has 32, this search needs 256" \
  -- place --graph "$graph" --cluster "$cluster" --devices 0,1,2,3 --method colocrl \
  --budget-evals 1 --agent-set policy=pol.pt -o x.plan.yaml
expect "colocrl: unknown --agent-set key" "--agent-set warmup (colocrl): unknown option" \
  "logits_noise" "samples" "save_policy" "temperature" \
  -- place --graph "$graph" --cluster "$cluster" --method colocrl --agent-set warmup=3 -o x.plan.yaml
expect "hdp: bad --agent-set value" "--agent-set groups (hdp): expected a number, got 'many'" \
  -- place --graph "$graph" --cluster "$cluster" --method hdp --agent-set groups=many -o x.plan.yaml

expect "placeto: missing policy" "not found" \
  -- place --graph "$graph" --cluster "$cluster" --method placeto --policy nope.pt -o x.plan.yaml
expect "placeto: --samples without a policy" "apply to placeto with --policy" \
  -- place --graph "$graph" --cluster "$cluster" --method placeto --samples 3 -o x.plan.yaml
expect "placeto: --finetune-lr" "--finetune-lr is \`--set lr=...\`, an option --method placeto does not take" \
  -- place --graph "$graph" --cluster "$cluster" --method placeto --finetune-lr 0.1 -o x.plan.yaml
echo "$n checks, $fail failed"; [ $fail = 0 ]
