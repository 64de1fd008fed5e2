#!/usr/bin/env python3
"""Fits the per-level numbers of the hierarchical NCCL model (docs/simulator.md,
"Hierarchical NCCL model"; profile section `nccl`, docs/formats/profile.md) to the published
nccl-tests logs in datasets/clusters/measurements/, one level at a time, the others fixed.

  python3 scripts/fit_nccl_model.py      # prints each source's fitted numbers

For one log, the algorithm NCCL runs at large sizes and the level that binds it are given
(below, with the reason); the time of size n is then
    t(n) = alpha + hops * 2.7 us + moved(n) / (X * efficiency(n))
with moved(n) the bytes through the binding level (ring: n * bus factor; NVLS inside a host:
n; tree between two hosts: n over the rails' NICs) and X the level's bandwidth (rails x one
NIC between hosts). The fit:
  1. alpha: the least time of the sizes <= 1 KiB when the log has them, else the given one
     (the latency of the same level measured elsewhere; cited in docs/calibration.md);
  2. X: the bandwidth the largest size implies (efficiency 1 there);
  3. efficiency at every whole decade of size from 1 KiB in the log's range, interpolated in log10(size)
     from the efficiencies each measured size implies (flat outside the range).
The relative errors of the model on each log are the benchmark's (bench/collective_fidelity).
"""
import math
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "datasets", "clusters",
                    "measurements")


def read_log(name):
    """(size in bytes, out-of-place time in seconds) of an nccl-tests log."""
    rows = []
    with open(os.path.join(HERE, name)) as f:
        for line in f:
            cols = line.split()
            if not cols or line.lstrip().startswith("#") or not cols[0].isdigit():
                continue
            # size count type redop [root] time algbw busbw ...
            t = cols[5] if cols[4] == "-1" else cols[4]
            rows.append((int(cols[0]), float(t) * 1e-6))
    return rows


# Latency of one host-to-host hop: NCCL's tuner's network step of a ring with the LL protocol
# (src/graph/tuning.cc, hwLat NET ring LL, 2.7 us; its tree level is 5.0, about two hops).
HOP_S = 2.7e-6


def fit(rows, moved_factor, alpha=None, small_hops=0, large_hops=0):
    """alpha, X (bytes/s), efficiency knots [(log10 size, e)] for t = alpha + hops * HOP_S +
    f n / (X e), with `small_hops` the hops of the algorithm small sizes run (the tree's)
    and `large_hops` those of the one whose bandwidth is fitted."""
    if alpha is None:
        small = [t for n, t in rows if n <= 1024]
        assert small, "no small sizes: give alpha"
        alpha = min(small) - small_hops * HOP_S
    implied = []
    for n, t in rows:
        lat = alpha + large_hops * HOP_S
        if t > lat:
            implied.append((math.log10(n), moved_factor * n / (t - lat)))
    x_bw = implied[-1][1]
    eff = [(x, bw / x_bw) for x, bw in implied]
    knots = []
    # Below 1 KiB the latency is the time; the efficiency there is noise.
    lo, hi = max(3, math.ceil(eff[0][0])), math.floor(eff[-1][0])
    for d in range(lo, hi + 1):
        for (x0, e0), (x1, e1) in zip(eff, eff[1:]):
            if x0 <= d <= x1:
                e = e0 + (e1 - e0) * (d - x0) / (x1 - x0)
                knots.append((d, round(min(2.0, max(1e-4, e)), 4)))
                break
    if not knots or knots[0][0] > max(3, eff[0][0]):
        knots.insert(0, (round(eff[0][0], 3), round(eff[0][1], 4)))
    if knots[-1][0] < eff[-1][0]:
        knots.append((round(eff[-1][0], 3), 1.0))
    return alpha, x_bw, knots


# (log, what binds and why, bus factor of the bytes through it, rails, given alpha or None,
#  hops of small sizes' algorithm, hops of the fitted one)
SOURCES = [
    # 2 whole A3 Mega VMs (8 NICs each): NVLS inside, a tree between the two hosts, which moves
    # n through each host's 8 NICs (docs/simulator.md); the 338.8 GB/s busbw is above what a
    # ring over 8 NICs of 200 Gb/s could carry, so NCCL ran the tree.
    ("h100_a3mega_2x8.all_reduce_perf.log", "inter, NVLS tree over 8 NICs", 1.0, 8, None, 0, 0),
    # 2 whole A4 VMs (8 RDMA NICs each): the same; the log starts at 8 MiB, alpha = the
    # 2-node H20 NVLS-tree run's 46 us (github.com/NVIDIA/nccl issue 1244).
    ("b200_gke_a4_2x8.all_reduce_perf.log", "inter, NVLS tree over 8 NICs", 1.0, 8, 46e-6, 0, 0),
    # 4 CoreWeave HGX A100 nodes, 32 ranks, no NVLS: the ring over 8 HDR NICs per node at
    # large sizes (2 x 2 hops beyond two hosts), the tree at small ones (2 x 1 hops).
    ("a100_coreweave_32.all_reduce_perf.log", "inter, ring over 8 NICs", 2 * 31 / 32, 8, None,
     2, 4),
]


def main():
    for name, what, factor, rails, alpha, small_hops, large_hops in SOURCES:
        a, x_bw, knots = fit(read_log(name), factor, alpha, small_hops, large_hops)
        per = x_bw / rails
        print(f"{name}: {what}")
        print(f"  latency {a * 1e6:.2f} us, bandwidth {x_bw / 1e9:.1f} GB/s"
              + (f" = {rails} x {per / 1e9:.2f} GB/s per NIC" if rails > 1 else ""))
        print("  efficiency: [" + ", ".join(f"[{x:g}, {e:g}]" for x, e in knots) + "]")


if __name__ == "__main__":
    main()
