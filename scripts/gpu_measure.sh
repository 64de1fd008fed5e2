#!/usr/bin/env bash
# Measures one GPU for placer (docs/gpu_measurements.md): placer-calibrate's kernel
# and copy sweep, then real training steps of the models in scripts/step_models.py with a
# torch.profiler trace each. For a bare GPU machine with CUDA, PyTorch and NCCL and none of
# the project's Debian -dev packages.
#
#   scripts/gpu_measure.sh OUT [--calibrate-seconds 240] [--calibrate-args "--quick"]
#                              [--steps-seconds 330] [--configs LIST] [--ppo-seconds 0]
#   scripts/gpu_measure.sh OUT --modern [--sdpa-seconds 85] [--fp8-seconds 45]
#                              [--fused-seconds 50] [--llama-seconds 135]
#
# --modern: instead of the above, the kernels of current LLM training stacks
# (scripts/gpu_kernels_modern.py: SDPA backends, FP8 GEMMs, torch.compile'd fused ops) and
# Llama-style training steps (scripts/gpu_llama_steps.py: eager / compiled, activation
# checkpointing, FSDP2 at world size 1), each section within its own limit (4-6
# minutes in all by default). OUT then ends with machine.txt, versions.json (machine facts:
# SMs, L2, CUDA, cuDNN, NCCL, Triton, PyTorch), sdpa.csv, fp8_gemm.csv, fused_ops.csv,
# llama_steps.csv, traces.tar (one profiled step per Llama configuration) and logs.tar.gz.
# MODERN_ARGS adds options to every section's program ("--device cpu --tiny": a smoke test
# without a GPU).
#
# --calibrate-args: placer-calibrate's options ("--quick" by default; "" = its full sweep).
# --ppo-seconds N > 0: then builds and runs the GDP PPO-update benchmark on cpu and cuda
# (scripts/gpu_ppo_bench.sh, step 3 of the issue) within N seconds.
#
# Each step runs under its own time limit and writes into OUT as it goes, so a step cut off
# still leaves what it measured. OUT ends with at most 8 files (what a device call brings back):
#   machine.txt      nvidia-smi, driver, nvcc, the libraries placer-calibrate was linked to
#   calibrate.csv    placer-calibrate's measurements (the .partial rows if it stopped early)
#   steps.csv        measured step times (scripts/gpu_train_steps.py)
#   versions.json    GPU, PyTorch, CUDA, cuDNN, NCCL as PyTorch reports them
#   traces.tar       one Kineto trace per configuration (NAME.json.gz), split into
#                    traces.tar.0, .1, ... when over 15 MiB
#   ppo.csv          PPO update times on cpu and cuda (with --ppo-seconds)
#   logs.tar.gz      placer-calibrate progress, its build log if it was built here, step and
#                    PPO logs
#
# placer-calibrate: PLACER_CALIBRATE=path (default .gpu/placer-calibrate, a binary built on
# the CPU machine and carried), run against the CUDA libraries the machine has (its CUDA
# toolkit, else the nvidia-* Python packages). If it cannot run there, it is built from
# simulator/calibration/cuda with run_on_gpu.sh. STEPS_DEVICE=cpu runs step 2 on the CPU (a
# smoke test of this script on a machine without a GPU); STEPS_ARGS adds options to
# gpu_train_steps.py (e.g. "--warmup 1 --iters 1").
set -uo pipefail

usage() {
  echo "usage: $0 OUT [--calibrate-seconds N] [--calibrate-args ARGS] [--steps-seconds N]" \
       "[--configs LIST] [--ppo-seconds N] | OUT --modern [--sdpa-seconds N]" \
       "[--fp8-seconds N] [--fused-seconds N] [--llama-seconds N]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
out=$1; shift
calibrate_seconds=240
calibrate_args=--quick
steps_seconds=330
configs=all
ppo_seconds=0
modern=0
sdpa_seconds=85
fp8_seconds=45
fused_seconds=50
llama_seconds=135
while [ $# -gt 0 ]; do
  case $1 in
    --calibrate-seconds) [ $# -ge 2 ] || usage; calibrate_seconds=$2; shift 2 ;;
    --calibrate-args) [ $# -ge 2 ] || usage; calibrate_args=$2; shift 2 ;;
    --steps-seconds) [ $# -ge 2 ] || usage; steps_seconds=$2; shift 2 ;;
    --ppo-seconds) [ $# -ge 2 ] || usage; ppo_seconds=$2; shift 2 ;;
    --configs) [ $# -ge 2 ] || usage; configs=$2; shift 2 ;;
    --modern) modern=1; shift ;;
    --sdpa-seconds) [ $# -ge 2 ] || usage; sdpa_seconds=$2; shift 2 ;;
    --fp8-seconds) [ $# -ge 2 ] || usage; fp8_seconds=$2; shift 2 ;;
    --fused-seconds) [ $# -ge 2 ] || usage; fused_seconds=$2; shift 2 ;;
    --llama-seconds) [ $# -ge 2 ] || usage; llama_seconds=$2; shift 2 ;;
    *) echo "$0: unknown option '$1'" >&2; usage ;;
  esac
done
for n in "$calibrate_seconds" "$steps_seconds" "$ppo_seconds" "$sdpa_seconds" "$fp8_seconds" \
         "$fused_seconds" "$llama_seconds"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "$0: time limits are whole seconds, got '$n'" >&2; exit 2; }
done
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=${PYTHON:-python3}
stamp() { echo "gpu_measure: $(date -u +%H:%M:%S) $*" >&2; }

# ---- 0. the machine --------------------------------------------------------------------
{
  echo "# gpu_measure.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) $(hostname)"
  nvidia-smi 2>&1 || echo "nvidia-smi: not available"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit,compute_cap --format=csv 2>&1 || true
  cat /proc/driver/nvidia/version 2>/dev/null || true
  nvcc --version 2>&1 | tail -n 2 || echo "nvcc: not found"
  uname -a
  nproc
} > "$out/machine.txt"

# Packs OUT-side traces: DIR/traces/*.json.gz into OUT/traces.tar (split past 15 MiB).
pack_traces() {
  compgen -G "$1/traces/*.json.gz" > /dev/null || return 0
  tar -C "$1" -cf "$work/traces.tar" traces
  if [ "$(stat -c %s "$work/traces.tar")" -gt $((15 << 20)) ]; then
    split -b 15M -d -a 1 "$work/traces.tar" "$out/traces.tar."
  else
    mv "$work/traces.tar" "$out/traces.tar"
  fi
}

# ---- --modern: current LLM kernels and Llama-style steps -------------------------------
# Each section is a program that stops between configurations once its budget is spent;
# timeout (budget + 20 s) is the backstop for a configuration that overruns.
modern_section() {  # NAME SECONDS PROGRAM ARGS...
  local name=$1 seconds=$2; shift 2
  stamp "modern: $name (limit ${seconds}s)"
  # shellcheck disable=SC2086  # MODERN_ARGS are words
  PYTHONUNBUFFERED=1 timeout $((seconds + 20)) "$python" "$@" --budget-seconds "$seconds" \
    ${MODERN_ARGS:-} 2>&1 | tee -a "$work/modern.log" >&2
}

run_modern() {
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,temperature.gpu,pstate,mig.mode.current,persistence_mode,ecc.mode.current --format=csv >> "$out/machine.txt" 2>&1
  # shellcheck disable=SC2086
  "$python" "$repo/scripts/gpu_kernels_modern.py" --section machine --out "$out/versions.json" \
    ${MODERN_ARGS:-} 2>> "$work/modern.log"
  local kernels=$repo/scripts/gpu_kernels_modern.py
  modern_section sdpa "$sdpa_seconds" "$kernels" --section sdpa --out "$out/sdpa.csv"
  modern_section fp8 "$fp8_seconds" "$kernels" --section fp8 --out "$out/fp8_gemm.csv"
  modern_section fused "$fused_seconds" "$kernels" --section fused --out "$out/fused_ops.csv"
  modern_section llama "$llama_seconds" "$repo/scripts/gpu_llama_steps.py" \
    --csv "$out/llama_steps.csv" --traces "$work/llama/traces"
  { echo "# after the run"; nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; } >> "$out/machine.txt" 2>&1
  stamp "packing"
  # One file of at most 15 MiB (a device call brings back 8 files): traces in run order
  # until the next would not fit; the others are named in the log.
  local total=0 f size kept=()
  for f in $(ls -tr "$work/llama/traces" 2>/dev/null); do
    size=$(stat -c %s "$work/llama/traces/$f")
    if [ $((total + size)) -le $((15 << 20)) ]; then
      kept+=("traces/$f"); total=$((total + size))
    else
      echo "trace $f ($size bytes) left out: over 15 MiB in all" >> "$work/modern.log"
    fi
  done
  [ ${#kept[@]} -gt 0 ] && tar -C "$work/llama" -cf "$out/traces.tar" "${kept[@]}"
  tar -C "$work" -czf "$out/logs.tar.gz" modern.log
  ls -la "$out" >&2
  [ -s "$out/llama_steps.csv" ] && cut -d, -f1,17,21,22,25 "$out/llama_steps.csv" | tr , '\t' >&2
  stamp "done"
}
if [ "$modern" = 1 ]; then
  run_modern
  exit 0
fi

# CUDA libraries for a carried placer-calibrate: the toolkit's, then the Python packages'.
libdirs=$("$python" - <<'EOF' 2>/dev/null
import glob, os, site
dirs = []
for root in site.getsitepackages():
    for pattern in ("nvidia/*/lib", "nvidia/cu*/lib"):
        dirs += sorted(glob.glob(os.path.join(root, pattern)))
print(":".join(dict.fromkeys(dirs)))
EOF
)
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${libdirs:+:$libdirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---- 1. placer-calibrate ---------------------------------------------------------------
stamp "1. placer-calibrate ${calibrate_args} (limit ${calibrate_seconds}s)"
bin=${PLACER_CALIBRATE:-$repo/.gpu/placer-calibrate}
runs() { [ -x "$1" ] && ! ldd "$1" 2>/dev/null | grep -q "not found" && "$1" --help >/dev/null 2>&1; }
if ! runs "$bin"; then
  stamp "carried placer-calibrate cannot run here ($(ldd "$bin" 2>&1 | grep 'not found' | head -n 3 | tr '\n' ' ')); building it"
  PLACER_CALIBRATE_BUILD="$work/build-cal" timeout 200 "$repo/simulator/calibration/cuda/run_on_gpu.sh" \
    "$work/cal-build" --help > /dev/null 2>&1
  cp "$work/cal-build/build.log" "$work/calibrate-build.log" 2>/dev/null
  bin=$work/build-cal/placer-calibrate
fi
{ echo "# placer-calibrate: $bin"; ldd "$bin" 2>&1 | grep -E "cublas|cudnn|nccl|cudart" || true; } >> "$out/machine.txt"
if runs "$bin"; then
  # shellcheck disable=SC2086  # the options are words
  timeout "$calibrate_seconds" "$bin" $calibrate_args --out "$out/calibrate.csv" 2> "$work/calibrate.log"
  echo "exit status $?" >> "$work/calibrate.log"
  if [ ! -s "$out/calibrate.csv" ] && [ -s "$out/calibrate.csv.partial" ]; then
    mv "$out/calibrate.csv.partial" "$out/calibrate.csv"
  fi
  rm -f "$out/calibrate.csv.partial"
  tail -n 1 "$work/calibrate.log" >&2
else
  stamp "placer-calibrate could not be built or run; see logs.tar.gz"
fi

# ---- 2. training steps -----------------------------------------------------------------
stamp "2. training steps (limit ${steps_seconds}s)"
PYTHONUNBUFFERED=1 timeout "$steps_seconds" "$python" "$repo/scripts/gpu_train_steps.py" \
  --out "$work/steps" --configs "$configs" --device "${STEPS_DEVICE:-cuda}" ${STEPS_ARGS:-} 2>&1 | tee "$work/steps.log" >&2
cp "$work/steps/steps.csv" "$work/steps/versions.json" "$out/" 2>/dev/null

# ---- 3. the PPO update on cpu and cuda ---------------------------------------------------
if [ "$ppo_seconds" -gt 0 ]; then
  stamp "3. GDP PPO update, cpu vs cuda (limit ${ppo_seconds}s)"
  if [ -f "$repo/scripts/gpu_ppo_bench.sh" ]; then
    timeout "$ppo_seconds" bash "$repo/scripts/gpu_ppo_bench.sh" "$work/ppo" > "$work/ppo.log" 2>&1
    echo "exit status $?" >> "$work/ppo.log"
    tail -n 15 "$work/ppo.log" >&2
    cp "$work/ppo/ppo.csv" "$out/ppo.csv" 2>/dev/null
    for f in "$work"/ppo/*.log; do [ -f "$f" ] && cp "$f" "$work/ppo-$(basename "$f")"; done
  else
    stamp "scripts/gpu_ppo_bench.sh is missing; step 3 skipped"
  fi
fi

# ---- pack ------------------------------------------------------------------------------
stamp "packing"
pack_traces "$work/steps"
logs=()
for f in calibrate.log calibrate-build.log steps.log ppo.log "$work"/ppo-*.log; do
  f=$(basename "$f")
  [ -f "$work/$f" ] && logs+=("$f")
done
[ ${#logs[@]} -gt 0 ] && tar -C "$work" -czf "$out/logs.tar.gz" "${logs[@]}"
ls -la "$out" >&2
[ -s "$out/steps.csv" ] && cut -d, -f1,8,11,15 "$out/steps.csv" | tr , '\t' >&2
stamp "done"
