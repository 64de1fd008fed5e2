#!/usr/bin/env bash
# `placer methods [M]` and `placer place --set`: the registry lists every method (the ones
# `place --method` knows), a method's options come with their defaults, docs/cli.md names
# exactly the methods that take options and lists each one's option keys, --set reaches
# the placer (.place.yaml), its deprecated alias --agent-set warns, and bad keys / values /
# methods are clear errors.
# Usage: methods.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0; n=0
source "$src/tests/cli/lib/expect.bash"
graph=$data/mlp2.graph.json
cluster=$data/two_gpus.cluster.yaml

ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $1"; }

"$placer" methods > list.txt 2>&1 && ok "methods exits 0" || bad "methods: $(cat list.txt)"
known=$("$placer" place --graph "$graph" --cluster "$cluster" --method no-such -o x.plan.yaml 2>&1 |
  sed -n 's/.*known: \([^)]*\)).*/\1/p' | tr -d ',')
# The registered methods come first; the composite methods follow their heading.
listed=$(sed '/^composite methods/,$d' list.txt | grep -v '^ ' | awk '{print $1}' | tr '\n' ' ')
[ "$(echo $known)" = "$(echo $listed)" ] && ok "methods lists every method of place --method" ||
  bad "methods lists '$listed', place knows '$known'"
grep -q '^m-etf  \[fast\]' list.txt && ok "fast methods are marked" || bad "no [fast] on m-etf"

# docs/cli.md names the methods with options, as the registry does: the registered ones
# (none without LibTorch; the docs check is then skipped) and the composites.
with=$(sed '/^composite methods/,$d' list.txt | grep 'options\]' | awk '{print $1}')
if [ -n "$with" ]; then
  with=$(grep 'options\]' list.txt | awk '{print $1}' | sort | tr '\n' ' ')
fi
doc=$(sed -n '/^### Method options/,/^## /p' "$src/docs/cli.md" | tr '\n' ' ' |
  sed -n 's/.*Methods with options today: \([^.]*\)\..*/\1/p' | sed 's/(`[^)]*)//g' |
  tr -d ',' | tr ' ' '\n' | grep -v '^$' | sort | tr '\n' ' ')
if [ -z "$with" ]; then
  echo "note: no method takes options in this build (no LibTorch); docs check skipped"
elif [ "$with" = "$doc" ]; then
  ok "docs/cli.md names the methods with options ($with)"
else
  bad "docs/cli.md names '$doc', the registry '$with'"
fi

# Composites take their inner method as --set inner=M; M+hybrid is an alias of that form.
grep -q '^hybrid  \[1 options\]' list.txt && ok "methods lists the composite hybrid" ||
  bad "no composite hybrid: $(cat list.txt)"
"$placer" methods hybrid 2>&1 | grep -q '^  inner (method, default m-etf): ' &&
  ok "methods hybrid: inner defaults to m-etf" || bad "methods hybrid: $("$placer" methods hybrid 2>&1)"
same_plan() {  # NAME "ALIAS OPTIONS" "OPTION-FORM OPTIONS": the two write the same plan file
  # shellcheck disable=SC2086
  "$placer" place --graph "$graph" --cluster "$cluster" $2 --seed 3 -o al/x.plan.yaml \
    > /dev/null 2> al.err || { bad "$1: $(cat al.err)"; return; }
  # shellcheck disable=SC2086
  "$placer" place --graph "$graph" --cluster "$cluster" $3 --seed 3 -o op/x.plan.yaml \
    > /dev/null 2> op.err || { bad "$1: $(cat op.err)"; return; }
  cmp -s al/x.plan.yaml op/x.plan.yaml && ok "$1: the same plan" || bad "$1: the plans differ"
}
same_plan "metis+hybrid = hybrid --set inner=metis" "--method metis+hybrid" \
  "--method hybrid --set inner=metis"
expect "hybrid with an unknown inner method" "--set inner (hybrid): unknown method 'nope' (known: " \
  -- place --graph "$graph" --cluster "$cluster" --method hybrid --set inner=nope -o x.plan.yaml
"$placer" place --graph "$graph" --cluster "$cluster" --method hybrid --set inner=nope \
  -o x.plan.yaml > inner.out 2>&1
rc=$?
[ $rc = 1 ] && [ "$(wc -l < inner.out)" = 1 ] && [ ! -e x.plan.yaml ] &&
  ok "unknown inner method: one line, exit 1, no plan" || bad "unknown inner: exit $rc: $(cat inner.out)"

"$placer" methods m-etf > m.txt 2>&1 && grep -q "no options" m.txt && ok "methods m-etf: no options" ||
  bad "methods m-etf: $(cat m.txt)"
expect "methods with an unknown name" "unknown method 'nope'" -- methods nope
expect "--set with a method without options" "--set applies to the Rainbow placers" "not to --method m-etf" \
  -- place --graph "$graph" --cluster "$cluster" --method m-etf --set episodes=3 -o x.plan.yaml
expect "--set with best" "--set episodes (best): unknown option (known: objective)" \
  -- place --graph "$graph" --cluster "$cluster" --method best --set episodes=3 -o x.plan.yaml
expect "--set without --method (auto)" "--set episodes (auto): unknown option (known: objective)" \
  -- place --graph "$graph" --cluster "$cluster" --set episodes=3 -o x.plan.yaml

if [ -z "$with" ]; then echo "$n checks, $fail failed"; [ $fail = 0 ]; exit; fi

# docs/cli.md lists every option key of every method with options, as `placer methods M` does.
for m in $with; do
  keys=$("$placer" methods "$m" | sed -n 's/^  \([a-z_0-9.]*\) (.*/`\1`/p' | paste -sd, | sed 's/,/, /g')
  line=$(grep -F -- "- \`$m\`: " "$src/docs/cli.md" | head -1)
  if [ -n "$keys" ] && [ "$line" = "- \`$m\`: $keys" ]; then
    ok "docs/cli.md lists the options of $m"
  else
    bad "docs/cli.md: '$line', placer methods $m: '$keys'"
  fi
done

"$placer" methods colocrl > c.txt 2>&1
grep -q '^  samples (int, default 8): ' c.txt && grep -q '^  max_steps (int, default 256)' c.txt &&
  ok "methods colocrl: options with defaults" || bad "methods colocrl: $(cat c.txt)"
expect "--set unknown key with a suggestion" "--set sample (colocrl): unknown option (known:" \
  "did you mean 'samples'?" \
  -- place --graph "$graph" --cluster "$cluster" --method colocrl --set sample=3 -o x.plan.yaml
expect "--set bad value" "--set groups (hdp): expected a number, got 'many'" \
  -- place --graph "$graph" --cluster "$cluster" --method hdp --set groups=many -o x.plan.yaml
expect "--set without =" "--set 'episodes': expected KEY=VALUE" \
  -- place --graph "$graph" --cluster "$cluster" --method rainbow-opp --set episodes -o x.plan.yaml

if grep -q '^gdp+stages' list.txt; then
  same_plan "gdp+stages = stages --set inner=gdp" "--method gdp+stages --set samples=4" \
    "--method stages --set inner=gdp --set samples=4"
  same_plan "gdp+hybrid = hybrid --set inner=gdp (with gdp's shorthand --samples)" \
    "--method gdp+hybrid --samples 2" "--method hybrid --set inner=gdp --samples 2"
  expect "stages with an inner method it cannot read as stages" \
    "--set inner (stages): unknown method 'metis' (known: gdp)" \
    -- place --graph "$graph" --cluster "$cluster" --method stages --set inner=metis -o x.plan.yaml
fi

# --set and --agent-set give the same plan; the alias warns.
"$placer" place --graph "$graph" --cluster "$cluster" --method rainbow-opp --set episodes=3 \
  --seed 4 -o s/out.plan.yaml > /dev/null 2> s.err || bad "place --set: $(cat s.err)"
"$placer" place --graph "$graph" --cluster "$cluster" --method rainbow-opp --agent-set episodes=3 \
  --seed 4 -o a/out.plan.yaml > /dev/null 2> a.err || bad "place --agent-set: $(cat a.err)"
cmp -s s/out.plan.yaml a/out.plan.yaml && ok "--set and --agent-set: the same plan" ||
  bad "--set and --agent-set plans differ"
grep -q 'set: \["episodes=3"\]' s/out.place.yaml && ok "place.yaml records --set" ||
  bad "place.yaml: $(cat s/out.place.yaml)"
grep -q 'deprecated' a.err && ok "--agent-set warns that it is deprecated" || bad "no warning: $(cat a.err)"
! grep -q 'deprecated' s.err && ok "--set does not warn" || bad "--set warns: $(cat s.err)"

echo "$n checks, $fail failed"
[ $fail = 0 ]
