"""'auto' on the CPU: predicted seconds of `direct` and `fft_cpu` for one call.

direct:  t = outputs * per_output + multiply-adds * per_mac
fft_cpu: t = fft_fixed + sum over blocks of (units * per_unit(block size) + a per-block cost)
         (units: _fft_cpu.block_units, an operation count; per_unit is measured at the
         transform sizes fft_sizes^2 and interpolated in log size, so it rises where transforms
         leave the caches; the same numbers choose fft_cpu's block shape)

The constants (_cpu_constants) are measured on the machine that runs them by calibrate() below,
`tensorconv.calibrate_cpu()` (a few seconds), and kept in the user's cache directory, one file
per machine (CPU model, core count, SIMD path, package version); `auto` reads that file once per
process. Before any calibration _cpu_constants.DEFAULTS serve: they were measured on a 2-core
AMD EPYC (Zen 4) VM, and only the ratio of the two methods' constants decides anything.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

from . import _core, _fft_cpu
from ._cpu_constants import _AS, DEFAULTS, FFT_SIZES, constants, cost_file, machine, use
from ._cpu_constants import unit_seconds_fn


def predict(precision: str, image_shape, kernel_shape) -> dict:
    """Predicted seconds of one valid correlation of a padded image by each CPU method."""
    c = constants()[_AS[precision]]
    (ih, iw), (kh, kw) = image_shape, kernel_shape
    outputs = float(ih - kh + 1) * (iw - kw + 1)
    fft = _fft_cpu.choose_blocks(ih, iw, kh, kw, unit_seconds_fn(precision))[1]
    return {"direct": outputs * (c["per_output"] + kh * kw * c["per_mac"]),
            "fft_cpu": c["fft_fixed"] + fft}


def _time(plan, x, out, repeat: int) -> float:
    ts = []
    for _ in range(repeat + 1):  # the first call warms caches and threads
        t = time.perf_counter()
        plan.run(x.ctypes.data, x.shape[0], x.shape[1], x.shape[1], out.ctypes.data,
                 out.shape[0], out.shape[1], out.shape[1], str(x.dtype), False, 0)
        ts.append(time.perf_counter() - t)
    # the median, as the benchmarks report: on shared cores the whole transforms, which leave
    # the caches, lose more to other jobs than their least disturbed run shows
    return float(np.median(ts[1:]))


def calibrate(save: bool = True, repeat: int = 5) -> dict:
    """Measure this machine's constants for fp32 and fp64, save them to cost_file() and use them
    from now on: direct at k = 3 and 15 on 512^2 (the per-output and per-multiply-add costs
    separate), fft_cpu as one whole transform of each FFT_SIZES^2 (per-unit cost by size; the
    fixed cost from the smallest, where it matters)."""
    rng = np.random.default_rng(0)
    result = {}
    for precision, dtype in (("fp32", np.float32), ("fp64", np.float64)):
        c = {}
        n = 512
        x = rng.random((n, n)).astype(dtype)
        per = {}
        for k in (3, 15):
            p = _core.make_plan("direct", rng.random((k, k)), n, n, precision)
            out = np.empty(p.out_shape, dtype)
            per[k] = (_time(p, x, out, repeat) / out.size, k * k)
        # per-output time = a + b * taps at the two sizes
        (t3, m3), (t15, m15) = per[3], per[15]
        c["per_mac"] = max((t15 - t3) / (m15 - m3), 1e-13)
        c["per_output"] = max(t3 - m3 * c["per_mac"], 0.0)
        c["fft_fixed"] = DEFAULTS[precision]["fft_fixed"]
        c["per_unit"] = []
        for n in FFT_SIZES:
            x = rng.random((n, n)).astype(dtype)
            # a kernel small enough that the whole transform is n x n (no larger fast size)
            f = _fft_cpu.FftCpu(rng.random((5, 5)), n, n, precision, block=(n, n))
            out = np.empty(f.out_shape, dtype)
            f.run(x, out)  # warm-up
            ts = []
            for _ in range(repeat if n < 4096 else 3):
                t = time.perf_counter()
                f.run(x, out)
                ts.append(time.perf_counter() - t)
            t = float(np.median(ts))
            c["per_unit"].append(max(t - c["fft_fixed"], 1e-9) / _fft_cpu.block_units(n, n))
        result[precision] = c
    use(result)
    if save:
        f = cost_file()
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"machine": machine(), "constants": result,
                                   "fft_sizes": FFT_SIZES,
                                   "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                             time.gmtime())}, indent=1))
        tmp.replace(f)
    return result
