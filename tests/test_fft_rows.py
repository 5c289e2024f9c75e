"""fft by rows (csrc/cuda/methods/fft/fft_rows.cu: row R2C, a direct product down the columns of the row
spectra, row C2R, crop + the float64 low columns), the fft method's form for real fp32 / fp64
images with a fast width and kh <= 120, against scipy: odd shapes (forced with
fft.layout='rows' where the width is not a fast size), the 2-D form on the same data, row bands
(their last one overlapping), NaN/inf that must reach only their own windows, natural images in
fp32, and the refusals of the option. The USC-SIPI MAPE table per kernel size is
tests/test_accuracy.py (fft's registry rows run this form)."""

import numpy as np
import pytest
import scipy.signal
from bounds import mape_bound
from conftest import check_vs_scipy, require_available

import tensorconv as tc
from tensorconv.metrics import mape

METHOD = "fft"
ROWS = {"fft.layout": "rows"}
PRECISIONS = ("fp32", "fp64")

SHAPES = [
    ((67, 93), (3, 5)),        # 93 = 3 * 31: not a fast width (forced)
    ((200, 256), (15, 15)),
    ((61, 301), (7, 70)),      # wide kernel, prime-ish width (forced)
    ((333, 40), (120, 4)),     # the tallest kernel of the automatic choice
    ((20, 19), (20, 19)),      # kernel as large as the image: 1x1 output
    ((1, 200), (1, 9)),        # one row
    ((150, 1), (17, 1)),       # one column (width 1)
    ((1, 64), (1, 64)),        # 1xN kernel as large as the image
    ((129, 256), (55, 55)),
    ((90, 540), (25, 9)),
    ((50, 4), (3, 2)),         # width 4: one float64 low column below the Nyquist (forced)
    ((30, 14), (5, 3)),        # width 14: seven float64 low columns, the Nyquist left to the C2R
]

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("precision", PRECISIONS)
def test_odd_shapes_vs_scipy(precision):
    """MAPE on the papers' data (uniform [0, 1)), relative L2 on signed data."""
    require_available(METHOD)
    rng = np.random.default_rng(1995)
    for ishape, kshape in SHAPES:
        check_vs_scipy(METHOD, precision, rng, ishape, kshape, ROWS)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_default_is_rows_where_it_applies(precision):
    """A fast width and kh <= 120: the default plan is the rows form (bit for bit), whose fp32
    error is below the 2-D pair's on the papers' data; a 121-row kernel takes the 2-D pair."""
    require_available(METHOD)
    rng = np.random.default_rng(3)
    image, kernel = rng.random((300, 512)), rng.random((25, 25))
    ref = scipy.signal.correlate(image, kernel, "valid", method="direct")
    got = {lay: np.asarray(tc.correlate2d(image, kernel, "valid", method=METHOD,
                                          precision=precision, options={"fft.layout": lay}))
           for lay in (None, "rows", "2d")}
    np.testing.assert_array_equal(got[None], got["rows"])
    assert mape(got["rows"], ref) <= mape_bound(METHOD, precision)
    assert mape(got["2d"], ref) <= mape_bound(METHOD, precision)
    if precision == "fp32":
        assert mape(got["rows"], ref) < mape(got["2d"], ref)
    tall = rng.random((121, 3))
    a = tc.correlate2d(image, tall, "valid", method=METHOD, precision=precision)
    b = tc.correlate2d(image, tall, "valid", method=METHOD, precision=precision,
                       options={"fft.layout": "2d"})
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_device_arrays_and_stacks(precision):
    cp = pytest.importorskip("cupy")
    require_available(METHOD)
    rng = np.random.default_rng(8)
    stack, kernel = rng.random((3, 130, 256)), rng.random((9, 11))
    p = tc.plan(kernel, (130, 256), mode="valid", method=METHOD, precision=precision)
    out = cp.asnumpy(p(cp.asarray(stack.astype(p.storage))))
    for b in range(3):
        ref = scipy.signal.correlate2d(stack[b], kernel, "valid")
        assert mape(out[b], ref) <= mape_bound(METHOD, precision), b


@pytest.mark.parametrize("boundary", ["fill", "symm"])
@pytest.mark.parametrize("precision", PRECISIONS)
def test_same_mode_rows_at_the_next_fast_size(precision, boundary):
    """'same' pads a 1001-wide image to 1025 columns (5^2 x 41): the rows form transforms rows
    of 1029 (3 x 7^3), the padded rows copied in with zeros after them; host and device images,
    against scipy."""
    require_available(METHOD)
    rng = np.random.default_rng(21)
    image, kernel = rng.random((260, 1001)), rng.random((25, 25))
    ref = scipy.signal.correlate2d(image, kernel, "same", boundary)
    p = tc.plan(kernel, image.shape, mode="same", boundary=boundary, method=METHOD,
                precision=precision, options=ROWS)
    x = image.astype(p.storage)
    got = np.asarray(p(x))
    assert mape(got, ref) <= mape_bound(METHOD, precision)
    try:
        import cupy as cp
    except ImportError:
        return
    assert mape(cp.asnumpy(p(cp.asarray(x))), ref) <= mape_bound(METHOD, precision)


def test_row_bands_overlap_at_the_end():
    """fp64 at 9000 x 8192: bands of equal height whose row spectra, product rows and cuFFT work
    area fit 512 MiB (about 1800 rows here), the last overlapping the one before; outputs
    sampled every 97 rows (about 18 per band) against float64 sums."""
    cp = pytest.importorskip("cupy")
    require_available(METHOD)
    rng = np.random.default_rng(9)
    image = cp.random.default_rng(10).random((9000, 8192), dtype=cp.float64)
    kernel = rng.random((31, 17))
    p = tc.plan(kernel, image.shape, mode="valid", method=METHOD, precision="fp64")
    assert p.workspace_bytes <= (1 << 30), p.workspace_bytes
    out = p(image)
    oh, ow = out.shape
    ys = np.r_[0, oh - 1, np.arange(1, oh, 97)]
    xs = np.r_[0, ow - 1, rng.integers(0, ow, len(ys) - 2)]
    for y, x in zip(ys, xs):
        want = float((cp.asnumpy(image[y:y + 31, x:x + 17]) * kernel).sum())
        assert abs(float(out[y, x]) - want) <= 1e-12 * abs(want), (y, x)


# A non-finite pixel spoils its whole row spectrum, hence every output of the kh rows above it;
# the repair must bring all of those back but the ones whose window holds it.
NONFINITE = [((0, 0), np.nan), ((199, 255), np.inf), ((0, 150), -np.inf), ((100, 0), np.nan),
             ((77, 123), np.inf), ((150, 250), np.nan), ((60, slice(None)), np.nan)]


@pytest.mark.parametrize("kshape", [(3, 3), (15, 15), (7, 70), (40, 5)])
@pytest.mark.parametrize("width", [256, 251])  # a fast width (the default form) and a forced one
@pytest.mark.parametrize("precision", PRECISIONS)
def test_nonfinite_stay_local(precision, width, kshape):
    require_available(METHOD)
    rng = np.random.default_rng(17)
    image = rng.random((200, width))
    for (y, x), v in NONFINITE:
        image[y, x if isinstance(x, slice) else min(x, width - 1)] = v
    kernel = rng.random(kshape) + 0.1  # positive: inf stays inf, no inf - inf
    expected = scipy.signal.correlate2d(image, kernel, "valid")
    got = np.asarray(tc.correlate2d(image, kernel, "valid", method=METHOD, precision=precision,
                                    options=ROWS), dtype=np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    assert finite.sum() > expected.size // 3
    assert mape(got[finite], expected[finite]) <= mape_bound(METHOD, precision)


@pytest.mark.parametrize("name", ["4.1.01", "4.1.02", "7.2.01", "gray21.512"])
def test_fp32_low_columns_on_natural_images(usc_images, name):
    """fp32 sums the 8 lowest spectrum columns in float64 (fft_rows.cuh): on dark or shaded
    USC-SIPI images (resized to 1024^2 as the bench resizes its image), k = 25 U[0, 1), the median
    relative error stays within fp32's 1e-5 % goal and well below the 2-D pair's."""
    from scipy.ndimage import zoom

    require_available(METHOD)
    img = dict(usc_images)[name]
    img = np.clip(zoom(img, (1024 / img.shape[0], 1024 / img.shape[1]), order=1, grid_mode=True,
                       mode="nearest"), 0, 1)
    kernel = np.random.default_rng(1025).random((25, 25))
    ref = scipy.signal.fftconvolve(img, kernel[::-1, ::-1], "valid")
    nz, err = ref != 0, {}
    for lay in ("rows", "2d"):
        got = np.asarray(tc.correlate2d(img.astype(np.float32), kernel, "valid", method=METHOD,
                                        precision="fp32", options={"fft.layout": lay}),
                         dtype=np.float64)
        err[lay] = 100 * float(np.median(np.abs(got[nz] - ref[nz]) / np.abs(ref[nz])))
    assert err["rows"] <= 1e-5 and err["rows"] <= 0.6 * err["2d"], (name, err)


def test_refusals_name_the_reason():
    require_available(METHOD)
    k = np.ones((3, 3))
    for precision in ("fp16", "fp16fp32"):
        with pytest.raises(ValueError, match="fft.layout='rows' takes real fp32 / fp64 data"):
            tc.plan(k, (64, 64), mode="valid", method=METHOD, precision=precision, options=ROWS)
    with pytest.raises(ValueError, match="fft.layout='rows' takes kernels of at most"):
        tc.plan(np.ones((300, 3)), (400, 64), mode="valid", method=METHOD, precision="fp64",
                options=ROWS)
    p = tc.plan(k, (64, 64), mode="valid", method=METHOD, precision="fp32", options=ROWS)
    with pytest.raises(ValueError, match="complex data"):
        p(np.ones((64, 64), np.complex64))
