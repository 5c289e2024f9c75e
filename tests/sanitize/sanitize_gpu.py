"""One call of every GPU kernel variant, for compute-sanitizer:

    compute-sanitizer --tool memcheck  python tests/sanitize/sanitize_gpu.py
    compute-sanitizer --tool racecheck python tests/sanitize/sanitize_gpu.py
    compute-sanitizer --tool memcheck  python tests/sanitize/sanitize_gpu.py nonfinite   # repair only

Small shapes chosen to reach tile edges, the W = 2 (half2) lane edges, every naive_shmem
coefficient tier, separable's first/middle/last passes and its banded ring, fft's padded,
direct and scaled-fp16 paths, and the Kondo FIR methods. Exits non-zero when a result is wrong."""

import sys

import numpy as np
import scipy.signal

import tensorconv as tc
from tensorconv.metrics import relative_l2

BOUND = {"fp16": 3e-2, "fp16fp32": 5e-3, "bf16": 3e-2, "tf32": 5e-3, "fp32": 1e-5, "fp64": 1e-12}


def check(method, precision, image, kernel, options=None):
    out = tc.correlate2d(image, kernel, "valid", method=method, precision=precision,
                         options=options)
    err = relative_l2(out, scipy.signal.correlate2d(image, kernel, "valid"))
    ok = err <= BOUND[precision]
    print(f"{method:12s} {precision:9s} image {image.shape} kernel {kernel.shape}: "
          f"rel_l2 {err:.2e} {'ok' if ok else 'FAIL'}", flush=True)
    return ok


def main():
    rng = np.random.default_rng(0)
    rows = {m.name: m for m in tc.methods()}
    ok = True
    if sys.argv[1:] == ["nonfinite"]:  # only the NaN/inf repair section below
        return nonfinite(rng)
    for name in ("naive", "naive_shmem", "separable", "fft"):
        for p in rows[name].precisions:
            ok &= check(name, p, rng.standard_normal((37, 71)), rng.standard_normal((5, 4)))
    # naive_shmem: multi-chunk kernels with shared coefficients (default), then the constant
    # tiers (<= 4 KB, <= 30 KB launch parameters; larger falls back to shared).
    for kshape in ((40, 33), (100, 80)):
        for p in ("fp16", "fp32", "fp64"):
            ok &= check("naive_shmem", p, rng.standard_normal((110, 95)),
                        rng.standard_normal(kshape))
    for kshape in ((5, 4), (40, 33)):
        for p in ("fp16", "fp32", "fp64"):
            ok &= check("naive_shmem", p, rng.standard_normal((110, 95)),
                        rng.standard_normal(kshape), {"naive_shmem.coefficients": "constant"})
    # separable fused: a long segment (the walk shifts its T rows), rank 1 and r > 1 with a
    # separate running sum (fp16fp32).
    g = np.exp(-0.5 * ((np.arange(7) - 3) / 1.5) ** 2)
    seg = {"separable.min_segment_rows": 200}
    for p in ("fp32", "fp16fp32", "fp64"):
        ok &= check("separable", p, rng.standard_normal((400, 130)), np.outer(g, g), seg)
        ok &= check("separable", p, rng.standard_normal((400, 130)), rng.standard_normal((9, 64)),
                    seg)
        # 16-byte rows: the cp.async staging (interior fast path and zero-filled edges)
        ok &= check("separable", p, rng.standard_normal((400, 136)), np.outer(g, g), seg)
    # the tensor-core passes (tf32 MMAs; fp32: fp64 MMAs), with a NaN that sends warps to the
    # fallback
    tcs = {"separable.tensor_cores": True, "separable.min_segment_rows": 200}
    g21 = np.exp(-0.5 * ((np.arange(21) - 10) / 4.0) ** 2)
    for p in ("tf32", "fp32"):
        ok &= check("separable", p, rng.standard_normal((400, 136)), np.outer(g21, g21), tcs)
        # a 26 x 40 kernel: fp32's column pass masks two chunks of ring rows per step
        ok &= check("separable", p, rng.standard_normal((400, 136)),
                    np.outer(rng.random(26), rng.random(40)), tcs)
        img = rng.standard_normal((300, 130))
        img[100, 50] = np.nan
        out = tc.correlate2d(img, np.outer(g21, g21), "valid", method="separable", precision=p,
                             options=tcs)
        ref = scipy.signal.correlate2d(img, np.outer(g21, g21), "valid")
        same = bool(np.array_equal(np.isnan(out), np.isnan(ref)))
        print(f"separable    {p:9s} NaN fallback: NaN windows {'ok' if same else 'FAIL'}", flush=True)
        ok &= same
    # fp32's warp-specialized pass at 55 taps over one long walk per strip: non-finite rows in
    # several steps (the row pass's flags, their slots reused)
    g55 = np.exp(-0.5 * ((np.arange(55) - 27) / 9.0) ** 2)
    img = rng.standard_normal((700, 130))
    img[40, 20], img[330, 77], img[600, 5] = np.nan, np.inf, -np.inf
    out = tc.correlate2d(img, np.outer(g55, g55), "valid", method="separable", precision="fp32",
                         options={"separable.tensor_cores": True,
                                  "separable.min_segment_rows": 1000})
    ref = scipy.signal.correlate2d(img, np.outer(g55, g55), "valid")
    same = bool(np.array_equal(np.isnan(out), np.isnan(ref)) and
                np.array_equal(np.isinf(out), np.isinf(ref)))
    print(f"separable    fp32      k=55 non-finite steps: windows {'ok' if same else 'FAIL'}",
          flush=True)
    ok &= same
    # separable two-pass: rank 1 over several bands of the ring, then r > 1 passes with a
    # separate running sum (fp16fp32); fft: the direct (fast size) path.
    two = {"separable.fused": False, "separable.band_mb": 1}
    ok &= check("separable", "fp32", rng.standard_normal((700, 600)), np.outer(g, g), two)
    ok &= check("separable", "fp16fp32", rng.standard_normal((300, 600)),
                rng.standard_normal((3, 4)), two)
    ok &= check("fft", "fp32", rng.standard_normal((64, 60)), rng.standard_normal((3, 3)))
    ok &= check("fft", "fp64", rng.standard_normal((48, 50)), rng.standard_normal((3, 3)))
    # Kondo FIR (csrc/cuda/methods/fir/): every method x precision on one tile, several tiles across CTA
    # edges, and a kernel split into 64x64 blocks (float workspace: first, middle, last launch).
    for name in ("fir_kl", "fir_ki", "fir_ki_32x8", "fir_dki"):
        for p in rows[name].precisions:
            for ishape, kshape in (((37, 71), (5, 4)), ((60, 300), (20, 35)),
                                   ((80, 200), (70, 130))):
                ok &= check(name, p, rng.standard_normal(ishape), rng.standard_normal(kshape))
    return nonfinite(rng, ok)


def nonfinite(rng, ok=True):
    """NaN/inf repair (csrc/cuda/runtime/nonfinite.*): flagged epilogues (im2tensor_fused's mma path,
    fir, separable's terms), the unflagged full test (im2tensor's Tr+ pass, cublas) and fft's
    staged zeros with their windows marked (run_windows)."""
    img = rng.random((90, 150))
    img[5, 7], img[60, 100], img[89, 149] = np.nan, np.inf, -np.inf
    for name, p, kshape in (("im2tensor_fused", "fp16fp32", (9, 20)), ("im2tensor", "fp32", (7, 7)),
                            ("im2tensor_cublas", "fp64", (5, 6)), ("fir_dki", "bf16", (9, 70)),
                            ("separable", "fp16", (5, 7)), ("separable", "fp32", (9, 9)),
                            ("fft", "fp16", (9, 20)), ("fft", "fp32", (7, 40)), ("fft", "fp64", (5, 6))):
        k = rng.uniform(0.25, 1.0, kshape) * np.where(rng.random(kshape) < 0.5, -1, 1)
        out = np.asarray(tc.correlate2d(img, k, "full", method=name, precision=p), np.float64)
        ref = scipy.signal.correlate2d(img, k, "full")
        same = bool(np.array_equal(np.isnan(out), np.isnan(ref)) and
                    np.array_equal(np.isinf(out), np.isinf(ref)))
        print(f"{name:16s} {p:9s} non-finite repair: {'ok' if same else 'FAIL'}", flush=True)
        ok &= same
    print("ALL OK" if ok else "SOME FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
