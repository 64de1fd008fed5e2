#!/usr/bin/env bash
# Regenerates datasets/clusters/h200.profile.yaml: the one-H200 profile fitted on the FIT
# traces of datasets/measurements/h200 (the shapes h2048_l8_s2k and h4096_l8_s4k, every
# variant: 9 traces) on top of datasets/clusters/h100.profile.yaml, which gives what the
# traces cannot (the attention and f8 matmul curves, host dispatch). The traces of
# h3072_l12_s8k, h2048_l16_s16k and h4096_l16_s16k are held out (docs/results.md, "An H200
# measured with current LLM kernels"). Run from the repository root:
#   bash scripts/fit_h200_profile.sh [path/to/placer]
set -euo pipefail
placer=${1:-build/placer}
traces=datasets/measurements/h200/traces
fit=()
for shape in h2048_l8_s2k h4096_l8_s4k; do
  for f in "$traces"/llama_"$shape"_*.json.gz; do fit+=("$f"); done
done
"$placer" calibrate fit --cluster datasets/clusters/h200_sxm_1gpu.cluster.yaml \
  --base datasets/clusters/h100.profile.yaml --profiler-dtype bf16 --name h200 \
  --note "One NVIDIA H200 (datasets/measurements/h200). Regenerate: bash scripts/fit_h200_profile.sh. Memory-bound curves and the bf16 GEMM curve from the 9 FIT Llama traces; ops.attention, the f8 matmul curve and host dispatch from the base." \
  --profiler-trace "${fit[@]}" -o datasets/clusters/h200.profile.yaml
# FSDP2's host time per hook is no per-op figure: fitted on the FIT rows' FSDP2-minus-plain
# step differences by scripts/fit_fsdp_hook_time.py (least squares on a 50 us grid).
sed -i 's/^launch_overhead: .*/&\nfsdp_hook_host_time: 750 us/' datasets/clusters/h200.profile.yaml
