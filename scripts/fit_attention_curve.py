#!/usr/bin/env python3
"""Fits the `attention` cost of a cost profile (an efficiency curve over FLOPs and a time per
query-key score, forward and backward) to SDPA measurements and checks it on configurations
the fit did not see.

Reads a `sdpa.csv` written by scripts/gpu_measure.sh --modern (columns in
datasets/measurements/h200/README.md). For one backend, each row (forward or backward, causal
or not) is timed as the simulator times a fused attention op (simulator/cost_model.h):

  launch + max(flops / (peak * eff(flops)) + scores * score_time[pass], bytes / (bandwidth * 0.8))

where scores = batch * query heads * query-key pairs (s^2, causal s(s+1)/2): the softmax's
exponentials run once per score on the special-function units whatever the head dim, so at
equal FLOPs a head dim of 64 has twice the scores of 128. The curve is piecewise linear in
log10(FLOPs) with a knot every half decade; given the two score times, a knot's value is the
median efficiency flops / (peak * (time - launch - scores * score_time)) of the rows within a
quarter decade of it (the simulator's EfficiencyCurve, simulator/cost_profile.h). The score
times (forward, backward) are the pair on a grid of 0.05 ps, then 0.005 ps, that gives the
least mean relative error on the fitted rows. --no-scores fits the curve alone (times 0).

Held-out check: leave one head shape out (query heads / kv heads / head dim; 7 in the H200
file): fit on the other shapes, predict the left-out shape's rows, and collect the relative
errors |pred - meas| / meas. Prints the median and 90th percentile over all rows, per pass
and per head dim, then the score times and the curve fitted on every row as profile YAML.

  python3 scripts/fit_attention_curve.py datasets/measurements/h200/sdpa.csv --backend cudnn
"""

import argparse
import math
import statistics
import sys

from fit_fp8_curve import efficiency  # the simulator's piecewise-linear curve
from step_fidelity_util import read_csv


def scores_of(r):
    """Query-key scores of one SDPA call: batch x query heads x pairs."""
    s = int(r["seq"])
    pairs = s * (s + 1) / 2 if r["causal"] == "1" else s * s
    return int(r["batch"]) * int(r["heads_q"]) * pairs


def load_rows(path, backend, head_dim):
    columns = ("backend", "status", "pass", "causal", "batch", "seq", "heads_q", "heads_kv",
               "head_dim", "flops", "bytes", "median_ms")
    rows = []
    for r in read_csv(path, "fit_attention_curve.py", columns, columns[4:]):
        if r["backend"] != backend or r["status"] != "ok":
            continue
        if head_dim and int(r["head_dim"]) != head_dim:
            continue
        rows.append({
            "shape": (int(r["heads_q"]), int(r["heads_kv"]), int(r["head_dim"])),
            "pass": r["pass"],
            "flops": float(r["flops"]),
            "bytes": float(r["bytes"]),
            "scores": scores_of(r),
            "time": float(r["median_ms"]) * 1e-3,
        })
    return rows


class Model:
    """The simulator's attention time: a curve over FLOPs plus a time per score per pass."""

    def __init__(self, a, score_time):
        self.peak, self.bandwidth, self.launch = a.peak, a.bandwidth, a.launch
        self.score_time = score_time  # {"fwd": s, "bwd": s}
        self.points = []

    def score_seconds(self, row):
        return row["scores"] * self.score_time[row["pass"]]

    def fit_curve(self, rows):
        """Knots every half decade of FLOPs: the median efficiency within a quarter decade of
        the rows' FLOP time (their time less the launch and the score term)."""
        data = []
        for r in rows:
            flop_time = r["time"] - self.launch - self.score_seconds(r)
            if flop_time > 0:
                data.append((math.log10(r["flops"]), r["flops"] / (flop_time * self.peak)))
        self.points = []
        if not data:
            return self
        lo = math.floor(min(x for x, _ in data) * 2) / 2
        hi = math.ceil(max(x for x, _ in data) * 2) / 2
        k = lo
        while k <= hi + 1e-9:
            near = [e for x, e in data if abs(x - k) <= 0.25]
            if near:
                self.points.append((k, statistics.median(near)))
            k += 0.5
        return self

    def predict(self, row):
        flop_time = row["flops"] / (self.peak * efficiency(self.points, math.log10(row["flops"])))
        memory = row["bytes"] / (self.bandwidth * 0.8)
        return self.launch + max(flop_time + self.score_seconds(row), memory)

    def errors(self, rows):
        return [abs(self.predict(r) - r["time"]) / r["time"] for r in rows]


def fit(rows, a):
    """The curve and the score times (forward, backward) of least mean relative error on
    `rows`: a grid of 0.05 ps up to 1.5 ps, then one of 0.005 ps around its best pair."""
    if a.no_scores:
        return Model(a, {"fwd": 0.0, "bwd": 0.0}).fit_curve(rows)
    best = None

    def search(fwd_grid, bwd_grid):
        nonlocal best
        for f in fwd_grid:
            for b in bwd_grid:
                m = Model(a, {"fwd": f, "bwd": b}).fit_curve(rows)
                if not m.points:
                    continue
                err = statistics.mean(m.errors(rows))
                if best is None or err < best[0]:
                    best = (err, m)

    coarse = [i * 0.05e-12 for i in range(31)]
    search(coarse, coarse)
    fine = lambda t: [max(0.0, t + i * 0.005e-12) for i in range(-10, 11)]
    search(fine(best[1].score_time["fwd"]), fine(best[1].score_time["bwd"]))
    return best[1]


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def summary(errors):
    return (f"median {100 * statistics.median(errors):.1f}%, "
            f"p90 {100 * percentile(errors, 0.9):.1f}% ({len(errors)} rows)")


def held_out_errors(rows, a):
    """Leave one head shape out: (pass, head dim, relative error) of every row, predicted by
    the fit on the other shapes."""
    out = []
    for held in sorted({r["shape"] for r in rows}):
        model = fit([r for r in rows if r["shape"] != held], a)
        for r, e in zip(rows, model.errors(rows)):
            if r["shape"] == held:
                out.append((r["pass"], r["shape"][2], e))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--backend", default="cudnn", help="flash, cudnn or efficient")
    ap.add_argument("--peak", type=float, default=989.4e12, help="bf16 dense FLOP/s (H200)")
    ap.add_argument("--bandwidth", type=float, default=4.8e12, help="bytes/s (H200)")
    ap.add_argument("--launch", type=float, default=4e-6, help="seconds per op")
    ap.add_argument("--head-dim", type=int, default=0,
                    help="only rows of this head dim (0 = all; with one head dim the score "
                         "times and the curve trade off, so fit them with --no-scores)")
    ap.add_argument("--no-scores", action="store_true",
                    help="fit the curve alone (no per-score term: score times 0)")
    a = ap.parse_args()
    rows = load_rows(a.csv, a.backend, a.head_dim)
    if not rows:
        sys.exit(f"{a.csv}: no ok rows of backend '{a.backend}'")
    errors = held_out_errors(rows, a)
    only = f", head dim {a.head_dim}" if a.head_dim else ""
    term = "curve only" if a.no_scores else "curve + score times"
    print(f"backend {a.backend}{only} ({term}): {len(rows)} rows, "
          f"{len({r['shape'] for r in rows})} head shapes, leave-one-head-shape-out")
    print(f"  held-out error: {summary([e for _, _, e in errors])}")
    for p in ("fwd", "bwd"):
        print(f"  {p}: {summary([e for q, _, e in errors if q == p])}")
    for d in sorted({hd for _, hd, _ in errors}):
        print(f"  head dim {d}: {summary([e for _, hd, e in errors if hd == d])}")
    model = fit(rows, a)
    print("  on every row: score_time "
          f"{model.score_time['fwd']:.4g} s, backward_score_time {model.score_time['bwd']:.4g} s;"
          " curve (log10 FLOPs, efficiency):")
    print("    [" + ", ".join(f"[{x:g}, {y:.3f}]" for x, y in model.points) + "]")


if __name__ == "__main__":
    main()
