"""Papliński's convolution matrices: convmat (lcm · rcm, both factorisations) and
convmat_rows (row by row) in every precision the registry lists, against
scipy.signal.correlate2d in float64 on odd shapes, strided device input, workspaces O(kernel),
and USC-SIPI images with non-square kernels. The 39-image MAPE table per kernel size is
tests/test_accuracy.py (it enumerates these methods from the registry)."""

import numpy as np
import pytest
import scipy.signal
from bounds import mape_bound
from conftest import check_vs_scipy, require_available

import tensorconv as tc
from tensorconv.metrics import mape

METHODS = ("convmat", "convmat_rows")

# (image, kernel): what each exercises in csrc/cuda/methods/paplinski/
SHAPES = [
    ((67, 93), (3, 5)),       # one CTA, ragged tiles; convmat: first form (band along columns)
    ((300, 200), (9, 4)),     # convmat: tall kernel -> the second form (transposed)
    ((61, 301), (7, 70)),     # wide kernel: several 32-column stages of the band
    ((333, 37), (300, 4)),    # tall kernel: many 16-row stages (convmat), strip > 32 rows
    ((1, 200), (1, 9)),       # 1xN image
    ((150, 1), (17, 1)),      # Nx1 image: convmat's second form (a 1-wide output)
    ((129, 257), (55, 55)),   # the paper's largest size
    ((520, 700), (15, 15)),   # several CTAs each way, 256-row / 256-column tiles, edges ragged
    ((45, 700), (5, 131)),    # kernel wider than a 32-column n-tile block
]

pytestmark = pytest.mark.gpu


def _precisions(method):
    return {x.name: x for x in tc.methods()}[method].precisions


def _params():
    return [pytest.param(m, p, id=f"{m}-{p}") for m in METHODS for p in _precisions(m)]


def test_registry_rows():
    rows = {x.name: x for x in tc.methods()}
    for m in METHODS:
        assert rows[m].device == "cuda"
        assert set(rows[m].precisions) == {"fp16", "fp16fp32", "bf16"}


@pytest.mark.parametrize("method,precision", _params())
def test_odd_shapes_vs_scipy(method, precision):
    require_available(method)
    rng = np.random.default_rng(1995)
    for ishape, kshape in SHAPES:
        check_vs_scipy(method, precision, rng, ishape, kshape)


def _bf16(x):
    """Round to bfloat16, nearest even, from whatever precision x holds (8 significant bits)."""
    m, e = np.frexp(x)
    return np.ldexp(np.rint(np.ldexp(m, 8)), e - 8)


def _as_read(image, kernel, precision):
    """The operands as the method multiplies them: fp16 formats store half (the kernel is rounded
    from float64 on the device, as numpy does); bf16 stores the image as float32 and the device
    rounds that to bfloat16, the kernel straight from float64."""
    if precision.startswith("fp16"):
        return [x.astype(np.float16).astype(np.float64) for x in (image, kernel)]
    return _bf16(image.astype(np.float32).astype(np.float64)), _bf16(kernel)


# Kernel as large as the image: one output pixel, a single sample. Its error against scipy on
# the float64 inputs is dominated by rounding the inputs to the format (bf16 on signed data:
# 4.7 % from that alone for the 20x19 draw below, with heavy cancellation), so the method's own
# arithmetic is checked against scipy on the rounded inputs, relative to the sum of |products|:
# fp32 accumulation (fp16fp32, bf16) ~1e-7; fp16's half accumulator per staged K chunk measured
# 1.2e-3 (convmat, 20x19 uniform data; ceiling 4e-3); plus the output's rounding to storage.
ARITH_EPS = {"fp16": 4e-3, "fp16fp32": 1e-5, "bf16": 1e-5}


@pytest.mark.parametrize("method,precision", _params())
def test_kernel_as_large_as_image(method, precision):
    require_available(method)
    rng = np.random.default_rng(1995)
    for shape in ((20, 19), (1, 300), (150, 1), (64, 64)):
        for draw in (rng.random, rng.standard_normal):
            image, kernel = draw(shape), draw(shape)
            out = tc.correlate2d(image, kernel, "valid", method=method, precision=precision)
            assert out.shape == (1, 1)
            a, b = _as_read(image, kernel, precision)
            ref = float((a * b).sum())
            scale = float(np.abs(a * b).sum())
            err = abs(float(out[0, 0]) - ref)
            assert err <= 2.0 ** -10 * abs(ref) + ARITH_EPS[precision] * scale, (shape, err, ref)


@pytest.mark.parametrize("method,precision", _params())
def test_nonfinite_reach_only_their_windows(method, precision):
    """The band's zero taps meet image values outside an output's window (0 × inf = NaN); such
    sums are recomputed over their own window, so NaN/inf land exactly where scipy puts them.
    The (12, 5) kernel takes convmat's second form."""
    require_available(method)
    rng = np.random.default_rng(17)
    for kshape in ((7, 12), (12, 5)):
        image = rng.random((200, 300))
        image[37, 41], image[150, 200], image[90, 260] = np.nan, np.inf, -np.inf
        kernel = rng.random(kshape) + 0.1  # positive: inf stays inf, no inf - inf
        ref = scipy.signal.correlate2d(image, kernel, "valid")
        got = np.asarray(tc.correlate2d(image, kernel, "valid", method=method,
                                        precision=precision), dtype=np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
        np.testing.assert_array_equal(np.sign(got[np.isinf(got)]), np.sign(ref[np.isinf(ref)]))
        finite = np.isfinite(ref)
        assert mape(got[finite], ref[finite]) <= mape_bound(method, precision), kshape


@pytest.mark.parametrize("method,precision", _params())
def test_convolve_and_modes(method, precision):
    require_available(method)
    rng = np.random.default_rng(7)
    image, kernel = rng.random((90, 110)), rng.random((6, 11))
    for mode in ("same", "full"):
        ref = scipy.signal.convolve2d(image, kernel, mode)
        out = tc.convolve2d(image, kernel, mode, method=method, precision=precision)
        assert mape(out, ref) <= mape_bound(method, precision)


@pytest.mark.parametrize("method,precision", _params())
def test_strided_device_input(method, precision):
    """A row-strided, misaligned PyTorch view (row stride 300, offset 5 elements: the
    element-wise staging path), and a transposed one (made contiguous by the API)."""
    require_available(method)
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    big = rng.random((90, 300))
    kernel = rng.random((7, 12))
    dtype = torch.float16 if precision.startswith("fp16") else torch.float32
    x = torch.tensor(big, dtype=dtype, device="cuda")
    for view, host in ((x[3:, 5:205], big[3:, 5:205]), (x.t()[10:250, :], big.T[10:250, :])):
        out = tc.correlate2d(view, torch.tensor(kernel, device="cuda"), "valid", method=method,
                             precision=precision)
        assert isinstance(out, torch.Tensor) and out.is_cuda
        ref = scipy.signal.correlate2d(host.astype(np.float64), kernel, "valid")
        assert mape(out.double().cpu().numpy(), ref) <= mape_bound(method, precision)


@pytest.mark.parametrize("method,precision", _params())
def test_deterministic(method, precision):
    """No atomics, a fixed K order: a reused plan and a fresh one give the same bits."""
    require_available(method)
    rng = np.random.default_rng(5)
    image, kernel = rng.random((300, 517)), rng.random((25, 70))
    plans = [tc.plan(kernel, image.shape, mode="valid", method=method, precision=precision)
             for _ in range(2)]
    x = image.astype(plans[0].storage)
    outs = [plans[0](x), plans[0](x), plans[1](x)]
    assert all(np.array_equal(o, outs[0]) for o in outs[1:])


@pytest.mark.parametrize("method", METHODS)
def test_workspace_is_o_kernel(method):
    """Table 4 style: only the kernel's pair table, never the (r·C) × (R + r − 1) lcm."""
    require_available(method)
    for k in (3, 55):
        kernel = np.random.default_rng(0).random((k, k))
        ws = tc.plan(kernel, (4096, 4096), mode="valid", method=method,
                     precision="fp16fp32").workspace_bytes
        assert 0 < ws <= 4 * k * (k + 160), (k, ws)


@pytest.mark.slow
@pytest.mark.parametrize("method,precision", _params())
def test_usc_sipi_nonsquare_kernels(method, precision, usc_images):
    """Real images with tall and wide kernels (convmat: the second and the first factorisation);
    the square kernels 3..55 on all 39 images are tests/test_accuracy.py."""
    require_available(method)
    rng = np.random.default_rng(16)
    for name, image in usc_images[8:10]:
        for kshape in ((25, 9), (9, 25)):
            kernel = rng.random(kshape)
            ref = scipy.signal.correlate2d(image, kernel, "valid")
            out = tc.correlate2d(image, kernel, "valid", method=method, precision=precision)
            assert mape(out, ref) <= mape_bound(method, precision), (name, kshape)


@pytest.mark.parametrize("method", METHODS)
def test_bad_input(method):
    require_available(method)
    with pytest.raises(ValueError, match="precision"):
        tc.correlate2d(np.ones((8, 8)), np.ones((3, 3)), "valid", method=method,
                       precision="fp64")
    with pytest.raises(ValueError, match="precision"):
        tc.correlate2d(np.ones((8, 8)), np.ones((3, 3)), "valid", method=method,
                       precision="fp8")
    with pytest.raises(ValueError):
        tc.correlate2d(np.ones((8, 8, 2)), np.ones((3, 3)), "valid", method=method,
                       precision="fp16fp32")
    with pytest.raises(ValueError):
        tc.correlate2d(np.ones((0, 8)), np.ones((3, 3)), "valid", method=method,
                       precision="fp16fp32")
