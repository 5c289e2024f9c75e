"""The CPU float path (issue #18): tensorconv's `auto`, `direct` and `fft_cpu` against
scipy.signal.correlate2d (small cases), scipy.signal.fftconvolve and oaconvolve,
scipy.ndimage.correlate and cv2.filter2D (float32), images 512^2..4096^2, square kernels
k = 3..63, float32 and float64, all timed in the same run, interleaved round by round
(cpu_u8.run_config: median of up to 20 runs, fewer for slow calls, recorded per row).

Every call is end to end from NumPy: tensorconv.correlate2d(x, k, 'valid') (its plan cache warm
after the first call, as in any repeated use; the first call is the warm-up), the scipy
functions in 'valid' mode on the flipped kernel, ndimage and OpenCV in their native
same-size output. The measured FMA peak (a register-only FMA loop, csrc/cpu/fma_peak.cpp) and
the load average are printed and saved. Writes benchmarks/results/cpu_float_<host>.json and
cpu_float.png (speed-up of auto over the fastest peer against k).

    python benchmarks/cpu_float.py [--sizes 512,1024] [--ks 3,15] [--precisions fp32]
    (a subset is written with a _subset suffix)
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # no idle BLAS threads spinning on 2 cores

import argparse
import json
import socket
import time
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_u8 import doc_header, run_config  # noqa: E402  (same harness, same rules)

import tensorconv as tc  # noqa: E402
from tensorconv import _core, _cpu_cost  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SIZES = (512, 1024, 2048, 4096)
KS = (3, 5, 7, 9, 11, 15, 25, 35, 45, 55, 63)
MAX_RUNS = 20
# peers measured only where a call takes at most this long (estimated from a measured rate)
SLOW_PEER_S = 4.0
SCIPY_CORRELATE2D_MAX_MACS = 3e8  # "small cases"
# the peers auto must beat (issue #18); scipy.signal.correlate2d is listed but not a goal peer
GOAL_PEERS = ("peer:cv2.filter2D", "peer:scipy.fftconvolve", "peer:scipy.oaconvolve",
              "peer:scipy.ndimage.correlate")


def fma_peaks():
    return {p: round(_core.fma_peak_gflops(p, 0, 0.5), 1) for p in ("fp32", "fp64")}


def small_call(scipy, n_calls=2000, repeat=7):
    """Issue #18 item 4: correlate2d on a 32x32 float64 image with a 3x3 kernel against
    scipy.signal.correlate2d, per call (median over `repeat` loops of n_calls calls each,
    interleaved), every mode."""
    x = np.random.default_rng(1).random((32, 32))
    k = np.random.default_rng(2).random((3, 3))
    res = {}
    for mode in ("full", "same", "valid"):
        fns = {"tensorconv": lambda: tc.correlate2d(x, k, mode),
               "scipy": lambda: scipy.signal.correlate2d(x, k, mode)}
        ts = {name: [] for name in fns}
        for fn in fns.values():  # warm-up: plan cache, lazy imports, caches
            for _ in range(n_calls // 10):
                fn()
        for _ in range(repeat):
            for name, fn in fns.items():
                t = time.perf_counter()
                for _ in range(n_calls):
                    fn()
                ts[name].append((time.perf_counter() - t) / n_calls * 1e6)
        res[mode] = {name: float(np.median(v)) for name, v in ts.items()}
        res[mode]["ratio"] = res[mode]["tensorconv"] / res[mode]["scipy"]
        print(f"32x32, 3x3, {mode}: tensorconv {res[mode]['tensorconv']:.1f} us, scipy "
              f"{res[mode]['scipy']:.1f} us (x{res[mode]['ratio']:.2f} of scipy's time)",
              flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default=None)
    ap.add_argument("--ks", default=None)
    ap.add_argument("--precisions", default="fp32,fp64")
    ap.add_argument("--max-runs", type=int, default=MAX_RUNS)
    args = ap.parse_args()
    import cv2
    import scipy
    import scipy.ndimage
    import scipy.signal

    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else SIZES
    ks = tuple(int(k) for k in args.ks.split(",")) if args.ks else KS
    precisions = tuple(args.precisions.split(","))
    load0 = os.getloadavg()
    peak0 = fma_peaks()
    print(f"load average {load0}; FMA peak (GFLOP/s, {_core.fma_peak_isa()}, all cores): {peak0}",
          flush=True)
    small = small_call(scipy)
    rows = []
    rng = np.random.default_rng(0)
    ndimage_rate = {}  # seconds per multiply-add, from the first measured call
    for precision in precisions:
        dtype = np.float32 if precision == "fp32" else np.float64
        for n in sizes:
            x = rng.random((n, n)).astype(dtype)
            for k in ks:
                kern = rng.random((k, k)).astype(dtype)
                flipped = np.ascontiguousarray(kern[::-1, ::-1])
                macs = float(n - k + 1) ** 2 * k * k
                chosen = tc.plan(kern, x.shape, mode="valid").method
                impls = {
                    "auto": lambda: tc.correlate2d(x, kern, "valid"),
                    "direct": lambda: tc.correlate2d(x, kern, "valid", method="direct"),
                    "fft_cpu": lambda: tc.correlate2d(x, kern, "valid", method="fft_cpu"),
                    "peer:scipy.fftconvolve": lambda: scipy.signal.fftconvolve(
                        x, flipped, "valid"),
                    "peer:scipy.oaconvolve": lambda: scipy.signal.oaconvolve(x, flipped, "valid"),
                }
                skipped = {}
                est = ndimage_rate.get(precision, 0.0) * n * n * k * k
                if est <= SLOW_PEER_S:
                    impls["peer:scipy.ndimage.correlate"] = lambda: scipy.ndimage.correlate(
                        x, kern, mode="constant")
                else:
                    skipped["peer:scipy.ndimage.correlate"] = est
                if macs <= SCIPY_CORRELATE2D_MAX_MACS:
                    impls["peer:scipy.correlate2d"] = lambda: scipy.signal.correlate2d(
                        x, kern, "valid")
                if dtype == np.float32:
                    impls["peer:cv2.filter2D"] = lambda: cv2.filter2D(
                        x, -1, kern, borderType=cv2.BORDER_CONSTANT)
                load = os.getloadavg()[0]
                res, outs = run_config(impls, args.max_runs)
                if "peer:scipy.ndimage.correlate" in res and precision not in ndimage_rate:
                    ndimage_rate[precision] = res["peer:scipy.ndimage.correlate"][0] / (
                        n * n * k * k)
                ref = outs["peer:scipy.fftconvolve"].astype(np.float64)
                scale = float(np.abs(ref).max())
                for name, (med, runs) in res.items():
                    row = {"impl": name, "precision": precision, "image": [n, n],
                           "kernel": [k, k], "timing": "end_to_end", "median_ms": med * 1e3,
                           "runs": runs, "load1": load}
                    if not name.startswith("peer:"):
                        out = outs[name].astype(np.float64)
                        row["max_rel_diff_vs_fftconvolve"] = float(
                            np.abs(out - ref).max() / scale)
                        row["gflops"] = 2 * macs / med / 1e9
                    if name == "auto":
                        row["method"] = chosen
                    rows.append(row)
                for name, est in skipped.items():
                    rows.append({"impl": name, "precision": precision, "image": [n, n],
                                 "kernel": [k, k], "timing": "end_to_end", "median_ms": None,
                                 "runs": 0, "skipped": f"estimated {est:.1f} s per call from "
                                 f"its measured rate (> {SLOW_PEER_S} s)",
                                 "estimated_ms": est * 1e3})
                peers = {nm: res[nm][0] for nm in GOAL_PEERS if nm in res}
                best = min(peers, key=peers.get)
                line = " ".join(f"{nm.replace('peer:', '').replace('scipy.', '')}="
                                f"{m * 1e3:.2f}" for nm, (m, _) in res.items())
                print(f"{precision} {n}^2 k={k} auto->{chosen}: {line}  | auto/best peer "
                      f"({best.replace('peer:', '')}) x{peers[best] / res['auto'][0]:.2f} "
                      f"[load {load:.1f}]", flush=True)
    peak1 = fma_peaks()
    load1 = os.getloadavg()
    host = socket.gethostname()
    doc = doc_header(cv2, scipy)
    cost_file = _cpu_cost.cost_file()
    doc.update({
        "direct_path": next(m.note for m in tc.methods() if m.name == "direct"),
        "fma_peak_gflops": {"isa": _core.fma_peak_isa(), "start": peak0, "end": peak1},
        "load_average": {"start": load0, "end": load1},
        "auto_constants": _cpu_cost.constants(),
        "auto_constants_file": str(cost_file) if cost_file.exists() else None,
        "small_call": small,
        "rows": rows})
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "_subset" if args.sizes or args.ks or args.precisions != "fp32,fp64" else ""
    out = RESULTS / f"cpu_float_{host}{suffix}.json"
    out.write_text(json.dumps(doc, indent=1))
    print("wrote", out)
    out.with_suffix(".md").write_text(markdown(doc))
    summarize(doc)
    plot(doc, RESULTS / f"cpu_float{suffix}.png")


def speedups(doc):
    """{(precision, n, k): (auto's speed-up over the fastest goal peer, that peer, auto's
    method)} from the rows of one run."""
    cells = {}
    for r in doc["rows"]:
        if r["median_ms"] is None:
            continue
        cells.setdefault((r["precision"], r["image"][0], r["kernel"][0]), {})[r["impl"]] = r
    out = {}
    for key, c in sorted(cells.items()):
        peers = {nm: c[nm]["median_ms"] for nm in GOAL_PEERS if nm in c}
        best = min(peers, key=peers.get)
        out[key] = (peers[best] / c["auto"]["median_ms"], best, c["auto"].get("method"))
    return out


def summarize(doc):
    s = speedups(doc)
    peak = max(max(doc["fma_peak_gflops"]["start"]["fp32"], doc["fma_peak_gflops"]["end"]["fp32"]),
               1e-9)
    for p in ("fp32", "fp64"):
        v = [x[0] for key, x in s.items() if key[0] == p]
        if not v:
            continue
        worst = min((x[0], key) for key, x in s.items() if key[0] == p)
        print(f"{p}: auto / fastest peer: min x{min(v):.2f} at {worst[1][1]}^2 k={worst[1][2]}, "
              f"median x{np.median(v):.2f} over {len(v)} points "
              f"({sum(x >= 1.0 for x in v)} >= 1.0)")
    for r in doc["rows"]:
        if r["impl"] == "direct" and r["precision"] == "fp32" and r["kernel"][0] == 15:
            print(f"direct fp32 k=15 {r['image'][0]}^2: {r['gflops']:.1f} GFLOP/s = "
                  f"{100 * r['gflops'] / peak:.0f}% of the measured FMA peak {peak:.1f}")


def markdown(doc) -> str:
    """Per precision: auto's time, its method, the fastest goal peer and the speed-up, per
    image size (rows) and k (columns); then direct's share of the FMA peak."""
    s = speedups(doc)
    ms = {(r["precision"], r["image"][0], r["kernel"][0], r["impl"]): r["median_ms"]
          for r in doc["rows"] if r["median_ms"] is not None}
    short = {"peer:cv2.filter2D": "cv2", "peer:scipy.fftconvolve": "fftconv",
             "peer:scipy.oaconvolve": "oaconv", "peer:scipy.ndimage.correlate": "ndimage"}
    lines = [f"# CPU float benchmark: {doc['device']}", "",
             f"created {doc['created']}, load average at start {doc['load_average']['start']}, "
             f"end {doc['load_average']['end']}; FMA peak (GFLOP/s, {doc['fma_peak_gflops']['isa']}"
             f"): start {doc['fma_peak_gflops']['start']}, end {doc['fma_peak_gflops']['end']}; "
             f"direct: {doc['direct_path']}", "",
             "Cells: auto ms (d = direct, f = fft_cpu) / fastest peer ms (name) = speed-up.", ""]
    for p in ("fp32", "fp64"):
        keys = sorted(k for k in s if k[0] == p)
        if not keys:
            continue
        ks = sorted({k[2] for k in keys})
        lines += [f"## {p}", "", "| image | " + " | ".join(f"k={k}" for k in ks) + " |",
                  "|---" * (len(ks) + 1) + "|"]
        for n in sorted({k[1] for k in keys}):
            cells = []
            for k in ks:
                if (p, n, k) not in s:
                    cells.append("")
                    continue
                x, peer, method = s[(p, n, k)]
                cells.append(f"{ms[(p, n, k, 'auto')]:.3g} {method[0]} / "
                             f"{ms[(p, n, k, peer)]:.3g} {short[peer]} = x{x:.2f}")
            lines.append(f"| {n}² | " + " | ".join(cells) + " |")
        v = [s[k][0] for k in keys]
        lines += ["", f"min x{min(v):.2f}, median x{np.median(v):.2f}, "
                      f"{sum(x >= 1.0 for x in v)} of {len(v)} points >= 1.0", ""]
    return "\n".join(lines) + "\n"


def plot(doc, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = speedups(doc)
    precs = [p for p in ("fp32", "fp64") if any(key[0] == p for key in s)]
    fig, axes = plt.subplots(1, len(precs), figsize=(6.5 * len(precs), 4.5), squeeze=False)
    for ax, p in zip(axes[0], precs):
        for n in sorted({key[1] for key in s if key[0] == p}):
            ks = sorted(key[2] for key in s if key[0] == p and key[1] == n)
            ax.plot(ks, [s[(p, n, k)][0] for k in ks], marker="o", label=f"{n}²")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.axhline(1.5, color="gray", lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_xlabel("kernel size k (k x k)")
        ax.set_ylabel("auto speed-up over the fastest peer")
        peers = "cv2.filter2D, " if p == "fp32" else ""
        ax.set_title(f"{p}: vs fastest of {peers}fftconvolve, oaconvolve, ndimage", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(title="image")
    fig.suptitle(f"tensorconv auto on {doc['device']} (end to end, median; load "
                 f"{doc['load_average']['start'][0]:.1f})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("wrote", path)


if __name__ == "__main__":
    main()
