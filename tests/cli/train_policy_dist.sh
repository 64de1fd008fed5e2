#!/usr/bin/env bash
# Distributed `placer train-policy` (docs/distributed.md) on loopback: two ranks (one from
# --dist-url/--rank/--world-size, one from the torchrun environment) train the tiny run; rank
# 0 alone prints and writes the files. A killed rank makes the other exit non-zero with a
# clear message within --dist-timeout, and its last checkpoint resumes in one process.
# Bad distributed flags give one clear line. Usage: train_policy_dist.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2> /dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
cd "$tmp" || exit 1
fail=0; n=0
source "$src/tests/cli/lib/expect.bash"
cfg=$data/gdp_cli/tiny.train.yaml

ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $1"; }
updates_in() { grep -c '"type":"update"' "$1" 2> /dev/null || echo 0; }
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2> /dev/null ||
    echo $((20000 + RANDOM % 20000))
}

# --- Flag errors (before any LibTorch work) ------------------------------------------------
expect "--rank without --world-size" "--world-size: required" \
  -- train-policy --config "$cfg" -o e1 --rank 1
expect "--world-size 2 without --dist-url" "--dist-url: required" \
  -- train-policy --config "$cfg" -o e2 --rank 0 --world-size 2
expect "rank outside the world" "rank 2 is outside [0, 2)" \
  -- train-policy --config "$cfg" -o e3 --dist-url tcp://127.0.0.1:1 --rank 2 --world-size 2
expect "bad url scheme" "is not tcp://host:port" \
  -- train-policy --config "$cfg" -o e4 --dist-url udp://x:1 --rank 0 --world-size 2

# --- dist.shards: configuration (train.yaml / --set), round trip, bad values -------------
# dist_has KEY VALUE FILE: the effective configuration's dist section has KEY: VALUE (flow
# style "dist: {shards: 2, timeout: 60}" or block style).
dist_has() {
  grep -Eq "^dist: \{(.*, )?$1: $2(, .*)?\}\$" "$3" ||
    sed -n '/^dist:$/,/^[^ ]/p' "$3" | grep -q "^  $1: $2\$"
}
has_shards() { dist_has shards "$1" "$2"; }
if "$placer" train-policy --config "$cfg" --set dist.shards=2 -o cfg --print-config > s1.yaml 2> s.err &&
   "$placer" train-policy --config s1.yaml --print-config > s2.yaml 2>> s.err; then
  cmp -s s1.yaml s2.yaml && ok "dist.shards round trip" || bad "round trip differs: $(diff s1.yaml s2.yaml)"
  has_shards 2 s1.yaml && ok "dist.shards=2 in the effective configuration" ||
    bad "effective configuration: $(cat s1.yaml)"
else
  bad "print-config with dist.shards: $(cat s.err)"
fi
"$placer" train-policy --config "$cfg" -o cfg --print-config > s0.yaml 2> s.err &&
  has_shards 0 s0.yaml && ok "dist.shards defaults to 0 (world size)" ||
  bad "default dist.shards: $(cat s0.yaml s.err)"
{ cat "$cfg"; printf 'dist: {shards: 3}\n'; } | sed "s#^corpus: .*#corpus: $data/gdp_cli/tiny.corpus.yaml#; s#\.\./two_gpus#$data/two_gpus#" > shards3.yaml
"$placer" train-policy --config shards3.yaml -o cfg --print-config > s3.yaml 2> s.err &&
  has_shards 3 s3.yaml && ok "dist: {shards: 3} read from train.yaml" ||
  bad "train.yaml dist.shards: $(cat s3.yaml s.err)"
expect "--set dist.shards=-1" "--set: dist.shards:" -- train-policy --config "$cfg" --set dist.shards=-1 --print-config
expect "unknown dist key" "unknown key 'dist.shard'" "did you mean 'dist.shards'" \
  -- train-policy --config "$cfg" --set dist.shard=2 --print-config

# --- dist.timeout: configuration (seconds, > 0), round trip; --dist-timeout overrides it ---
if "$placer" train-policy --config "$cfg" --set dist.timeout=12.5 -o cfg --print-config > t1.yaml 2> t.err &&
   "$placer" train-policy --config t1.yaml --print-config > t2.yaml 2>> t.err; then
  cmp -s t1.yaml t2.yaml && ok "dist.timeout round trip" || bad "round trip differs: $(diff t1.yaml t2.yaml)"
  dist_has timeout 12.5 t1.yaml && dist_has shards 0 t1.yaml &&
    ok "dist.timeout=12.5 in the effective configuration" || bad "effective configuration: $(cat t1.yaml)"
else
  bad "print-config with dist.timeout: $(cat t.err)"
fi
"$placer" train-policy --config "$cfg" -o cfg --print-config > t0.yaml 2> t.err &&
  dist_has timeout 60 t0.yaml && ok "dist.timeout defaults to 60" ||
  bad "default dist.timeout: $(cat t0.yaml t.err)"
{ cat "$cfg"; printf 'dist:\n  shards: 2\n  timeout: 7\n'; } |
  sed "s#^corpus: .*#corpus: $data/gdp_cli/tiny.corpus.yaml#; s#\.\./two_gpus#$data/two_gpus#" > timeout7.yaml
"$placer" train-policy --config timeout7.yaml -o cfg --print-config > t7.yaml 2> t.err &&
  dist_has timeout 7 t7.yaml && dist_has shards 2 t7.yaml &&
  ok "dist: {shards: 2, timeout: 7} read from train.yaml" || bad "train.yaml dist.timeout: $(cat t7.yaml t.err)"
# A flag not given leaves the file's value; a given one overrides file and --set.
"$placer" train-policy --config timeout7.yaml -o cfg --dist-url tcp://127.0.0.1:1 --rank 0 --world-size 1 \
  --print-config > t7b.yaml 2> t.err && dist_has timeout 7 t7b.yaml &&
  ok "other dist flags keep dist.timeout 7" || bad "dist flags without --dist-timeout: $(cat t7b.yaml t.err)"
"$placer" train-policy --config timeout7.yaml --set dist.timeout=8 --dist-timeout 9 -o cfg --print-config \
  > t9.yaml 2> t.err && dist_has timeout 9 t9.yaml &&
  ok "--dist-timeout 9 overrides dist.timeout" || bad "--dist-timeout override: $(cat t9.yaml t.err)"
expect "--set dist.timeout=0" "--set: dist.timeout: must be > 0.0 (got '0')" \
  -- train-policy --config "$cfg" --set dist.timeout=0 --print-config
expect "--set dist.timeout=-5" "--set: dist.timeout: must be > 0.0 (got '-5')" \
  -- train-policy --config "$cfg" --set dist.timeout=-5 --print-config
expect "--set dist.timeout=soon" "--set: dist.timeout:" "soon" \
  -- train-policy --config "$cfg" --set dist.timeout=soon --print-config
sed 's/timeout: 7/timeout: 0/' timeout7.yaml > timeout0.yaml
expect "dist.timeout 0 in train.yaml" "timeout0.yaml: dist.timeout: must be > 0.0 (got '0')" \
  -- train-policy --config timeout0.yaml --print-config
sed 's/timeout: 7/timout: 7/' timeout7.yaml > timout.yaml
expect "dist.timout in train.yaml" "timout.yaml: dist: unknown key 'timout' (did you mean 'timeout'?)" \
  -- train-policy --config timout.yaml --print-config
expect "--dist-timeout 0" "--dist-timeout" -- train-policy --config "$cfg" --dist-timeout 0 --print-config

"$placer" train-policy --config "$cfg" -o probe --updates 1 --eval-every 0 > probe.out 2> probe.err; rc=$?
if [ $rc = 2 ] && grep -q "without" probe.err; then
  echo "note: placer was built without LibTorch; distributed checks skipped"
  echo "$n checks, $fail failed"; [ $fail = 0 ]; exit
fi

# --- Two ranks train the tiny run (dist.shards=2 given: the same as the default) ---------
port=$(free_port)
"$placer" train-policy --config "$cfg" -o two --dist-url "tcp://127.0.0.1:$port" --rank 0 \
  --world-size 2 --threads 2 --set dist.shards=2 > r0.out 2> r0.err &
p0=$!; pids+=("$p0")
MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 \
  "$placer" train-policy --config "$cfg" -o two --threads 1 --set dist.shards=2 > r1.out 2> r1.err &
p1=$!; pids+=("$p1")
wait $p0; rc0=$?; wait $p1; rc1=$?
if [ $rc0 = 0 ] && [ $rc1 = 0 ]; then ok "two ranks exit 0"; else
  bad "two ranks: exit $rc0/$rc1: $(cat r0.err r1.err)"; fi
[ "$(updates_in two/log.jsonl)" = 4 ] && ok "4 update lines from rank 0" ||
  bad "update lines: $(updates_in two/log.jsonl)"
# Each update's global batch has 2 instances (one per rank's shard).
[ "$(grep '"type":"update"' two/log.jsonl | grep -c '"instances":\["[^"]*","[^"]*"\]')" = 4 ] &&
  ok "every update has the global batch of 2 instances" || bad "instances: $(cat two/log.jsonl)"
grep -q '^ranks        2 (rank 0 here, tcp://127.0.0.1:' r0.out && grep -q '^updates      4 ' r0.out &&
  ok "rank 0 prints the run" || bad "rank 0 output: $(cat r0.out)"
[ ! -s r1.out ] && ok "rank 1 prints nothing" || bad "rank 1 printed: $(cat r1.out)"
for f in checkpoint.pt policy.pt log.jsonl config.yaml; do
  [ -s "two/$f" ] && ok "two/$f written" || bad "two/$f missing"
done

# One process with dist.shards=2 draws the same global batches as the two ranks (the same
# instances in every update, the same number of simulations; the parameters agree up to
# float rounding, tests/gdp/gdp_dist_test.cpp).
"$placer" train-policy --config "$cfg" -o one --threads 1 --set dist.shards=2 > o.out 2> o.err; rc=$?
batches() { grep '"type":"update"' "$1" | python3 -c '
import json, sys
for line in sys.stdin:
    j = json.loads(line); print(j["update"], j["instances"], j["evaluations"])'; }
if [ $rc = 0 ] && [ -n "$(batches one/log.jsonl)" ] && [ "$(batches one/log.jsonl)" = "$(batches two/log.jsonl)" ]; then
  ok "1 process with dist.shards=2 draws the 2-rank batches"
else
  bad "1 process vs 2 ranks (exit $rc): $(batches one/log.jsonl) / $(batches two/log.jsonl) $(cat o.err)"
fi

# --- A killed rank ---------------------------------------------------------------------
port=$(free_port)
"$placer" train-policy --config "$cfg" -o kill --updates 100000 --eval-every 0 \
  --set checkpoint_every=1 --dist-url "tcp://127.0.0.1:$port" --rank 0 --world-size 2 \
  --dist-timeout 20 --threads 1 > k0.out 2> k0.err &
p0=$!; pids+=("$p0")
"$placer" train-policy --config "$cfg" -o kill --updates 100000 --eval-every 0 \
  --set checkpoint_every=1 --dist-url "tcp://127.0.0.1:$port" --rank 1 --world-size 2 \
  --dist-timeout 20 --threads 1 > k1.out 2> k1.err &
p1=$!; pids+=("$p1")
for _ in $(seq 600); do [ "$(updates_in kill/log.jsonl)" -ge 3 ] && break; sleep 0.1; done
dist_has timeout 20 kill/config.yaml && ok "kill/config.yaml records --dist-timeout 20 (dist.timeout)" ||
  bad "kill/config.yaml: $(cat kill/config.yaml)"
kill -9 $p1; { wait $p1; } 2> /dev/null
t0=$SECONDS
wait $p0; rc=$?
took=$((SECONDS - t0))
if [ $rc != 0 ] && [ $took -le 40 ]; then ok "rank 0 exits $rc within ${took}s of its peer's death"; else
  bad "rank 0 after the kill: exit $rc after ${took}s"; fi
grep -q "placer: error: distributed: .* failed on rank 0 of 2 (another rank died or the connection was lost" k0.err &&
  ok "clear message: $(head -c 160 k0.err)" || bad "message: $(cat k0.err)"
done_updates=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["updates"])' \
  kill/checkpoint.pt.meta.json 2> /dev/null || echo 0)
[ "$done_updates" -ge 2 ] && ok "checkpoint at update $done_updates" || bad "checkpoint meta: $done_updates"
ls kill/*.tmp.* > /dev/null 2>&1 && bad "temporary files left: $(ls kill)" || ok "no torn files"
target=$((done_updates + 2))
"$placer" train-policy --config "$cfg" -o kill --resume --updates $target --eval-every 0 \
  --threads 1 > res.out 2> res.err; rc=$?
[ $rc = 0 ] && grep -q "^training     resuming after update $done_updates" res.out &&
  ok "resumes in one process" || bad "resume: exit $rc: $(cat res.out res.err)"
[ "$(updates_in kill/log.jsonl)" = $target ] && ok "$target update lines after resuming" ||
  bad "log after resume: $(updates_in kill/log.jsonl)"

echo "$n checks, $fail failed"
[ $fail = 0 ]
