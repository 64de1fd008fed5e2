#!/usr/bin/env python3
# Table and summaries from learned_placers --csv files (rows with every method only): step
# time per method, geomean against the best classical placer and anneal, rows won, and
# Placeto against the RNN placers. Usage: bench/learned_placers_summary.py A.csv [B.csv ...]
import csv, sys, math, collections
rows = collections.OrderedDict()
for f in sys.argv[1:]:
    for r in csv.DictReader(open(f)):
        key = (r['graph'], r['devices'])
        rows.setdefault(key, {})[r['method']] = r
methods = ['anneal', 'colocrl', 'hdp', 'placeto', 'gdp']
print("graph           k   ops | classical         ms | " + " | ".join(f"{m:>8}    tb/ev" for m in methods))
full = []
for (g, k), d in rows.items():
    if not all(m in d for m in methods + ['classical']): continue
    full.append(d)
    c = d['classical']
    cells = []
    for m in methods:
        x = d[m]; tb = x['to_best']
        cells.append(f"{float(x['step_ms']):8.3f} {('-' if tb=='-1' else tb)+'/'+x['evaluations']:>8}")
    print(f"{g:15} {k:>1} {c['ops']:>5} | {c['detail']:12} {float(c['step_ms']):8.3f} | " + " | ".join(cells))
def gm(v): return math.exp(sum(map(math.log, v)) / len(v)) if v else float('nan')
n = len(full)
print(f"# {n} complete rows")
best_cls = lambda d: float(d['classical']['step_ms'])
for m in methods:
    r = [float(d[m]['step_ms']) / best_cls(d) for d in full]
    ra = [float(d[m]['step_ms']) / float(d['anneal']['step_ms']) for d in full]
    wins = sum(1 for d in full if float(d[m]['step_ms']) < min(best_cls(d), *(float(d[o]['step_ms']) for o in methods if o != m)))
    print(f"# {m:8}: geomean / best classical {gm(r):.4f}, / anneal {gm(ra):.4f}; best of all methods on {wins} of {n} rows")
for other in ['colocrl', 'hdp']:
    st = gm([float(d['placeto']['step_ms']) / float(d[other]['step_ms']) for d in full])
    tb = gm([max(1, int(d['placeto']['to_best'])) / max(1, int(d[other]['to_best'])) for d in full])
    print(f"# placeto / {other}: geomean step time {st:.4f}, geomean to-best (simulations) {tb:.4f}")
