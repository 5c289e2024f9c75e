"""toeplitz_tc (csrc/cuda/methods/paplinski/toeplitz_tc.cuh) x every precision against scipy: odd shapes
that exercise its geometry (ragged CTA tiles, kernel rows walked in several ring steps, kernels
wider than one column block, 1xN, Nx1, a kernel as large as the image, rows whose stride is not
a multiple of 16 bytes), strided input, and NaN/inf that must reach only their own windows even
though the band's zero taps would spread them. The USC-SIPI MAPE table per kernel size is
tests/test_accuracy.py (registry rows)."""

import numpy as np
import pytest
import scipy.signal
from bounds import mape_bound, rel_l2_bound
from conftest import require_available, runnable_precisions

import tensorconv as tc
from tensorconv.metrics import mape, relative_l2

METHOD = "toeplitz_tc"
PRECISIONS = tc.PRECISIONS

# (image, kernel): what each exercises
SHAPES = [
    ((67, 93), (3, 5)),       # one CTA column block, ragged; 93-wide rows: no 16-byte copies
    ((200, 256), (15, 15)),   # 16-byte staging, several CTAs each way
    ((61, 301), (7, 70)),     # kw = 70: two column blocks of band chunks (tf32/fp32/fp64)
    ((45, 700), (5, 131)),    # very wide kernel: several column blocks in every precision
    ((333, 37), (300, 4)),    # tall kernel: the ring walks kernel rows in many steps
    ((20, 19), (20, 19)),     # kernel as large as the image: 1x1 output
    ((1, 200), (1, 9)),       # one row
    ((150, 1), (17, 1)),      # one column
    ((1, 64), (1, 64)),       # 1xN kernel as large as the image
    ((129, 257), (55, 55)),   # the largest benchmark kernel
    ((90, 530), (25, 9)),     # non-square kernel
    ((70, 150), (7, 7)),      # tf32: area 49, the main geometry's small-kernel tier
    ((70, 150), (5, 10)),     # tf32: area 50, the mid geometry (three CTAs of G = 8 per SM)
    ((90, 150), (15, 17)),    # tf32: area 255, the mid geometry's largest
    ((90, 400), (2, 128)),    # tf32: area 256, the main geometry again
]

pytestmark = pytest.mark.gpu


def _check(precision, image, kernel, signed):
    ref = scipy.signal.correlate2d(image, kernel, "valid")
    out = tc.correlate2d(image, kernel, "valid", method=METHOD, precision=precision)
    assert out.shape == ref.shape
    assert np.isfinite(np.asarray(out, dtype=np.float64)).all()
    if signed:
        err = relative_l2(out, ref)
        assert err <= rel_l2_bound(METHOD, precision), (image.shape, kernel.shape, err)
    else:
        err = mape(out, ref)
        assert err <= mape_bound(METHOD, precision), (image.shape, kernel.shape, err)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_odd_shapes_vs_scipy(precision):
    require_available(METHOD, precision)
    rng = np.random.default_rng(1995)
    for ishape, kshape in SHAPES:
        # MAPE on the paper's data (uniform [0, 1)), relative L2 on signed data
        _check(precision, rng.random(ishape), rng.random(kshape), False)
        _check(precision, rng.standard_normal(ishape), rng.standard_normal(kshape), True)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_strided_and_convolve(precision):
    require_available(METHOD, precision)
    rng = np.random.default_rng(7)
    base = rng.random((300, 420))
    image = base[::2, ::3]  # a view: rows 3 * 420 apart, columns 3 apart
    kernel = rng.random((9, 12))
    out = tc.correlate2d(image, kernel, "valid", method=METHOD, precision=precision)
    assert mape(out, scipy.signal.correlate2d(image, kernel, "valid")) <= mape_bound(
        METHOD, precision)
    out = tc.convolve2d(image, kernel, "same", method=METHOD, precision=precision)
    ref = scipy.signal.convolve2d(image, kernel, "same")
    assert relative_l2(out, ref) <= rel_l2_bound(METHOD, precision)


# NaN / +-inf at corners, edges and inside; a finite value whose tf32 rounding would overflow.
@pytest.mark.parametrize("kshape", [(3, 3), (15, 15), (7, 70), (40, 5), (30, 30)])
@pytest.mark.parametrize("precision", PRECISIONS)
def test_nonfinite_stay_local(precision, kshape):
    require_available(METHOD, precision)
    rng = np.random.default_rng(17)
    image = rng.random((200, 300))
    image[0, 0] = np.nan
    image[199, 299] = np.inf
    image[0, 150] = -np.inf
    image[100, 0] = np.nan
    image[77, 123] = np.inf
    image[150, 250] = np.nan
    if precision in ("tf32", "fp32"):
        image[40, 200] = 2.0 ** 126  # finite sums in fp32 (the kernel is <= 1.1)
    kernel = rng.random(kshape) + 0.1  # positive: inf stays inf, no inf - inf
    expected = scipy.signal.correlate2d(image, kernel, "valid")
    got = np.asarray(tc.correlate2d(image, kernel, "valid", method=METHOD, precision=precision),
                     dtype=np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    assert mape(got[finite], expected[finite]) <= mape_bound(METHOD, precision)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_row_walk_vs_reference(precision):
    """Images big enough that a CTA walks several row blocks down its strip, the next block's
    rows copied into the ring during this one; NaN/inf met mid-walk."""
    require_available(METHOD, precision)
    rng = np.random.default_rng(31)
    image, kernel = rng.random((2048, 2048)), rng.random((9, 7)) + 0.1
    ref = scipy.signal.correlate(image, kernel, "valid", method="fft")
    out = tc.correlate2d(image, kernel, "valid", method=METHOD, precision=precision)
    assert mape(out, ref) <= mape_bound(METHOD, precision)
    image[1000, 1000], image[64, 700], image[1500, 3] = np.nan, np.inf, -np.inf
    expected = scipy.signal.correlate2d(image[900:1700], kernel, "valid")
    got = np.asarray(tc.correlate2d(image, kernel, "valid", method=METHOD,
                                    precision=precision), dtype=np.float64)[900:1692]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))


def test_gpu_nan_payload_stays_nan():
    """CUDA's canonical float NaN (0x7fffffff) would round to -0 by bit arithmetic (tf32)."""
    require_available(METHOD)
    image = np.random.default_rng(3).random((64, 64)).astype(np.float32)
    image.view(np.uint32)[30, 30] = 0x7FFFFFFF
    kernel = np.ones((5, 5))
    for precision in {"tf32", "fp32"} & set(runnable_precisions(METHOD)):
        got = tc.correlate2d(image, kernel, "valid", method=METHOD, precision=precision)
        assert np.isnan(got[26:31, 26:31]).all() and np.isnan(got).sum() == 25


def test_repeats_bit_identical():
    require_available(METHOD)
    rng = np.random.default_rng(5)
    image, kernel = rng.random((300, 517)), rng.random((25, 70))
    for precision in runnable_precisions(METHOD):
        p = tc.plan(kernel, image.shape, mode="valid", method=METHOD, precision=precision)
        x = image.astype(p.storage)
        first = p(x)
        assert np.array_equal(p(x), first)


def test_workspace_is_kernel_sized():
    require_available(METHOD)
    kernel = np.random.default_rng(0).random((15, 15))
    for precision in runnable_precisions(METHOD):
        small = tc.plan(kernel, (256, 256), mode="valid", method=METHOD, precision=precision)
        large = tc.plan(kernel, (4096, 4096), mode="valid", method=METHOD, precision=precision)
        assert small.workspace_bytes == large.workspace_bytes < 64 * 1024, precision
