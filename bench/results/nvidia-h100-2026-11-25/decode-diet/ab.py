#!/usr/bin/env python3
"""ABBA summary: ab.py DIR OLD1,OLD2 NEW1,NEW2 -> markdown table of the mean µs per cell of the old
and the new runs (same runner in both binaries) and new/old; `us` is the runner's policy (decode
sizes: L2-resident inputs, at most 16 rotated sets)."""
import json, sys, os, statistics as st
d, olds, news = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
def load(tag):
    out = {}
    for sub in (tag, tag + "-f32"):
        p = os.path.join(d, sub, "results.json")
        if not os.path.exists(p): continue
        for r in json.load(open(p))["runs"][0]["results"]:
            out[(r["op"], r["m"], r["n"], r["dtype"])] = r
    return out
runs = {t: load(t) for t in olds + news}
keys = sorted(set().union(*[set(v) for v in runs.values()]), key=lambda k: (k[0], k[3], k[2], k[1]))
print("| op | shape | dtype | old µs | new µs | new/old time | old runs | new runs |")
print("|---|---|---|---:|---:|---:|---|---|")
worst = []
for k in keys:
    o = [runs[t][k]["us"] for t in olds if k in runs[t]]
    n = [runs[t][k]["us"] for t in news if k in runs[t]]
    if not o or not n: continue
    om, nm = st.mean(o), st.mean(n)
    worst.append((nm / om, k))
    print(f"| {k[0]} | {k[1]}x{k[2]} | {k[3]} | {om:.2f} | {nm:.2f} | {nm/om:.3f} | {' / '.join(f'{x:.2f}' for x in o)} | {' / '.join(f'{x:.2f}' for x in n)} |")
worst.sort()
print(f"\ncells {len(worst)}; best {worst[0][0]:.3f} {worst[0][1]}; worst {worst[-1][0]:.3f} {worst[-1][1]}")
print("slower by more than 1%: " + (", ".join(f"{k[0]} {k[1]}x{k[2]} {k[3]} {r:.3f}" for r, k in worst if r > 1.01) or "none"))
