#!/usr/bin/env bash
# `placer import` end to end: good models write a graph file and print the summary (exit 0);
# bad input gives one clear line naming the file, a non-zero exit and no crash.
# Usage: import.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2; data=$3
onnx=$data/onnx
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0

# ok NAME EXPECTED_SUBSTRING... -- ARGS: exit 0 and every substring in the output.
ok() {
  local name=$1; shift
  local needles=()
  while [ "$1" != "--" ]; do needles+=("$1"); shift; done; shift
  n=$((n + 1))
  out=$("$placer" "$@" 2>&1); rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL $name: exit $rc: $out"; fail=$((fail + 1)); return; fi
  for s in "${needles[@]}"; do
    if ! echo "$out" | grep -qF -- "$s"; then
      echo "FAIL $name: output lacks '$s': $out"; fail=$((fail + 1)); return
    fi
  done
  echo "ok   $name"
}

. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"

# Good models: summary lines, the graph file is written and loads back (`placer info`).
ok conv-net "6 ops from 6 nodes" "35.9 KFLOP forward" "parameters   3.01 KiB" "warnings     none" \
  -- import "$onnx/conv_net.onnx" -o "$tmp/out/conv_net.graph.json"
ok conv-net-written "ops          6" -- info "$tmp/out/conv_net.graph.json"
ok symbolic "x [4,8,16]" "10 ops from 26 nodes" "70.2 KFLOP forward" \
  -- import "$onnx/matmul_symbolic.onnx" --batch-size 4 --seq-len 8 -o "$tmp/m.graph.json"
ok dim-override "x [4,8,16]" "70.2 KFLOP" \
  -- import "$onnx/matmul_symbolic.onnx" --dim batch=4 --dim seq=8 -o "$tmp/m2.graph.json"
# Repeatable options before the positional model take one value each.
ok data-input "x [4,8,16], w_raw [32,16]; 1 parameter tensors" "11 ops from 26 nodes" "batch 4" \
  -- import --data-input w_raw --dim batch=4 --dim seq=8 "$onnx/matmul_symbolic.onnx" -o "$tmp/d.graph.json"
ok bf16 "compute dtype bf16" "parameters   1.50 KiB" \
  -- import "$onnx/conv_net.onnx" --dtype bf16 -o "$tmp/bf16.graph.json"
# Below opset 7: upgraded by ONNX's version converter, then imported (hand counts in
# scripts/make_test_onnx.py).
ok opset6-upgraded "opset 6, make_test_onnx.py" "upgraded opset 6 -> 7 with ONNX's version converter" \
  "8 ops from 9 nodes" "35.9 KFLOP forward" "warnings     none" \
  -- import "$onnx/opset6_conv_net.onnx" -o "$tmp/old.graph.json"
ok pass-through "x [2,3]; 0 parameter tensors" "1 ops from 1 nodes" \
  -- import "$onnx/pass_through.onnx" -o "$tmp/pt.graph.json"
ok unknown-op-warns "warnings     3" "op type 'Hardmax' has no cost rule: 2 nodes" \
  -- import "$onnx/unknown_op.onnx" -o "$tmp/u.graph.json"
# Default output path: next to the model.
cp "$onnx/conv_net.onnx" "$tmp/copy.onnx"
ok default-output "wrote        $tmp/copy.graph.json" -- import "$tmp/copy.onnx"
ok default-output-exists "ops          6" -- info "$tmp/copy.graph.json"
# The imported graph simulates as a training step.
if [ -f "$data/two_gpus.cluster.yaml" ]; then
  printf 'format_version: "1.0"\nplacement: {default: 0}\n' > "$tmp/one.plan.yaml"
  ok simulate-imported "step time" \
    -- simulate --graph "$tmp/out/conv_net.graph.json" --cluster "$data/two_gpus.cluster.yaml" --plan "$tmp/one.plan.yaml"
fi

# Bad input.
expect missing-file "nope.onnx: cannot open" -- import "$tmp/nope.onnx" -o "$tmp/x.graph.json"
expect not-onnx "not_onnx.onnx: not a valid ONNX model" -- import "$onnx/not_onnx.onnx" -o "$tmp/x.graph.json"
expect truncated "truncated.onnx" "truncated" -- import "$onnx/truncated.onnx" -o "$tmp/x.graph.json"
expect opset-new "opset 18 is newer" "opset_version <= 17" -- import "$onnx/opset_too_new.onnx" -o "$tmp/x.graph.json"
expect training-domain "training_adagrad.onnx: node '#0' (Adagrad): domain 'ai.onnx.preview.training' holds training operators" \
  -- import "$onnx/training_adagrad.onnx" -o "$tmp/x.graph.json"
expect missing-shape "node '/layer1/Reshape' (Reshape): output shape unknown after shape inference" \
  -- import "$onnx/missing_shape.onnx" -o "$tmp/x.graph.json"
expect needs-seq-len "symbolic sequence length ('seq'); pass --seq-len" \
  -- import "$onnx/matmul_symbolic.onnx" -o "$tmp/x.graph.json"
expect bad-dim "--dim: expected NAME=VALUE" -- import "$onnx/matmul_symbolic.onnx" --dim seq -o "$tmp/x.graph.json"
expect bad-dim-value "--dim: expected NAME=VALUE" -- import "$onnx/matmul_symbolic.onnx" --dim seq=abc -o "$tmp/x.graph.json"
expect bad-dtype "--dtype: unknown compute dtype 'int8'" -- import "$onnx/conv_net.onnx" --dtype int8 -o "$tmp/x.graph.json"
expect bad-batch "--batch-size" -- import "$onnx/conv_net.onnx" --batch-size 0 -o "$tmp/x.graph.json"
expect no-model "model" -- import
if [ -f "$onnx/resnet50.onnx" ]; then
  ok resnet50 "161 parameter tensors" "warnings     none" -- import "$onnx/resnet50.onnx" -o "$tmp/r.graph.json"
fi

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
