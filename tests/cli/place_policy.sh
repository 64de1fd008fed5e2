#!/usr/bin/env bash
# `placer place --policy`: a policy trained by a 2-update tiny run places the MLP fixture and
# a shipped transformer; the plan says method gdp and `placer simulate` reproduces its step
# time; the .place.yaml records the policy, samples and fine-tuning; the same seed gives the
# same plan file (zero-shot and fine-tuned); a missing policy and gdp options with another
# method (or with the default one, best) are clear errors; the shipped default policy places the
# transformer on all 8 GPUs of the DGX-1 with `--method gdp`.
# Usage: place_policy.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0; n=0
source "$src/tests/cli/lib/expect.bash"
graph=$data/mlp2.graph.json
cluster=$data/two_gpus.cluster.yaml

ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $1"; }

expect "gdp options with another method" "--samples is \`--set samples=...\`, an option --method m-etf does not take" \
  -- place --graph "$graph" --cluster "$cluster" --method m-etf --samples 4 -o x.plan.yaml
# Without --method and --policy the method is best (tests/cli/place_onnx.sh), not gdp.
expect "gdp options, no method, no policy" "--samples is \`--set samples=...\`, an option --method auto does not take" \
  -- place --graph "$graph" --cluster "$cluster" --samples 4 -o x.plan.yaml

"$placer" train-policy --config "$data/gdp_cli/tiny.train.yaml" --updates 2 -o run \
  > train.out 2> train.err; rc=$?
if [ $rc = 2 ] && grep -q "without" train.err; then
  echo "note: placer was built without LibTorch; --policy checks skipped"
  expect "--method gdp without LibTorch" "LibTorch" \
    -- place --graph "$graph" --cluster "$cluster" --method gdp -o x.plan.yaml
  echo "$n checks, $fail failed"; [ $fail = 0 ]; exit
fi
[ $rc = 0 ] && [ -s run/policy.pt ] && ok "tiny policy trained" || bad "training failed: $(cat train.err)"
expect "--policy missing.pt" "gdp: policy 'missing.pt' not found" \
  -- place --graph "$graph" --cluster "$cluster" --policy missing.pt -o x.plan.yaml

# Zero-shot on the MLP fixture: method gdp, simulate agrees, config records the options.
if "$placer" place --graph "$graph" --cluster "$cluster" --policy run/policy.pt --samples 4 \
    --seed 3 -o a/out.plan.yaml > a.out 2> a.err; then
  ok "place --policy exits 0"
  grep -q '^method: gdp' a/out.plan.yaml && ok "plan method gdp" || bad "plan: $(cat a/out.plan.yaml)"
  grep -q '^  step_time: ' a/out.plan.yaml && ok "plan has its prediction" || bad "no prediction"
  grep -q '^method       gdp' a.out && grep -q '^search time' a.out && ok "report" || bad "report: $(cat a.out)"
  placed=$(grep '^step time' a.out)
  simulated=$("$placer" simulate --graph "$graph" --cluster "$cluster" --plan a/out.plan.yaml 2>/dev/null | grep '^step time')
  [ -n "$placed" ] && [ "$placed" = "$simulated" ] && ok "simulate reproduces the step time" ||
    bad "place '$placed' vs simulate '$simulated'"
  grep -q '^  policy: "run/policy.pt"$' a/out.place.yaml && grep -q '^  samples: 4$' a/out.place.yaml &&
    grep -q '^  finetune: 0$' a/out.place.yaml &&
    grep -q 'search_seconds: ' a/out.place.yaml && ok "place.yaml records policy, samples, finetune" ||
    bad "place.yaml: $(cat a/out.place.yaml)"
else
  bad "place --policy failed: $(cat a.err)"
fi
# Same seed twice: the same plan file.
"$placer" place --graph "$graph" --cluster "$cluster" --policy run/policy.pt --samples 4 --seed 3 \
  -o b/out.plan.yaml > /dev/null 2>&1
cmp -s a/out.plan.yaml b/out.plan.yaml && ok "same seed, same plan" || bad "same seed, different plan"

# A shipped 299-op transformer on the DGX-1 (8 devices > max_devices 2 of the tiny policy:
# restricted to 2 devices), fine-tuned for 2 updates; again deterministic.
big=$src/datasets/models/transformer_small.graph.json
dgx=$src/datasets/clusters/dgx1_p100.cluster.yaml
for d in c d; do
  "$placer" place --graph "$big" --cluster "$dgx" --devices 0,1 --method gdp --policy run/policy.pt \
    --samples 2 --finetune 2 --finetune-samples 2 --seed 5 -o $d/out.plan.json > $d.out 2> $d.err
done
if [ -s c/out.plan.json ] && grep -q '"method": *"gdp"' c/out.plan.json; then
  ok "fine-tuned transformer plan"
  cmp -s c/out.plan.json d/out.plan.json && ok "fine-tuned: same seed, same plan" || bad "fine-tuned plans differ"
  grep -q '^  finetune: 2$' c/out.place.yaml && grep -q '^  ppo_samples: 2$' c/out.place.yaml &&
    ok "fine-tuning options recorded" || bad "place.yaml: $(cat c/out.place.yaml)"
else
  bad "fine-tuned transformer: $(cat c.err)"
fi

# The shipped default policy (models/pretrained/default.pt): `--method gdp` without --policy
# places the shipped transformer on all 8 GPUs; its plan is valid (simulate reproduces it).
if [ -s "$src/models/pretrained/default.pt" ]; then
  if env -u PLACER_POLICY "$placer" place --graph "$big" --cluster "$dgx" --method gdp --seed 1 \
      -o e/out.plan.yaml > e.out 2> e.err && grep -q '^method: gdp' e/out.plan.yaml; then
    ok "default policy places the transformer on 8 GPUs"
    "$placer" simulate --graph "$big" --cluster "$dgx" --plan e/out.plan.yaml > e.sim 2>&1 &&
      ok "default-policy plan simulates" || bad "simulate: $(cat e.sim)"
  else
    bad "default policy: $(cat e.err)"
  fi
else
  bad "no shipped default policy at $src/models/pretrained/default.pt"
fi

echo "$n checks, $fail failed"
[ $fail = 0 ]
