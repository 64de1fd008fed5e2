#!/usr/bin/env bash
# `placer train-policy --agent autosync` and `placer place --method autosync --policy`: a tiny
# pretraining run on the default corpus writes policy.pt and its options policy.pt.yaml; the
# policy places an unseen graph (vgg11) zero-shot on another cluster; the plan has a
# synchronization section, makes no lossy choice and `placer simulate` reproduces its step
# time; an existing policy is never overwritten silently; bad options give one clear line.
# Usage: train_autosync.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0; n=0
source "$src/tests/cli/lib/expect.bash"
corpus=$src/datasets/corpora/default.corpus.yaml
c10=$src/datasets/clusters/sync_10gbit.cluster.yaml
c1=$src/datasets/clusters/sync_1gbit.cluster.yaml
ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $1"; }

if ! "$placer" methods 2>&1 | grep -qx 'autosync'; then
  echo "skipped: this placer has no learned autosync (built without LibTorch)"
  "$placer" methods 2>&1 | grep -qx 'autosync-search' && exit 0
  echo "FAIL autosync-search missing too"; exit 1
fi

expect "no corpus" "--corpus required" -- train-policy --agent autosync --cluster "$c10" -o r
expect "no cluster" "--cluster required" -- train-policy --agent autosync --corpus "$corpus" -o r
expect "bad key" "--set unitz (autosync): unknown option" "did you mean 'units'" \
  -- train-policy --agent autosync --corpus "$corpus" --cluster "$c10" --set unitz=3 -o r
expect "bad value" "--set units (autosync): must be >= 1" \
  -- train-policy --agent autosync --corpus "$corpus" --cluster "$c10" --set units=0 -o r
expect "resume" "--resume does not apply to --agent autosync" \
  -- train-policy --agent autosync --corpus "$corpus" --cluster "$c10" --resume -o r

if "$placer" train-policy --agent autosync --corpus "$corpus" --cluster "$c10" --updates 20 \
    --seed 3 --set graphs=1 --set max_ops=150 -o run > train.out 2>&1 &&
   [ -s run/policy.pt ] && [ -s run/policy.pt.yaml ] &&
   grep -q '^episodes     20 on 1 problems, 24 simulations' train.out; then
  ok "pretraining writes policy.pt + options (20 episodes, 4 + 20 simulations)"
else
  bad "pretraining: $(cat train.out)"
fi
expect "existing policy kept" "exists; start over with --overwrite" \
  -- train-policy --agent autosync --corpus "$corpus" --cluster "$c10" --updates 2 -o run

if "$placer" place --graph "$src/datasets/models/vgg11.graph.json" --cluster "$c1" \
    --method autosync --policy run/policy.pt --budget-evals 40 -o zs.plan.yaml > zs.out 2>&1 &&
   grep -q '^synchronization:' zs.plan.yaml && grep -q '^lossy sync   none' zs.out; then
  ok "zero-shot on an unseen graph and cluster"
else
  bad "zero-shot: $(cat zs.out)"
fi
t_place=$(sed -n 's/^step time *\([0-9.]* [a-z]*\).*/\1/p' zs.out)
if "$placer" simulate --graph "$src/datasets/models/vgg11.graph.json" --cluster "$c1" \
    --plan zs.plan.yaml > sim.out 2>&1 && grep -q "^step time *$t_place" sim.out; then
  ok "simulate reproduces $t_place"
else
  bad "simulate ($t_place): $(cat sim.out)"
fi
expect "missing policy" "autosync: policy 'nope.pt' not found" "train-policy --agent autosync" \
  -- place --graph "$src/datasets/models/vgg11.graph.json" --cluster "$c1" --method autosync \
  --policy nope.pt -o x.plan.yaml
expect "samples with autosync" "--samples is \`--set samples=...\`, an option --method autosync does not take" \
  -- place --graph "$src/datasets/models/vgg11.graph.json" --cluster "$c1" --method autosync \
  --policy run/policy.pt --samples 3 -o x.plan.yaml

echo "$n checks, $fail failed"
[ $fail = 0 ]
