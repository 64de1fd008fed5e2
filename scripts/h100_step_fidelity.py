#!/usr/bin/env python3
"""Predicted vs measured training-step time on one GPU: for each row of a
steps.csv written by scripts/gpu_train_steps.py, import the model's ONNX export
(datasets/models/onnx/h100_steps/gpt_h*_l*.onnx, datasets/models/onnx/resnet50.onnx) at the
row's batch and dtype, place it on the one-GPU cluster and simulate a training step with the
given cost profile; print measured, predicted and error per row, then MAPE, the median
error and the Spearman rank correlation. Needs only the placer binary (no PyTorch).

  python3 scripts/h100_step_fidelity.py --steps datasets/measurements/h100/training_steps.csv \\
      --profile datasets/clusters/h100.profile.yaml [--cluster ...] [--placer build/placer]
      [--work /tmp/h100_fidelity] [--csv OUT.csv] [--memory]

GPT rows use AdamW (placer --optimizer adam), ResNet-50 rows SGD with momentum (momentum),
as the measured steps did. Imported graphs and plans are cached under --work.
"""

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit(f"h100_step_fidelity.py: {' '.join(cmd)} failed:\n{p.stdout[-2000:]}")
    return p.stdout


def onnx_of(row):
    if row["family"] == "gpt":
        return os.path.join(ROOT, "datasets/models/onnx/h100_steps",
                            f"gpt_h{row['hidden']}_l{row['layers']}.onnx")
    return os.path.join(ROOT, "datasets/models/onnx/resnet50.onnx")


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return num / den if den else float("nan")


def parse_seconds(text, label):
    m = re.search(label + r"\s+([0-9.]+)\s*(us|ms|s)\b", text)
    if not m:
        return None
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


def parse_gib(text):
    m = re.search(r"peak memory\s+([0-9.]+)\s*(MiB|GiB)", text)
    if not m:
        return None
    return float(m.group(1)) * (1 / 1024 if m.group(2) == "MiB" else 1.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", required=True, nargs="+", help="steps.csv file(s)")
    ap.add_argument("--profile", required=True)
    ap.add_argument("--cluster", default=os.path.join(ROOT, "datasets/clusters/h100_sxm_1gpu.cluster.yaml"))
    ap.add_argument("--placer", default=os.path.join(ROOT, "build/placer"))
    ap.add_argument("--work", default="/tmp/h100_fidelity")
    ap.add_argument("--csv", help="write the rows here")
    ap.add_argument("--configs", help="comma-separated names to keep (default: every row)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rows = []
    for path in args.steps:
        with open(path, newline="") as f:
            rows += [r for r in csv.DictReader(f) if r["median_s"]]
    if args.configs:
        keep = set(args.configs.split(","))
        rows = [r for r in rows if r["name"] in keep]
    if not rows:
        sys.exit("h100_step_fidelity.py: no measured rows")
    out = []
    print(f"{'config':28s} {'measured':>10s} {'predicted':>10s} {'error':>8s} "
          f"{'mem meas':>9s} {'mem pred':>9s}")
    for r in rows:
        dtype = "bf16" if r["dtype"] == "bf16" else "fp32"
        stem = os.path.join(args.work, r["name"])
        graph = stem + ".graph.json"
        if not os.path.exists(graph):
            run([args.placer, "import", onnx_of(r), "--batch-size", r["batch"], "--dtype", dtype,
                 "-o", graph])
        optimizer = "adam" if r["family"] == "gpt" else "momentum"
        text = run([args.placer, "place", "-g", graph, "-c", args.cluster, "--profile",
                    args.profile, "--optimizer", optimizer, "--method", "single",
                    "-o", stem + ".plan.yaml"])
        pred = parse_seconds(text, "step time")
        mem = parse_gib(text)
        meas = float(r["median_s"])
        err = (pred - meas) / meas
        mem_meas = float(r["peak_memory_bytes"]) / 2**30 if r["peak_memory_bytes"] else 0
        out.append(dict(name=r["name"], measured_s=meas, predicted_s=pred, rel_error=err,
                        peak_memory_gib=mem_meas, predicted_memory_gib=mem))
        print(f"{r['name']:28s} {meas * 1e3:8.2f}ms {pred * 1e3:8.2f}ms {err * 100:+7.1f}% "
              f"{mem_meas:7.2f}Gi {mem:7.2f}Gi", flush=True)
    errs = [abs(o["rel_error"]) for o in out]
    rho = spearman([o["measured_s"] for o in out], [o["predicted_s"] for o in out])
    print(f"configs {len(out)}: MAPE {statistics.fmean(errs) * 100:.1f}%, median "
          f"{statistics.median(errs) * 100:.1f}%, max {max(errs) * 100:.1f}%, signed mean "
          f"{statistics.fmean(o['rel_error'] for o in out) * 100:+.1f}%, Spearman {rho:.3f}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, list(out[0].keys()))
            w.writeheader()
            w.writerows(out)


if __name__ == "__main__":
    main()
