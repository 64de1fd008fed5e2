#!/usr/bin/env python3
"""Fits the FP8 matmul efficiency curve of a profile from measured FP8 GEMMs.

Reads a fp8_gemm.csv of scripts/gpu_kernels_modern.py (datasets/measurements/h200/), takes
the rows of one variant (default fp8_tensorwise: e4m3 x e4m3 with one scale per tensor, as
Transformer Engine's and torchao's default recipes run), and fits efficiency = achieved
FLOP/s / the device's f8 peak as a curve over log10(FLOPs) in the profile's format: at each
point every 0.25 decade, the median efficiency of the rows within 0.125 decade of it.

Held-out check: the curve is fitted leaving one model out and predicts that model's GEMM
times (flops / (peak x efficiency), linear between points, clamped at the ends); the median
absolute relative error per held-out model is printed, then the curve fitted on every row,
as YAML for ops.matmul.compute_efficiency_by_dtype.f8.

    python3 scripts/fit_fp8_curve.py datasets/measurements/h200/fp8_gemm.csv --peak 1979e12
"""
import argparse
import math
import statistics

from step_fidelity_util import read_csv


def load(path, variant):
    table = read_csv(path, "fit_fp8_curve.py", ("model", "variant", "status", "flops", "median_ms"),
                     ("flops", "median_ms"))
    return [(r["model"], float(r["flops"]), float(r["median_ms"]) * 1e-3) for r in table
            if r["variant"] == variant and r["status"] == "ok"]


def fit(rows, peak, step=0.25):
    xs = [math.log10(fl) for _, fl, _ in rows]
    lo, hi = math.floor(min(xs) / step) * step, math.ceil(max(xs) / step) * step
    curve = []
    x = lo
    while x <= hi + 1e-9:
        eff = [fl / t / peak for (_, fl, t), lx in zip(rows, xs) if abs(lx - x) <= step / 2]
        if eff:
            curve.append((round(x, 4), statistics.median(eff)))
        x += step
    return curve


def efficiency(curve, x):
    if x <= curve[0][0]:
        return curve[0][1]
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return curve[-1][1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--peak", type=float, default=1979e12, help="f8 peak FLOP/s (H100 / H200 SXM dense)")
    ap.add_argument("--variant", default="fp8_tensorwise")
    a = ap.parse_args()
    rows = load(a.csv, a.variant)
    for model in sorted({m for m, _, _ in rows}):
        curve = fit([r for r in rows if r[0] != model], a.peak)
        errs = [abs(fl / (a.peak * efficiency(curve, math.log10(fl))) - t) / t for m, fl, t in rows if m == model]
        print(f"held out {model}: {len(errs)} GEMMs, median error {100 * statistics.median(errs):.1f}%")
    print("f8:")
    for x, y in fit(rows, a.peak):
        print(f"  - [{x:g}, {y:.4f}]")


if __name__ == "__main__":
    main()
