"""scipy.signal drop-in behaviour beyond real floats: complex data on every method that takes
fp32/fp64, scipy's output dtypes (integers exact and wrapped as scipy wraps them), fillvalue rules,
and shapes no memory holds."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal as ss
from bounds import rel_l2_bound
from conftest import float_method_params

import tensorconv as tc
from tensorconv.datasets import load_usc_sipi

COMPLEX_PARAMS = [p for p in float_method_params() if p.values[1] in ("fp32", "fp64")]
RNG = np.random.default_rng(21)


def _c(shape, dtype):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _check(got, want, method, precision):
    assert got.dtype == want.dtype
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert err <= rel_l2_bound(method, precision), (err, method, precision)


@pytest.mark.parametrize("method,precision", COMPLEX_PARAMS)
def test_complex_random(method, precision):
    ct = np.complex64 if precision == "fp32" else np.complex128
    rt = np.float32 if precision == "fp32" else np.float64
    cases = [(_c((23, 17), ct), _c((4, 7), ct)),                      # both complex
             (_c((23, 17), ct), RNG.standard_normal((5, 3)).astype(rt)),   # complex image
             (RNG.standard_normal((16, 21)).astype(rt), _c((3, 6), ct)),   # complex kernel
             (_c((1, 19), ct), _c((1, 5), ct)), (_c((9, 1), ct), _c((4, 1), ct)),
             (_c((6, 8), ct), _c((6, 8), ct))]                          # kernel as large
    for a, k in cases:
        for f, g in ((tc.correlate2d, ss.correlate2d), (tc.convolve2d, ss.convolve2d)):
            for mode, boundary, fill in (("valid", "fill", 0), ("full", "fill", 1.5 - 2j),
                                         ("same", "wrap", 0), ("same", "symm", 0)):
                got = f(a, k, mode, boundary, fill, method=method, precision=precision)
                _check(got, g(a, k, mode, boundary, fill), method, precision)
    # the valid-mode swap (kernel larger than the image) conjugates the other input, as scipy
    a, k = _c((3, 4), ct), _c((9, 11), ct)
    _check(tc.correlate2d(a, k, "valid", method=method, precision=precision),
           ss.correlate2d(a, k, "valid"), method, precision)


@pytest.mark.parametrize("method,precision", COMPLEX_PARAMS)
def test_complex_usc_sipi(method, precision, usc_images):
    name, img = usc_images[0]
    z = img[:96, :80] + 1j * img[:80, :96].T
    k = _c((7, 5), np.complex128)
    if precision == "fp32":
        z, k = z.astype(np.complex64), k.astype(np.complex64)
    _check(tc.correlate2d(z, k, "valid", method=method, precision=precision),
           ss.correlate2d(z, k, "valid"), method, precision)


def test_complex_plan_and_methods_table():
    k = _c((3, 3), np.complex128)
    p = tc.plan(k, (10, 12), mode="same", boundary="symm")
    a = _c((10, 12), np.complex128)
    np.testing.assert_allclose(p(a), ss.correlate2d(a, k, "same", "symm"), rtol=1e-12)
    np.testing.assert_allclose(p(a.real), ss.correlate2d(a.real, k, "same", "symm"), rtol=1e-12)
    assert "complex" in tc.methods_table()


@pytest.mark.parametrize("dt1,dt2", [("int8", "int8"), ("uint8", "uint8"), ("int16", "uint8"),
                                     ("int32", "int64"), ("uint64", "uint8"), ("bool", "int32"),
                                     ("int64", "float32"), ("float32", "int8"),
                                     ("complex64", "int16")])
def test_scipy_dtypes(dt1, dt2):
    a = (RNG.random((9, 7)) * 120).astype(dt1)
    k = (RNG.random((3, 4)) * 120).astype(dt2)
    for mode in ("full", "valid", "same"):
        for boundary in ("fill", "wrap", "symm"):
            for f, g in ((tc.correlate2d, ss.correlate2d), (tc.convolve2d, ss.convolve2d)):
                got, want = f(a, k, mode, boundary, 2.7), g(a, k, mode, boundary, 2.7)
                assert got.dtype == want.dtype
                if want.dtype.kind in "iub":   # exact, wrapped as scipy's integer arithmetic
                    np.testing.assert_array_equal(got, want)
                else:
                    np.testing.assert_allclose(got, want, rtol=2e-6 if want.dtype.itemsize <= 8
                                               and want.dtype.kind == "c" else 1e-6)


def test_dtype_keyword_and_wrap_around():
    a = np.full((4, 4), 200, np.uint8)
    assert ss.correlate2d(a, a[:2, :2], "valid")[0, 0] == 0          # 160000 mod 256
    np.testing.assert_array_equal(tc.correlate2d(a, a[:2, :2], "valid"),
                                  ss.correlate2d(a, a[:2, :2], "valid"))
    wide = tc.correlate2d(a, a[:2, :2], "valid", dtype=np.float64)
    assert wide.dtype == np.float64 and wide[0, 0] == 160000.0
    b = np.ones((3, 3), bool)
    out = tc.correlate2d(b, b)          # scipy refuses bool x bool; NumPy's rule gives bool
    assert out.dtype == np.bool_ and out.all()


def test_fillvalue_one_element_and_cast():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    k = np.ones((2, 2), np.int64)
    for fv in ([5], np.array([[5]]), 2.5, np.float32(-1.5), True):
        np.testing.assert_array_equal(tc.correlate2d(a, k, fillvalue=fv),
                                      ss.correlate2d(a, k, fillvalue=fv))
    z = a + 1j
    np.testing.assert_allclose(tc.correlate2d(z, k, fillvalue=1 + 1j),
                               ss.correlate2d(z, k, fillvalue=1 + 1j), rtol=1e-13)


def test_shapes_no_memory_holds():
    with pytest.raises(ValueError, match="larger than any memory holds"):
        tc.plan(np.ones((3, 3), np.float16), (2**31, 2**31), mode="valid")
    with pytest.raises(ValueError, match="larger than any memory holds"):
        tc.plan(np.ones((3, 3)), (2**62, 4), mode="valid", method="direct")


def test_fill_values_as_scipy_takes_them():
    """(Found by tests/test_properties.py.) scipy converts the fill value to the output type
    directly and raises ValueError where that fails (a value out of an integer type's range, a
    complex fill with real data, an array needing an unsafe cast), and with 'wrap' / 'symm'
    neither reads nor checks it: tensorconv gives the same verdicts."""
    import warnings

    cases = 0
    for dt in (np.float64, np.float32, np.int32, np.uint8, np.int8, np.uint64, np.int64,
               np.complex64, np.complex128):
        a = np.array([[3]], dt)
        for boundary in ("fill", "wrap", "symm"):
            for f in (2 + 0j, 1 + 1j, np.complex128(2), np.array([2 + 0j]),
                      np.array([[2]], np.int64), np.array(2.0), np.float64(1e300), 1e300,
                      np.array(2.5, np.float32), np.int64(-1), -1, -0.5, 256, 2**63, np.nan,
                      np.inf, True, np.uint8(3), 0, 3):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        ref = ss.correlate2d(a, a, "full", boundary, f)
                    except ValueError:
                        ref = None
                    if ref is None:
                        with pytest.raises(ValueError):
                            tc.correlate2d(a, a, "full", boundary, f)
                    else:
                        out = tc.correlate2d(a, a, "full", boundary, f)
                        assert out.dtype == ref.dtype and np.array_equal(out, ref), (dt, f)
                cases += 1
    assert cases == 9 * 3 * 20
    # scipy ignores the fill entirely with wrap / symm, even one it could not read
    for f in ([], "abc", [1, 2], None):
        np.testing.assert_array_equal(tc.correlate2d(np.ones((2, 2)), np.ones((2, 2)), "full",
                                                     "wrap", f),
                                      ss.correlate2d(np.ones((2, 2)),
                                                     np.ones((2, 2)), "full", "wrap",
                                                     f))
