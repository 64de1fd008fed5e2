#!/usr/bin/env bash
# Unbounded sizes and non-physical numbers in input files: each gives
# exactly one error line naming the file and field, exit code 1, and writes nothing.
# Usage: bounded_input.sh PLACER SOURCE_DIR TEST_DATA_DIR
set -u
placer=$1; data=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; n=0

graph=$data/mlp2.graph.json
cluster=$data/two_gpus.cluster.yaml
pipeline=$data/mlp2_pipeline.plan.yaml

. "$(dirname "${BASH_SOURCE[0]}")/lib/expect.bash"

place() { echo place --graph "$1" --cluster "$2" --method m-etf -o "$tmp/out/plan.yaml"; }
sim() { echo simulate --graph "$graph" --cluster "$cluster" --plan "$1" --trace "$tmp/out/trace.json"; }

# Item 3: sizes. A million micro-batches for a batch of 32 samples.
sed 's/micro_batches: 4/micro_batches: 1000000/' "$pipeline" > "$tmp/mb.plan.yaml"
refuse micro-batches-above-batch \
  "placer: error: $tmp/mb.plan.yaml: pipeline.micro_batches: 1000000 micro-batches, more than the batch of graph 'mlp2' (32 samples; each micro-batch needs at least one)" \
  -- $(sim "$tmp/mb.plan.yaml")
# 200000 devices: refused before they are allocated.
sed 's/count: 2}/count: 200000}/' "$cluster" > "$tmp/huge.cluster.yaml"
refuse huge-device-count \
  "placer: error: $tmp/huge.cluster.yaml: hosts[0]: brings the cluster to 200000 devices, more than the 131072 placer supports" \
  -- $(place "$graph" "$tmp/huge.cluster.yaml")

# Item 4: non-finite and non-physical numbers.
bounds="is out of physical bounds: a bandwidth must be 0 or between 1 B/s and 100 TB/s"
for bw in NaN inf 1e308 9.2e18; do
  sed "s|bandwidth: 10 GB/s|bandwidth: $bw|" "$cluster" > "$tmp/bw.cluster.yaml"
  case $bw in
    NaN|inf) want="cannot read '$bw' as a bandwidth (use e.g. '25 Gbit/s' or '3.1 GB/s')" ;;
    *) want="'$bw' $bounds" ;;
  esac
  refuse "link-bandwidth-$bw" \
    "placer: error: $tmp/bw.cluster.yaml: links.intra_host.bandwidth: $want" \
    -- $(place "$graph" "$tmp/bw.cluster.yaml")
done
sed 's|f32: 10 TFLOPS|f32: 1e308|' "$cluster" > "$tmp/flops.cluster.yaml"
refuse device-flops-1e308 \
  "placer: error: $tmp/flops.cluster.yaml: device_types.gpu10t.peak_flops.f32: '1e308' is out of physical bounds: a FLOP/s rate must be 0 or between 1 FLOP/s and 1 EFLOP/s" \
  -- $(place "$graph" "$tmp/flops.cluster.yaml")
sed 's/"flops":12845056.0/"flops":1e308/' "$graph" > "$tmp/flops.graph.json"
refuse op-flops-1e308 \
  "placer: error: $tmp/flops.graph.json: ops[0].flops: is 1e308, beyond the physical bound of 1e24 FLOPs per op (a training step of the largest models is ~1e21)" \
  -- $(place "$tmp/flops.graph.json" "$cluster")
printf 'format_version: "1.0"\nplacement: {default: 0}\ndata_parallel: {replicas: 2, bucket_size: 0.5 B}\n' > "$tmp/bucket.plan.yaml"
refuse fractional-bucket-size \
  "placer: error: $tmp/bucket.plan.yaml: data_parallel.bucket_size: '0.5 B' is not a whole number of bytes" \
  -- $(sim "$tmp/bucket.plan.yaml")

# Training configuration numbers: finite, and a learning rate Adam does not diverge at.
src=$2
for lr in nan 1e308; do
  case $lr in
    nan) want="expected a finite number, got 'nan'" ;;
    *) want="must be > 0.0 and <= 1.0 (got '$lr')" ;;
  esac
  refuse "train-lr-$lr" "placer: error: --set: ppo.lr: $want" \
    -- train-policy --config "$src/examples/train_policy.yaml" --set "ppo.lr=$lr" -o "$tmp/out/policy"
done

# Item 5: a host with a name and no devices (was an internal error, exit 2).
refuse host-without-devices \
  "placer: error: $data/bad/host_without_devices.cluster.yaml: hosts[0]: missing required key 'devices'" \
  -- $(place "$graph" "$data/bad/host_without_devices.cluster.yaml")

echo "$((n - fail)) passed, $fail failed"
[ $fail -eq 0 ]
