"""Per-image kernels: a (K, kh, kw) stack of kernels with (K, H, W) or (N, K, H, W) stacks of
images (image i / channel c with kernel i / c), against scipy per image."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal as ss
from bounds import mape_bound

import tensorconv as tc
from tensorconv.metrics import mape


def _ref(f, x, k, mode, boundary, fill):
    lead = x.shape[:-2]
    xs = x.reshape((-1, k.shape[0]) + x.shape[-2:])
    out = np.stack([np.stack([f(xs[n, c], k[c], mode, boundary, fill) for c in range(k.shape[0])])
                    for n in range(xs.shape[0])])
    return out.reshape(lead + out.shape[-2:])


@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("convolve", [False, True])
@pytest.mark.parametrize("method", ["direct", "fft_cpu"])
@pytest.mark.parametrize("layout", ["stack", "depthwise"])
def test_per_image_vs_scipy(boundary, mode, convolve, method, layout):
    rng = np.random.default_rng(1)
    k = rng.random((3, 4, 5))  # even and odd sizes, non-square
    x = rng.random((3, 13, 11) if layout == "stack" else (2, 3, 13, 11))
    f, g = (tc.convolve2d, ss.convolve2d) if convolve else (tc.correlate2d, ss.correlate2d)
    out = f(x, k, mode, boundary, 0.25, batch=True, method=method)
    ref = _ref(g, x, k, mode, boundary, 0.25)
    assert out.shape == ref.shape
    assert mape(out, ref) <= mape_bound(method, "fp64")


@pytest.mark.parametrize("precision", ["fp32", "fp16fp32"])
def test_per_image_direct_precisions(precision):
    rng = np.random.default_rng(2)
    k, x = rng.random((4, 5, 5)), rng.random((2, 4, 20, 18))
    out = tc.correlate2d(x, k, "same", batch=True, method="direct", precision=precision)
    assert mape(out, _ref(ss.correlate2d, x, k, "same", "fill", 0)) <= mape_bound("direct",
                                                                                 precision)


def test_per_image_plan_native_and_loop():
    rng = np.random.default_rng(3)
    k, x = rng.random((2, 3, 3)), rng.random((5, 2, 9, 7))
    p = tc.plan(k, (9, 7), mode="same")
    assert p.native and p.method == "direct"
    q = tc.plan(k, (9, 7), mode="same", method="fft_cpu")
    assert not q.native
    ref = _ref(ss.correlate2d, x, k, "same", "fill", 0)
    np.testing.assert_allclose(p(x), ref, rtol=1e-12)
    np.testing.assert_allclose(q(x), ref, rtol=1e-10)
    np.testing.assert_allclose(p(x[0]), ref[0], rtol=1e-12)  # a (K, H, W) stack


def test_per_image_one_kernel_one_image():
    x, k = np.arange(12.0).reshape(1, 3, 4), np.ones((1, 2, 2))
    np.testing.assert_allclose(tc.correlate2d(x, k, "valid", batch=True)[0],
                               ss.correlate2d(x[0], k[0], "valid"))


def test_per_image_integer_dtype():
    x = np.arange(2 * 36).reshape(2, 6, 6)
    k = np.arange(18).reshape(2, 3, 3)
    out = tc.correlate2d(x, k, "same", batch=True)
    assert out.dtype == ss.correlate2d(x[0], k[0], "same").dtype
    np.testing.assert_array_equal(out, _ref(ss.correlate2d, x, k, "same", "fill", 0))


def test_methods_table_says_which_are_native():
    rows = {m.name: m for m in tc.methods()}
    assert rows["direct"].kernel_stack and rows["fft"].kernel_stack
    assert rows["naive_shmem"].kernel_stack and not rows["toeplitz_tc"].kernel_stack
    assert not rows["fft_cpu"].kernel_stack
    assert "per-image kernels" in tc.methods_table()


@pytest.mark.parametrize("shape", [(2, 9, 9), (3, 2, 9, 9), (9, 9), (2, 2, 2, 2, 9)])
def test_per_image_count_mismatch(shape):
    k = np.ones((3, 3, 3))
    with pytest.raises(ValueError, match="3"):
        tc.correlate2d(np.ones(shape), k, batch=True)


def test_per_image_bad_inputs():
    k = np.ones((2, 5, 5))
    with pytest.raises(ValueError, match="valid"):
        tc.correlate2d(np.ones((2, 4, 9)), k, "valid", batch=True)
    with pytest.raises(TypeError, match="complex"):
        tc.correlate2d(np.ones((2, 9, 9)), k.astype(complex), batch=True)
    with pytest.raises(ValueError, match="per-image"):
        tc._core.make_plan("fft_cpu", k, 9, 9, "fp64")
    p = tc._core.make_plan("direct", k, 9, 9, "fp64")
    x, out = np.ones((3, 9, 9)), np.empty((3, 5, 5))
    with pytest.raises(ValueError, match="multiple of 2"):
        p.run_batch(x.ctypes.data, 3, 81, 9, 9, 9, out.ctypes.data, 25, 5, 5, 5, "float64", False)


# ---- GPU (H200): fft takes the kernels in one plan, a device stack in batched transforms ----
@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp64", "fp32", "fp16fp32"])
@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_per_image_fft_gpu(precision, boundary, mode):
    cp = pytest.importorskip("cupy")
    from conftest import require_available

    require_available("fft")
    rng = np.random.default_rng(4)
    k, x = rng.random((5, 7, 6)), rng.random((3, 5, 40, 33))
    dtype = {"fp64": np.float64, "fp32": np.float32, "fp16fp32": np.float16}[precision]
    p = tc.plan(k, (40, 33), mode=mode, boundary=boundary, method="fft", precision=precision)
    assert p.native
    out = cp.asnumpy(p(cp.asarray(x.astype(dtype)))).astype(np.float64)
    ref = _ref(ss.correlate2d, x.astype(dtype).astype(np.float64), k, mode, boundary, 0)
    assert mape(out, ref) <= mape_bound("fft", precision)
    # host stacks on a CUDA method: one plan per kernel, the same result
    host = p(x.astype(dtype)).astype(np.float64)
    assert mape(host, ref) <= mape_bound("fft", precision)


@pytest.mark.gpu
def test_per_image_fft_gpu_many_groups():
    cp = pytest.importorskip("cupy")
    from conftest import require_available

    require_available("fft")
    rng = np.random.default_rng(5)
    k, x = rng.random((64, 31, 31)), rng.random((8, 64, 96, 96)).astype(np.float32)
    out = cp.asnumpy(tc.correlate2d(cp.asarray(x), k.astype(np.float32), "same", batch=True,
                                    method="fft"))
    ref = _ref(ss.correlate2d, x[:2].astype(np.float64), k, "same", "fill", 0)
    assert mape(out[:2], ref) <= mape_bound("fft", "fp32")
    ref_last = np.stack([ss.correlate2d(x[-1, c], k[c], "same") for c in range(64)])
    assert mape(out[-1], ref_last) <= mape_bound("fft", "fp32")


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp64", "fp32", "tf32", "fp16fp32", "bf16", "fp16"])
@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_per_image_naive_shmem_gpu(precision, boundary, mode):
    """naive_shmem takes the K kernels in one plan and a device stack in one launch; fp32 odd
    square kernels (which one kernel would send to the fixed-shape variant) included."""
    cp = pytest.importorskip("cupy")
    from conftest import require_available

    require_available("naive_shmem")
    rng = np.random.default_rng(7)
    dtype = np.float64 if precision == "fp64" else np.float16 if precision in (
        "fp16", "fp16fp32") else np.float32
    for kshape, ishape in [((5, 7, 6), (3, 5, 40, 33)), ((4, 5, 5), (2, 4, 37, 70)),
                           ((3, 35, 3), (3, 30, 9))]:  # taps past one 32-row chunk
        if mode == "valid" and (kshape[1] > ishape[-2] or kshape[2] > ishape[-1]):
            continue
        k, x = rng.random(kshape), rng.random(ishape).astype(dtype)
        p = tc.plan(k, ishape[-2:], mode=mode, boundary=boundary, method="naive_shmem",
                    precision=precision, fillvalue=0.5)
        assert p.native
        out = cp.asnumpy(p(cp.asarray(x))).astype(np.float64)
        ref = _ref(ss.correlate2d, x.astype(np.float64), k, mode, boundary, 0.5)
        assert out.shape == ref.shape
        assert mape(out, ref) <= mape_bound("naive_shmem", precision), (kshape, ishape)


@pytest.mark.gpu
def test_per_image_naive_shmem_more_images_than_a_launch():
    """Past 65,535 images the stack takes a second launch: image b keeps kernel b % K."""
    cp = pytest.importorskip("cupy")
    from conftest import require_available

    require_available("naive_shmem")
    rng = np.random.default_rng(8)
    k = rng.random((7, 3, 3))
    x = rng.random((9363, 7, 6, 5)).astype(np.float32)  # 65,541 images
    out = cp.asnumpy(tc.correlate2d(cp.asarray(x), k, "valid", batch=True,
                                    method="naive_shmem", precision="fp32"))
    for n in (0, 9361, 9362):  # the last images straddle the second launch
        ref = np.stack([ss.correlate2d(x[n, c].astype(np.float64), k[c], "valid")
                        for c in range(7)])
        assert mape(out[n], ref) <= mape_bound("naive_shmem", "fp32"), n


@pytest.mark.gpu
def test_per_image_auto_on_a_device_stack_is_native():
    """'auto' takes fft or naive_shmem on a device stack (one call); naive_shmem for a kernel
    holding NaN, whose NaN then stays where scipy puts it."""
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(9)
    for ks in (3, 31):
        k, x = rng.random((4, ks, ks)), rng.random((2, 4, 64, 64)).astype(np.float32)
        p = tc.plan(k, (64, 64), mode="same", precision="fp32", device="cuda")
        assert p.native and p.method in ("fft", "naive_shmem"), p
        out = cp.asnumpy(p(cp.asarray(x)))
        ref = _ref(ss.correlate2d, x.astype(np.float64), k, "same", "fill", 0)
        assert mape(out, ref) <= mape_bound(p.method, "fp32")
    k = rng.random((2, 3, 3))
    k[1, 1, 1] = np.nan
    x = rng.random((2, 32, 32)).astype(np.float32)
    p = tc.plan(k, (32, 32), mode="same", precision="fp32", device="cuda")
    assert p.method == "naive_shmem"
    out = cp.asnumpy(p(cp.asarray(x)))
    assert np.isfinite(out[0]).all() and np.isnan(out[1]).all()  # every output meets the NaN tap


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["toeplitz_tc"])
def test_per_image_loop_gpu(method):
    cp = pytest.importorskip("cupy")
    from conftest import require_available

    require_available(method, "fp32")
    rng = np.random.default_rng(6)
    k, x = rng.random((3, 5, 5)), rng.random((2, 3, 30, 31))
    p = tc.plan(k, (30, 31), mode="same", method=method, precision="fp32")
    assert not p.native
    out = cp.asnumpy(p(cp.asarray(x.astype(np.float32))))
    assert mape(out, _ref(ss.correlate2d, x, k, "same", "fill", 0)) <= mape_bound(method, "fp32")
