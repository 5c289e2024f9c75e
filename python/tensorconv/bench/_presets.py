"""Presets: each paper's evaluation as parts of one sweep, and the u8 grid (Kelefouras)."""

from __future__ import annotations

import time
from math import comb

import numpy as np

import tensorconv as tc

from ._sweep import Part
from ._timing import time_device, time_host, time_interleaved

GPU_PEERS = ("torch_conv2d", "torch_fft", "cupy_correlate", "cupy_fftconvolve")
CPU_PEERS = ("scipy_signal", "scipy_fftconvolve", "scipy_oaconvolve", "scipy_ndimage", "opencv")
ALL_PEERS = GPU_PEERS + CPU_PEERS
PRECISIONS = tc.PRECISIONS
# Kelefouras & Keramidas (2022) section 4: 300x200 .. 5184x3456, k = 3, 5, 7, 9.
U8_SIZES = ((200, 300), (480, 640), (600, 800), (768, 1024), (720, 1280), (1024, 1280),
            (1200, 1600), (1080, 1920), (1536, 2048), (2400, 2400), (1440, 2560), (1944, 2592),
            (2000, 3000), (2448, 3264), (2160, 3840), (3000, 4000), (3072, 4096), (3456, 4608),
            (2880, 5120), (3456, 5184))


def correlate_methods(device: str | None = None) -> tuple:
    """Every correlate2d method of the registry (on one device, or all): new methods appear
    here with no edit."""
    return tuple(m.name for m in tc.methods() if m.entry == "correlate2d"
                 and (device is None or m.device == device))


def im2tensor() -> list:
    """Seznec et al. 2022: Fig. 9 (the im2tensor variants, fp16, 1024², k = 1..60, cuDNN fp16
    and torch.fft fp32 beside them); Table 3 and Fig. 10 (4096², k = 3, 15, 25, 35, 55, every
    GPU method x precision, 'auto', and the GPU peers); Table 4 (extra memory, from Table 3's
    rows at k = 15)."""
    variants = tuple(n for n in correlate_methods("cuda") if n.startswith("im2tensor"))
    return [Part("fig9", (1024,), tuple(range(1, 61)), ("fp16", "fp32"), variants,
                 ("torch_conv2d", "torch_fft"), only={"fp32": ("peer:torch_fft",)}),
            Part("table3", (4096,), (3, 15, 25, 35, 55), PRECISIONS,
                 correlate_methods("cuda") + ("auto",), GPU_PEERS)]


def kondo() -> list:
    """Kondo et al. 2022 Figs. 4 and 6 (part 'general'): a Gaussian (sigma = r / 2 as there; here
    k / 6) as a general kernel, r = 1..23 (k = 2r + 1), 128² and 4096², the FIR methods beside
    naive_shmem and im2tensor_fused, fp16fp32 (the paper's), fp16 and bf16; cuDNN fp16. Fig. 5
    (part 'fig5', the bilateral layouts against the CUDA-core kernel) is bench/_filters.py's
    fig5_rows, run by the CLI after this part."""
    fir = tuple(n for n in correlate_methods("cuda") if n.startswith("fir_"))
    return [Part("kondo", (128, 4096), tuple(2 * r + 1 for r in range(1, 24)),
                 ("fp16fp32", "fp16", "bf16"), fir + ("naive_shmem", "im2tensor_fused"),
                 ("torch_conv2d",), kind="gaussian")]


def separable() -> list:
    """Rank-1 (Gaussian) kernels: separable against the general methods, every precision."""
    return [Part("separable", (1024, 4096), (3, 7, 15, 25, 35, 55), PRECISIONS,
                 ("separable", "naive_shmem", "fft", "im2tensor_fused", "direct", "fft_cpu",
                  "auto"), ("torch_conv2d", "torch_fft"), kind="gaussian",
                 timing=("kernel", "end_to_end"))]


def gpu_core() -> list:
    """The GPU core: naive, naive_shmem, separable and fft in every precision they have,
    1024² and 4096², k = 3..55, cuDNN and torch.fft in the same run; separable also on a
    Gaussian (its rank-1 case); kernel time and end to end."""
    return [Part("gpu_core", (1024, 4096), (3, 15, 25, 35, 55), PRECISIONS,
                 ("naive", "naive_shmem", "separable", "fft"), ("torch_conv2d", "torch_fft"),
                 gaussian_for=("separable",), timing=("kernel", "end_to_end"))]


def tc_fp() -> list:
    """tf32, fp32 and fp64 at 4096² and 16384², k = 3..55: toeplitz_tc, fft,
    naive_shmem and 'auto' against torch.fft and cuDNN (TF32 only in tf32 rows), timed as a
    user's call of a plan on device arrays ('call': CUDA events, no sleep kernel, so Python
    dispatch is inside)."""
    return [Part("tc_fp", (4096, 16384), (3, 15, 25, 35, 55), ("tf32", "fp32", "fp64"),
                 ("toeplitz_tc", "fft", "naive_shmem", "auto"), ("torch_fft", "torch_conv2d"),
                 timing=("call",), device="cuda")]


def workspace_nonfinite() -> list:
    """What the NaN/inf repair costs
    (im2tensor_fused and fft in every precision, separable on a Gaussian, 4096²: part
    repair_finite on the USC-SIPI image, repair_nonfinite on the same image holding a NaN, a
    +inf and a -inf; fp16 fft beside fp16fp32 and fp32 is the fp16 slow spot), fft's
    overlap-save tiles at 16384² against torch.fft, and (workspace_rows) every CUDA method's
    workspace at 4096² and 32768², plan only."""
    ks = (3, 15, 25, 35, 55)
    precs = ("fp16", "fp16fp32", "bf16", "fp32", "fp64")
    methods = ("im2tensor_fused", "fft")
    return [Part("repair_finite", (4096,), ks, precs, methods, gaussian_for=("separable",)),
            Part("repair_nonfinite", (4096,), ks, precs, methods, gaussian_for=("separable",),
                 data="nonfinite"),
            Part("fft_tiles", (16384,), (15, 55), ("fp32", "fp64"), ("fft",), ("torch_fft",))]


def workspace_rows(sweep, sides=(4096, 32768), ks=(15, 55)) -> None:
    """Every available CUDA correlate2d method x precision: Plan.workspace_bytes with a random
    k x k kernel on side x side images (plan only, nothing timed; a plan that cannot be made is
    a row whose note names the error, e.g. MemoryError with its bytes)."""
    import gc

    for m in tc.methods():
        if m.entry != "correlate2d" or m.device != "cuda" or not m.available:
            continue
        for prec in m.precisions:
            for k in ks:
                for side in sides:
                    if sweep.out_of_time():
                        sweep.skipped_for_time += 1
                        continue
                    row = {"impl": m.name, "precision": prec, "image": [side, side],
                           "kernel": [k, k], "kernel_kind": "random", "part": "workspace",
                           "timing": "plan", "median_ms": None}
                    try:
                        p = tc.plan(np.random.default_rng(1000 + k).random((k, k)),
                                    (side, side), mode="valid", method=m.name, precision=prec)
                        row["extra_bytes"] = int(p.workspace_bytes)
                        del p
                    except (MemoryError, ValueError, RuntimeError) as e:
                        row["note"] = f"{type(e).__name__}: {e}"[:200]
                    gc.collect()
                    sweep.rows.append(row)


def scipy_compat() -> list:
    """The complex-data goals (complex_rows)."""
    return []


def astropy() -> list:
    """The astropy front end against astropy.convolution (astropy_rows)."""
    return []


def _max_rel(got, ref) -> float:
    """Max relative error on the finite reference values; inf when the NaN patterns differ."""
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if not np.array_equal(np.isnan(got), np.isnan(ref)):
        return float("inf")
    f = np.isfinite(ref) & (ref != 0)
    return float(np.max(np.abs(got[f] - ref[f]) / np.abs(ref[f]))) if f.any() else 0.0


def _astropy_cpu_point(sweep, x, kk, base, runs, ap_convolve, ap_convolve_fft, tca, warning):
    """One point's CPU rows of astropy_rows (shared rounds of random order)."""
    import warnings

    n, k = base["image"][0], base["kernel"][0]
    slow = n >= 4096 and k >= 55  # astropy's convolve: minutes a call
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", warning)
        ref = None if slow else ap_convolve(x, kk)
        ref_fft = ap_convolve_fft(x, kk)
        ours, ours_fft = tca.convolve(x, kk), tca.convolve_fft(x, kk)
        fns = {"peer:astropy_convolve_fft": lambda i: ap_convolve_fft(x, kk),
               "tensorconv.astropy.convolve": lambda i: tca.convolve(x, kk),
               "tensorconv.astropy.convolve_fft": lambda i: tca.convolve_fft(x, kk)}
        if not slow:
            fns["peer:astropy_convolve"] = lambda i: ap_convolve(x, kk)
        res = dict(zip(fns, time_interleaved(list(fns.values()), runs, 1, sweep.row_cap_s)))
    key = "max_rel_vs_astropy" if ref is not None else "max_rel_vs_astropy_fft"
    want = ref if ref is not None else ref_fft
    err = {"tensorconv.astropy.convolve": _max_rel(ours, want),
           "tensorconv.astropy.convolve_fft": _max_rel(ours_fft, want)}
    for impl, (ms, done) in res.items():
        sweep.rows.append({"impl": impl, **base, "timing": "end_to_end",
                           "median_ms": round(ms, 4), "runs": done,
                           **({key: err[impl]} if impl in err else {})})
    if slow:
        sweep.rows.append({"impl": "peer:astropy_convolve", **base, "timing": "end_to_end",
                           "median_ms": None, "note": "left out: minutes a call"})


def astropy_rows(sweep, sizes=(1024, 2048, 4096), ks=(3, 15, 55), runs=20,
                 timing=("end_to_end", "kernel")) -> None:
    """tensorconv.astropy.convolve / convolve_fft against astropy.convolution. Images 0.1 + 0.9 U[0, 1) (seeded by the side), with no
    NaN and with 1 % scattered NaN pixels; Gaussian2DKernel(k / 6) sampled on k x k; float64 and
    float32; boundary='fill', nan_treatment='interpolate' (astropy's defaults).
    CPU: ours ('auto') and astropy's convolve and convolve_fft, end to end, every call of a
    point in shared rounds of random order (astropy's slow calls take fewer runs, said by
    "runs"; its convolve at >= 4096² with k >= 55 takes minutes a call and is left out, said by
    a note); max relative error against astropy's convolve (else its convolve_fft).
    GPU (a usable device and CuPy): the same points on device arrays, CUDA events: ours by
    'auto' (and at 4096², k = 15 by each GPU method 'auto' may pick) beside a plain
    tensorconv.correlate2d(mode='same') of the same method (the front end's cost) and
    convolve_fft; error against our CPU float64 result. `timing`: 'end_to_end' runs the CPU
    rows, 'kernel' the GPU rows (--timing end_to_end / kernel; default both)."""
    import warnings

    try:
        from astropy.convolution import Gaussian2DKernel
        from astropy.convolution import convolve as ap_convolve
        from astropy.convolution import convolve_fft as ap_convolve_fft
        from astropy.utils.exceptions import AstropyUserWarning
    except ImportError as e:
        sweep.log(f"preset astropy skipped: astropy is not installed ({e})")
        return
    from tensorconv import astropy as tca

    def image(n, frac, dt):
        rng = np.random.default_rng(n)
        x = 0.1 + 0.9 * rng.random((n, n))
        if frac:
            x[rng.random((n, n)) < frac] = np.nan
        return x.astype(dt)

    cp = None
    if sweep.device.lib is not None and "kernel" in timing:
        try:
            import cupy as cp
        except Exception as e:  # ImportError, or CuPy without its CUDA libraries
            sweep.log(f"astropy GPU rows skipped: CuPy is not usable here ({e})")
    gpu_named = [m.name for m in tc.methods() if m.device == "cuda" and m.available
                 and m.name in ("naive_shmem", "separable", "fft", "im2tensor_fused")]
    for n in sorted(sizes):
        for k in ks:
            if sweep.out_of_time():
                sweep.skipped_for_time += 1
                continue
            kk = Gaussian2DKernel(k / 6.0, x_size=k, y_size=k).array
            for frac in (0.0, 0.01):
                kind = f"gaussian, NaN {frac:.0%}"
                x64 = image(n, frac, "float64")
                for dt, prec in (("float64", "fp64"), ("float32", "fp32")):
                    x = x64.astype(dt)
                    base = {"precision": prec, "image": [n, n], "kernel": [k, k],
                            "kernel_kind": kind, "part": "astropy", "dtype": dt,
                            "nan_frac": frac}
                    if "end_to_end" in timing:
                        _astropy_cpu_point(sweep, x, kk, base, runs, ap_convolve,
                                           ap_convolve_fft, tca, AstropyUserWarning)
                    if cp is None:
                        continue
                    xd = cp.asarray(x)
                    cpu64 = tca.convolve(x64, kk)  # float64 on the CPU (tests: = astropy)
                    names = ["auto"] + (gpu_named if (n, k) == (4096, 15) else [])
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", AstropyUserWarning)
                        for m in names:
                            info = {r.name: r for r in tc.methods()}.get(m)
                            if info is not None and prec not in info.precisions:
                                continue
                            try:
                                out = tca.convolve(xd, kk, method=m)
                            except (ValueError, MemoryError) as e:
                                sweep.rows.append({"impl": f"tensorconv.astropy.convolve:{m}",
                                                   **base, "timing": "kernel",
                                                   "median_ms": None, "note": str(e)[:200]})
                                continue
                            used = tca._PLANS[next(reversed(tca._PLANS))][0].method
                            ms, done = time_device(sweep.device,
                                                   lambda i, m=m: tca.convolve(xd, kk, method=m),
                                                   runs, 3, sweep.row_cap_s)
                            plain, pd = time_device(sweep.device, lambda i, u=used: tc.correlate2d(
                                xd, kk, "same", method=u), runs, 3, sweep.row_cap_s)
                            sweep.rows += [
                                {"impl": f"tensorconv.astropy.convolve:{m}", **base,
                                 "timing": "kernel", "chose": used, "median_ms": round(ms, 5),
                                 "runs": done,
                                 "max_rel_vs_reference": _max_rel(cp.asnumpy(out), cpu64)},
                                {"impl": f"peer:correlate2d_same:{used}", **base,
                                 "timing": "kernel", "median_ms": round(plain, 5), "runs": pd}]
                        out = tca.convolve_fft(xd, kk)
                        ms, done = time_device(sweep.device, lambda i: tca.convolve_fft(xd, kk),
                                               runs, 3, sweep.row_cap_s)
                        sweep.rows.append({"impl": "tensorconv.astropy.convolve_fft:auto", **base,
                                           "timing": "kernel", "median_ms": round(ms, 5),
                                           "runs": done, "max_rel_vs_reference":
                                           _max_rel(cp.asnumpy(out), cpu64)})


def _rel_l2(got, want) -> float:
    return float(np.linalg.norm(np.asarray(got) - want) / np.linalg.norm(want))


def complex_rows(sweep, cpu_point=(1024, 15), gpu_point=(4096, 55), runs=20) -> None:
    """The speed goals for complex data, peers in the same run. CPU: complex128 image and kernel (cpu_point: side, k), valid,
    `direct` (four real correlations of the parts) against scipy.signal.correlate2d, end to end,
    median of 3 (scipy's call takes seconds). GPU (a usable device and CuPy): complex64
    (gpu_point), `fft` (C2C transforms) and cupyx.scipy.signal.fftconvolve on device arrays,
    kernel timing (median of `runs`), the real fp32 `fft` beside them. rel_l2 against scipy's result (CPU) or a
    complex128 fftconvolve (GPU). Rows of complex data have kernel_kind 'complex'."""
    import scipy.signal as ss

    n, k = cpu_point
    rng = np.random.default_rng(0)
    a = rng.random((n, n)) + 1j * rng.random((n, n))
    kern = rng.random((k, k)) + 1j * rng.random((k, k))
    want = ss.correlate2d(a, kern, "valid")
    base = {"precision": "fp64", "image": [n, n], "kernel": [k, k], "kernel_kind": "complex",
            "part": "scipy_compat", "dtype": "complex128", "timing": "end_to_end"}
    err = _rel_l2(tc.correlate2d(a, kern, "valid", method="direct"), want)
    for impl, fn, extra in (
            ("peer:scipy_signal", lambda i: ss.correlate2d(a, kern, "valid"), {}),
            ("direct", lambda i: tc.correlate2d(a, kern, "valid", method="direct"),
             {"rel_l2": err})):
        ms, runs = time_host(fn, 3, 1, sweep.row_cap_s)
        sweep.rows.append({"impl": impl, **base, "median_ms": round(ms, 3), "runs": runs,
                           **extra})
    if sweep.device.lib is None:
        return  # the CLI said why in one line
    try:
        import cupy as cp
        import cupyx.scipy.signal as cs
    except Exception as e:  # ImportError, or CuPy without its CUDA libraries
        sweep.log(f"scipy-compat GPU rows skipped: CuPy is not usable here ({e})")
        return
    n, k = gpu_point
    rng = np.random.default_rng(1)
    ad = cp.asarray((rng.random((n, n)) + 1j * rng.random((n, n))).astype(np.complex64))
    kd = cp.asarray((rng.random((k, k)) + 1j * rng.random((k, k))).astype(np.complex64))
    kflip = cp.ascontiguousarray(cp.conj(kd[::-1, ::-1]))  # correlation as a convolution
    want = cs.fftconvolve(ad.astype(cp.complex128), kflip.astype(cp.complex128), "valid")
    base = {"precision": "fp32", "image": [n, n], "kernel": [k, k], "part": "scipy_compat",
            "timing": "kernel"}

    def err(out):
        return float(cp.linalg.norm(out - want) / cp.linalg.norm(want))

    p = tc.plan(kd, (n, n), mode="valid", method="fft", precision="fp32")
    pr = tc.plan(cp.ascontiguousarray(kd.real), (n, n), mode="valid", method="fft",
                 precision="fp32")
    ar = cp.ascontiguousarray(ad.real)
    for impl, fn, kind, extra in (
            ("peer:cupy_fftconvolve", lambda: cs.fftconvolve(ad, kflip, "valid"), "complex",
             {"dtype": "complex64"}),
            ("fft", lambda: p(ad), "complex", {"dtype": "complex64"}),
            ("fft", lambda: pr(ar), "random", {"dtype": "float32", "note": "real data"})):
        rel = err(fn()) if kind == "complex" else None
        ms, done = time_device(sweep.device, lambda i, fn=fn: fn(), runs, 3, sweep.row_cap_s)
        sweep.rows.append({"impl": impl, **base, "kernel_kind": kind, "median_ms": round(ms, 4),
                           "runs": done, **({"rel_l2": rel} if rel is not None else {}),
                           **extra})


def kelefouras() -> list:
    """Kelefouras & Keramidas 2022: the u8 grid (see u8_sweep)."""
    return []


def cpu_float() -> list:
    """The CPU float grid: 512²..4096², k = 3..63, fp32 and fp64, 'auto' (on the CPU)
    and every CPU registry method against scipy.signal (correlate2d where a call is short,
    fftconvolve, oaconvolve), scipy.ndimage.correlate and cv2.filter2D, end to end from NumPy
    (timed in shared rounds per point;
    fma_peaks and small_call_rows add the FMA peak, load average and 32x32 small-call rows)."""
    return [Part("cpu_float", (512, 1024, 2048, 4096),
                 (3, 5, 7, 9, 11, 15, 25, 35, 45, 55, 63), ("fp32", "fp64"),
                 correlate_methods("cpu") + ("auto",), CPU_PEERS, timing=("end_to_end",),
                 device="cpu", interleave=True)]


def family() -> list:
    """filters, stacks, dask, oneshot, torch: rows of their own (bench/_filters.py, _stacks.py,
    _dask.py, _oneshot.py, _torch.py)."""
    return []


PRESETS = {"im2tensor": im2tensor, "kondo": kondo, "kelefouras": kelefouras,
           "separable": separable, "cpu-float": cpu_float, "gpu-core": gpu_core,
           "tc-fp": tc_fp, "scipy-compat": scipy_compat,
           "workspace-nonfinite": workspace_nonfinite, "astropy": astropy,
           "filters": family, "stacks": family, "dask": family, "oneshot": family, "torch": family}


def fma_peaks() -> dict:
    """GFLOP/s of a register-only FMA loop on every core (csrc/cpu/fma_peak.cpp): the roof the
    CPU rows are read against."""
    core = tc._core
    if not hasattr(core, "fma_peak_gflops"):
        return {}
    return {"isa": core.fma_peak_isa(),
            **{p: round(core.fma_peak_gflops(p, 0, 0.5), 1) for p in ("fp32", "fp64")}}


def small_call_rows(n_calls: int = 2000, repeat: int = 7) -> list:
    """tensorconv.correlate2d against scipy.signal.correlate2d on a 32x32
    float64 image and a 3x3 kernel, per call, every mode (median of `repeat` loops of n_calls
    calls, interleaved; plan cache and lazy imports warmed first)."""
    import scipy.signal

    x = np.random.default_rng(1).random((32, 32))
    k = np.random.default_rng(2).random((3, 3))
    rows = []
    for mode in ("full", "same", "valid"):
        fns = {"auto": lambda: tc.correlate2d(x, k, mode),
               "peer:scipy_signal": lambda: scipy.signal.correlate2d(x, k, mode)}
        ts = {name: [] for name in fns}
        for fn in fns.values():
            for _ in range(max(1, n_calls // 10)):
                fn()
        for _ in range(repeat):
            for name, fn in fns.items():
                t = time.perf_counter()
                for _ in range(n_calls):
                    fn()
                ts[name].append((time.perf_counter() - t) / n_calls * 1e3)
        for name, v in ts.items():
            rows.append({"impl": name, "precision": "fp64", "image": [32, 32], "kernel": [3, 3],
                         "mode": mode, "kernel_kind": "random", "part": "small_call",
                         "timing": "end_to_end", "median_ms": round(float(np.median(v)), 6),
                         "runs": repeat, "calls_per_run": n_calls})
    return rows



def u8_kernels(k: int) -> dict:
    """The three kernel cases : random non-separable
    kernels, all coefficients drawn at random (fixed seed) as the paper's non-symmetric filter2D
    kernel, whose exact sums fit 16-bit IRs (filter2d16) or need 32-bit IRs (filter2d32); and the
    binomial Gaussian (separable, symmetric; divisor a power of two)."""
    rng = np.random.default_rng(100 + k)
    small = rng.integers(0, max(2, 240 // (k * k)), (k, k))
    small[k // 2, k // 2] = max(2, 240 // (k * k))  # non-zero centre, different values
    large = rng.integers(-16, 33, (k, k))
    b = np.array([comb(k - 1, i) for i in range(k)])
    return {"filter2d16": (small.astype(np.int8), int(small.sum())),
            "filter2d32": (large.astype(np.int8), int(max(1, large.sum()))),
            "gaussian": (np.outer(b, b).astype(np.int16), int(b.sum() ** 2))}


# The paper's speed-up goals per kernel case: simd_u8 over the peer named.
U8_GOALS = {"filter2d16": ("peer:opencv", 2.0), "filter2d32": ("peer:opencv", 2.0),
            "gaussian": ("peer:opencv_gaussianblur", 1.5)}


def u8_sweep(sweep, sizes=U8_SIZES, ks=(3, 5, 7, 9), peers=("opencv",), progress=None,
             runs=20, threads=None):
    """simd_u8 (tensorconv.filter2d_u8) on the three kernel cases against OpenCV's filter2D
    (and GaussianBlur, ksize k and sigma from k, for the Gaussian) and, when asked
    (--peers opencv,scipy_ndimage), scipy.ndimage.correlate on uint8 (mode 'mirror' =
    BORDER_REFLECT_101); end to end (the call, output allocated by the callee); every call of a
    point timed in shared rounds in a fresh random order (a call that follows scipy finds its
    caches flushed: a fixed order favoured some), median of up to `runs`; `threads` for both
    libraries (None: all). simd_u8 rows record the algorithm, IR width and division case
    filter2d_u8_info chose, and max |difference| from cv2.filter2D of the same kernel."""
    cv2 = nd = None
    if "opencv" in peers:
        try:
            import cv2
        except ImportError as e:
            sweep.log(f"peer opencv skipped: cv2 is not installed ({e})")
    if cv2 is not None and threads:
        cv2.setNumThreads(threads)
    if "scipy_ndimage" in peers:
        import scipy.ndimage as nd
    rng = np.random.default_rng(0)
    for h, w in sizes:
        img = rng.integers(0, 256, (h, w), dtype=np.uint8)
        for k in ks:
            if sweep.out_of_time():
                sweep.skipped_for_time += 1
                if progress:
                    progress.update(1)
                continue
            fns, rows = [], []
            for case, (kernel, div) in u8_kernels(k).items():
                base = {"precision": "uint8", "image": [h, w], "kernel": [k, k],
                        "kernel_kind": case, "part": "kelefouras", "timing": "end_to_end"}
                ours = tc.filter2d_u8(img, kernel, div, border="reflect101", threads=threads)
                info = tc.filter2d_u8_info(kernel, div)
                row = {"impl": "simd_u8", **base, "path": tc.simd_u8_path(),
                       "algorithm": info["algorithm"], "ir_bits": info["ir_bits"],
                       "division_case": info["division_case"]}
                fns.append(lambda i, kernel=kernel, div=div: tc.filter2d_u8(
                    img, kernel, div, border="reflect101", threads=threads))
                rows.append(row)
                kf = kernel.astype(np.float32) / div
                if cv2 is not None:
                    theirs = cv2.filter2D(img, -1, kf, borderType=cv2.BORDER_REFLECT_101)
                    row["max_abs_diff_vs_opencv"] = int(np.abs(ours.astype(int) - theirs).max())
                    fns.append(lambda i, kf=kf: cv2.filter2D(img, -1, kf,
                                                             borderType=cv2.BORDER_REFLECT_101))
                    rows.append({"impl": "peer:opencv", **base})
                    if case == "gaussian":
                        fns.append(lambda i: cv2.GaussianBlur(img, (k, k), 0,
                                                              borderType=cv2.BORDER_REFLECT_101))
                        rows.append({"impl": "peer:opencv_gaussianblur", **base})
                if nd is not None:
                    fns.append(lambda i, kf=kf: nd.correlate(img, kf, output=np.uint8,
                                                             mode="mirror"))
                    rows.append({"impl": "peer:scipy_ndimage", **base})
            for row, (ms, done) in zip(rows, time_interleaved(fns, runs, 2, sweep.row_cap_s)):
                sweep.rows.append({**row, "median_ms": round(ms, 5), "runs": done,
                                   "cps": round(h * w / (ms / 1e3))})
            if progress:
                progress.update(1)
