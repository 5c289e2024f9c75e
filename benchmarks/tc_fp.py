"""tf32, fp32 and fp64 at tensor-core speed (issue #17 items 1-3): the user-visible time of a
plan called with CuPy arrays (Python dispatch, padding and output allocation included; CUDA
events around the call, no sleep kernel in front, 3 warm-ups, median of 20), for toeplitz_tc,
fft, naive_shmem and 'auto', with torch.fft (kernel spectrum precomputed, crop as a view) and
cuDNN (torch conv2d; TF32 only in the tf32 rows) timed in the same run.

    python benchmarks/tc_fp.py --out benchmarks/results/tc_fp_<device>.json
    python benchmarks/tc_fp.py --plot benchmarks/results/tc_fp_<device>.json   # -> .png

Image: a USC-SIPI image resized to the size (gpu_core.load_image); kernel uniform in [0, 1)
(gpu_core.random_kernel). mape_pct: median relative error in % against a float64 torch.fft
correlation (as gpu_core). Rows follow docs/design.md's format; 'auto' rows name the method it
chose ("chose")."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time


PRECISIONS = ("tf32", "fp32", "fp64")
METHODS = ("toeplitz_tc", "fft", "naive_shmem", "auto")
GOALS = {  # issue #17, 4096^2: ms at k = 15, 25, 35, 55 (None: "fft or better")
    "fp32": {15: 0.15, 25: 0.35, 35: None, 55: None},
    "fp64": {15: 0.35, 25: 0.75, 35: None, 55: None},
    "tf32": {15: 0.10, 25: 0.20, 35: 0.35, 55: 0.60}}


def plot(meta, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({r["image"][0] for r in meta["rows"]})
    fig, axes = plt.subplots(len(sizes), 3, figsize=(15, 4.2 * len(sizes)), squeeze=False)
    styles = {"toeplitz_tc": "o-", "fft": "s-", "naive_shmem": "^-", "auto": "x--",
              "peer:torch_fft": "s:", "peer:torch_conv2d": "v:"}
    for i, size in enumerate(sizes):
        for j, prec in enumerate(PRECISIONS):
            ax = axes[i][j]
            for impl, st in styles.items():
                pr = "fp32" if impl == "peer:torch_fft" and prec == "tf32" else prec
                pts = sorted((r["kernel"][0], r["median_ms"]) for r in meta["rows"]
                             if r["impl"] == impl and r["precision"] == pr
                             and r["image"][0] == size)
                if pts:
                    ax.plot(*zip(*pts), st, label=impl + (" (fp32)" if pr != prec else ""))
            if size == 4096:
                g = [(k, v) for k, v in GOALS[prec].items() if v is not None]
                ax.plot(*zip(*g), "k*", markersize=10, label="goal")
            ax.set(yscale="log", xlabel="kernel size k (k x k)", ylabel="ms (median of 20)",
                   title=f"{prec}, {size}x{size}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle(f"tensorconv plan + CuPy vs peers, {meta['device']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("wrote", path)


def time_call(fn, runs=20):
    """CUDA-event median (ms) of fn() with host dispatch inside the timed span."""
    return event_median(lambda i: fn(), 1, runs=runs, sleep_cycles=0)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--plot", help="JSON of a run: write its PNG beside it and print the summary")
    ap.add_argument("--sizes", default="4096,16384")
    ap.add_argument("--ks", default="3,15,25,35,55")
    ap.add_argument("--precisions", default=",".join(PRECISIONS))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--cudnn-max-size", type=int, default=4096,
                    help="cuDNN rows only up to this size (fp32 without TF32 takes ~0.16 s at "
                         "k = 55 on 4096^2)")
    args = ap.parse_args(argv)
    if args.plot:
        with open(args.plot) as f:
            meta = json.load(f)
        summarize(meta)
        plot(meta, args.plot[:-5] + ".png")
        return 0
    if not args.out:
        ap.error("--out or --plot is needed")
    global cp, torch, F, tc, event_median, fft_reference, load_image, mape_gpu, random_kernel
    import cupy as cp
    import torch
    import torch.nn.functional as F

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gpu_core import event_median, fft_reference, load_image, mape_gpu, random_kernel

    import tensorconv as tc
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.cuda.get_device_name()
    meta = {"device": dev, "created": datetime.datetime.now(datetime.timezone.utc)
            .strftime("%Y-%m-%dT%H:%M:%SZ"), "tensorconv": tc.__version__,
            "versions": {"torch": torch.__version__, "cupy": cp.__version__,
                         "python": platform.python_version()},
            "notes": "timing 'plan_cupy': tensorconv.plan(...)(cupy array), CUDA events around "
                     "the Python call (dispatch included), 3 warm-ups, median of 20. Peers: "
                     "torch.fft = irfft2(rfft2(x) * K), K precomputed; torch_conv2d = cuDNN "
                     "(benchmark mode; allow_tf32 only for tf32), kernel timing of the torch call.",
            "rows": [], "images": {}}
    rows = meta["rows"]
    precs = [p for p in args.precisions.split(",") if p]
    methods = [m for m in args.methods.split(",") if m]
    t0 = time.time()
    TORCH = {"tf32": torch.float32, "fp32": torch.float32, "fp64": torch.float64}
    for size in map(int, args.sizes.split(",")):
        name, img64 = load_image(size)
        meta["images"][str(size)] = f"USC-SIPI {name} resized to {size}x{size}"
        for k in map(int, args.ks.split(",")):
            ker = random_kernel(k)
            k64 = torch.tensor(ker, device="cuda")
            ref = fft_reference(img64, k64)
            base = {"image": [size, size], "kernel": [k, k], "kernel_kind": "random"}
            for prec in precs:
                dt = TORCH[prec]
                x = cp.asarray(img64.to(dt).contiguous())
                for m in methods:
                    if m == "naive_shmem" and size > 4096 and k > 25:
                        continue  # ~0.1-0.3 s a call there; its 4096^2 rows show the trend
                    try:
                        p = tc.plan(ker, (size, size), mode="valid", method=m, precision=prec)
                    except Exception as e:  # report, keep going
                        print(f"plan {m} {prec} k={k}: {e}", flush=True)
                        continue
                    res = {}

                    def call():
                        res["y"] = p(x)

                    ms = time_call(call)
                    out = torch.as_tensor(res["y"], device="cuda")
                    row = {"impl": m, "precision": prec, **base, "timing": "plan_cupy",
                           "median_ms": round(ms, 5), "runs": 20,
                           "extra_bytes": int(p.workspace_bytes),
                           "mape_pct": mape_gpu(out, ref)}
                    if m == "auto":
                        row["chose"] = p.method
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    del p, res, out
                del x
            # ---- peers ----
            for prec, dt in (("fp32", torch.float32), ("fp64", torch.float64)):
                if prec not in precs and not (prec == "fp32" and "tf32" in precs):
                    continue
                xt = img64.to(dt).contiguous()
                K = torch.conj(torch.fft.rfft2(k64, s=(size, size))).to(
                    torch.complex64 if dt == torch.float32 else torch.complex128)
                res = {}

                def tfft():
                    res["y"] = torch.fft.irfft2(torch.fft.rfft2(xt) * K, s=(size, size))[
                        : size - k + 1, : size - k + 1]

                ms = time_call(tfft)
                rows.append({"impl": "peer:torch_fft", "precision": prec, **base,
                             "timing": "kernel", "median_ms": round(ms, 5), "runs": 20,
                             "mape_pct": mape_gpu(res["y"], ref)})
                print(json.dumps(rows[-1]), flush=True)
                del K, res
            if size > args.cudnn_max_size:
                continue
            for prec in precs:
                if prec == "fp64" and k > 25:
                    continue  # cuDNN fp64 took 0.16 s at k = 25 (H100); larger k only slower
                dt = TORCH[prec]
                torch.backends.cudnn.allow_tf32 = prec == "tf32"
                xi = img64.to(dt)[None, None].contiguous()
                w = k64.to(dt)[None, None].contiguous()
                res = {}

                def conv():
                    res["y"] = F.conv2d(xi, w)

                ms = time_call(conv, runs=20 if k <= 25 or prec == "tf32" else 5)
                rows.append({"impl": "peer:torch_conv2d", "precision": prec, **base,
                             "timing": "kernel", "median_ms": round(ms, 5),
                             "runs": 20 if k <= 25 or prec == "tf32" else 5,
                             "mape_pct": mape_gpu(res["y"][0, 0], ref)})
                print(json.dumps(rows[-1]), flush=True)
            torch.backends.cudnn.allow_tf32 = False
    meta["wall_s"] = round(time.time() - t0, 1)
    with open(args.out, "w") as f:
        json.dump(meta, f, indent=1)
    summarize(meta)
    return 0


def get(meta, impl, prec, k, size=4096):
    for r in meta["rows"]:
        if (r["impl"], r["precision"], r["kernel"][0], r["image"][0]) == (impl, prec, k, size):
            return r
    return None


def summarize(meta):
    print("\n== goals (4096^2, plan + CuPy, ms) ==")
    for prec, goals in GOALS.items():
        for k, goal in goals.items():
            best = None
            for m in ("toeplitz_tc", "naive_shmem", "fft"):
                r = get(meta, m, prec, k)
                if r and (best is None or r["median_ms"] < best["median_ms"]):
                    best = r
            a, f = get(meta, "auto", prec, k), get(meta, "fft", prec, k)
            if best is None:
                continue
            g = goal if goal is not None else (f["median_ms"] if f else float("nan"))
            print(f"{prec} k={k}: best {best['impl']} {best['median_ms']:.4f} "
                  f"(MAPE {best['mape_pct']}), auto -> {a and a.get('chose')} "
                  f"{a and a['median_ms']}, goal <= {g:.3f}: "
                  f"{'met' if best['median_ms'] <= g else 'MISSED'}")
    print("\n== scaling 16384^2 / 4096^2 (16 = linear) ==")
    for r in meta["rows"]:
        if r["image"][0] == 16384:
            r4 = get(meta, r["impl"], r["precision"], r["kernel"][0], 4096)
            if r4:
                print(f"{r['impl']:18s} {r['precision']:5s} k={r['kernel'][0]:2d} "
                      f"{r4['median_ms']:.4f} -> {r['median_ms']:.4f} ms: "
                      f"x{r['median_ms'] / r4['median_ms']:.1f}")


if __name__ == "__main__":
    sys.exit(main())
