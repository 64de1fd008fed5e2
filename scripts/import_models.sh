#!/usr/bin/env bash
# Import the real-model corpus: every datasets/models/onnx/<name>.onnx (written by
# scripts/export_models.py) -> datasets/models/<name>.graph.json with `placer import`.
#
#   bash scripts/import_models.sh                 # placer from $PLACER, else build/placer
#   PLACER=build-x/placer bash scripts/import_models.sh [MODEL...]
#   BATCH=64 bash scripts/import_models.sh        # one batch for every model
#
# The ONNX files are exported with a symbolic batch (export_models.py --dynamic-batch), so
# the batch is chosen here, per family (batch_of below): CNNs 32, ViT / Swin 16,
# nn.Transformer stacks 16, LSTM seq2seq 32. The sequence length (128) is static in the
# files. Fails if a model does not import or a graph file exceeds 3 MB.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
placer="${PLACER:-$here/build/placer}"
onnx_dir="$here/datasets/models/onnx"
out_dir="$here/datasets/models"
max_bytes=$((3 * 1024 * 1024))

# Models left out of the import (name: reason). None so far: all 23 exports import cleanly.
excluded=()

# Batch of a model by family (the name's prefix).
batch_of() {
  if [ -n "${BATCH:-}" ]; then echo "$BATCH"; return; fi
  case "$1" in
    vit_*|swin_*|transformer_*) echo 16 ;;
    lstm_*) echo 32 ;;
    *) echo 32 ;;  # torchvision CNNs
  esac
}

if [ ! -x "$placer" ]; then
  echo "import_models.sh: no placer binary at '$placer' (build it, or set PLACER)" >&2
  exit 2
fi

if [ $# -gt 0 ]; then
  models=("$@")
else
  models=()
  for f in "$onnx_dir"/*.onnx; do models+=("$(basename "$f" .onnx)"); done
fi

failed=0
for name in "${models[@]}"; do
  for skip in "${excluded[@]+"${excluded[@]}"}"; do
    if [ "${skip%%:*}" = "$name" ]; then
      echo "skip   $name (${skip#*: })"
      continue 2
    fi
  done
  src="$onnx_dir/$name.onnx"
  dst="$out_dir/$name.graph.json"
  if [ ! -f "$src" ]; then
    echo "import_models.sh: $src: no such file" >&2
    failed=$((failed + 1))
    continue
  fi
  if ! log="$("$placer" import "$src" --batch-size "$(batch_of "$name")" -o "$dst" 2>&1)"; then
    echo "FAILED $name:" >&2
    echo "$log" >&2
    failed=$((failed + 1))
    continue
  fi
  size=$(stat -c %s "$dst")
  if [ "$size" -gt "$max_bytes" ]; then
    echo "import_models.sh: $dst is $size bytes (> 3 MB)" >&2
    failed=$((failed + 1))
  fi
  # One line per model: the importer's graph and compute lines.
  summary="$(echo "$log" | grep -E '^(graph|compute) ' | sed -E 's/^[a-z]+ +//' | paste -sd '|' -)"
  printf '%-28s %8d B  %s\n' "$name" "$size" "$summary"
done

if [ "$failed" -gt 0 ]; then
  echo "import_models.sh: $failed model(s) failed" >&2
  exit 1
fi
