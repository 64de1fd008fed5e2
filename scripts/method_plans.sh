#!/usr/bin/env bash
# Runs every registered placement method (plus the policy and option variants of the learned
# ones) with a fixed seed and a small budget on a small shipped suite, and prints one line
# per (method, model): the step time `placer place` reports and a hash of the written plan.
# A refactoring that must not change behaviour is checked by running it before and after
# and diffing the two outputs (they must be identical). Takes a few minutes on two cores.
# Usage:
#   bash scripts/method_plans.sh [PLACER] > plans.txt       (default PLACER: build/placer)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
placer=${1:-build/placer}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# (name, graph, cluster, extra problem options)
suite=(
  "mlp2|tests/data/mlp2.graph.json|tests/data/two_gpus.cluster.yaml|"
  "transformer_small|datasets/models/transformer_small.graph.json|datasets/clusters/dgx1_p100.cluster.yaml|--devices 0,1,2,3"
)

# Every registered method: the error for an unknown one lists them ("known: a, b, c)").
methods=$("$placer" place --graph tests/data/mlp2.graph.json \
  --cluster tests/data/two_gpus.cluster.yaml --method no-such-method -o "$tmp/x.plan.yaml" 2>&1 |
  sed -n 's/.*known: \([^)]*\)).*/\1/p' | tr -d ',')
[ -n "$methods" ] || { echo "method_plans: could not list the methods" >&2; exit 1; }

# (label, options): every method with the common budget, then the variants.
runs=()
for m in $methods best; do runs+=("$m|--method $m"); done
runs+=(
  "gdp+finetune|--method gdp --samples 4 --finetune 2"
  "rainbow-pp+stages2|--method rainbow-pp --stages 2"
  "rainbow-pp+policy|--method rainbow-pp --policy models/pretrained/rainbow_pp.pt --samples 4"
  "rainbow-opp+set|--method rainbow-opp --agent-set episodes=3 --agent-set lr=1e-3"
  "colocrl+set|--method colocrl --agent-set samples=4"
  "hdp+set|--method hdp --agent-set samples=4"
)

for entry in "${suite[@]}"; do
  IFS='|' read -r model graph cluster extra <<< "$entry"
  for run in "${runs[@]}"; do
    IFS='|' read -r label opts <<< "$run"
    out="$tmp/$model.$label.plan.yaml"
    # shellcheck disable=SC2086
    if "$placer" place --graph "$graph" --cluster "$cluster" $extra $opts \
         --budget-evals 30 --seed 7 -o "$out" > "$tmp/out.txt" 2> "$tmp/err.txt"; then
      step=$(sed -n 's/^step time *//p' "$tmp/out.txt")
      # The plan file holds no wall-clock field; hash it whole.
      hash=$(sha256sum "$out" | cut -c1-16)
      echo "$label $model step=$step plan=$hash"
    else
      echo "$label $model FAILED: $(tail -1 "$tmp/err.txt")"
    fi
  done
done
