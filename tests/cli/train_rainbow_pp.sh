#!/usr/bin/env bash
# `placer train-policy --agent rainbow-pp`: the effective configuration round-trips through
# --print-config (the agent read from the file's `agent:`), bad keys / values give one clear
# line and a non-zero exit, a tiny run on generated arrays writes its files and one log line
# per update and evaluation, --resume continues it to a raised update count, an existing run
# is never overwritten silently, and SIGINT checkpoints and exits 130.
# Usage: train_rainbow_pp.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0; n=0
source "$src/tests/cli/lib/expect.bash"

ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $1"; }
updates_in() { grep -c '"type":"update"' "$1"; }
evals_in() { grep -c '"type":"eval"' "$1"; }

cat > tiny.yaml <<'YAML'
agent: rainbow-pp
stages: 2
max_devices: 4
updates: 2
arrays_per_update: 4
min_positions: 128
max_positions: 160
eval_every: 2
eval_arrays: 10
checkpoint_every: 1
rainbow: {hidden: [16], atoms: 11, learn_start: 8, batch_size: 8}
YAML

# --- Configuration ------------------------------------------------------------------------
if "$placer" train-policy --config tiny.yaml --set rainbow.lr=3e-4 --set distributions=[normal] \
    --updates 7 -o out --print-config > a.yaml 2> err.txt &&
   "$placer" train-policy --config a.yaml --print-config > b.yaml 2>> err.txt; then
  if cmp -s a.yaml b.yaml; then ok "print-config round trip"; else bad "round trip differs: $(diff a.yaml b.yaml)"; fi
  grep -q '^updates: 7$' a.yaml && grep -q '^stages: 2$' a.yaml && grep -q '^agent: rainbow-pp$' a.yaml &&
    grep -Eq '^  lr: (0.0003|3e-0?4|0.000299999)' a.yaml && grep -q '^  hidden: \[16\]$' a.yaml &&
    grep -q '^distributions: \[normal\]$' a.yaml && grep -q "^output_dir: $tmp/out$" a.yaml &&
    ok "overrides applied" || bad "effective configuration: $(cat a.yaml)"
else
  bad "print-config failed: $(cat err.txt)"
fi
printf 'agent: rainbow-pp\nstagse: 2\n' > typo.yaml
expect "unknown key with a suggestion" "typo.yaml: unknown key 'stagse'" "did you mean 'stages'" \
  -- train-policy --config typo.yaml --print-config
printf 'agent: rainbow-pp\nstages: 1\n' > range.yaml
expect "stages out of range" "range.yaml: stages" -- train-policy --config range.yaml --print-config
printf 'agent: rainbow-pp\nrainbow: {hiden: [8]}\n' > rb.yaml
expect "unknown rainbow option" "rb.yaml: rainbow" "hiden" -- train-policy --config rb.yaml --print-config
expect "unknown distribution" "unknown distribution 'poisson'" \
  -- train-policy --agent rainbow-pp --set 'distributions=[poisson]' --print-config
expect "--set unknown rainbow key" "--set" "rainbow.lrr" \
  -- train-policy --agent rainbow-pp --set rainbow.lrr=1 --print-config
expect "max_devices below stages" "max_devices" \
  -- train-policy --agent rainbow-pp --set stages=8 --set max_devices=4 --print-config
expect "--corpus is for gdp" "--corpus / --cluster apply to --agent gdp" \
  -- train-policy --agent rainbow-pp --corpus tiny.yaml --print-config
expect "unknown agent" "--agent" -- train-policy --agent foo --print-config

# --- Training (LibTorch) ------------------------------------------------------------------
"$placer" train-policy --config tiny.yaml -o run > run.out 2> run.err; rc=$?
if [ $rc = 2 ] && grep -q "without" run.err; then
  echo "note: placer was built without LibTorch; training checks skipped ($(cat run.err))"
  echo "$n checks, $fail failed"; [ $fail = 0 ]; exit
fi
if [ $rc = 0 ]; then ok "tiny run exits 0"; else bad "tiny run: exit $rc: $(cat run.err)"; fi
for f in checkpoint.pt checkpoint.pt.meta.json policy.pt policy.pt.meta.json best.pt log.jsonl config.yaml; do
  [ -s "run/$f" ] && ok "run/$f written" || bad "run/$f missing"
done
[ "$(updates_in run/log.jsonl)" = 2 ] && ok "2 update lines" || bad "update lines: $(updates_in run/log.jsonl)"
[ "$(evals_in run/log.jsonl)" = 1 ] && ok "1 eval line" || bad "eval lines: $(evals_in run/log.jsonl)"
grep -q '"stages": 2' run/policy.pt.meta.json && grep -q '"state_dim": 532' run/policy.pt.meta.json &&
  ok "meta: stages and state layout (4 x 128 + 4 x 4 + 2 + 2 = 532)" || bad "meta: $(cat run/policy.pt.meta.json)"
grep -q '^validation at update 2: held-out mean reward' run.out && ok "eval printed" || bad "no eval: $(cat run.out)"
grep -q '^updates      2 (2 in this run)' run.out && ok "summary" || bad "summary: $(cat run.out)"
"$placer" train-policy --config tiny.yaml --set stages=2 -o run > again.out 2>&1
[ $? != 0 ] && grep -q "already holds a training run" again.out && ok "no silent overwrite" ||
  bad "existing run: $(cat again.out)"
"$placer" train-policy --config tiny.yaml --updates 3 -o run --resume > res.out 2> res.err; rc=$?
if [ $rc = 0 ] && grep -q 'resuming after update 2' res.out && [ "$(updates_in run/log.jsonl)" = 3 ] &&
   grep -q '"update": 3' run/policy.pt.meta.json; then
  ok "resume to 3 updates"
else
  bad "resume: exit $rc: $(cat res.out res.err)"
fi
expect "--resume without a checkpoint" "no checkpoint to resume from" \
  -- train-policy --config tiny.yaml -o empty --resume
expect "--resume with another shape" "stages / max_devices differ" \
  -- train-policy --config tiny.yaml --set stages=3 --updates 4 -o run --resume
"$placer" train-policy --config tiny.yaml --updates 2 -o run --overwrite > ow.out 2>&1 &&
  [ "$(updates_in run/log.jsonl)" = 2 ] && ok "--overwrite starts over" || bad "overwrite: $(cat ow.out)"

# SIGINT: checkpoint, message, exit 130.
"$placer" train-policy --config tiny.yaml --updates 1000000 --eval-every 0 -o intr > /dev/null 2> intr.err &
pid=$!
for _ in $(seq 100); do [ -s intr/log.jsonl ] && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
if [ $rc = 130 ] && grep -q 'interrupted at update [0-9]*.*resume with --resume' intr.err &&
   [ -s intr/checkpoint.pt ]; then ok "SIGINT: checkpoint and exit 130"; else
  bad "SIGINT: exit $rc: $(cat intr.err)"; fi

echo "$n checks, $fail failed"
[ $fail = 0 ]
