#!/usr/bin/env bash
# GDP (the shipped default policy) against `--method best` on the shipped real models
# (datasets/models/onnx/*.onnx, none of them in a training corpus) on DGX-1 P100: zero-shot
# alone, zero-shot in the micro-batch / replica outer loop (`gdp+hybrid`,
# agents/classical/hybrid_outer.h; GDP scores its samples inside each (R, M) frame), and that
# loop with PPO fine-tuning on the graph for FT seconds in all (`--set finetune=100000
# --budget-seconds FT`). One `placer place` per (model, method), seed 1; prints a markdown
# table of step times, the ratios to best, and their geomeans. Results: docs/results.md.
# With CANDIDATE=policy.pt set, gdp and gdp+hybrid also run with that policy, in the same run
# (columns "cand"), so a retrained policy is compared with the shipped one side by side.
# Usage: [CANDIDATE=P] bench/learned_vs_best.sh [PLACER] [BATCH (default 16)] [CLUSTER] [FT (default 60; 0 = skip)]
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
placer=${1:-$src/build/placer}
[ -x "$placer" ] || { echo "learned_vs_best.sh: no placer binary at $placer (build first, or pass its path)" >&2; exit 2; }
batch=${2:-16}
cluster=${3:-$src/datasets/clusters/dgx1_p100.cluster.yaml}
ft=${4:-60}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
candidate=${CANDIDATE:-}
methods=(best gdp gdp+hybrid)
[ "$ft" != 0 ] && methods+=(gdp+hybrid-ft)
[ -n "$candidate" ] && methods+=(gdp-cand gdp+hybrid-cand)

step_ms() {  # step_ms MODEL METHOD -> the step time in ms, or "fail"
  local out args=(--method "$2")
  [ "$2" = gdp+hybrid-ft ] && args=(--method gdp+hybrid --set finetune=100000 --budget-seconds "$ft")
  [ "$2" = gdp-cand ] && args=(--method gdp --set "policy=$candidate")
  [ "$2" = gdp+hybrid-cand ] && args=(--method gdp+hybrid --set "policy=$candidate")
  out=$("$placer" place --model "$1" --batch-size "$batch" --cluster "$cluster" "${args[@]}" \
        --seed 1 -o "$tmp/p.plan.yaml" 2>&1) || { echo fail; return; }
  local winner=""
  [ "$2" = best ] && winner=$(sed -n 's/^method *//p' <<< "$out")
  awk -v w="$winner" '/^step time/ {v=$3; u=$4; if (u=="s") v*=1000; if (u=="us") v/=1000;
    printf "%.2f%s\n", v, (w=="" ? "" : " (" w ")")}' <<< "$out"
}

ratio() {  # ratio A B -> A / B with 3 decimals, or "-" when either is missing
  awk -v a="$1" -v b="$2" 'BEGIN{ if (a+0>0 && b+0>0) printf "%.3f", a/b; else print "-" }'
}

cand_head="" cand_rule=""
[ -n "$candidate" ] && cand_head=" cand gdp / best | cand gdp+hybrid / best |" cand_rule="---|---|"
echo "| model | best ms (winner) | gdp ms | gdp+hybrid ms | gdp+hybrid ft ${ft}s ms | gdp / best | gdp+hybrid / best | ft / best |$cand_head"
echo "|---|---|---|---|---|---|---|---|$cand_rule"
for m in "$src"/datasets/models/onnx/*.onnx; do
  name=$(basename "$m" .onnx)
  declare -A t=()
  for meth in "${methods[@]}"; do t[$meth]=$(step_ms "$m" "$meth"); done
  b=${t[best]%% *}
  r1=$(ratio "${t[gdp]:-}" "$b")
  r2=$(ratio "${t[gdp+hybrid]:-}" "$b")
  r3=$(ratio "${t[gdp+hybrid-ft]:-}" "$b")
  r4=$(ratio "${t[gdp-cand]:-}" "$b")
  r5=$(ratio "${t[gdp+hybrid-cand]:-}" "$b")
  cand_cells=""
  [ -n "$candidate" ] && cand_cells=" $r4 | $r5 |"
  echo "| $name | ${t[best]} | ${t[gdp]} | ${t[gdp+hybrid]} | ${t[gdp+hybrid-ft]:--} | $r1 | $r2 | $r3 |$cand_cells"
  echo "$r1 $r2 $r3 $r4 $r5" >> "$tmp/ratios"
  unset t
done
awk '$1 != "-" && $2 != "-" { n++; a += log($1); b += log($2) }
  $3 != "-" { k++; c += log($3); if ($3 < 1) w++ }
  $4 != "-" && $5 != "-" { j++; d += log($4); e += log($5); if ($5 < 1) v++ }
  END { if (n) printf "\ngeomean over %d models: gdp / best %.3f, gdp+hybrid / best %.3f\n", n, exp(a/n), exp(b/n)
        if (k) printf "fine-tuned: geomean over %d models %.3f of best, better than best on %d\n", k, exp(c/k), w
        if (j) printf "candidate policy: geomean over %d models: gdp / best %.3f, gdp+hybrid / best %.3f (better than best on %d)\n", j, exp(d/j), exp(e/j), v }' "$tmp/ratios"
