"""GPU core: naive, naive_shmem, separable and fft on every precision they declare,
against scipy.signal.correlate2d in float64; CuPy / PyTorch arrays in and out on the caller's
stream; plans reused; workspaces; bad inputs; out-of-memory; CUDA errors as exceptions."""

import numpy as np
import pytest
import scipy.signal
from bounds import mape_bound, rel_l2_bound
from conftest import accuracy_kernel, scipy_reference

import tensorconv as tc
from tensorconv.metrics import mape, relative_l2

pytestmark = pytest.mark.gpu

GPU_METHODS = ("naive", "naive_shmem", "separable", "fft")


def gpu_params():
    rows = {m.name: m for m in tc.methods()}
    return [pytest.param(name, p, id=f"{name}-{p}") for name in GPU_METHODS
            for p in rows[name].precisions]


# Shapes that reach every code path: W=2 lane edges (odd widths), tiles and chunk edges
# (taps > 32 and > 64), the constant-memory tiers of naive_shmem (<= 4 KB, <= 30 KB, shared
# beyond), kernels as large as the image, single rows and columns.
SHAPES = [
    ((67, 93), (3, 3)),
    ((64, 65), (15, 15)),
    ((131, 77), (25, 2)),
    ((1, 37), (1, 5)),
    ((37, 1), (6, 1)),
    ((9, 11), (9, 11)),
    ((70, 90), (40, 33)),
    ((150, 140), (100, 80)),
    ((300, 40), (3, 40)),
    ((129, 257), (70, 1)),
]


def _ref(image, kernel):
    return scipy.signal.correlate2d(image, kernel, "valid")


@pytest.mark.parametrize("method,precision", gpu_params())
def test_random_vs_scipy(method, precision):
    rng = np.random.default_rng(21)
    bound = rel_l2_bound(method, precision)
    for ishape, kshape in SHAPES:
        image = rng.standard_normal(ishape)
        kernel = rng.standard_normal(kshape)
        out = tc.correlate2d(image, kernel, "valid", method=method, precision=precision)
        assert isinstance(out, np.ndarray)
        assert out.dtype == np.dtype(tc._api._STORAGE[precision])
        err = relative_l2(out, _ref(image, kernel))
        assert err <= bound, (ishape, kshape, err, bound)


@pytest.mark.parametrize("method,precision", gpu_params())
def test_usc_sipi_vs_scipy(method, precision, usc_images):
    """Three real images, k = 3 and 15, MAPE (paper eq. 20) under the accuracy table's bound.
    The full 39-image x 5-size sweep is tests/test_accuracy.py."""
    bound = mape_bound(method, precision)
    for name, image in usc_images[:3]:
        for k in (3, 15):
            out = tc.correlate2d(image, accuracy_kernel(k), "valid", method=method,
                                 precision=precision)
            assert mape(out, scipy_reference(name, image, k)) <= bound, (name, k)


def _gaussian(k, sigma):
    x = np.arange(k) - (k - 1) / 2
    g = np.exp(-0.5 * (x / sigma) ** 2)
    return np.outer(g, g) / g.sum() ** 2


@pytest.mark.parametrize("precision", ["fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64"])
def test_separable_rank(precision):
    """Rank-1 kernels need one pass (small workspace), rank-2 two, full rank is still exact."""
    rng = np.random.default_rng(5)
    image = rng.random((90, 110))
    g = _gaussian(9, 2.0)
    rank2 = np.outer(rng.random(9), rng.random(7)) + np.outer(rng.random(9), rng.random(7))
    full = rng.random((9, 7))
    sizes = {}
    for name, kernel in (("g", g), ("r2", rank2), ("full", full)):
        p = tc.plan(kernel, image.shape, mode="valid", method="separable", precision=precision)
        sizes[name] = p.workspace_bytes
        assert mape(p(image), _ref(image, kernel)) <= mape_bound("separable", precision)
    assert sizes["g"] < sizes["r2"] < sizes["full"]


@pytest.mark.parametrize("precision", ["fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64"])
def test_naive_shmem_constant_coefficients(precision):
    """The optional constant-memory tiers (<= 4 KB, <= 30 KB, larger falls back to shared)."""
    opts = {"naive_shmem.coefficients": "constant"}
    rng = np.random.default_rng(6)
    for ishape, kshape in (((67, 93), (3, 3)), ((70, 90), (40, 33)), ((150, 140), (100, 80))):
        image, kernel = rng.standard_normal(ishape), rng.standard_normal(kshape)
        out = tc.correlate2d(image, kernel, "valid", method="naive_shmem", precision=precision,
                             options=opts)
        assert relative_l2(out, _ref(image, kernel)) <= rel_l2_bound("naive_shmem", precision)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("precision", ["fp16fp32", "bf16", "tf32", "fp32", "fp64"])
def test_separable_fused_and_two_pass(precision, fused):
    """Both forms for scalar precisions; long segments make the fused walk shift its T rows."""
    opts = {"separable.fused": fused, "separable.min_segment_rows": 300}
    rng = np.random.default_rng(17)
    image = rng.standard_normal((700, 150))
    for kernel in (_gaussian(11, 2.0), rng.standard_normal((64, 5)), rng.standard_normal((3, 64)),
                   np.outer(rng.standard_normal(40), rng.standard_normal(17))):
        out = tc.correlate2d(image, kernel, "valid", method="separable", precision=precision,
                             options=opts)
        ref = scipy.signal.correlate(image, kernel, "valid", method="fft")
        assert relative_l2(out, ref) <= rel_l2_bound("separable", precision), kernel.shape


@pytest.mark.parametrize("precision", ["fp16fp32", "fp32", "fp64"])
def test_separable_staging_paths(precision):
    """The fused pass copies 16-byte aligned rows with cp.async (a fast path for tiles inside
    the image, zero-filled copies at its edges) and stages other rows with plain loads: all
    give the same bits, and agree with scipy."""
    torch = pytest.importorskip("torch")
    dt = {"fp16fp32": torch.float16, "fp32": torch.float32, "fp64": torch.float64}[precision]
    rng = np.random.default_rng(19)
    host = rng.standard_normal((300, 521))
    kernel = np.outer(rng.standard_normal(23), rng.standard_normal(31))
    full = torch.tensor(host, device="cuda").to(dt)
    aligned = full[:, :520].contiguous()     # 16-byte rows: cp.async
    shifted = torch.empty((300, 521), device="cuda", dtype=dt)[:, 1:]  # misaligned view
    shifted.copy_(aligned)
    assert shifted.data_ptr() % 16 != 0
    a = tc.correlate2d(aligned, kernel, "valid", method="separable", precision=precision)
    b = tc.correlate2d(shifted, kernel, "valid", method="separable", precision=precision)
    assert torch.equal(a, b)
    ref = _ref(aligned.double().cpu().numpy(), kernel)
    assert relative_l2(a.double().cpu().numpy(), ref) <= rel_l2_bound("separable", precision)


@pytest.mark.parametrize("tc_form", [True, False])
@pytest.mark.parametrize("precision", ["tf32", "fp32"])
def test_separable_tensor_core_passes(precision, tc_form):
    """tf32 runs both fused passes on the tensor cores as banded products (tf32 MMAs), fp32 its
    column pass (fp64 MMAs); with separable.tensor_cores = False both keep the FFMA passes. All stay
    within the precision's bounds, on edge tiles, multi-term kernels, kernels up to 64 taps and
    long walks (T rows shifted)."""
    opts = {"separable.tensor_cores": tc_form, "separable.min_segment_rows": 300}
    rng = np.random.default_rng(23)
    image = rng.standard_normal((709, 203))
    for kernel in (_gaussian(55, 9.0), _gaussian(3, 1.0), rng.standard_normal((64, 5)),
                   rng.standard_normal((2, 64)), np.outer(rng.random(33), rng.random(47)),
                   np.outer(rng.random(26), rng.random(40)),  # fp32: two chunks masked per step
                   np.outer(rng.standard_normal(40), rng.standard_normal(37)) +
                   np.outer(rng.standard_normal(40), rng.standard_normal(37))):  # r = 2
        out = tc.correlate2d(image, kernel, "valid", method="separable", precision=precision,
                             options=opts)
        ref = scipy.signal.correlate(image, kernel, "valid", method="fft")
        assert relative_l2(out, ref) <= rel_l2_bound("separable", precision), kernel.shape
    positive = rng.random((600, 300))  # MAPE needs a reference away from zero
    g = _gaussian(35, 6.0)
    out = tc.correlate2d(positive, g, "valid", method="separable", precision=precision,
                         options=opts)
    assert mape(out, _ref(positive, g)) <= mape_bound("separable", precision)


@pytest.mark.parametrize("segment", [None, 1000])
@pytest.mark.parametrize("k", [21, 55])
@pytest.mark.parametrize("precision", ["tf32", "fp32"])
def test_separable_tensor_core_nonfinite_fallback(precision, k, segment):
    """The banded products would spread NaN/inf through the band's zero taps; a warp that
    meets one (tf32: or |x| >= 2^126) finishes with FMAs, so they reach only their own windows.
    fp32's warp-specialized pass tests its data only in steps whose rows the row pass flagged:
    long walks (segment) put non-finite rows in early, middle and late steps of one block."""
    opts = {"separable.tensor_cores": True, "separable.min_segment_rows": segment}
    rng = np.random.default_rng(24)
    image = rng.random((700, 300))
    image[37, 41] = np.nan
    image[250, 200] = np.inf
    image[390, 20] = 2.0 ** 127  # finite, but tf32 rounding would overflow it
    image[660, 133] = -np.inf
    g = _gaussian(k, k / 5)
    expected = _ref(image, g)
    got = tc.correlate2d(image, g, "valid", method="separable", precision=precision,
                         options=opts).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    assert relative_l2(got[finite], expected[finite]) <= rel_l2_bound("separable", precision)


def test_separable_gaussian_4096():
    """The benchmark's case (4096^2, Gaussian k = 55, fp32) against a float64 reference."""
    rng = np.random.default_rng(18)
    image = rng.random((4096, 4096))
    g = _gaussian(55, 55 / 6)
    out = tc.correlate2d(image.astype(np.float32), g, "valid", method="separable",
                         precision="fp32")
    ref = scipy.signal.correlate(image.astype(np.float32).astype(np.float64), g, "valid",
                                 method="fft")
    assert mape(out, ref) <= mape_bound("separable", "fp32")


def test_separable_bands():
    """The two-pass form keeps T as a ring processed in bands: force many bands and compare."""
    opts = {"separable.fused": False, "separable.band_mb": 1}
    rng = np.random.default_rng(8)
    image = rng.standard_normal((1100, 700))
    for kernel in (_gaussian(21, 4.0), rng.standard_normal((13, 9))):
        out = tc.correlate2d(image, kernel, "valid", method="separable", precision="fp32",
                             options=opts)
        assert relative_l2(out, _ref(image, kernel)) <= rel_l2_bound("separable", "fp32")


@pytest.mark.parametrize("method", GPU_METHODS)
def test_plan_reused_and_workspace(method):
    rng = np.random.default_rng(9)
    kernel = rng.random((11, 6))
    p = tc.plan(kernel, (123, 97), mode="same", boundary="wrap", method=method, precision="fp32")
    if method == "naive":
        assert p.workspace_bytes == 0
    if method == "fft":
        assert p.workspace_bytes > 3 * 123 * 97 * 4  # image, image spectrum, kernel spectrum
    for _ in range(3):
        image = rng.random((123, 97))
        ref = scipy.signal.correlate2d(image, kernel, "same", "wrap")
        assert relative_l2(p(image), ref) <= rel_l2_bound(method, "fp32")


# ---- device arrays ---------------------------------------------------------------------------
def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    return torch


def _cupy():
    return pytest.importorskip("cupy")


@pytest.mark.parametrize("method", GPU_METHODS)
def test_cupy_round_trip(method):
    cp = _cupy()
    rng = np.random.default_rng(12)
    image, kernel = rng.random((80, 75)), rng.random((7, 5))
    for mode, boundary in (("valid", "fill"), ("same", "symm"), ("full", "wrap")):
        out = tc.correlate2d(cp.asarray(image, dtype=cp.float32), cp.asarray(kernel), mode,
                             boundary, method=method, precision="fp32")
        assert isinstance(out, cp.ndarray) and out.dtype == cp.float32
        ref = scipy.signal.correlate2d(image, kernel, mode, boundary)
        assert relative_l2(cp.asnumpy(out), ref) <= rel_l2_bound(method, "fp32")
    # Non-contiguous views are made contiguous; the caller's array is untouched.
    big = cp.asarray(rng.random((64, 130)))
    view = big[:, ::2]
    before = big.copy()
    out = tc.correlate2d(view, cp.asarray(kernel), "valid", method=method, precision="fp64")
    assert cp.array_equal(big, before)
    assert relative_l2(cp.asnumpy(out), _ref(cp.asnumpy(view), kernel)) <= 1e-12


@pytest.mark.parametrize("method", GPU_METHODS)
def test_torch_round_trip_and_stream(method):
    torch = _torch()
    rng = np.random.default_rng(13)
    image, kernel = rng.random((96, 64)), rng.random((5, 9))
    ref = _ref(image, kernel)
    for dtype, precision in ((torch.float16, "fp16fp32"), (torch.float32, "fp32"),
                             (torch.float64, "fp64")):
        x = torch.tensor(image, dtype=dtype, device="cuda")
        out = tc.correlate2d(x, torch.tensor(kernel, device="cuda"), "valid", method=method,
                             precision=precision)
        assert isinstance(out, torch.Tensor) and out.is_cuda and out.dtype == dtype
        assert relative_l2(out.double().cpu().numpy(), ref) <= rel_l2_bound(method, precision)
    # On a side stream: the work is ordered on that stream (the caller synchronizes it).
    s = torch.cuda.Stream()
    p = tc.plan(kernel, image.shape, mode="valid", method=method, precision="fp32")
    x = torch.tensor(image, dtype=torch.float32, device="cuda")
    with torch.cuda.stream(s):
        torch.cuda._sleep(2_000_000)  # keep the stream busy: an unordered launch would race
        y = x * 2
        out = p(y)
    s.synchronize()
    assert relative_l2(out.double().cpu().numpy(), 2 * ref) <= rel_l2_bound(method, "fp32")
    # A transposed (non-contiguous) tensor.
    xt = torch.tensor(image.T.copy(), dtype=torch.float64, device="cuda").t()
    out = tc.correlate2d(xt, torch.tensor(kernel, device="cuda"), "valid", method=method,
                         precision="fp64")
    assert relative_l2(out.cpu().numpy(), ref) <= 1e-12


def test_fft_input_unchanged_on_direct_path():
    """fp32 images of a fast size (staged like any other, for the NaN/inf repair) are never
    written."""
    torch = _torch()
    rng = np.random.default_rng(14)
    x = torch.tensor(rng.random((64, 60)), dtype=torch.float32, device="cuda")
    before = x.clone()
    out = tc.correlate2d(x, torch.ones((3, 3), device="cuda"), "valid", method="fft",
                         precision="fp32")
    assert torch.equal(x, before)
    ref = _ref(before.double().cpu().numpy(), np.ones((3, 3)))
    assert relative_l2(out.double().cpu().numpy(), ref) <= 1e-6


def test_fft_fp16_large_values_scaled():
    """fp16 spectra would overflow without the device-side scale; values up to 1000 work."""
    rng = np.random.default_rng(15)
    image = rng.random((256, 256)) * 1000
    kernel = rng.random((5, 5)) * 0.05
    out = tc.correlate2d(image.astype(np.float16), kernel, "valid", method="fft", precision="fp16")
    assert np.isfinite(out.astype(np.float64)).all()
    assert mape(out, _ref(image.astype(np.float16).astype(np.float64), kernel)) <= 0.5


def test_auto_fft_keeps_non_finite_local():
    """'auto' picks cuFFT for this large kernel; an image holding NaN/inf runs on it too (no host
    test, no second method): the device repair keeps them in their windows."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    image = rng.random((300, 310))
    kernel = rng.random((41, 41)) + 0.1  # positive: inf stays inf
    p = tc.plan(torch.tensor(kernel, device="cuda"), image.shape, mode="valid")
    assert p.method == "fft" and p._finite_fallback is None
    image[5, 7], image[200, 250] = np.nan, np.inf
    ref = scipy.signal.correlate2d(image, kernel, "valid")
    got = p(torch.tensor(image, device="cuda")).cpu().numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-10)


def test_fft_overlap_save_keeps_non_finite_local():
    """8192^2 fp32 takes fft's overlap-save tiles (2048^2 at a stride of 2044): NaN and +-inf
    planted at tile edges and corners reach exactly their own windows, and the finite outputs
    around them keep fp32 accuracy."""
    torch = _torch()
    rng = np.random.default_rng(21)
    n, k = 8192, 5
    image = rng.random((n, n), dtype=np.float32)
    kernel = rng.uniform(0.25, 1.0, (k, k))  # positive: a window with one inf is that inf
    spots = {(0, 0): np.nan, (2043, 2044): np.inf, (2044, 5000): -np.inf, (4090, 2040): np.nan,
             (8191, 8191): np.inf, (6000, 100): np.nan, (2046, 2047): np.nan}
    for yx, v in spots.items():
        image[yx] = v
    p = tc.plan(kernel, (n, n), mode="valid", method="fft", precision="fp32")
    got = p(torch.from_numpy(image).cuda()).cpu().numpy()

    def reach(mask):  # outputs whose 5x5 window holds a pixel of mask (summed-area table)
        c = np.pad(mask.cumsum(0, dtype=np.int32).cumsum(1, dtype=np.int32), ((1, 0), (1, 0)))
        return (c[k:, k:] - c[:-k, k:] - c[k:, :-k] + c[:-k, :-k]) > 0

    nan = reach(np.isnan(image))
    pos, neg = reach(image == np.inf) & ~nan, reach(image == -np.inf) & ~nan
    assert np.array_equal(np.isnan(got), nan | (pos & neg))
    assert np.array_equal(got == np.inf, pos & ~neg)
    assert np.array_equal(got == -np.inf, neg & ~pos)
    for y, x in spots:  # finite outputs around each spot against float64
        y0, x0 = max(y - 12, 0), max(x - 12, 0)
        y1, x1 = min(y + 12, n - k + 1), min(x + 12, n - k + 1)
        ref = _ref(image[y0:y1 + k - 1, x0:x1 + k - 1].astype(np.float64), kernel)
        sub, ok = got[y0:y1, x0:x1], np.isfinite(ref)
        assert np.array_equal(np.isfinite(sub), ok), (y, x)
        assert relative_l2(sub[ok], ref[ok]) <= rel_l2_bound("fft", "fp32"), (y, x)


# ---- errors ----------------------------------------------------------------------------------
def test_bad_inputs():
    p = tc.plan(np.ones((3, 3)), (20, 20), mode="valid", method="naive_shmem", precision="fp32")
    with pytest.raises(ValueError, match="shape"):
        p(np.ones((21, 20)))
    with pytest.raises(ValueError, match="complex image needs precision fp32 or fp64"):
        tc.correlate2d(np.ones((8, 8), complex), np.ones((3, 3)), method="naive",
                       precision="bf16")
    with pytest.raises(ValueError, match="does not support precision 'bf16'"):
        tc.correlate2d(np.ones((8, 8)), np.ones((3, 3)), method="fft", precision="bf16")
    with pytest.raises(ValueError, match="2-D"):
        tc.correlate2d(np.ones((8, 8, 2)), np.ones((3, 3)), method="separable")
    with pytest.raises(ValueError, match="at least as large"):
        tc.plan(np.ones((9, 9)), (5, 5), mode="valid", method="naive")
    cp = pytest.importorskip("cupy")
    p = tc.plan(np.ones((3, 3)), (8, 8), mode="valid", method="naive", precision="fp32")
    with pytest.raises(ValueError, match="CUDA device memory"):  # a host pointer marked device
        buf = np.ones((8, 8), np.float32)
        out = cp.empty((6, 6), cp.float32)
        p._plan.run(buf.ctypes.data, 8, 8, 8, int(out.data.ptr), 6, 6, 6, "float32", True, 0)


def test_out_of_memory_then_recovers():
    free, total = _cupy().cuda.runtime.memGetInfo()
    side = int(np.sqrt(total / 8)) + 1024  # one fp64 image larger than the whole device
    # im2tensor_cublas holds the paper's explicit S (kh copies of the image); fft runs such an
    # image in overlap-save tiles and no longer fails
    with pytest.raises(MemoryError, match="bytes"):
        tc.plan(np.ones((3, 3)), (side, side), mode="valid", method="im2tensor_cublas",
                precision="fp64")
    image = np.random.default_rng(1).random((50, 40))
    out = tc.correlate2d(image, np.ones((3, 3)), "valid", method="fft", precision="fp64")
    assert relative_l2(out, _ref(image, np.ones((3, 3)))) <= 1e-12


def test_cuda_error_is_an_exception_and_process_survives():
    """An invalid launch configuration (kernel wider than the int range is refused up front);
    a bogus device pointer is caught before any launch; the next call works."""
    with pytest.raises(ValueError, match="too large"):
        tc.plan(np.ones((1, 3)), (1, 2**31 + 5), mode="valid", method="naive", precision="fp32")
    image = np.random.default_rng(2).random((30, 30))
    for method in GPU_METHODS:
        out = tc.correlate2d(image, np.ones((2, 2)), "valid", method=method, precision="fp64")
        assert relative_l2(out, _ref(image, np.ones((2, 2)))) <= 1e-12
