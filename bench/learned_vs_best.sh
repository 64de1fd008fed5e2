#!/usr/bin/env bash
# GDP (the shipped default policy) against `--method best` on the shipped real models
# (datasets/models/onnx/*.onnx, none of them in a training corpus) on DGX-1 P100, side by side
# in one run. Columns (METHODS, space separated; default "gdp gdp+hybrid gdp+stages
# gdp+stages-ft"):
#   gdp            zero-shot placement alone
#   gdp+hybrid     zero-shot in the micro-batch / replica outer loop (agents/classical/hybrid_outer.h)
#   gdp+stages     zero-shot, every placement read as pipeline stages whose replicas and
#                  micro-batches pipeline-dp chooses (agents/staged_methods.h)
#   X-ft           method X with PPO fine-tuning on the graph for FT seconds in all
#                  (`--set finetune=100000 --budget-seconds FT`)
#   X-cand         method X with the policy CANDIDATE (a retrained policy beside the shipped one)
# One `placer place` per (model, method), seed 1; prints a markdown table of step times, the
# ratios to best, and per column the geomean ratio and the rows better than best.
# Results: docs/results.md.
# Usage: [METHODS="..."] [CANDIDATE=P] bench/learned_vs_best.sh [PLACER] [BATCH (16)] [CLUSTER] [FT (60)]
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
placer=${1:-$src/build/placer}
[ -x "$placer" ] || { echo "learned_vs_best.sh: no placer binary at $placer (build first, or pass its path)" >&2; exit 2; }
batch=${2:-16}
cluster=${3:-$src/datasets/clusters/dgx1_p100.cluster.yaml}
ft=${4:-60}
read -r -a methods <<< "${METHODS:-gdp gdp+hybrid gdp+stages gdp+stages-ft}"
candidate=${CANDIDATE:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

step_ms() {  # step_ms MODEL LABEL -> the step time in ms (with the winner for best), or "fail"
  local label=$2 meth=$2 args=()
  case "$label" in *-cand) meth=${meth%-cand}; args+=(--set "policy=$candidate") ;; esac
  case "$label" in *-ft) meth=${meth%-ft}; args+=(--set finetune=100000 --budget-seconds "$ft") ;; esac
  local out
  out=$("$placer" place --model "$1" --batch-size "$batch" --cluster "$cluster" --method "$meth" \
        "${args[@]}" --seed 1 -o "$tmp/p.plan.yaml" 2>&1) || { echo fail; return; }
  local winner=""
  [ "$meth" = best ] && winner=$(sed -n 's/^method *//p' <<< "$out")
  awk -v w="$winner" '/^step time/ {v=$3; u=$4; if (u=="s") v*=1000; if (u=="us") v/=1000;
    printf "%.2f%s\n", v, (w=="" ? "" : " (" w ")")}' <<< "$out"
}

ratio() {  # ratio A B -> A / B with 3 decimals, or "-" when either is missing
  awk -v a="$1" -v b="$2" 'BEGIN{ if (a+0>0 && b+0>0) printf "%.3f", a/b; else print "-" }'
}

head="| model | best ms (winner) |" rule="|---|---|"
for meth in "${methods[@]}"; do head+=" $meth ms |"; rule+="---|"; done
for meth in "${methods[@]}"; do head+=" $meth / best |"; rule+="---|"; done
echo "$head"; echo "$rule"
for m in "$src"/datasets/models/onnx/*.onnx; do
  name=$(basename "$m" .onnx)
  best=$(step_ms "$m" best)
  times="" ratios=""
  for meth in "${methods[@]}"; do
    t=$(step_ms "$m" "$meth")
    r=$(ratio "$t" "${best%% *}")
    times+=" $t |" ratios+=" $r |"
    echo "$r" >> "$tmp/ratios.$meth"
  done
  echo "| $name | $best |$times$ratios"
done
echo
for meth in "${methods[@]}"; do
  awk -v m="$meth" '$1 != "-" { n++; s += log($1); if ($1 < 1) w++ }
    END { if (n) printf "%s: geomean over %d models %.3f of best, better than best on %d\n", m, n, exp(s/n), w }' \
    "$tmp/ratios.$meth"
done
