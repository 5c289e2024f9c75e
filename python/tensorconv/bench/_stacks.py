"""Stacks and host arrays: images/s of a
(B, H, W) stack call against a Python loop of single calls and cuDNN with the stack as its batch
(part "stacks"); per-image time of a stack call against a single call per method (part
"batching"); NumPy end to end against the pinned copy time of its input and output, and what
each way of getting pageable NumPy memory to the card costs (part "host").

Device timings: median of 20 with CUDA events around the call (the call's Python included, a
synchronization after each; the stack, loop and peer timed in the same run; --quick: 5 runs of
the loop of correlate2d calls). Host end-to-end timings: the call is synchronous, so the median
of 20 wall-clock times of the whole call. Without a usable GPU: the stack against the loop of
plan calls on the CPU (wall clock), the GPU rows skipped with the probe's reason."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from ._timing import event_median_sync as event_median
from ._timing import wall_median as _wall


def wall_median(fn, runs=20, warmup=2):
    """Wall-clock median (ms) of synchronous calls, after `warmup` calls."""
    return _wall(fn, runs, warmup)


def mape_pct(out, ref):
    out = np.asarray(out, dtype=np.float64)
    return float(100 * np.mean(np.abs(out - ref) / np.maximum(np.abs(ref), 1e-30)))


def fft_ref(img, kernel, mode):
    import scipy.signal

    return scipy.signal.fftconvolve(img.astype(np.float64), kernel[::-1, ::-1], mode=mode)


def _add(sweep, rows, B, base):
    def add(impl, ms, **extra):
        row = {"impl": impl, **base, "median_ms": ms, "images_per_s": B / ms * 1e3, **extra}
        rows.append(row)
        sweep.log(f"  {impl:34s} {base['precision']:8s} {B}x{base['image'][0]}^2 "
                  f"k={base['kernel'][0]} {extra.get('variant', '')}: {ms:9.3f} ms  "
                  f"{B / ms * 1e3:10.1f} img/s")
    return add


def stack_rows(sweep, B, size, k, precisions, runs, quick):
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
                "kernel_kind": "random", "part": "stacks", "timing": "kernel", "runs": runs,
                "mode": "same"}
        add = _add(sweep, rows, B, base)
        add(p.method, event_median(lambda: p(stack), runs), variant="stack", mape_pct=err,
            extra_bytes=int(p.workspace_bytes))
        add(p.method, event_median(lambda: [p(stack[i]) for i in range(B)], runs),
            variant="loop_of_plan_calls")
        kd = torch.as_tensor(kernel, device="cuda")
        nloop = 5 if quick else runs
        add(p.method, event_median(
            lambda: [tc.correlate2d(stack[i], kernel, "same", precision=prec)
                     for i in range(B)], nloop, warmup=1),
            variant="loop_of_correlate2d", runs=nloop)
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


def cpu_stack_rows(sweep, B, size, k, runs):
    """Without a GPU: a stack call against a loop of plan calls on the CPU, fp64, wall clock."""
    import tensorconv as tc

    rng = np.random.default_rng(0)
    kernel = rng.random((k, k))
    host = rng.random((B, size, size))
    p = tc.plan(kernel, (size, size), mode="same", precision="fp64", device="cpu")
    err = mape_pct(p(host)[0], fft_ref(host[0], kernel, "same"))
    rows = []
    base = {"precision": "fp64", "image": [size, size], "kernel": [k, k], "batch": B,
            "kernel_kind": "random", "part": "stacks", "timing": "end_to_end", "runs": runs,
            "mode": "same", "device": "cpu"}
    add = _add(sweep, rows, B, base)
    add(p.method, _wall(lambda: p(host), runs, 1, cuda_sync=False), variant="stack",
        mape_pct=err)
    add(p.method, _wall(lambda: [p(host[i]) for i in range(B)], runs, 1, cuda_sync=False),
        variant="loop_of_plan_calls")
    return rows


def batching_rows(sweep, runs):
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
                             "kernel": [k, k], "kernel_kind": "random", "part": "batching",
                             "batch": n, "timing": "kernel", "mode": "valid",
                             "median_ms": ms, "runs": runs, "variant": variant,
                             "per_image_ms": ms / n})
            sweep.log(f"  {method:16s} {prec:8s} {size}^2 B={B}: stack {t_stack / B:.4f} ms/img,"
                      f" single {t_one:.4f} ms, loop {t_loop / B:.4f} ms/img")
            del stack
        torch.cuda.empty_cache()
    return rows


def host_rows(sweep, size, ks, runs):
    """NumPy float32 end to end (auto, 'same') against the pinned H2D + D2H time of its input
    and output, and the ways of moving pageable memory to the card."""
    import cupy as cp
    import torch

    import tensorconv as tc

    rng = np.random.default_rng(2)
    img = rng.random((size, size)).astype(np.float32)
    nbytes = img.nbytes
    rows = []
    base = {"precision": "fp32", "image": [size, size], "part": "host", "runs": runs}
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
    sweep.log(f"  pinned H2D {h2d:.3f} ms + D2H {d2h:.3f} ms = {copy_ms:.3f} ms "
              f"({nbytes / h2d / 1e6:.1f} / {nbytes / d2h / 1e6:.1f} GB/s)")

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
        sweep.log(f"  {name:40s} {ms:8.3f} ms ({nbytes / ms / 1e6:.1f} GB/s)")

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
        sweep.log(f"  host e2e {p.method} k={k}: {e2e:.3f} ms = {e2e / copy_ms:.2f}x copy "
                  f"(device call {kern:.3f} ms), MAPE {err:.2e} %")
        # results kept by the caller: each call's result is a new pinned block (mmap, pages
        # faulted by the staging team, cudaHostRegister) until the pool's cap
        kept = []
        e2e_kept = wall_median(lambda: kept.append(p(img)), 10, warmup=0)
        del kept
        rows.append({"impl": p.method, **base, "kernel": [k, k], "timing": "end_to_end",
                     "mode": "same", "median_ms": e2e_kept, "variant": "results_kept",
                     "runs": 10})
        pg = pageable_e2e(k, size)
        rows.append({"impl": p.method, **base, "kernel": [k, k], "timing": "end_to_end",
                     "mode": "same", "median_ms": pg, "variant": "pageable_result", "runs": 10,
                     "ratio_to_copy": pg / copy_ms})
        sweep.log(f"    results kept {e2e_kept:.3f} ms; pageable result (TENSORCONV_PINNED_MB=0)"
                  f" {pg:.3f} ms = {pg / copy_ms:.2f}x copy")
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
    env = dict(os.environ, TENSORCONV_PINNED_MB="0")
    code = f"from tensorconv.bench._stacks import _pageable_child; _pageable_child({k}, {size})"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True)
    return float(r.stdout.strip().splitlines()[-1])


def _pageable_child(k: int, size: int):
    import tensorconv as tc

    rng = np.random.default_rng(2)
    img = rng.random((size, size)).astype(np.float32)
    p = tc.plan(rng.random((k, k)), img.shape, mode="same", precision="fp32", device="cuda")
    print(wall_median(lambda: p(img), 10))


def stacks_rows(sweep, gpu, runs, quick, host_only, skip_host):
    """The rows stacks.py wrote, in its order: stacks, host arrays, batched launches."""
    rows = []
    if not gpu:
        sweep.log("stacks GPU rows skipped (see above); the stack against a loop on the CPU")
        if not host_only:
            rows += cpu_stack_rows(sweep, 8, 256, 15, runs)
        return rows
    if not host_only:
        sweep.log("stacks:")
        rows += stack_rows(sweep, 64, 2048, 15, ["fp16fp32", "fp32"], runs, quick)
    if not skip_host:
        sweep.log("host arrays:")
        rows += host_rows(sweep, 4096, [15, 55], runs)
    if not host_only:
        sweep.log("batched launches:")
        rows += batching_rows(sweep, runs)
    return rows


def figures(plt, doc, out, stem) -> list:
    """Images/s of the stack rows; the host rows' ms beside the copies (a panel each, when
    the run has them)."""
    stack = [r for r in doc["rows"] if r.get("part") == "stacks"]
    host = [r for r in doc["rows"] if r.get("part") == "host"]
    if not (stack or host):
        return []
    fig, axes = plt.subplots(1, bool(stack) + bool(host), figsize=(6.5 * (bool(stack) + bool(host)),
                                                                     5.5), squeeze=False)
    axes = list(axes.flat)
    if stack:
        a = axes.pop(0)
        labels = [f"{r['impl'].replace('peer:', '')} {r.get('variant', '')} {r['precision']}"
                  for r in stack]
        a.bar(range(len(stack)), [r["images_per_s"] for r in stack], color="tab:blue")
        a.set_xticks(range(len(stack)), labels, fontsize=7, rotation=35, ha="right")
        a.set_yscale("log")
        a.set_ylabel("images / s")
        r0 = stack[0]
        a.set_title(f"B={r0['batch']} x {r0['image'][0]}², k={r0['kernel'][0]}, 'same' "
                    f"({doc['device']})", fontsize=9)
    if host:
        b = axes.pop(0)
        b.barh(range(len(host)), [r["median_ms"] for r in host], color="tab:orange")
        b.set_yticks(range(len(host)), [f"{r['impl']} {r.get('kernel') or ''} "
                                        f"{r.get('variant', '')}" for r in host], fontsize=6)
        b.set_xlabel(f"ms ({host[0]['image'][0]}² float32 NumPy)")
        b.set_title("host arrays: end to end vs copies", fontsize=9)
    fig.tight_layout()
    fn = out / f"{stem}.png"
    fig.savefig(fn, dpi=120)
    plt.close(fig)
    return [fn]
