"""'auto' on the CPU: predicted seconds of `direct` and `fft_cpu` for one call.

direct:  t = outputs * per_output + multiply-adds * per_mac
fft_cpu: t = fft_fixed + sum over blocks of (units * per_unit(block size) + a per-block cost)
         (units: _fft_cpu.block_units, an operation count; per_unit is measured at the
         transform sizes fft_sizes^2 and interpolated in log size, so it rises where transforms
         leave the caches; the same numbers choose fft_cpu's block shape)

The constants are measured on the machine that runs them by `tensorconv.calibrate_cpu()` (a few
seconds) and kept in the user's cache directory, one file per machine (CPU model, core count,
SIMD path, package version); `auto` reads that file once per process. Before any calibration the
defaults below serve: they were measured on a 2-core AMD EPYC (Zen 4) VM, and only the ratio of
the two methods' constants decides anything.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import threading
import time
from pathlib import Path

import numpy as np

from . import _core, _fft_cpu

FFT_SIZES = (256, 1024, 2048, 4096)
DEFAULTS = {  # seconds; see the module docstring (the Zen 4 VM shared with other jobs, 2026-11-25)
    "fp32": {"per_output": 3.3e-10, "per_mac": 1.6e-11, "fft_fixed": 3.0e-5,
             "per_unit": [2.2e-10, 2.6e-10, 3.6e-10, 4.0e-10]},
    "fp64": {"per_output": 3.3e-10, "per_mac": 2.6e-11, "fft_fixed": 3.0e-5,
             "per_unit": [2.6e-10, 3.6e-10, 5.5e-10, 7.0e-10]},
}
# fp16fp32 runs the fp32 code after widening half to float (direct) or in fp32 (fft_cpu)
_AS = {"fp16fp32": "fp32", "fp32": "fp32", "fp64": "fp64"}

_lock = threading.Lock()
_loaded: dict | None = None


def machine() -> dict:
    """What a calibration is valid for."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    from . import __version__
    direct = next((m for m in _core.methods() if m.name == "direct"), None)
    return {"cpu": model, "cores": os.cpu_count() or 1, "arch": platform.machine(),
            "direct_path": direct.note if direct else "", "tensorconv": __version__}


def cost_file() -> Path:
    from .datasets import cache_dir

    m = machine()
    h = hashlib.sha1(json.dumps(m, sort_keys=True).encode()).hexdigest()[:12]
    return cache_dir() / "cpu_cost" / f"{h}.json"


def constants() -> dict:
    """The calibrated constants of this machine, else the defaults (read once per process)."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                c = {p: dict(v) for p, v in DEFAULTS.items()}
                try:
                    saved = json.loads(cost_file().read_text())["constants"]
                    for p in c:
                        for k, v in saved[p].items():
                            if k in c[p] and isinstance(v, list) == isinstance(c[p][k], list):
                                c[p][k] = [float(x) for x in v] if isinstance(v, list) \
                                    else float(v)
                except (OSError, KeyError, TypeError, ValueError):
                    pass
                _loaded = c
    return _loaded


def unit_seconds_fn(precision: str):
    """elements -> seconds per operation unit in a transform block of that many elements
    (piecewise linear in log2 elements between the calibrated sizes, constant outside)."""
    per = constants()[_AS[precision]]["per_unit"]
    xs = [2 * math.log2(n) for n in FFT_SIZES]
    return lambda e: float(np.interp(math.log2(e), xs, per))


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
    global _loaded
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
    with _lock:
        _loaded = result
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
