#!/usr/bin/env bash
# Rebuilds datasets/corpora/default.corpus.yaml (docs/corpus.md): 300 synthetic graphs of
# the default ranges (30 per family), 11 large ones (one per family and a GNMT-8 unrolled
# over 256 steps, ~57k ops) as generate: entries, and the real models of
# datasets/models/*.graph.json as file: entries.
#
# Usage: scripts/make_default_corpus.sh [PLACER]   (default: build/placer)
#
# Regenerating replaces the manifest: entries that existed before keep their name, seed and
# split only if the commands below are unchanged, so edit the manifest (or append with
# `placer corpus generate --append` / `placer corpus add`) rather than rerunning this after
# a corpus has been used for training.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
placer=${1:-build/placer}
out=datasets/corpora
manifest=$out/default.corpus.yaml

rm -f "$manifest"
"$placer" corpus generate --family all --count 300 --seed 2024 --manifest-only -o "$out" \
  --name default \
  --description "Default training corpus: synthetic families of the placement literature (30 graphs each, ~40-7k ops; 11 large ones up to ~57k ops tagged large) and the real models of datasets/models (tagged real)."
"$placer" corpus generate --family all --count 10 --seed 2024 --size large --manifest-only \
  -o "$out" --name default --append
"$placer" corpus generate --family gnmt --count 1 --seed 8 --size large --manifest-only \
  -o "$out" --name default --append --set layers=8 --set src_len=256 --set tgt_len=256
models=(datasets/models/*.graph.json)
if [ -e "${models[0]}" ]; then
  "$placer" corpus add "$manifest" "${models[@]}" --tags real
fi
"$placer" corpus stats "$manifest" --top 12
