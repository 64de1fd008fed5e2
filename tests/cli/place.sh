#!/usr/bin/env bash
# `placer place` and `placer compare` on shipped data: the written plan reproduces its
# step time under `placer simulate`, the configuration lands next to it, `best` picks a
# method, compare prints one row per method and valid CSV, unknown methods exit 1.
# Usage: place.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -uo pipefail
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$src"
graph=datasets/models/transformer_small.graph.json
cluster=datasets/clusters/dgx1_p100.cluster.yaml
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# place + simulate agree on the step time, for a fixed and a searched method.
for method in single anneal; do
  ext=yaml; [ "$method" = anneal ] && ext=json
  if "$placer" place --graph $graph --cluster $cluster --method $method --budget-evals 200 \
      --seed 3 -o "$tmp/$method/out.plan.$ext" > "$tmp/$method.txt" 2> "$tmp/$method.err"; then
    placed=$(grep '^step time' "$tmp/$method.txt")
    "$placer" simulate --graph $graph --cluster $cluster --plan "$tmp/$method/out.plan.$ext" \
      > "$tmp/$method.sim.txt" 2>/dev/null
    simulated=$(grep '^step time' "$tmp/$method.sim.txt")
    if [ -n "$placed" ] && [ "$placed" = "$simulated" ]; then ok; else
      bad "$method: place says '$placed', simulate says '$simulated'"; fi
    grep -q "^method       $method" "$tmp/$method.txt" && ok || bad "$method: no method line"
    grep -q '^speed-up' "$tmp/$method.txt" && ok || bad "$method: no speed-up line"
    grep -q '^search time' "$tmp/$method.txt" && ok || bad "$method: no search time line"
    if grep -q "^chosen_method: $method" "$tmp/$method/out.place.yaml" 2>/dev/null &&
       grep -q "seed: 3" "$tmp/$method/out.place.yaml"; then ok; else
      bad "$method: effective configuration missing or wrong"; cat "$tmp/$method/out.place.yaml"; fi
  else
    bad "place --method $method failed: $(cat "$tmp/$method.err")"
  fi
done
# single: speed-up 1.00x by definition.
grep -q '^speed-up     1.00x' "$tmp/single.txt" && ok || bad "single: speed-up is not 1.00x"

# Same seed, same plan.
"$placer" place --graph $graph --cluster $cluster --method anneal --budget-evals 200 --seed 3 \
  -o "$tmp/again/out.plan.json" > /dev/null 2>&1
cmp -s "$tmp/anneal/out.plan.json" "$tmp/again/out.plan.json" && ok || bad "anneal: same seed, different plan"

# best: one stderr line per fast method, a plan that simulate reproduces.
if "$placer" place --graph $graph --cluster $cluster --method best --budget-evals 100 \
    -o "$tmp/best.plan.yaml" > "$tmp/best.txt" 2> "$tmp/best.err"; then
  n=$(grep -c '^placer: best: ' "$tmp/best.err")
  [ "$n" -ge 1 ] && ok || bad "best: no per-method lines on stderr"
  grep -q '^chosen_method: ' "$tmp/best.place.yaml" && ok || bad "best: no chosen_method"
  placed=$(grep '^step time' "$tmp/best.txt")
  simulated=$("$placer" simulate --graph $graph --cluster $cluster --plan "$tmp/best.plan.yaml" 2>/dev/null | grep '^step time')
  [ "$placed" = "$simulated" ] && ok || bad "best: '$placed' vs '$simulated'"
else
  bad "place --method best failed: $(cat "$tmp/best.err")"
fi

# best by throughput: each line adds the plan's steady state, the configuration records the
# objective; a bad value is one line naming the key, exit 1.
if "$placer" place --graph $graph --cluster $cluster --method best --set objective=throughput \
    --budget-evals 100 -o "$tmp/thr.plan.yaml" > /dev/null 2> "$tmp/thr.err"; then
  grep -q '^placer: best: .*(throughput: .* per step)' "$tmp/thr.err" && ok ||
    bad "best throughput: no steady state in $(cat "$tmp/thr.err")"
  grep -q '^  objective: throughput' "$tmp/thr.place.yaml" && ok || bad "best throughput: not recorded"
else
  bad "place --method best --set objective=throughput failed: $(cat "$tmp/thr.err")"
fi
"$placer" place --graph $graph --cluster $cluster --method best --set objective=fast \
    -o "$tmp/bad.plan.yaml" > /dev/null 2> "$tmp/bad.err"
[ $? = 1 ] && grep -q "objective (best): expected step or throughput, got 'fast'" "$tmp/bad.err" &&
  [ ! -e "$tmp/bad.plan.yaml" ] && ok || bad "best bad objective: $(cat "$tmp/bad.err")"

# compare: a row per method (table and CSV).
methods=$("$placer" place --graph $graph --cluster $cluster --method no-such-method -o "$tmp/x.yaml" 2>&1 |
  sed -n 's/.*(known: \(.*\))$/\1/p')
if "$placer" compare --graph $graph --cluster $cluster --budget-evals 100 > "$tmp/cmp.txt" 2>/dev/null; then
  missing=0
  for m in ${methods//,/ }; do grep -q "^$m " "$tmp/cmp.txt" || { missing=1; bad "compare: no row for $m"; }; done
  [ $missing = 0 ] && [ -n "$methods" ] && ok
  grep -q '^anneal ' "$tmp/cmp.txt" && ok || bad "compare: no anneal row"
else
  bad "compare failed"
fi
if "$placer" compare --graph $graph --cluster $cluster --methods single,anneal --budget-evals 50 --csv \
    > "$tmp/cmp.csv" 2>/dev/null; then
  if python3 - "$tmp/cmp.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["method"] for r in rows] == ["single", "anneal"], rows
assert abs(float(rows[0]["speedup"]) - 1.0) < 1e-9, rows[0]
for r in rows:
    assert float(r["step_time_s"]) > 0 and r["oom"] in ("true", "false") and r["error"] == "", r
    assert int(r["max_peak_memory_bytes"]) > 0 and r["max_peak_device"].startswith("dgx1/")
PY
  then ok; else bad "compare --csv does not parse as expected"; cat "$tmp/cmp.csv"; fi
else
  bad "compare --csv failed"
fi

# A method that fails is a row with its error; the table is still printed (exit 0).
sed 's/memory: 16 GiB/memory: 100 KiB/' "$3/two_gpus.cluster.yaml" > "$tmp/tiny.cluster.yaml"
if "$placer" compare --graph "$3/mlp2.graph.json" --cluster "$tmp/tiny.cluster.yaml" \
    --methods single,anneal --budget-evals 20 > "$tmp/err.txt" 2>/dev/null; then
  grep -q '^single .* yes ' "$tmp/err.txt" && ok || { bad "tiny cluster: single row not OOM"; cat "$tmp/err.txt"; }
  grep -q '^anneal .*error: anneal: graph .* needs .* resident' "$tmp/err.txt" && ok || { bad "tiny cluster: no anneal error row"; cat "$tmp/err.txt"; }
else
  bad "compare aborted on a failing method"
fi
"$placer" compare --graph "$3/mlp2.graph.json" --cluster "$tmp/tiny.cluster.yaml" \
  --methods anneal --budget-evals 20 --csv 2>/dev/null | tail -1 | grep -q '^anneal,,,,,,.*,"*anneal: graph .* needs ' && ok ||
  bad "tiny cluster: CSV error row"

# Unknown method: exit 1 and the list of known ones (place and compare).
"$placer" place --graph $graph --cluster $cluster --method no-such-method -o "$tmp/x.yaml" > "$tmp/u.txt" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "unknown method 'no-such-method' (known: .*anneal" "$tmp/u.txt" && ok || {
  bad "place unknown method: rc=$rc"; cat "$tmp/u.txt"; }
"$placer" compare --graph $graph --cluster $cluster --methods single,nope > "$tmp/u2.txt" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "unknown method 'nope' (known: " "$tmp/u2.txt" && ok || {
  bad "compare unknown method: rc=$rc"; cat "$tmp/u2.txt"; }
# Bad --devices.
"$placer" place --graph $graph --cluster $cluster --method single --devices 0,99 -o "$tmp/x.yaml" > "$tmp/d.txt" 2>&1
rc=$?
[ $rc = 1 ] && grep -q -- "--devices: '99'" "$tmp/d.txt" && ok || { bad "bad --devices: rc=$rc"; cat "$tmp/d.txt"; }

echo "$pass passed, $fail failed"
[ $fail = 0 ]
