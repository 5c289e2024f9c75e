"""'auto' on the CPU: predicted seconds of `direct` and `fft_cpu` for one call.

direct:  t = outputs * per_output + multiply-adds * per_mac
fft_cpu: t = fixed + units * per_unit   (units: _fft_cpu's operation count of its block plan)

The constants are measured on the machine that runs them by `tensorconv.calibrate_cpu()` (about
a second per precision) and kept in the user's cache directory, one file per machine (CPU model,
core count, SIMD path, package version); `auto` reads that file once per process. Before any
calibration the defaults below serve: they were measured on a 2-core AMD EPYC (Zen 4) VM, and
only the ratio of the two methods' constants decides anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import threading
import time
from pathlib import Path

import numpy as np

from . import _core, _fft_cpu

DEFAULTS = {  # seconds; see the module docstring (calibrate() on the Zen 4 VM, 2026-11-25)
    "fp32": {"per_output": 2.7e-10, "per_mac": 2.0e-11, "fft_fixed": 1.0e-5, "per_unit": 2.5e-10},
    "fp64": {"per_output": 5.0e-10, "per_mac": 3.9e-11, "fft_fixed": 1.0e-5, "per_unit": 5.5e-10},
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
    direct = next((m for m in _core.methods() if m[0] == "direct"), None)
    return {"cpu": model, "cores": os.cpu_count() or 1, "arch": platform.machine(),
            "direct_path": direct[7] if direct else "", "tensorconv": __version__}


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
                        c[p].update({k: float(v) for k, v in saved[p].items() if k in c[p]})
                except (OSError, KeyError, TypeError, ValueError):
                    pass
                _loaded = c
    return _loaded


def predict(precision: str, image_shape, kernel_shape) -> dict:
    """Predicted seconds of one valid correlation of a padded image by each CPU method."""
    c = constants()[_AS[precision]]
    (ih, iw), (kh, kw) = image_shape, kernel_shape
    outputs = float(ih - kh + 1) * (iw - kw + 1)
    return {"direct": outputs * (c["per_output"] + kh * kw * c["per_mac"]),
            "fft_cpu": c["fft_fixed"] + c["per_unit"] * _fft_cpu.fft_cost_units(ih, iw, kh, kw)}


def _time(plan, x, out, repeat: int) -> float:
    ts = []
    for _ in range(repeat + 1):  # the first call warms caches and threads
        t = time.perf_counter()
        plan.run(x.ctypes.data, x.shape[0], x.shape[1], x.shape[1], out.ctypes.data,
                 out.shape[0], out.shape[1], out.shape[1], str(x.dtype), False, 0)
        ts.append(time.perf_counter() - t)
    return float(np.median(ts[1:]))


def calibrate(save: bool = True, repeat: int = 5) -> dict:
    """Measure this machine's constants for fp32 and fp64 (direct at k = 3 and 15 on 512^2, so
    the per-output and per-multiply-add costs separate; fft_cpu on 1024^2 and 256^2, so the
    fixed and per-unit costs separate), save them to cost_file() and use them from now on."""
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
            outputs = float(out.size)
            per[k] = (_time(p, x, out, repeat) / outputs, k * k)
        # per-output time = a + b * taps at the two sizes
        (t3, m3), (t15, m15) = per[3], per[15]
        c["per_mac"] = max((t15 - t3) / (m15 - m3), 1e-13)
        c["per_output"] = max(t3 - m3 * c["per_mac"], 0.0)
        pts = []
        for n in (256, 1024):
            x = rng.random((n, n)).astype(dtype)
            p = _core.make_plan("fft_cpu", rng.random((15, 15)), n, n, precision)
            out = np.empty(p.out_shape, dtype)
            pts.append((_fft_cpu.fft_cost_units(n, n, 15, 15), _time(p, x, out, repeat)))
        (u0, t0), (u1, t1) = pts
        c["per_unit"] = max((t1 - t0) / (u1 - u0), 1e-13)
        c["fft_fixed"] = max(t0 - u0 * c["per_unit"], 0.0)
        result[precision] = c
    with _lock:
        _loaded = result
    if save:
        f = cost_file()
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"machine": machine(), "constants": result,
                                   "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                             time.gmtime())}, indent=1))
        tmp.replace(f)
    return result
