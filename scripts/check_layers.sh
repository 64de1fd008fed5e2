#!/usr/bin/env bash
# Checks the dependency direction of docs/architecture.md by the include lines:
#   cli -> agents -> models (torch);  cli -> agents -> env -> simulator -> core;
#   cli -> datasets -> core; simulator/calibration -> datasets (graphs of measured runs).
# Each folder may include only the folders listed for it, and only models/ and agents/
# may include LibTorch. Prints every violation; exits 1 if there is any.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

declare -A allowed=(
  [src]="src"
  [simulator]="src simulator"
  [simulator/calibration]="src simulator datasets"
  [datasets]="src datasets"
  [env]="src simulator env datasets"
  [models]="src models"
  [agents]="src simulator env models agents datasets"
  [src/cli]="src simulator env models agents datasets"
)
status=0
files=$(git ls-files -co --exclude-standard -- '*.h' '*.hpp' '*.cpp' '*.cc' '*.cu' \
  | grep -E '^(src|simulator|datasets|env|models|agents)/' || true)
for f in $files; do
  [ -f "$f" ] || continue
  case "$f" in
    src/cli/*) layer=src/cli ;;
    simulator/calibration/*) layer=simulator/calibration ;;
    *) layer=${f%%/*} ;;
  esac
  ok=" ${allowed[$layer]} "
  while IFS= read -r inc; do
    top=${inc%%/*}
    if [ "$top" = torch ] || [ "$top" = ATen ] || [ "$top" = c10 ]; then
      if [ "$layer" != models ] && [ "$layer" != agents ]; then
        echo "$f: includes LibTorch <$inc> (only models/ and agents/ may)"; status=1
      fi
      continue
    fi
    case "$top" in src|simulator|datasets|env|models|agents) ;; *) continue ;; esac
    # src/cli is its own layer; other code under src/ must not include it.
    if [ "$top" = src ] && [[ "$inc" == src/cli/* ]] && [ "$layer" != src/cli ]; then
      echo "$f: includes $inc (nothing may include the CLI)"; status=1; continue
    fi
    if [[ "$ok" != *" $top "* ]]; then
      echo "$f: layer '$layer' must not include '$inc'"; status=1
    fi
  done < <(sed -n -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"].*/\1/p' "$f")
done
if [ $status = 0 ]; then echo "check_layers: dependency direction holds ($(echo "$files" | wc -w) files)"; fi
exit $status
