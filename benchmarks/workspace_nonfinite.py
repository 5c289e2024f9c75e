"""Issue #17 items 4-6 on the GPU: what the NaN/inf repair costs, the fp16 slow spots, fft's
overlap-save tiles at 16384², and every method's workspace at 4096² and 32768².

    python benchmarks/workspace_nonfinite.py --out benchmarks/results

Timing as benchmarks/gpu_core.py (its time_plan / event_median: data on the device, CUDA events,
warm-up, median of 20). Rows (docs/design.md format) carry "data": "finite" or "nonfinite" (one
NaN, one +inf and one -inf planted, so the repair pass runs). torch.fft (kernel spectrum
precomputed) is timed in the same run at 16384². The workspace table is plan-only
(Plan.workspace_bytes; a plan that cannot be made is listed with its MemoryError)."""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from gpu_core import event_median, random_kernel, time_plan  # noqa: E402

import tensorconv as tc  # noqa: E402

KS = (3, 15, 25, 35, 55)


def image(size, nonfinite):
    g = torch.Generator(device="cuda").manual_seed(size)
    img = torch.rand((size, size), generator=g, device="cuda", dtype=torch.float64)
    if nonfinite:
        img[size // 3, size // 5] = float("nan")
        img[size // 2, size // 2] = float("inf")
        img[size - 7, 3] = float("-inf")
    return img


def row(impl, prec, size, k, ms, extra, **kw):
    return {"impl": impl, "precision": prec, "image": [size, size], "kernel": [k, k],
            "timing": "kernel", "median_ms": round(ms, 4), "runs": 20, "extra_bytes": extra, **kw}


def torch_fft_ms(img64, k, dtype):
    """Peer: valid correlation through torch.fft, the kernel's spectrum precomputed."""
    h, w = img64.shape
    x = img64.to(dtype)
    kern = torch.tensor(random_kernel(k), dtype=dtype, device="cuda")
    K = torch.conj(torch.fft.rfft2(kern, s=(h, w)))

    def fn(_):
        return torch.fft.irfft2(torch.fft.rfft2(x) * K, s=(h, w))[: h - k + 1, : w - k + 1]

    return event_median(fn, 1)


def timings(rows):
    for nonfinite in (False, True):
        img = image(4096, nonfinite)
        data = "nonfinite" if nonfinite else "finite"
        for prec in ("fp16", "fp16fp32", "bf16"):
            for k in KS:
                p = tc.plan(random_kernel(k), (4096, 4096), mode="valid",
                            method="im2tensor_fused", precision=prec)
                ms, _ = time_plan(p, img, prec)
                rows.append(row("im2tensor_fused", prec, 4096, k, ms, p.workspace_bytes, data=data))
        for prec in ("fp32", "fp16fp32"):
            for k in (15, 55):
                x = np.arange(k) - (k - 1) / 2
                g = np.exp(-0.5 * (x / (k / 6)) ** 2)
                p = tc.plan(np.outer(g, g), (4096, 4096), mode="valid", method="separable",
                            precision=prec)
                ms, _ = time_plan(p, img, prec)
                rows.append(row("separable", prec, 4096, k, ms, p.workspace_bytes, data=data,
                                kernel_kind="gaussian"))
        print("timed", data, flush=True)
    img = image(4096, False)
    for prec in ("fp16", "fp16fp32", "fp32"):
        for k in KS:
            p = tc.plan(random_kernel(k), (4096, 4096), mode="valid", method="fft", precision=prec)
            ms, _ = time_plan(p, img, prec)
            rows.append(row("fft", prec, 4096, k, ms, p.workspace_bytes, data="finite"))
    del img
    img = image(16384, False)
    for prec, dt in (("fp32", torch.float32), ("fp64", torch.float64)):
        for k in (15, 55):
            p = tc.plan(random_kernel(k), (16384, 16384), mode="valid", method="fft",
                        precision=prec)
            ms, _ = time_plan(p, img, prec)
            rows.append(row("fft", prec, 16384, k, ms, p.workspace_bytes, data="finite"))
            del p
            rows.append(row("peer:torch_fft", prec, 16384, k, torch_fft_ms(img, k, dt), None,
                            data="finite"))
            torch.cuda.empty_cache()
    print("timed fft", flush=True)


def workspace_table():
    """Every correlate2d method (registry order) x precision: workspace at 4096² and 32768²
    with a 15x15 and a 55x55 random kernel (plan only)."""
    out = []
    for m in tc.methods():
        if m.entry != "correlate2d" or m.device != "cuda" or not m.available:
            continue
        for prec in m.precisions:
            for k in (15, 55):
                r = {"method": m.name, "precision": prec, "kernel": k}
                for side in (4096, 32768):
                    try:
                        p = tc.plan(random_kernel(k), (side, side), mode="valid", method=m.name,
                                    precision=prec)
                        r[str(side)] = int(p.workspace_bytes)
                        del p
                    except (MemoryError, ValueError) as e:
                        r[str(side)] = f"{type(e).__name__}: {e}"[:200]
                    torch.cuda.empty_cache()
                out.append(r)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    dev = torch.cuda.get_device_name()
    slug = dev.lower().replace(" ", "-")
    rows = []
    timings(rows)
    ws = workspace_table()
    res = {"device": dev, "created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "tensorconv": tc.__version__,
           "versions": {"torch": torch.__version__, "cuda": torch.version.cuda},
           "rows": rows, "workspace": ws}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"workspace_nonfinite_{slug}.json"
    path.write_text(json.dumps(res, indent=1))
    plot(res, out / f"workspace_nonfinite_{slug}.png")
    print("wrote", path)


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    ax = axes[0]
    for prec in ("fp16", "fp16fp32", "bf16"):
        for data, ls in (("finite", "-"), ("nonfinite", "--")):
            pts = [(r["kernel"][0], r["median_ms"]) for r in res["rows"]
                   if r["impl"] == "im2tensor_fused" and r["precision"] == prec
                   and r["data"] == data]
            if pts:
                ax.plot(*zip(*pts), ls, marker="o", label=f"{prec} {data}")
    pts = [(r["kernel"][0], r["median_ms"]) for r in res["rows"]
           if r["impl"] == "fft" and r["precision"] == "fp16" and r["image"][0] == 4096]
    ax.plot(*zip(*pts), ":", marker="s", label="fft fp16")
    pts = [(r["kernel"][0], r["median_ms"]) for r in res["rows"]
           if r["impl"] == "fft" and r["precision"] == "fp32" and r["image"][0] == 4096]
    ax.plot(*zip(*pts), ":", marker="s", label="fft fp32")
    ax.set(xlabel="k", ylabel="ms (median of 20)", title=f"4096², {res['device']}")
    ax.legend(fontsize=7)
    ax = axes[1]
    names, a, b = [], [], []
    for r in res["workspace"]:
        if r["kernel"] != 55 or r["precision"] not in ("fp16fp32", "fp32"):
            continue
        names.append(f"{r['method']} {r['precision']}")
        a.append(r["4096"] if isinstance(r["4096"], int) else np.nan)
        b.append(r["32768"] if isinstance(r["32768"], int) else np.nan)
    y = np.arange(len(names))
    ax.barh(y - 0.2, np.array(a) / 2**20 + 1e-3, 0.4, label="4096²")
    ax.barh(y + 0.2, np.array(b) / 2**20 + 1e-3, 0.4, label="32768² (missing: MemoryError)")
    ax.set_yticks(y, names, fontsize=6)
    ax.set_xscale("log")
    ax.set(xlabel="workspace MiB (k = 55)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
