"""scipy.signal compatibility of correlate2d / convolve2d: modes, boundaries, fill values, the
valid-mode swap rule, dtypes, memory layouts, NaN/inf propagation, precision defaults."""

import numpy as np
import pytest
import scipy.signal

import tensorconv as tc

FNS = ("correlate2d", "convolve2d")
MODES = ("full", "same", "valid")
BOUNDARIES = ("fill", "wrap", "symm")


def ref(fn, a, b, *args, **kw):
    return getattr(scipy.signal, fn)(np.asarray(a, np.float64), np.asarray(b, np.float64),
                                     *args, **kw)


@pytest.mark.parametrize("fn", FNS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("kshape", [(3, 3), (2, 4), (5, 6), (1, 1), (8, 11)])
def test_matches_scipy_float64(fn, mode, boundary, kshape):
    rng = np.random.default_rng(hash((fn, mode, boundary, kshape)) % 2**32)
    a = rng.standard_normal((13, 17))
    k = rng.standard_normal(kshape)
    expected = ref(fn, a, k, mode, boundary, -0.75)
    got = getattr(tc, fn)(a, k, mode, boundary, -0.75)
    assert got.dtype == np.float64 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", FNS)
@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_kernel_larger_than_image(fn, boundary):
    rng = np.random.default_rng(5)
    a, k = rng.standard_normal((3, 4)), rng.standard_normal((7, 9))
    for mode in ("full", "same"):
        np.testing.assert_allclose(getattr(tc, fn)(a, k, mode, boundary),
                                   ref(fn, a, k, mode, boundary), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", FNS)
def test_valid_swap_rule(fn):
    rng = np.random.default_rng(9)
    small, big = rng.standard_normal((4, 5)), rng.standard_normal((9, 12))
    np.testing.assert_allclose(getattr(tc, fn)(small, big, "valid"),
                               ref(fn, small, big, "valid"), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(getattr(tc, fn)(big, small, "valid"),
                               ref(fn, big, small, "valid"), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="at least as large"):
        getattr(tc, fn)(rng.standard_normal((4, 12)), rng.standard_normal((9, 5)), "valid")


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint16,
                                   np.bool_])
def test_integer_and_bool_inputs_are_promoted(dtype):
    rng = np.random.default_rng(2)
    if dtype == np.bool_:
        a, k = rng.random((12, 14)) > 0.5, rng.random((3, 3)) > 0.3
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, (12, 14), endpoint=True).astype(dtype)
        k = rng.integers(info.min, info.max, (3, 3), endpoint=True).astype(dtype)
    wide = tc.correlate2d(a, k, dtype=np.float64)  # never wrapped around
    np.testing.assert_allclose(wide, ref("correlate2d", a, k), rtol=1e-12)
    got = tc.correlate2d(a, k)  # scipy's dtype, wrapped as scipy wraps (bool: NumPy's rule)
    if dtype == np.bool_:
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, wide != 0)
    else:
        want = scipy.signal.correlate2d(a, k)
        assert got.dtype == want.dtype == dtype
        np.testing.assert_array_equal(got, want)


def test_precision_defaults_and_output_dtypes():
    a64 = np.random.default_rng(0).random((10, 10))
    k64 = np.ones((3, 3))
    assert tc.correlate2d(a64, k64).dtype == np.float64
    assert tc.correlate2d(a64.astype(np.float32), k64.astype(np.float32)).dtype == np.float32
    assert tc.correlate2d(a64.astype(np.float32), k64).dtype == np.float64  # promotion
    h = tc.correlate2d(a64.astype(np.float16), k64.astype(np.float16))
    assert h.dtype == np.float16
    np.testing.assert_allclose(h, ref("correlate2d", a64.astype(np.float16), k64), rtol=2e-3)
    assert tc.default_precision("float64") == "fp64"
    assert tc.default_precision("float32") == "fp32"
    assert tc.default_precision("float16") == "fp16fp32"
    assert tc.default_precision("int16", "uint8") == "fp64"
    assert tc.correlate2d(a64, k64, precision="fp32").dtype == np.float32


def test_float32_accuracy():
    rng = np.random.default_rng(4)
    a, k = rng.random((50, 60)).astype(np.float32), rng.random((9, 9)).astype(np.float32)
    np.testing.assert_allclose(tc.correlate2d(a, k), ref("correlate2d", a, k), rtol=2e-6)


@pytest.mark.parametrize("layout", ["fortran", "strided", "reversed", "transposed"])
def test_memory_layouts(layout):
    rng = np.random.default_rng(8)
    base = rng.standard_normal((40, 60))
    a = {"fortran": np.asfortranarray(base), "strided": base[::2, ::3],
         "reversed": base[::-1, ::-1], "transposed": base.T}[layout]
    k = np.asfortranarray(rng.standard_normal((4, 3)))[::-1]
    for mode in MODES:
        np.testing.assert_allclose(tc.correlate2d(a, k, mode), ref("correlate2d", a, k, mode),
                                   rtol=1e-12, atol=1e-12)


def test_array_likes():
    got = tc.correlate2d([[1, 2, 3], [4, 5, 6]], [[1, 0], [0, -1]])
    np.testing.assert_array_equal(got, ref("correlate2d", [[1, 2, 3], [4, 5, 6]],
                                           [[1, 0], [0, -1]]))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_nan_and_inf_reach_only_their_windows(mode, precision):
    rng = np.random.default_rng(12)
    a = rng.random((30, 40))
    a[5, 7] = np.nan
    a[20, 30] = np.inf
    k = rng.random((4, 5)) + 0.1  # positive: inf stays inf, no inf - inf
    expected = ref("correlate2d", a, k, mode)
    got = tc.correlate2d(a, k, mode, precision=precision).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-5 if precision == "fp32"
                               else 1e-12)


def test_fillvalue_types():
    a = np.arange(12.0).reshape(3, 4)
    k = np.ones((2, 2))
    for fv in (1, 2.5, np.float32(-1), np.int64(3), True, np.nan):
        np.testing.assert_array_equal(tc.correlate2d(a, k, fillvalue=fv),
                                      ref("correlate2d", a, k, fillvalue=fv))


def test_methods_rows():
    rows = tc.methods()
    names = [m.name for m in rows]
    assert "direct" in names and len(set(names)) == len(names)
    for m in rows:
        assert m.device in ("cpu", "cuda")
        assert set(m.precisions) <= set(tc.PRECISIONS)
        assert m.available == (m.reason == "")
    direct = rows[names.index("direct")]
    assert direct.available and {"fp32", "fp64"} <= set(direct.precisions)
    assert "direct" in tc.methods_table()


def test_cuda_probe_never_raises():
    assert isinstance(tc.cuda_available(), bool)
    assert isinstance(tc.WITH_CUDA, bool)
    if not tc.WITH_CUDA:
        assert not tc.cuda_available()


def test_plan_repr_and_shapes():
    p = tc.plan(np.ones((3, 5)), (20, 30), mode="full", method="direct")
    assert p.out_shape == (22, 34) and p.kernel_shape == (3, 5)
    assert "direct" in repr(p)
    out = p(np.ones((20, 30)))
    assert out.shape == (22, 34) and out[5, 5] == 15.0
