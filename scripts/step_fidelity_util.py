"""Helpers the step-fidelity scripts share (scripts/h100_step_fidelity.py,
scripts/h200_llama_fidelity.py): running the placer binary, reading its step time and peak
memory from the report, and the summary statistics (MAPE, median, Spearman rank
correlation) of predicted against measured steps."""

import csv
import os
import re
import statistics
import subprocess
import sys


def read_csv(path, who, columns=(), numeric=()):
    """The rows of a CSV file as dicts; exits with one line naming `who`, the file and the
    field when the file cannot be read, lacks one of `columns`, or holds a value of a
    `numeric` column that is not a number (empty values pass: rows that did not run)."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                sys.exit(f"{who}: {path}: no column '{missing[0]}'")
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        sys.exit(f"{who}: {path}: {e}")
    for line, r in enumerate(rows, start=2):
        for c in numeric:
            try:
                if r[c]:
                    float(r[c])
            except (TypeError, ValueError):
                sys.exit(f"{who}: {path}:{line}: column '{c}': '{r[c]}' is not a number")
    return rows


def run(cmd, who):
    """Runs cmd; on failure exits naming `who` and the command, with the output's tail."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit(f"{who}: {' '.join(cmd)} failed:\n{p.stdout[-2000:]}")
    return p.stdout


def ranks(values):
    """Ranks from 0, ties sharing their mean rank."""
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
    """The time after `label` in a placer report ("step time   12.3 ms"), in seconds."""
    m = re.search(label + r"\s+([0-9.]+)\s*(us|ms|s)\b", text)
    if not m:
        return None
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


def parse_gib(text):
    """The report's peak memory in GiB."""
    m = re.search(r"peak memory\s+([0-9.]+)\s*(MiB|GiB)", text)
    if not m:
        return None
    return float(m.group(1)) * (1 / 1024 if m.group(2) == "MiB" else 1.0)


def summary(label, measured, predicted):
    """One line: count, MAPE, median and max absolute error, signed mean, Spearman."""
    errs = [(p - m) / m for m, p in zip(measured, predicted)]
    absolute = [abs(e) for e in errs]
    rho = spearman(measured, predicted) if len(errs) > 1 else float("nan")
    return (f"{label} {len(errs)}: MAPE {statistics.fmean(absolute) * 100:.1f}%, median "
            f"{statistics.median(absolute) * 100:.1f}%, max {max(absolute) * 100:.1f}%, signed "
            f"mean {statistics.fmean(errs) * 100:+.1f}%, Spearman {rho:.3f}")


def write_csv(path, rows):
    """The per-row dicts as a CSV with their keys as the header."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def add_run_options(ap, root, work):
    """--placer, --work (default `work`), --csv and --configs, which both scripts take."""
    ap.add_argument("--placer", default=os.path.join(root, "build/placer"))
    ap.add_argument("--work", default=work)
    ap.add_argument("--csv", help="write the rows here")
    ap.add_argument("--configs", help="comma-separated names to keep (default: every row)")


def keep_configs(rows, configs):
    """The rows whose name is in the comma-separated `configs` (all when it is empty)."""
    if not configs:
        return rows
    keep = set(configs.split(","))
    return [r for r in rows if r["name"] in keep]
