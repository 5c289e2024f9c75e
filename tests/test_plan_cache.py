"""The plan cache behind correlate2d / convolve2d (tensorconv._plan_cache): keys on the kernel's
content, per-device pools and budgets, checkout of CUDA plans, failures that leave nothing
behind, out-of-memory retries. GPU tests (marked gpu) run CuPy and PyTorch kernels."""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.signal

from conftest import fail_first_call, run_threads

import tensorconv as tc
from tensorconv import _api, _plan_cache


@pytest.fixture
def fresh():
    tc.clear_plan_cache()
    tc.set_plan_cache_limit(None)
    yield
    tc.set_plan_cache_limit(None)
    tc.clear_plan_cache()


def _close(got, ref, tol=1e-9):
    got = np.asarray(got)
    got = got if got.dtype.kind == "c" else got.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * max(1.0, np.abs(ref).max()))


class _FakeCudaPlan:
    """A stand-in for a CUDA Plan (checked out, not shared) of some bytes."""
    _device = "cuda"

    def __init__(self, nbytes=0):
        self.workspace_bytes = nbytes


# ---- keys -----------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["direct", "fft_cpu", "auto"])
@pytest.mark.parametrize("boundary", ["fill", "symm"])
def test_kernel_changed_in_place_gets_a_new_plan(fresh, method, boundary):
    rng = np.random.default_rng(1)
    image = rng.standard_normal((30, 40))
    kernel = rng.standard_normal((5, 4))
    for _ in range(3):
        for _ in range(2):  # the second call is a hit: still this content's result
            _close(tc.correlate2d(image, kernel, "same", boundary, method=method),
                   scipy.signal.correlate2d(image, kernel, "same", boundary))
        kernel[2, 1] += 1.0  # the same object, new content
        kernel *= -0.5
    info = tc.plan_cache_info()
    assert info["misses"] == 3 and info["hits"] == 3


def test_complex_kernel_changed_in_place(fresh):
    rng = np.random.default_rng(2)
    image = rng.standard_normal((20, 22))
    kernel = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    for _ in range(2):
        _close(tc.correlate2d(image, kernel, "full", method="direct"),
               scipy.signal.correlate2d(image, kernel, "full"))
        kernel.imag[1, 1] += 2.0


def test_same_bytes_other_dtype_or_shape(fresh):
    rng = np.random.default_rng(3)
    image = rng.standard_normal((24, 24))
    k = rng.standard_normal((3, 4))
    views = [k, k.reshape(4, 3), k.reshape(2, 6), k.view(np.int64).astype(np.float64)]
    for kk in views:  # the same 96 bytes where it matters, another shape or meaning
        _close(tc.correlate2d(image, kk, "valid", method="direct"),
               scipy.signal.correlate2d(image, kk, "valid"))
    # the same bytes as float32 values: another key
    k32 = np.frombuffer(k.astype(np.float64).tobytes(), np.float32).reshape(4, 6).copy()
    k32 = np.nan_to_num(k32, nan=0.0, posinf=0.0, neginf=0.0)
    k32 = np.clip(k32, -1e3, 1e3)
    _close(tc.correlate2d(image.astype(np.float32), k32, "valid", method="direct"),
           scipy.signal.correlate2d(image.astype(np.float32).astype(np.float64),
                                    k32.astype(np.float64), "valid"), 1e-4)
    assert tc.plan_cache_info()["misses"] == len(views) + 1


def test_fill_value_nan_is_one_key(fresh):
    image = np.ones((10, 10))
    k = np.ones((3, 3))
    for _ in range(3):
        tc.correlate2d(image, k, "same", fillvalue=float("nan"), method="direct")
    assert tc.plan_cache_info()["plans"] == 1 and tc.plan_cache_info()["hits"] == 2


def test_two_devices_keep_separate_pools(fresh):
    # one GPU or none: the device id of the key names the pool; a fake second device's plans
    # are counted, bounded and cleared apart
    k0 = (0, None, "x")
    k1 = (1, None, "x")
    a, b = _FakeCudaPlan(1000), _FakeCudaPlan(2000)
    _plan_cache.release(k0, a)
    _plan_cache.release(k1, b)
    devices = tc.plan_cache_info()["devices"]
    assert devices[0]["plans"] == 1 and devices[1]["plans"] == 1
    assert _plan_cache.acquire(k0) is a and _plan_cache.acquire(k1) is b
    _plan_cache.release(k0, a)
    _plan_cache.release(k1, b)
    tc.set_plan_cache_limit(1500, device=1)  # device 1's budget: b no longer fits
    devices = tc.plan_cache_info()["devices"]
    assert devices[1]["plans"] == 0 and devices[0]["plans"] == 1
    assert devices[1]["max_bytes"] == 1500
    tc.clear_plan_cache(device=0)
    assert tc.plan_cache_info()["devices"][0]["plans"] == 0


def test_checked_out_plans_are_not_shared(fresh):
    k = (0, 7, "y")
    p = _FakeCudaPlan()
    _plan_cache.release(k, p)
    assert _plan_cache.acquire(k) is p
    assert _plan_cache.acquire(k) is None  # in use: the second caller builds its own
    q = _FakeCudaPlan()
    _plan_cache.release(k, p)
    _plan_cache.release(k, q)
    got = {id(_plan_cache.acquire(k)), id(_plan_cache.acquire(k))}
    assert got == {id(p), id(q)}


# ---- a new kernel on a seen shape ------------------------------------------------------------

def _gpu_key(content, shape=(64, 64), stream=7):
    return _plan_cache.key(np.frombuffer(content, np.float64).reshape(1, -1), shape, "same",
                           "fill", "0.0", "fft", "fp32", False, 0, (), stream)


def test_adopt_takes_an_idle_plan_of_the_same_call_for_a_new_kernel(fresh):
    a, b, c = (np.full(3, v).tobytes() for v in (1.0, 2.0, 3.0))
    old = _FakeCudaPlan(1000)
    _plan_cache.release(_gpu_key(a), old)
    seen = []
    got = _plan_cache.adopt(_gpu_key(b), lambda p: seen.append(p) or True)
    assert got is old and seen == [old]
    dev = tc.plan_cache_info()["devices"][0]
    assert dev["plans"] == 0 and dev["bytes"] == 0 and dev["rekernels"] == 1
    assert _plan_cache.acquire(_gpu_key(a)) is None  # the old kernel's key is gone
    _plan_cache.release(_gpu_key(b), got)
    assert _plan_cache.acquire(_gpu_key(b)) is old
    _plan_cache.release(_gpu_key(b), old)
    # another image shape, stream or kernel shape is another call: nothing to adopt
    assert _plan_cache.adopt(_gpu_key(c, shape=(64, 65)), lambda p: True) is None
    assert _plan_cache.adopt(_gpu_key(c, stream=8), lambda p: True) is None
    k4 = _plan_cache.key(np.ones((2, 2)), (64, 64), "same", "fill", "0.0", "fft", "fp32",
                         False, 0, (), 7)
    assert _plan_cache.adopt(k4, lambda p: True) is None
    assert tc.plan_cache_info()["devices"][0]["plans"] == 1


def test_adopt_declined_or_failed(fresh):
    a, b = np.full(3, 1.0).tobytes(), np.full(3, 2.0).tobytes()
    p = _FakeCudaPlan(1000)
    _plan_cache.release(_gpu_key(a), p)
    assert _plan_cache.adopt(_gpu_key(b), lambda q: False) is None
    assert _plan_cache.acquire(_gpu_key(a)) is p  # declined: cached as it was
    _plan_cache.release(_gpu_key(a), p)

    def boom(q):
        raise RuntimeError("re-preparing failed")

    assert _plan_cache.adopt(_gpu_key(b), boom) is None
    info = tc.plan_cache_info()["devices"][0]
    assert info["plans"] == 0 and info["bytes"] == 0  # failed: dropped, nothing half-made kept


def test_adopt_leaves_plans_in_use_and_cpu_plans(fresh):
    a, b = np.full(3, 1.0).tobytes(), np.full(3, 2.0).tobytes()
    p = _FakeCudaPlan(1000)
    _plan_cache.release(_gpu_key(a), p)
    assert _plan_cache.acquire(_gpu_key(a)) is p  # checked out by a call
    assert _plan_cache.adopt(_gpu_key(b), lambda q: True) is None
    _plan_cache.release(_gpu_key(a), p)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 20))
    tc.correlate2d(x, rng.standard_normal((3, 3)), method="direct")
    tc.correlate2d(x, rng.standard_normal((3, 3)), method="direct")  # CPU plans: built
    assert tc.plan_cache_info()["devices"]["cpu"]["rekernels"] == 0


# ---- budgets ----------------------------------------------------------------------------------

def test_eviction_under_a_tiny_budget(fresh):
    image = np.ones((40, 40))
    one = tc.correlate2d(image, np.ones((5, 5)), method="direct")
    del one
    per_plan = tc.plan_cache_info()["bytes"]
    assert per_plan > 0
    tc.clear_plan_cache()
    tc.set_plan_cache_limit(int(per_plan * 2.5))
    for i in range(12):
        tc.correlate2d(image, np.full((5, 5), float(i)), method="direct")
        info = tc.plan_cache_info()
        assert info["bytes"] <= int(per_plan * 2.5) and info["plans"] <= 2
    assert tc.plan_cache_info()["devices"]["cpu"]["evictions"] >= 9
    tc.set_plan_cache_limit(0)
    assert tc.plan_cache_info()["plans"] == 0


def test_env_limit(monkeypatch):
    monkeypatch.setenv("TENSORCONV_PLAN_CACHE_MB", "3")
    saved = dict(_plan_cache._limits)
    try:
        _plan_cache._env_limit()
        assert _plan_cache.limit("cpu") == 3 << 20 and _plan_cache.limit(0) == 3 << 20
        monkeypatch.setenv("TENSORCONV_PLAN_CACHE_MB", "lots")
        with pytest.raises(ValueError, match="TENSORCONV_PLAN_CACHE_MB"):
            _plan_cache._env_limit()
    finally:
        _plan_cache._limits.clear()
        _plan_cache._limits.update(saved)


def test_gpu_default_budget(monkeypatch):
    monkeypatch.setattr(_plan_cache, "_device_total", {5: 141 << 30, 6: 4 << 30, 7: None})
    saved = dict(_plan_cache._limits)
    _plan_cache._limits.clear()
    try:
        assert _plan_cache.limit(5) == 1 << 30  # min(1 GiB, 10 %)
        assert _plan_cache.limit(6) == int((4 << 30) * 0.1)
        assert _plan_cache.limit(7) == 1 << 30  # unknown memory: the fixed default
    finally:
        _plan_cache._limits.update(saved)


def test_ten_thousand_distinct_kernels_stay_within_budget(fresh):
    image = np.ones((12, 12))
    rng = np.random.default_rng(4)
    budget = 1 << 20
    tc.set_plan_cache_limit(budget)
    ks = rng.standard_normal((10000, 3, 3))
    for i in range(10000):
        tc.correlate2d(image, ks[i], "same", method="direct")
        if i % 500 == 0:
            info = tc.plan_cache_info()
            assert info["bytes"] <= budget and info["plans"] <= _plan_cache.MAX_PLANS
    info = tc.plan_cache_info()
    assert info["misses"] == 10000 and info["bytes"] <= budget
    # the bytes counted are those the entries hold: recount them
    pool = _plan_cache._pools["cpu"]
    assert pool.bytes == sum(b for e in pool.entries.values() for _, b in e[1])
    assert len(_plan_cache._where) == sum(len(p.entries) for p in _plan_cache._pools.values())


# ---- threads ----------------------------------------------------------------------------------

def test_eight_threads_distinct_kernels(fresh):
    rng = np.random.default_rng(5)
    image = rng.standard_normal((50, 60))
    kernels = [rng.standard_normal((3 + (t % 4), 5)) for t in range(8)]
    refs = [scipy.signal.correlate2d(image, k, "same", "symm") for k in kernels]
    errors = []

    def worker(t):
        try:
            for r in range(40):
                out = tc.correlate2d(image, kernels[t], "same", "symm",
                                     method=("direct", "fft_cpu")[r % 2])
                if np.abs(out - refs[t]).max() > 1e-9 * np.abs(refs[t]).max():
                    errors.append((t, r))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    run_threads(worker, range(8))
    assert not errors


# ---- failures ----------------------------------------------------------------------------------

def test_failing_call_leaves_no_entry(fresh, monkeypatch):
    image, k = np.ones((16, 16)), np.ones((3, 3))
    with pytest.raises(ValueError):
        tc.correlate2d(image, k, method="direct", options={"no.such_option": 1})
    with pytest.raises(ValueError):
        tc.correlate2d(image, k, method="no_such_method")
    assert tc.plan_cache_info()["plans"] == 0

    def boom(self, *a, **kw):
        raise RuntimeError("simulated failure inside the call")

    monkeypatch.setattr(_api.Plan, "_real", boom)
    with pytest.raises(RuntimeError, match="simulated"):
        tc.correlate2d(image, k, "same", "symm", method="direct")
    assert tc.plan_cache_info()["plans"] == 0
    monkeypatch.undo()
    tc.correlate2d(image, k, "same", "symm", method="direct")  # cached now
    assert tc.plan_cache_info()["plans"] == 1
    monkeypatch.setattr(_api.Plan, "_real", boom)
    with pytest.raises(RuntimeError, match="simulated"):  # a hit that raises drops the plan
        tc.correlate2d(image, k, "same", "symm", method="direct")
    assert tc.plan_cache_info()["plans"] == 0


def test_oom_empties_the_cache_and_retries_once(fresh, monkeypatch):
    image = np.random.default_rng(6).standard_normal((20, 20))
    k = np.ones((3, 3))
    tc.correlate2d(image, np.full((3, 3), 2.0), method="direct")  # another plan, cached
    assert tc.plan_cache_info()["plans"] == 1
    real = _api.Plan._real
    calls = fail_first_call(monkeypatch, _api.Plan, "_real")
    out = tc.correlate2d(image, k, "same", method="direct")
    _close(out, scipy.signal.correlate2d(image, k, "same"))
    assert len(calls) == 2
    info = tc.plan_cache_info()
    assert info["plans"] == 1  # the other plan went with the emptied cache; the retry's stays

    def always(self, *a, **kw):
        calls.append(1)
        raise MemoryError("simulated: out of memory")

    monkeypatch.setattr(_api.Plan, "_real", always)
    calls.clear()
    with pytest.raises(MemoryError, match="out of memory in a tensorconv call, twice"):
        tc.correlate2d(image, np.full((3, 3), 5.0), "same", method="direct")
    assert len(calls) == 2 and tc.plan_cache_info()["plans"] == 0
    # a hit (the fast key) that runs out of memory retries with a new plan too
    monkeypatch.setattr(_api.Plan, "_real", real)
    tc.correlate2d(image, k, "same", method="direct")
    calls = fail_first_call(monkeypatch, _api.Plan, "_real")
    _close(tc.correlate2d(image, k, "same", method="direct"),
           scipy.signal.correlate2d(image, k, "same"))
    assert len(calls) == 2


def test_torch_style_oom_is_recognised():
    class OutOfMemoryError(RuntimeError):
        pass

    assert _plan_cache.is_oom(OutOfMemoryError("CUDA out of memory"))
    assert _plan_cache.is_oom(RuntimeError("cuFFT error CUFFT_ALLOC_FAILED"))
    assert _plan_cache.is_oom(MemoryError())
    assert not _plan_cache.is_oom(ValueError("out of memory"))


def test_hit_overhead_is_small(fresh):
    """Reports the Python time of a cache hit against the plan's call (tiny image, 'direct'):
    the one-shot call adds only the key and a lookup."""
    image = np.random.default_rng(7).standard_normal((8, 8))
    k = np.ones((3, 3))
    p = tc.plan(k, image.shape, mode="same", boundary="symm", method="direct")
    tc.correlate2d(image, k, "same", "symm", method="direct")

    def best(f, n=2000):
        ts = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            ts.append((time.perf_counter() - t0) / n)
        return min(ts)

    t_plan = best(lambda: p(image))
    t_hit = best(lambda: tc.correlate2d(image, k, "same", "symm", method="direct"))
    print(f"\nplan call {t_plan * 1e6:.1f} us, one-shot hit {t_hit * 1e6:.1f} us, "
          f"difference {(t_hit - t_plan) * 1e6:.1f} us")
    assert t_hit < t_plan + 200e-6  # generous: a shared 2-core machine


# ---- GPU ----------------------------------------------------------------------------------------

def _cupy():
    cp = pytest.importorskip("cupy")
    if not tc.cuda_available():
        pytest.skip("no usable CUDA device")
    return cp


def _torch():
    torch = pytest.importorskip("torch")
    if not (tc.cuda_available() and torch.cuda.is_available()):
        pytest.skip("no usable CUDA device for torch")
    return torch


GPU_METHODS = ["auto", "naive_shmem", "fft"]


@pytest.mark.gpu
@pytest.mark.parametrize("method", GPU_METHODS)
@pytest.mark.parametrize("mode,boundary", [("valid", "fill"), ("same", "symm"),
                                           ("full", "wrap")])
def test_gpu_cupy_kernel_changed_in_place(fresh, method, mode, boundary):
    cp = _cupy()
    rng = np.random.default_rng(10)
    x = rng.standard_normal((300, 280)).astype(np.float32)
    k = rng.standard_normal((7, 5)).astype(np.float32)
    xd, kd = cp.asarray(x), cp.asarray(k)
    for _ in range(3):
        ref = scipy.signal.correlate2d(x.astype(np.float64), cp.asnumpy(kd).astype(np.float64),
                                       mode, boundary)
        for _ in range(2):
            got = tc.correlate2d(xd, kd, mode, boundary, method=method)
            assert isinstance(got, cp.ndarray)
            _close(cp.asnumpy(got), ref, 2e-4)
        kd[3, 2] += 1.0  # in place, on the device
        kd *= -0.75
    dev = tc.plan_cache_info()["devices"][0]
    assert dev["hits"] >= 3 and dev["plans"] >= 1 and dev["bytes"] > 0


@pytest.mark.gpu
def test_gpu_host_kernel_on_device_image_and_numpy_image(fresh):
    cp = _cupy()
    rng = np.random.default_rng(11)
    x = rng.standard_normal((256, 256))
    k = rng.standard_normal((9, 9))
    ref = scipy.signal.correlate2d(x, k, "same", "symm")
    for _ in range(2):
        _close(cp.asnumpy(tc.correlate2d(cp.asarray(x), k, "same", "symm", method="fft")),
               ref, 1e-9)
        _close(tc.correlate2d(x, k, "same", "symm", method="naive_shmem"), ref, 1e-9)
        k[4, 4] += 0.5
        ref = scipy.signal.correlate2d(x, k, "same", "symm")
    info = tc.plan_cache_info()["devices"][0]
    # each changed kernel re-prepares its call's plan (fft for device data, naive_shmem for host
    # data): two plans, never a hit on an old kernel
    assert info["plans"] == 2 and info["hits"] == 0 and info["rekernels"] == 2
    tc.correlate2d(x, k, "same", "symm", method="naive_shmem")
    tc.correlate2d(x, k, "same", "symm", method="naive_shmem")
    assert tc.plan_cache_info()["devices"][0]["hits"] == 1


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["auto", "naive_shmem", "fft"])
def test_gpu_torch_kernel_changed_in_place(fresh, method):
    torch = _torch()
    rng = np.random.default_rng(12)
    x = rng.standard_normal((200, 210)).astype(np.float32)
    k = rng.standard_normal((5, 5)).astype(np.float32)
    xd, kd = torch.from_numpy(x).cuda(), torch.from_numpy(k).cuda()
    for _ in range(3):
        ref = scipy.signal.correlate2d(x.astype(np.float64),
                                       kd.cpu().numpy().astype(np.float64), "same", "symm")
        for _ in range(2):
            got = tc.correlate2d(xd, kd, "same", "symm", method=method)
            assert isinstance(got, torch.Tensor) and got.is_cuda
            _close(got.cpu().numpy(), ref, 2e-4)
        kd[1, 2] += 1.0
        kd.mul_(-0.5)


@pytest.mark.gpu
def test_gpu_same_bytes_other_dtype_or_shape(fresh):
    cp = _cupy()
    rng = np.random.default_rng(13)
    x = rng.standard_normal((128, 128))
    k = rng.standard_normal((4, 6))
    for kk in (k, k.reshape(6, 4), k.reshape(3, 8)):
        _close(cp.asnumpy(tc.correlate2d(cp.asarray(x), cp.asarray(kk), "valid",
                                         method="naive_shmem")),
               scipy.signal.correlate2d(x, kk, "valid"))
    assert tc.plan_cache_info()["devices"][0]["plans"] == 3


@pytest.mark.gpu
def test_gpu_fake_second_device_key(fresh, monkeypatch):
    """One GPU: the key's device id faked, so device 1's calls keep a pool of their own."""
    cp = _cupy()
    x = cp.asarray(np.random.default_rng(14).standard_normal((64, 64)))
    k = np.ones((3, 3))
    tc.correlate2d(x, k, "same", method="naive_shmem")
    monkeypatch.setattr(_api, "_data_device", lambda b, a: 1 if b.on_device else None)
    tc.correlate2d(x, k, "same", method="naive_shmem")
    tc.correlate2d(x, k, "same", method="naive_shmem")
    devices = tc.plan_cache_info()["devices"]
    assert devices[0]["plans"] == 1 and devices[1]["plans"] == 1
    assert devices[1]["hits"] == 1 and devices[0]["hits"] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("streams", [False, True])
def test_gpu_eight_threads_distinct_kernels(fresh, streams):
    cp = _cupy()
    rng = np.random.default_rng(15)
    x = rng.standard_normal((512, 512)).astype(np.float32)
    xd = cp.asarray(x)
    kernels = [rng.standard_normal((3 + 2 * (t % 4), 3 + 2 * (t % 4))).astype(np.float32)
               for t in range(4)] * 2  # two threads per kernel: same keys, concurrent
    refs = [scipy.signal.correlate2d(x.astype(np.float64), k.astype(np.float64), "same", "symm")
            for k in kernels]
    errors = []

    def worker(t):
        try:
            s = cp.cuda.Stream(non_blocking=True) if streams else cp.cuda.Stream.null
            with s:
                kd = cp.asarray(kernels[t])
                for r in range(25):
                    out = tc.correlate2d(xd, kd, "same", "symm",
                                         method=("fft", "naive_shmem")[r % 2])
                    got = cp.asnumpy(out).astype(np.float64)
                    err = np.abs(got - refs[t]).max() / np.abs(refs[t]).max()
                    if err > 1e-4:
                        errors.append((t, r, err))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    run_threads(worker, range(8))
    assert not errors
    dev = tc.plan_cache_info()["devices"][0]
    assert dev["bytes"] <= dev["max_bytes"] and dev["hits"] > 0


@pytest.mark.gpu
def test_gpu_oom_retries_once(fresh, monkeypatch):
    cp = _cupy()
    x = cp.asarray(np.random.default_rng(16).standard_normal((128, 128)))
    k = np.ones((5, 5))
    tc.correlate2d(x, np.full((5, 5), 3.0), "same", method="fft")
    calls = fail_first_call(monkeypatch, _api.Plan, "_real",
                            lambda: cp.cuda.memory.OutOfMemoryError(1 << 40, 0))
    out = tc.correlate2d(x, k, "same", method="fft")
    _close(cp.asnumpy(out), scipy.signal.correlate2d(cp.asnumpy(x), k, "same"))
    assert len(calls) == 2 and tc.plan_cache_info()["devices"][0]["plans"] == 1


@pytest.mark.gpu
def test_gpu_budget_bounds_device_plans(fresh):
    cp = _cupy()
    x = cp.asarray(np.random.default_rng(17).standard_normal((512, 512)).astype(np.float32))
    tc.correlate2d(x, np.ones((31, 31), np.float32), "same", method="fft")
    one = tc.plan_cache_info()["devices"][0]["bytes"]
    assert one > 512 * 512 * 4  # an fft plan's padded image and spectra are counted
    tc.set_plan_cache_limit(int(one * 2.5), device=0)
    for i in range(8):
        tc.correlate2d(x, np.full((31, 31), float(i), np.float32), "same", method="fft")
        dev = tc.plan_cache_info()["devices"][0]
        assert dev["bytes"] <= int(one * 2.5) and dev["plans"] <= 2


def test_oneshot_preset_writes_its_files(fresh, tmp_path):
    """tensorconv-bench --preset oneshot --quick on a tiny image: JSON, Markdown with the goals
    table, one figure; one-shot and plan results equal."""
    import json

    from tensorconv.bench import cli

    assert cli.main(["--preset", "oneshot", "--quick", "--sizes", "64", "--kernels", "3",
                     "--runs", "2", "--out", str(tmp_path), "--no-progress"]) == 0
    js = next(tmp_path.glob("oneshot_*.json"))
    rows = json.loads(js.read_text())["rows"]
    impls = {r["impl"] for r in rows}
    assert {"oneshot", "oneshot_new_kernel", "plan"} <= impls
    assert all(r.get("equal", True) for r in rows)
    assert "one-shot against plan" in next(tmp_path.glob("oneshot_*.md")).read_text()


@pytest.mark.gpu
def test_gpu_auto_new_kernels_on_a_seen_shape(fresh):
    """'auto' on a device image with large kernels, each new: a cached plan is re-prepared only
    where the new kernel chooses the same method (a rank-1 kernel may choose another, then gets
    its own plan); every result is its kernel's."""
    cp = _cupy()
    rng = np.random.default_rng(12)
    x = rng.random((700, 650)).astype(np.float32)
    xd = cp.asarray(x)
    kernels = [rng.random((31, 31)), rng.random((31, 31)),
               np.outer(rng.random(31), rng.random(31)), rng.random((31, 31))]
    for k in kernels:
        for mode in ("valid", "same"):
            got = cp.asnumpy(tc.correlate2d(xd, k.astype(np.float32), mode)).astype(np.float64)
            ref = scipy.signal.correlate(x.astype(np.float64), k, mode, method="fft")
            assert np.abs(got - ref).max() <= 1e-4 * np.abs(ref).max(), mode


def _rekernel_cases():
    rows = {m.name: m for m in tc.methods()}
    out = []
    for method, ks in (("fft", (9, 31)), ("naive_shmem", (5, 9, 17)), ("toeplitz_tc", (7, 25)),
                       ("im2tensor_fused", (7, 20)), ("im2tensor", (7,))):
        if method not in rows:
            continue
        for prec in rows[method].precisions:
            out.extend(pytest.param(method, prec, k, id=f"{method}-{prec}-k{k}") for k in ks)
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("method,precision,k", _rekernel_cases())
def test_gpu_rekernel_gives_a_fresh_plans_bits(fresh, method, precision, k):
    """A miss on a seen shape re-prepares the cached plan for the new kernel where the method
    can: its results are bit for bit those of a plan made for that kernel, device and host
    data, and a NaN pixel stays in its windows."""
    cp = _cupy()
    rng = np.random.default_rng(k)
    store = {"fp64": np.float64, "fp16": np.float16, "bf16": np.float32}.get(precision,
                                                                             np.float32)
    x = rng.random((333, 301)).astype(store)
    x[50, 60] = np.nan
    xd = cp.asarray(x)
    ka, kb = rng.random((k, k + 1)), rng.random((k, k + 1))
    args = dict(method=method, precision=precision)
    try:
        tc.correlate2d(xd, ka, "same", "symm", **args)
    except ValueError as e:  # a combination the method does not take
        pytest.skip(str(e))
    before = tc.plan_cache_info()["devices"][0]["rekernels"]
    got = cp.asnumpy(tc.correlate2d(xd, kb, "same", "symm", **args))
    tc.correlate2d(x, ka, "same", "symm", **args)
    got_host = np.asarray(tc.correlate2d(x, kb, "same", "symm", **args))
    ref = cp.asnumpy(tc.plan(kb, x.shape, mode="same", boundary="symm", device="cuda",
                             **args)(xd))
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got_host, ref)
    exact = scipy.signal.correlate2d(x.astype(np.float64), kb, "same", "symm")
    assert np.array_equal(np.isfinite(got), np.isfinite(exact))
    print(method, precision, k, "rekernels", tc.plan_cache_info()["devices"][0]["rekernels"]
          - before)
