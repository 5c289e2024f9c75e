"""method='auto' on the GPU from measurement: a cost model of kernel times per (precision, image
size, kernel size, method), measured on this device by tensorconv.tune() and kept in the user's
cache directory per device name and package version, or the shipped defaults (measured on an
H100, _auto_defaults.json) where no tuned model exists. On a GPU other than the one a model was
measured on, its times are scaled to this GPU (scale_to_device: the memory part of each time by
the bandwidths, the rest by SM count x clock), so the ranking follows what bounds each method.

A query takes, per method, the grid's image size nearest in log area where that method was
measured (a method missing there falls back to smaller grid sizes only, its time scaled by the
pixels), and interpolates its time log-linearly in the kernel's side between the two measured
sizes around it (clamped at the grid's ends). A method is left out where it cannot be trusted:
not deterministic (unless asked), a spectral method with a non-finite kernel, or a measured MAPE
above the precision's bound at either grid point around the query (without a measurement: its
bound above the precision's).
Rank-1 kernels use separable's time measured on a rank-1 (Gaussian) kernel; naive_shmem's fp32
rows on odd square kernels of 3..17 taps are its fixed-shape variant's (naive_fixed.cu) and
rank only kernels that variant takes."""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import time
from pathlib import Path

import numpy as np

from . import _bounds, _core
from .methods import PRECISIONS, methods

DEFAULTS = Path(__file__).with_name("_auto_defaults.json")
RANK1 = "separable:rank1"  # separable timed on a rank-1 kernel (its one-pass case)
FIXED = "naive_shmem:fixed"  # naive_shmem's fp32 variant with the kernel's shape compiled in
FIXED_MAX = 17  # csrc/cuda/methods/naive/naive_fixed.cuh, kNaiveFixedMaxTaps
SPECTRAL = frozenset({"fft"})  # NaN/inf in the kernel spread over the whole transform
FORMAT = 1


def slug(device: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") or "unknown"


def device_name() -> str:
    try:
        return str(_core.cuda_device_name())
    except Exception:  # a broken driver reads as "no device"
        return ""


def device_speed() -> dict | None:
    """This GPU's SM count, SM clock (MHz) and memory bandwidth (GB/s), or None without one."""
    try:
        s = dict(_core.cuda_device_speed())
    except Exception:  # a broken driver reads as "no device"
        return None
    return s if all(s.get(f) for f in ("sm_count", "sm_clock_mhz", "memory_bandwidth_gbs")) \
        else None


_STORE_BYTES = {p.name: np.dtype(p.storage).itemsize for p in _core.precisions()}


def traffic_bytes(method: str, precision: str, image_shape, kernel_shape) -> float:
    """Roughly the bytes a call moves through device memory: a direct or tensor-core method reads
    the image and writes the output once; a transform makes about three read-and-write passes
    over the half spectrum (complex fp32, or complex fp64 for fp64)."""
    (ph, pw), (kh, kw) = image_shape, kernel_shape
    if method in SPECTRAL:
        return 6.0 * ph * (pw // 2 + 1) * (16 if precision == "fp64" else 8)
    out = max(1, ph - kh + 1) * max(1, pw - kw + 1)
    return float(ph * pw + out) * _STORE_BYTES[precision]


def scale_to_device(ms: float, method: str, precision: str, image_shape, kernel_shape,
                    ref: dict, here: dict) -> float:
    """A time measured on GPU `ref` as GPU `here` would take it (speeds as `device_speed` gives
    them): its memory part (`traffic_bytes` at ref's bandwidth, at most the whole time) scaled by
    the bandwidths, the rest by SM count x clock.

    >>> ref = {"sm_count": 132, "sm_clock_mhz": 1980.0, "memory_bandwidth_gbs": 3352.0}
    >>> half = {"sm_count": 66, "sm_clock_mhz": 1980.0, "memory_bandwidth_gbs": 1676.0}
    >>> round(scale_to_device(0.3, "fft", "fp32", (4096, 4096), (55, 55), ref, half), 3)
    0.6
    >>> round(scale_to_device(0.3, "fft", "fp32", (4096, 4096), (55, 55), ref, ref), 3)
    0.3
    """
    mem = min(ms, traffic_bytes(method, precision, image_shape, kernel_shape)
              / (ref["memory_bandwidth_gbs"] * 1e6))  # GB/s = 1e6 bytes per ms
    compute = ref["sm_count"] * ref["sm_clock_mhz"] / (here["sm_count"] * here["sm_clock_mhz"])
    return mem * ref["memory_bandwidth_gbs"] / here["memory_bandwidth_gbs"] + (ms - mem) * compute


def model_path(device: str | None = None, version: str | None = None) -> Path:
    from . import __version__
    from .datasets import cache_dir

    device = device_name() if device is None else device
    return cache_dir() / "autotune" / f"{slug(device)}-{version or __version__}.json"


def fixed_applies(precision: str, kh: int, kw: int) -> bool:
    """Whether naive_shmem runs its fixed-shape variant (plan option naive_shmem.fixed=None)."""
    return precision == "fp32" and kh == kw and kh % 2 == 1 and 3 <= kh <= FIXED_MAX


def model_from_rows(rows, device: str, source: str) -> dict:
    """A cost model from benchmark rows (design.md's format): kernel-timed rows of registry
    methods on square kernels ('random' kernels; separable also on 'gaussian' ones, as RANK1).
    Rows with a variant, a band size or no time are left out; a repeated point keeps its
    fastest time and its worst MAPE."""
    from . import __version__

    pts: dict = {}
    for r in rows:
        if (r.get("timing") != "kernel" or r.get("median_ms") is None or "variant" in r
                or "band_mb" in r or r.get("data", "finite") != "finite"
                or r["impl"].startswith(("peer:", "auto"))):
            continue
        kh, kw = r["kernel"]
        if kh != kw:
            continue
        kind = r.get("kernel_kind", "random")
        name = r["impl"]
        if kind == "gaussian":
            if name != "separable":
                continue
            name = RANK1
        elif kind != "random":
            continue
        elif name == "naive_shmem" and fixed_applies(r["precision"], kh, kw):
            name = FIXED
        key = (r["precision"], tuple(r["image"]), kh)
        p = pts.setdefault(key, {"ms": {}, "mape": {}})
        p["ms"][name] = min(p["ms"].get(name, math.inf), float(r["median_ms"]))
        if r.get("mape_pct") is not None:
            p["mape"][name] = max(p["mape"].get(name, 0.0), float(r["mape_pct"]))
        elif "mape_pct" in r:  # measured and not finite: never trusted
            p["mape"][name] = math.inf
    points = [{"precision": pr, "image": list(im), "k": k, "ms": v["ms"],
               "mape": {m: (x if math.isfinite(x) else None) for m, x in v["mape"].items()}}
              for (pr, im, k), v in sorted(pts.items())]
    return {"format": FORMAT, "device": device, "tensorconv": __version__, "source": source,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "points": points}


_CACHE: dict = {}


def _read(path: Path):
    try:
        stat = path.stat()
    except OSError:
        return None
    hit = _CACHE.get(path)
    if hit and hit[0] == stat.st_mtime_ns:
        return hit[1]
    try:
        model = json.loads(path.read_text())
        if model.get("format") != FORMAT or not isinstance(model.get("points"), list):
            return None
    except (OSError, ValueError):
        return None
    _CACHE[path] = (stat.st_mtime_ns, model)
    return model


def models() -> list:
    """(label, model) to consult in order: this device's tuned model, then the shipped one."""
    out = []
    tuned = _read(model_path())
    if tuned is not None:
        out.append((f"tuned on this device ({model_path()})", tuned))
    shipped = _read(DEFAULTS)
    if shipped is not None:
        out.append((f"shipped defaults measured on {shipped['device']}", shipped))
    return out


def save(model: dict, path: Path | None = None) -> Path:
    path = path or model_path(model["device"], model["tensorconv"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(model, indent=1))
    tmp.replace(path)
    _CACHE.pop(path, None)
    return path


_save_model = save  # for tune(), whose argument `save` hides this name


def _bracket(values, x):
    """The two sorted grid values around x (the nearest twice beyond the ends)."""
    lo = [v for v in values if v <= x]
    hi = [v for v in values if v >= x]
    a = lo[-1] if lo else hi[0]
    b = hi[0] if hi else lo[-1]
    return a, b


def rank(precision: str, kernel_shape, image_shape, candidates, *, rank1: bool = False,
         finite_kernel: bool = True, deterministic: bool = True, fixed: bool = True):
    """Candidates (GPU method names) ranked by predicted kernel time. Returns (ranked names,
    predicted ms per name, excluded {name: why}, which model and grid points were used) or
    ([], {}, {}, why) when no model covers the precision. `fixed`: whether naive_shmem's
    fixed-shape variant may run (not for per-image kernels: their plans take the generic
    kernel)."""
    kh, kw = kernel_shape
    ph, pw = image_shape
    kside = math.sqrt(kh * kw)
    area = max(1, ph - kh + 1) * max(1, pw - kw + 1)
    here = device_speed()
    for label, model in models():
        pts = [p for p in model["points"] if p["precision"] == precision]
        if not pts:
            continue
        # a model measured on another GPU (the shipped defaults on a GPU never tuned): its times
        # scaled to this one's SMs, clock and bandwidth
        ref = model.get("speed")
        scale = ref if here and ref and model.get("device") != device_name() else None
        grids: dict = {}
        for p in pts:
            grids.setdefault(p["image"][0] * p["image"][1], {})[p["k"]] = p
        # the nearest grid size, then (for a method not measured there) smaller ones, whose
        # times scaled up by the pixels are if anything high (launches amortize); never a larger
        # one, whose scaled-down time would hide per-call overheads
        near = sorted(grids, key=lambda s: abs(math.log(s / area)))
        near = near[:1] + [s for s in near[1:] if s <= ph * pw]
        bound = _bounds.MAPE_PCT[precision]
        times, excluded, used = {}, {}, {}
        for m in candidates:
            if deterministic and m in _bounds.NONDETERMINISTIC:
                excluded[m] = "not deterministic (atomic accumulation order)"
                continue
            if m in SPECTRAL and not finite_kernel:
                excluded[m] = "spectral, and the kernel holds NaN/inf"
                continue
            # each method at the first of those grid sizes where it was measured (16384² rows
            # for some methods rank them there, methods measured at 4096² only still compete),
            # separable on a rank-1 kernel at its one-pass time wherever that was measured,
            # naive_shmem on the kernels its fixed-shape variant takes at that variant's times
            # (built models keep the generic kernel's fp32 times for the other kernels only)
            found = None
            if m == "separable" and rank1:
                names = (RANK1, m)
            elif m == "naive_shmem" and fixed and fixed_applies(precision, kh, kw):
                names = (FIXED, m)  # m: a model whose rows predate the variant
            else:
                names = (m,)
            for tm in names:
                for a in near:
                    k0, k1 = _bracket(sorted(grids[a]), kside)
                    p0, p1 = grids[a][k0], grids[a][k1]
                    if tm in p0["ms"] and tm in p1["ms"]:
                        found = (tm, a, k0, k1, p0, p1)
                        break
                if found:
                    break
            if found is None:
                excluded[m] = "not measured at this precision"
                continue
            tm, a, k0, k1, p0, p1 = found
            errs = [p["mape"].get(tm, p["mape"].get(m)) for p in (p0, p1)]
            if any(e is None and (m in p["mape"] or tm in p["mape"]) for e, p in zip(errs, (p0, p1))):
                excluded[m] = "its measured output was not finite"
                continue
            if any(e is not None and e > bound for e in errs):
                excluded[m] = (f"measured MAPE {max(e for e in errs if e is not None):.3g} % > "
                               f"{precision}'s bound {bound:g} %")
                continue
            if all(e is None for e in errs) and _bounds.mape_bound(m, precision) > bound:
                excluded[m] = (f"its bound {_bounds.mape_bound(m, precision):g} % exceeds "
                               f"{precision}'s {bound:g} %")
                continue
            t0, t1 = p0["ms"][tm], p1["ms"][tm]
            f = 0.0 if k1 == k0 else (min(max(kside, k0), k1) - k0) / (k1 - k0)
            # times scale with the pixels from the grid image they were measured on
            times[m] = math.exp(math.log(t0) + f * (math.log(t1) - math.log(t0))) * ph * pw / a
            if scale:
                times[m] = scale_to_device(times[m], m, precision, image_shape, kernel_shape,
                                           scale, here)
            used[m] = (a, k0, k1)
        if not times:
            continue
        order = sorted(times, key=times.get)
        a, k0, k1 = used[order[0]]
        side = round(math.sqrt(a))
        where = (f"{label}; grid image {side}x{side}, kernel sizes {k0}" +
                 (f" and {k1}" if k1 != k0 else "") + (" (rank-1: separable's one-pass time)"
                                                       if rank1 else "") +
                 ("; others at the grid sizes nearest this image where they were measured"
                  if len({u[0] for u in used.values()}) > 1 else "") +
                 (f"; times scaled from its {scale['sm_count']} SMs at "
                  f"{scale['sm_clock_mhz']:.0f} MHz and {scale['memory_bandwidth_gbs']:.0f} GB/s "
                  f"to this GPU's {here['sm_count']}, {here['sm_clock_mhz']:.0f} MHz and "
                  f"{here['memory_bandwidth_gbs']:.0f} GB/s" if scale else ""))
        return order, times, excluded, where
    return [], {}, {}, f"no measured model covers precision {precision!r}"


def is_rank1(kernel: np.ndarray, precision: str) -> bool:
    """Whether the kernel is rank 1 to the precision's tolerance: s1 <= tol s0 of its singular
    values (separable's one-pass case).

    Larger kernels (400 taps and more) are mostly proved not rank 1 without the SVD (230 us at
    55 x 55 on two cores, against 28 us): the 2 x 2 minors through the largest entry (p, q),
    D = K[p,q] K - K[:,q] K[p,:], are each at most s0 s1 (a 2 x 2 submatrix's singular values
    interlace K's), so s1 / s0 >= max|D| / ||K||_F^2. Where that bound clears 2 tol plus the SVD's own rounding, the SVD would
    say the same; elsewhere it decides.

    >>> import numpy as np
    >>> g = np.exp(-np.linspace(-2, 2, 9) ** 2)
    >>> is_rank1(np.outer(g, g), "fp32"), is_rank1(np.random.default_rng(0).random((9, 9)), "fp32")
    (True, False)
    """
    if min(kernel.shape) == 1:
        return kernel.size > 1
    if not np.isfinite(kernel).all():
        return False
    tol = 1e-13 if precision == "fp64" else 1e-6
    k = np.asarray(kernel, dtype=np.float64)
    if k.size >= 400:  # (smaller: the SVD is as quick as the bound)
        fro2 = float(np.vdot(k, k))
        p, q = np.unravel_index(np.argmax(np.abs(k)), k.shape)
        minors = float(np.abs(k[p, q] * k - np.outer(k[:, q], k[p, :])).max())
        if fro2 > 0 and minors / fro2 > 2 * tol + 64 * max(k.shape) * np.finfo(np.float64).eps:
            return False
    s = np.linalg.svd(k, compute_uv=False)
    return bool(s[0] > 0 and s[1] <= tol * s[0])


TUNE_SIZES = (4096, 1024)  # the goal grid first, should the budget end the run
TUNE_KERNELS = (3, 15, 25, 35, 55, 7)


def tune(sizes=TUNE_SIZES, kernels=TUNE_KERNELS, precisions=PRECISIONS, *,
         budget_s: float = 300.0, save: bool = True, progress: bool = True,
         out: Path | None = None) -> dict:
    """Measure ``method='auto'``'s GPU cost model on this device and keep it.

    Times every available CUDA correlate2d method (separable also on a rank-1 kernel) on this
    device over a grid of square images and kernels in each precision (kernel timing, median of
    10 after 2 warm-ups, MAPE against float64) and keeps the model in the user's cache directory
    for this device name and package version, where ``method='auto'`` reads it. Takes minutes
    (bounded by `budget_s`).

    Parameters
    ----------
    sizes : sequence of int, optional
        Square image sides of the grid.
    kernels : sequence of int, optional
        Square kernel sides of the grid.
    precisions : sequence of str, optional
        Precisions to time (default: all of `PRECISIONS`).
    budget_s : float, optional
        Wall-clock budget in seconds (default 300).
    save : bool, optional
        Keep the model in the cache directory (default True).
    progress : bool, optional
        Print progress.
    out : path, optional
        Also write the raw timing rows there as JSON.

    Returns
    -------
    dict
        The model, with ``'path'`` (where it was saved).

    Raises
    ------
    ValueError
        Without a usable CUDA device, without PyTorch or CuPy (needed for device arrays and CUDA
        events), or with an unknown precision.

    Examples
    --------
    >>> import tensorconv as tc
    >>> if tc.cuda_available():                 # doctest: +SKIP
    ...     model = tc.tune(sizes=(1024,), kernels=(3, 15), precisions=("fp32",), budget_s=60)
    """
    from . import _plan_cache, cuda_available
    from .bench._sweep import Part, Sweep
    from .bench._timing import Device

    if not cuda_available():
        raise ValueError("tune() times methods on a CUDA device: "
                         + _core.cuda_unavailable_reason())
    dev = Device()
    if dev.lib is None:
        raise ValueError("tune() needs PyTorch or CuPy for device arrays and CUDA events: "
                         + dev.why)
    bad = [p for p in precisions if p not in PRECISIONS]
    if bad:
        raise ValueError(f"unknown precision {bad[0]!r}; valid precisions: "
                         + ", ".join(PRECISIONS))
    names = tuple(m.name for m in methods() if m.device == "cuda" and m.available
                  and m.entry == "correlate2d")
    part = Part("tune", tuple(sizes), tuple(kernels), tuple(precisions), names,
                gaussian_for=("separable",), runs=10, warm=2)
    sweep = Sweep(dev, time.time() + budget_s, row_cap_s=3.0, image_source="random")
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(sizes) * len(kernels), desc="tune", unit="point")
        except ImportError:
            pass
    t0 = time.time()
    sweep.run(part, bar)
    if bar is not None:
        bar.close()
    device = device_name() or dev.name()
    model = model_from_rows(complete_points(sweep.rows, names), device,
                            "tensorconv.tune() on this device")
    model["speed"] = device_speed()
    model["seconds"] = round(time.time() - t0, 1)
    model["skipped_for_time"] = sweep.skipped_for_time
    if save:
        model["path"] = str(_save_model(dict(model)))
        _plan_cache.clear()  # cached 'auto' plans were chosen without this model
    else:
        model["path"] = None
    if out is not None:
        model["rows_file"] = str(_write_rows(Path(out), device, sweep.rows, model["seconds"],
                                             sweep.skipped_for_time))
    return model


def _write_rows(out: Path, device: str, rows: list, seconds: float, skipped: int) -> Path:
    """tune()'s raw rows as a results file (tensorconv-bench --report draws its tables and
    figures)."""
    from . import __version__

    out.mkdir(parents=True, exist_ok=True)
    path = out / ("tune_" + (re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") or "unknown")
                  + ".json")
    doc = {"device": device,
           "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "tensorconv": __version__, "title": "tensorconv.tune()", "command": "tensorconv.tune()",
           "seconds": seconds, "skipped_for_time": skipped, "rows": rows}
    path.write_text(json.dumps(doc, indent=1))
    return path


def complete_points(rows, names) -> list:
    """The rows of the grid points where every method of `names` that supports the precision
    has a row (timed or failed): a point the budget cut short would rank only part of them."""
    infos = {m.name: m for m in methods()}
    seen: dict = {}
    for r in rows:
        if r.get("kernel_kind", "random") == "random":
            key = (r["precision"], tuple(r["image"]), r["kernel"][0])
            seen.setdefault(key, set()).add(r["impl"])
    done = {key for key, got in seen.items()
            if {n for n in names if key[0] in infos[n].precisions} <= got}
    return [r for r in rows if (r["precision"], tuple(r["image"]), r["kernel"][0]) in done]


def _point_key(row: dict):
    return (row.get("impl"), row.get("precision"), tuple(row.get("image") or ()),
            tuple(row.get("kernel") or ()), row.get("kernel_kind", "random"), row.get("timing"),
            row.get("variant"), row.get("band_mb"))


def build_defaults(paths, out: Path = DEFAULTS, speed: dict | None = None) -> Path:
    """The shipped model from committed results files (rows of one device): the maintainers'
    step after a device run, e.g.
    python -c "from tensorconv._autotune import build_defaults as b; b(['benchmarks/auto_model/tune_h100.json'])"
    A later file's measurement of a point (method, precision, image, kernel) replaces the earlier
    files' (a method that changed since is measured again); within one file the fastest wins.
    `speed`: the measured GPU's SM count, clock and bandwidth (`_core.cuda_device_speed()`
    there), by which 'auto' scales the model on other GPUs.
    """
    rows, devices = [], set()
    for p in paths:
        doc = json.loads(Path(p).read_text())
        devices.add(doc["device"])
        new = doc["rows"]
        seen = {_point_key(r) for r in new}
        rows = [r for r in rows if _point_key(r) not in seen] + new
    if len(devices) != 1:
        raise ValueError(f"results of one device expected, got {sorted(devices)}")
    model = model_from_rows(rows, devices.pop(), "committed results: " + ", ".join(
        Path(p).name for p in paths))
    if speed:
        model["speed"] = dict(speed)
    return save(model, out)
