#!/usr/bin/env bash
# `placer coarsen` end to end: the coarse graph and the group-annotated fine graph are
# written, deterministic and simulate; a plan on groups (placement.groups) runs on the
# annotated graph and round-trips; bad input gives one clear line and a non-zero exit.
# Usage: coarsen.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok()  { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

graph=$data/mlp2.graph.json
cluster=$data/two_gpus.cluster.yaml

# mlp2's training step: 14 ops, 5 colocation groups, 2 after fusing the element-wise
# chain fc1/MatMul -> fc1/Add -> relu/Relu; the target 2 needs no merging.
"$placer" coarsen --graph "$graph" --groups 2 -o "$tmp/out/coarse.graph.json" \
  --annotate "$tmp/out/fine.graph.json" > "$tmp/run1.txt" 2> "$tmp/err1.txt"
check "coarsen exits 0" test $? -eq 0
cat "$tmp/run1.txt"
check "reports the steps" grep -q '^groups       14 ops -> 5 after colocation -> 2 after fusion -> 2 after merging (target 2)$' "$tmp/run1.txt"
check "reports the largest group" grep -q "^largest      'fc1..relu': 8 ops" "$tmp/run1.txt"
check "says it expanded the forward graph" grep -q 'coarsening its training step' "$tmp/err1.txt"
check "coarse graph written" grep -q '"name": *"fc1..relu/grad"' "$tmp/out/coarse.graph.json"
check "annotated graph written" grep -q '"group": *"fc2"' "$tmp/out/fine.graph.json"

# Deterministic.
"$placer" coarsen --graph "$graph" --groups 2 -o "$tmp/again.graph.json" > /dev/null 2>&1
check "same output twice" cmp -s "$tmp/out/coarse.graph.json" "$tmp/again.graph.json"

# The coarse graph is a valid training-step graph the simulator runs.
printf 'format_version: "1.0"\nplacement: {default: 0}\n' > "$tmp/one.plan.yaml"
"$placer" simulate --graph "$tmp/out/coarse.graph.json" --cluster "$cluster" --plan "$tmp/one.plan.yaml" > "$tmp/sim_coarse.txt" 2>&1
check "coarse graph simulates" grep -q '^step time' "$tmp/sim_coarse.txt"

# A plan on groups runs on the annotated graph; written back, it keeps the groups and
# predicts the same step time.
cat > "$tmp/groups.plan.yaml" <<'Y'
format_version: "1.0"
placement:
  groups: {"fc1..relu": host0/gpu0, fc2: host0/gpu1}
Y
"$placer" simulate --graph "$tmp/out/fine.graph.json" --cluster "$cluster" --plan "$tmp/groups.plan.yaml" \
  -o "$tmp/written.plan.yaml" > "$tmp/sim1.txt" 2>&1
check "groups plan simulates" grep -q '^step time' "$tmp/sim1.txt"
check "group fc2 computes on gpu1" test -n "$(awk '$1 == "host0/gpu1" && $2 + 0 > 0' "$tmp/sim1.txt")"
check "written plan keeps groups" grep -q 'groups:' "$tmp/written.plan.yaml"
"$placer" simulate --graph "$tmp/out/fine.graph.json" --cluster "$cluster" --plan "$tmp/written.plan.yaml" > "$tmp/sim2.txt" 2>&1
check "written plan, same step time" test "$(grep '^step time' "$tmp/sim1.txt")" = "$(grep '^step time' "$tmp/sim2.txt")"

# Forward graph as it is, no fusion, no colocation: the identity (5 groups, 5 ops).
"$placer" coarsen --graph "$graph" --no-expand --no-fuse --no-colocate -o "$tmp/id.graph.json" > "$tmp/id.txt" 2>&1
check "identity coarsening" grep -q '^groups       5 ops$' "$tmp/id.txt"

# Bad input.
expect_error() {
  local name=$1 needle=$2; shift 2
  out=$("$placer" "$@" 2>&1); rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then bad "$name: exit $rc"; return; fi
  if echo "$out" | grep -qF -- "$needle"; then ok "$name"; else bad "$name: message lacks '$needle': $out"; fi
}
expect_error "negative --groups" "--groups" coarsen --graph "$graph" --groups -1 -o "$tmp/x.json"
expect_error "missing graph" "does/not/exist.graph.json" coarsen --graph does/not/exist.graph.json -o "$tmp/x.json"
expect_error "cyclic graph" "cycle" coarsen --graph "$data/bad/cyclic.graph.json" -o "$tmp/x.json"
expect_error "bad optimizer" "--optimizer" coarsen --graph "$graph" --optimizer lion -o "$tmp/x.json"
expect_error "unknown group in plan" "unknown colocation group 'fc3'" simulate --graph "$tmp/out/fine.graph.json" \
  --cluster "$cluster" --plan <(printf 'format_version: "1.0"\nplacement:\n  default: 0\n  groups: {fc3: 1}\n')

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
