"""The measured constants of the CPU cost model (_cpu_cost): the defaults, the file one
calibration keeps per machine, and the seconds per operation unit of a transform block by its
size, which fft_cpu's block choice (_fft_cpu) and the model's predictions both read. The
constants are measured by `tensorconv.calibrate_cpu()` (_cpu_cost.calibrate); see _cpu_cost's
docstring for the model they serve."""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import threading
from pathlib import Path

import numpy as np

from . import _core

FFT_SIZES = (256, 1024, 2048, 4096)
DEFAULTS = {  # seconds (the Zen 4 VM of _cpu_cost's docstring, shared with other jobs, 2026-11-25)
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


def use(constants_by_precision: dict) -> None:
    """Use these constants from now on in this process (a calibration's result)."""
    global _loaded
    with _lock:
        _loaded = constants_by_precision
