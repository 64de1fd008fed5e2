#!/usr/bin/env bash
# `placer compare --set METHOD.KEY=VALUE`: an option reaches the one compared method it names
# (the compared colocrl plan is the one `place --method colocrl --set KEY=VALUE` writes, and a
# degree beyond the devices fails rainbow-opp's row, not the others), and a missing METHOD.
# prefix, a method not compared or without options, an unknown key or a bad value exit 1
# before any method runs, naming the option.
# Usage: compare_set.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0; n=0
source "$src/tests/cli/lib/expect.bash"
graph=$data/mlp2.graph.json
cluster=$data/two_gpus.cluster.yaml
problem=(--graph "$graph" --cluster "$cluster")

ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $1"; }

expect "--set without METHOD." "--set 'samples=4': expected METHOD.KEY=VALUE" \
  -- compare "${problem[@]}" --methods m-etf --set samples=4
expect "--set of a method not compared" "--set 'colocrl.samples=4': method 'colocrl' is not compared (compared: m-etf, anneal)" \
  -- compare "${problem[@]}" --methods m-etf,anneal --set colocrl.samples=4
expect "--set of a method without options" "--set applies to" "not to --method m-etf" \
  -- compare "${problem[@]}" --methods m-etf --set m-etf.x=1

if "$placer" methods colocrl 2>&1 | grep -q "unknown method 'colocrl'"; then
  echo "note: colocrl takes no options in this build (no LibTorch); the rest is skipped"
  echo "$n checks, $fail failed"; [ $fail = 0 ]; exit
fi

expect "--set unknown key" "--set sample (colocrl): unknown option" "did you mean 'samples'?" \
  -- compare "${problem[@]}" --methods m-etf,colocrl --set colocrl.sample=4
expect "--set bad value" "--set groups (hdp): expected a number, got 'many'" \
  -- compare "${problem[@]}" --methods hdp --set hdp.groups=many

# The compared colocrl is the placed one: the same step time (CSV: 6 significant digits).
budget=(--budget-evals 8 --seed 3)
if "$placer" compare "${problem[@]}" --methods m-etf,colocrl,rainbow-opp "${budget[@]}" --csv \
     --set colocrl.samples=4 --set rainbow-opp.degree=3 > cmp.csv 2> cmp.err; then
  ok "compare with --set runs"
else
  bad "compare with --set: $(tail -1 cmp.err)"
fi
"$placer" place "${problem[@]}" --method colocrl --set samples=4 "${budget[@]}" -o c.plan.yaml \
  > /dev/null 2> place.err || bad "place colocrl: $(tail -1 place.err)"
placed=$(sed -n 's/^  step_time: \([0-9.e+-]*\) us$/\1/p' c.plan.yaml)
compared=$(awk -F, '$1 == "colocrl" {print $2}' cmp.csv)
if [ -n "$placed" ] && [ -n "$compared" ] &&
   awk -v p="$placed" -v c="$compared" 'BEGIN { d = p * 1e-6 - c; if (d < 0) d = -d; exit !(d <= 1e-5 * c) }'; then
  ok "colocrl with --set colocrl.samples=4: ${compared} s, as placed (${placed} us)"
else
  bad "colocrl compared '$compared' s, placed '$placed' us"
fi
grep -q '^rainbow-opp,,,,,,.*degree' cmp.csv && ok "rainbow-opp.degree=3 reaches rainbow-opp (its row fails)" ||
  bad "rainbow-opp row: $(grep '^rainbow-opp' cmp.csv)"
grep -q '^m-etf,[0-9]' cmp.csv && ok "m-etf is untouched" || bad "m-etf row: $(grep '^m-etf' cmp.csv)"

echo "$n checks, $fail failed"
[ $fail = 0 ]
