"""tensorconv.filters.gaussian and tensorconv.astropy on the one plan cache
(tensorconv._plan_cache): their set-ups are kept in its per-device pools under its budget,
keyed by content (a kernel changed in place gets a new set-up), CUDA set-ups checked out per
call, out-of-memory retries; results are the same as an uncached call's, bit for bit."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import scipy.ndimage

from conftest import cupy_device, fail_first_call, run_threads

import tensorconv as tc
from tensorconv import _api, _plan_cache, filters

gmod = importlib.import_module("tensorconv.filters.gaussian")  # (filters.gaussian: the function)

astropy = pytest.importorskip("astropy")
from astropy.convolution import convolve as ap_convolve  # noqa: E402
from astropy.convolution import convolve_fft as ap_convolve_fft  # noqa: E402

from tensorconv import astropy as tca  # noqa: E402


@pytest.fixture
def fresh():
    tc.clear_plan_cache()
    tc.set_plan_cache_limit(None)
    yield
    tc.set_plan_cache_limit(None)
    tc.clear_plan_cache()


def _img(seed=0, shape=(37, 29)):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("sigma", [1.0, [1.5, 2.0]])  # hashable and unhashable arguments
@pytest.mark.parametrize("mode", ["reflect", "constant", "wrap"])
def test_gaussian_cached_hit_is_bit_identical(fresh, sigma, mode):
    x = _img(1)
    first = filters.gaussian(x, sigma, mode=mode, cval=0.5)
    info = tc.plan_cache_info()
    assert info["devices"]["cpu"]["plans"] == 1 and info["misses"] >= 1
    again = filters.gaussian(x, sigma, mode=mode, cval=0.5)
    assert tc.plan_cache_info()["hits"] >= 1
    np.testing.assert_array_equal(first, again)
    tc.clear_plan_cache()
    np.testing.assert_array_equal(first, filters.gaussian(x, sigma, mode=mode, cval=0.5))
    np.testing.assert_allclose(first, scipy.ndimage.gaussian_filter(x, sigma, mode=mode,
                                                                     cval=0.5), atol=1e-12)


def test_gaussian_other_image_same_arguments(fresh):
    a, b = _img(2), _img(3)
    filters.gaussian(a, 2.0)
    np.testing.assert_allclose(filters.gaussian(b, 2.0), scipy.ndimage.gaussian_filter(b, 2.0),
                               atol=1e-12)


def test_gaussian_errors_leave_no_entry(fresh):
    with pytest.raises(ValueError, match="per-axis modes"):
        filters.gaussian(_img(4), 1.0, mode=("reflect", "wrap"))
    with pytest.raises(ValueError, match="cannot run here"):
        filters.gaussian(_img(4), 1.0, method="separable_boundary")
    assert tc.plan_cache_info()["plans"] == 0


def test_gaussian_eviction_under_a_tiny_budget(fresh):
    x = _img(5)
    tc.set_plan_cache_limit(0, device="cpu")
    for s in (1.0, 1.5, 2.0):
        np.testing.assert_allclose(filters.gaussian(x, s), scipy.ndimage.gaussian_filter(x, s),
                                   atol=1e-12)
    assert tc.plan_cache_info()["devices"]["cpu"]["plans"] == 0
    tc.set_plan_cache_limit(None)
    for s in np.linspace(0.5, 3.0, 40):
        filters.gaussian(x, float(s))
    cpu = tc.plan_cache_info()["devices"]["cpu"]
    assert cpu["plans"] <= cpu["max_plans"] and cpu["evictions"] > 0


def test_gaussian_oom_retries_once(fresh, monkeypatch):
    x = _img(6)
    filters.gaussian(x, 1.0)  # cached: the retry of the next call builds its set-up again
    calls = fail_first_call(monkeypatch, gmod._Runner, "__call__")
    out = filters.gaussian(x, 1.0)
    assert len(calls) == 2
    np.testing.assert_allclose(out, scipy.ndimage.gaussian_filter(x, 1.0), atol=1e-12)
    assert tc.plan_cache_info()["plans"] == 1


def test_gaussian_threads(fresh):
    x = _img(7, (64, 48))
    sigmas = [0.8, 1.3, 2.1, 3.0] * 2
    refs = {s: scipy.ndimage.gaussian_filter(x, s) for s in sigmas}
    errors = []

    def worker(s):
        try:
            for _ in range(20):
                got = filters.gaussian(x, s)
                if not np.allclose(got, refs[s], atol=1e-12):
                    errors.append(s)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    run_threads(worker, sigmas)
    assert not errors
    assert tc.plan_cache_info()["devices"]["cpu"]["plans"] == 4


def test_gaussian_method_of():
    m = gmod.method_of(_img(8), 1.0)
    assert m in {r.name for r in tc.methods()} | {"numpy_separable"}


@pytest.mark.parametrize("fft", [False, True])
def test_astropy_kernel_changed_in_place_gets_a_new_plan(fresh, fft):
    f, ref = (tca.convolve_fft, ap_convolve_fft) if fft else (tca.convolve, ap_convolve)
    x = _img(9)
    x[5, 7] = np.nan
    k = np.random.default_rng(10).random((5, 3))
    first = f(x, k)
    k[2, 1] += 3.0
    k[0, 0] = 0.0
    got = f(x, k)
    tol = 1e-10 if fft else 1e-12
    np.testing.assert_allclose(got, ref(x, k), rtol=tol, atol=tol)
    assert not np.allclose(got, first, equal_nan=True)
    assert tc.plan_cache_info()["devices"]["cpu"]["plans"] == 2


@pytest.mark.parametrize("boundary", [None, "fill", "extend", "wrap"])
def test_astropy_cached_hit_is_bit_identical(fresh, boundary):
    x = _img(11)
    x[3, 4] = np.nan
    k = np.random.default_rng(12).random((5, 5))
    first = tca.convolve(x, k, boundary=boundary)
    again = tca.convolve(x, k, boundary=boundary)
    assert tc.plan_cache_info()["hits"] >= 1
    np.testing.assert_array_equal(first, again)
    tc.clear_plan_cache()
    np.testing.assert_array_equal(first, tca.convolve(x, k, boundary=boundary))
    if boundary != "extend":
        b = "fill" if boundary is None else boundary
        np.testing.assert_array_equal(tca.convolve_fft(x, k, boundary=b),
                                      tca.convolve_fft(x, k, boundary=b))


def test_astropy_eviction_and_oom(fresh, monkeypatch):
    x = _img(13)
    tc.set_plan_cache_limit(0, device="cpu")
    k = np.ones((3, 3))
    np.testing.assert_allclose(tca.convolve(x, k), ap_convolve(x, k), atol=1e-12)
    assert tc.plan_cache_info()["plans"] == 0
    tc.set_plan_cache_limit(None)
    calls = fail_first_call(monkeypatch, _api.Plan, "__call__")
    np.testing.assert_allclose(tca.convolve(x, k), ap_convolve(x, k), atol=1e-12)
    assert len(calls) == 2 and tc.plan_cache_info()["plans"] == 1


def test_astropy_threads(fresh):
    x = _img(14, (50, 40))
    x[10, 10] = np.nan
    kernels = [np.random.default_rng(t).random((2 * t + 3, 2 * t + 3)) for t in range(4)] * 2
    refs = [ap_convolve(x, k) for k in kernels]
    errors = []

    def worker(t):
        try:
            for _ in range(15):
                if not np.allclose(tca.convolve(x, kernels[t]), refs[t], atol=1e-12):
                    errors.append(t)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    run_threads(worker, range(8))
    assert not errors and tc.plan_cache_info()["devices"]["cpu"]["plans"] == 4


def test_keys_do_not_collide_with_correlate2d(fresh):
    """A correlate2d plan and an astropy set-up of the same kernel and shape are two entries."""
    x = _img(15, (20, 20))
    k = np.ones((3, 3))
    tc.correlate2d(np.pad(x, 1), k, "valid", method="direct")
    tca.convolve(x, k, boundary="fill", method="direct")
    assert tc.plan_cache_info()["plans"] == 2


# ---- GPU ---------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("sigma", [1.0, 8.0])  # the fused filter; the `separable` plan + strips
def test_gpu_gaussian_on_the_device_pool(fresh, sigma):
    cp = cupy_device()
    x = np.random.default_rng(20).standard_normal((300, 257)).astype(np.float32)
    xd = cp.asarray(x)
    first = cp.asnumpy(filters.gaussian(xd, sigma))
    again = cp.asnumpy(filters.gaussian(xd, sigma))
    np.testing.assert_array_equal(first, again)
    dev = tc.plan_cache_info()["devices"]
    assert (0 in dev and dev[0]["plans"] == 1) or dev["cpu"]["plans"] == 1  # fused: no state
    np.testing.assert_allclose(first, scipy.ndimage.gaussian_filter(x.astype(np.float64),
                                                                     sigma), atol=2e-5)


@pytest.mark.gpu
def test_gpu_gaussian_threads_and_streams(fresh):
    cp = cupy_device()
    x = np.random.default_rng(21).standard_normal((256, 256)).astype(np.float32)
    xd = cp.asarray(x)
    refs = {s: scipy.ndimage.gaussian_filter(x.astype(np.float64), s) for s in (8.0, 9.0)}
    errors = []

    def worker(t):
        try:
            s = (8.0, 9.0)[t % 2]
            with cp.cuda.Stream(non_blocking=True):
                for _ in range(10):
                    got = cp.asnumpy(filters.gaussian(xd, s, method="separable"))
                    if np.abs(got - refs[s]).max() > 2e-5:
                        errors.append(t)
        except Exception as e:  # pragma: no cover
            errors.append(repr(e))

    run_threads(worker, range(6))
    assert not errors
    d = tc.plan_cache_info()["devices"][0]
    assert d["bytes"] <= d["max_bytes"] and d["plans"] >= 2


@pytest.mark.gpu
@pytest.mark.parametrize("fft", [False, True])
def test_gpu_astropy_device_pool_and_kernel_mutation(fresh, fft):
    cp = cupy_device()
    f, ref = (tca.convolve_fft, ap_convolve_fft) if fft else (tca.convolve, ap_convolve)
    x = np.random.default_rng(22).standard_normal((96, 80))
    x[4, 4] = np.nan
    k = np.random.default_rng(23).random((7, 5))
    xd = cp.asarray(x)
    first = cp.asnumpy(f(xd, k))
    np.testing.assert_array_equal(first, cp.asnumpy(f(xd, k)))
    assert tc.plan_cache_info()["devices"][0]["plans"] == 1
    k[3, 2] += 1.0
    np.testing.assert_allclose(cp.asnumpy(f(xd, k)), ref(x, k), rtol=1e-9, atol=1e-9)
    assert tc.plan_cache_info()["devices"][0]["plans"] == 2


@pytest.mark.gpu
def test_gpu_astropy_oom_retries(fresh, monkeypatch):
    cp = cupy_device()
    x = cp.asarray(np.random.default_rng(24).standard_normal((64, 64)))
    k = np.ones((5, 5))
    calls = fail_first_call(monkeypatch, _api.Plan, "__call__",
                            lambda: cp.cuda.memory.OutOfMemoryError(1 << 40, 0))
    got = cp.asnumpy(tca.convolve(x, k))
    np.testing.assert_allclose(got, ap_convolve(cp.asnumpy(x), k), atol=1e-10)
    assert len(calls) == 2 and _plan_cache.info()["devices"][0]["plans"] == 1
