"""The CPU float path: fft_cpu's block geometries, 'auto' on the CPU (cost model,
calibration, non-finite images), and the plan cache (content keys, bounds, 8 threads).
fft_cpu x precision against scipy on odd shapes and USC-SIPI runs in test_methods.py and
test_accuracy.py with every registry row."""

import threading

import numpy as np
import pytest
import scipy.signal
from bounds import rel_l2_bound

import tensorconv as tc
from tensorconv import _api, _cpu_constants, _fft_cpu, _plan_cache
from tensorconv._arrays import backend_of
from tensorconv.metrics import relative_l2

PRECISIONS = ("fp16fp32", "fp32", "fp64")


@pytest.fixture
def fresh_cache():
    tc.clear_plan_cache()
    yield
    tc.clear_plan_cache()


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("ishape,kshape,block", [
    ((301, 517), (7, 5), (128, 128)),     # blocks of both dims, ragged last block
    ((300, 250), (15, 16), (128, 250)),   # row strips only (full width)
    ((260, 131), (1, 9), (128, 128)),     # one-row kernel
    ((200, 200), (40, 3), (64, 256)),     # block rows barely taller than the kernel
])
def test_fft_cpu_overlap_save_blocks(monkeypatch, precision, ishape, kshape, block):
    monkeypatch.setattr(_fft_cpu, "choose_blocks", lambda *a, **kw: (block, 0.0))
    rng = np.random.default_rng(5)
    image = rng.standard_normal(ishape)
    kernel = rng.standard_normal(kshape)
    ref = scipy.signal.correlate2d(image, kernel, "valid")
    out = tc.correlate2d(image, kernel, "valid", method="fft_cpu", precision=precision)
    assert out.shape == ref.shape
    assert relative_l2(out, ref) <= rel_l2_bound("fft_cpu", precision)


@pytest.mark.parametrize("batch_bytes", [1, 1 << 14, 4 << 20])
def test_fft_cpu_blocks_random_geometry(monkeypatch, batch_bytes):
    """Random shapes, kernels and block shapes (from the kernel size to past the image), one or
    several block rows per batch, into a strided output view: exact results, nothing written
    outside the view."""
    monkeypatch.setattr(_fft_cpu.FftCpu, "_BATCH_BYTES", batch_bytes)
    rng = np.random.default_rng(31)
    for _ in range(40):
        ih, iw = (int(v) for v in rng.integers(1, 200, 2))
        kh, kw = int(rng.integers(1, min(ih, 30) + 1)), int(rng.integers(1, min(iw, 30) + 1))
        block = (int(rng.integers(kh, ih + 20)), int(rng.integers(kw, iw + 20)))
        x, k = rng.standard_normal((ih, iw)), rng.standard_normal((kh, kw))
        plan = _fft_cpu.FftCpu(k, ih, iw, "fp64", block=block)
        buf = np.full((ih - kh + 1, iw - kw + 6), np.nan)
        plan.run(x, buf[:, : iw - kw + 1])
        ref = scipy.signal.correlate2d(x, k, "valid")
        assert relative_l2(buf[:, : iw - kw + 1], ref) <= 1e-12, (ih, iw, kh, kw, block)
        assert np.isnan(buf[:, iw - kw + 1 :]).all()


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
def test_fft_cpu_complex_blocks(precision):
    """Complex data through complex transforms, whole and in overlap-save blocks: the valid
    correlation with the effective kernel E = kr + i ki (what tensorconv.Plan passes)."""
    rng = np.random.default_rng(32)
    ct = np.complex64 if precision == "fp32" else np.complex128
    for ih, iw, kh, kw, block in ((90, 77, 7, 5, (32, 24)), (64, 50, 9, 9, None),
                                  (40, 33, 1, 33, (16, 40))):
        x = (rng.standard_normal((ih, iw)) + 1j * rng.standard_normal((ih, iw))).astype(ct)
        kr, ki = rng.standard_normal((kh, kw)), rng.standard_normal((kh, kw))
        plan = _fft_cpu.FftCpu(kr, ih, iw, precision, block=block, kernel_imag=ki,
                               complex_data=True)
        out = np.empty((ih - kh + 1, iw - kw + 1), ct)
        plan.run(x, out)
        ref = scipy.signal.correlate2d(x, np.conj(kr + 1j * ki), "valid")  # sum x E
        assert relative_l2(out, ref) <= rel_l2_bound("fft_cpu", precision), (ih, iw, block)


def test_fft_cpu_block_model(monkeypatch):
    # one whole transform for large kernels, blocks only for big images with small kernels
    assert _fft_cpu.choose_blocks(1024, 1024, 35, 35)[0] == (1024, 1024)
    bh, bw = _fft_cpu.choose_blocks(8192, 8192, 3, 3)[0]
    assert bh < 8192 and bw < 8192
    # rows up to MAX_STRIP_WIDTH wide: strips of whole rows (contiguous slabs), not squares
    # (the default constants, where larger transforms cost more per operation)
    monkeypatch.setattr(_cpu_constants, "_loaded", _cpu_constants.DEFAULTS)
    unit = _cpu_constants.unit_seconds_fn("fp32")
    for n, k in [(2048, 55), (4096, 25), (4096, 55)]:
        bh, bw = _fft_cpu.choose_blocks(n, n, k, k, unit)[0]
        assert bh < n and bw == n
    for shape in [(17, 23), (1000, 999), (4099, 513)]:
        (bh, bw), cost = _fft_cpu.choose_blocks(*shape, 5, 5)
        assert cost > 0 and 5 <= bh <= _fft_cpu.sfft.next_fast_len(shape[0])


def test_auto_cpu_uses_the_cost_model(monkeypatch):
    monkeypatch.setattr(_api, "_methods", lambda: [m for m in tc.methods() if m.device == "cpu"])
    k = np.random.default_rng(1).random
    assert _api.choose_method("fp32", False, 0, k((3, 3)), (1024, 1024)) == "direct"
    assert _api.choose_method("fp64", False, 0, k((55, 55)), (2048, 2048)) == "fft_cpu"
    big = k((35, 35))
    big[2, 2] = np.inf  # spectral methods would spread it: never fft for a non-finite kernel
    assert _api.choose_method("fp32", False, 0, big, (2048, 2048)) == "direct"
    # the choice follows the constants: an FFT made 1e6 times dearer is never chosen
    c = {p: dict(v, per_unit=[u * 1e6 for u in v["per_unit"]])
         for p, v in _cpu_constants.constants().items()}
    monkeypatch.setattr(_cpu_constants, "_loaded", c)
    assert _api.choose_method("fp64", False, 0, k((55, 55)), (2048, 2048)) == "direct"


def test_calibration_is_saved_per_machine(monkeypatch, tmp_path):
    monkeypatch.setenv("TENSORCONV_CACHE", str(tmp_path))
    monkeypatch.setattr(_cpu_constants, "_loaded", None)
    c = tc.calibrate_cpu()
    f = _cpu_constants.cost_file()
    assert f.is_file() and f.parent.parent == tmp_path
    for p in ("fp32", "fp64"):
        assert set(c[p]) == set(_cpu_constants.DEFAULTS[p])
        assert c[p]["per_mac"] > 0
        assert len(c[p]["per_unit"]) == len(_cpu_constants.FFT_SIZES) and min(c[p]["per_unit"]) > 0
    monkeypatch.setattr(_cpu_constants, "_loaded", None)  # a new process reads the file
    assert _cpu_constants.constants() == c


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
def test_auto_runs_direct_on_non_finite_images(precision):
    rng = np.random.default_rng(12)
    image = rng.random((300, 310))
    kernel = rng.random((41, 41)) + 0.1  # positive: inf stays inf
    p = tc.plan(kernel, image.shape, mode="valid", precision=precision)
    # fft_cpu here; a GPU machine sends host work this large to cuFFT's fft, with the same rule
    assert p.method in ("fft_cpu", "fft"), "the test needs a case where auto chooses an FFT"
    np.testing.assert_allclose(p(image), scipy.signal.correlate2d(image, kernel, "valid"),
                               rtol=1e-4 if precision == "fp32" else 1e-10)
    image[5, 7] = np.nan
    image[200, 250] = np.inf
    ref = scipy.signal.correlate2d(image, kernel, "valid")
    for got in (p(image), tc.correlate2d(image, kernel, "valid", precision=precision)):
        got = got.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
        finite = np.isfinite(ref)
        assert finite.sum() > 0.5 * ref.size
        np.testing.assert_allclose(got[finite], ref[finite],
                                   rtol=1e-4 if precision == "fp32" else 1e-10)
    # a NaN fill value is part of the padded image the check sees
    ones = np.ones_like(image)
    got = tc.correlate2d(ones, kernel, "same", fillvalue=np.nan, precision=precision)
    ref = scipy.signal.correlate2d(ones, kernel, "same", fillvalue=np.nan)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    assert not np.isnan(ref).all()


def test_all_finite_check():
    b = backend_of(np.zeros(1))
    x = np.full((50, 60), 3e38, np.float32)  # the sum overflows; the exact test settles it
    assert b.all_finite(x)
    x[3, 4] = -np.inf
    assert not b.all_finite(x)
    h = np.full((20, 20), 60000, np.float16)  # half sums in float32
    assert b.all_finite(h)
    h[0, 0] = np.nan
    assert not b.all_finite(h)


def test_plan_cache_keys_on_content(fresh_cache):
    rng = np.random.default_rng(2)
    image = rng.standard_normal((40, 50))
    kernel = rng.standard_normal((5, 5))
    for method in ("direct", "fft_cpu", "auto"):
        for _ in range(2):
            out = tc.correlate2d(image, kernel, "same", method=method)
            np.testing.assert_allclose(out, scipy.signal.correlate2d(image, kernel, "same"),
                                       rtol=1e-9, atol=1e-12)
            kernel *= -1.5  # the same array object, new content: never the old plan
            kernel[0, 0] += 1
    info = tc.plan_cache_info()
    assert info["misses"] == 6 and info["hits"] == 0
    out1 = tc.correlate2d(image, kernel, "same")
    out2 = tc.correlate2d(image, kernel, "same")
    assert tc.plan_cache_info()["hits"] == 1
    np.testing.assert_array_equal(out1, out2)
    # shape, mode, boundary, fill value, precision and convolution are part of the key
    ref32 = scipy.signal.correlate2d(image, kernel, "same").astype(np.float32)
    variants = [
        (tc.correlate2d(image[:30], kernel, "same"),
         scipy.signal.correlate2d(image[:30], kernel, "same")),
        (tc.correlate2d(image, kernel, "full"), scipy.signal.correlate2d(image, kernel, "full")),
        (tc.correlate2d(image, kernel, "same", "wrap"),
         scipy.signal.correlate2d(image, kernel, "same", "wrap")),
        (tc.correlate2d(image, kernel, "same", fillvalue=2.0),
         scipy.signal.correlate2d(image, kernel, "same", fillvalue=2.0)),
        (tc.correlate2d(image, kernel, "same", precision="fp32"), ref32),
        (tc.convolve2d(image, kernel, "same"), scipy.signal.convolve2d(image, kernel, "same")),
        (tc.correlate2d(image.astype(np.float32), kernel.astype(np.float32), "same"), ref32),
    ]
    for got, ref in variants:
        assert got.shape == ref.shape and got.dtype == ref.dtype
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_plan_cache_is_bounded(fresh_cache, monkeypatch):
    monkeypatch.setattr(_plan_cache, "MAX_PLANS", 4)
    image = np.ones((20, 20))
    for i in range(10):
        tc.correlate2d(image, np.full((3, 3), float(i)))
    assert tc.plan_cache_info()["plans"] == 4
    held = tc.plan_cache_info()["bytes"]
    monkeypatch.setattr(_plan_cache, "MAX_BYTES", 0)  # a plan above the budget is not kept
    tc.correlate2d(np.ones((64, 64)), np.ones((40, 40)), method="fft_cpu")
    assert tc.plan_cache_info()["plans"] == 4 and tc.plan_cache_info()["bytes"] == held
    big = np.ones((1500, 1500))  # kernels above MAX_KERNEL_BYTES are not kept
    assert _plan_cache.key(big, (1500, 1500), "valid", "fill", 0.0, "auto", "fp64", False,
                           None) is None
    mid = np.ones((300, 300))  # kernels above SMALL_KERNEL_BYTES are keyed by a digest
    k = _plan_cache.key(mid, (300, 300), "valid", "fill", 0.0, "auto", "fp64", False, None)
    assert k is not None and not any(isinstance(x, bytes) and len(x) > 64 for x in k)


def test_plan_cache_eight_threads(fresh_cache):
    rng = np.random.default_rng(9)
    cases = []
    for i in range(6):
        image = rng.standard_normal((60 + i, 70))
        kernel = rng.standard_normal((3 + 4 * i, 5))
        method = ("direct", "fft_cpu", "auto")[i % 3]
        cases.append((image, kernel, method, scipy.signal.correlate2d(image, kernel, "same")))
    errors = []

    def worker(t):
        try:
            for r in range(30):
                image, kernel, method, ref = cases[(t + r) % len(cases)]
                out = tc.correlate2d(image, kernel, "same", method=method)
                if relative_l2(out, ref) > 1e-12:
                    errors.append((t, r, method))
                if r % 10 == 9:
                    tc.clear_plan_cache()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert tc.plan_cache_info()["plans"] <= _plan_cache.MAX_PLANS


def test_fft_cpu_rejects_device_arrays_and_bad_precision():
    with pytest.raises(ValueError, match="does not support precision 'bf16'"):
        tc.correlate2d(np.ones((8, 8)), np.ones((3, 3)), method="fft_cpu", precision="bf16")
    with pytest.raises(ValueError, match="at least as large as the kernel"):
        tc.plan(np.ones((9, 9)), (8, 8), mode="valid", method="fft_cpu")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fast_key_calls_match_the_general_path(fresh_cache, dtype, monkeypatch):
    # the commonest call (auto, one float dtype, fill 0) reuses its cached plan through a short
    # key: same results as the general path, every mode, NaN/inf kept local on a spectral plan.
    # Only CPU plans are cached: where a GPU runs, 'auto' would send this work there, so the
    # host arrays are kept on the CPU here.
    monkeypatch.setattr(_api, "_AUTO_GPU_MIN_MACS", float("inf"))
    rng = np.random.default_rng(21)
    image = rng.random((300, 310)).astype(dtype)
    kernel = (rng.random((41, 41)) + 0.1).astype(dtype)
    assert _api._fast_key(image, kernel, "valid", "fill", 0, "auto", None, False, None, None)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for mode in ("valid", "same", "full"):
        ref = scipy.signal.correlate2d(image.astype(np.float64), kernel.astype(np.float64), mode)
        for _ in range(2):  # the second call takes the fast key
            got = tc.correlate2d(image, kernel, mode)
            assert got.dtype == dtype
            np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * np.abs(ref).max())
    hits = tc.plan_cache_info()["hits"]
    assert hits == 3
    image[5, 7] = np.nan
    image[200, 250] = np.inf
    ref = scipy.signal.correlate2d(image.astype(np.float64), kernel.astype(np.float64), "valid")
    got = tc.correlate2d(image, kernel, "valid").astype(np.float64)
    assert tc.plan_cache_info()["hits"] == hits + 1
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(got[finite], ref[finite], rtol=tol)
    # boundaries, fill values, named methods and precisions take it too
    for args in [(image, kernel, "valid", "fill", 1.0, "auto", None),
                 (image, kernel, "valid", "wrap", 0, "auto", None),
                 (image, kernel, "valid", "fill", 0, "direct", None),
                 (image, kernel, "valid", "fill", 0, "auto", "fp64")]:
        assert _api._fast_key(*args, False, None, None) is not None
    # anything else takes the general key
    other = np.float64 if dtype == np.float32 else np.float32
    for args in [(image, kernel.astype(other), "valid", "fill", 0, "auto", None),
                 (image, kernel, "valid", "fill", np.float64(1.0), "auto", None),
                 (image, kernel.astype(np.complex128), "valid", "fill", 0, "auto", None),
                 (np.ones(image.shape, np.int32), np.ones(kernel.shape, np.int32), "valid",
                  "fill", 0, "auto", None),
                 (kernel, image, "valid", "fill", 0, "auto", None)]:
        assert _api._fast_key(*args, False, None, None) is None
    assert _api._fast_key(image, kernel, "valid", "fill", 0, "auto", None, False, None,
                          {"direct.threads": 1}) is None
