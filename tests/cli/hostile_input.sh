#!/usr/bin/env bash
# Hostile and mistaken input to the framework importers, the generators and the
# calibration readers: wrapped integer products, deep nesting, values of the wrong type,
# numbers that do not fit, denormal measurements, unbounded work and endless files. Each
# gives exactly one error line naming the file or argument, exit code 1, no signal, and
# writes nothing. Usage: hostile_input.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; src=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0
. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"
cluster=$src/datasets/clusters/dgx_a100.cluster.yaml
profile=$src/datasets/clusters/dgx_a100.profile.yaml
g=$tmp/gpt.graph.json
"$placer" generate gpt --layers 8 --hidden 64 --heads 4 --seq-len 32 --batch 16 --vocab 1000 \
  --training-step -o "$g" > /dev/null 2>&1
E="placer: error:"
from_ds() { echo plan from-deepspeed "$1" --graph "$g" --cluster "$cluster" -o "$tmp/out/p.plan.yaml"; }
from_mg() { echo plan from-megatron --graph "$g" --cluster "$cluster" -o "$tmp/out/p.plan.yaml"; }
# ds NAME JSON: writes $tmp/NAME.json.
ds() { printf '%s\n' "$2" > "$tmp/$1.json"; }
# nest N OPEN CLOSE: N opening brackets, then N closing ones.
nest() { python3 -c "import sys; n=int(sys.argv[1]); print(sys.argv[2]*n + '1' + sys.argv[3]*n)" "$@"; }

# --- Integer products that used to wrap (SIGFPE on a division by the wrapped 0).
ds gas '{"train_batch_size": 16, "gradient_accumulation_steps": 536870912}'
refuse ds-accumulation-x-dp "$E $tmp/gas.json: gradient_accumulation_steps x dp: 536870912 x 8 is above the largest 2147483647" \
  -- $(from_ds "$tmp/gas.json")
ds mb '{"train_batch_size": 16, "train_micro_batch_size_per_gpu": 536870912, "gradient_accumulation_steps": 0}'
refuse ds-micro-batch-x-dp "$E $tmp/mb.json: train_micro_batch_size_per_gpu x dp: 536870912 x 8 is above the largest 2147483647" \
  -- $(from_ds "$tmp/mb.json")
refuse mg-tp-x-pp "$E megatron arguments: --tensor-model-parallel-size x --pipeline-model-parallel-size: 65536 x 65536 is above the largest 2147483647" \
  -- $(from_mg) "--tensor-model-parallel-size 65536 --pipeline-model-parallel-size 65536 --micro-batch-size 1"
refuse mg-vpp-x-pp "$E megatron arguments: megatron: pp x virtual_stages: 65536 x 65536 is above the largest 2147483647" \
  -- $(from_mg) --world-size 65536 "--pipeline-model-parallel-size 65536 --virtual-pipeline-model-parallel-size 65536 --micro-batch-size 1 --global-batch-size 16"
refuse mg-micro-batch-x-dp "$E megatron arguments: --micro-batch-size x data-parallel size: 1000000000 x 8 is above the largest 2147483647" \
  -- $(from_mg) "--micro-batch-size 1000000000"

# --- Deep nesting (was a stack overflow printing the value).
nest 100000 '[' ']' | sed 's/^/{"train_batch_size": /; s/$/}/' > "$tmp/deep.json"
refuse ds-deep-value "$E $tmp/deep.json: line 1, column 85: nesting deeper than 64 levels" -- $(from_ds "$tmp/deep.json")
nest 1000000 '{"parts": ' '}' | sed 's/^/{"pipeline": /; s/$/}/' > "$tmp/deep_pipe.json"
refuse ds-deep-pipeline "$E $tmp/deep_pipe.json: line 1, column 644: nesting deeper than 64 levels" -- $(from_ds "$tmp/deep_pipe.json")

# --- Values of the wrong type or out of range: refused with the key path, never narrowed.
ds parts '{"train_batch_size": 16, "pipeline": {"stages": 2, "parts": [0, 4294967300, 8]}}'
refuse ds-parts-above-int "$E $tmp/parts.json: pipeline.parts[1]: must be between 0 and 1000000000 (got 4294967300)" \
  -- $(from_ds "$tmp/parts.json")
ds big '{"train_batch_size": 9007199254740993}'
refuse ds-above-2-53 "$E $tmp/big.json: train_batch_size: 9007199254740993 is beyond 2^53, the largest integer read exactly" \
  -- $(from_ds "$tmp/big.json")
ds fp16 '{"train_batch_size": 16, "fp16": true}'
refuse ds-fp16-bool "$E $tmp/fp16.json: fp16: expected an object, got true" -- $(from_ds "$tmp/fp16.json")
ds pipe_str '{"train_batch_size": 16, "pipeline": "x"}'
refuse ds-pipeline-string "$E $tmp/pipe_str.json: pipeline: expected an object, got the string 'x'" -- $(from_ds "$tmp/pipe_str.json")
ds pipe_arr '{"train_batch_size": 16, "pipeline": [1, 2]}'
refuse ds-pipeline-array "$E $tmp/pipe_arr.json: pipeline: expected an object, got an array of 2 values" -- $(from_ds "$tmp/pipe_arr.json")
ds zero '{"train_batch_size": 16, "zero_optimization": 3}'
refuse ds-zero-number "$E $tmp/zero.json: zero_optimization: expected an object, got 3" -- $(from_ds "$tmp/zero.json")
ds tp '{"train_batch_size": 16, "tensor_parallel": 5}'
refuse ds-tensor-parallel-number "$E $tmp/tp.json: tensor_parallel: expected an object, got 5" -- $(from_ds "$tmp/tp.json")
printf '{\n  "train_batch_size": 16,\n  "fp16": {"enabled": tru}\n}\n' > "$tmp/syntax.json"
refuse ds-syntax "$E $tmp/syntax.json: line 3, column 26: malformed JSON: syntax error while parsing value - invalid literal" \
  -- $(from_ds "$tmp/syntax.json")
refuse ds-dev-zero "$E /dev/zero: DeepSpeed config: more than 1073741824 bytes, above the 1 GiB input limit" -- $(from_ds /dev/zero)

# --- Import and export validate alike: 3 virtual stages x pp 2 do not split 8 layers.
refuse mg-vpp-not-exportable "$E megatron arguments: --virtual-pipeline-model-parallel-size: the plan read does not export back to megatron: pipeline.stages: 8 layers do not split evenly over 6 stages and the split is not an even one with a different first / last stage" \
  -- $(from_mg) "--pipeline-model-parallel-size 2 --virtual-pipeline-model-parallel-size 3 --micro-batch-size 1 --global-batch-size 16"

# --- Generators: byte counts past the graph bound (1 EiB) are refused before writing.
refuse gpt-seq-x-batch "$E gpt: tensor 'tokens' bytes: 4611686014132420609 x 8 is above the largest 18446744073709551615" \
  -- generate gpt --layers 1 --hidden 64 --heads 4 --seq-len 2147483647 --batch 2147483647 -o "$tmp/out/g.graph.json"
refuse gpt-2-20 "$E gpt: tensor 'language_model.embedding.word_embeddings.out' bytes: 2305843009213693952 bytes, beyond the physical bound of 1 EiB (2^60 bytes)" \
  -- generate gpt --layers 1 --hidden 1048576 --heads 4 --seq-len 1048576 --batch 1048576 -o "$tmp/out/g.graph.json"

# --- Measurements: denormal / non-finite values are refused naming file, line and column.
hdr=gpus,global_batch,micro_batch,hidden,heads,layers,seq_len,tp,dp,pp,iteration_ms
printf '%s\n8,16,1,64,4,8,32,1,8,1,4.9e-324\n' "$hdr" > "$tmp/denormal.csv"
refuse iterations-denormal "$E $tmp/denormal.csv:2: column 'iteration_ms': '4.9e-324' is not a finite number of normal magnitude" \
  -- calibrate check --cluster "$cluster" --profile "$profile" --iterations "$tmp/denormal.csv" --csv "$tmp/out/check.csv"
refuse fit-denormal "$E $tmp/denormal.csv:2: column 'iteration_ms': '4.9e-324' is not a finite number of normal magnitude" \
  -- calibrate fit --cluster "$cluster" --iterations "$tmp/denormal.csv" -o "$tmp/out/p.profile.yaml"

# --- Bounded work: the fit estimates the simulated ops per run up front and refuses above
# the bound (this row, 2^23 micro-batches of 4096 layers, ran for minutes without a word).
printf '%s\n8,67108864,1,1024,16,4096,1024,1,8,1,100\n' "$hdr" > "$tmp/huge.csv"
refuse fit-bounded-work "$E $tmp/huge.csv:2: about 2.06158e+12 simulated ops per prediction (layers x 60 x micro-batches x tp), above the bound 2e+07 of calibrate fit / check (docs/formats/iteration_runs.md)" \
  -- calibrate fit --cluster "$cluster" --iterations "$tmp/huge.csv" -o "$tmp/out/p.profile.yaml"

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
