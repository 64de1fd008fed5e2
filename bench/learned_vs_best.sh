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
#   X-cand         method X with the policy CANDIDATE (a retrained policy beside the shipped one;
#                  X-ft-cand fine-tunes it); with CANDIDATE and no METHODS the columns are the
#                  default ones and gdp+stages-cand
# One `placer place` per (model, method), seed 1; prints a markdown table of step times, the
# ratios to best, and per column the geomean ratio and the rows better than best.
# BY_FAMILY=N: instead of the real models, the first N graphs of each family of
# datasets/corpora/by_family.corpus.yaml (regenerated from its seeds; test families inception,
# transformer, vit, encdec, swin), with the split of their family (train / val / test
# families); the geomeans and worst ratios are given per split, METHODS defaults to
# "gdp+stages gdp+stages-ft" (with CANDIDATE "gdp+stages-cand gdp+stages-ft-cand": the
# candidate alone), and a last line says how many graphs of the test families the policy's
# (CANDIDATE's when given) training corpus held (read from the policy's .meta.json and,
# through the init_policy of its .train.yaml, its initial policy's). SPLITS (with BY_FAMILY;
# default "train val test") keeps the rows of the splits it names, e.g. SPLITS=test for the
# test families alone.
# Results: docs/results.md.
# Usage: [METHODS="..."] [CANDIDATE=P] [BY_FAMILY=N] bench/learned_vs_best.sh [PLACER] [BATCH (16)] [CLUSTER] [FT (60)]
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
placer=${1:-$src/build/placer}
[ -x "$placer" ] || { echo "learned_vs_best.sh: no placer binary at $placer (build first, or pass its path)" >&2; exit 2; }
batch=${2:-16}
cluster=${3:-$src/datasets/clusters/dgx1_p100.cluster.yaml}
ft=${4:-60}
candidate=${CANDIDATE:-}
default_methods="gdp gdp+hybrid gdp+stages gdp+stages-ft"
[ -n "$candidate" ] && default_methods+=" gdp+stages-cand"
if [ -n "${BY_FAMILY:-}" ]; then
  default_methods="gdp+stages gdp+stages-ft"
  [ -n "$candidate" ] && default_methods="gdp+stages-cand gdp+stages-ft-cand"
fi
read -r -a methods <<< "${METHODS:-$default_methods}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

step_ms() {  # step_ms MODEL LABEL -> the step time in ms (with the winner for best), or "fail"
  local label=$2 meth=$2 args=(--model "$1" --batch-size "$batch")
  case "$1" in *.graph.json) args=(--graph "$1") ;; esac
  case "$label" in *-cand) meth=${meth%-cand}; args+=(--set "policy=$candidate") ;; esac
  case "$meth" in *-ft) meth=${meth%-ft}; args+=(--set finetune=100000 --budget-seconds "$ft") ;; esac
  local out
  out=$("$placer" place --cluster "$cluster" --method "$meth" \
        "${args[@]}" --seed 1 -o "$tmp/p.plan.yaml" 2>&1) || { echo fail; return; }
  local winner=""
  [ "$meth" = best ] && winner=$(sed -n 's/^method *//p' <<< "$out")
  awk -v w="$winner" '/^step time/ {v=$3; u=$4; if (u=="s") v*=1000; if (u=="us") v/=1000;
    printf "%.2f%s\n", v, (w=="" ? "" : " (" w ")")}' <<< "$out"
}

ratio() {  # ratio A B -> A / B with 3 decimals, or "-" when either is missing
  awk -v a="$1" -v b="$2" 'BEGIN{ if (a+0>0 && b+0>0) printf "%.3f", a/b; else print "-" }'
}

# The families of by_family's test split, as a corpus entry shows them: a generated entry by
# its family, a real model's graph file by its name (GoogLeNet is Inception v1).
test_family_of() {  # test_family_of ENTRY-LINE -> the test family, or nothing
  local fam
  fam=$(sed -n 's/.*generate: {family: \([a-z_]*\).*/\1/p' <<< "$1")
  if [ -z "$fam" ]; then
    case $(sed -n 's/.*name: \([^,]*\),.*/\1/p' <<< "$1") in
      inception*|googlenet*) fam=inception ;; vit*) fam=vit ;; swin*) fam=swin ;;
      *encdec*) fam=encdec ;; transformer_enc[0-9]*|transformer_small) fam=transformer ;;
    esac
  fi
  case $fam in inception|transformer|vit|encdec|swin) echo "$fam" ;; esac
}

seen_test_families() {  # seen_test_families POLICY: test-family graphs in its training corpora
  local policy=$1 chain="" corpora=() corpus init line fam n=0 parts=""
  while [ -n "$policy" ] && [ -f "$policy.meta.json" ]; do  # the policy, its init_policy, ...
    chain+="${chain:+ <- }$(basename "$policy")"
    corpus=$(sed -n 's/.*"corpus": "\(.*\)".*/\1/p' "$policy.meta.json")
    [ -f "$corpus" ] || corpus=$src/datasets/corpora/$(basename "$corpus")
    [[ " ${corpora[*]} " == *" $corpus "* ]] || corpora+=("$corpus")
    init=$(sed -n 's/^init_policy: *//p' "${policy%.pt}.train.yaml" 2>/dev/null)
    [ -n "$init" ] && [ ! -f "$init" ] && init=$(dirname "$policy")/$(basename "$init")
    [ "$init" = "$policy" ] && break
    policy=$init
  done
  declare -A count=()
  while IFS= read -r line; do
    fam=$(test_family_of "$line"); [ -n "$fam" ] && count[$fam]=$(( ${count[$fam]:-0} + 1 ))
  done < <(cat "${corpora[@]}" 2>/dev/null | grep 'split: train')
  for fam in inception transformer vit encdec swin; do
    n=$(( n + ${count[$fam]:-0} )); parts+="${parts:+, }$fam ${count[$fam]:-0}"
  done
  echo "policy $chain trained on $n graphs of the test families ($parts) in" \
       "$(for c in "${corpora[@]}"; do basename "$c"; done | paste -sd' ')"
}

# The rows: "split|path" (split "real" for the shipped real models).
rows=()
if [ -n "${BY_FAMILY:-}" ]; then
  gen() {  # gen SPLIT FAMILIES SEED RATIOS [DIR]: the first BY_FAMILY graphs of each family
    [[ " ${SPLITS:-train val test} " == *" $1 "* ]] || return 0
    local n=$(( $(tr ',' '\n' <<< "$2" | wc -l) * BY_FAMILY )) dir=${5:-$1}
    "$placer" corpus generate --family "$2" --count "$n" --seed "$3" -o "$tmp/$dir" --name "$dir" \
      --split "$4" > /dev/null 2>&1 || { echo "learned_vs_best.sh: corpus generate failed" >&2; exit 2; }
    for f in "$tmp/$dir"/graphs/*.graph.json; do rows+=("$1|$f"); done
  }
  # The families and seeds of datasets/corpora/by_family.corpus.yaml.
  gen train enas_cnn,amoebanet,enas_rnn,rnnlm,gnmt,wavenet,rec,resnet,layered_random 3801 1,0,0
  gen val transformer_xl,gnn 3802 0,1,0
  gen test inception,transformer,vit,encdec 3803 0,0,1
  gen test swin 3804 0,0,1 test_swin
else
  for m in "$src"/datasets/models/onnx/*.onnx; do rows+=("real|$m"); done
fi

head="| model | split | best ms (winner) |" rule="|---|---|---|"
for meth in "${methods[@]}"; do head+=" $meth ms |"; rule+="---|"; done
for meth in "${methods[@]}"; do head+=" $meth / best |"; rule+="---|"; done
echo "$head"; echo "$rule"
for row in "${rows[@]}"; do
  split=${row%%|*} m=${row#*|}
  name=$(basename "$m"); name=${name%.onnx}; name=${name%.graph.json}
  best=$(step_ms "$m" best)
  times="" ratios=""
  for meth in "${methods[@]}"; do
    t=$(step_ms "$m" "$meth")
    r=$(ratio "$t" "${best%% *}")
    times+=" $t |" ratios+=" $r |"
    echo "$split $r" >> "$tmp/ratios.$meth"
  done
  echo "| $name | $split | $best |$times$ratios"
done
echo
for meth in "${methods[@]}"; do
  awk -v m="$meth" '$2 != "-" { n[$1]++; s[$1] += log($2); if ($2 < 1) w[$1]++; if ($2 > x[$1]) x[$1] = $2 }
    END { for (k in n) printf "%s (%s): geomean over %d graphs %.3f of best, worst %.3f, better than best on %d\n",
          m, k, n[k], exp(s[k]/n[k]), x[k], w[k] + 0 }' "$tmp/ratios.$meth" | sort
done
[ -n "${BY_FAMILY:-}" ] && seen_test_families "${candidate:-$src/models/pretrained/stages.pt}"
