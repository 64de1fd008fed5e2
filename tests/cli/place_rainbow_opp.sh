#!/usr/bin/env bash
# `placer place --method rainbow-opp | rainbow-adp | rainbow-pp --policy` and `--agent-set`:
# operator partitioning of a small transformer on one 8-GPU server writes a plan whose
# partitions use sharded chains and that `placer simulate` reproduces; the same seed gives
# the same plan; rainbow-adp splits the batch; the shipped pipeline-cut policy places
# zero-shot; --agent-set options reach the placer (.place.yaml) and bad ones are clear errors.
# Usage: place_rainbow_opp.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0; n=0
source "$src/tests/cli/lib/expect.bash"
graph=$src/datasets/models/transformer_enc6_d512.graph.json
cluster=$src/datasets/clusters/automap_config_a.cluster.yaml

ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $1"; }

expect "--agent-set with a classical method" "--agent-set applies to the Rainbow placers" \
  -- place --graph "$graph" --cluster "$cluster" --method m-etf --agent-set episodes=3 -o x.plan.yaml

if ! "$placer" place --graph "$graph" --cluster "$cluster" --devices 0,1,2,3 --method rainbow-opp \
     --agent-set episodes=6 --seed 3 -o a/out.plan.yaml > a.out 2> a.err; then
  if grep -q "unknown method" a.err 2>/dev/null; then
    echo "note: placer was built without LibTorch; rainbow-opp checks skipped"
    echo "$n checks, $fail failed"; [ $fail = 0 ]; exit
  fi
  bad "place --method rainbow-opp failed: $(cat a.err)"
  echo "$n checks, $fail failed"; exit 1
fi
ok "place --method rainbow-opp exits 0"
grep -q '^method: rainbow-opp' a/out.plan.yaml && ok "plan method rainbow-opp" || bad "plan method"
placed=$(grep '^step time' a.out)
simulated=$("$placer" simulate --graph "$graph" --cluster "$cluster" --plan a/out.plan.yaml 2>/dev/null | grep '^step time')
[ -n "$placed" ] && [ "$placed" = "$simulated" ] && ok "simulate reproduces the step time" ||
  bad "place '$placed' vs simulate '$simulated'"
grep -q 'agent_set: \["episodes=6"\]' a/out.place.yaml && ok "place.yaml records --agent-set" ||
  bad "place.yaml: $(cat a/out.place.yaml)"
"$placer" place --graph "$graph" --cluster "$cluster" --devices 0,1,2,3 --method rainbow-opp \
  --agent-set episodes=6 --seed 3 -o b/out.plan.yaml > /dev/null 2>&1
cmp -s a/out.plan.yaml b/out.plan.yaml && ok "same seed, same plan file" || bad "plans differ"

# Data parallelism: the token input's batch dim is split, so ops are partitioned on dim 0
# with sharded chains.
if "$placer" place --graph "$graph" --cluster "$cluster" --devices 0,1,2,3 --method rainbow-adp \
     --agent-set episodes=4 -o d/out.plan.yaml > d.out 2> d.err; then
  grep -q 'sharded_output: true' d/out.plan.yaml && grep -q 'dim: 0' d/out.plan.yaml &&
    ok "rainbow-adp splits the batch with sharded chains" || bad "adp plan: $(head -c 600 d/out.plan.yaml)"
else
  bad "rainbow-adp failed: $(cat d.err)"
fi

# Zero-shot pipeline cuts with the shipped policy.
if "$placer" place --graph "$graph" --cluster "$cluster" --method rainbow-pp \
     --policy "$src/models/pretrained/rainbow_pp.pt" -o p/out.plan.yaml > p.out 2> p.err; then
  grep -q '^method: rainbow-pp' p/out.plan.yaml && grep -q '^pipeline:' p/out.plan.yaml &&
    ok "rainbow-pp --policy writes a pipeline plan" || bad "policy plan: $(head -c 400 p/out.plan.yaml)"
  grep -q '^  policy: ".*rainbow_pp.pt"$' p/out.place.yaml && ok "place.yaml records the policy" || bad "$(cat p/out.place.yaml)"
else
  bad "rainbow-pp --policy failed: $(cat p.err)"
fi

expect "unknown --agent-set key" "unknown option (known:" \
  -- place --graph "$graph" --cluster "$cluster" --method rainbow-opp --agent-set bogus=1 -o x.plan.yaml
expect "bad --agent-set value" "expected simulator or paper" \
  -- place --graph "$graph" --cluster "$cluster" --method rainbow-opp --agent-set reward=best -o x.plan.yaml
expect "--agent-set without =" "expected KEY=VALUE" \
  -- place --graph "$graph" --cluster "$cluster" --method rainbow-pp --agent-set episodes -o x.plan.yaml
expect "missing policy file" "not found" \
  -- place --graph "$graph" --cluster "$cluster" --method rainbow-pp --policy nope.pt -o x.plan.yaml
expect "--finetune with rainbow-pp" "--finetune is \`--set finetune=...\`, an option --method rainbow-pp does not take" \
  -- place --graph "$graph" --cluster "$cluster" --method rainbow-pp --finetune 2 -o x.plan.yaml
echo "$n checks, $fail failed"; [ $fail = 0 ]
