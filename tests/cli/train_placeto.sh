#!/usr/bin/env bash
# `placer train-policy --agent placeto`: the effective configuration round-trips through
# --print-config (the agent read from the file's `agent:`), bad keys / values give one clear
# line and exit 1, a tiny run on a graph family writes policy.pt (+ meta), checkpoint.pt,
# config.yaml and one log line per update; --resume continues it to a raised update count,
# bit for bit like an uninterrupted run (the log lines agree but for their wall times); the
# policy places an unseen member of the family zero-shot and `placer simulate` reproduces the
# plan's step time; an existing run is never overwritten silently; SIGINT checkpoints and
# exits 130.
# Usage: train_placeto.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0; n=0
source "$src/tests/cli/lib/expect.bash"
cluster=$src/datasets/clusters/dgx1_p100.cluster.yaml

ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $1"; }
updates_in() { grep -c '"type":"update"' "$1"; }
# The log without wall times (the only field a resumed run may change).
log_sans_time() { sed 's/,"seconds":[^,}]*//' "$1"; }

cat > tiny.yaml <<YAML
agent: placeto
family: gnmt
ranges: {layers: 2, src_len: [4, 6], tgt_len: 4, hidden: 256, vocab: 8000}
graphs: 2
first_seed: 3
cluster: $cluster
devices: [0, 1, 2, 3]
updates: 2
checkpoint_every: 1
net: {hidden: 8, rounds: 2, pool: 8, policy_hidden: 16, max_devices: 4}
rl: {episodes: 2, lr: 0.01}
mdp: {groups: 4}
YAML

# --- Configuration ------------------------------------------------------------------------
if "$placer" train-policy --config tiny.yaml --set rl.lr=3e-3 --set mdp.reward=final \
    --set ranges.layers=[2,3] --updates 7 --seed 5 -o out --print-config > a.yaml 2> err.txt &&
   "$placer" train-policy --config a.yaml --print-config > b.yaml 2>> err.txt; then
  if cmp -s a.yaml b.yaml; then ok "print-config round trip"; else bad "round trip differs: $(diff a.yaml b.yaml)"; fi
  grep -q '^agent: placeto$' a.yaml && grep -q '^updates: 7$' a.yaml && grep -q '^seed: 5$' a.yaml &&
    grep -Eq '^  lr: (0.003|3e-0?3)$' a.yaml && grep -q '^  reward: final$' a.yaml &&
    grep -q '^  layers: \[2, 3\]$' a.yaml && grep -q '^  src_len: \[4, 6\]$' a.yaml &&
    grep -q '^  tgt_len: 4$' a.yaml && grep -q "^cluster: $cluster$" a.yaml &&
    grep -q "^output_dir: $tmp/out$" a.yaml && grep -q '^  start: single$' a.yaml &&
    ok "overrides applied" || bad "effective configuration: $(cat a.yaml)"
else
  bad "print-config failed: $(cat err.txt)"
fi
"$placer" train-policy --agent placeto --print-config > d.yaml 2>&1 &&
  grep -q '^family: enas_cnn$' d.yaml && grep -q '^graphs: 32$' d.yaml && grep -q '^updates: 200$' d.yaml &&
  ok "defaults without a config" || bad "defaults: $(cat d.yaml)"
printf 'agent: placeto\ngraps: 2\n' > typo.yaml
expect "unknown key with a suggestion" "typo.yaml: unknown key 'graps'" "did you mean 'graphs'" \
  -- train-policy --config typo.yaml --print-config
printf 'agent: placeto\nnet: {hiden: 8}\n' > nettypo.yaml
expect "unknown net key" "nettypo.yaml: net: unknown key 'hiden'" "did you mean 'hidden'" \
  -- train-policy --config nettypo.yaml --print-config
printf 'agent: placeto\nmdp: {reward: finall}\n' > reward.yaml
expect "unknown reward" "reward.yaml: mdp.reward: unknown reward 'finall'" "did you mean 'final'" \
  -- train-policy --config reward.yaml --print-config
printf 'agent: placeto\nrl: {lr: 0}\n' > lr.yaml
expect "lr out of range" "lr.yaml: rl.lr: must be > 0" -- train-policy --config lr.yaml --print-config
printf 'agent: placeto\nfamily: gnnmt\n' > fam.yaml
expect "unknown family" "unknown family 'gnnmt'" "did you mean 'gnmt'" \
  -- train-policy --config fam.yaml --print-config
expect "unknown family parameter" "ranges" "unknown parameter 'layerz'" \
  -- train-policy --config tiny.yaml --set ranges.layerz=2 --print-config
expect "device beyond max_devices" "devices[2]: device 2 is beyond net.max_devices (2)" \
  -- train-policy --config tiny.yaml --set net.max_devices=2 --print-config
"$placer" train-policy --agent placeto --set net.logit_clip=0 --print-config > clip.yaml 2>&1 &&
  grep -q '^  logit_clip: 0$' clip.yaml && "$placer" train-policy --agent placeto --print-config 2>&1 |
  grep -q '^  logit_clip: 2.5$' && ok "net.logit_clip (default 2.5, 0 = off)" || bad "logit_clip: $(cat clip.yaml)"
expect "negative logit_clip" "net.logit_clip: must be >= 0" \
  -- train-policy --agent placeto --set net.logit_clip=-1 --print-config
expect "--set unknown key" "--set: unknown key 'rl.lrr'" "did you mean 'rl.lr'" \
  -- train-policy --agent placeto --set rl.lrr=1 --print-config
expect "--corpus is for gdp" "--corpus applies to --agent gdp" \
  -- train-policy --agent placeto --corpus tiny.yaml --print-config
expect "--plot is for gdp" "--plot / --plot-only apply to --agent gdp only" \
  -- train-policy --config tiny.yaml --plot -o p
expect "not distributed" "only --agent gdp trains distributed" \
  -- train-policy --config tiny.yaml --world-size 2 -o p
expect "--eval-every is for gdp" "--eval-every applies to --agent gdp only" \
  -- train-policy --config tiny.yaml --eval-every 2 --print-config

# --- Training (LibTorch) ------------------------------------------------------------------
"$placer" train-policy --agent placeto --set graphs=1 --updates 0 -o nocluster > nc.out 2> nc.err; rc=$?
if [ $rc = 2 ] && grep -q "without" nc.err; then
  echo "note: placer was built without LibTorch; training checks skipped ($(cat nc.err))"
  echo "$n checks, $fail failed"; [ $fail = 0 ]; exit
fi
[ $rc = 1 ] && grep -q "cluster: required" nc.err && ok "cluster required" || bad "no cluster: exit $rc: $(cat nc.err)"

"$placer" train-policy --config tiny.yaml -o run > run.out 2> run.err; rc=$?
if [ $rc = 0 ]; then ok "tiny run exits 0"; else bad "tiny run: exit $rc: $(cat run.err)"; fi
for f in checkpoint.pt checkpoint.pt.meta.json policy.pt policy.pt.meta.json log.jsonl config.yaml; do
  [ -s "run/$f" ] && ok "run/$f written" || bad "run/$f missing"
done
ls run | grep -q tmp && bad "temporary files left: $(ls run)" || ok "no temporary files"
[ "$(updates_in run/log.jsonl)" = 2 ] && ok "2 update lines" || bad "update lines: $(updates_in run/log.jsonl)"
grep -q '"updates": 2,' run/policy.pt.meta.json && grep -q '"family": "gnmt"' run/policy.pt.meta.json &&
  grep -q '"groups": 4,' run/policy.pt.meta.json && grep -q '"max_devices": 4' run/policy.pt.meta.json &&
  ok "policy meta: 2 updates, gnmt, 4 groups, 4 devices" || bad "meta: $(cat run/policy.pt.meta.json)"
grep -q '^training     placeto, updates 1..2 on 2 gnmt graphs (seeds 3..4), 4 devices' run.out &&
  grep -q '^updates      2 (2 in this run)' run.out &&
  grep -q "^use it       placer place --method placeto --policy run/policy.pt " run.out &&
  grep -q '^files        run/{policy.pt, checkpoint.pt, log.jsonl, config.yaml}' run.out &&
  ok "summary" || bad "summary: $(cat run.out)"
"$placer" train-policy --config run/config.yaml --print-config | grep -v '^#' > c1.yaml
grep -v '^#' run/config.yaml > c0.yaml
cmp -s c0.yaml c1.yaml && ok "config.yaml reads back" || bad "config.yaml: $(diff c0.yaml c1.yaml)"

"$placer" train-policy --config tiny.yaml -o run > again.out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "already holds a training run" again.out && ok "no silent overwrite (exit 1)" ||
  bad "existing run: exit $rc: $(cat again.out)"
expect "--resume without a checkpoint" "no checkpoint to resume from" \
  -- train-policy --config tiny.yaml -o empty --resume
expect "--resume with another setting" "rl.lr is 0.5 here but 0.01 in" \
  -- train-policy --config tiny.yaml --set rl.lr=0.5 --updates 4 -o run --resume
"$placer" train-policy --config tiny.yaml --updates 4 -o run --resume > res.out 2> res.err; rc=$?
if [ $rc = 0 ] && grep -q 'resuming after update 2' res.out && [ "$(updates_in run/log.jsonl)" = 4 ] &&
   grep -q '"updates": 4,' run/policy.pt.meta.json && grep -q '^updates      4 (2 in this run)' res.out; then
  ok "resume 2 -> 4 updates"
else
  bad "resume: exit $rc: $(cat res.out res.err)"
fi
# The same 4 updates without a stop: identical log (returns, losses, gradient norms, evaluations).
"$placer" train-policy --config tiny.yaml --updates 4 -o straight > /dev/null 2> straight.err
if [ "$(log_sans_time run/log.jsonl)" = "$(log_sans_time straight/log.jsonl)" ] && [ "$(updates_in straight/log.jsonl)" = 4 ]; then
  ok "resumed run = uninterrupted run"
else
  bad "resume is not exact: $(diff <(log_sans_time run/log.jsonl) <(log_sans_time straight/log.jsonl))"
fi
"$placer" train-policy --config tiny.yaml --updates 1 -o run --overwrite > ow.out 2>&1 &&
  [ "$(updates_in run/log.jsonl)" = 1 ] && ok "--overwrite starts over" || bad "overwrite: $(cat ow.out)"

# Zero-shot on an unseen member of the family (seed 77): plan by placeto, simulate agrees.
"$placer" corpus generate --family gnmt --count 1 --seed 77 --set layers=2 --set src_len=5 \
  --set tgt_len=4 --set hidden=256 --set vocab=8000 -o unseen > gen.out 2>&1 || bad "corpus generate: $(cat gen.out)"
graph=$(find unseen -name '*.graph.*' | head -n 1)
if [ -n "$graph" ] && "$placer" place --graph "$graph" --cluster "$cluster" --devices 0,1,2,3 \
     --method placeto --policy straight/policy.pt --seed 3 -o zs.plan.yaml > zs.out 2> zs.err; then
  grep -q '^method: placeto' zs.plan.yaml && ok "zero-shot plan names placeto" || bad "plan: $(head zs.plan.yaml)"
  placed=$(grep '^step time' zs.out)
  simulated=$("$placer" simulate --graph "$graph" --cluster "$cluster" --plan zs.plan.yaml 2>/dev/null | grep '^step time')
  [ -n "$placed" ] && [ "$placed" = "$simulated" ] && ok "simulate reproduces the zero-shot plan ($placed)" ||
    bad "place '$placed' vs simulate '$simulated'"
else
  bad "zero-shot place: graph '$graph': $(cat zs.err 2>/dev/null)"
fi

# SIGINT: checkpoint, message, exit 130; --resume continues from it.
"$placer" train-policy --config tiny.yaml --updates 1000000 -o intr > /dev/null 2> intr.err &
pid=$!
for _ in $(seq 200); do [ -s intr/log.jsonl ] && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
if [ $rc = 130 ] && grep -q 'interrupted at update [0-9]*.*resume with --resume' intr.err &&
   [ -s intr/checkpoint.pt ]; then ok "SIGINT: checkpoint and exit 130"; else
  bad "SIGINT: exit $rc: $(cat intr.err)"; fi
k=$(sed -n 's/.*interrupted at update \([0-9]*\).*/\1/p' intr.err)
if [ -n "$k" ] && "$placer" train-policy --config tiny.yaml --updates $((k + 1)) -o intr --resume > ir.out 2>&1 &&
   [ "$(updates_in intr/log.jsonl)" = $((k + 1)) ]; then
  ok "resume after SIGINT: $k + 1 updates"
else
  bad "resume after SIGINT (k=$k): $(cat ir.out)"
fi

echo "$n checks, $fail failed"
[ $fail = 0 ]
