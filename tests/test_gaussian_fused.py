"""tensorconv.filters.gaussian's fused GPU path ('separable_boundary': one launch, boundary modes
built in) against scipy.ndimage.gaussian_filter in float64: every mode (and per-axis pairs),
sigma 0.5..20, orders 0..2, float32/float64, odd / 1 x N / tiny shapes (images smaller than the
radius: scipy's repeated reflection), CuPy and PyTorch, non-contiguous input, non-finite values.
Bounds: tests/bounds.py (GAUSSIAN_MAPE_PCT, GAUSSIAN_MAX_ERR)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi

from tensorconv import _core, filters

from test_filters import MODES, NP_DTYPE, check_gaussian, gaussian_scale, image, on_device, to_host

FUSED = "separable_boundary"
pytestmark = pytest.mark.gpu


def scale_of(sigma, order, img):
    s = np.broadcast_to(np.asarray(sigma, float), (2,))
    o = np.broadcast_to(np.asarray(order), (2,))
    return max(1.0, float(np.abs(img).max())) * np.sqrt(
        gaussian_scale(s[0], o[0], 1.0) * gaussian_scale(s[1], o[1], 1.0))


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sigma", [0.5, 1.3, 3.0, 7.5, 20.0])
@pytest.mark.parametrize("order", [0, 1, 2])
def test_fused_vs_scipy(precision, mode, sigma, order):
    img = image((67, 91), seed=int(sigma * 10) + order)
    lib = "cupy" if (len(mode) + order) % 2 else "torch"
    x = on_device(img.astype(NP_DTYPE[precision]), lib)
    k = 2 * int(4 * sigma + 0.5) + 1
    if not _core.separable_boundary_supported(*img.shape, k, k, NP_DTYPE[precision].__name__):
        # sigma 20 (161 taps): past its shared memory; 'auto' falls back (checked below)
        assert sigma == 20.0
        with pytest.raises(ValueError, match="does not fit its shared memory"):
            filters.gaussian(x, sigma, order=order, mode=mode, cval=0.75, method=FUSED)
        out = filters.gaussian(x, sigma, order=order, mode=mode, cval=0.75)
        check_gaussian(out, ndi.gaussian_filter(img, sigma, order=order, mode=mode, cval=0.75),
                       precision, order, "auto", gaussian_scale(sigma, order, 1.0))
        return
    out = filters.gaussian(x, sigma, order=order, mode=mode, cval=0.75, method=FUSED)
    assert type(out) is type(x) and tuple(out.shape) == img.shape
    assert str(out.dtype).endswith(NP_DTYPE[precision].__name__)
    ref = ndi.gaussian_filter(img, sigma, order=order, mode=mode, cval=0.75)
    scale = gaussian_scale(sigma, order, 1.0)
    check_gaussian(out, ref, precision, order, FUSED, scale)
    auto = filters.gaussian(x, sigma, order=order, mode=mode, cval=0.75)
    if precision == "fp64" or k <= 23:
        # 'auto' on a CUDA array is the same launch: the same bits
        assert np.array_equal(to_host(auto), to_host(out))
    else:  # fp32 beyond 23 taps: 'auto' takes the `separable` plan to 64 taps (gaussian.py)
        check_gaussian(auto, ref, precision, order, "auto", scale)


@pytest.mark.parametrize("shape", [(1, 1), (1, 37), (37, 1), (3, 5), (2, 300), (130, 70)])
@pytest.mark.parametrize("mode", MODES)
def test_fused_small_shapes(shape, mode):
    """Images smaller than the radius (sigma 5: radius 20) repeat the reflection as scipy does."""
    img = image(shape, seed=shape[0] * 7 + shape[1])
    for precision in ("fp32", "fp64"):
        x = on_device(img.astype(NP_DTYPE[precision]), "cupy" if shape[0] % 2 else "torch")
        out = filters.gaussian(x, (5.0, 2.5), order=(0, 1), mode=mode, cval=-0.5, method=FUSED)
        ref = ndi.gaussian_filter(img, (5.0, 2.5), order=(0, 1), mode=mode, cval=-0.5)
        check_gaussian(out, ref, precision, 1, "auto", scale_of((5.0, 2.5), (0, 1), img))


@pytest.mark.parametrize("modes", [("reflect", "constant"), ("constant", "wrap"),
                                   ("mirror", "nearest"), ("wrap", "reflect")])
def test_fused_per_axis_modes(modes):
    img = image((45, 58), seed=3)
    x = on_device(img.astype(np.float64), "cupy")
    out = filters.gaussian(x, (2.0, 3.5), order=(1, 0), mode=modes, cval=1.5)
    ref = ndi.gaussian_filter(img, (2.0, 3.5), order=(1, 0), mode=modes, cval=1.5)
    check_gaussian(out, ref, "fp64", 1, "auto", scale_of((2.0, 3.5), (1, 0), img))
    # the other paths take one mode
    with pytest.raises(ValueError, match="per-axis modes"):
        filters.gaussian(img, 2.0, mode=modes)


@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_fused_noncontiguous_and_integer(lib):
    img = image((90, 121), seed=5).astype(np.float32)
    x = on_device(img, lib)
    views = ((x[::2, 1::3], img[::2, 1::3]), (x.T, img.T), (x[5:70, 3:100], img[5:70, 3:100]))
    for view, ref_in in views:
        out = filters.gaussian(view, 1.7, mode="mirror")
        ref = ndi.gaussian_filter(ref_in.astype(np.float64), 1.7, mode="mirror")
        assert tuple(out.shape) == ref.shape
        check_gaussian(out, ref, "fp32", 0, "auto")
    ints = (img * 255).astype(np.int32)
    out = filters.gaussian(on_device(ints, lib), 2.2, mode="nearest")
    assert str(out.dtype).endswith("float64")
    check_gaussian(out, ndi.gaussian_filter(ints.astype(np.float64), 2.2, mode="nearest"),
                   "fp64", 0, "auto")


def test_fused_nonfinite():
    """inf / NaN reach exactly the pixels scipy's do (padded taps are skipped, not multiplied)."""
    img = image((64, 80), seed=8)
    img[20, 30] = np.inf
    img[50, 5] = np.nan
    for precision in ("fp32", "fp64"):
        out = to_host(filters.gaussian(on_device(img.astype(NP_DTYPE[precision]), "torch"), 1.0,
                                       order=(0, 1), method=FUSED)).astype(np.float64)
        ref = ndi.gaussian_filter(img, 1.0, order=(0, 1))
        assert np.array_equal(np.isnan(out), np.isnan(ref))
        assert np.array_equal(np.isposinf(out), np.isposinf(ref))
        assert np.array_equal(np.isneginf(out), np.isneginf(ref))
        fin = np.isfinite(ref)
        assert np.abs(out[fin] - ref[fin]).max() <= 1e-5


def test_fused_cache_and_stream():
    """A repeated call reuses its set-up; a changed argument does not hit it; the caller's stream
    is used."""
    torch = pytest.importorskip("torch")
    img = image((100, 130), seed=2).astype(np.float32)
    x = on_device(img, "torch")
    for cval in (0.0, 2.0, 0.0):
        out = filters.gaussian(x, 2.0, mode="constant", cval=cval)
        check_gaussian(out, ndi.gaussian_filter(img.astype(np.float64), 2.0, mode="constant",
                                                cval=cval), "fp32", 0, "auto")
    s = torch.cuda.Stream()
    torch.cuda.synchronize()  # x was made on the default stream
    with torch.cuda.stream(s):
        y = x * 2  # on s
        out = filters.gaussian(y, 2.5, mode="wrap")  # 21 taps: 'auto' is the fused filter
    s.synchronize()
    check_gaussian(out, ndi.gaussian_filter(2 * img.astype(np.float64), 2.5, mode="wrap"),
                   "fp32", 0, "auto")


def test_fused_large_radius_falls_back():
    """Beyond what shared memory holds, 'auto' takes the `separable` plan; the explicit method
    says why."""
    img = image((150, 160), seed=4)
    x = on_device(img, "cupy")
    k = 2 * int(4 * 40.0 + 0.5) + 1
    assert not _core.separable_boundary_supported(150, 160, k, k, "float64")
    out = filters.gaussian(x, 40.0, mode="reflect")
    check_gaussian(out, ndi.gaussian_filter(img, 40.0), "fp64", 0, "auto")
    with pytest.raises(ValueError, match="does not fit its shared memory"):
        filters.gaussian(x, 40.0, method=FUSED)


def test_fused_refusals():
    img = image((20, 30), seed=1)
    with pytest.raises(ValueError, match="filters CUDA arrays"):
        filters.gaussian(img, 1.0, method=FUSED)
    x = on_device(img.astype(np.float16), "torch")
    with pytest.raises(ValueError, match="fp32 and fp64, not fp16fp32"):
        filters.gaussian(x, 1.0, method=FUSED)
    with pytest.raises(ValueError, match="one name per axis"):
        filters.gaussian(x, 1.0, mode=("reflect", "wrap", "nearest"))
    with pytest.raises(ValueError, match="unknown mode"):
        filters.gaussian(x, 1.0, mode=("reflect", "edge"))


def test_fused_usc_sipi(usc_images):
    """Real images, float32, sigma = r / 2 at the benchmark's radii: MAPE <= 1e-5 % (the fused
    filter to radius 11, the `separable` plan beyond; emulated on the CPU: <= 5.7e-6 % and
    <= 2.9e-6 %, benchmarks/harness/gaussian_fp32_emulate.py)."""
    for name, img in usc_images[:3]:
        img = img[:512, :512]
        x = on_device(img.astype(np.float32), "cupy")
        for r in (1, 3, 7, 11, 23):
            out = filters.gaussian(x, r / 2.0, radius=r)
            check_gaussian(out, ndi.gaussian_filter(img, r / 2.0, radius=r), "fp32", 0, "auto",
                           what=f"{name} {img.shape} radius {r}: ")
            if 2 * r + 1 > 23:  # 'auto' beyond 23 taps is the `separable` plan, bit for bit
                sep = filters.gaussian(x, r / 2.0, radius=r, method="separable")
                assert np.array_equal(to_host(out), to_host(sep)), f"{name} radius {r}"
