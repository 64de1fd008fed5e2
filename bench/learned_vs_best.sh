#!/usr/bin/env bash
# GDP zero-shot (the shipped default policy) against `--method best` on the shipped real
# models (datasets/models/onnx/*.onnx, none of them in a training corpus) on DGX-1 P100,
# with and without the micro-batch / replica outer loop (`gdp+hybrid`, agents/hybrid_outer.h).
# One `placer place` per (model, method), seed 1; prints a markdown table of step times, the
# ratios to best, and their geomeans. Results: docs/results.md.
# Usage: bench/learned_vs_best.sh [PLACER] [BATCH (default 16)] [CLUSTER]
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
placer=${1:-$src/build/placer}
[ -x "$placer" ] || { echo "learned_vs_best.sh: no placer binary at $placer (build first, or pass its path)" >&2; exit 2; }
batch=${2:-16}
cluster=${3:-$src/datasets/clusters/dgx1_p100.cluster.yaml}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
methods=(best gdp gdp+hybrid)

step_ms() {  # step_ms MODEL METHOD -> the step time in ms, or "fail"
  local out
  out=$("$placer" place --model "$1" --batch-size "$batch" --cluster "$cluster" --method "$2" \
        --seed 1 -o "$tmp/p.plan.yaml" 2>&1) || { echo fail; return; }
  local winner=""
  [ "$2" = best ] && winner=$(sed -n 's/^method *//p' <<< "$out")
  awk -v w="$winner" '/^step time/ {v=$3; u=$4; if (u=="s") v*=1000; if (u=="us") v/=1000;
    printf "%.2f%s\n", v, (w=="" ? "" : " (" w ")")}' <<< "$out"
}

echo "| model | best ms (winner) | gdp ms | gdp+hybrid ms | gdp / best | gdp+hybrid / best |"
echo "|---|---|---|---|---|---|"
for m in "$src"/datasets/models/onnx/*.onnx; do
  name=$(basename "$m" .onnx)
  declare -A t=()
  for meth in "${methods[@]}"; do t[$meth]=$(step_ms "$m" "$meth"); done
  b=${t[best]%% *}
  r1=$(awk -v a="${t[gdp]}" -v b="$b" 'BEGIN{ if (a+0>0 && b+0>0) printf "%.3f", a/b; else print "-" }')
  r2=$(awk -v a="${t[gdp+hybrid]}" -v b="$b" 'BEGIN{ if (a+0>0 && b+0>0) printf "%.3f", a/b; else print "-" }')
  echo "| $name | ${t[best]} | ${t[gdp]} | ${t[gdp+hybrid]} | $r1 | $r2 |"
  echo "$r1 $r2" >> "$tmp/ratios"
  unset t
done
awk '$1 != "-" && $2 != "-" { n++; a += log($1); b += log($2) }
  END { if (n) printf "\ngeomean over %d models: gdp / best %.3f, gdp+hybrid / best %.3f\n", n, exp(a/n), exp(b/n) }' "$tmp/ratios"
