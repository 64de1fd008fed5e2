#!/usr/bin/env bash
# One value vocabulary: a bool is true/false, yes/no, on/off or 1/0 in any case, the same
# for a method's `--set`, a training configuration file, its `--set` overrides and the Rainbow
# agent's options; a wrong value is one line naming the key and the accepted spellings.
# Usage: option_values.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0; n=0
source "$src/tests/cli/lib/expect.bash"
cfg=$data/gdp_cli/tiny.train.yaml
accepted="true/false, yes/no, on/off or 1/0"

# printed NAME WANT ARGS...: `placer train-policy ARGS --print-config` prints the line WANT.
printed() {
  local name=$1 want=$2; shift 2
  n=$((n + 1))
  if "$placer" train-policy "$@" --print-config > out.yaml 2> err.txt &&
     grep -qx -- "$want" out.yaml; then
    echo "ok   $name"
  else
    echo "FAIL $name: $(cat err.txt) $(grep -- "${want%%:*}" out.yaml)"; fail=$((fail + 1))
  fi
}

for v in true TRUE Yes on 1; do
  printed "--set stages=$v" "stages: true" --config "$cfg" --set "stages=$v"
  printed "--set rainbow.noisy=$v" "  noisy: true" --agent rainbow-pp --set "rainbow.noisy=$v"
done
for v in false No OFF 0; do
  printed "--set stages=$v" "stages: false" --config "$cfg" --set stages=true --set "stages=$v"
  printed "--set rainbow.dueling=$v" "  dueling: false" --agent rainbow-pp \
    --set "rainbow.dueling=$v"
done
# The same spellings in the configuration file.
{ cat "$cfg"; printf 'stages: 1\n'; } > one.yaml
printed "stages: 1 in a file" "stages: true" --config one.yaml
printf 'agent: rainbow-pp\nrainbow: {noisy: On, dueling: 0}\n' > rb.yaml
printed "rainbow: {noisy: On} in a file" "  noisy: true" --config rb.yaml
printed "rainbow: {dueling: 0} in a file" "  dueling: false" --config rb.yaml

# A wrong value: one line naming the key and the accepted spellings.
expect "--set stages=maybe" "stages" "$accepted, got 'maybe'" \
  -- train-policy --config "$cfg" --set stages=maybe --print-config
printf 'agent: rainbow-pp\nrainbow: {noisy: perhaps}\n' > bad.yaml
expect "rainbow: {noisy: perhaps}" "bad.yaml: rainbow noisy (rainbow agent): expected $accepted" \
  -- train-policy --config bad.yaml --print-config
if "$placer" methods 2>&1 | grep -qx 'rainbow-pp'; then
  expect "place --set prune=maybe" "--set prune (rainbow-pp): expected $accepted, got 'maybe'" \
    -- place --graph "$data/mlp2.graph.json" --cluster "$data/two_gpus.cluster.yaml" \
    --method rainbow-pp --set prune=maybe -o x.plan.yaml
  n=$((n + 1))
  if "$placer" place --graph "$data/mlp2.graph.json" --cluster "$data/two_gpus.cluster.yaml" \
       --method rainbow-pp --set prune=OFF --budget-evals 4 -o x.plan.yaml > out.txt 2>&1; then
    echo "ok   place --set prune=OFF"
  else
    echo "FAIL place --set prune=OFF: $(tail -1 out.txt)"; fail=$((fail + 1))
  fi
else
  echo "note: no rainbow-pp in this build (no LibTorch); place --set not checked"
fi

echo "$n checks, $fail failed"
[ $fail = 0 ]
