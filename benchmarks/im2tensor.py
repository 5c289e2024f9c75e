"""im2tensor benchmarks (Seznec et al. 2022) on the current GPU, peers timed in the same run.

  fig9    the five variants vs kernel size 1..60 on 1024x1024 (paper Fig. 9; fp16 as there),
          with PyTorch conv2d (cuDNN) fp16 and torch.fft fp32
  table3  4096x4096, k = 3, 15, 25, 35, 55, every variant x precision, PyTorch conv2d (cuDNN,
          TF32 off) per dtype and torch.fft fp32/fp64 (paper Table 3)
  table4  extra device memory at k = 15, 4096x4096 (paper Table 4)

Timing: CUDA events around the call with the data already on the device (the paper's rule),
3 warm-up calls, median of 20. The im2tensor timings are the plan's whole run on device arrays
(for im2tensor_cublas that includes building S, which the paper leaves out). MAPE (eq. 20, %)
against PyTorch conv2d in float64 on the same image. Image: the first USC-SIPI misc image
resized (bilinear) to the size, as the paper resizes 'cameraman'.

Usage: python benchmarks/im2tensor.py [--parts fig9,table3,table4] [--out DIR] [--quick]
       python benchmarks/im2tensor.py --replot results/im2tensor_<device>.json
Writes DIR/im2tensor_<device>.json (format: benchmarks/README or docs) and PNG figures."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

import tensorconv as tc

VARIANTS = ("im2tensor", "im2tensor_shmem", "im2tensor_fused", "im2tensor_atomic",
            "im2tensor_cublas")
PRECISIONS = ("fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64")
TORCH_STORAGE = {"float16": torch.float16, "float32": torch.float32, "float64": torch.float64}
RUNS, WARM = 20, 3


def median_ms(fn, runs=RUNS, warm=WARM):
    for _ in range(warm):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(runs)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return float(np.median([a.elapsed_time(b) for a, b in ev]))


def load_image(n: int) -> torch.Tensor:
    try:
        from tensorconv.datasets import load_usc_sipi
        name, img = next(iter(load_usc_sipi()))
        t = torch.from_numpy(np.ascontiguousarray(img, dtype=np.float64)).cuda()
    except Exception as e:  # data not present: a fixed random image, said so in the JSON
        print(f"USC-SIPI not found ({e}); using a random image", file=sys.stderr)
        name = "random"
        t = torch.from_numpy(np.random.default_rng(0).random((512, 512))).cuda()
    t = F.interpolate(t[None, None], size=(n, n), mode="bilinear", align_corners=False)[0, 0]
    return t.clamp_(0, 1).contiguous(), name


def kernel_of(k: int) -> np.ndarray:
    return np.random.default_rng(1000 + k).random((k, k))


def mape_t(out: torch.Tensor, ref: torch.Tensor) -> float:
    o = out.to(torch.float64)
    err = (o - ref).abs()
    rel = torch.where(ref != 0, err / ref.abs().clamp_min(1e-300), torch.zeros_like(err))
    return float(100.0 * rel.flatten().median())


class Im2TensorRun:
    """A plan and preallocated device output; call() runs the plan only."""

    def __init__(self, method, precision, image64: torch.Tensor, kernel: np.ndarray,
                 options=None):
        self.p = tc.plan(kernel, tuple(image64.shape), mode="valid", method=method,
                         precision=precision, options=options)
        st = TORCH_STORAGE[self.p.storage]
        self.x = image64.to(st).contiguous()
        self.out = torch.empty(self.p.out_shape, dtype=st, device="cuda")
        self.args = (self.x.data_ptr(), self.x.shape[0], self.x.shape[1], self.x.stride(0),
                     self.out.data_ptr(), self.out.shape[0], self.out.shape[1],
                     self.out.stride(0), self.p.storage, True,
                     int(torch.cuda.current_stream().cuda_stream))

    def __call__(self):
        self.p._plan.run(*self.args)


def torch_conv(x: torch.Tensor, k: torch.Tensor):
    return lambda: F.conv2d(x[None, None], k[None, None])[0, 0]


def torch_fft(x: torch.Tensor, k: torch.Tensor):
    """Valid correlation by FFT of the image size (no wrap reaches the valid part); the kernel
    spectrum is precomputed, as the paper does for cuFFT."""
    h, w = x.shape
    kh, kw = k.shape
    kf = torch.fft.rfft2(k, s=(h, w)).conj()
    return lambda: torch.fft.irfft2(torch.fft.rfft2(x) * kf, s=(h, w))[:h - kh + 1, :w - kw + 1]


def extra_bytes_torch(fn, out_bytes: int) -> int:
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    r = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del r
    return max(0, int(peak - out_bytes))


def row(impl, precision, n, k, ms, extra=None, mape=None, note=None):
    r = {"impl": impl, "precision": precision, "image": [n, n], "kernel": [k, k],
         "timing": "kernel", "median_ms": None if ms is None else round(ms, 5), "runs": RUNS}
    if extra is not None:
        r["extra_bytes"] = int(extra)
    if mape is not None:
        r["mape_pct"] = mape
    if note:
        r["note"] = note
    return r


def bench_variants(rows, part, n, ks, precisions, variants, image64, with_peers, peer_dtypes,
                   fft_dtypes):
    for k in ks:
        kernel = kernel_of(k)
        kt = torch.from_numpy(kernel).cuda()
        ref = F.conv2d(image64[None, None], kt[None, None])[0, 0]
        for prec in precisions:
            for m in variants:
                try:
                    run = Im2TensorRun(m, prec, image64, kernel)
                    ms = median_ms(run)
                    mp = mape_t(run.out, ref)
                    r = row(m, prec, n, k, ms, run.p.workspace_bytes, mp)
                except (MemoryError, RuntimeError, ValueError) as e:
                    r = row(m, prec, n, k, None, note=f"failed: {e}")
                r["part"] = part
                rows.append(r)
                print(f"{part} n={n} k={k:2d} {prec:8s} {m:18s} {r['median_ms'] or float('nan'):9.4f}"
                      f" ms mape={r.get('mape_pct', float('nan')):.3g}% {r.get('note', '')}",
                      flush=True)
                run = None
        if with_peers:
            peers = [("torch_conv2d", torch_conv, d) for d in peer_dtypes]
            peers += [("torch_fft", torch_fft, d) for d in fft_dtypes]
            for impl, make, (name, dt) in peers:
                fn = make(image64.to(dt), kt.to(dt))
                ms = median_ms(fn)
                r = row("peer:" + impl, name, n, k, ms, None, mape_t(fn(), ref))
                r["part"] = part
                rows.append(r)
                print(f"{part} n={n} k={k:2d} {name:8s} {impl:18s} {ms:9.4f} ms", flush=True)


def table4(rows, n, image64):
    k = 15
    kernel = kernel_of(k)
    kt = torch.from_numpy(kernel).cuda()
    out_elems = (n - k + 1) ** 2
    for prec in ("fp16", "fp16fp32"):
        for m in VARIANTS:
            p = tc.plan(kernel, (n, n), mode="valid", method=m, precision=prec)
            rows.append({"impl": m, "precision": prec, "image": [n, n], "kernel": [k, k],
                         "timing": "memory", "extra_bytes": int(p.workspace_bytes),
                         "part": "table4"})
            del p
    for name, dt in (("fp16", torch.float16), ("fp32", torch.float32)):
        x, kk = image64.to(dt), kt.to(dt)
        es = x.element_size()
        for impl, fn in (("peer:torch_conv2d", torch_conv(x, kk)), ("peer:torch_fft",
                                                                    torch_fft(x, kk))):
            fn()
            rows.append({"impl": impl, "precision": name, "image": [n, n], "kernel": [k, k],
                         "timing": "memory", "extra_bytes": extra_bytes_torch(fn, out_elems * es),
                         "part": "table4"})
    for r in rows:
        if r.get("part") == "table4":
            print(f"table4 {r['impl']:20s} {r['precision']:8s} {r['extra_bytes'] / 1e6:10.1f} MB")


def plots(rows, out: Path, slug: str):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    files = []
    f9 = [r for r in rows if r.get("part") == "fig9" and r["median_ms"] is not None]
    if f9:
        fig, ax = plt.subplots(figsize=(8, 5))
        for impl in sorted({(r["impl"], r["precision"]) for r in f9}):
            pts = sorted((r["kernel"][0], r["median_ms"]) for r in f9
                         if (r["impl"], r["precision"]) == impl)
            ax.plot(*zip(*pts), label=f"{impl[0]} ({impl[1]})",
                    ls="--" if impl[0].startswith("peer") else "-")
        ax.set_xlabel("kernel size k (k x k)")
        ax.set_ylabel("median time (ms)")
        ax.set_yscale("log")
        ax.set_title(f"im2tensor variants, 1024x1024 ({slug})")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fn = out / f"im2tensor_fig9_{slug}.png"
        fig.savefig(fn, dpi=110)
        files.append(fn)
    t3 = [r for r in rows if r.get("part") == "table3" and r["median_ms"] is not None]
    if t3:
        precs = sorted({r["precision"] for r in t3}, key=lambda p: (PRECISIONS + (p,)).index(p))
        fig, axes = plt.subplots(2, 3, figsize=(13, 7), sharex=True)
        for ax, prec in zip(axes.flat, precs):
            for impl in sorted({r["impl"] for r in t3 if r["precision"] == prec}):
                pts = sorted((r["kernel"][0], r["median_ms"]) for r in t3
                             if r["impl"] == impl and r["precision"] == prec)
                ax.plot(*zip(*pts), marker="o", ms=3, label=impl,
                        ls="--" if impl.startswith("peer") else "-")
            ax.set_title(prec)
            ax.set_yscale("log")
            ax.grid(alpha=0.3)
            ax.set_xlabel("k")
            ax.set_ylabel("ms")
            ax.legend(fontsize=5)
        fig.suptitle(f"4096x4096 ({slug})")
        fig.tight_layout()
        fn = out / f"im2tensor_table3_{slug}.png"
        fig.savefig(fn, dpi=110)
        files.append(fn)
    return files


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--replot", help="only redraw the figures of this results JSON")
    ap.add_argument("--parts", default="fig9,table3,table4")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    ap.add_argument("--quick", action="store_true", help="fewer kernel sizes (smoke test)")
    ap.add_argument("--precisions", default=",".join(PRECISIONS))
    a = ap.parse_args(argv)
    if a.replot:
        doc = json.loads(Path(a.replot).read_text())
        slug = re.sub(r"[^a-z0-9]+", "_", doc["device"].lower()).strip("_")
        print("wrote", *plots(doc["rows"], Path(a.replot).parent, slug))
        return
    parts = set(a.parts.split(","))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True  # cuDNN picks its fastest algorithm per shape
    dev = torch.cuda.get_device_name()
    slug = re.sub(r"[^a-z0-9]+", "_", dev.lower()).strip("_")
    rows = []
    t0 = time.time()
    precs = tuple(a.precisions.split(","))
    if "fig9" in parts:
        img, name = load_image(1024)
        ks = (1, 3, 7, 15, 31, 60) if a.quick else tuple(range(1, 61))
        bench_variants(rows, "fig9", 1024, ks, ("fp16",), VARIANTS, img, True,
                       (("fp16", torch.float16),), (("fp32", torch.float32),))
    if "table3" in parts:
        img, name = load_image(4096)
        ks = (15, 55) if a.quick else (3, 15, 25, 35, 55)
        bench_variants(rows, "table3", 4096, ks, precs, VARIANTS, img, True,
                       (("fp16", torch.float16), ("bf16", torch.bfloat16),
                        ("fp32", torch.float32), ("fp64", torch.float64)),
                       (("fp32", torch.float32), ("fp64", torch.float64)))
    if "table4" in parts:
        img, name = load_image(4096)
        table4(rows, 4096, img)
    doc = {"device": dev, "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "tensorconv": tc.__version__,
           "versions": {"torch": torch.__version__, "cuda": torch.version.cuda,
                        "cudnn": str(torch.backends.cudnn.version())},
           "image": name, "seconds": round(time.time() - t0, 1), "rows": rows}
    fn = out / f"im2tensor_{slug}.json"
    fn.write_text(json.dumps(doc, indent=1))
    files = plots(rows, out, slug)
    print("wrote", fn, *files)


if __name__ == "__main__":
    main()
