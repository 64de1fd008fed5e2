#!/usr/bin/env bash
# scripts/h200_llama_fidelity.py on a synthetic steps CSV of three small Llama rows (hidden
# 1024, 2 layers; eager, checkpointed, compiled + FSDP2): one line per row with its fit / held-out split, an
# error that is (predicted - measured) / measured, the summaries of both splits, the plans
# it writes (recompute: full, an FSDP schedule on one device); a checkpointed step is
# predicted slower than the plain one. Also the generator options it relies on:
# --foreach-optimizer (AdamW 20 passes) and --kernels eager, and their errors.
# Usage: h200_llama_fidelity.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"
profile=$src/datasets/clusters/h100.profile.yaml

head -1 "$src/datasets/measurements/h200/llama_steps.csv" > "$tmp/steps.csv"
row() {  # name mode checkpointing fsdp2 median_s
  echo "$1,1024,2,8,2,2816,2048,2,32000,$2,$3,$4,0,0,2,6,$5,$5,$5,0,0,4294967296,$5,x,ok" >> "$tmp/steps.csv"
}
row llama_h2048_l8_s2k_eager eager 0 0 0.02
row llama_h2048_l8_s2k_eager_ckpt eager 1 0 0.025
row llama_h3072_l12_s8k_compiled_fsdp2 compiled 0 1 0.015
python3 "$src/scripts/h200_llama_fidelity.py" --steps "$tmp/steps.csv" --placer "$placer" \
  --profile "$profile" --work "$tmp/w" --csv "$tmp/out.csv" > "$tmp/out.txt" 2>&1
check script-runs test $? -eq 0
check three-rows test "$(grep -c '^llama_' "$tmp/out.txt")" -eq 3
check split-fit grep -q '^llama_h2048_l8_s2k_eager  *fit ' "$tmp/out.txt"
check split-held-out grep -q '^llama_h3072_l12_s8k_compiled_fsdp2 *held-out ' "$tmp/out.txt"
check fit-summary grep -q '^fit 2: MAPE ' "$tmp/out.txt"
check held-out-summary grep -q '^held-out 1: MAPE ' "$tmp/out.txt"
# The CSV's error is (predicted - measured) / measured; checkpointing is predicted slower.
check csv-errors python3 - "$tmp/out.csv" <<'PY'
import csv, sys
rows = {r["name"]: r for r in csv.DictReader(open(sys.argv[1]))}
ok = len(rows) == 3 and all(
    abs(float(r["rel_error"]) - (float(r["predicted_s"]) / float(r["measured_s"]) - 1)) < 1e-12
    for r in rows.values())
plain, ckpt = rows["llama_h2048_l8_s2k_eager"], rows["llama_h2048_l8_s2k_eager_ckpt"]
ok = ok and float(ckpt["predicted_s"]) > float(plain["predicted_s"])
sys.exit(0 if ok and ckpt["split"] == "fit" else 1)
PY
check ckpt-plan grep -q '^recompute: full' "$tmp/w/llama_h2048_l8_s2k_eager_ckpt.plan.yaml"
check fsdp-plan grep -q 'zero_stage: 3, fsdp: {}' "$tmp/w/llama_h3072_l12_s8k_compiled_fsdp2.plan.yaml"
check compile-kernels grep -q '"kernels": *"compile-blocks"' "$tmp/w/llama_h3072_l12_s8k_compiled_fsdp2.graph.json"

# No rows: one line naming the file.
head -1 "$tmp/steps.csv" > "$tmp/empty.csv"
python3 "$src/scripts/h200_llama_fidelity.py" --steps "$tmp/empty.csv" --placer "$placer" \
  > "$tmp/empty.txt" 2>&1
check no-rows-exit test $? -ne 0
check no-rows-message grep -q "empty.csv: no measured rows" "$tmp/empty.txt"

# A missing column and a step time that is not a number: one line naming file and field.
cut -d, -f1,3- "$tmp/steps.csv" > "$tmp/nohidden.csv"
python3 "$src/scripts/h200_llama_fidelity.py" --steps "$tmp/nohidden.csv" --placer "$placer" \
  > "$tmp/nohidden.txt" 2>&1
check missing-column-exit test $? -ne 0
check missing-column-message grep -qx "h200_llama_fidelity.py: .*nohidden.csv: no column 'hidden'" \
  "$tmp/nohidden.txt"
python3 - "$tmp/steps.csv" "$tmp/badtime.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
rows[0]["median_s"] = "fast"
with open(sys.argv[2], "w", newline="") as f:
    w = csv.DictWriter(f, list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
PY
python3 "$src/scripts/h200_llama_fidelity.py" --steps "$tmp/badtime.csv" --placer "$placer" \
  > "$tmp/badtime.txt" 2>&1
check bad-number-exit test $? -ne 0
check bad-number-message grep -qx "h200_llama_fidelity.py: .*badtime.csv:2: column 'median_s': 'fast' is not a number" \
  "$tmp/badtime.txt"

# --foreach-optimizer: the update of dense_h_to_4h (256 x 2 x 768 bf16 = 786432 B) moves 20 passes.
gen() { "$placer" generate llama --layers 1 --hidden 256 --heads 4 --kv-heads 2 --ffn 768 \
  --seq-len 64 --batch 1 --vocab 1000 --training-step "$@"; }
gen --no-master-weights --foreach-optimizer -o "$tmp/f.graph.json" > /dev/null
check foreach-bytes python3 - "$tmp/f.graph.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
ops = {o["name"]: o for o in g["ops"]}
u = ops["language_model.encoder.layers.0.mlp.dense_h_to_4h/update"]
sys.exit(0 if u["bytes_accessed"] == 20 * 786432 else 1)
PY
# --kernels eager: the norm lists its 8 forward kernels (category:dtype:bytes) in the graph
# file; the fp32 pieces in fp32.
gen --kernels eager -o "$tmp/e.graph.json" > /dev/null
check eager-kernel-list python3 - "$tmp/e.graph.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
ops = {o["name"]: o for o in g["ops"]}
attrs = dict(ops["language_model.encoder.layers.0.input_layernorm"]["attrs"])
k = attrs["kernel_list"].split(",")
ok = len(k) == 8 and k[0] == "data_movement:f32:%d" % (64 * 256 * 6)
ok = ok and len(attrs["backward_kernel_list"].split(",")) == 19 and attrs["saved_tensors"] == "outputs"
sys.exit(0 if ok else 1)
PY
expect foreach-needs-no-master "--foreach-optimizer: needs --no-master-weights" -- \
  generate llama --layers 1 --hidden 256 --heads 4 --training-step --foreach-optimizer \
  -o "$tmp/x.graph.json"
expect eager-llama-only "kernels eager is for dense LLaMA models" -- \
  generate gpt --layers 1 --hidden 256 --heads 4 --kernels eager -o "$tmp/x.graph.json"

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
