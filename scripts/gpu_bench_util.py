"""Shared pieces of the GPU measurement scripts (gpu_kernels_modern.py, gpu_llama_steps.py):
kernel timing with CUDA events, CSV files written row by row, a time budget per section and
the machine facts as PyTorch reports them. Runs on PyTorch 1.13 (CPU smoke tests) and 2.x.
"""

import csv
import importlib.metadata
import statistics
import sys
import time

import torch


def synchronize(device):
    if device == "cuda":
        torch.cuda.synchronize()


def host_seconds(fn, device):
    """One call of fn timed with the host clock, the device synchronized on each side."""
    synchronize(device)
    t0 = time.perf_counter()
    fn()
    synchronize(device)
    return time.perf_counter() - t0


class KernelTimer:
    """Times a callable: one untimed first call (compilation, library handles, autotuning;
    its host time is kept as `first_s`), one call to size the repetitions, a warm-up, then
    `reps` calls each between two CUDA events with the L2 cache overwritten before each
    (a 256 MiB write), so every call reads its inputs from device memory. Reports the
    median and minimum in milliseconds. On the CPU the host clock replaces the events."""

    def __init__(self, device, target_s=0.05, min_reps=3, max_reps=20):
        self.device = device
        self.target_s = target_s
        self.min_reps = min_reps
        self.max_reps = max_reps
        self.flush = None
        if device == "cuda":
            self.flush = torch.empty(64 << 20, dtype=torch.int32, device="cuda")

    def __call__(self, fn):
        first_s = host_seconds(fn, self.device)
        estimate = host_seconds(fn, self.device)
        reps = int(self.target_s / max(estimate, 1e-6))
        reps = max(self.min_reps, min(self.max_reps, reps))
        fn()
        if self.device != "cuda":
            ms = [host_seconds(fn, self.device) * 1e3 for _ in range(reps)]
        else:
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
            for start, end in zip(starts, ends):
                self.flush.zero_()
                start.record()
                fn()
                end.record()
            torch.cuda.synchronize()
            ms = [s.elapsed_time(e) for s, e in zip(starts, ends)]
        return {"reps": reps, "median_ms": statistics.median(ms), "min_ms": min(ms),
                "first_call_s": first_s}


class CsvLog:
    """A CSV file that gets its header at once and each row as soon as it is measured."""

    def __init__(self, path, fields):
        self.path = path
        self.fields = fields
        with open(path, "w", newline="") as f:
            csv.DictWriter(f, fields, lineterminator="\n").writeheader()

    def write(self, row):
        with open(self.path, "a", newline="") as f:
            csv.DictWriter(f, self.fields, extrasaction="ignore",
                           lineterminator="\n").writerow(row)


class Budget:
    """A section's time limit, counted from the program's start; checked before each
    configuration so a section ends between configurations, not in the middle of one."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.t0 = time.monotonic()

    def spent(self):
        return time.monotonic() - self.t0

    def exhausted(self):
        return self.seconds > 0 and self.spent() > self.seconds


def skip_reason(error):
    """The first line of an exception, for a CSV `status` column."""
    if isinstance(error, torch.cuda.OutOfMemoryError if hasattr(torch.cuda, "OutOfMemoryError")
                  else MemoryError):
        return "skipped: out of memory"
    text = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return "skipped: " + (type(error).__name__ + ": " + text)[:200].replace(",", ";")


def free_memory(device):
    if device == "cuda":
        torch.cuda.empty_cache()


def package_version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_facts(device):
    """GPU, its multiprocessors, L2 and memory, and the versions of the software stack."""
    facts = {"torch": torch.__version__, "python": sys.version.split()[0],
             "triton": package_version("triton"),
             "cublas": package_version("nvidia-cublas") or package_version("nvidia-cublas-cu12"),
             "cudnn_package": package_version("nvidia-cudnn-cu13"),
             "nccl_package": package_version("nvidia-nccl-cu13")}
    if device != "cuda":
        facts["gpu"] = "none (--device " + device + ")"
        return facts
    props = torch.cuda.get_device_properties(0)
    nccl = torch.cuda.nccl.version() if hasattr(torch.cuda, "nccl") else None
    facts.update({
        "gpu": torch.cuda.get_device_name(0),
        "compute_capability": f"{props.major}.{props.minor}",
        "multiprocessors": props.multi_processor_count,
        "l2_cache_bytes": getattr(props, "L2_cache_size", None),
        "memory_bytes": props.total_memory,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "nccl": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else nccl,
    })
    for flag in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "cudnn_sdp_enabled",
                 "is_flash_attention_available"):
        fn = getattr(torch.backends.cuda, flag, None)
        facts["sdpa_" + flag] = fn() if fn else None
    return facts
