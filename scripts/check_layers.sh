#!/usr/bin/env bash
# Checks the dependency direction of docs/architecture.md by the include lines:
#   cli -> agents -> models (torch);  cli -> agents -> env -> simulator -> core;
#   cli -> datasets -> core; simulator/calibration -> datasets (graphs of measured runs).
# Each folder may include only the folders listed for it, and only models/ and agents/
# may include LibTorch. cli/ (the `placer` executable) is the top layer: nothing includes it,
# and it reaches agents/ only through agents/api/ and the top level of agents/ (its files and
# the folders above the families: training/, portfolio/), never a family or common/.
# Inside src/ (the core library) the sub-layers go one way:
#   util < graph < cluster < plan < io (a folder includes only itself and lower ones).
# Inside agents/: api < common < the family folders (classical, gdp, seq2seq, placeto, rainbow,
# sync, experts), which do not include each other (what two families share belongs in common/), and
# the top level above them all: the registry (files at agents/ top level) and the folders that
# build on every family (training/: the trainers of train-policy; portfolio/: best / auto).
# tests/ and bench/ may include every layer except the CLI (tests/cli runs the binary), and
# LibTorch only in the tests of models/ and the learned agents (tests/{models,gdp,learned,
# rainbow}) and the learned-placer benchmarks (bench/learned_placers.cpp,
# bench/rainbow_pp_inference_bench.cpp), which link LibTorch anyway.
# Prints every violation; exits 1 if there is any.
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
  [cli]="src simulator agents datasets cli"
)
# agents_folder PATH: the sub-folder of agents/ that PATH (agents/...) lies in; "top" for the
# top level and for the folders above the families.
agents_top_folders=" training portfolio "
agents_folder() {
  local rest=${1#agents/} sub
  case "$rest" in
    */*) sub=${rest%%/*} ;;
    *) sub=top ;;
  esac
  if [[ "$agents_top_folders" == *" $sub "* ]]; then sub=top; fi
  echo "$sub"
}
status=0
files=$(git ls-files -co --exclude-standard -- '*.h' '*.hpp' '*.cpp' '*.cc' '*.cu' \
  | grep -E '^(src|simulator|datasets|env|models|agents|cli)/' || true)
for f in $files; do
  [ -f "$f" ] || continue
  case "$f" in
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
    case "$top" in src|simulator|datasets|env|models|agents|cli) ;; *) continue ;; esac
    # cli/ is the top layer; no other folder may include it.
    if [ "$top" = cli ] && [ "$layer" != cli ]; then
      echo "$f: includes $inc (nothing may include the CLI)"; status=1; continue
    fi
    if [[ "$ok" != *" $top "* ]]; then
      echo "$f: layer '$layer' must not include '$inc'"; status=1
    elif [ "$layer" = cli ] && [ "$top" = agents ]; then
      case "$(agents_folder "$inc")" in
        api | top) ;;
        *) echo "$f: cli/ must not include $inc (only agents/api/ and the top level of agents/)"
           status=1 ;;
      esac
    fi
  done < <(sed -n -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"].*/\1/p' "$f")
done
# Sub-layers of src/.
declare -A src_rank=([util]=0 [graph]=1 [cluster]=2 [plan]=3 [io]=4)
src_files=$(git ls-files -co --exclude-standard -- 'src/*.h' 'src/*.cpp' || true)
for f in $src_files; do
  [ -f "$f" ] || continue
  sub=${f#src/}; sub=${sub%%/*}
  r=${src_rank[$sub]:-}
  [ -n "$r" ] || continue
  while IFS= read -r inc; do
    s2=${inc#src/}; s2=${s2%%/*}
    r2=${src_rank[$s2]:-}
    if [ -n "$r2" ] && [ "$r2" -gt "$r" ]; then
      echo "$f: src/$sub must not include $inc (util < graph < cluster < plan < io)"; status=1
    fi
  done < <(sed -n -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"(src\/[^"]+)".*/\1/p' "$f")
done

# Inside agents/: api/ (Placer, Problem, budget, outcome, registration lists) includes only
# itself; common/ (shared pieces) includes api/ and itself; each family folder (classical,
# gdp, seq2seq, placeto, rainbow, sync) includes api/, common/ and itself, not another
# family (what two families share belongs in common/); the top level (the registry:
# methods.cpp, registry.cpp; training/, portfolio/) may include every folder.
agents_families=" classical gdp seq2seq placeto rainbow sync experts "
agents_files=$(git ls-files -co --exclude-standard -- 'agents/*.h' 'agents/*.cpp' || true)
for f in $agents_files; do
  [ -f "$f" ] || continue
  from=$(agents_folder "$f")
  [ "$from" = top ] && continue
  case "$from" in
    api) may=" api " ;;
    common) may=" api common " ;;
    *)
      if [[ "$agents_families" != *" $from "* ]]; then
        echo "$f: agents/$from/ is neither api/, common/ nor a family folder (add it to check_layers.sh)"
        status=1; continue
      fi
      may=" api common $from " ;;
  esac
  while IFS= read -r inc; do
    to=$(agents_folder "$inc")
    [[ "$may" == *" $to "* ]] && continue
    if [ "$to" = top ]; then
      echo "$f: agents/$from/ must not include $inc (the top level of agents/ builds on the families)"
    else
      echo "$f: agents/$from/ must not include $inc (api < common < one family; families do not include each other)"
    fi
    status=1
  done < <(sed -n -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"(agents\/[^"]+)".*/\1/p' "$f")
done

# tests/ and bench/.
test_files=$(git ls-files -co --exclude-standard -- 'tests/*.h' 'tests/*.cpp' 'bench/*.h' 'bench/*.cpp' || true)
for f in $test_files; do
  [ -f "$f" ] || continue
  case "$f" in
    tests/models/* | tests/gdp/* | tests/learned/* | tests/rainbow/* | bench/learned_placers.cpp | \
      bench/rainbow_pp_inference_bench.cpp | bench/placeto_report.cpp) torch_ok=1 ;;
    *) torch_ok=0 ;;
  esac
  while IFS= read -r inc; do
    top=${inc%%/*}
    if [ "$top" = torch ] || [ "$top" = ATen ] || [ "$top" = c10 ]; then
      if [ $torch_ok = 0 ]; then echo "$f: includes LibTorch <$inc>"; status=1; fi
    elif [[ "$inc" == cli/* ]]; then
      echo "$f: includes $inc (tests and benchmarks use the libraries; tests/cli runs the binary)"; status=1
    fi
  done < <(sed -n -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"].*/\1/p' "$f")
done

n_files=$(( $(echo "$files" | wc -w) + $(echo "$src_files" | wc -w) + $(echo "$agents_files" | wc -w) + $(echo "$test_files" | wc -w) ))
if [ $status = 0 ]; then echo "check_layers: dependency direction holds ($n_files file checks)"; fi
exit $status
