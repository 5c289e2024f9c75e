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
    """Kondo et al. 2022 Figs. 4-6: a Gaussian (sigma = r / 2 as there; here k / 6) as a general
    kernel, r = 1..23 (k = 2r + 1), 128² and 4096², the FIR methods beside naive_shmem and
    im2tensor_fused, fp16fp32 (the paper's), fp16 and bf16; cuDNN fp16."""
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
    """Issue #3's GPU core: naive, naive_shmem, separable and fft in every precision they have,
    1024² and 4096², k = 3..55, cuDNN and torch.fft in the same run; separable also on a
    Gaussian (its rank-1 case); kernel time and end to end (was benchmarks/gpu_core.py)."""
    return [Part("gpu_core", (1024, 4096), (3, 15, 25, 35, 55), PRECISIONS,
                 ("naive", "naive_shmem", "separable", "fft"), ("torch_conv2d", "torch_fft"),
                 gaussian_for=("separable",), timing=("kernel", "end_to_end"))]


def tc_fp() -> list:
    """Issue #17 items 1-3: tf32, fp32 and fp64 at 4096² and 16384², k = 3..55: toeplitz_tc, fft,
    naive_shmem and 'auto' against torch.fft and cuDNN (TF32 only in tf32 rows), timed as a
    user's call of a plan on device arrays ('call': CUDA events, no sleep kernel, so Python
    dispatch is inside; was benchmarks/tc_fp.py)."""
    return [Part("tc_fp", (4096, 16384), (3, 15, 25, 35, 55), ("tf32", "fp32", "fp64"),
                 ("toeplitz_tc", "fft", "naive_shmem", "auto"), ("torch_fft", "torch_conv2d"),
                 timing=("call",), device="cuda")]


def workspace_nonfinite() -> list:
    """Issue #17 items 4-6 (was benchmarks/workspace_nonfinite.py): what the NaN/inf repair costs
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
    """Issue #21's complex-data goals (complex_rows)."""
    return []


def _rel_l2(got, want) -> float:
    return float(np.linalg.norm(np.asarray(got) - want) / np.linalg.norm(want))


def complex_rows(sweep, cpu_point=(1024, 15), gpu_point=(4096, 55), runs=20) -> None:
    """Issue #21's speed goals for complex data, peers in the same run (was
    benchmarks/scipy_compat.py). CPU: complex128 image and kernel (cpu_point: side, k), valid,
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
    """Issue #18's CPU float grid: 512²..4096², k = 3..63, fp32 and fp64, 'auto' (on the CPU)
    and every CPU registry method against scipy.signal (correlate2d where a call is short,
    fftconvolve, oaconvolve), scipy.ndimage.correlate and cv2.filter2D, end to end from NumPy
    (timed in shared rounds per point, as the former benchmarks/cpu_float.py did;
    fma_peaks and small_call_rows add the FMA peak, load average and 32x32 small-call rows)."""
    return [Part("cpu_float", (512, 1024, 2048, 4096),
                 (3, 5, 7, 9, 11, 15, 25, 35, 45, 55, 63), ("fp32", "fp64"),
                 correlate_methods("cpu") + ("auto",), CPU_PEERS, timing=("end_to_end",),
                 device="cpu", interleave=True)]


PRESETS = {"im2tensor": im2tensor, "kondo": kondo, "kelefouras": kelefouras,
           "separable": separable, "cpu-float": cpu_float, "gpu-core": gpu_core,
           "tc-fp": tc_fp, "scipy-compat": scipy_compat,
           "workspace-nonfinite": workspace_nonfinite}


def fma_peaks() -> dict:
    """GFLOP/s of a register-only FMA loop on every core (csrc/cpu/fma_peak.cpp): the roof the
    CPU rows are read against."""
    core = tc._core
    if not hasattr(core, "fma_peak_gflops"):
        return {}
    return {"isa": core.fma_peak_isa(),
            **{p: round(core.fma_peak_gflops(p, 0, 0.5), 1) for p in ("fp32", "fp64")}}


def small_call_rows(n_calls: int = 2000, repeat: int = 7) -> list:
    """Issue #18 item 4: tensorconv.correlate2d against scipy.signal.correlate2d on a 32x32
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
    """The three kernel cases (was benchmarks/cpu_u8.py's kernels()): random non-separable
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
