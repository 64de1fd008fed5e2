#!/usr/bin/env bash
# `placer train-policy` on a tiny corpus and network (tests/data/gdp_cli): the run writes its
# files and one log line per update and evaluation; --resume continues to a raised update
# count exactly as an uninterrupted run; the written config.yaml parses back to the same
# configuration; bad keys / values / a missing checkpoint give one clear line and a non-zero
# exit; SIGINT checkpoints and exits 130; --plot writes curves.png when gnuplot is there.
# Usage: train_policy.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0; n=0
source "$src/tests/cli/lib/expect.bash"
cfg=$data/gdp_cli/tiny.train.yaml

ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $1"; }
updates_in() { grep -c '"type":"update"' "$1"; }
evals_in() { grep -c '"type":"eval"' "$1"; }

# --- Configuration (no LibTorch needed) ------------------------------------------------
# The effective configuration round-trips: printed, read back, printed again: same text.
if "$placer" train-policy --config "$cfg" --set net.hidden=32 --set ppo.lr=3e-4 \
    --set device_counts=[2] --updates 7 -o out --print-config > a.yaml 2> err.txt &&
   "$placer" train-policy --config a.yaml --print-config > b.yaml 2>> err.txt; then
  if cmp -s a.yaml b.yaml; then ok "print-config round trip"; else bad "round trip differs: $(diff a.yaml b.yaml)"; fi
  grep -q '^  hidden: 32$' a.yaml && grep -Eq '^  lr: (0.0003|3e-0?4)$' a.yaml && grep -q '^updates: 7$' a.yaml &&
    grep -q '^  heads: 2$' a.yaml && grep -q "^corpus: $data/gdp_cli/tiny.corpus.yaml" a.yaml &&
    grep -q "^output_dir: $tmp/out$" a.yaml && ok "overrides and relative paths applied" ||
    bad "effective configuration: $(cat a.yaml)"
else
  bad "print-config failed: $(cat err.txt)"
fi
printf 'corpus: x.corpus.yaml\nnet: {hidden: 16, hedas: 2}\n' > typo.yaml
expect "unknown key named with a suggestion" "typo.yaml: net: unknown key 'hedas'" "did you mean 'heads'" \
  -- train-policy --config typo.yaml --print-config
printf 'updates: many\n' > type.yaml
expect "wrong type names the key" "type.yaml: updates: expected an integer" \
  -- train-policy --config type.yaml --print-config
expect "--set ppo.baseline=foo" "--set: ppo.baseline: unknown baseline 'foo'" \
  -- train-policy --config "$cfg" --set ppo.baseline=foo --print-config
expect "--set unknown key" "unknown key 'ppo.lrr'" "did you mean 'ppo.lr'" \
  -- train-policy --config "$cfg" --set ppo.lrr=1 --print-config
expect "--set without =" "expected KEY=VALUE" -- train-policy --config "$cfg" --set ppo.lr --print-config

# --- Training (LibTorch) -----------------------------------------------------------------
"$placer" train-policy --config "$cfg" -o run > run.out 2> run.err; rc=$?
if [ $rc = 2 ] && grep -q "without" run.err; then
  echo "note: placer was built without LibTorch; training checks skipped ($(cat run.err))"
  echo "$n checks, $fail failed"; [ $fail = 0 ]; exit
fi
if [ $rc = 0 ]; then ok "tiny run exits 0"; else bad "tiny run: exit $rc: $(cat run.err)"; fi
for f in checkpoint.pt checkpoint.pt.meta.json policy.pt policy.pt.meta.json log.jsonl config.yaml; do
  [ -s "run/$f" ] && ok "run/$f written" || bad "run/$f missing"
done
[ "$(updates_in run/log.jsonl)" = 4 ] && ok "4 update lines" || bad "update lines: $(updates_in run/log.jsonl)"
[ "$(evals_in run/log.jsonl)" = 2 ] && ok "2 eval lines (eval_every 2)" || bad "eval lines: $(evals_in run/log.jsonl)"
grep -q '^validation at update 2' run.out && grep -q '^rand_v@two_gpus:2 ' run.out &&
  ok "eval table printed" || bad "no eval table: $(cat run.out)"
grep -q '^updates      4 (4 in this run)' run.out && ok "summary" || bad "summary: $(cat run.out)"

# The written config.yaml is the effective configuration: it reproduces itself.
if "$placer" train-policy --config run/config.yaml --print-config > c.yaml 2> err.txt; then
  diff <(grep -v '^#' run/config.yaml) <(grep -v '^#' c.yaml) > /dev/null &&
    ok "config.yaml round trip" || bad "config.yaml round trip: $(diff run/config.yaml c.yaml)"
else
  bad "config.yaml does not parse: $(cat err.txt)"
fi

# A fresh run does not silently overwrite an existing one.
expect "existing run needs --resume or --overwrite" "already holds a training run" "--resume" \
  -- train-policy --config "$cfg" -o run

# --resume with updates raised to 6: 6 update lines, the same as an uninterrupted 6-update run.
if "$placer" train-policy --config run/config.yaml --resume --updates 6 > res.out 2> res.err; then
  [ "$(updates_in run/log.jsonl)" = 6 ] && ok "resumed to 6 update lines" ||
    bad "after resume: $(updates_in run/log.jsonl) update lines"
  grep -q '^updates      6 (2 in this run)' res.out && ok "resume summary" || bad "resume summary: $(cat res.out)"
  "$placer" train-policy --config "$cfg" --updates 6 -o run6 > /dev/null 2>&1
  strip() { sed 's/"seconds":[-0-9.e+]*//' "$1"; }
  if [ -s run6/log.jsonl ] && [ "$(strip run/log.jsonl)" = "$(strip run6/log.jsonl)" ]; then
    ok "resumed log equals the uninterrupted run's"; else bad "resumed log differs"; fi
else
  bad "--resume failed: $(cat res.err)"
fi
# --overwrite starts over (a fresh log); without it a stale log alone also blocks a fresh run.
if "$placer" train-policy --config "$cfg" --updates 2 --eval-every 0 -o run6 --overwrite > /dev/null 2>&1 &&
   [ "$(updates_in run6/log.jsonl)" = 2 ] && [ "$(evals_in run6/log.jsonl)" = 0 ]; then
  ok "--overwrite starts over"; else bad "--overwrite: $(cat run6/log.jsonl)"; fi
# imitation_updates: the first updates imitate the reference placements (phase and accuracy
# in their log lines); more imitation updates than updates is refused.
if "$placer" train-policy --config "$cfg" --set imitation_updates=2 --eval-every 0 -o imit \
    > /dev/null 2>&1 && [ "$(grep -c '"phase":"imitation"' imit/log.jsonl)" = 2 ] &&
   [ "$(grep -c '"phase":"ppo"' imit/log.jsonl)" = 2 ] &&
   [ "$(grep -c '"accuracy"' imit/log.jsonl)" = 2 ]; then
  ok "imitation_updates=2: 2 imitation + 2 ppo update lines"; else
  bad "imitation_updates: $(cat imit/log.jsonl 2>&1)"; fi
expect "imitation_updates > updates" "imitation_updates: must be in [0, updates = 4] (got 5)" \
  -- train-policy --config "$cfg" --set imitation_updates=5 -o imit5
mkdir -p stale && echo '{"type":"update","update":1}' > stale/log.jsonl
expect "stale log.jsonl blocks a fresh run" "already holds a training run (stale/log.jsonl)" \
  -- train-policy --config "$cfg" -o stale
mkdir -p empty
expect "--resume without a checkpoint" "--resume: no checkpoint" "empty/checkpoint.pt" \
  -- train-policy --config "$cfg" -o empty --resume
expect "bad key in the config" "unknown key 'hedas'" -- train-policy --config typo.yaml -o x

# SIGINT: checkpoint, message, exit 130.
"$placer" train-policy --config "$cfg" --updates 1000000 --eval-every 0 -o intr > /dev/null 2> intr.err &
pid=$!
for _ in $(seq 50); do [ -s intr/log.jsonl ] && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
if [ $rc = 130 ] && grep -q 'interrupted at update [0-9]*.*resume with --resume' intr.err &&
   [ -s intr/checkpoint.pt ]; then ok "SIGINT: checkpoint and exit 130"; else
  bad "SIGINT: exit $rc: $(cat intr.err)"; fi

# --plot (gnuplot optional).
if command -v gnuplot > /dev/null; then
  if "$placer" train-policy -o run --plot-only > plot.out 2>&1 && [ -s run/curves.png ] &&
     head -c 8 run/curves.png | grep -q PNG; then ok "--plot-only writes curves.png"; else
    bad "--plot-only: $(cat plot.out)"; fi
else
  echo "note: gnuplot not installed; --plot not checked"
  expect "--plot without gnuplot" "needs gnuplot" -- train-policy -o run --plot-only
fi

echo "$n checks, $fail failed"
[ $fail = 0 ]
