"""Benchmarks of tensorconv.filters on the GPU, peers in the same run (issue #15, item 5):

  fig5      Kondo et al. Fig. 5: bilateral, r = 1..23, the two tensor-core KI layouts against
            the CUDA-core kernel, 4096^2 and 128^2 (the plans alone, data on the device);
  bilateral filters.bilateral (best method, front end: padding included) against kornia
            bilateral_blur and cv2.bilateralFilter on the host CPU;
  gaussian  filters.gaussian fp32 (method 'auto': the fused separable_boundary launch; and the
            `separable` strips front end), sigma = r / 2, radius r, against
            cupyx.scipy.ndimage.gaussian_filter, kornia gaussian_blur2d, cuDNN separable passes
            (reflect pad + two torch conv2d 1-D passes, TF32 off) and cv2.GaussianBlur (host).

Timing as benchmarks/gpu_core.py (CUDA events, a sleep kernel queued first, warm-up, median of
20; slow peers fewer runs, recorded in "runs"). MAPE (%) of the Gaussian against cupyx's float64
result (scipy's algorithm, within ~1e-15 of scipy.ndimage); bilateral max relative error
against a float64 torch evaluation of the definition.

    python benchmarks/filters.py --out benchmarks/results/filters_<device>.json

Front ends are timed twice: as gpu_core times everything (0.2 ms sleep first: calls whose
Python work exceeds it are timed host-bound) and with a 2 ms sleep ("host time hidden": the
GPU's time alone). The Gaussian part spends most of its time compiling cupyx kernels (one per
kernel length, ~3 s each on a fresh machine): --rs 1,2,3,7,11,16,23 for a quick round.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import tensorconv as tc  # noqa: E402
from tensorconv import filters  # noqa: E402
from tensorconv.filters.bilateral import spatial_weights  # noqa: E402
from tensorconv.filters.gaussian import _cache as gaussian_cache  # noqa: E402
from tensorconv.filters.gaussian import gaussian_kernel1d  # noqa: E402
from gpu_core import event_median, load_image  # noqa: E402

RS = tuple(range(1, 24))
SIGMA_R = 0.1
# ~2 ms at the H100's clocks: longer than any front end's Python work.
HIDE_HOST_CYCLES = 4_000_000


def meta():
    import cupy
    return {"device": torch.cuda.get_device_name(), "tensorconv": tc.__version__,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "versions": {"cuda": torch.version.cuda, "torch": torch.__version__,
                         "cupy": cupy.__version__}, "rows": []}


def emit(rows, row):
    rows.append(row)
    print(json.dumps(row), flush=True)


def host_median(fn, runs):
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def bilateral_ref64(img64, sigma_s, sigma_r, r):
    """float64 bilateral (definition, reflect = symmetric padding) on the GPU, row blocks."""
    key = (img64.shape, sigma_s, sigma_r, r)
    if key in _REFS:
        return _REFS[key]
    h, w = img64.shape
    idx_r = torch.as_tensor(np.pad(np.arange(h), r, mode="symmetric"), device=img64.device)
    idx_c = torch.as_tensor(np.pad(np.arange(w), r, mode="symmetric"), device=img64.device)
    p = img64[idx_r[:, None], idx_c[None, :]]
    num = torch.zeros_like(img64)
    den = torch.zeros_like(img64)
    for dy in range(2 * r + 1):
        for dx in range(2 * r + 1):
            q = p[dy:dy + h, dx:dx + w]
            ws = math.exp(-((dy - r) ** 2 + (dx - r) ** 2) / (2 * sigma_s ** 2))
            wt = ws * torch.exp(-(q - img64) ** 2 / (2 * sigma_r ** 2))
            num += wt * q
            den += wt
    _REFS[key] = num / den
    return _REFS[key]


_REFS: dict = {}


def max_rel(out, ref):
    o = out.double()
    if not torch.isfinite(o).all():
        return None
    return float(((o - ref).abs() / ref.abs().clamp_min(1e-30)).max())


def sigma_s_of(r):
    return max(r / 3.0, 0.5)


def fig5(rows, img64_by_size, rs):
    """The plans alone (padded input ready on the device), as the paper times its kernels."""
    for size, img64 in img64_by_size.items():
        for r in rs:
            k = 2 * r + 1
            ws = spatial_weights(sigma_s_of(r), r)
            idx = torch.as_tensor(np.pad(np.arange(size), r, mode="symmetric"), device="cuda")
            pad64 = img64[idx[:, None], idx[None, :]].contiguous()
            ref = bilateral_ref64(img64, sigma_s_of(r), SIGMA_R, r) if size <= 128 or r in (
                1, 7, 23) else None
            for m, prec, dt in (("bilateral_cuda", "fp32", torch.float32),
                                ("bilateral_tc_32x8x16", "fp16fp32", torch.float16),
                                ("bilateral_tc_16x16x16", "fp16fp32", torch.float16),
                                ("bilateral_cuda", "fp64", torch.float64)):
                if prec == "fp64" and r != 7:  # software exp2 in fp64: one radius is enough
                    continue
                p = tc._core.make_filter_plan(m, "filters.bilateral", ws, size + 2 * r,
                                              size + 2 * r, prec, SIGMA_R)
                x = pad64.to(dt).contiguous()
                out = torch.empty((size, size), dtype=dt, device="cuda")
                st = torch.cuda.current_stream().cuda_stream
                storage = str(dt).replace("torch.", "")

                def fn(i):
                    p.run(x.data_ptr(), size + 2 * r, size + 2 * r, size + 2 * r, out.data_ptr(),
                          size, size, size, storage, True, st)

                ms = event_median(fn, 1)
                emit(rows, {"impl": m, "precision": prec, "image": [size, size],
                            "kernel": [k, k], "bench": "fig5", "timing": "kernel",
                            "median_ms": round(ms, 5), "runs": 20,
                            "extra_bytes": p.workspace_bytes,
                            "max_rel_err": None if ref is None else max_rel(out, ref),
                            "sigma_spatial": sigma_s_of(r), "sigma_range": SIGMA_R})
                del p, x, out


def bilateral_peers(rows, img64, rs, cv2_rs, kornia_max_r):
    size = img64.shape[0]
    x32 = img64.float().contiguous()
    host = x32.cpu().numpy()
    for r in rs:
        k = 2 * r + 1
        ss = sigma_s_of(r)
        ref = bilateral_ref64(img64, ss, SIGMA_R, r) if r in (1, 7, 23) else None
        res = {}

        def ours(i):
            res["y"] = filters.bilateral(x32, ss, SIGMA_R, radius=r)

        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        ms = event_median(ours, 1)
        peak = torch.cuda.max_memory_allocated() - base
        ms_gpu = event_median(ours, 1, sleep_cycles=HIDE_HOST_CYCLES)
        emit(rows, {"impl": "filters.bilateral", "method": "auto (bilateral_cuda)",
                    "precision": "fp32", "image": [size, size], "kernel": [k, k],
                    "bench": "bilateral", "timing": "kernel", "variant": "host time hidden",
                    "median_ms": round(ms_gpu, 5), "runs": 20})
        emit(rows, {"impl": "filters.bilateral", "method": "auto (bilateral_cuda)",
                    "precision": "fp32", "image": [size, size], "kernel": [k, k],
                    "bench": "bilateral", "timing": "kernel", "median_ms": round(ms, 5),
                    "runs": 20, "peak_extra_bytes_torch": peak,
                    "max_rel_err": None if ref is None else max_rel(res["y"], ref)})
        if r <= kornia_max_r:
            try:
                import kornia
                xk = x32[None, None]

                def kb(i):
                    res["k"] = kornia.filters.bilateral_blur(xk, (k, k), SIGMA_R, (ss, ss),
                                                             border_type="reflect")

                ms = event_median(kb, 1, runs=5, warmup=1)
                emit(rows, {"impl": "peer:kornia_bilateral_blur", "precision": "fp32",
                            "image": [size, size], "kernel": [k, k], "bench": "bilateral",
                            "timing": "kernel", "median_ms": round(ms, 4), "runs": 5,
                            "max_rel_err": None if ref is None else max_rel(res["k"][0, 0], ref)})
                del res["k"]
            except Exception as e:  # out of memory from r ~ 11
                emit(rows, {"impl": "peer:kornia_bilateral_blur", "precision": "fp32",
                            "image": [size, size], "kernel": [k, k], "bench": "bilateral",
                            "timing": "kernel", "median_ms": None,
                            "error": f"{type(e).__name__}: {str(e)[:200]}"})
                torch.cuda.empty_cache()
        if r in cv2_rs:
            import cv2
            cv2.setNumThreads(os.cpu_count())
            ms = host_median(lambda: cv2.bilateralFilter(host, k, SIGMA_R, ss,
                                                         borderType=cv2.BORDER_REFLECT), 3)
            emit(rows, {"impl": "peer:cv2_bilateralFilter", "precision": "fp32",
                        "image": [size, size], "kernel": [k, k], "bench": "bilateral",
                        "timing": "host", "median_ms": round(ms, 3), "runs": 3,
                        "threads": os.cpu_count()})


def gaussian_bench(rows, img64, rs, cv2_rs):
    import cupy as cp
    import cupyx.scipy.ndimage as cndi
    size = img64.shape[0]
    torch.backends.cudnn.allow_tf32 = False
    xs = [img64.float().contiguous(), (img64.float() * 0.5).contiguous()]
    xs_cp = [cp.asarray(x) for x in xs]
    host = xs[0].cpu().numpy()
    ref_img = cp.asarray(img64)
    for r in rs:
        k = 2 * r + 1
        sigma = r / 2.0
        ref = torch.as_tensor(cndi.gaussian_filter(ref_img, sigma, truncate=2.0, mode="reflect"),
                              device="cuda")
        assert int(2.0 * sigma + 0.5) == r
        res = {}

        def ours(i):
            res["y"] = filters.gaussian(xs[i], sigma, radius=r)

        ms = event_median(ours, 2)
        # 'auto' on a CUDA array: the fused separable_boundary launch where the kernel fits
        method = ("separable_boundary" if tc._core.separable_boundary_supported(
            size, size, k, k, "float32") else next(reversed(gaussian_cache.values())).method)
        emit(rows, {"impl": "filters.gaussian", "method": method, "precision": "fp32",
                    "image": [size, size], "kernel": [k, k], "bench": "gaussian",
                    "timing": "kernel", "median_ms": round(ms, 5), "runs": 20,
                    "mape_pct": mape(ours_out(ours, res, 0), ref)})
        # the same with a 2 ms sleep first: the front end's GPU time without its host time
        ms = event_median(ours, 2, sleep_cycles=HIDE_HOST_CYCLES)
        emit(rows, {"impl": "filters.gaussian", "method": method, "precision": "fp32",
                    "image": [size, size], "kernel": [k, k], "bench": "gaussian",
                    "timing": "kernel", "variant": "host time hidden", "median_ms": round(ms, 5),
                    "runs": 20})
        # the Python front end alone (host wall time per call, no synchronization)
        ms = host_median(lambda: ours(0), 200)
        emit(rows, {"impl": "filters.gaussian", "method": method, "precision": "fp32",
                    "image": [size, size], "kernel": [k, k], "bench": "gaussian",
                    "timing": "host", "variant": "host time per call", "median_ms": round(ms, 5),
                    "runs": 200})
        torch.cuda.synchronize()

        # the previous front end: `separable` plans on the interior and padded border strips
        def strips(i):
            res["s"] = filters.gaussian(xs[i], sigma, radius=r, method="separable")

        ms = event_median(strips, 2, sleep_cycles=HIDE_HOST_CYCLES)
        strips(0)
        emit(rows, {"impl": "filters.gaussian", "method": "separable", "precision": "fp32",
                    "image": [size, size], "kernel": [k, k], "bench": "gaussian",
                    "timing": "kernel", "variant": "separable strips, host time hidden",
                    "median_ms": round(ms, 5), "runs": 20, "mape_pct": mape(res["s"], ref)})
        del res["s"]
        # the plan alone on a pre-padded image (what the front end's split saves or costs)
        K = np.outer(*(2 * [gaussian_kernel1d(sigma, 0, r)]))
        p = tc.plan(K, (size + 2 * r, size + 2 * r), mode="valid", method="separable",
                    precision="fp32")
        pads = [F.pad(x[None, None], (r, r, r, r), mode="reflect")[0, 0].contiguous() for x in xs]
        o = torch.empty((size, size), device="cuda")
        st = torch.cuda.current_stream().cuda_stream

        def plan_only(i):
            p._plan.run(pads[i].data_ptr(), size + 2 * r, size + 2 * r, size + 2 * r,
                        o.data_ptr(), size, size, size, "float32", True, st)

        ms = event_median(plan_only, 2)
        emit(rows, {"impl": "separable", "precision": "fp32", "image": [size, size],
                    "kernel": [k, k], "bench": "gaussian", "timing": "kernel",
                    "variant": "plan on a pre-padded image", "median_ms": round(ms, 5),
                    "runs": 20})
        del pads, p

        def cupyx_g(i):
            res["c"] = cndi.gaussian_filter(xs_cp[i], sigma, truncate=2.0, mode="reflect")

        ms = event_median(cupyx_g, 2)
        cupyx_g(0)  # MAPE of the first input (the timing alternates two)
        emit(rows, {"impl": "peer:cupyx_gaussian_filter", "precision": "fp32",
                    "image": [size, size], "kernel": [k, k], "bench": "gaussian",
                    "timing": "kernel", "median_ms": round(ms, 5), "runs": 20,
                    "mape_pct": mape(torch.as_tensor(res["c"], device="cuda"), ref)})
        g1 = torch.as_tensor(gaussian_kernel1d(sigma, 0, r),
                             device="cuda", dtype=torch.float32)
        wv, wh = g1.view(1, 1, k, 1), g1.view(1, 1, 1, k)

        def cudnn(i):
            y = F.pad(xs[i][None, None], (r, r, r, r), mode="reflect")
            res["d"] = F.conv2d(F.conv2d(y, wv), wh)

        ms = event_median(cudnn, 2)
        cudnn(0)
        emit(rows, {"impl": "peer:cudnn_separable", "precision": "fp32", "image": [size, size],
                    "kernel": [k, k], "bench": "gaussian", "timing": "kernel",
                    "median_ms": round(ms, 5), "runs": 20,
                    "mape_pct": mape(res["d"][0, 0], ref)})
        try:
            import kornia

            def kg(i):
                res["k"] = kornia.filters.gaussian_blur2d(xs[i][None, None], (k, k),
                                                          (sigma, sigma), border_type="reflect")

            ms = event_median(kg, 2)
            kg(0)
            emit(rows, {"impl": "peer:kornia_gaussian_blur2d", "precision": "fp32",
                        "image": [size, size], "kernel": [k, k], "bench": "gaussian",
                        "timing": "kernel", "median_ms": round(ms, 5), "runs": 20,
                        "mape_pct": mape(res["k"][0, 0], ref)})
        except Exception as e:
            print(f"kornia gaussian r={r}: {e}", flush=True)
        if r in cv2_rs:
            import cv2
            cv2.setNumThreads(os.cpu_count())
            ms = host_median(lambda: cv2.GaussianBlur(host, (k, k), sigma,
                                                      borderType=cv2.BORDER_REFLECT), 5)
            emit(rows, {"impl": "peer:cv2_GaussianBlur", "precision": "fp32",
                        "image": [size, size], "kernel": [k, k], "bench": "gaussian",
                        "timing": "host", "median_ms": round(ms, 3), "runs": 5,
                        "threads": os.cpu_count()})


def ours_out(fn, res, i):
    fn(i)
    return res["y"]


def mape(out, ref):
    o = out.double()
    if not torch.isfinite(o).all():
        return None
    nz = ref != 0
    return float(100 * ((o[nz] - ref[nz]).abs() / ref[nz].abs()).median())


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--parts", default="fig5,bilateral,gaussian")
    ap.add_argument("--rs", default=",".join(map(str, RS)))
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--cv2-rs", default="3,7,23")
    ap.add_argument("--kornia-max-r", type=int, default=11)
    a = ap.parse_args(argv)
    rs = [int(v) for v in a.rs.split(",")]
    cv2_rs = {int(v) for v in a.cv2_rs.split(",") if v}
    name, img = load_image(a.size)
    m = meta()
    m["image_name"] = name
    parts = a.parts.split(",")
    import traceback

    def part(name, fn):
        if name not in parts:
            return
        t = time.perf_counter()
        try:
            fn()
        except Exception:  # keep the other parts' rows
            traceback.print_exc()
            m.setdefault("errors", []).append(f"{name}: {traceback.format_exc()[-400:]}")
        print(f"[{name}] {time.perf_counter() - t:.1f} s", flush=True)
        with open(a.out, "w") as f:
            json.dump(m, f, indent=1)

    part("gaussian", lambda: gaussian_bench(m["rows"], img, rs, cv2_rs))
    part("fig5", lambda: fig5(m["rows"], {a.size: img, 128: load_image(128)[1]}, rs))
    part("bilateral", lambda: bilateral_peers(
        m["rows"], img, [r for r in rs if r in (1, 3, 5, 7, 9, 11, 15, 23)], cv2_rs,
        a.kornia_max_r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
