"""Stacks and host arrays (issue #23 items 1, 2 and 5): images/s of a (B, H, W) stack call
against a Python loop of single calls and cuDNN with the stack as its batch; NumPy end to end
against the pinned copy time of its input and output; what each way of getting pageable NumPy
memory to the card costs. Writes benchmarks/results/stacks_<device>.json and .png.

    python benchmarks/stacks.py [--out benchmarks/results] [--quick]

Device timings: median of 20 with CUDA events around the call (the call's Python included; the
stack, loop and peer timed in the same run). Host end-to-end timings: the call is synchronous,
so the median of 20 wall-clock times (time.perf_counter) of the whole call.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
from pathlib import Path

import numpy as np


def event_median(fn, runs=20, warmup=3):
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def wall_median(fn, runs=20, warmup=2):
    """Wall-clock median (ms) of synchronous calls, after `warmup` calls."""
    from gpu_core import wall_median as timed  # benchmarks/ is sys.path[0] when run as a script

    for _ in range(warmup):
        fn()
    return timed(fn, runs)


def mape_pct(out, ref):
    out = np.asarray(out, dtype=np.float64)
    return float(100 * np.mean(np.abs(out - ref) / np.maximum(np.abs(ref), 1e-30)))


def fft_ref(img, kernel, mode):
    import scipy.signal

    return scipy.signal.fftconvolve(img.astype(np.float64), kernel[::-1, ::-1], mode=mode)


def stack_rows(B, size, k, precisions, runs, quick):
    """Stack call vs loop of plan calls vs loop of correlate2d vs cuDNN (batch = the stack)."""
    import torch
    import torch.nn.functional as F

    import tensorconv as tc

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    rng = np.random.default_rng(0)
    kernel = rng.random((k, k))
    host = rng.random((B, size, size)).astype(np.float32)
    rows = []
    for prec in precisions:
        dt = torch.float16 if prec == "fp16fp32" else torch.float32
        stack = torch.as_tensor(host, device="cuda").to(dt)
        p = tc.plan(kernel, (size, size), mode="same", precision=prec, device="cuda")
        out = p(stack)
        ref = fft_ref(host[0].astype(np.float16 if dt == torch.float16 else np.float32), kernel,
                      "same")
        err = mape_pct(out[0].float().cpu().numpy(), ref)
        base = {"precision": prec, "image": [size, size], "kernel": [k, k], "batch": B,
                "timing": "kernel", "runs": runs, "mode": "same"}

        def add(impl, ms, **extra):
            rows.append({"impl": impl, **base, "median_ms": ms, "images_per_s": B / ms * 1e3,
                         **extra})
            print(f"  {impl:34s} {prec:8s} {B}x{size}^2 k={k}: {ms:9.3f} ms  "
                  f"{B / ms * 1e3:10.1f} img/s", flush=True)

        add(p.method, event_median(lambda: p(stack), runs), variant="stack", mape_pct=err,
            extra_bytes=int(p.workspace_bytes))
        add(p.method, event_median(lambda: [p(stack[i]) for i in range(B)], runs),
            variant="loop_of_plan_calls")
        kd = torch.as_tensor(kernel, device="cuda")
        add(p.method, event_median(
            lambda: [tc.correlate2d(stack[i], kernel, "same", precision=prec)
                     for i in range(B)], 5 if quick else runs, warmup=1),
            variant="loop_of_correlate2d")
        w = kd.to(dt)[None, None]
        x = stack[:, None]
        pad = (k - 1) // 2
        cudnn = event_median(lambda: F.conv2d(x, w, padding=pad), runs)
        y = F.conv2d(x, w, padding=pad)
        add("peer:torch_conv2d", cudnn,
            mape_pct=mape_pct(y[0, 0].float().cpu().numpy(), ref))
        del stack, out, x, y
        torch.cuda.empty_cache()
    return rows


def batching_rows(runs):
    """Per-image time of a stack call against one single-image call, per method 'auto' picks on
    the GPU (valid mode: no padding), at a size where launches are long and one where they are
    short: where the two match, a batched launch has nothing to win."""
    import torch

    import tensorconv as tc

    rng = np.random.default_rng(1)
    rows = []
    cases = [("im2tensor_fused", "fp16fp32"), ("naive_shmem", "fp32"), ("fft", "fp32"),
             ("separable", "fp32"), ("toeplitz_tc", "fp16fp32")]
    for size, B, k in [(2048, 64, 15), (256, 512, 15)]:
        host = rng.random((B, size, size)).astype(np.float32)
        for method, prec in cases:
            kernel = rng.random((k, k))
            if method == "separable":
                kernel = np.outer(rng.random(k), rng.random(k))
            dt = torch.float16 if prec == "fp16fp32" else torch.float32
            stack = torch.as_tensor(host, device="cuda").to(dt)
            p = tc.plan(kernel, (size, size), mode="valid", method=method, precision=prec)
            one = stack[0]
            t_stack = event_median(lambda: p(stack), runs)
            t_one = event_median(lambda: p(one), runs)
            t_loop = event_median(lambda: [p(stack[i]) for i in range(B)], runs)
            for variant, ms, n in (("stack", t_stack, B), ("single", t_one, 1),
                                   ("loop_of_plan_calls", t_loop, B)):
                rows.append({"impl": method, "precision": prec, "image": [size, size],
                             "kernel": [k, k], "batch": n, "timing": "kernel", "mode": "valid",
                             "median_ms": ms, "runs": runs, "variant": variant,
                             "per_image_ms": ms / n})
            print(f"  {method:16s} {prec:8s} {size}^2 B={B}: stack {t_stack / B:.4f} ms/img, "
                  f"single {t_one:.4f} ms, loop {t_loop / B:.4f} ms/img", flush=True)
            del stack
        torch.cuda.empty_cache()
    return rows


def host_rows(size, ks, runs):
    """NumPy float32 end to end (auto, 'same') against the pinned H2D + D2H time of its input
    and output, and the ways of moving pageable memory to the card."""
    import cupy as cp
    import torch

    import tensorconv as tc

    rng = np.random.default_rng(2)
    img = rng.random((size, size)).astype(np.float32)
    nbytes = img.nbytes
    rows = []
    base = {"precision": "fp32", "image": [size, size], "runs": runs}
    pin_in = torch.empty(img.shape, dtype=torch.float32).pin_memory()
    pin_out = torch.empty(img.shape, dtype=torch.float32).pin_memory()
    dev = torch.empty(img.shape, dtype=torch.float32, device="cuda")
    pin_in.numpy()[...] = img
    h2d = event_median(lambda: dev.copy_(pin_in, non_blocking=True), runs)
    d2h = event_median(lambda: pin_out.copy_(dev, non_blocking=True), runs)
    copy_ms = h2d + d2h
    rows.append({"impl": "copy:pinned_h2d+d2h", **base, "kernel": None, "timing": "copy",
                 "median_ms": copy_ms, "h2d_ms": h2d, "d2h_ms": d2h,
                 "gb_per_s": 2 * nbytes / copy_ms / 1e6})
    print(f"  pinned H2D {h2d:.3f} ms + D2H {d2h:.3f} ms = {copy_ms:.3f} ms "
          f"({nbytes / h2d / 1e6:.1f} / {nbytes / d2h / 1e6:.1f} GB/s)", flush=True)

    # pageable -> device: the driver's own staging, cudaHostRegister of the caller's array,
    # one-thread memcpy into pinned memory
    def pageable():
        dev.copy_(torch.from_numpy(img))
    t_pg = wall_median(pageable, runs)

    def registered():
        ptr = img.ctypes.data
        cp.cuda.runtime.hostRegister(ptr, nbytes, 0)
        try:
            cp.cuda.runtime.memcpy(dev.data_ptr(), ptr, nbytes, 1)
        finally:
            cp.cuda.runtime.hostUnregister(ptr)
    t_reg = wall_median(registered, runs)

    def memcpy1():
        np.copyto(pin_in.numpy(), img)
    t_m1 = wall_median(memcpy1, runs)
    for name, ms in (("h2d:pageable_driver_staging", t_pg),
                     ("h2d:cudaHostRegister+copy+unregister", t_reg),
                     ("host:np.copyto_into_pinned_1_thread", t_m1)):
        rows.append({"impl": name, **base, "kernel": None, "timing": "copy", "median_ms": ms,
                     "gb_per_s": nbytes / ms / 1e6})
        print(f"  {name:40s} {ms:8.3f} ms ({nbytes / ms / 1e6:.1f} GB/s)", flush=True)

    for k in ks:
        kernel = rng.random((k, k))
        p = tc.plan(kernel, img.shape, mode="same", precision="fp32", device="cuda")
        out = p(img)
        err = mape_pct(out, fft_ref(img, kernel, "same"))
        e2e = wall_median(lambda: p(img), runs)
        d = torch.as_tensor(img, device="cuda")
        kern = event_median(lambda: p(d), runs)
        rows.append({"impl": p.method, **base, "kernel": [k, k], "timing": "end_to_end",
                     "mode": "same", "median_ms": e2e, "copy_ms": copy_ms,
                     "ratio_to_copy": e2e / copy_ms, "device_call_ms": kern, "mape_pct": err,
                     "extra_bytes": int(p.workspace_bytes)})
        print(f"  host e2e {p.method} k={k}: {e2e:.3f} ms = {e2e / copy_ms:.2f}x copy "
              f"(device call {kern:.3f} ms), MAPE {err:.2e} %", flush=True)
        # results kept by the caller: each call's result is a new pinned block (mmap, pages
        # faulted by the staging team, cudaHostRegister) until the pool's cap
        kept = []
        e2e_kept = wall_median(lambda: kept.append(p(img)), 10, warmup=0)
        del kept
        rows.append({"impl": p.method, **base, "kernel": [k, k], "timing": "end_to_end",
                     "mode": "same", "median_ms": e2e_kept, "variant": "results_kept",
                     "runs": 10})
        pg = pageable_e2e(k)
        rows.append({"impl": p.method, **base, "kernel": [k, k], "timing": "end_to_end",
                     "mode": "same", "median_ms": pg, "variant": "pageable_result", "runs": 10,
                     "ratio_to_copy": pg / copy_ms})
        print(f"    results kept {e2e_kept:.3f} ms; pageable result (TENSORCONV_PINNED_MB=0) "
              f"{pg:.3f} ms = {pg / copy_ms:.2f}x copy", flush=True)
        # the same plan on a float64 NumPy image: conversion to float32 on the host first
        img64 = img.astype(np.float64)
        e2e64 = wall_median(lambda: p(img64), max(5, runs // 4))
        rows.append({"impl": p.method, **base, "kernel": [k, k], "timing": "end_to_end",
                     "mode": "same", "median_ms": e2e64, "variant": "float64_input",
                     "runs": max(5, runs // 4)})
    return rows


def pageable_e2e(k: int, size: int = 4096) -> float:
    """End to end with the pinned pool off (TENSORCONV_PINNED_MB=0, read at the first use, so
    in a fresh process): the result is np.empty, faulted in and unpacked by the staging team."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, TENSORCONV_PINNED_MB="0")
    r = subprocess.run([sys.executable, __file__, "--pageable-e2e", str(k), str(size)], env=env,
                       capture_output=True, text=True, check=True)
    return float(r.stdout.strip().splitlines()[-1])


def _pageable_child(k: int, size: int):
    import tensorconv as tc

    rng = np.random.default_rng(2)
    img = rng.random((size, size)).astype(np.float32)
    p = tc.plan(rng.random((k, k)), img.shape, mode="same", precision="fp32", device="cuda")
    print(wall_median(lambda: p(img), 10))


def plot(meta, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5.5))
    stack = [r for r in meta["rows"] if r.get("batch") and r.get("mode") == "same"]
    labels, vals = [], []
    for r in stack:
        labels.append(f"{r['impl'].replace('peer:', '')} {r.get('variant', '')} {r['precision']}")
        vals.append(r["images_per_s"])
    if not vals:  # a --host-only file
        a.axis("off")
        a.text(0.5, 0.5, "no stack rows (--host-only)", ha="center", va="center")
    a.bar(range(len(vals)), vals, color="tab:blue")
    a.set_xticks(range(len(vals)), labels, fontsize=7, rotation=35, ha="right")
    a.set_yscale("log")
    a.set_ylabel("images / s")
    a.set_title(f"B x 2048², k=15, 'same' ({meta['device']})", fontsize=9)
    host = [r for r in meta["rows"] if r["timing"] in ("end_to_end", "copy")]
    b.barh(range(len(host)), [r["median_ms"] for r in host], color="tab:orange")
    b.set_yticks(range(len(host)), [f"{r['impl']} {r.get('kernel') or ''} "
                                    f"{r.get('variant', '')}" for r in host], fontsize=6)
    b.set_xlabel("ms (4096² float32 NumPy)")
    b.set_title("host arrays: end to end vs copies", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    ap.add_argument("--quick", action="store_true", help="fewer runs of the slow loops")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--plot-only", metavar="JSON", help="redraw the PNG of a results file")
    ap.add_argument("--host-only", action="store_true",
                    help="only the host-array rows (~10 s), written as stacks_host_<device>")
    ap.add_argument("--skip-host", action="store_true",
                    help="stacks and batched launches only (the host rows: --host-only)")
    ap.add_argument("--pageable-e2e", nargs=2, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.pageable_e2e:
        _pageable_child(*args.pageable_e2e)
        return
    if args.plot_only:
        plot(json.loads(Path(args.plot_only).read_text()), Path(args.plot_only).with_suffix(".png"))
        return
    import torch

    import tensorconv as tc

    name = torch.cuda.get_device_name()
    meta = {"device": name, "created": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"), "tensorconv": tc.__version__,
            "versions": {"cuda": torch.version.cuda, "torch": torch.__version__}, "rows": []}
    if not args.host_only:
        print("stacks:", flush=True)
        meta["rows"] += stack_rows(64, 2048, 15, ["fp16fp32", "fp32"], args.runs, args.quick)
    if not args.skip_host:
        print("host arrays:", flush=True)
        meta["rows"] += host_rows(4096, [15, 55], args.runs)
    if not args.host_only:
        print("batched launches:", flush=True)
        meta["rows"] += batching_rows(args.runs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    slug = ("host_" if args.host_only else "") + name.lower().replace(" ", "-")
    (out / f"stacks_{slug}.json").write_text(json.dumps(meta, indent=1))
    plot(meta, out / f"stacks_{slug}.png")
    print("wrote", out / f"stacks_{slug}.json")


if __name__ == "__main__":
    main()
