"""tensorconv.filters.gaussian against scipy.ndimage.gaussian_filter and tensorconv.filters.bilateral
against a float64 NumPy reference and cv2.bilateralFilter; every registry method they can reach."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.ndimage as ndi

import tensorconv as tc
from tensorconv import _core, filters
from tensorconv.metrics import mape

from bounds import (BILATERAL_CV2_MAX_ABS, BILATERAL_MAX_REL, GAUSSIAN_FUSED_MAPE_PCT,
                    GAUSSIAN_MAPE_PCT, GAUSSIAN_MAX_ERR, mape_bound)

MODES = ("reflect", "constant", "nearest", "mirror", "wrap")
NP_DTYPE = {"fp64": np.float64, "fp32": np.float32, "fp16fp32": np.float16}


def rows_by(entry):
    return [m for m in tc.methods() if m.entry == entry]


def method_params(entry, device=None, precisions=None):
    """(method, precision) of the registry rows reached through `entry`, GPU rows gpu-marked,
    unavailable ones skipped with the registry's reason."""
    out = []
    for m in rows_by(entry):
        if device and m.device != device:
            continue
        for p in m.precisions:
            if precisions and p not in precisions:
                continue
            marks = [pytest.mark.gpu] if m.device == "cuda" else []
            if not m.available:
                marks.append(pytest.mark.skip(reason=f"{m.name}: {m.reason}"))
            out.append(pytest.param(m.name, p, marks=marks, id=f"{m.name}-{p}"))
    return out


def image(shape, seed=0, lo=0.0):
    return lo + (1 - lo) * np.random.default_rng(seed).random(shape)


def to_host(x):
    if hasattr(x, "get"):
        return x.get()
    if hasattr(x, "cpu"):
        return x.cpu().numpy()
    return np.asarray(x)


def on_device(x, lib):
    if lib == "cupy":
        cp = pytest.importorskip("cupy")
        return cp.asarray(x)
    torch = pytest.importorskip("torch")
    return torch.as_tensor(x, device="cuda")


def check_gaussian(out, ref, precision, order, method="separable", scale=None, what=""):
    """max |error| relative to the computation's magnitude (max |image| sum |kernel|: derivatives
    cancel, so max |ref| would measure the cancellation, not the method); MAPE for order 0.
    what: the case, for the assertion messages (image, radius)."""
    out = to_host(out).astype(np.float64)
    if scale is None:
        scale = np.abs(ref).max()
    err = np.abs(out - ref).max() / scale
    fused = method == "separable_boundary"  # the fused filter named explicitly (bounds.py)
    bound = max(GAUSSIAN_MAX_ERR[precision],
                0.0 if fused else 1e-2 * mape_bound(method, precision))
    assert err <= bound, f"{what}max error {err:.3g} (bound {bound:.3g})"
    if order == 0:
        m = mape(out, ref)
        # the goal's bound for the separable passes ('auto' on a GPU); other methods keep their
        # correlate2d bound (direct's fp32 sums 2-D windows tap by tap: ~1e-5 %)
        if fused:
            mb = GAUSSIAN_FUSED_MAPE_PCT[precision]
        elif method in ("separable", "auto"):
            mb = GAUSSIAN_MAPE_PCT[precision]
        else:
            mb = max(GAUSSIAN_MAPE_PCT[precision], mape_bound(method, precision))
        assert m <= mb, f"{what}MAPE {m:.3g} % (bound {mb:.3g} %)"


def gaussian_scale(sigma, order, image_max):
    """max |image| x sum |2-D kernel| (orders 0 have sum 1)."""
    from tensorconv.filters.gaussian import gaussian_kernel1d
    w = np.abs(gaussian_kernel1d(sigma, order, int(4 * sigma + 0.5))).sum()
    return image_max * w * w


# ---- gaussian: CPU (every mode, sigma 0.5..20, float32/float64, order 0..2) ------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sigma", [0.5, 1.3, 4.0, 20.0])
@pytest.mark.parametrize("order", [0, 1, 2])
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_gaussian_cpu_vs_scipy(mode, sigma, order, precision):
    img = image((41, 57), seed=int(sigma * 10) + order)
    x = img.astype(NP_DTYPE[precision])
    out = filters.gaussian(x, sigma, order=order, mode=mode, cval=0.25)
    assert isinstance(out, np.ndarray) and out.dtype == x.dtype and out.shape == x.shape
    ref = ndi.gaussian_filter(img, sigma, order=order, mode=mode, cval=0.25)
    check_gaussian(out, ref, precision, order, "direct", gaussian_scale(sigma, order, 1.0))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("radius", [0, 2, (1, 5), 30])
def test_gaussian_radius_and_axes(mode, radius):
    img = image((23, 38), seed=3)
    out = filters.gaussian(img, (1.5, 3.0), order=(0, 1), mode=mode, cval=-0.5, radius=radius)
    ref = ndi.gaussian_filter(img, (1.5, 3.0), order=(0, 1), mode=mode, cval=-0.5, radius=radius)
    check_gaussian(out, ref, "fp64", 1, "direct", 1.0)


@pytest.mark.parametrize("mode", ["grid-mirror", "grid-constant", "grid-wrap"])
def test_gaussian_mode_aliases(mode):
    img = image((20, 31), seed=6)
    out = filters.gaussian(img, 1.5, mode=mode, cval=0.4)
    check_gaussian(out, ndi.gaussian_filter(img, 1.5, mode=mode, cval=0.4), "fp64", 0, "direct")


@pytest.mark.parametrize("method", ["direct", "numpy"])
def test_gaussian_cpu_paths(method):
    """Both CPU paths of 'auto' (direct below 41x41 taps, the NumPy passes above) agree."""
    img = image((60, 70), seed=5).astype(np.float32)
    sigma = 1.0 if method == "direct" else 6.0
    out = filters.gaussian(img, sigma, mode="wrap")
    check_gaussian(out, ndi.gaussian_filter(img.astype(np.float64), sigma, mode="wrap"), "fp32",
                   0, "direct")


def test_gaussian_integer_and_1xn():
    img = (image((1, 40)) * 100).astype(np.int32)
    out = filters.gaussian(img, 2.0, mode="nearest")
    assert out.dtype == np.float64
    ref = ndi.gaussian_filter(img.astype(np.float64), 2.0, mode="nearest")
    check_gaussian(out, ref, "fp64", 0, "direct")


def test_gaussian_usc_sipi(usc_images):
    name, img = usc_images[0]
    img = img[:300, :300]
    for precision in ("fp64", "fp32"):
        out = filters.gaussian(img.astype(NP_DTYPE[precision]), 3.0)
        check_gaussian(out, ndi.gaussian_filter(img, 3.0), precision, 0, "direct")


# ---- gaussian on the GPU: every correlate2d CUDA method, CuPy and PyTorch --------------------

@pytest.mark.parametrize("method,precision",
                         method_params("correlate2d", "cuda", ("fp32", "fp64")) +
                         [pytest.param("auto", "fp32", marks=pytest.mark.gpu, id="auto-fp32"),
                          pytest.param("auto", "fp64", marks=pytest.mark.gpu, id="auto-fp64")])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sigma,order", [(0.5, 0), (3.0, 1), (3.0, 0), (12.0, 2)])
def test_gaussian_gpu_vs_scipy(method, precision, mode, sigma, order):
    # (67, 91) with sigma 3: interior + four strips; sigma 12 (radius 48): one padded call.
    img = image((67, 91), seed=int(sigma) + order)
    lib = "cupy" if (len(mode) + order) % 2 else "torch"
    x = on_device(img.astype(NP_DTYPE[precision]), lib)
    out = filters.gaussian(x, sigma, order=order, mode=mode, cval=0.75, method=method,
                           precision=precision)
    assert type(out) is type(x) and tuple(out.shape) == img.shape
    ref = ndi.gaussian_filter(img, sigma, order=order, mode=mode, cval=0.75)
    scale = gaussian_scale(sigma, order, 1.0)
    check_gaussian(out, ref, precision, order, method, scale)
    # host arrays reach the same method through the staged path
    if method != "auto":
        out_h = filters.gaussian(img.astype(NP_DTYPE[precision]), sigma, order=order, mode=mode,
                                 cval=0.75, method=method, precision=precision)
        check_gaussian(out_h, ref, precision, order, method, scale)


@pytest.mark.gpu
def test_gaussian_gpu_strips_large():
    """A 4096-wide image: the interior goes straight from the image to the output."""
    cp = pytest.importorskip("cupy")
    img = image((300, 4096), seed=9).astype(np.float32)
    for mode in MODES:
        out = filters.gaussian(cp.asarray(img), 5.5, mode=mode, cval=2.0)
        ref = ndi.gaussian_filter(img.astype(np.float64), 5.5, mode=mode, cval=2.0)
        check_gaussian(out, ref, "fp32", 0)


@pytest.mark.parametrize("method,precision",
                         method_params("correlate2d", "cuda", ("fp16", "fp16fp32", "bf16",
                                                                "tf32")))
@pytest.mark.parametrize("mode", ["reflect", "constant"])
@pytest.mark.parametrize("sigma", [2.0, 6.0])
def test_gaussian_gpu_reduced_precisions(method, precision, mode, sigma):
    """Every CUDA correlate2d method in its half / tf32 precisions (the FIR methods included once
    registered): MAPE within the method's correlate2d bound (tests/bounds.py)."""
    img = image((75, 96), seed=int(sigma))
    x = on_device(img.astype(np.float32), "torch" if mode == "reflect" else "cupy")
    out = filters.gaussian(x, sigma, mode=mode, cval=0.5, method=method, precision=precision)
    ref = ndi.gaussian_filter(img, sigma, mode=mode, cval=0.5)
    m = mape(to_host(out).astype(np.float64), ref)
    assert m <= mape_bound(method, precision), f"MAPE {m:.3g} %"


@pytest.mark.gpu
@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_gaussian_gpu_float16(lib):
    """float16 images: fp16fp32 (half storage, fp32 sums), float16 out."""
    img = image((70, 90), seed=11)
    x = on_device(img.astype(np.float16), lib)
    out = filters.gaussian(x, 2.0, mode="mirror")
    assert "float16" in str(out.dtype)
    ref = ndi.gaussian_filter(img.astype(np.float16).astype(np.float64), 2.0, mode="mirror")
    check_gaussian(out, ref, "fp16fp32", 0)


# ---- gaussian: bad input ---------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(sigma=0), ValueError, "sigma must be finite and > 0"),
    (dict(sigma=-1.0), ValueError, "sigma must be finite and > 0"),
    (dict(sigma=float("nan")), ValueError, "sigma must be finite and > 0"),
    (dict(sigma=float("inf")), ValueError, "sigma must be finite and > 0"),
    (dict(sigma=(1.0, 0.0)), ValueError, "sigma must be finite and > 0"),
    (dict(sigma=(1.0, 2.0, 3.0)), ValueError, "sigma must be a scalar or one value per axis"),
    (dict(sigma="1"), TypeError, "sigma must be a number"),
    (dict(sigma=1.0, radius=-1), ValueError, "radius must be >= 0"),
    (dict(sigma=1.0, radius=1.5), TypeError, "radius must be a non-negative integer"),
    (dict(sigma=1.0, order=-1), ValueError, "order must be >= 0"),
    (dict(sigma=1.0, mode="edge"), ValueError,
     "unknown mode 'edge'; valid modes: reflect, constant, nearest, mirror, wrap"),
    (dict(sigma=1.0, truncate=float("nan")), ValueError, "truncate must be a finite number"),
    (dict(sigma=1.0, method="nope"), ValueError, "unknown method 'nope'; valid methods: auto"),
    (dict(sigma=1.0, method="bilateral_cpu"), ValueError, "not a correlate2d method"),
    (dict(sigma=1.0, precision="fp8"), ValueError, "unknown precision 'fp8'; valid precisions"),
    (dict(sigma=1.0, cval=1j), TypeError, "fillvalue must be real"),
])
def test_gaussian_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        filters.gaussian(np.ones((8, 9)), **kwargs)


@pytest.mark.parametrize("bad,exc,match", [
    (np.ones((4, 5), complex), TypeError, "image is complex"),
    (np.ones(5), ValueError, "image must be a 2-D array"),
    (np.ones((2, 3, 4)), ValueError, "image must be a 2-D array"),
    (np.ones((0, 4)), ValueError, "image is empty"),
    (np.array([["a"]]), TypeError, "image has dtype"),
])
def test_gaussian_bad_images(bad, exc, match):
    with pytest.raises(exc, match=match):
        filters.gaussian(bad, 1.0)
    with pytest.raises(exc, match=match):
        filters.bilateral(bad, 1.0, 0.1)


# ---- bilateral -------------------------------------------------------------------------------

_PAD = {"reflect": "symmetric", "mirror": "reflect", "nearest": "edge", "wrap": "wrap",
        "constant": "constant"}


def bilateral_reference(img, sigma_s, sigma_r, radius, mode="reflect", cval=0.0):
    """The textbook definition in float64: sum w I(q) / sum w over the square window."""
    img = np.asarray(img, np.float64)
    h, w = img.shape
    kw = {"constant_values": cval} if mode == "constant" else {}
    p = np.pad(img, radius, mode=_PAD[mode], **kw)
    num = np.zeros((h, w))
    den = np.zeros((h, w))
    for dy in range(2 * radius + 1):
        for dx in range(2 * radius + 1):
            q = p[dy:dy + h, dx:dx + w]
            ws = math.exp(-((dy - radius) ** 2 + (dx - radius) ** 2) / (2 * sigma_s ** 2))
            wt = ws * np.exp(-(q - img) ** 2 / (2 * sigma_r ** 2))
            num += wt * q
            den += wt
    return num / den


def run_bilateral(x, method, precision, lib, **kw):
    if lib != "numpy":
        x = on_device(x, lib)
    out = filters.bilateral(x, method=method, precision=precision, **kw)
    assert type(out) is type(x)
    return to_host(out)


def libs_for(method):
    return ("numpy",) if method == "bilateral_cpu" else ("cupy", "torch", "numpy")


@pytest.mark.parametrize("method,precision", method_params("filters.bilateral"))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sigma_s,sigma_r,radius", [(1.0, 0.1, None), (2.5, 0.3, 4), (3.0, 0.05, 9),
                                                    (4.0, 0.5, 60)])
def test_bilateral_vs_reference(method, precision, mode, sigma_s, sigma_r, radius):
    if radius == 60 and mode != "reflect":
        pytest.skip("the large-radius (global memory) path: one mode is enough")
    shape = (37, 29) if radius == 60 else (45, 67)
    img = image(shape, seed=int(sigma_s * 7), lo=0.05)
    x = img.astype(NP_DTYPE[precision])
    lib = libs_for(method)[len(mode) % len(libs_for(method))]
    out = run_bilateral(x, method, precision, lib, sigma_spatial=sigma_s, sigma_range=sigma_r,
                        radius=radius, mode=mode, cval=0.6)
    assert out.dtype == x.dtype and out.shape == x.shape
    r = math.ceil(3 * sigma_s) if radius is None else radius
    ref = bilateral_reference(x, sigma_s, sigma_r, r, mode, 0.6)  # of the stored input
    err = (np.abs(out.astype(np.float64) - ref) / np.abs(ref)).max()
    assert err <= BILATERAL_MAX_REL[precision], f"max relative error {err:.3g}"


@pytest.mark.parametrize("sigma_s,radius", [(1.5, 9), (2.0, 12)])
def test_bilateral_vs_cv2(sigma_s, radius):
    """cv2.bilateralFilter agrees on float32 with borderType=BORDER_REFLECT_101 (mode='mirror'),
    d = 2 radius + 1 and a radius of 6 sigma_spatial (cv2's window is the disc of that radius,
    ours the square: the corners' weights are then below exp(-18))."""
    cv2 = pytest.importorskip("cv2")
    img = image((64, 80), seed=2).astype(np.float32)
    out = filters.bilateral(img, sigma_s, 0.2, radius=radius, mode="mirror")
    ref = cv2.bilateralFilter(img, 2 * radius + 1, 0.2, sigma_s,
                              borderType=cv2.BORDER_REFLECT_101)
    assert np.abs(out - ref).max() <= BILATERAL_CV2_MAX_ABS


@pytest.mark.parametrize("method,precision", method_params("filters.bilateral"))
def test_bilateral_constant_image_exact(method, precision):
    for lib in libs_for(method)[:2]:
        for value in (0.1, -3.7, 1e4):
            x = np.full((33, 47), value, NP_DTYPE[precision])
            out = run_bilateral(x, method, precision, lib, sigma_spatial=2.0, sigma_range=0.1)
            assert np.array_equal(out, x)


@pytest.mark.parametrize("method,precision", method_params("filters.bilateral"))
def test_bilateral_nonfinite(method, precision):
    """A NaN or +-inf makes exactly the outputs whose window holds it NaN."""
    r = 2
    img = image((30, 40), seed=4, lo=0.05)
    img[10, 12] = np.nan
    img[22, 30] = np.inf
    img[3, 35] = -np.inf
    x = img.astype(NP_DTYPE[precision])
    out = run_bilateral(x, method, precision, libs_for(method)[0], sigma_spatial=1.0,
                        sigma_range=0.2, radius=r, mode="constant")
    bad = np.zeros(img.shape, bool)
    for y, xx in ((10, 12), (22, 30), (3, 35)):
        bad[max(0, y - r):y + r + 1, max(0, xx - r):xx + r + 1] = True
    assert np.isnan(out[bad]).all()
    assert np.isfinite(out[~bad]).all()
    clean = img.copy()
    clean[bad] = 0.5  # the finite outputs do not depend on the bad pixels' values
    ref = bilateral_reference(np.where(np.isfinite(img), img, 0.5).astype(x.dtype), 1.0, 0.2, r,
                              "constant")
    err = (np.abs(out[~bad] - ref[~bad]) / np.abs(ref[~bad])).max()
    assert err <= BILATERAL_MAX_REL[precision]


@pytest.mark.parametrize("method,precision", method_params("filters.bilateral"))
def test_bilateral_memory_is_o_image(method, precision):
    """The plan holds only the spatial weights: nothing grows with radius x image."""
    for radius in (1, 23):
        k = 2 * radius + 1
        p = _core.make_filter_plan(method, "filters.bilateral", np.ones((k, k)), 200 + 2 * radius,
                                   300 + 2 * radius, precision, 0.1)
        assert p.workspace_bytes <= 8 * k * (k + 16)


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(sigma_spatial=0.0, sigma_range=0.1), ValueError, "sigma_spatial must be finite and > 0"),
    (dict(sigma_spatial=float("inf"), sigma_range=0.1), ValueError,
     "sigma_spatial must be finite and > 0"),
    (dict(sigma_spatial=1.0, sigma_range=-0.1), ValueError, "sigma_range must be finite and > 0"),
    (dict(sigma_spatial=1.0, sigma_range=float("nan")), ValueError,
     "sigma_range must be finite and > 0"),
    (dict(sigma_spatial=1.0, sigma_range=0.1, radius=-2), ValueError, "radius must be >= 0"),
    (dict(sigma_spatial=1.0, sigma_range=0.1, radius=2.0), TypeError,
     "radius must be a non-negative integer"),
    (dict(sigma_spatial=1.0, sigma_range=0.1, mode="symmetric"), ValueError,
     "unknown mode 'symmetric'; valid modes: reflect, constant, nearest, mirror, wrap"),
    (dict(sigma_spatial=1.0, sigma_range=0.1, method="separable"), ValueError,
     "unknown bilateral method 'separable'; valid methods: auto, bilateral_cpu"),
    (dict(sigma_spatial=1.0, sigma_range=0.1, precision="bf16"), ValueError,
     "no available .*bilateral method supports precision 'bf16'"),
    (dict(sigma_spatial=1.0, sigma_range=0.1, method="bilateral_cpu", precision="fp16fp32"),
     ValueError, "'bilateral_cpu' does not support precision 'fp16fp32'; it supports: fp32, fp64"),
])
def test_bilateral_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        filters.bilateral(np.ones((8, 9)), **kwargs)


def test_bilateral_not_a_correlate2d_method():
    with pytest.raises(ValueError, match="call tensorconv.filters.bilateral instead"):
        tc.correlate2d(np.ones((8, 9)), np.ones((3, 3)), method="bilateral_cpu")
    with pytest.raises(ValueError, match="not a filters.bilateral method"):
        _core.make_filter_plan("direct", "filters.bilateral", np.ones((3, 3)), 10, 10, "fp64", 0.1)
