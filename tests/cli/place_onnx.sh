#!/usr/bin/env bash
# `placer place` on an ONNX model, as the README's first command runs it (the command is
# read from README.md, so the README stays true): the model is imported inside, the default
# method (best) finds a multi-device plan, the plan with its step time, its configuration and
# the trace are written, and `simulate` of the plan on the graph `placer import` writes gives
# the same step time. Also: no --method on a graph file, a .onnx path as --graph (an opset-6
# model, upgraded), and the errors of the model options.
# Usage: place_onnx.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$src" || exit 1
fail=0; n=0
ok() { n=$((n + 1)); echo "ok   $1"; }
bad() { n=$((n + 1)); fail=$((fail + 1)); echo "FAIL $1"; }
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"

# The README's first command, its placer part, with out/ moved to the temp folder.
line=$(grep -m1 '^bash scripts/setup.sh && ./build/placer place ' README.md)
if [ -z "$line" ]; then
  bad "README.md: no first command 'bash scripts/setup.sh && ./build/placer place ...'"
  echo "$((n - fail)) passed, $fail failed"; exit 1
fi
cmd=${line#bash scripts/setup.sh && ./build/placer }
cmd=${cmd//out\//$tmp/out/}
read -r -a args <<<"$cmd"
echo "running: placer ${args[*]}"
start=$(date +%s.%N)
"$placer" "${args[@]}" >"$tmp/place.txt" 2>"$tmp/place.err"; rc=$?
seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
cat "$tmp/place.txt" "$tmp/place.err"
echo "README command: ${seconds} s"
plan=$(printf '%s\n' "${args[@]}" | grep -m1 '\.plan\.yaml$')
model=$(printf '%s\n' "${args[@]}" | grep -m1 '\.onnx$')
config=${plan%.plan.yaml}.place.yaml
if [ $rc -ne 0 ]; then
  bad "README command: exit $rc"
else
  ok "README command exits 0"
  # Imported inside: one stderr line naming the model, then a plan chosen by 'auto'.
  grep -qE "^placer: imported $model \(ONNX opset 14\): 314 forward ops, batch 16, 148 GFLOP; training step of 700 ops with backward and adam updates$" \
    "$tmp/place.err" && ok "import line" || bad "no import line on stderr"
  [ "$(grep -c '^placer: auto: ' "$tmp/place.err")" -ge 5 ] && ok "auto ran the fast methods" ||
    bad "auto: fewer than 5 per-method lines"
  grep -qE '^placer: auto: chose [a-z0-9+-]+ \(' "$tmp/place.err" && ok "auto names its choice" ||
    bad "auto: no 'chose' line"
  # A real multi-device plan with a step time.
  used=$(sed -n 's/^devices      \([0-9]*\) of 8 compute$/\1/p' "$tmp/place.txt")
  [ -n "$used" ] && [ "$used" -ge 2 ] && ok "plan uses $used devices" || bad "plan uses '$used' devices"
  step=$(awk '$1 == "step_time:" { print $2, $3; exit }' "$plan")  # "32.8 ms"
  if awk -v s="$step" 'BEGIN { split(s, f, " "); exit !(f[1] > 0 && f[2] ~ /^(ns|us|ms|s)$/) }'; then
    ok "plan step_time $step"; else
    bad "plan $plan: no positive step_time ('$step')"; fi
  grep -q '^predicted:' "$plan" && ok "plan has its prediction" || bad "plan: no predicted: section"
  grep -q '"traceEvents"' "$tmp/out/trace.json" 2>/dev/null && ok "trace written" || bad "no trace"
  if grep -q "^model: \"$model\"$" "$config" && grep -q '^method: auto$' "$config" &&
     grep -q '^import: {batch_size: 16, seq_len: 0}' "$config"; then ok "configuration"; else
    bad "configuration $config"; cat "$config"; fi
  # The plan fits the graph `placer import` writes, with the same step time.
  if "$placer" import "$model" --batch-size 16 -o "$tmp/model.graph.json" >/dev/null 2>&1; then
    placed=$(grep '^step time' "$tmp/place.txt")
    simulated=$("$placer" simulate --graph "$tmp/model.graph.json" --cluster \
      datasets/clusters/dgx1_p100.cluster.yaml --plan "$plan" 2>/dev/null | grep '^step time')
    [ -n "$placed" ] && [ "$placed" = "$simulated" ] && ok "simulate agrees: $placed" ||
      bad "place says '$placed', simulate says '$simulated'"
  else
    bad "import of $model failed"
  fi
fi

# No --method on a graph file: auto, the same as --method auto, and never slower than best.
graph=datasets/models/transformer_small.graph.json
cluster=datasets/clusters/dgx1_p100.cluster.yaml
if "$placer" place --graph $graph --cluster $cluster --budget-evals 50 -o "$tmp/d.plan.yaml" \
    >"$tmp/d.txt" 2>"$tmp/d.err" &&
   "$placer" place --graph $graph --cluster $cluster --budget-evals 50 --method auto \
    -o "$tmp/a.plan.yaml" >"$tmp/a.txt" 2>/dev/null &&
   "$placer" place --graph $graph --cluster $cluster --budget-evals 50 --method best \
    -o "$tmp/b.plan.yaml" >"$tmp/b.txt" 2>/dev/null; then
  grep -q '^method: auto$' "$tmp/d.place.yaml" && ok "no --method: auto" || bad "no --method: not auto"
  [ "$(grep '^step time' "$tmp/d.txt")" = "$(grep '^step time' "$tmp/a.txt")" ] &&
    cmp -s "$tmp/d.plan.yaml" "$tmp/a.plan.yaml" && ok "no --method = --method auto" ||
    bad "no --method differs from --method auto"
  # The plans' step times in seconds (the report rounds to 3 digits).
  secs='$1 == "step_time:" { u = $3 == "s" ? 1 : $3 == "ms" ? 1e-3 : $3 == "us" ? 1e-6 : 1e-9; printf "%.12g", $2 * u; exit }'
  ta=$(awk "$secs" "$tmp/a.plan.yaml")
  tb=$(awk "$secs" "$tmp/b.plan.yaml")
  if [ -n "$ta" ] && [ -n "$tb" ] && awk -v a="$ta" -v b="$tb" 'BEGIN { exit !(a <= b) }'; then
    ok "auto ($ta s) <= best ($tb s)"; else bad "auto '$ta' vs best '$tb'"; fi
else
  bad "place without --method failed: $(cat "$tmp/d.err")"
fi
"$placer" place --help >"$tmp/help.txt" 2>&1
grep -q "Default: auto" "$tmp/help.txt" && ok "--help names the default method" ||
  bad "--help does not name the default method"

# A .onnx path as --graph: an opset-6 model, upgraded, placed on two GPUs.
if "$placer" place --graph "$data/onnx/opset6_conv_net.onnx" --cluster "$data/two_gpus.cluster.yaml" \
    -o "$tmp/old.plan.yaml" >"$tmp/old.txt" 2>"$tmp/old.err"; then
  grep -qF "placer: imported $data/onnx/opset6_conv_net.onnx (ONNX opset 7, upgraded opset 6 -> 7): 8 forward ops, batch 2" \
    "$tmp/old.err" && ok "opset 6 model upgraded" || { bad "no upgrade line"; cat "$tmp/old.err"; }
  grep -q '^step time' "$tmp/old.txt" && ok "opset 6 model placed" || bad "opset 6: no step time"
else
  bad "place of the opset-6 model failed: $(cat "$tmp/old.err")"
fi

# Errors: one line, exit 1, nothing written.
expect no-model "placer: error: a model is required: --model M.onnx (an ONNX model, imported here) or --graph G.graph.json" \
  -- place --cluster $cluster -o "$tmp/e/x.plan.yaml"
expect both-models "placer: error: --graph and --model both name the model; give one" \
  -- place --graph $graph --model "$data/onnx/conv_net.onnx" --cluster $cluster -o "$tmp/e/x.plan.yaml"
expect batch-with-graph "placer: error: --batch-size applies when importing an ONNX model (--model M.onnx), not to the graph file $graph (its batch is fixed: re-import it with \`placer import\`)" \
  -- place --graph $graph --batch-size 8 --cluster $cluster -o "$tmp/e/x.plan.yaml"
expect training-model "training_adagrad.onnx: node '#0' (Adagrad): domain 'ai.onnx.preview.training' holds training operators" \
  -- place --model "$data/onnx/training_adagrad.onnx" --cluster $cluster -o "$tmp/e/x.plan.yaml"
[ ! -e "$tmp/e" ] && ok "failed runs wrote nothing" || bad "failed runs left $(ls -A "$tmp/e")"

# The configuration goes through the atomic writer: a full disk (injected, src/util/files.h)
# leaves no configuration and no temporary file, and says which file and why.
mkdir -p "$tmp/full"
err=$(PLACER_TEST_WRITE_FAULT=ENOSPC "$placer" place --graph $graph --cluster $cluster \
  --method single -o "$tmp/full/x.plan.yaml" 2>&1 >/dev/null); rc=$?
last=$(echo "$err" | tail -n 1)
# The plan is written first; once its writer is the atomic one too, it is the file named.
want="^placer: error: $tmp/full/x\.(plan|place)\.yaml: cannot write [a-z ]+: No space left on device\$"
if [ $rc = 1 ] && echo "$last" | grep -qE "$want" && [ ! -e "$tmp/full/x.place.yaml" ] &&
   ! ls "$tmp/full" | grep -q '\.tmp\.'; then ok "full disk: $last"; else
  bad "full disk: exit $rc, '$last', left: $(ls -A "$tmp/full")"; fi

echo "$((n - fail)) passed, $fail failed"
[ $fail = 0 ]
