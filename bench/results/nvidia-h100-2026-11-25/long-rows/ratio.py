#!/usr/bin/env python3
"""ratio.py DIR: normkit (final, final-f32) against the best peer of bench_peers.json, same call."""
import json, sys, os, math
d = sys.argv[1]
nk = {}
for f in ['final/results.json', 'final-f32/results.json']:
    for r in json.load(open(os.path.join(d, f)))['runs'][0]['results']:
        nk[(r['op'], r['m'], r['n'], r['dtype'])] = r
P = json.load(open(os.path.join(d, 'peers/bench_peers.json')))['results']
best = {}
for v in P.values():
    t = v.get('time_us')
    if t is None: continue
    dt = {'bfloat16': 'bf16', 'float32': 'f32'}[v['dtype']]
    k = (v['op'], v['M'], v['N'], dt)
    if k not in best or t < best[k][0]: best[k] = (t, v['impl'])
rows = []
print('| op | shape | dtype | normkit µs | best peer µs | ratio (peer/normkit) | normkit % of copy |')
print('|---|---|---|---:|---:|---:|---:|')
order = ['rms_fwd', 'addrms_fwd', 'ln_fwd', 'rms_bwd', 'ln_bwd']
for k in sorted(best, key=lambda k: (order.index(k[0]) if k[0] in order else 9, k[1] * k[2], k[3])):
    if k not in nk: continue
    n = nk[k]['us']; p, imp = best[k]
    rows.append(p / n)
    pc = nk[k].get('pct_copy')
    small = k[1] * k[2] * 4 < 4e6
    print(f"| {k[0]} | {k[1]}x{k[2]} | {k[3]} | {n:.2f} | {p:.2f} ({imp}) | {p/n:.2f} | {'–' if small else f'{pc:.0f}%'} |")
g = math.exp(sum(map(math.log, rows)) / len(rows))
print(f"\n{sum(1 for r in rows if r >= 1.0)} of {len(rows)} cells at or ahead of the best peer (eager, torch.compile, Liger); geometric mean {g:.2f}×")
