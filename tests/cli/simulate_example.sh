#!/usr/bin/env bash
# Simulating a shipped plan (the simulate example in the README): the example pipeline plan,
# writing the plan with its prediction and a trace; then simulate the written plan again and check
# that it predicts the same step time (the plan file round-trips through the CLI).
# Usage: simulate_example.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -euo pipefail
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$src"
graph=datasets/models/transformer_small.graph.json
cluster=datasets/clusters/dgx1_p100.cluster.yaml

"$placer" simulate --graph $graph --cluster $cluster --plan examples/transformer_small.pipeline.plan.yaml \
  --trace "$tmp/out/trace.json" -o "$tmp/out/plan.yaml" > "$tmp/first.txt"
cat "$tmp/first.txt"
grep -q '^step time' "$tmp/first.txt"
grep -q '^bottleneck' "$tmp/first.txt"
test -s "$tmp/out/trace.json"
grep -q '"traceEvents"' "$tmp/out/trace.json"
grep -q '^predicted:' "$tmp/out/plan.yaml"
grep -q 'step_time:' "$tmp/out/plan.yaml"

"$placer" simulate --graph $graph --cluster $cluster --plan "$tmp/out/plan.yaml" -o "$tmp/again.plan.json" > "$tmp/second.txt"
first=$(grep '^step time' "$tmp/first.txt")
second=$(grep '^step time' "$tmp/second.txt")
if [ "$first" != "$second" ]; then
  echo "FAIL: re-simulating the written plan changed the step time: '$first' vs '$second'"; exit 1
fi
# The JSON plan carries the same prediction in seconds.
grep -q '"step_time"' "$tmp/again.plan.json"
echo "1 passed, 0 failed"
