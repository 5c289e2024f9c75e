"""Drivers for compute-sanitizer (tests/sanitize/run_all.sh): each runs one area of the GPU code
on odd shapes and checks every result against scipy / astropy / a float64 reference, so that a
silent fault (a wrong result without a sanitizer report) fails too. Exit status 0 only when every
check passed; one line per check.

    python tests/sanitize/drivers.py {methods|filters|staging|dask|astropy} [--memory]

--memory (no sanitizer, the GPU to itself: the count is the device's): the area three times,
each followed by clear_plan_cache(); the device memory still in use after the third must be
what it was after the first (within MEMORY_SLACK_MIB). The first round's rise is the CUDA
libraries' and the per-device state's, kept for the process's life; growth after it is a leak.
memcheck's exit-time leak report cannot tell the two apart, so run_all.sh runs memcheck for
access errors and this for leaks.
"""

import sys

import numpy as np
import scipy.ndimage as ndi
import scipy.signal as ss

import tensorconv as tc
from tensorconv.metrics import relative_l2

BOUND = {"fp16": 3e-2, "fp16fp32": 5e-3, "bf16": 3e-2, "tf32": 5e-3, "fp32": 1e-5, "fp64": 1e-12}
_FAIL = []


def _ok(name, err, bound):
    good = bool(np.isfinite(err) and err <= bound)
    print(f"{name}: err {err:.2e} (bound {bound:g}) {'ok' if good else 'FAIL'}", flush=True)
    if not good:
        _FAIL.append(name)


def _cupy():
    import cupy as cp

    return cp


def methods(rng):
    """Every GPU correlate2d method x precision on odd shapes (tile and lane edges), device
    arrays, valid and same modes; naive_shmem's fixed fp32 sizes 3..17 and its 33-tap chunks."""
    cp = _cupy()
    for m in tc.methods():
        if m.device != "cuda" or m.entry != "correlate2d" or not m.available:
            continue
        sizes = [(5, 4), (3, 3), (1, 7), (33, 2)]
        if m.name == "naive_shmem":
            sizes += [(k, k) for k in range(3, 18, 2)] + [(33, 33)]
        for p in m.precisions:
            for ks in sizes:
                x = rng.standard_normal((37 + ks[0], 71 + ks[1]))
                k = rng.standard_normal(ks)
                for mode in ("valid", "same"):
                    try:
                        out = tc.correlate2d(cp.asarray(x), k, mode, method=m.name, precision=p)
                    except ValueError as e:  # a documented limit of the method, not a fault
                        print(f"{m.name} {p} {ks} {mode}: not taken ({e})"[:160], flush=True)
                        continue
                    ref = ss.correlate2d(x, k, mode)
                    _ok(f"{m.name} {p} kernel {ks} {mode}", relative_l2(cp.asnumpy(out), ref),
                        BOUND[p] * (10 if m.name.startswith(("naive", "separable")) and
                                    p == "fp16" else 1))


def filters(rng):
    """tensorconv.filters: gaussian (every order, modes) and bilateral on odd shapes."""
    cp = _cupy()
    x = rng.random((61, 83))
    for mode in ("reflect", "constant", "nearest", "mirror", "wrap"):
        for order in (0, 1):
            out = tc.filters.gaussian(cp.asarray(x), 2.5, order=order, mode=mode)
            ref = ndi.gaussian_filter(x, 2.5, order=order, mode=mode)
            _ok(f"gaussian order {order} {mode}", float(np.abs(cp.asnumpy(out) - ref).max()),
                2e-5)
    xb = 0.05 + 0.95 * rng.random((45, 67))
    for m in tc.methods():
        if m.entry != "filters.bilateral" or m.device != "cuda" or not m.available:
            continue
        for p in m.precisions:
            out = tc.filters.bilateral(cp.asarray(xb), 2.0, 0.2, method=m.name, precision=p)
            ref = tc.filters.bilateral(xb, 2.0, 0.2, method="bilateral_cpu", precision="fp64")
            _ok(f"bilateral {m.name} {p}",
                float(np.abs(cp.asnumpy(out) - ref).max() / np.abs(ref).max()),
                5e-3 if p == "fp16fp32" else 1e-5)


def staging(rng):
    """Host (NumPy) arrays on CUDA methods: the pinned staging pipeline, images and stacks,
    every boundary, odd shapes, and one large enough for several staged chunks."""
    for method in ("naive_shmem", "naive", "fft", "separable"):
        if not {m.name: m for m in tc.methods()}[method].available:
            continue
        for boundary in ("fill", "wrap", "symm"):
            x = rng.standard_normal((3, 131, 97))
            k = rng.standard_normal((7, 6))
            out = tc.correlate2d(x, k, "same", boundary, 0.5, method=method, precision="fp64",
                                 batch=True)
            ref = np.stack([ss.correlate2d(xi, k, "same", boundary, 0.5) for xi in x])
            _ok(f"staging {method} {boundary} stack", relative_l2(out, ref), 1e-12)
    x = rng.standard_normal((3001, 2999)).astype(np.float32)
    k = rng.standard_normal((9, 9)).astype(np.float32)
    out = tc.correlate2d(x, k, "valid", method="naive_shmem")
    ref = ss.correlate2d(x.astype(np.float64), k.astype(np.float64), "valid")
    _ok("staging naive_shmem 3001x2999 fp32", relative_l2(out, ref), 1e-5)


def dask(rng):
    """tensorconv.dask on the local synchronous scheduler: CuPy chunks gathered with halos."""
    import dask
    import dask.array as da

    import tensorconv.dask as tcd

    cp = _cupy()
    x = rng.standard_normal((301, 257))
    k = rng.standard_normal((7, 5))
    for mode in ("full", "same", "valid"):
        d = da.from_array(cp.asarray(x), chunks=(97, 89), asarray=False)
        with dask.config.set(scheduler="synchronous"):
            out = tcd.correlate2d(d, k, mode, method="naive_shmem", precision="fp64").compute()
        _ok(f"dask naive_shmem {mode}", relative_l2(cp.asnumpy(out), ss.correlate2d(x, k, mode)),
            1e-12)


def astropy(rng):
    """tensorconv.astropy: NaN interpolation on the device (nan_treatment='interpolate')."""
    import astropy.convolution as ac

    import tensorconv.astropy as tca

    cp = _cupy()
    x = 0.1 + 0.9 * rng.random((73, 91))
    x[rng.random(x.shape) < 0.05] = np.nan
    x[30:34, 40:45] = np.nan
    k = ac.Gaussian2DKernel(1.5).array
    for boundary in ("fill", "extend", "wrap"):
        for fn, ref_fn in ((tca.convolve, ac.convolve), (tca.convolve_fft, ac.convolve_fft)):
            if fn is tca.convolve_fft and boundary == "extend":
                continue  # astropy's convolve_fft has no 'extend'
            out = cp.asnumpy(fn(cp.asarray(x), k, boundary=boundary))
            ref = ref_fn(x, k, boundary=boundary)
            same_nan = np.array_equal(np.isnan(out), np.isnan(ref))
            fin = np.isfinite(ref)
            err = float(np.abs(out[fin] - ref[fin]).max() / np.abs(ref[fin]).max()) \
                if same_nan else np.inf
            _ok(f"astropy {fn.__name__} {boundary}", err, 1e-10)


AREAS = {"methods": methods, "filters": filters, "staging": staging, "dask": dask,
         "astropy": astropy}


def _release_device_memory():
    """Everything the process still holds on the device back to the driver: the plan cache's
    plans, CuPy's pooled blocks."""
    import gc

    tc.clear_plan_cache()
    gc.collect()
    cp = sys.modules.get("cupy")
    if cp is not None:
        cp.cuda.Device().synchronize()
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()


MEMORY_SLACK_MIB = 8


def _memory_rounds(area, rounds=3):
    import contextlib
    import io

    cp = _cupy()

    def used_mib():
        cp.cuda.Device().synchronize()
        free, total = cp.cuda.runtime.memGetInfo()
        return (total - free) / 2**20

    cp.zeros(1)
    held = []
    for r in range(rounds):
        with contextlib.redirect_stdout(io.StringIO()):  # the checks' lines: only failures
            AREAS[area](np.random.default_rng(r))
        _release_device_memory()
        held.append(used_mib())
        print(f"{area} round {r}: {held[-1]:.0f} MiB of device memory in use after "
              "clear_plan_cache()", flush=True)
    growth = held[-1] - held[0]
    good = growth <= MEMORY_SLACK_MIB
    print(f"{area}: device memory growth after the first round {growth:.1f} MiB "
          f"(at most {MEMORY_SLACK_MIB}) {'ok' if good else 'FAIL'}", flush=True)
    if not good:
        _FAIL.append(f"{area} memory growth")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--memory"]
    if len(args) != 1 or args[0] not in AREAS:
        sys.exit(f"usage: drivers.py {{{'|'.join(AREAS)}}} [--memory]")
    if not tc.cuda_available():
        sys.exit("no CUDA device: " + tc._core.cuda_unavailable_reason())
    if "--memory" in sys.argv:
        _memory_rounds(args[0])
    else:
        AREAS[args[0]](np.random.default_rng(0))
        _release_device_memory()
    print(f"{len(_FAIL)} failed checks", flush=True)
    sys.exit(1 if _FAIL else 0)
