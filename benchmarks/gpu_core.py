"""Benchmark of the GPU core methods (naive, naive_shmem, separable, fft) in every precision,
with PyTorch conv2d (cuDNN, TF32 off unless the row says tf32) and a torch.fft correlation
(kernel spectrum precomputed) timed in the same run, as the im2tensor paper times them:
data already on the device, CUDA events around the work, warm-up, median of 20.

    python benchmarks/gpu_core.py --out benchmarks/results/gpu_core_<device>.json

Rows follow docs/design.md ("Benchmark results format"); mape_pct is against a float64
torch.fft correlation of the same image (within ~1e-13 of scipy), on a USC-SIPI image resized
to the size, kernel uniform in [0, 1) (paper 5.1.1); separable rows also run a Gaussian
(kernel_kind "gaussian", sigma = k / 6), the case the method is for."""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import tensorconv as tc

SIZES = (1024, 4096)
KS = (3, 15, 25, 35, 55)
METHODS = ("naive", "naive_shmem", "separable", "fft")
TORCH_STORAGE = {"fp16": torch.float16, "fp16fp32": torch.float16, "bf16": torch.float32,
                 "tf32": torch.float32, "fp32": torch.float32, "fp64": torch.float64}
STORAGE = {"fp16": "float16", "fp16fp32": "float16", "bf16": "float32", "tf32": "float32",
           "fp32": "float32", "fp64": "float64"}
L2_BYTES = 50 << 20
# Non-default forms timed beside the defaults (rows carry "variant").
VARIANT_OPTIONS = {"coefs=constant": {"naive_shmem.coefficients": "constant"},
                   "two_pass": {"separable.fused": False},
                   # separable tf32 / fp32 with FFMA passes instead of the tensor-core banded ones
                   "ffma": {"separable.tensor_cores": False}}


def gaussian(k):
    x = np.arange(k) - (k - 1) / 2
    g = np.exp(-0.5 * (x / max(k / 6, 0.5)) ** 2)
    return np.outer(g, g) / g.sum() ** 2


def random_kernel(k):
    return np.random.default_rng(1000 + k).random((k, k))


def event_median(fn, n_inputs, runs=20, warmup=3, sleep_cycles=400_000):
    """Median GPU time in ms of fn(i); a sleep kernel queued first keeps host overhead out
    (as long as the host enqueues fn's work within the sleep: raise sleep_cycles for calls
    with much Python work)."""
    for i in range(warmup):
        fn(i % n_inputs)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    for i in range(runs):
        torch.cuda._sleep(sleep_cycles)
        starts[i].record()
        fn(i % n_inputs)
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def time_plan(p, img64, prec):
    """Kernel time (ms, median of 20) of plan p (valid mode, square image img64 on the device)
    and its output; inputs rotated when they fit in L2."""
    size = img64.shape[0]
    oh, ow = p.out_shape
    dt = TORCH_STORAGE[prec]
    nbytes = size * size * torch.finfo(dt).bits // 8
    n_in = max(1, min(8, -(-2 * L2_BYTES // max(nbytes, 1))))
    xs = [img64.to(dt).contiguous() for _ in range(n_in)]
    out = torch.empty((oh, ow), dtype=dt, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    run = p._plan.run

    def fn(i):
        run(xs[i].data_ptr(), size, size, size, out.data_ptr(), oh, ow, ow, STORAGE[prec], True,
            stream)

    return event_median(fn, n_in), out


def wall_median(fn, runs=5):
    times = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def fft_reference(img64, kernel64):
    """float64 valid correlation through torch.fft (the MAPE reference)."""
    h, w = img64.shape
    kh, kw = kernel64.shape
    K = torch.conj(torch.fft.rfft2(kernel64, s=(h, w)))
    full = torch.fft.irfft2(torch.fft.rfft2(img64) * K, s=(h, w))
    return full[: h - kh + 1, : w - kw + 1]


def mape_gpu(out, ref):
    """MAPE in percent (paper eq. 20); None when the output is not finite (strict JSON)."""
    p = out.double()
    if not torch.isfinite(p).all():
        return None
    nz = ref != 0
    rel = torch.zeros_like(ref)
    rel[nz] = (p[nz] - ref[nz]).abs() / ref[nz].abs()
    return float(100 * rel.flatten().median())


def load_image(size):
    from tensorconv.datasets import load_usc_sipi

    name, img = next(iter(load_usc_sipi()))
    t = torch.tensor(img, dtype=torch.float64, device="cuda")[None, None]
    t = F.interpolate(t, size=(size, size), mode="bilinear", align_corners=False)[0, 0]
    return name, t.clamp(0, 1).contiguous()


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--ks", default=",".join(map(str, KS)))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--budget-s", type=float, default=400.0, help="stop adding rows after this")
    ap.add_argument("--no-e2e", action="store_true")
    ap.add_argument("--precisions", default="", help="comma list (default: every one)")
    ap.add_argument("--kinds", default="random,gaussian", help="kernel kinds to time")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--band-sweep", default="", help="MB list: separable T-ring band sizes to time")
    args = ap.parse_args(argv)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    t_start = time.time()
    dev = torch.cuda.get_device_name()
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,"
                          "clocks.mem", "--format=csv,noheader"], capture_output=True, text=True)
    meta = {"device": dev, "created": datetime.datetime.now(datetime.timezone.utc)
            .strftime("%Y-%m-%dT%H:%M:%SZ"), "tensorconv": tc.__version__,
            "versions": {"torch": torch.__version__, "cuda": torch.version.cuda,
                         "cudnn": torch.backends.cudnn.version(), "python": platform.python_version(),
                         "nvidia_smi": smi.stdout.strip()},
            "notes": "kernel timing: CUDA events, 3 warm-ups, median of 20, inputs rotated "
                     "when they fit in L2; end_to_end: NumPy in/out through a prebuilt plan, "
                     "wall clock, median of 5. peer:torch_conv2d with cudnn.benchmark=True; "
                     "peer:torch_fft = irfft2(rfft2(x) * K) with K precomputed, crop as a view.",
            "rows": []}
    rows = meta["rows"]
    methods = [m for m in tc.methods() if m.name in args.methods.split(",")]
    skipped = 0

    def out_of_time():
        return time.time() - t_start > args.budget_s

    for size in map(int, args.sizes.split(",")):
        name, img64 = load_image(size)
        meta.setdefault("images", {})[str(size)] = f"USC-SIPI {name} resized to {size}x{size}"
        for k in map(int, args.ks.split(",")):
            oh = ow = size - k + 1
            kernels = {"random": random_kernel(k), "gaussian": gaussian(k)}
            refs = {kind: fft_reference(img64, torch.tensor(kk, device="cuda"))
                    for kind, kk in kernels.items()}
            # ---- tensorconv methods ----
            for m in methods:
                for prec in m.precisions:
                    if args.precisions and prec not in args.precisions.split(","):
                        continue
                    kinds = [("random", "")] + ([("gaussian", "")] if m.name == "separable"
                                                else [])
                    if m.name == "naive_shmem" and prec in ("fp16", "fp32", "fp64"):
                        kinds.append(("random", "coefs=constant"))
                    if m.name == "separable" and prec in ("fp32", "fp64"):
                        kinds.append(("gaussian", "two_pass"))
                    if m.name == "separable" and prec in ("tf32", "fp32"):
                        kinds.append(("gaussian", "ffma"))
                    kinds = [kv for kv in kinds if kv[0] in args.kinds.split(",")]
                    for kind, variant in kinds:
                        if out_of_time():
                            skipped += 1
                            continue
                        try:
                            p = tc.plan(kernels[kind], (size, size), mode="valid",
                                        method=m.name, precision=prec,
                                        options=VARIANT_OPTIONS.get(variant))
                        except Exception as e:  # report, keep going
                            print(f"plan {m.name} {prec} k={k}: {e}", flush=True)
                            continue
                        dt = TORCH_STORAGE[prec]
                        ms, out = time_plan(p, img64, prec)
                        row = {"impl": m.name, "precision": prec, "image": [size, size],
                               "kernel": [k, k], "kernel_kind": kind, "timing": "kernel",
                               "median_ms": round(ms, 5), "runs": 20,
                               "extra_bytes": p.workspace_bytes,
                               "mape_pct": mape_gpu(out, refs[kind])}
                        if variant:
                            row["variant"] = variant
                        rows.append(row)
                        print(json.dumps(row), flush=True)
                        if not args.no_e2e and not variant:
                            host = img64.to(dt).cpu().numpy()
                            e2e = wall_median(lambda: p(host))
                            rows.append({**row, "timing": "end_to_end", "median_ms": round(e2e, 4),
                                         "runs": 5})
                        del out, p
            # ---- peers ----
            if args.no_peers:
                continue
            if out_of_time():
                skipped += 1
                continue
            k64 = torch.tensor(kernels["random"], device="cuda")
            for prec, dt, tf32 in (("fp16", torch.float16, False), ("bf16", torch.bfloat16, False),
                                   ("tf32", torch.float32, True), ("fp32", torch.float32, False),
                                   ("fp64", torch.float64, False)):
                torch.backends.cudnn.allow_tf32 = tf32
                x = img64.to(dt)[None, None].contiguous()
                w = k64.to(dt)[None, None].contiguous()
                res = {}

                def conv(i):
                    res["y"] = F.conv2d(x, w)

                ms = event_median(conv, 1)
                rows.append({"impl": "peer:torch_conv2d", "precision": prec, "image": [size, size],
                             "kernel": [k, k], "kernel_kind": "random", "timing": "kernel",
                             "median_ms": round(ms, 5), "runs": 20,
                             "mape_pct": mape_gpu(res["y"][0, 0], refs["random"])})
                print(json.dumps(rows[-1]), flush=True)
            torch.backends.cudnn.allow_tf32 = False
            for prec, dt, cdt in (("fp16", torch.float16, torch.complex32),
                                  ("fp32", torch.float32, torch.complex64),
                                  ("fp64", torch.float64, torch.complex128)):
                x = img64.to(dt).contiguous()
                try:
                    K = torch.conj(torch.fft.rfft2(k64.to(torch.float64), s=(size, size))
                                   ).to(cdt if dt != torch.float16 else torch.complex64)
                    if dt == torch.float16:
                        K = K.to(torch.complex32)
                    res = {}

                    def tfft(i):
                        res["y"] = torch.fft.irfft2(torch.fft.rfft2(x) * K, s=(size, size))[:oh, :ow]

                    ms = event_median(tfft, 1)
                except Exception as e:
                    print(f"torch.fft {prec}: {e}", flush=True)
                    continue
                rows.append({"impl": "peer:torch_fft", "precision": prec, "image": [size, size],
                             "kernel": [k, k], "kernel_kind": "random", "timing": "kernel",
                             "median_ms": round(ms, 5), "runs": 20,
                             "mape_pct": mape_gpu(res["y"], refs["random"])})
                print(json.dumps(rows[-1]), flush=True)
    if args.band_sweep:
        band_sweep(rows, args.band_sweep)
    meta["skipped_for_time"] = skipped
    with open(args.out, "w") as f:
        json.dump(meta, f, indent=1)
    summarize(meta)
    return 0


def band_sweep(rows, mbs):
    """separable's ring band size (plan option separable.band_mb), Gaussian fp32 at 4096^2: the
    data behind the default."""
    _, img = load_image(4096)
    x = img.float().contiguous()
    stream = torch.cuda.current_stream().cuda_stream
    for k in (15, 55):
        out = torch.empty((4097 - k, 4097 - k), dtype=torch.float32, device="cuda")
        for mb in mbs.split(","):
            # bands belong to the two-pass form
            p = tc.plan(gaussian(k), (4096, 4096), mode="valid", method="separable",
                        precision="fp32",
                        options={"separable.fused": False, "separable.band_mb": int(mb)})
            n = 4097 - k
            ms = event_median(lambda i: p._plan.run(x.data_ptr(), 4096, 4096, 4096, out.data_ptr(),
                                                    n, n, n, "float32", True, stream), 1)
            rows.append({"impl": "separable", "precision": "fp32", "image": [4096, 4096],
                         "kernel": [k, k], "kernel_kind": "gaussian", "timing": "kernel",
                         "median_ms": round(ms, 5), "runs": 20, "band_mb": int(mb),
                         "extra_bytes": p.workspace_bytes})
            print(json.dumps(rows[-1]), flush=True)


def summarize(meta):
    """The issue's goals (4096^2) from the rows just measured."""
    def get(impl, prec, k, kind="random", size=4096):
        for r in meta["rows"]:
            if (r["impl"], r["precision"], r["kernel"][0], r.get("kernel_kind", "random"),
                    r["image"][0], r["timing"]) == (impl, prec, k, kind, size, "kernel") and \
                    "band_mb" not in r and "variant" not in r:
                return r["median_ms"]
        return float("nan")

    print("\n== goals (4096^2, kernel timing, ms) ==")
    c16, s16 = get("peer:torch_conv2d", "fp16", 15), get("naive_shmem", "fp16", 15)
    c32, s32 = get("peer:torch_conv2d", "fp32", 15), get("naive_shmem", "fp32", 15)
    print(f"naive_shmem fp16 k=15 {s16:.4f} vs conv2d fp16 {c16:.4f}: {c16 / s16:.2f}x (goal >= 4)")
    print(f"naive_shmem fp32 k=15 {s32:.4f} vs conv2d fp32 {c32:.4f}: {c32 / s32:.2f}x (goal >= 1.9)")
    for prec in ("fp32", "fp64"):
        for k in KS:
            f, t = get("fft", prec, k), get("peer:torch_fft", prec, k)
            print(f"fft {prec} k={k} {f:.4f} vs torch.fft {t:.4f}: {f / t:.2f}x (goal <= 1.1)")
    print(f"separable fp32 gaussian k=55 {get('separable', 'fp32', 55, 'gaussian'):.4f} (goal <= 0.1)")
    print("\n== all kernel rows at 4096^2 (ms) ==")
    table = {}
    for r in meta["rows"]:
        if r["timing"] == "kernel" and r["image"][0] == 4096 and "band_mb" not in r:
            key = (r["impl"] + ("/g" if r.get("kernel_kind") == "gaussian" else "")
                   + (f"/{r['variant']}" if "variant" in r else ""), r["precision"])
            table.setdefault(key, {})[r["kernel"][0]] = r["median_ms"]
    for (impl, prec), ks in sorted(table.items()):
        print(f"{impl:22s} {prec:9s} " + " ".join(f"{ks.get(k, float('nan')):9.4f}" for k in KS))


if __name__ == "__main__":
    sys.exit(main())
