#!/usr/bin/env python3
"""PyTorch peers of normkit's FP8 forward ops: RMSNorm (and residual add + RMSNorm) whose output is
quantised to FP8, timed the way normkit-bench times its own ops, with the same byte model.

Ops (x bf16 by default, y in --fp8-format, e4m3 = torch.float8_e4m3fn by default):
  rms_fwd_fp8      y = rmsnorm(x)*w (fp32 math); amax = max|y|; y_q = fp8(clamp(y*scale)); scale is a
                   one-element f32 DEVICE tensor (delayed scaling); also returns scale_inv = 1/scale
                   and rstd (M f32, what a training step saves for its backward)
  rms_fwd_fp8_t    the same plus the naive transposed copy yT = y_q.t().contiguous() (N x M, FP8)
  addrms_fwd_fp8   h = x + r (x's dtype); y = rmsnorm(h)*w; amax; y_q per tensor; returns y_q, h, amax,
                   rstd
  rms_fwd_fp8_row  per-row dynamic scaling: amax_r = max|y| per row, scale_r = max_finite /
                   max(amax_r, 2^-40), y_q = fp8(clamp(y*scale_r)); returns y_q, 1/scale_r (M f32), rstd
  addrms_fwd_fp8_row  h = x + r (x's dtype), then rms_fwd_fp8_row of h (the fused add + RMSNorm +
                   per-token quantisation of inference engines); returns y_q, h, 1/scale_r, rstd
Implementations:
  compile  torch.compile (default mode, dynamic=False) of the functions below
  eager    the same functions run op by op (every intermediate goes through memory)

Byte model (normkit's benches/src/ops.rs, `Traffic`; the Rust tests check the table below):
  bytes = (mats*e + fp8_mats)*M*N + vecs*N*e + stats*M*4 + scalars*4,  e = x's element size,
  counting every operand read once and every output written once, FP8 matrices at 1 byte/element.
So GB/s here and normkit-bench's GB/s compare directly (normkit-bench merge --peers).

Timing (the policy of normkit-bench and peers/bench_peers.py):
  - inputs rotate over several sets, added until they total --rotate-factor L2 sizes (at most
    --max-sets), so rotated data has left the L2 between two uses of a set;
  - outputs are allocated by each call: PyTorch's caching allocator hands it the block the
    previous call freed, so they stay at one address (normkit-bench's main figure writes one
    output set on every case that rotates, for that reason);
  - `per_graph` back-to-back calls (about --graph-ms of GPU time, at most --graph-max-calls) are
    captured in one CUDA graph on a side stream, after two warm-up calls per set (torch.compile
    compiles there), and the graph is replayed --graph-replays times: time per call = median replay
    time / per_graph (CUDA events). Capture is tried in 'global' then 'relaxed' mode; if both
    fail, the calls are timed back to back with CUDA events instead (timing = "events");
  - the copy ceiling (device-to-device copy of 2 GiB each way, read + write counted) is measured in
    the same run, before the cases; pct_copy = GB/s / that ceiling.
Each (op, impl, shape) is also checked once against a reference (dequantised y_q, amax, scale_inv,
yT bitwise, h, rstd); a failed check is recorded as acc_ok = false.

Output: OUT/TAG.json in bench_peers.py's layout (env, copy, impl_info, results keyed
"op|impl|MxN|dtype" with op, impl, M, N, dtype, y_dtype, status, GBps, time_us, bytes, ...), which
`normkit-bench merge normkit.json --peers OUT/TAG.json --out DIR` reads; OUT/TAG.md, a summary.

Usage (GPU):   python3 fp8_peers.py --out OUT
Smoke (CPU):   python3 fp8_peers.py --cpu-smoke --out /tmp/fp8-smoke   (tiny shapes, no graphs)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import site
import statistics
import subprocess
import sys
import time
import traceback

ALL_OPS = ["rms_fwd_fp8", "rms_fwd_fp8_t", "addrms_fwd_fp8", "rms_fwd_fp8_row", "addrms_fwd_fp8_row"]
ALL_IMPLS = ["compile", "eager"]
DEFAULT_SHAPES = "4096x1024,32768x4096,2048x8192,2048x65536,8x4096,128x4096"
FULL_EXTRA_SHAPES = "16384x16384"
SMOKE_SHAPES = "64x256,8x128,5x40"
EPS = 1e-6
ROW_AMAX_FLOOR = 2.0 ** -40
# The FP8 formats: torch dtype name and largest finite value.
FORMATS = {
    "e4m3": ("float8_e4m3fn", 448.0),
    "e5m2": ("float8_e5m2", 57344.0),
    "e4m3fnuz": ("float8_e4m3fnuz", 240.0),
    "e5m2fnuz": ("float8_e5m2fnuz", 57344.0),
}
# Relative error of one rounding to the format (3 or 2 mantissa bits), for the accuracy check.
FORMAT_ULP = {"e4m3": 2.0 ** -4, "e5m2": 2.0 ** -3, "e4m3fnuz": 2.0 ** -4, "e5m2fnuz": 2.0 ** -3}

# op: (M x N matrices in x's dtype, M x N FP8 matrices, N-vectors in x's dtype, M-vectors of f32,
#      f32 scalars) -- normkit's `Op::traffic`, read and written alike.
TRAFFIC = {
    "rms_fwd_fp8": (1, 1, 1, 1, 3),
    "rms_fwd_fp8_t": (1, 2, 1, 1, 3),
    "addrms_fwd_fp8": (3, 1, 1, 1, 2),
    "rms_fwd_fp8_row": (1, 1, 1, 2, 0),
    "addrms_fwd_fp8_row": (3, 1, 1, 2, 0),
}
TRAFFIC_WORDS = {
    "rms_fwd_fp8": "x | y_q | w | rstd | scale, amax, scale_inv",
    "rms_fwd_fp8_t": "x | y_q, yT | w | rstd | scale, amax, scale_inv",
    "addrms_fwd_fp8": "x, residual, residual_out | y_q | w | rstd | scale, amax",
    "rms_fwd_fp8_row": "x | y_q | w | rstd, scale_inv (M) | -",
    "addrms_fwd_fp8_row": "x, residual, residual_out | y_q | w | rstd, scale_inv (M) | -",
}

torch = None  # imported in main(), after --site


def log(*a):
    print(*a, flush=True)


def op_bytes(op, m, n, elt):
    """Bytes read plus bytes written by one call (normkit's byte model)."""
    mats, fp8_mats, vecs, stats, scalars = TRAFFIC[op]
    return (mats * elt + fp8_mats) * m * n + vecs * n * elt + stats * m * 4 + scalars * 4


def check_byte_model():
    """The numbers of normkit's `fp8_byte_model` test (bf16 x at 4096 x 1024)."""
    m, n = 4096, 1024
    xs, q, w, st = m * n * 2, m * n, n * 2, m * 4
    want = {
        "rms_fwd_fp8": 12_601_356,
        "rms_fwd_fp8_t": 12_601_356 + q,
        "addrms_fwd_fp8": 3 * xs + q + w + 8 + st,
        "rms_fwd_fp8_row": xs + q + w + 2 * st,
        "addrms_fwd_fp8_row": 3 * xs + q + w + 2 * st,
    }
    for op, b in want.items():
        got = op_bytes(op, m, n, 2)
        if got != b:
            raise AssertionError(f"byte model of {op}: {got} != {b}")
    return want


# ----------------------------------------------------------------------------------------------
# the ops, as PyTorch code (compiled or eager)
# ----------------------------------------------------------------------------------------------
def make_fns(q_dtype, fmax):
    """The four ops as plain functions of tensors, for one FP8 dtype and its largest value."""

    def norm(x, w):
        xf = x.float()
        rstd = torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)
        return xf * rstd * w.float(), rstd

    def rms_fwd_fp8(x, w, scale):
        y, rstd = norm(x, w)
        amax = y.abs().amax()
        y_q = (y * scale).clamp(-fmax, fmax).to(q_dtype)
        return y_q, amax, scale.reciprocal(), rstd

    def rms_fwd_fp8_t(x, w, scale):
        y, rstd = norm(x, w)
        amax = y.abs().amax()
        y_q = (y * scale).clamp(-fmax, fmax).to(q_dtype)
        return y_q, y_q.t().contiguous(), amax, scale.reciprocal(), rstd

    def addrms_fwd_fp8(x, r, w, scale):
        h = x + r
        y, rstd = norm(h, w)
        amax = y.abs().amax()
        y_q = (y * scale).clamp(-fmax, fmax).to(q_dtype)
        return y_q, h, amax, rstd

    def rms_fwd_fp8_row(x, w):
        y, rstd = norm(x, w)
        amax_r = y.abs().amax(dim=-1, keepdim=True)
        scale_r = fmax / amax_r.clamp(min=ROW_AMAX_FLOOR)
        y_q = (y * scale_r).clamp(-fmax, fmax).to(q_dtype)
        return y_q, scale_r.reciprocal(), rstd

    def addrms_fwd_fp8_row(x, r, w):
        h = x + r
        y_q, scale_inv, rstd = rms_fwd_fp8_row(h, w)
        return y_q, h, scale_inv, rstd

    return {"rms_fwd_fp8": rms_fwd_fp8, "rms_fwd_fp8_t": rms_fwd_fp8_t, "addrms_fwd_fp8": addrms_fwd_fp8,
            "rms_fwd_fp8_row": rms_fwd_fp8_row, "addrms_fwd_fp8_row": addrms_fwd_fp8_row}


def make_impls(names, q_dtype, fmax):
    impls, info, skipped = {}, {}, {}
    for name in names:
        try:
            fns = make_fns(q_dtype, fmax)
            if name == "eager":
                impls[name] = fns
                info[name] = f"torch {torch.__version__} eager"
            elif name == "compile":
                import torch._dynamo as dynamo

                for k in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                          "accumulated_recompile_limit"):
                    if hasattr(dynamo.config, k):
                        setattr(dynamo.config, k, 1024)
                impls[name] = {op: torch.compile(f, dynamic=False) for op, f in fns.items()}
                info[name] = f"torch.compile(mode=default, dynamic=False), torch {torch.__version__}"
            else:
                raise ValueError(f"unknown impl {name} (known: {', '.join(ALL_IMPLS)})")
            log(f"[impl] {name}: {info[name]}")
        except Exception as e:  # noqa: BLE001 - every failure is recorded
            skipped[name] = f"{type(e).__name__}: {e}"[:600]
            log(f"[impl] {name}: SKIPPED ({skipped[name]})")
    return impls, info, skipped


def make_inputs(op, m, n, dtype, fmax, device, gen):
    """One input set, as the call's positional arguments: random normal x (and r), w ~ 1 + 0.1 N(0,1),
    a one-element f32 device scale that maps |y| ~ 8 to the format's largest value."""

    def rn(*shape, scale=1.0, shift=0.0):
        return (torch.randn(*shape, generator=gen, device=device, dtype=torch.float32) * scale + shift).to(dtype)

    x = rn(m, n)
    w = rn(n, scale=0.1, shift=1.0)
    scale = torch.full((1,), fmax / 8.0, device=device, dtype=torch.float32)
    if op == "addrms_fwd_fp8":
        return (x, rn(m, n), w, scale)
    if op == "rms_fwd_fp8_row":
        return (x, w)
    if op == "addrms_fwd_fp8_row":
        return (x, rn(m, n), w)
    return (x, w, scale)


# ----------------------------------------------------------------------------------------------
# accuracy: one call against a reference
# ----------------------------------------------------------------------------------------------
def check(op, outs, args, fmt, fmax):
    """Relative L2 errors of each output against a float64 reference (float32 above 32 M
    elements), and whether all are within tolerance: y_q dequantised within one rounding to the
    format, amax, rstd, h and the per-row scale_inv within 1e-2, the per-tensor scale_inv exact
    to 1e-6, yT bitwise y_q's transpose."""
    ref_dt = torch.float32 if args[0].numel() > (1 << 25) else torch.float64
    if op == "addrms_fwd_fp8":
        x, r, w, scale = args
        y_q, h, amax, rstd_out = outs
        h_ref = x.to(ref_dt) + r.to(ref_dt)
        h_in = h_ref.to(x.dtype).to(ref_dt)  # the rounded h is what is normalised
    elif op == "rms_fwd_fp8_row":
        x, w = args
        y_q, scale_inv, rstd_out = outs
        h_in = x.to(ref_dt)
    elif op == "addrms_fwd_fp8_row":
        x, r, w = args
        y_q, h, scale_inv, rstd_out = outs
        h_ref = x.to(ref_dt) + r.to(ref_dt)
        h_in = h_ref.to(x.dtype).to(ref_dt)
    else:
        x, w, scale = args
        if op == "rms_fwd_fp8_t":
            y_q, y_t, amax, scale_inv, rstd_out = outs
        else:
            y_q, amax, scale_inv, rstd_out = outs
        h_in = x.to(ref_dt)
    rstd = torch.rsqrt(h_in.square().mean(-1, keepdim=True) + EPS)
    y = h_in * rstd * w.to(ref_dt)

    def rel(got, want):
        got = got.to(ref_dt).reshape(want.shape)
        if not bool(torch.isfinite(got).all()):
            return float("nan")
        den = torch.linalg.vector_norm(want).item()
        num = torch.linalg.vector_norm(got - want).item()
        return num / den if den > 0 else num

    errs, tol = {}, {}

    def add(name, err, limit):
        errs[name], tol[name] = err, limit

    add("rstd", rel(rstd_out, rstd.reshape(-1)), 1e-2)
    if op in ("rms_fwd_fp8_row", "addrms_fwd_fp8_row"):
        amax_r = y.abs().amax(dim=-1)
        inv = scale_inv.to(ref_dt).reshape(-1)
        add("scale_inv", rel(inv, amax_r.clamp(min=ROW_AMAX_FLOOR) / fmax), 1e-2)
        add("y", rel(y_q.to(ref_dt) * inv.reshape(-1, 1), y), FORMAT_ULP[fmt])
        if op == "addrms_fwd_fp8_row":
            add("h", rel(h, h_ref), 1e-2)
    else:
        s = scale.to(ref_dt).reshape(())
        add("y", rel(y_q.to(ref_dt) / s, y), FORMAT_ULP[fmt])
        add("amax", rel(amax, y.abs().amax()), 1e-2)
        if op == "addrms_fwd_fp8":
            add("h", rel(h, h_ref), 1e-2)
        else:
            add("scale_inv", rel(scale_inv, 1.0 / s), 1e-6)
        if op == "rms_fwd_fp8_t":
            same = tuple(y_t.shape) == (y_q.shape[1], y_q.shape[0]) and bool(
                torch.equal(y_t.view(torch.uint8), y_q.t().contiguous().view(torch.uint8)))
            add("yT_mismatch", 0.0 if same else 1.0, 0.0)
    ok = all(v == v and v <= tol[k] for k, v in errs.items())
    return errs, ok


# ----------------------------------------------------------------------------------------------
# timing
# ----------------------------------------------------------------------------------------------
def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def n_sets_for(nbytes, l2, rotate_factor, max_sets):
    if nbytes >= rotate_factor * l2:
        return 1
    return max(1, min(max_sets, math.ceil(rotate_factor * l2 / max(nbytes, 1))))


def graph_time(fn, sets, per_graph, replays, mode):
    """Microseconds per call from replays of one CUDA graph of `per_graph` calls over the sets."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            for a in sets:
                fn(*a)
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream, capture_error_mode=mode):
        for i in range(per_graph):
            fn(*sets[i % len(sets)])
    graph.replay()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        per_call.append(start.elapsed_time(end) * 1e3 / per_graph)
    del graph
    return {"time_us": statistics.median(per_call), "us_min": min(per_call), "us_max": max(per_call),
            "per_graph": per_graph, "timing": "graph", "graph_mode": mode}


def event_time(fn, sets, calls, reps, device):
    """Fallback (and the CPU smoke): `calls` back-to-back calls timed as one, median of `reps`."""
    for a in sets:
        fn(*a)
    sync(device)
    per_call = []
    for _ in range(reps):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for i in range(calls):
                fn(*sets[i % len(sets)])
            end.record()
            end.synchronize()
            per_call.append(start.elapsed_time(end) * 1e3 / calls)
        else:
            t0 = time.perf_counter()
            for i in range(calls):
                fn(*sets[i % len(sets)])
            per_call.append((time.perf_counter() - t0) * 1e6 / calls)
    return {"time_us": statistics.median(per_call), "us_min": min(per_call), "us_max": max(per_call),
            "per_graph": calls, "timing": "events" if device == "cuda" else "wall"}


def copy_ceiling(device, reps, mem_bytes):
    """Device-to-device copy, read + write counted: 2 GiB each way (at most 1/8 of the memory), then
    256 MiB. The first entry is the ceiling."""
    out = []
    sizes = [min(2 << 30, max(mem_bytes // 8, 1 << 20)), 256 << 20] if device == "cuda" else [64 << 20]
    for nbytes in sizes:
        src = torch.randint(-(2 ** 31), 2 ** 31 - 1, (nbytes // 4,), dtype=torch.int32, device=device)
        dst = torch.empty_like(src)
        r = event_time(lambda: dst.copy_(src), [()], 1, reps, device)
        ok = bool(torch.equal(dst, src))
        gbps = 2 * nbytes / (r["time_us"] * 1e-6) / 1e9
        out.append({"bytes_each_way": nbytes, "GBps": gbps, "median_us": r["time_us"], "min_us": r["us_min"],
                    "copy_ok": ok, "timing": r["timing"]})
        log(f"[copy] {nbytes >> 20} MiB each way: {gbps:.0f} GB/s (median {r['time_us']:.1f} us), ok={ok}")
        del src, dst
    if device == "cuda":
        torch.cuda.empty_cache()
    return out


# ----------------------------------------------------------------------------------------------
# environment and output
# ----------------------------------------------------------------------------------------------
def env_info(device):
    info = {"python": sys.version.split()[0], "platform": platform.platform(), "torch": torch.__version__}
    try:
        import triton

        info["triton"] = triton.__version__
    except Exception as e:  # noqa: BLE001
        info["triton"] = f"unavailable: {e}"
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        info.update({"gpu": p.name, "sm_count": p.multi_processor_count, "l2_bytes": getattr(p, "L2_cache_size", None),
                     "mem_bytes": p.total_memory, "cc": f"{p.major}.{p.minor}", "torch_cuda": torch.version.cuda})
        q = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,pstate"
        try:
            info["nvidia_smi"] = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv"], capture_output=True,
                                                text=True, timeout=20).stdout.strip()
        except Exception as e:  # noqa: BLE001
            info["nvidia_smi"] = f"nvidia-smi failed: {e}"
    else:
        info["platform_device"] = platform.processor() or "cpu"
    return info


def markdown(res):
    lines = [f"# FP8 peers ({res['env'].get('gpu', 'cpu')}, y {res['y_format']})", ""]
    if res["copy"]:
        c = res["copy"][0]
        lines.append(f"Copy ceiling: {c['GBps']:.0f} GB/s ({c['bytes_each_way'] >> 20} MiB each way).")
    lines.append("GB/s = normkit's byte model / time per call; µs for calls under 4 MB.")
    lines += ["", "| op | impl | shape | µs | GB/s | % copy | timing | check |", "|---|---|---|---:|---:|---:|---|---|"]
    for r in res["results"].values():
        if r.get("status") != "ok":
            lines.append(f"| {r['op']} | {r['impl']} | {r['M']}x{r['N']} | {r.get('status')} | | | | |")
            continue
        pct = f"{r['pct_copy']:.0f}%" if "pct_copy" in r else "-"
        acc = {True: "ok", False: "FAIL"}.get(r.get("acc_ok"), "-")
        lines.append(f"| {r['op']} | {r['impl']} | {r['M']}x{r['N']} | {r['time_us']:.2f} | {r['GBps']:.0f} | {pct} | "
                     f"{r['timing']} | {acc} |")
    for note in res["notes"]:
        lines.append(f"\nNote: {note}")
    return "\n".join(lines) + "\n"


def parse_shapes(s):
    out = []
    for tok in [t.strip() for t in s.split(",") if t.strip()]:
        m, n = tok.lower().split("x")
        out.append((int(m), int(n)))
    return out


def main():
    global torch
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default=",".join(ALL_OPS))
    ap.add_argument("--impls", default=",".join(ALL_IMPLS))
    ap.add_argument("--shapes", default=None, help=f"MxN list (default {DEFAULT_SHAPES})")
    ap.add_argument("--full", action="store_true", help=f"add {FULL_EXTRA_SHAPES}")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"], help="x's dtype")
    ap.add_argument("--fp8-format", default="e4m3", choices=sorted(FORMATS), help="y's FP8 format")
    ap.add_argument("--out", default="fp8-peer-results")
    ap.add_argument("--tag", default="fp8_peers", help="basename of the output files")
    ap.add_argument("--graph-ms", type=float, default=3.0, help="aim for this much GPU time per graph replay")
    ap.add_argument("--graph-max-calls", type=int, default=128)
    ap.add_argument("--graph-replays", type=int, default=15)
    ap.add_argument("--rotate-factor", type=float, default=4.0, help="rotate input sets totalling this many L2s")
    ap.add_argument("--max-sets", type=int, default=16)
    ap.add_argument("--copy-reps", type=int, default=15)
    ap.add_argument("--no-copy", action="store_true")
    ap.add_argument("--no-check", action="store_true", help="skip the accuracy checks")
    ap.add_argument("--budget-s", type=float, default=1e9, help="start no new case after this many seconds")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--site", action="append", default=[], help="extra site dir (its .pth files are run)")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help=f"CPU dry run: shapes {SMOKE_SHAPES} (unless --shapes), wall-clock timing, no graphs")
    args = ap.parse_args()

    ops = [o for o in args.ops.split(",") if o]
    for o in ops:
        if o not in ALL_OPS:
            sys.exit(f"unknown op {o}; choose from {ALL_OPS}")
    check_byte_model()
    for sd in args.site:
        site.addsitedir(sd)
    try:
        import torch as _torch
    except ImportError as e:
        if args.cpu_smoke:
            log(f"[smoke] byte model checked; torch is not importable here ({e}): the PyTorch code was not run")
            return
        sys.exit(f"torch is not importable: {e}")
    torch = _torch

    dev = "cpu" if args.cpu_smoke else "cuda"
    if dev == "cuda" and not torch.cuda.is_available():
        sys.exit("CUDA is not available (--cpu-smoke for a CPU dry run)")
    shapes = parse_shapes(args.shapes or (SMOKE_SHAPES if args.cpu_smoke else DEFAULT_SHAPES))
    if args.full:
        shapes += [s for s in parse_shapes(FULL_EXTRA_SHAPES) if s not in shapes]
    dtype = getattr(torch, args.dtype)
    elt = torch.tensor([], dtype=dtype).element_size()
    q_name, fmax = FORMATS[args.fp8_format]
    q_dtype = getattr(torch, q_name)
    os.makedirs(args.out, exist_ok=True)
    t_start = time.perf_counter()

    env = env_info(dev)
    log("[env] " + json.dumps({k: v for k, v in env.items() if k != "nvidia_smi"}))
    l2 = env.get("l2_bytes") or (50 << 20)
    res = {"tool": "benches/peers/fp8_peers.py", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "env": env,
           "args": vars(args), "ops": ops, "shapes": shapes, "y_format": args.fp8_format,
           "byte_model": {"formula": "(mats*e + fp8_mats)*M*N + vecs*N*e + stats*M*4 + scalars*4",
                          "traffic": {op: {"counts": TRAFFIC[op], "operands": TRAFFIC_WORDS[op]} for op in ops}},
           "copy": [], "impls": [], "impl_info": {}, "impl_skipped": {}, "results": {}, "notes": []}
    jpath, mpath = os.path.join(args.out, f"{args.tag}.json"), os.path.join(args.out, f"{args.tag}.md")

    def save():
        with open(jpath, "w") as f:
            json.dump(res, f, indent=1, default=str)

    if not args.no_copy:
        try:
            res["copy"] = copy_ceiling(dev, args.copy_reps, env.get("mem_bytes") or (16 << 30))
        except Exception as e:  # noqa: BLE001
            res["notes"].append(f"copy ceiling failed: {e!r}")
            log(traceback.format_exc())
    copy_gbps = res["copy"][0]["GBps"] if res["copy"] else None
    impls, info, skipped = make_impls([i for i in args.impls.split(",") if i], q_dtype, fmax)
    res["impls"], res["impl_info"], res["impl_skipped"] = list(impls), info, skipped
    save()

    case = 0
    for op in ops:
        for (m, n) in shapes:
            for name, fns in impls.items():
                case += 1
                nbytes = op_bytes(op, m, n, elt)
                rec = {"op": op, "impl": name, "M": m, "N": n, "dtype": args.dtype, "y_dtype": q_name, "bytes": nbytes,
                       "n_sets": n_sets_for(nbytes, l2, args.rotate_factor, args.max_sets)}
                res["results"][f"{op}|{name}|{m}x{n}|{args.dtype}"] = rec
                if time.perf_counter() - t_start > args.budget_s:
                    rec["status"] = "skipped"
                    continue
                t0 = time.perf_counter()
                try:
                    gen = torch.Generator(device=dev)
                    gen.manual_seed(args.seed + case)
                    sets = [make_inputs(op, m, n, dtype, fmax, dev, gen) for _ in range(rec["n_sets"])]
                    fn = fns[op]
                    outs = fn(*sets[0])  # torch.compile compiles here
                    sync(dev)
                    rec["first_call_s"] = time.perf_counter() - t0
                    if not args.no_check:
                        rec["acc"], rec["acc_ok"] = check(op, outs, sets[0], args.fp8_format, fmax)
                    del outs
                    if dev == "cuda":
                        # at least bytes / copy ceiling per call: size the graph from that
                        est_us = max(nbytes / ((copy_gbps or 3000.0) * 1e9) * 1e6, 1.0)
                        per_graph = int(min(args.graph_max_calls, max(2, round(args.graph_ms * 1e3 / est_us))))
                        per_graph = max(per_graph, min(len(sets), args.graph_max_calls))
                        errs = []
                        for mode in ("global", "relaxed"):
                            try:
                                rec.update(graph_time(fn, sets, per_graph, args.graph_replays, mode))
                                break
                            except Exception as e:  # noqa: BLE001
                                errs.append(f"{mode}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300])
                                sync(dev)
                        if errs:
                            rec["graph_error"] = " | ".join(errs)
                        if "time_us" not in rec:
                            rec.update(event_time(fn, sets, per_graph, args.graph_replays, dev))
                    else:
                        rec.update(event_time(fn, sets, 3, 3, dev))
                    rec["GBps"] = nbytes / (rec["time_us"] * 1e-6) / 1e9
                    if copy_gbps:
                        rec["pct_copy"] = 100.0 * rec["GBps"] / copy_gbps
                    rec["status"] = "ok"
                    del sets
                except Exception as e:  # noqa: BLE001
                    rec["status"] = "error"
                    rec["error"] = f"{type(e).__name__}: {e}"[:800]
                    log(traceback.format_exc(limit=6))
                    try:
                        sync(dev)
                    except Exception as e2:  # a sticky CUDA error: nothing further can run
                        res["notes"].append(f"CUDA context lost after {op}|{name}|{m}x{n}: {e2!r}")
                        save()
                        raise
                rec["wall_s"] = time.perf_counter() - t0
                msg = f"[{op}] {name:8s} {m}x{n} {args.dtype}->{args.fp8_format}"
                if rec["status"] == "ok":
                    acc = {True: "ok", False: "FAIL " + json.dumps(rec.get("acc"))}.get(rec.get("acc_ok"), "-")
                    msg += f" {rec['time_us']:9.2f} us {rec['GBps']:7.1f} GB/s [{rec['timing']}] check {acc}"
                else:
                    msg += f" {rec['status']} {rec.get('error', '')}"
                log(msg)
            if dev == "cuda":
                torch.cuda.empty_cache()
            save()

    if dev == "cuda":
        res["env"]["nvidia_smi_end"] = env_info(dev).get("nvidia_smi")
    res["total_s"] = time.perf_counter() - t_start
    save()
    md = markdown(res)
    with open(mpath, "w") as f:
        f.write(md)
    log("\n" + md)
    log(f"[done] {res['total_s']:.0f}s; wrote {jpath} and {mpath}")
    failed = [k for k, r in res["results"].items() if r.get("status") == "error" or r.get("acc_ok") is False]
    if failed:
        log(f"[done] {len(failed)} cases failed or failed their check: {', '.join(failed[:8])}")
        sys.exit(1)


if __name__ == "__main__":
    main()
