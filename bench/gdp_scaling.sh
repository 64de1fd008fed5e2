#!/usr/bin/env bash
# Scaling of GDP pretraining (docs/distributed.md): simulated placements per second of
# `placer train-policy` with 1..N rollout threads in one process and with 1..N processes
# (Gloo ranks on loopback, one rollout thread each). Every run trains the same short job on
# the default corpus (small network, no evaluation, the single-device reference only so
# that first meetings of instances cost little); the rate is the updates' simulated
# placements over their wall time, from rank 0's log.jsonl, skipping the first update.
# Usage: bench/gdp_scaling.sh [PLACER] [MAX (default: cores)] [UPDATES (default 8)]
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
placer=${1:-$src/build/placer}
[ -x "$placer" ] || { echo "gdp_scaling.sh: no placer binary at $placer (build first, or pass its path)" >&2; exit 2; }
max=${2:-$(nproc)}
updates=${3:-8}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(train-policy --corpus "$src/datasets/corpora/default.corpus.yaml"
  --cluster "$src/datasets/clusters/dgx1_p100.cluster.yaml" --updates "$updates" --eval-every 0
  --set 'reference_methods=[]' --set max_ops=2000 --set net.hidden=16 --set net.ffn=32
  --set net.heads=2 --set net.sage_layers=1 --set net.txl_layers=1
  --set ppo.graphs_per_update=4 --set ppo.samples=32 --set ppo.epochs=1 --set checkpoint_every=1000)

rate() {  # placements/s over updates 2.. of a log
  python3 - "$1" << 'PY'
import json, sys
ev = sec = 0.0
for line in open(sys.argv[1]):
    j = json.loads(line)
    if j.get("type") == "update" and j["update"] > 1:
        ev += j["evaluations"]; sec += j["seconds"]
print(f"{ev / sec:.1f}" if sec > 0 else "-")
PY
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

printf '%-10s %-8s %-8s %s\n' "processes" "threads" "placem/s" "wall"
for t in $(seq 1 "$max"); do
  start=$SECONDS
  "$placer" "${common[@]}" --threads "$t" -o "$tmp/t$t" > /dev/null 2>&1
  printf '%-10s %-8s %-8s %ss\n' 1 "$t" "$(rate "$tmp/t$t/log.jsonl")" $((SECONDS - start))
done
for p in $(seq 2 "$max"); do
  port=$(free_port)
  start=$SECONDS
  pids=()
  for r in $(seq 0 $((p - 1))); do
    "$placer" "${common[@]}" --threads 1 -o "$tmp/p$p" --dist-url "tcp://127.0.0.1:$port" \
      --rank "$r" --world-size "$p" > /dev/null 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  printf '%-10s %-8s %-8s %ss\n' "$p" 1 "$(rate "$tmp/p$p/log.jsonl")" $((SECONDS - start))
done
