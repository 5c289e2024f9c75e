"""Issue #21's speed goals for complex data, with the peers in the same run:

  - CPU: complex128 1024², k = 15, valid, tensorconv `direct` (four real correlations of the
    parts) against scipy.signal.correlate2d (median of 3 wall-clock runs; scipy's is slow);
  - GPU (when one is usable): complex64 4096², k = 55, valid, tensorconv `fft` (C2C transforms,
    data on the device, CUDA events, median of 20) against cupyx.scipy.signal.fftconvolve, with
    the real fp32 `fft` beside it.

    python benchmarks/scipy_compat.py --out benchmarks/results/scipy_compat_<where>.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import timeit

import numpy as np
import scipy
import scipy.signal as ss

import tensorconv as tc


def wall_ms(fn, runs):
    """Median wall time in ms of `runs` calls after one warm-up call."""
    fn()
    return 1e3 * statistics.median(timeit.repeat(fn, number=1, repeat=runs))


def rel_err(got, want):
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def cpu_rows(rows):
    rng = np.random.default_rng(0)
    a = rng.random((1024, 1024)) + 1j * rng.random((1024, 1024))
    k = rng.random((15, 15)) + 1j * rng.random((15, 15))
    want = ss.correlate2d(a, k, "valid")
    base = {"precision": "fp64", "image": [1024, 1024], "kernel": [15, 15], "dtype": "complex128",
            "timing": "end_to_end"}
    ms = wall_ms(lambda: ss.correlate2d(a, k, "valid"), 3)
    rows.append({**base, "impl": "peer:scipy_correlate2d", "median_ms": round(ms, 3), "runs": 3})
    got = tc.correlate2d(a, k, "valid", method="direct")
    ms = wall_ms(lambda: tc.correlate2d(a, k, "valid", method="direct"), 3)
    rows.append({**base, "impl": "direct", "median_ms": round(ms, 3), "runs": 3,
                 "rel_l2": rel_err(got, want)})


def gpu_rows(rows):
    import cupy as cp
    import cupyx.scipy.signal as cs

    def event_ms(fn, runs=20, warmup=3):
        for _ in range(warmup):
            fn()
        ts = []
        for _ in range(runs):
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(cp.cuda.get_elapsed_time(s, e))
        return statistics.median(ts)

    rng = np.random.default_rng(1)
    n, kk = 4096, 55
    a = (rng.random((n, n)) + 1j * rng.random((n, n))).astype(np.complex64)
    k = (rng.random((kk, kk)) + 1j * rng.random((kk, kk))).astype(np.complex64)
    ad, kd = cp.asarray(a), cp.asarray(k)
    want = cs.fftconvolve(ad.astype(cp.complex128), cp.conj(kd[::-1, ::-1]).astype(cp.complex128),
                          "valid")
    base = {"image": [n, n], "kernel": [kk, kk], "timing": "kernel", "runs": 20}
    kflip = cp.ascontiguousarray(cp.conj(kd[::-1, ::-1]))
    ms = event_ms(lambda: cs.fftconvolve(ad, kflip, "valid"))
    rows.append({**base, "impl": "peer:cupyx_fftconvolve", "precision": "fp32",
                 "dtype": "complex64", "median_ms": round(ms, 4),
                 "rel_l2": rel_err(cs.fftconvolve(ad, kflip, "valid"), want).__float__()})
    p = tc.plan(kd, (n, n), mode="valid", method="fft", precision="fp32")
    out = p(ad)
    ms = event_ms(lambda: p(ad))
    rows.append({**base, "impl": "fft", "precision": "fp32", "dtype": "complex64",
                 "median_ms": round(ms, 4), "rel_l2": float(cp.linalg.norm(out - want) /
                                                            cp.linalg.norm(want)),
                 "note": "public Plan call (pads/casts included), C2C transforms"})
    pr = tc.plan(cp.asarray(k.real), (n, n), mode="valid", method="fft", precision="fp32")
    ar = cp.ascontiguousarray(ad.real)
    ms = event_ms(lambda: pr(ar))
    rows.append({**base, "impl": "fft", "precision": "fp32", "dtype": "float32",
                 "median_ms": round(ms, 4), "note": "real data, public Plan call"})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-cpu", action="store_true")
    args = ap.parse_args()
    rows = []
    meta = {"created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tensorconv": tc.__version__, "device": platform.processor() or platform.machine(),
            "versions": {"numpy": np.__version__, "scipy": scipy.__version__,
                         "python": platform.python_version()}, "rows": rows}
    if not args.no_cpu:
        cpu_rows(rows)
    if tc.cuda_available():
        import cupy as cp

        meta["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        meta["versions"]["cupy"] = cp.__version__
        gpu_rows(rows)
    for r in rows:
        print(json.dumps(r))
    with open(args.out, "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
