"""tensorconv.filters against their peers, and Kondo et al. Fig. 5:

  fig5      bilateral, r = 1..23, the two tensor-core KI layouts against the CUDA-core kernel,
            4096² and 128² (the plans alone, padded input ready on the device, as the paper
            times its kernels); also a part of --preset kondo;
  bilateral filters.bilateral (method 'auto', front end: padding included) against kornia
            bilateral_blur (up to --kornia-max-r; out of memory beyond) and cv2.bilateralFilter on
            the host CPU (--cv2-rs);
  gaussian  filters.gaussian fp32 (method 'auto': the fused separable_boundary launch; and the
            `separable` strips front end), sigma = r / 2, radius r, against
            cupyx.scipy.ndimage.gaussian_filter, kornia gaussian_blur2d, cuDNN separable passes
            (reflect pad + two torch conv2d 1-D passes, TF32 off) and cv2.GaussianBlur (host).

Timing: CUDA events through PyTorch, a sleep kernel queued first, 3 warm-ups, median of 20 (slow
peers fewer, said by "runs"). Front ends are timed twice: with a 0.2 ms sleep first (calls whose
Python work exceeds it are timed host-bound) and with a 2 ms sleep (variant "host time hidden":
the GPU's time alone); the Gaussian's Python front end also alone (variant "host time per call",
host wall time, no synchronization). MAPE (%) of the Gaussian against cupyx's float64 result
(scipy's algorithm, within ~1e-15 of scipy.ndimage); bilateral max relative error against a
float64 torch evaluation of the definition. Without a usable GPU only the host (cv2) rows run."""

from __future__ import annotations

import functools
import math
import os

import numpy as np

from ._sweep import test_image as _test_image
from ._timing import event_median, host_median

RS = tuple(range(1, 24))
PARTS = ("gaussian", "fig5", "bilateral")
SIGMA_R = 0.1
# ~2 ms at the H100's clocks: longer than any front end's Python work.
HIDE_HOST_CYCLES = 4_000_000
_REFS: dict = {}


@functools.lru_cache(maxsize=4)
def test_image(size):
    """The bench's test image (resized once per size per run)."""
    return _test_image(size)


def sigma_s_of(r):
    return max(r / 3.0, 0.5)


def _gpu():
    """torch when it sees a CUDA device and tensorconv has CUDA, else None."""
    import tensorconv as tc

    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() and tc.cuda_available() else None


def device_image(size):
    """(name, float64 size x size image on the device) from the bench's test image."""
    import torch

    name, img = test_image(size)
    return name, torch.as_tensor(np.ascontiguousarray(img), device="cuda")


def bilateral_ref64(img64, sigma_s, sigma_r, r):
    """float64 bilateral (definition, reflect = symmetric padding) on the GPU, row blocks."""
    import torch

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


def max_rel(out, ref):
    o = out.double()
    if not bool(o.isfinite().all()):
        return None
    return float(((o - ref).abs() / ref.abs().clamp_min(1e-30)).max())


def mape(out, ref):
    o = out.double()
    if not bool(o.isfinite().all()):
        return None
    nz = ref != 0
    return float(100 * ((o[nz] - ref[nz]).abs() / ref[nz].abs()).median())


def _emit(sweep, row):
    sweep.rows.append(row)
    sweep.log(" ".join(f"{k}={v}" for k, v in row.items() if k in (
        "part", "impl", "method", "precision", "kernel", "variant", "median_ms")))


def fig5_rows(sweep, sizes, rs):
    """Kondo Fig. 5: the bilateral plans alone (padded input ready on the device)."""
    torch = _gpu()
    if torch is None:
        sweep.log("fig5 rows skipped: no usable CUDA device (PyTorch and tensorconv's CUDA)")
        return
    import tensorconv as tc
    from tensorconv.filters.bilateral import spatial_weights

    for size in sizes:
        _, img64 = device_image(size)
        for r in rs:
            if sweep.out_of_time():
                sweep.skipped_for_time += 1
                continue
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

                def fn(i, p=p, x=x, out=out, st=st, storage=storage, r=r):
                    p.run(x.data_ptr(), size + 2 * r, size + 2 * r, size + 2 * r, out.data_ptr(),
                          size, size, size, storage, True, st)

                ms = event_median(fn, 1)
                _emit(sweep, {"impl": m, "precision": prec, "image": [size, size],
                              "kernel": [k, k], "kernel_kind": "bilateral", "part": "fig5",
                              "timing": "kernel", "median_ms": round(ms, 5), "runs": 20,
                              "extra_bytes": p.workspace_bytes,
                              "max_rel_err": None if ref is None else max_rel(out, ref),
                              "sigma_spatial": sigma_s_of(r), "sigma_range": SIGMA_R})
                del p, x, out


def _cv2():
    try:
        import cv2
    except ImportError:
        return None
    cv2.setNumThreads(os.cpu_count())
    return cv2


def _setup(sweep, part, peer, size, cv2_rs):
    """(torch or None, cv2 or None, the float32 host image), a line for each that is missing."""
    torch = _gpu()
    cv2 = _cv2() if cv2_rs else None
    if torch is None:
        sweep.log(f"{part} GPU rows skipped: no usable CUDA device (PyTorch and tensorconv's "
                  "CUDA); host (cv2) rows only")
    if cv2 is None and cv2_rs:
        sweep.log(f"peer {peer} skipped: cv2 is not installed")
    return torch, cv2, test_image(size)[1].astype(np.float32)


def bilateral_rows(sweep, size, rs, cv2_rs, kornia_max_r):
    torch, cv2, host = _setup(sweep, "bilateral", "cv2_bilateralFilter", size, cv2_rs)
    if torch is not None:
        from tensorconv import filters

        img64 = torch.as_tensor(np.ascontiguousarray(test_image(size)[1]), device="cuda")
        x32 = img64.float().contiguous()
    for r in rs:
        if sweep.out_of_time():
            sweep.skipped_for_time += 1
            continue
        k = 2 * r + 1
        ss = sigma_s_of(r)
        base = {"precision": "fp32", "image": [size, size], "kernel": [k, k],
                "kernel_kind": "bilateral", "part": "bilateral"}
        if torch is not None:
            ref = bilateral_ref64(img64, ss, SIGMA_R, r) if r in (1, 7, 23) else None
            res = {}

            def ours(i):
                res["y"] = filters.bilateral(x32, ss, SIGMA_R, radius=r)

            torch.cuda.synchronize()
            mem0 = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            ms = event_median(ours, 1)
            peak = torch.cuda.max_memory_allocated() - mem0
            ms_gpu = event_median(ours, 1, sleep_cycles=HIDE_HOST_CYCLES)
            _emit(sweep, {"impl": "filters.bilateral", "method": "auto (bilateral_cuda)", **base,
                          "timing": "kernel", "variant": "host time hidden",
                          "median_ms": round(ms_gpu, 5), "runs": 20})
            _emit(sweep, {"impl": "filters.bilateral", "method": "auto (bilateral_cuda)", **base,
                          "timing": "kernel", "median_ms": round(ms, 5), "runs": 20,
                          "peak_extra_bytes_torch": peak,
                          "max_rel_err": None if ref is None else max_rel(res["y"], ref)})
            if r <= kornia_max_r:
                try:
                    import kornia
                    xk = x32[None, None]

                    def kb(i):
                        res["k"] = kornia.filters.bilateral_blur(
                            xk, (k, k), SIGMA_R, (ss, ss), border_type="reflect")

                    ms = event_median(kb, 1, runs=5, warmup=1)
                    _emit(sweep, {"impl": "peer:kornia_bilateral_blur", **base,
                                  "timing": "kernel", "median_ms": round(ms, 4), "runs": 5,
                                  "max_rel_err": None if ref is None
                                  else max_rel(res["k"][0, 0], ref)})
                    del res["k"]
                except Exception as e:  # not installed, or out of memory from r ~ 11
                    _emit(sweep, {"impl": "peer:kornia_bilateral_blur", **base,
                                  "timing": "kernel", "median_ms": None,
                                  "error": f"{type(e).__name__}: {str(e)[:200]}"})
                    torch.cuda.empty_cache()
        if cv2 is not None and r in cv2_rs:
            ms = host_median(lambda: cv2.bilateralFilter(host, k, SIGMA_R, ss,
                                                         borderType=cv2.BORDER_REFLECT), 3)
            _emit(sweep, {"impl": "peer:cv2_bilateralFilter", **base, "timing": "host",
                          "median_ms": round(ms, 3), "runs": 3, "threads": os.cpu_count()})


def gaussian_rows(sweep, size, rs, cv2_rs):
    torch, cv2, host = _setup(sweep, "gaussian", "cv2_GaussianBlur", size, cv2_rs)
    if torch is not None:
        try:
            import cupy as cp
            import cupyx.scipy.ndimage as cndi
        except Exception as e:  # the reference and a peer: the GPU rows need them
            sweep.log(f"gaussian GPU rows skipped: CuPy is not usable here ({e})")
            torch = None
    if torch is not None:
        import torch.nn.functional as F

        import tensorconv as tc
        from tensorconv import filters
        from tensorconv.filters.gaussian import _FUSED_FP32_MAX_TAPS
        from tensorconv.filters.gaussian import method_of as gaussian_method
        from tensorconv.filters.gaussian import gaussian_kernel1d

        torch.backends.cudnn.allow_tf32 = False
        img64 = torch.as_tensor(np.ascontiguousarray(test_image(size)[1]), device="cuda")
        xs = [img64.float().contiguous(), (img64.float() * 0.5).contiguous()]
        xs_cp = [cp.asarray(x) for x in xs]
        ref_img = cp.asarray(img64)
    for r in rs:
        if sweep.out_of_time():
            sweep.skipped_for_time += 1
            continue
        k = 2 * r + 1
        sigma = r / 2.0
        base = {"precision": "fp32", "image": [size, size], "kernel": [k, k],
                "kernel_kind": "gaussian", "part": "gaussian"}
        if torch is not None:
            ref = torch.as_tensor(cndi.gaussian_filter(ref_img, sigma, truncate=2.0,
                                                       mode="reflect"), device="cuda")
            assert int(2.0 * sigma + 0.5) == r
            res = {}

            def ours(i):
                res["y"] = filters.gaussian(xs[i], sigma, radius=r)

            ms = event_median(ours, 2)
            # 'auto' on a CUDA array in fp32: the fused separable_boundary launch up to
            # _FUSED_FP32_MAX_TAPS taps per axis (and where the kernel fits), else the
            # `separable` plan on strips (its label: the method its set-up runs)
            method = ("separable_boundary" if k <= _FUSED_FP32_MAX_TAPS
                      and tc._core.separable_boundary_supported(size, size, k, k, "float32")
                      else gaussian_method(xs[0], sigma, radius=r))
            ours(0)
            _emit(sweep, {"impl": "filters.gaussian", "method": method, **base,
                          "timing": "kernel", "median_ms": round(ms, 5), "runs": 20,
                          "mape_pct": mape(res["y"], ref)})
            # the same with a 2 ms sleep first: the front end's GPU time without its host time
            ms = event_median(ours, 2, sleep_cycles=HIDE_HOST_CYCLES)
            _emit(sweep, {"impl": "filters.gaussian", "method": method, **base,
                          "timing": "kernel", "variant": "host time hidden",
                          "median_ms": round(ms, 5), "runs": 20})
            # the Python front end alone (host wall time per call, no synchronization)
            ms = host_median(lambda: ours(0), 200)
            _emit(sweep, {"impl": "filters.gaussian", "method": method, **base,
                          "timing": "host", "variant": "host time per call",
                          "median_ms": round(ms, 5), "runs": 200})
            torch.cuda.synchronize()

            # the previous front end: `separable` plans on the interior and padded border strips
            def strips(i):
                res["s"] = filters.gaussian(xs[i], sigma, radius=r, method="separable")

            ms = event_median(strips, 2, sleep_cycles=HIDE_HOST_CYCLES)
            strips(0)
            _emit(sweep, {"impl": "filters.gaussian", "method": "separable", **base,
                          "timing": "kernel", "variant": "separable strips, host time hidden",
                          "median_ms": round(ms, 5), "runs": 20,
                          "mape_pct": mape(res["s"], ref)})
            del res["s"]
            # the plan alone on a pre-padded image (what the front end's split saves or costs)
            K = np.outer(*(2 * [gaussian_kernel1d(sigma, 0, r)]))
            p = tc.plan(K, (size + 2 * r, size + 2 * r), mode="valid", method="separable",
                        precision="fp32")
            pads = [F.pad(x[None, None], (r, r, r, r), mode="reflect")[0, 0].contiguous()
                    for x in xs]
            o = torch.empty((size, size), device="cuda")
            st = torch.cuda.current_stream().cuda_stream

            def plan_only(i):
                p._plan.run(pads[i].data_ptr(), size + 2 * r, size + 2 * r, size + 2 * r,
                            o.data_ptr(), size, size, size, "float32", True, st)

            ms = event_median(plan_only, 2)
            _emit(sweep, {"impl": "separable", **base, "timing": "kernel",
                          "variant": "plan on a pre-padded image", "median_ms": round(ms, 5),
                          "runs": 20})
            del pads, p

            def cupyx_g(i):
                res["c"] = cndi.gaussian_filter(xs_cp[i], sigma, truncate=2.0, mode="reflect")

            ms = event_median(cupyx_g, 2)
            cupyx_g(0)  # MAPE of the first input (the timing alternates two)
            _emit(sweep, {"impl": "peer:cupyx_gaussian_filter", **base, "timing": "kernel",
                          "median_ms": round(ms, 5), "runs": 20,
                          "mape_pct": mape(torch.as_tensor(res["c"], device="cuda"), ref)})
            g1 = torch.as_tensor(gaussian_kernel1d(sigma, 0, r), device="cuda",
                                 dtype=torch.float32)
            wv, wh = g1.view(1, 1, k, 1), g1.view(1, 1, 1, k)

            def cudnn(i):
                y = F.pad(xs[i][None, None], (r, r, r, r), mode="reflect")
                res["d"] = F.conv2d(F.conv2d(y, wv), wh)

            ms = event_median(cudnn, 2)
            cudnn(0)
            _emit(sweep, {"impl": "peer:cudnn_separable", **base, "timing": "kernel",
                          "median_ms": round(ms, 5), "runs": 20,
                          "mape_pct": mape(res["d"][0, 0], ref)})
            try:
                import kornia

                def kg(i):
                    res["k"] = kornia.filters.gaussian_blur2d(
                        xs[i][None, None], (k, k), (sigma, sigma), border_type="reflect")

                ms = event_median(kg, 2)
                kg(0)
                _emit(sweep, {"impl": "peer:kornia_gaussian_blur2d", **base,
                              "timing": "kernel", "median_ms": round(ms, 5), "runs": 20,
                              "mape_pct": mape(res["k"][0, 0], ref)})
            except Exception as e:  # not installed
                sweep.log(f"kornia gaussian r={r}: {e}")
        if cv2 is not None and r in cv2_rs:
            ms = host_median(lambda: cv2.GaussianBlur(host, (k, k), sigma,
                                                      borderType=cv2.BORDER_REFLECT), 5)
            _emit(sweep, {"impl": "peer:cv2_GaussianBlur", **base, "timing": "host",
                          "median_ms": round(ms, 3), "runs": 5, "threads": os.cpu_count()})


def filters_rows(sweep, parts, size, rs, cv2_rs, kornia_max_r, fig5_sizes=None):
    """The parts asked for, in filters.py's order (gaussian, fig5, bilateral); a part that
    fails leaves its error in sweep.errors and the others run."""
    import time
    import traceback

    jobs = {"gaussian": lambda: gaussian_rows(sweep, size, rs, cv2_rs),
            "fig5": lambda: fig5_rows(sweep, fig5_sizes or (size, 128), rs),
            "bilateral": lambda: bilateral_rows(
                sweep, size, [r for r in rs if r in (1, 3, 5, 7, 9, 11, 15, 23)], cv2_rs,
                kornia_max_r)}
    errors = []
    for name in PARTS:
        if name not in parts:
            continue
        t = time.perf_counter()
        try:
            jobs[name]()
        except Exception:  # keep the other parts' rows
            sweep.log(traceback.format_exc())
            errors.append(f"{name}: {traceback.format_exc()[-400:]}")
        sweep.log(f"[{name}] {time.perf_counter() - t:.1f} s")
    return errors


# ---- report ---------------------------------------------------------------------
def _series(rows, part, impl, precision=None, size=None, variant=None):
    return sorted((r["kernel"][0] // 2, r["median_ms"]) for r in rows
                  if r.get("part") == part and r["impl"] == impl
                  and r.get("median_ms") is not None
                  and (precision is None or r["precision"] == precision)
                  and (size is None or r["image"][0] == size) and r.get("variant") == variant)


def _plot(ax, pts, label, **kw):
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label, **kw)


def _gaussian_panel(ax, rows, dev):
    _plot(ax, _series(rows, "gaussian", "filters.gaussian"), "filters.gaussian (auto: fused)")
    _plot(ax, _series(rows, "gaussian", "filters.gaussian", variant="host time hidden"),
          "filters.gaussian, host time hidden", ls=":")
    _plot(ax, _series(rows, "gaussian", "filters.gaussian",
                      variant="separable strips, host time hidden"),
          "method='separable' (strips), host time hidden", ls="-.")
    _plot(ax, _series(rows, "gaussian", "separable", variant="plan on a pre-padded image"),
          "separable plan, pre-padded input", ls="--")
    for impl, lab in (("peer:cupyx_gaussian_filter", "cupyx gaussian_filter"),
                      ("peer:cudnn_separable", "cuDNN 2 x 1-D conv2d (+ pad)"),
                      ("peer:kornia_gaussian_blur2d", "kornia gaussian_blur2d"),
                      ("peer:cv2_GaussianBlur", "cv2.GaussianBlur (host CPU)")):
        _plot(ax, _series(rows, "gaussian", impl), lab)
    size = next((r["image"][0] for r in rows if r.get("part") == "gaussian"), "?")
    ax.set(title=f"Gaussian {size}² fp32, sigma = r/2 ({dev})", xlabel="radius r",
           ylabel="ms", yscale="log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)


def gaussian_table(rows) -> list:
    """The Gaussian rows as a Markdown table (ms; ratios = peer / filters.gaussian; GB/s = the
    image read and written once in fp32 over filters.gaussian's host-hidden time)."""
    g = [r for r in rows if r.get("part") == "gaussian"]
    if not any(r["impl"] == "filters.gaussian" for r in g):
        return []

    def at(impl, variant=None, key="median_ms"):
        return {r["kernel"][0] // 2: r.get(key) for r in g
                if r["impl"] == impl and r.get("variant") == variant}
    ours, hidden = at("filters.gaussian"), at("filters.gaussian", "host time hidden")
    host = at("filters.gaussian", "host time per call")
    mp = at("filters.gaussian", key="mape_pct")
    strips = at("filters.gaussian", "separable strips, host time hidden")
    cupyx, cudnn = at("peer:cupyx_gaussian_filter"), at("peer:cudnn_separable")
    kornia = at("peer:kornia_gaussian_blur2d")
    size = g[0]["image"][0]

    def f(v, d=3):
        return "" if v is None else f"{v:.{d}f}"

    out = ["### filters.gaussian against its peers (ms)", "",
           "| r | filters.gaussian | host time hidden | host time per call | GB/s | MAPE % | "
           "x cupyx | x cuDNN | method='separable' (strips) | cupyx | cuDNN | kornia |",
           "|" + "---|" * 12]
    for r in sorted(ours):
        o, hd = ours[r], hidden.get(r)
        gbs = 2 * size * size * 4 / (hd * 1e6) if hd else None
        rc = cupyx.get(r) / o if o and cupyx.get(r) else None
        rd = cudnn.get(r) / o if o and cudnn.get(r) else None
        out.append(f"| {r} | {f(o, 4)} | {f(hd, 4)} | {f(host.get(r), 4)} | {f(gbs, 0)} | "
                   f"{'' if mp.get(r) is None else f'{mp[r]:.1e}'} | {f(rc, 1)} | {f(rd, 1)} | "
                   f"{f(strips.get(r), 4)} | {f(cupyx.get(r))} | {f(cudnn.get(r))} | "
                   f"{f(kornia.get(r))} |")
    return out + [""]


def fig5_figure(plt, rows, out, stem, dev) -> list:
    """Kondo Fig. 5: bilateral time against r, CUDA cores against both TC KI layouts, one panel
    per image size."""
    f5 = [r for r in rows if r.get("part") == "fig5" and r.get("median_ms") is not None]
    sizes = sorted({r["image"][0] for r in f5}, reverse=True)
    if not sizes:
        return []
    fig, axes = plt.subplots(1, len(sizes), figsize=(5.5 * len(sizes), 4), squeeze=False)
    for ax, size in zip(axes.flat, sizes):
        _plot(ax, _series(rows, "fig5", "bilateral_cuda", "fp32", size), "CUDA cores fp32")
        _plot(ax, _series(rows, "fig5", "bilateral_tc_32x8x16", None, size), "TC KI 32x8x16")
        _plot(ax, _series(rows, "fig5", "bilateral_tc_16x16x16", None, size), "TC KI 16x16x16")
        ax.set(title=f"bilateral {size}x{size} ({dev})", xlabel="radius r", ylabel="ms")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fn = out / f"{stem}_fig5.png"
    fig.savefig(fn, dpi=110)
    plt.close(fig)
    return [fn]


def figures(plt, doc, out, stem) -> list:
    """--preset filters: Fig. 5, the Gaussian against its peers, the bilateral against its."""
    rows, dev = doc["rows"], doc["device"]
    files = fig5_figure(plt, rows, out, stem, dev)
    has_g = any(r.get("part") == "gaussian" for r in rows)
    has_b = any(r.get("part") == "bilateral" for r in rows)
    if not (has_g or has_b):
        return files
    fig, axes = plt.subplots(1, has_g + has_b, figsize=(5.5 * (has_g + has_b) + 1, 4.5),
                             squeeze=False)
    axes = list(axes.flat)
    if has_g:
        _gaussian_panel(axes.pop(0), rows, dev)
    if has_b:
        ax = axes.pop(0)
        size = next(r["image"][0] for r in rows if r.get("part") == "bilateral")
        _plot(ax, _series(rows, "bilateral", "filters.bilateral"), "filters.bilateral (front end)")
        _plot(ax, _series(rows, "fig5", "bilateral_cuda", "fp32", size), "bilateral_cuda plan",
              ls="--")
        _plot(ax, _series(rows, "bilateral", "peer:kornia_bilateral_blur"),
              "kornia bilateral_blur")
        _plot(ax, _series(rows, "bilateral", "peer:cv2_bilateralFilter"),
              "cv2.bilateralFilter (host CPU)")
        ax.set(title=f"bilateral {size}² fp32 ({dev})", xlabel="radius r", ylabel="ms",
               yscale="log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fn = out / f"{stem}_peers.png"
    fig.savefig(fn, dpi=110)
    plt.close(fig)
    return files + [fn]
