#!/usr/bin/env bash
# `placer export` and `placer plan from-megatron | from-deepspeed | from-torchtitan`: Megatron-LM
# arguments, DeepSpeed configs and torchtitan TOML read back into the same plan and step time; the DeepSpeed
# JSON and torchtitan TOML parse with python3's json / tomllib and hold exactly the
# documented keys (docs/export.md); a device map's keys are torchvision module names (only
# with python3-torch); inexpressible plans fail naming the part and write nothing.
# Usage: export.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"
cluster=$src/datasets/clusters/dgx_a100.cluster.yaml
step() { "$placer" simulate --graph "$g" --cluster "$cluster" --plan "$1" 2>/dev/null | grep '^step time'; }

g=$tmp/gpt.graph.json
"$placer" generate gpt --layers 4 --hidden 64 --heads 4 --seq-len 32 --batch 16 --vocab 1000 --tp 2 \
  --dtype bf16 --training-step -o "$g" > /dev/null 2>&1

# Megatron: TP 2 x PP 2 x DP 2 with sequence parallelism, full recomputation, bf16.
"$placer" plan from-megatron "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
  --micro-batch-size 2 --global-batch-size 16 --sequence-parallel --recompute-granularity full \
  --recompute-method uniform --recompute-num-layers 1 --bf16 --overlap-grad-reduce --lr 3e-4" \
  --graph "$g" --cluster "$cluster" -o "$tmp/m.plan.yaml" 2> "$tmp/from.txt"
check from-megatron-ignores-lr grep -q "not modelled, ignored: --lr" "$tmp/from.txt"
"$placer" export "$tmp/m.plan.yaml" --graph "$g" --cluster "$cluster" --to megatron > "$tmp/args.txt"
check megatron-args grep -q -- "--sequence-parallel \\\\" "$tmp/args.txt"
"$placer" plan from-megatron "$(cat "$tmp/args.txt")" --graph "$g" --cluster "$cluster" \
  -o "$tmp/m2.plan.yaml" 2> /dev/null
check megatron-round-trip-plan cmp -s "$tmp/m.plan.yaml" "$tmp/m2.plan.yaml"
check megatron-round-trip-step test "$(step "$tmp/m.plan.yaml")" = "$(step "$tmp/m2.plan.yaml")"
# The same arguments as separate words after placer's options.
# shellcheck disable=SC2046  # word splitting is the point
"$placer" plan from-megatron --graph "$g" --cluster "$cluster" -o "$tmp/m3.plan.yaml" \
  $(grep -v '^#' "$tmp/args.txt" | tr -d '\\') 2> /dev/null
check megatron-words-round-trip cmp -s "$tmp/m.plan.yaml" "$tmp/m3.plan.yaml"

# DeepSpeed: PP 2 x DP 4, ZeRO-1, full recomputation.
"$placer" plan from-megatron "--pipeline-model-parallel-size 2 --micro-batch-size 1 --global-batch-size 16 \
  --use-distributed-optimizer --recompute-granularity full --recompute-method uniform --bf16" \
  --graph "$g" --cluster "$cluster" -o "$tmp/d.plan.yaml" 2> /dev/null
"$placer" export "$tmp/d.plan.yaml" --graph "$g" --cluster "$cluster" --to deepspeed -o "$tmp/ds.json" 2> /dev/null
check deepspeed-keys python3 - "$tmp/ds.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert set(j) == {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                  "gradient_clipping", "zero_optimization", "bf16", "pipeline"}, sorted(j)
assert j["zero_optimization"] == {"stage": 1, "overlap_comm": False}, j["zero_optimization"]
assert j["pipeline"] == {"stages": 2, "activation_checkpoint_interval": 1, "parts": [0, 2, 4]}, j["pipeline"]
assert (j["train_batch_size"], j["train_micro_batch_size_per_gpu"], j["gradient_accumulation_steps"]) == (16, 1, 4)
assert j["bf16"] == {"enabled": True} and j["gradient_clipping"] == 1.0
PY
"$placer" plan from-deepspeed "$tmp/ds.json" --graph "$g" --cluster "$cluster" -o "$tmp/d2.plan.yaml" 2> /dev/null
check deepspeed-round-trip-plan cmp -s "$tmp/d.plan.yaml" "$tmp/d2.plan.yaml"
check deepspeed-round-trip-step test "$(step "$tmp/d.plan.yaml")" = "$(step "$tmp/d2.plan.yaml")"

# torchtitan: the Megatron plan above (TP with sequence parallelism, overlapped DDP).
"$placer" export "$tmp/m.plan.yaml" --graph "$g" --cluster "$cluster" --to torchtitan -o "$tmp/t.toml" 2> /dev/null
check torchtitan-keys python3 - "$tmp/t.toml" <<'PY'
import sys, tomllib
t = tomllib.load(open(sys.argv[1], "rb"))
assert set(t) == {"training", "parallelism", "activation_checkpoint"}, sorted(t)
assert t["training"] == {"local_batch_size": 8, "global_batch_size": 16, "max_norm": 1.0,
                         "mixed_precision_param": "bfloat16"}, t["training"]
p = t["parallelism"]
assert set(p) == {"data_parallel_replicate_degree", "data_parallel_shard_degree", "tensor_parallel_degree",
                  "pipeline_parallel_degree", "pipeline_parallel_schedule",
                  "pipeline_parallel_microbatch_size", "module_fqns_per_model_part"}, sorted(p)
assert (p["data_parallel_replicate_degree"], p["data_parallel_shard_degree"], p["tensor_parallel_degree"],
        p["pipeline_parallel_degree"], p["pipeline_parallel_schedule"], p["pipeline_parallel_microbatch_size"]) \
    == (2, 1, 2, 2, "1F1B", 2), p
assert p["module_fqns_per_model_part"] == [
    ["language_model.embedding", "language_model.encoder.layers.0", "language_model.encoder.layers.1"],
    ["language_model.encoder.layers.2", "language_model.encoder.layers.3", "language_model.encoder.final_layernorm",
     "output_layer"]], p["module_fqns_per_model_part"]
assert t["activation_checkpoint"] == {"mode": "full"}, t["activation_checkpoint"]
PY
"$placer" plan from-torchtitan "$tmp/t.toml" --graph "$g" --cluster "$cluster" -o "$tmp/t2.plan.yaml" 2> /dev/null
check torchtitan-round-trip-plan cmp -s "$tmp/m.plan.yaml" "$tmp/t2.plan.yaml"
# HSDP (replicate 2 x shard 4), float8 linears and every 2nd layer checkpointed: the plan's
# data_parallel.fsdp.shard_group, precision.fp8 and recompute_every, written back as they came.
cat > "$tmp/hsdp.toml" <<'TOML'
[training]
local_batch_size = 2
[parallelism]
data_parallel_replicate_degree = 2
data_parallel_shard_degree = 4
[activation_checkpoint]
mode = "selective"
selective_ac_option = "2"
[model]
converters = ["quantize.linear.float8"]
[quantize.linear.float8]
filter_fqns = ["output"]
TOML
"$placer" plan from-torchtitan "$tmp/hsdp.toml" --graph "$g" --cluster "$cluster" -o "$tmp/h.plan.yaml" 2> /dev/null
check hsdp-plan-fields python3 - "$tmp/h.plan.yaml" <<'PY'
import sys
text = open(sys.argv[1]).read()
for line in ("shard_group: 4", "fp8: true", "recompute_every: 2", "zero_stage: 3"):
    assert line in text, line
PY
"$placer" export "$tmp/h.plan.yaml" --graph "$g" --cluster "$cluster" --to torchtitan -o "$tmp/h.toml" 2> /dev/null
check hsdp-torchtitan-keys python3 - "$tmp/h.toml" <<'PY'
import sys, tomllib
t = tomllib.load(open(sys.argv[1], "rb"))
p = t["parallelism"]
assert (p["data_parallel_replicate_degree"], p["data_parallel_shard_degree"], p["fsdp_reshard_after_forward"]) \
    == (2, 4, "always"), p
assert t["activation_checkpoint"] == {"mode": "selective", "selective_ac_option": "2"}, t["activation_checkpoint"]
assert t["model"] == {"converters": ["quantize.linear.float8"]}, t["model"]
assert t["quantize"] == {"linear": {"float8": {"filter_fqns": ["output"]}}}, t["quantize"]
PY
"$placer" plan from-torchtitan "$tmp/h.toml" --graph "$g" --cluster "$cluster" -o "$tmp/h2.plan.yaml" 2> /dev/null
check hsdp-round-trip-plan cmp -s "$tmp/h.plan.yaml" "$tmp/h2.plan.yaml"
# FP8 in Megatron-LM's spelling: --fp8-format reads as precision.fp8 and writes back as hybrid.
"$placer" plan from-megatron "--tensor-model-parallel-size 2 --micro-batch-size 2 --global-batch-size 16 \
  --bf16 --fp8-format e4m3" --graph "$g" --cluster "$cluster" -o "$tmp/f.plan.yaml" 2> /dev/null
check megatron-fp8-plan grep -q "fp8: true" "$tmp/f.plan.yaml"
check megatron-fp8-args sh -c "'$placer' export '$tmp/f.plan.yaml' --graph '$g' --cluster '$cluster' --to megatron \
  | grep -q -- '--fp8-format hybrid'"
# torchtitan's default checkpointing (selective, every 2nd layer) under DDP has no Megatron-LM form.
printf '[training]\nlocal_batch_size = 2\n[parallelism]\ndata_parallel_replicate_degree = 8\ndata_parallel_shard_degree = 1\n' \
  > "$tmp/ddp.toml"
"$placer" plan from-torchtitan "$tmp/ddp.toml" --graph "$g" --cluster "$cluster" -o "$tmp/e.plan.yaml" 2> /dev/null
expect megatron-every-2nd-layer "recompute_every: 2: Megatron-LM checkpoints groups of consecutive layers" -- \
  export "$tmp/e.plan.yaml" --graph "$g" --cluster "$cluster" --to megatron -o "$tmp/no7.txt"
check export-wrote-nothing test ! -e "$tmp/no7.txt"
printf '[parallelism]\ntensor_parallel_degree = 2\ncontext_parallel_degree = 2\ncontext_parallel_rotate_method = "ring"\n' > "$tmp/cp.toml"
expect torchtitan-context-parallel "cp.toml: parallelism.context_parallel_rotate_method: 'ring' (use allgather or alltoall)" -- \
  plan from-torchtitan "$tmp/cp.toml" --graph "$g" --cluster "$cluster" -o "$tmp/no6.plan.yaml"
check from-torchtitan-wrote-nothing test ! -e "$tmp/no6.plan.yaml"

# Device map: ResNet-18 (a torchvision ONNX export) placed op by op on two GPUs.
r=$src/datasets/models/resnet18.graph.json
"$placer" place --graph "$r" --cluster "$cluster" --devices 0,1 -m m-topo -o "$tmp/r.plan.yaml" > /dev/null 2>&1
"$placer" export "$tmp/r.plan.yaml" --graph "$r" --cluster "$cluster" --to device-map -o "$tmp/map.json" \
  2> "$tmp/map.err"
check device-map-values python3 - "$tmp/map.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert set(m.values()) == {0, 1}, m
assert "conv1" in m and "fc" in m and not any(k.endswith("_1") for k in m), m
PY
check device-map-reports-split grep -q "note: module '.*' runs its own ops on several devices" "$tmp/map.err"
# The first python3 that has torchvision (a pyenv shim may hide Debian's in PATH).
torch_py=""
for py in python3 /usr/bin/python3; do
  if "$py" -c "import torch, torchvision" 2> /dev/null; then torch_py=$py; break; fi
done
if [ -n "$torch_py" ]; then
  check device-map-torch-modules "$torch_py" - "$tmp/map.json" <<'PY'
import json, sys, torchvision
names = {n for n, _ in torchvision.models.resnet18().named_modules()}
bad = [k for k in json.load(open(sys.argv[1])) if k not in names]
assert not bad, bad
PY
else
  echo "skip device-map-torch-modules: python3 cannot import torch and torchvision (Debian: python3-torch, python3-torchvision)"
fi

# compare: the user's plan as a row.
"$placer" compare --graph "$g" --cluster "$cluster" --methods single --baseline-plan "$tmp/m.plan.yaml" \
  > "$tmp/cmp.txt" 2> /dev/null
check compare-baseline-row test "$(grep -c '^baseline (m.plan.yaml) ' "$tmp/cmp.txt")" = 1

# Inexpressible plans: one line naming the part, exit 1, nothing written.
sed 's/schedule: 1f1b/schedule: gpipe/' "$tmp/m.plan.yaml" > "$tmp/gpipe.plan.yaml"
expect megatron-gpipe "gpipe.plan.yaml: cannot export to megatron: pipeline.schedule: gpipe" -- \
  export "$tmp/gpipe.plan.yaml" --graph "$g" --cluster "$cluster" --to megatron -o "$tmp/no1.txt"
check megatron-gpipe-wrote-nothing test ! -e "$tmp/no1.txt"
expect deepspeed-tp "cannot export to deepspeed: tensor_parallel.degree: 2" -- \
  export "$tmp/m.plan.yaml" --graph "$g" --cluster "$cluster" --to deepspeed -o "$tmp/no2.json"
check deepspeed-tp-wrote-nothing test ! -e "$tmp/no2.json"
expect device-map-pipeline-grid "cannot export to device-map: tensor_parallel.degree" -- \
  export "$tmp/m.plan.yaml" --graph "$g" --cluster "$cluster" --to device-map -o "$tmp/no3.json"
check device-map-wrote-nothing test ! -e "$tmp/no3.json"
expect unknown-format "--to: unknown format 'ollama'" -- \
  export "$tmp/m.plan.yaml" --graph "$g" --cluster "$cluster" --to ollama
expect megatron-missing-micro "megatron arguments: --micro-batch-size: missing" -- \
  plan from-megatron "--tensor-model-parallel-size 2" --graph "$g" --cluster "$cluster" -o "$tmp/no4.plan.yaml"
check from-megatron-wrote-nothing test ! -e "$tmp/no4.plan.yaml"
echo '[1, 2]' > "$tmp/bad.json"
expect deepspeed-not-object "bad.json: expected an object, got an array of 2 values" -- \
  plan from-deepspeed "$tmp/bad.json" --graph "$g" --cluster "$cluster" -o "$tmp/no5.plan.yaml"

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
