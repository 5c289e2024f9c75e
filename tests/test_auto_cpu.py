"""method='auto' on the CPU: the accuracy rule (tensorconv._fft_guard) that keeps an 'auto' result
within scipy's per-output accuracy whatever this machine's calibration says, under the shipped
defaults (no calibration file) and under a calibration that makes every transform look free."""

import numpy as np
import pytest
import scipy.signal as ss

from conftest import use_cpu_calibration

import tensorconv as tc
from tensorconv import _cpu_constants, _cpu_cost, _fft_guard

FFT_FAVOURING = {p: {"per_output": 3.3e-10, "per_mac": 1e-8, "fft_fixed": 0.0,
                     "per_unit": [1e-13] * 4} for p in ("fp32", "fp64")}


@pytest.fixture
def fft_calibration(monkeypatch, tmp_path):
    use_cpu_calibration(monkeypatch, tmp_path, FFT_FAVOURING)
    yield
    tc.clear_plan_cache()


@pytest.fixture
def shipped(monkeypatch, tmp_path):
    use_cpu_calibration(monkeypatch, tmp_path, None)
    assert _cpu_constants.constants() == _cpu_constants.DEFAULTS
    yield
    tc.clear_plan_cache()


def firwin_case():
    taps = ss.firwin_2d((31, 31), ("hamming", "hamming"), fc=0.4)
    impulse = np.zeros((63, 63))
    impulse[31, 31] = 1
    return impulse, taps


@pytest.mark.parametrize("calibration", ["shipped", "fft_calibration"])
def test_firwin_impulse_response_is_the_direct_sum(request, calibration):
    """scipy's Testfirwin_2d::test_impulse_response: taps down to 1e-36; a transform's ~1e-17
    absolute error would be relative errors of 1e19 there."""
    request.getfixturevalue(calibration)
    impulse, taps = firwin_case()
    out = tc.convolve2d(impulse, taps, mode="same")
    np.testing.assert_array_equal(out, tc.convolve2d(impulse, taps, "same", method="direct"))
    np.testing.assert_allclose(out[16:47, 16:47], taps, rtol=1e-12, atol=0)


def test_fft_calibration_makes_auto_plan_fft(fft_calibration):
    """The calibration does favour transforms: the plan is fft_cpu, so the tests below exercise
    the per-call rule and not the cost model."""
    impulse, taps = firwin_case()
    assert tc.plan(taps, impulse.shape, mode="same", convolve=True).method == "fft_cpu"
    assert tc.explain((63, 63), taps, "fp64", mode="same").method == "fft_cpu"


def test_dense_images_keep_the_transform(fft_calibration):
    """Where every output's scale is within the rule's range, auto keeps fft_cpu's result (its
    bits differ from direct's) and it is within fft_cpu's bound."""
    rng = np.random.default_rng(0)
    x, k = 0.5 + rng.random((200, 210)), rng.random((21, 17))
    for data in ((x, k), (x - 1.0, k - 0.5)):  # one-signed (L = y) and signed (L transformed)
        out = tc.correlate2d(*data, "valid")
        fft = tc.correlate2d(*data, "valid", method="fft_cpu")
        np.testing.assert_array_equal(out, fft)
        ref = ss.correlate2d(*data, "valid")
        assert np.abs(out - ref).max() <= 1e-13 * np.abs(ref).max()
    assert not np.array_equal(out, tc.correlate2d(*data, "valid", method="direct"))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_zero_regions_run_direct(fft_calibration, dtype):
    """An image with a block of zeros: the direct sum gives exact zeros there, a transform
    ~eps max|y|; auto gives direct's bits."""
    rng = np.random.default_rng(1)
    x = rng.random((120, 130)).astype(dtype)
    x[30:70, 40:90] = 0
    k = rng.random((9, 9)).astype(dtype)
    out = tc.correlate2d(x, k, "valid")
    np.testing.assert_array_equal(out, tc.correlate2d(x, k, "valid", method="direct"))
    assert (out[30:62, 40:82] == 0).all()


def test_integers_are_exact(fft_calibration):
    """Integer images and kernels (integer dtypes or integer values in floats): the direct sum
    is exact, as scipy's (scipy's TestConvolve2d::test_boundary_extension_same)."""
    a = np.arange(1, 31, dtype=np.float64).reshape(10, 3)
    b = np.arange(1, 101, dtype=np.float64).reshape(10, 10)
    for x, k in ((a, b), (a.astype(np.int32), b.astype(np.int64)), (a + 0j, b - 2j)):
        for mode in ("full", "same", "valid"):
            if mode == "valid":
                x, k = k, x
            np.testing.assert_array_equal(tc.convolve2d(x, k, mode, boundary="wrap"),
                                          ss.convolve2d(x, k, mode, boundary="wrap"))


def test_full_mode_corners_fp32(fft_calibration):
    """fp32 'full': the corner outputs are one pixel times one tap, ~1000 times below the
    largest output of a 31 x 31 kernel; the transform would miss them by ~1e-2 relative."""
    rng = np.random.default_rng(2)
    x = rng.random((150, 160)).astype(np.float32)
    k = rng.random((31, 31)).astype(np.float32)
    out = tc.correlate2d(x, k)
    ref = ss.correlate2d(x.astype(np.float64), k.astype(np.float64))
    rel = np.abs(out - ref) / np.abs(ref)
    assert rel.max() <= 4 * np.sqrt(np.finfo(np.float32).eps), rel.max()


def test_stack_runs_direct_only_where_needed(fft_calibration):
    rng = np.random.default_rng(3)
    k = rng.random((15, 15))
    stack = 1.0 + rng.random((3, 90, 100))
    stack[1] = 0
    stack[1, 40, 50] = 1  # an impulse: outputs span k's range, and exact zeros
    out = tc.correlate2d(stack, k, "valid", batch=True)
    np.testing.assert_array_equal(out[1], tc.correlate2d(stack[1], k, "valid", method="direct"))
    for i in (0, 2):
        np.testing.assert_array_equal(out[i], tc.correlate2d(stack[i], k, "valid",
                                                             method="fft_cpu"))


def test_complex_data(fft_calibration):
    """Complex data on fft_cpu's complex transforms under the same rule (scipy's
    TestCorrelate2d / TestConvolve2d::test_valid_mode2: exact complex integers)."""
    e = np.array([[1 + 1j, 2 - 3j], [3 + 1j, 4 + 0j]])
    f = np.array([[2 - 1j, 3 + 2j, 4 + 0j], [4 - 0j, 5 + 1j, 6 - 3j]])
    np.testing.assert_array_equal(tc.convolve2d(e, f, "valid"), [[27 - 1j, 46 + 2j]])
    rng = np.random.default_rng(4)
    x = rng.random((80, 90)) + 1j * rng.random((80, 90))
    x[10:50, 10:50] = 0
    k = rng.random((7, 7)) + 1j * rng.random((7, 7))
    np.testing.assert_array_equal(tc.correlate2d(x, k, "valid"),
                                  tc.correlate2d(x, k, "valid", method="direct"))
    x = 1 + rng.random((80, 90)) + 1j * (1 + rng.random((80, 90)))
    ref = ss.correlate2d(x, k, "valid")
    out = tc.correlate2d(x, k, "valid")
    assert np.abs(out - ref).max() <= 1e-13 * np.abs(ref).max()


def test_nan_still_local(fft_calibration):
    rng = np.random.default_rng(5)
    x = 1 + rng.random((60, 70))
    x[20, 30] = np.nan
    k = rng.random((5, 5))
    out, ref = tc.correlate2d(x, k, "valid"), ss.correlate2d(x, k, "valid")
    np.testing.assert_array_equal(out, tc.correlate2d(x, k, "valid", method="direct"))
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    assert np.isnan(out).sum() == 25
    np.testing.assert_allclose(out, ref, rtol=1e-14)


def test_margin_keeps_borderline_problems_direct(monkeypatch):
    """The cost model alone would pick fft_cpu (1.5x faster predicted): it must win by
    MIN_GAIN (x2 more for a kernel of both signs, whose check costs one more transform)."""
    monkeypatch.setattr(_cpu_cost, "predict",
                        lambda p, i, k: {"direct": 1.5e-3, "fft_cpu": 1e-3})
    from tensorconv import _api
    k = np.ones((9, 9))
    assert _api._cpu_preference("fp64", k, (100, 100))[0] == "direct"
    monkeypatch.setattr(_cpu_cost, "predict",
                        lambda p, i, k: {"direct": 2.5e-3, "fft_cpu": 1e-3})
    assert _api._cpu_preference("fp64", k, (100, 100))[0] == "fft_cpu"
    k[0, 0] = -1.0
    assert _api._cpu_preference("fp64", k, (100, 100))[0] == "direct"
    assert _fft_guard.MAX_RANGE["fp64"] == pytest.approx(1 / (10 * np.finfo(float).eps ** 0.5))
