#!/usr/bin/env bash
# The learned placers inside the micro-batch / replica outer loop (agents/classical/hybrid_outer.h),
# side by side with the classical winners of `best`, in one `placer compare` per model: every
# "M+hybrid" searches a placement on a sub-cluster of N / R devices for each replica count R,
# scoring its candidates inside the (R, M) frame (Placer::honours_frame), and keeps the
# fastest (R, M). Budgets are simulator runs (seeded, so the table does not depend on the
# machine's load); the search seconds are wall time. Results: docs/results.md.
# Usage: bench/learned_hybrid.sh [PLACER] [RUNS (default 400)] [BATCH (default 16)] [MODELS...]
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
placer=${1:-$src/build/placer}
[ -x "$placer" ] || { echo "learned_hybrid.sh: no placer binary at $placer (build first, or pass its path)" >&2; exit 2; }
runs=${2:-400}
batch=${3:-16}
shift $(( $# < 3 ? $# : 3 ))
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet50 vgg11 lstm_seq2seq_l2_h512 transformer_enc6_d512)
cluster=$src/datasets/clusters/dgx1_p100.cluster.yaml
methods=m-etf+hybrid,pipeline-dp,pipeline-ideals,anneal+hybrid,gdp+hybrid,colocrl+hybrid,hdp+hybrid,placeto+hybrid

for name in "${models[@]}"; do
  echo "## $name (batch $batch, dgx1_p100, $runs simulator runs per method, seed 1)"
  "$placer" compare --model "$src/datasets/models/onnx/$name.onnx" --batch-size "$batch" \
    --cluster "$cluster" --methods "$methods" --budget-evals "$runs" --seed 1 2>/dev/null ||
    echo "learned_hybrid.sh: compare failed on $name"
  echo
done
