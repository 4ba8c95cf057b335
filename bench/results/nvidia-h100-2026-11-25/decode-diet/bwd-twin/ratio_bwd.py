#!/usr/bin/env python3
"""ratio_bwd.py DIR: the backward cells the peers ran in DIR/peers (same call) against normkit's mean
of the given runs (default new1,new2 of the A/B)."""
import json, os, sys, statistics as st
d = sys.argv[1]; tags = (sys.argv[2] if len(sys.argv) > 2 else "new1,new2").split(",")
nk = {}
for t in tags:
    for r in json.load(open(os.path.join(d, t, "results.json")))["runs"][0]["results"]:
        nk.setdefault((r["op"], r["m"], r["n"], r["dtype"]), []).append(r["us"])
best = {}
for v in json.load(open(os.path.join(d, "peers", "bench_peers.json")))["results"].values():
    t = v.get("time_us")
    if t is None: continue
    k = (v["op"], v["M"], v["N"], {"bfloat16": "bf16", "float32": "f32"}[v["dtype"]])
    if k not in best or t < best[k][0]: best[k] = (t, v["impl"])
print("| op | shape | dtype | normkit µs | best peer µs | ratio (peer/normkit) |")
print("|---|---|---|---:|---:|---:|")
for k in sorted(best, key=lambda k: (k[0], k[1] * k[2])):
    if k not in nk: continue
    n = st.mean(nk[k]); p, imp = best[k]
    print(f"| {k[0]} | {k[1]}x{k[2]} | {k[3]} | {n:.2f} | {p:.2f} ({imp}) | {p / n:.2f} |")
