"""tensorconv.astropy.convolve / convolve_fft against astropy.convolution itself (float64:
max relative error <= ASTROPY_MAX_REL['fp64'], fp32 <= ['fp32']; NaN patterns identical), every
boundary, both NaN treatments, masks, NaN runs and NaN blocks larger than the kernel, odd
non-square images and kernels, astropy's kernel types, bad input; GPU methods gpu-marked."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from astropy import units as u
from astropy.convolution import (Box2DKernel, Gaussian2DKernel, Ring2DKernel, Tophat2DKernel,
                                 convolve as ap_convolve, convolve_fft as ap_convolve_fft)
from astropy.convolution.utils import KernelSizeError
from astropy.utils.exceptions import AstropyUserWarning

import tensorconv as tc
from tensorconv import astropy as tca

from bounds import ASTROPY_MAX_REL
from test_filters import on_device, to_host  # CuPy / torch round trips

BOUNDARIES = (None, "fill", "wrap", "extend")
FFT_BOUNDARIES = ("fill", "wrap")


def image(shape=(61, 47), seed=0, nan_frac=0.03, runs=True, dtype=np.float64):
    """Values in [0.1, 1] with scattered NaN pixels and a horizontal and a vertical NaN run."""
    rng = np.random.default_rng(seed)
    x = 0.1 + 0.9 * rng.random(shape)
    x[rng.random(shape) < nan_frac] = np.nan
    if runs:
        x[shape[0] // 3, 3:3 + shape[1] // 2] = np.nan
        x[5:5 + shape[0] // 2, shape[1] // 4] = np.nan
    return x.astype(dtype)


def kernels():
    rng = np.random.default_rng(7)
    return {
        "gauss": Gaussian2DKernel(1.5),  # a Kernel2D object (9x9 ... astropy's size rule)
        "box5": Box2DKernel(5),
        "tophat": Tophat2DKernel(3),   # zero weights in the corners
        "rand7x5": 0.05 + rng.random((7, 5)),
        "ring": Ring2DKernel(3, 2),    # zero weights in the middle
    }


def assert_astropy_close(got, ref, rtol, what=""):
    got = np.asarray(got)
    ref = np.asarray(ref)
    assert got.shape == ref.shape, what
    gn, rn = np.isnan(got), np.isnan(ref)
    assert np.array_equal(gn, rn), f"{what}: NaN patterns differ at {np.argwhere(gn != rn)[:5]}"
    g, r = got[~rn].astype(np.float64), ref[~rn].astype(np.float64)
    assert np.array_equal(np.isinf(g), np.isinf(r)), what
    f = np.isfinite(r)
    if f.any():
        # relative to the value, with a floor far below the data's scale for exact zeros
        floor = 1e-3 * max(float(np.abs(r[f]).max()), 1e-300)
        err = float(np.max(np.abs(g[f] - r[f]) / np.maximum(np.abs(r[f]), floor)))
        assert err <= rtol, f"{what}: max relative error {err:.3g} > {rtol:.1g}"


def quiet(f, *a, **k):
    """f(...) with astropy's warnings (and NumPy's, which astropy's own sums raise) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AstropyUserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*a, **k)


# ---- convolve --------------------------------------------------------------------------------

@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("kname", ["gauss", "box5", "tophat", "rand7x5", "ring"])
def test_convolve_interpolate(boundary, kname):
    k = kernels()[kname]
    x = image(seed=hash(kname) % 100)
    ref = quiet(ap_convolve, x, k, boundary=boundary)
    got = quiet(tca.convolve, x, k, boundary=boundary)
    assert got.dtype == ref.dtype
    assert_astropy_close(got, ref, ASTROPY_MAX_REL["fp64"], f"{kname} {boundary}")


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("opts", [
    dict(nan_treatment="fill", fill_value=0.25),
    dict(normalize_kernel=False),
    dict(normalize_kernel=False, nan_treatment="fill"),
    dict(preserve_nan=True),
    dict(fill_value=np.nan),
    dict(fill_value=2.0, preserve_nan=True, nan_treatment="fill"),
])
def test_convolve_options(boundary, opts):
    k = kernels()["rand7x5"]
    x = image((40, 53), seed=3)
    ref = quiet(ap_convolve, x, k, boundary=boundary, **opts)
    got = quiet(tca.convolve, x, k, boundary=boundary, **opts)
    assert_astropy_close(got, ref, ASTROPY_MAX_REL["fp64"], f"{boundary} {opts}")


def test_convolve_no_nan_and_inf():
    k = kernels()["gauss"]
    x = image(nan_frac=0, runs=False)
    for boundary in BOUNDARIES:
        assert_astropy_close(tca.convolve(x, k, boundary=boundary),
                             ap_convolve(x, k, boundary=boundary), ASTROPY_MAX_REL["fp64"])
    # +inf alone: no interpolation (astropy tests isnan(sum)); +inf and -inf: interpolation
    y = x.copy()
    y[10, 10] = np.inf
    assert_astropy_close(tca.convolve(y, k), ap_convolve(y, k), ASTROPY_MAX_REL["fp64"])
    y[30, 30] = -np.inf
    y[20, 5] = np.nan
    assert_astropy_close(quiet(tca.convolve, y, k), quiet(ap_convolve, y, k),
                         ASTROPY_MAX_REL["fp64"])


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("kname", ["gauss", "tophat", "ring"])
def test_convolve_nan_block_larger_than_kernel(boundary, kname):
    """Windows with tiny or no valid weight: astropy's result exactly (its centre-pixel rule
    gives NaN where no valid pixel is under the kernel, with its warning)."""
    k = kernels()[kname]
    x = image((64, 70), seed=5, nan_frac=0.01)
    x[20:45, 15:50] = np.nan
    with pytest.warns(AstropyUserWarning, match="NaN values detected post convolution"):
        ref = ap_convolve(x, k, boundary=boundary)
    with pytest.warns(AstropyUserWarning, match="NaN values detected post convolution"):
        got = tca.convolve(x, k, boundary=boundary)
    assert np.isnan(ref).any()
    assert_astropy_close(got, ref, ASTROPY_MAX_REL["fp64"], f"{kname} {boundary}")


@pytest.mark.parametrize("normalize", [True, False])
def test_convolve_zero_valid_weight_rule(normalize):
    """Integer kernels with negative and zero weights: windows whose valid weights sum to exactly
    0 take astropy's centre-pixel rule (times the kernel sum when it is not normalized); signed
    data."""
    rng = np.random.default_rng(17)
    for _ in range(20):
        x = rng.normal(size=(23, 19))
        x[rng.random(x.shape) < 0.5] = np.nan
        k = rng.integers(-2, 4, (5, 3)).astype(float)
        k[2, 1] += abs(k.sum()) + 1
        ref = quiet(ap_convolve, x, k, normalize_kernel=normalize, boundary="extend")
        got = quiet(tca.convolve, x, k, normalize_kernel=normalize, boundary="extend")
        assert np.array_equal(np.isnan(got), np.isnan(ref))
        f = np.isfinite(ref)
        scale = np.nanmax(np.abs(x)) * np.abs(k).sum()
        assert np.max(np.abs(got[f] - ref[f]) / np.maximum(np.abs(ref[f]), 1e-9 * scale)) <= \
            ASTROPY_MAX_REL["fp64"]


def test_convolve_masks():
    k = kernels()["box5"]
    x = image(seed=11)
    rng = np.random.default_rng(2)
    mask = rng.random(x.shape) < 0.05
    for kw in (dict(mask=mask), dict(mask=mask.astype(np.int32)),
               dict(mask=mask, preserve_nan=True), dict(mask=mask, nan_treatment="fill")):
        assert_astropy_close(quiet(tca.convolve, x, k, **kw), quiet(ap_convolve, x, k, **kw),
                             ASTROPY_MAX_REL["fp64"], str(kw.keys()))
    mx = np.ma.masked_array(np.nan_to_num(x), mask=mask)
    assert_astropy_close(quiet(tca.convolve, mx, k), quiet(ap_convolve, mx, k),
                         ASTROPY_MAX_REL["fp64"], "masked array")
    other = rng.random(x.shape) < 0.02
    assert_astropy_close(quiet(tca.convolve, mx, k, mask=other),
                         quiet(ap_convolve, mx, k, mask=other), ASTROPY_MAX_REL["fp64"],
                         "masked array and mask")


def test_convolve_dtypes():
    k = kernels()["gauss"]
    xi = np.random.default_rng(4).integers(0, 1000, (33, 41))
    got, ref = tca.convolve(xi, k), ap_convolve(xi, k)
    assert got.dtype == ref.dtype == np.float64
    assert_astropy_close(got, ref, ASTROPY_MAX_REL["fp64"], "int")
    assert_astropy_close(tca.convolve(xi.tolist(), k.array.tolist()), ref,
                         ASTROPY_MAX_REL["fp64"], "lists")
    x32 = image(seed=8, dtype=np.float32)
    ref32 = quiet(ap_convolve, x32, k)
    got32 = quiet(tca.convolve, x32, k)
    assert got32.dtype == ref32.dtype == np.float32
    assert_astropy_close(got32, ref32, ASTROPY_MAX_REL["fp32"], "float32 in fp32")
    got64 = quiet(tca.convolve, x32, k, precision="fp64")
    assert got64.dtype == np.float32
    assert_astropy_close(got64, ref32, ASTROPY_MAX_REL["fp64"], "float32 in fp64")
    q = image(seed=9) * u.Jy
    gq, rq = quiet(tca.convolve, q, k), quiet(ap_convolve, q, k)
    assert gq.unit == rq.unit
    assert_astropy_close(gq.value, rq.value, ASTROPY_MAX_REL["fp64"], "Quantity")


def test_convolve_not_2d_goes_to_astropy():
    x1 = np.array([1.0, np.nan, 3.0, 4.0])
    np.testing.assert_array_equal(tca.convolve(x1, [1, 1, 1]), ap_convolve(x1, [1, 1, 1]))
    x3 = np.random.default_rng(0).random((5, 6, 7))
    np.testing.assert_array_equal(tca.convolve(x3, np.ones((3, 3, 3))),
                                  ap_convolve(x3, np.ones((3, 3, 3))))


def test_convolve_errors():
    x = image()
    with pytest.raises(KernelSizeError):
        tca.convolve(x, np.ones((4, 3)))
    with pytest.raises(KernelSizeError):
        tca.convolve(np.ones((4, 9)), np.ones((5, 5)), boundary=None)
    with pytest.raises(ValueError, match="requires the kernel to be normalized"):
        tca.convolve(x, np.array([[1.0, -1.0, 0.0]]))
    with pytest.raises(ValueError, match="can't be normalized"):
        tca.convolve(np.nan_to_num(x), np.array([[1.0, -1.0, 0.0]]))
    ok = tca.convolve(np.nan_to_num(x), np.array([[1.0, -1.0, 0.0]]), normalize_kernel=False)
    np.testing.assert_allclose(ok, ap_convolve(np.nan_to_num(x), np.array([[1.0, -1.0, 0.0]]),
                                               normalize_kernel=False), rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="Invalid boundary"):
        tca.convolve(x, np.ones((3, 3)), boundary="reflect")
    with pytest.raises(ValueError, match="nan_treatment"):
        tca.convolve(x, np.ones((3, 3)), nan_treatment="zero")
    with pytest.raises(ValueError, match="mask must have the array's shape"):
        tca.convolve(x, np.ones((3, 3)), mask=np.zeros((3, 3), bool))
    with pytest.raises(TypeError, match="complex"):
        tca.convolve(x.astype(complex), np.ones((3, 3)))
    with pytest.raises(TypeError, match="complex"):
        tca.convolve(x, np.ones((3, 3), complex))
    with pytest.raises(ValueError, match="differing number of dimensions"):
        tca.convolve(x, np.ones(3))
    with pytest.raises(ValueError, match="empty"):
        tca.convolve(np.ones((0, 4)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="precision"):
        tca.convolve(x, np.ones((3, 3)), precision="fp16")
    with pytest.raises(ValueError, match="unknown method"):
        tca.convolve(x, np.ones((3, 3)), method="nope")
    with pytest.raises(ValueError, match="masked values"):
        tca.convolve(x, np.ma.masked_array(np.ones((3, 3)), mask=np.eye(3, dtype=bool)))


def test_convolve_nonfinite_kernel_goes_to_astropy():
    x = image(seed=12)
    k = np.ones((3, 3))
    k[1, 1] = np.nan
    assert_astropy_close(quiet(tca.convolve, x, k, normalize_kernel=False),
                         quiet(ap_convolve, x, k, normalize_kernel=False), 0)


@pytest.mark.parametrize("method", [m.name for m in tc.methods()
                                    if m.entry == "correlate2d" and m.device == "cpu"
                                    and "fp64" in m.precisions])
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_convolve_every_cpu_method(method, precision):
    k = kernels()["gauss"]
    x = image((80, 90), seed=13)
    x[30:50, 30:60] = np.nan
    ref = quiet(ap_convolve, x, k)
    got = quiet(tca.convolve, x.astype(np.float32 if precision == "fp32" else np.float64), k,
                method=method, precision=precision)
    assert_astropy_close(got, ref, ASTROPY_MAX_REL[precision], method)


def test_convolve_usc_sipi(usc_images):
    """Real images with 1 % NaN pixels and a NaN block, Gaussian kernel, fp64 and fp32."""
    rng = np.random.default_rng(0)
    k = Gaussian2DKernel(2.0)
    for name, img in usc_images[:3]:
        x = img[:256, :256].copy()
        x[rng.random(x.shape) < 0.01] = np.nan
        x[100:140, 60:90] = np.nan
        ref = quiet(ap_convolve, x, k, boundary="extend")
        assert_astropy_close(quiet(tca.convolve, x, k, boundary="extend"), ref,
                             ASTROPY_MAX_REL["fp64"], name)
        assert_astropy_close(quiet(tca.convolve, x.astype(np.float32), k, boundary="extend"),
                             ref.astype(np.float32), ASTROPY_MAX_REL["fp32"], name)


# ---- convolve_fft ----------------------------------------------------------------------------

_DIRECT_KW = {"boundary", "fill_value", "nan_treatment", "normalize_kernel", "mask",
              "preserve_nan"}


def fft_reference(x, k, **kw):
    """astropy's convolve_fft, except where the valid weight under the kernel is tiny: there
    astropy's FFT weight sum (accurate to ~1e-16 of the kernel sum) leaves it with a relative
    error far above 1e-12, and the reference is astropy's exact direct form (`convolve`, the
    same sums for odd kernels and fill/wrap boundaries)."""
    ref = quiet(ap_convolve_fft, x, k, **kw)
    karr = np.asarray(getattr(k, "array", k), dtype=np.float64)
    if (set(kw) - _DIRECT_KW or any(n % 2 == 0 for n in karr.shape) or np.ndim(x) != 2
            or kw.get("boundary", "fill") not in ("fill", "wrap") or karr.sum() <= 0):
        return ref
    xa = np.asarray(x, dtype=np.float64)
    valid = np.isfinite(xa)
    if kw.get("mask") is not None:
        valid &= ~np.asarray(kw["mask"], dtype=bool)
    from scipy import ndimage
    w = ndimage.convolve(valid.astype(np.float64), karr,
                         mode="wrap" if kw.get("boundary") == "wrap" else "constant",
                         cval=1.0)  # fill: the padding counts as valid data
    tiny = (w > 0) & (w < 1e-2 * karr.sum())  # no valid pixel at all: convolve_fft's own rule
    if tiny.any():
        direct = quiet(ap_convolve, x, k, **kw)
        ref = np.where(tiny, direct, ref)
    return ref


@pytest.mark.parametrize("method", ["direct", "fft_cpu"])
def test_convolve_fft_nan_block(method):
    """A NaN block larger than the kernel (the GPU test's case, on the CPU methods): beside it
    the valid weight is tiny and the reference is astropy's exact direct form."""
    k = Gaussian2DKernel(1.5)
    x = image((96, 101), seed=31)
    x[40:60, 30:70] = np.nan
    for boundary in FFT_BOUNDARIES:
        got = quiet(tca.convolve_fft, x, k, boundary=boundary, method=method)
        assert_astropy_close(got, fft_reference(x, k, boundary=boundary),
                             ASTROPY_MAX_REL["fp64"], f"{method} {boundary}")


@pytest.mark.parametrize("boundary", FFT_BOUNDARIES)
@pytest.mark.parametrize("kname", ["gauss", "box5", "tophat", "rand7x5", "even6x4"])
def test_convolve_fft(boundary, kname):
    k = (kernels()[kname] if kname != "even6x4"
         else 0.05 + np.random.default_rng(3).random((6, 4)))
    x = image(seed=21)
    ref = fft_reference(x, k, boundary=boundary)
    got = quiet(tca.convolve_fft, x, k, boundary=boundary)
    assert got.dtype == np.float64
    assert_astropy_close(got, ref, ASTROPY_MAX_REL["fp64"], f"{kname} {boundary}")


@pytest.mark.parametrize("boundary", FFT_BOUNDARIES + (None,))
@pytest.mark.parametrize("opts", [
    dict(nan_treatment="fill", fill_value=0.5),
    dict(normalize_kernel=False),
    dict(normalize_kernel=np.max),
    dict(normalize_kernel=False, nan_treatment="fill"),
    dict(preserve_nan=True),
    dict(min_wt=0.6),
    dict(fill_value=np.nan),
    dict(fill_value=3.0),
])
def test_convolve_fft_options(boundary, opts):
    k = 0.05 + np.random.default_rng(5).random((5, 7))
    x = image((45, 38), seed=22)
    x[3, 4] = np.inf
    ref = fft_reference(x, k, boundary=boundary, **opts)
    got = quiet(tca.convolve_fft, x, k, boundary=boundary, **opts)
    assert_astropy_close(got, ref, ASTROPY_MAX_REL["fp64"], f"{boundary} {opts}")


def test_convolve_fft_nan_block():
    """Beside a NaN block larger than the kernel: convolve's exact value where weight remains,
    0 where none (astropy's convolve_fft rule; min_wt > 0 gives NaN)."""
    k = Gaussian2DKernel(1.0)
    x = image((60, 64), seed=23, nan_frac=0.0, runs=False)
    x[15:45, 20:50] = np.nan
    exact = quiet(ap_convolve, x, k)
    got = quiet(tca.convolve_fft, x, k)
    ref = quiet(ap_convolve_fft, x, k)
    none = np.isnan(exact)
    assert none.any()
    assert np.all(got[none] == 0) and np.all(ref[none] == 0)
    assert_astropy_close(got[~none], exact[~none], ASTROPY_MAX_REL["fp64"], "exact")
    # where astropy's FFT weight is accurate, it agrees too
    w = quiet(ap_convolve, np.where(np.isnan(x), 0.0, 1.0), k, normalize_kernel=True)
    good = w > 1e-3
    assert_astropy_close(got[good], ref[good], 1e-10, "astropy fft")
    got_min = quiet(tca.convolve_fft, x, k, min_wt=1e-3)
    ref_min = quiet(ap_convolve_fft, x, k, min_wt=1e-3)
    assert np.array_equal(np.isnan(got_min), np.isnan(ref_min))


def test_convolve_fft_delegated_and_errors():
    x = image(seed=24)
    k = Gaussian2DKernel(1.0)
    np.testing.assert_array_equal(tca.convolve_fft(x, k, crop=False),
                                  ap_convolve_fft(x, k, crop=False))
    np.testing.assert_array_equal(tca.convolve_fft(x, k, return_fft=True),
                                  ap_convolve_fft(x, k, return_fft=True))
    with pytest.raises(NotImplementedError):
        tca.convolve_fft(x, k, boundary="extend")
    with pytest.raises(ValueError, match="Invalid boundary"):
        tca.convolve_fft(x, k, boundary="mirror")
    with pytest.raises(TypeError, match="two kernels"):
        tca.convolve_fft(k, k)
    with pytest.raises(ValueError, match="can't be normalized"):
        tca.convolve_fft(x, np.array([[1.0, -1.0, 0.0]]))
    with pytest.raises(ValueError, match="unnormalizable"):
        tca.convolve_fft(x, np.array([[1.0, -1.0, 0.0]]), normalize_kernel=False)
    with pytest.raises(ValueError, match="Encountered NaNs"):
        tca.convolve_fft(x, k, nan_treatment="fill", fill_value=np.nan)
    with pytest.raises(ValueError, match="mask must have the array's shape"):
        tca.convolve_fft(x, k, mask=np.zeros((2, 2)))
    with pytest.raises(TypeError, match="complex"):
        tca.convolve_fft(x + 1j, k)
    with pytest.warns(AstropyUserWarning, match="boundary=None"):
        tca.convolve_fft(np.nan_to_num(x), k, boundary=None)


@pytest.mark.parametrize("method", [m.name for m in tc.methods()
                                    if m.entry == "correlate2d" and m.device == "cpu"
                                    and "fp64" in m.precisions])
def test_convolve_fft_every_cpu_method(method):
    k = Gaussian2DKernel(2.0)
    x = image((70, 75), seed=25)
    assert_astropy_close(quiet(tca.convolve_fft, x, k, method=method),
                         fft_reference(x, k), ASTROPY_MAX_REL["fp64"], method)
    assert_astropy_close(quiet(tca.convolve_fft, x.astype(np.float32), k, method=method),
                         fft_reference(x, k), ASTROPY_MAX_REL["fp32"], method + " fp32")


# ---- GPU -------------------------------------------------------------------------------------

def gpu_params():
    out = []
    for m in tc.methods():
        if m.entry != "correlate2d" or m.device != "cuda":
            continue
        for p in ("fp64", "fp32"):
            if p in m.precisions:
                marks = [pytest.mark.gpu]
                if not m.available:
                    marks.append(pytest.mark.skip(reason=f"{m.name}: {m.reason}"))
                out.append(pytest.param(m.name, p, marks=marks, id=f"{m.name}-{p}"))
    return out


@pytest.mark.parametrize("method,precision", gpu_params())
def test_gpu_methods(method, precision):
    dt = np.float64 if precision == "fp64" else np.float32
    k = Gaussian2DKernel(1.5)
    x = image((96, 101), seed=31)
    x[40:60, 30:70] = np.nan
    for i, boundary in enumerate(BOUNDARIES):
        lib = ("cupy", "torch")[i % 2]
        ref = quiet(ap_convolve, x, k, boundary=boundary)
        got = quiet(tca.convolve, on_device(x.astype(dt), lib), k, boundary=boundary,
                    method=method, precision=precision)
        assert_astropy_close(to_host(got), ref, ASTROPY_MAX_REL[precision],
                             f"{method} {boundary} {lib}")
    for boundary in FFT_BOUNDARIES:
        ref = fft_reference(x, k, boundary=boundary)
        got = quiet(tca.convolve_fft, on_device(x.astype(dt), "cupy"), k, boundary=boundary,
                    method=method, precision=precision)
        assert_astropy_close(to_host(got), ref, ASTROPY_MAX_REL[precision],
                             f"fft {method} {boundary}")


@pytest.mark.gpu
@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_gpu_auto_mask_preserve(lib):
    k = Box2DKernel(7)
    x = image((128, 140), seed=32)
    mask = np.random.default_rng(1).random(x.shape) < 0.02
    ref = quiet(ap_convolve, x, k, mask=mask, preserve_nan=True, boundary="wrap")
    got = quiet(tca.convolve, on_device(x, lib), k, mask=on_device(mask, lib),
                preserve_nan=True, boundary="wrap")
    assert_astropy_close(to_host(got), ref, ASTROPY_MAX_REL["fp64"], lib)
    with pytest.raises(ValueError, match="same device"):
        tca.convolve(on_device(x, lib), k, mask=mask)


# ---- seeded random configurations ------------------------------------------------------------

def random_case(rng, fft: bool):
    """A random image (NaN fractions 0 to 90 %, sometimes an inf, a NaN block, a mask or a
    masked array), kernel (odd for convolve, any size for convolve_fft) and arguments."""
    h, w = (int(v) for v in rng.integers(2, 30, 2))
    kh, kw = (int(v) for v in (rng.integers(1, 12, 2) if fft else rng.integers(0, 7, 2) * 2 + 1))
    x = 0.1 + rng.random((h, w))
    x[rng.random((h, w)) < rng.choice([0, 0.05, 0.3, 0.9])] = np.nan
    if rng.random() < 0.15:
        x[rng.integers(0, h), rng.integers(0, w)] = rng.choice([np.inf, -np.inf])
    kw_ = {"boundary": rng.choice(list(FFT_BOUNDARIES) + [None] if fft else list(BOUNDARIES))}
    if not fft and kw_["boundary"] is None and not (h > 2 * (kh // 2) and w > 2 * (kw // 2)):
        kw_["boundary"] = "extend"
    for key, p, vals in (("fill_value", 0.3, [0.0, 0.7, np.nan, -1.0]),
                         ("nan_treatment", 0.3, ["fill"]), ("normalize_kernel", 0.3, [False]),
                         ("preserve_nan", 0.3, [True]), ("min_wt", 0.2 if fft else 0, [0.2, 0.9])):
        if rng.random() < p:
            kw_[key] = vals[rng.integers(len(vals))]
    if rng.random() < 0.2:
        kw_["mask"] = rng.random((h, w)) < 0.2
    if rng.random() < 0.15:
        x = np.ma.masked_array(np.where(np.isfinite(x), x, 0.5), mask=rng.random((h, w)) < 0.1)
    return x, 0.01 + rng.random((kh, kw)), kw_


@pytest.mark.parametrize("fft", [False, True], ids=["convolve", "convolve_fft"])
def test_random_configurations(fft):
    """Same exceptions (class) and results as astropy on 150 seeded random configurations."""
    rng = np.random.default_rng(99 + fft)
    ours, theirs = (tca.convolve_fft, ap_convolve_fft) if fft else (tca.convolve, ap_convolve)
    for i in range(150):
        x, k, kw = random_case(rng, fft)
        try:
            ref = quiet(theirs, x, k, **kw)
        except Exception as e:  # noqa: BLE001 - astropy raises a bare Exception in one case
            with pytest.raises(type(e) if type(e) is not Exception else ValueError):
                quiet(ours, x, k, **kw)
            continue
        got = quiet(ours, x, k, **kw)
        # astropy's FFT weight sums are exact only to ~1e-16 of the kernel sum
        assert_astropy_close(got, ref, 1e-9 if fft else ASTROPY_MAX_REL["fp64"],
                             f"case {i}: {x.shape} {k.shape} {kw.keys()}")
