#!/usr/bin/env python3
"""Fits the `attention` efficiency curve of a cost profile to SDPA measurements and checks it
on configurations the fit did not see.

Reads a `sdpa.csv` written by scripts/gpu_measure.sh --modern (columns in
datasets/measurements/h200/README.md). For one backend, each row (forward or backward, causal
or not) gives an efficiency = flops / (median time * peak). The curve is piecewise linear in
log10(FLOPs) with a knot every half decade; a knot's value is the median efficiency of the rows
within a quarter decade of it (the simulator's EfficiencyCurve, simulator/cost_profile.h).

Held-out check: leave one head shape out (query heads / kv heads / head dim; 7 in the H200
file): fit on the other shapes, predict the left-out shape's rows as the simulator times the
op (launch + max(flops / (peak * eff(flops)), bytes / (bandwidth * 0.8))), and collect the
relative errors |pred - meas| / meas. Prints the median and 90th percentile over all rows, per
pass, and the curve fitted on every row as profile YAML.

  python3 scripts/fit_attention_curve.py datasets/measurements/h200/sdpa.csv --backend cudnn
"""

import argparse
import csv
import math
import statistics
import sys


def load_rows(path, backend, head_dim):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["backend"] != backend or r["status"] != "ok":
                continue
            if head_dim and int(r["head_dim"]) != head_dim:
                continue
            rows.append({
                "shape": (int(r["heads_q"]), int(r["heads_kv"]), int(r["head_dim"])),
                "pass": r["pass"],
                "flops": float(r["flops"]),
                "bytes": float(r["bytes"]),
                "time": float(r["median_ms"]) * 1e-3,
            })
    return rows


def fit_curve(rows, peak):
    """Knots every half decade of FLOPs: the median efficiency within a quarter decade."""
    xs = [math.log10(r["flops"]) for r in rows]
    lo, hi = math.floor(min(xs) * 2) / 2, math.ceil(max(xs) * 2) / 2
    points = []
    k = lo
    while k <= hi + 1e-9:
        near = [r["flops"] / (r["time"] * peak) for r, x in zip(rows, xs) if abs(x - k) <= 0.25]
        if near:
            points.append((k, statistics.median(near)))
        k += 0.5
    return points


def curve_at(points, x):
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


def predict(points, row, peak, bandwidth, launch):
    compute = row["flops"] / (peak * curve_at(points, math.log10(row["flops"])))
    memory = row["bytes"] / (bandwidth * 0.8)
    return launch + max(compute, memory)


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--backend", default="cudnn", help="flash, cudnn or efficient")
    ap.add_argument("--peak", type=float, default=989.4e12, help="bf16 dense FLOP/s (H200)")
    ap.add_argument("--bandwidth", type=float, default=4.8e12, help="bytes/s (H200)")
    ap.add_argument("--launch", type=float, default=4e-6, help="seconds per op")
    ap.add_argument("--head-dim", type=int, default=0, help="only rows of this head dim (0 = all)")
    a = ap.parse_args()
    rows = load_rows(a.csv, a.backend, a.head_dim)
    if not rows:
        sys.exit(f"{a.csv}: no ok rows of backend '{a.backend}'")
    shapes = sorted({r["shape"] for r in rows})
    errors = {"fwd": [], "bwd": []}
    for held in shapes:
        points = fit_curve([r for r in rows if r["shape"] != held], a.peak)
        for r in rows:
            if r["shape"] == held:
                pred = predict(points, r, a.peak, a.bandwidth, a.launch)
                errors[r["pass"]].append(abs(pred - r["time"]) / r["time"])
    every = errors["fwd"] + errors["bwd"]
    only = f", head dim {a.head_dim}" if a.head_dim else ""
    print(f"backend {a.backend}{only}: {len(rows)} rows, {len(shapes)} head shapes, "
          "leave-one-head-shape-out")
    print(f"  held-out error: median {100 * statistics.median(every):.1f}%, "
          f"p90 {100 * percentile(every, 0.9):.1f}% ({len(every)} rows)")
    for p in ("fwd", "bwd"):
        print(f"  {p}: median {100 * statistics.median(errors[p]):.1f}%, "
              f"p90 {100 * percentile(errors[p], 0.9):.1f}% ({len(errors[p])} rows)")
    points = fit_curve(rows, a.peak)
    print("  curve on every row (log10 FLOPs, efficiency):")
    print("    bf16: [" + ", ".join(f"[{x:g}, {y:.3f}]" for x, y in points) + "]")


if __name__ == "__main__":
    main()
