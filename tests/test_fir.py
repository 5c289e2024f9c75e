"""Tensor-core FIR filtering (Kondo et al. 2022): fir_kl, fir_ki (16x16x16), fir_ki_32x8 and
fir_dki x fp16 / fp16fp32 / bf16 against scipy.signal.correlate2d in float64: odd non-square
images and kernels, 1xN and Nx1, kernels as large as the image, kernels over 64 (split into
64x64 blocks summed in a float workspace), strided and misaligned device rows, repeats
bit-identical, and NaN staying in its window. The 39-image USC-SIPI MAPE table per kernel
size is tests/test_accuracy.py (it enumerates these rows from the registry)."""

import numpy as np
import pytest
import scipy.signal
from bounds import mape_bound, rel_l2_bound
from conftest import accuracy_kernel, check_vs_scipy, require_available, scipy_reference

import tensorconv as tc
from tensorconv.metrics import mape, relative_l2

METHODS = ("fir_kl", "fir_ki", "fir_ki_32x8", "fir_dki")
PRECISIONS = ("fp16", "fp16fp32", "bf16")

# (image, kernel): what each exercises in csrc/cuda/methods/fir/
SHAPES = [
    ((67, 93), (3, 5)),       # one tile, ragged CTA edges
    ((61, 301), (7, 30)),     # two x-tiles, several CTAs across (DKI's shared edge patches)
    ((150, 140), (33, 17)),   # three y-chunks, two x-tiles
    ((131, 77), (63, 63)),    # the largest one-launch tile (4 x 4)
    ((90, 200), (40, 64)),    # x exactly 64
    ((20, 19), (20, 19)),     # kernel as large as the image: 1x1 output
    ((1, 200), (1, 9)),       # one row
    ((150, 1), (17, 1)),      # one column
    ((45, 300), (5, 131)),    # kw > 64: three kernel blocks summed in the workspace
    ((333, 37), (100, 4)),    # kh > 64: two kernel blocks
    ((70, 90), (70, 90)),     # both > 64, kernel = image
]

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("method", METHODS)
def test_odd_shapes_vs_scipy(method, precision):
    require_available(method)
    rng = np.random.default_rng(2022)
    for ishape, kshape in SHAPES:
        check_vs_scipy(method, precision, rng, ishape, kshape)


# Plan options fir.wc / fir.db reach geometries the defaults pick only elsewhere: one-warp-row
# CTAs, row counts not a multiple of the 8 warps, narrow (32) and wide (512) column tiles.
@pytest.mark.parametrize("wc, db", [(32, 7), (64, 33), (512, 16)])
@pytest.mark.parametrize("precision", ("fp16", "fp16fp32", "bf16"))
@pytest.mark.parametrize("method", METHODS)
def test_tile_geometries(method, precision, wc, db):
    require_available(method)
    rng = np.random.default_rng(wc + db)
    for ishape, kshape in (((150, 700), (15, 15)), ((90, 530), (25, 9)), ((130, 640), (64, 64)),
                           ((40, 300), (1, 1))):
        check_vs_scipy(method, precision, rng, ishape, kshape, {"fir.wc": wc, "fir.db": db})


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("method", METHODS)
def test_convolve_same_modes(method, precision):
    require_available(method)
    rng = np.random.default_rng(17)
    image, kernel = rng.standard_normal((57, 83)), rng.standard_normal((9, 14))
    for boundary in ("fill", "symm", "wrap"):
        ref = scipy.signal.convolve2d(image, kernel, "same", boundary)
        out = tc.convolve2d(image, kernel, "same", boundary, method=method, precision=precision)
        assert relative_l2(out, ref) <= rel_l2_bound(method, precision), boundary


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("method", METHODS)
def test_strided_and_misaligned_device_rows(method, precision):
    """Device arrays run in place: rows longer than the image (row stride > width) and a
    pointer off the 16-byte alignment take the element-wise staging path."""
    require_available(method)
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    ih, iw, kh, kw = 70, 101, 11, 13
    kernel = rng.random((kh, kw))
    p = tc.plan(kernel, (ih, iw), mode="valid", method=method, precision=precision)
    dt = torch.float16 if p.storage == "float16" else torch.float32
    big = torch.tensor(rng.random((ih, iw + 40)), dtype=torch.float64, device="cuda")
    oh, ow = ih - kh + 1, iw - kw + 1
    for col0 in (0, 3):  # aligned, then 3 elements off
        x = big[:, col0:col0 + iw].to(dt)
        xs = big.to(dt)[:, col0:col0 + iw]  # same values, row stride iw + 40
        ref = scipy.signal.correlate2d(x.double().cpu().numpy(), kernel, "valid")
        out = torch.zeros((oh, ow + 7), dtype=dt, device="cuda")
        p._plan.run(xs.data_ptr(), ih, iw, xs.stride(0), out.data_ptr(), oh, ow, out.stride(0),
                    p.storage, True, torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        got = out[:, :ow].double().cpu().numpy()
        assert mape(got, ref) <= mape_bound(method, precision), col0
        assert not out[:, ow:].any(), "wrote past the output row"


@pytest.mark.parametrize("precision", PRECISIONS)
def test_ki_layout_option(precision):
    """fir_ki's plan option fir.layout = '32x8x16' is the 32x8x16 layout: the same outputs as
    the method fir_ki_32x8, bit for bit, and within the bounds against scipy."""
    require_available("fir_ki")
    rng = np.random.default_rng(32)
    image, kernel = rng.random((130, 211)), rng.random((9, 21))
    p = tc.plan(kernel, image.shape, mode="valid", method="fir_ki", precision=precision,
                options={"fir.layout": "32x8x16"})
    x = image.astype(p.storage)
    wide = tc.plan(kernel, image.shape, mode="valid", method="fir_ki_32x8", precision=precision)
    assert np.array_equal(p(x), wide(x))
    check_vs_scipy("fir_ki", precision, rng, (67, 93), (3, 5), {"fir.layout": "32x8x16"})
    check_vs_scipy("fir_ki", precision, rng, (61, 301), (7, 30), {"fir.layout": "16x16x16"})


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("method", METHODS)
def test_repeats_bit_identical(method, precision):
    require_available(method)
    rng = np.random.default_rng(5)
    image, kernel = rng.random((300, 517)), rng.random((25, 70))
    p = tc.plan(kernel, image.shape, mode="valid", method=method, precision=precision)
    x = image.astype(p.storage)
    first = p(x)
    for _ in range(3):
        assert np.array_equal(p(x), first)


@pytest.mark.parametrize("method", METHODS)
def test_nan_stays_in_its_window(method):
    """The kernel's zero padding to multiples of 16 meets pixels outside a window (0 * NaN); the
    epilogue flags those outputs and the repair pass (csrc/cuda/runtime/nonfinite.cuh) recomputes them,
    so the NaN pattern is scipy's exactly (tests/test_nonfinite.py covers every mode and ±inf)."""
    require_available(method)
    rng = np.random.default_rng(8)
    image, kernel = rng.random((80, 120)), rng.random((5, 7))
    image[40, 60] = np.nan
    out = np.asarray(tc.correlate2d(image, kernel, "valid", method=method,
                                    precision="fp16fp32"), dtype=np.float64)
    ref = scipy.signal.correlate2d(image, kernel, "valid")
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    assert np.isnan(out[36:41, 54:61]).all()
    fin = np.isfinite(ref)
    assert mape(out[fin], ref[fin]) <= mape_bound(method, "fp16fp32")


@pytest.mark.parametrize("method", METHODS)
def test_workspace_only_for_split_kernels(method):
    require_available(method)
    small = tc.plan(np.ones((63, 63)), (200, 200), mode="valid", method=method,
                    precision="fp16fp32")
    assert small.workspace_bytes == 0
    big = tc.plan(np.ones((65, 3)), (200, 200), mode="valid", method=method, precision="fp16")
    assert big.workspace_bytes == 4 * (200 - 65 + 1) * (200 - 3 + 1)


@pytest.mark.parametrize("method", METHODS)
def test_unsupported_precision_names_the_choices(method):
    require_available(method)
    with pytest.raises(ValueError, match="fp16, fp16fp32, bf16"):
        tc.correlate2d(np.ones((8, 8)), np.ones((3, 3)), "valid", method=method,
                       precision="fp32")


@pytest.mark.slow
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("method", METHODS)
def test_usc_sipi_mape_to_k63(method, precision, usc_images):
    """The paper stopped at r = 23 (k = 47) for accuracy; the bound holds on to k = 63."""
    require_available(method)
    for name, image in usc_images[:2]:
        for k in (3, 15, 47, 63):
            out = tc.correlate2d(image, accuracy_kernel(k), "valid", method=method,
                                 precision=precision)
            err = mape(out, scipy_reference(name, image, k))
            assert err <= mape_bound(method, precision), (name, k, err)
