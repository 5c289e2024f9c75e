"""naive_shmem's fp32 variant for odd square kernels of 3..17 taps (csrc/cuda/methods/naive/naive_fixed.cu:
the kernel's shape compiled in, taps as FFMA operands, runs of 2-3 kernel rows summed apart),
against scipy in float64: every size it takes, odd image shapes around its output strips
(256 columns up to k = 7, 128 from k = 9) and the row ranges its CTAs share,
strided views, stacks and complex data, NaN/inf that must reach only their own windows, k = 9's and
15's Winograd steps redone direct where their sums overflow, its accuracy
against the generic kernel's on a USC-SIPI image, and the refusals of plan option
naive_shmem.fixed."""

import numpy as np
import pytest
import scipy.signal
from bounds import mape_bound
from conftest import check_vs_scipy, require_available

import tensorconv as tc
from tensorconv.metrics import mape

METHOD = "naive_shmem"
FIXED = {"naive_shmem.fixed": True}
GENERIC = {"naive_shmem.fixed": False}
SIZES = list(range(3, 18, 2))

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("k", SIZES)
def test_every_size_vs_scipy_and_default(k):
    require_available(METHOD)
    rng = np.random.default_rng(k)
    for ishape in ((300, 257), (k, k), (k + 40, 129 + k), (33 + k, k + 1), (k + 6, 530 + k),
                   (1100 + k, k + 255)):
        check_vs_scipy(METHOD, "fp32", rng, ishape, (k, k), FIXED)
    image, kernel = rng.random((200, 300)), rng.random((k, k))
    a = tc.correlate2d(image, kernel, "valid", method=METHOD, precision="fp32")
    b = tc.correlate2d(image, kernel, "valid", method=METHOD, precision="fp32", options=FIXED)
    np.testing.assert_array_equal(a, b)  # the default takes the variant


def test_strided_views_stacks_and_modes():
    cp = pytest.importorskip("cupy")
    require_available(METHOD)
    rng = np.random.default_rng(5)
    kernel = rng.random((9, 9))
    big = rng.random((3, 301, 520)).astype(np.float32)
    host_view = big[0, 3:290, 7:500:2]  # row stride 520, column stride 2
    dev_view = cp.asarray(big)[1, 5:280, 11:411]  # a device view with row stride 520
    for img, host in ((host_view, host_view), (dev_view, big[1, 5:280, 11:411])):
        out = tc.correlate2d(img, kernel, "valid", method=METHOD, precision="fp32",
                             options=FIXED)
        out = cp.asnumpy(out) if isinstance(out, cp.ndarray) else np.asarray(out)
        ref = scipy.signal.correlate2d(host.astype(np.float64), kernel, "valid")
        assert mape(out, ref) <= mape_bound(METHOD, "fp32")
    p = tc.plan(kernel, (275, 400), mode="valid", method=METHOD, precision="fp32",
                options=FIXED)
    stack = cp.asarray(big)[:, 5:280, 11:411]
    out = cp.asnumpy(p(stack))
    for b in range(3):
        ref = scipy.signal.correlate2d(cp.asnumpy(stack[b]).astype(np.float64), kernel, "valid")
        assert mape(out[b], ref) <= mape_bound(METHOD, "fp32"), b
    for mode in ("same", "full"):
        img = rng.random((150, 170))
        ref = scipy.signal.correlate2d(img, kernel, mode)
        out = tc.correlate2d(img, kernel, mode, method=METHOD, precision="fp32", options=FIXED)
        assert mape(np.asarray(out), ref) <= mape_bound(METHOD, "fp32"), mode


@pytest.mark.parametrize("k", [5, 13])
def test_stacks_share_the_ctas(k):
    """Every image of a stack through one launch: k = 5 gives each CTA a share of one strip of
    one image, k = 13 contiguous ranges of all the images' strips laid end to end."""
    cp = pytest.importorskip("cupy")
    require_available(METHOD)
    rng = np.random.default_rng(k + 100)
    kernel = rng.random((k, k))
    stack = rng.random((5, 77, 301)).astype(np.float32)
    p = tc.plan(kernel, stack.shape[1:], mode="valid", method=METHOD, precision="fp32",
                options=FIXED)
    out = cp.asnumpy(p(cp.asarray(stack)))
    for b in range(len(stack)):
        ref = scipy.signal.correlate2d(stack[b].astype(np.float64), kernel, "valid")
        assert mape(out[b], ref) <= mape_bound(METHOD, "fp32"), b


@pytest.mark.parametrize("k", [3, 9, 15])
def test_nonfinite_stay_local(k):
    require_available(METHOD)
    rng = np.random.default_rng(17)
    image = rng.random((200, 300))
    for (y, x), v in [((0, 0), np.nan), ((199, 299), np.inf), ((0, 150), -np.inf),
                      ((100, 0), np.nan), ((77, 123), np.inf), ((31, 127), np.nan),
                      ((32, 128), np.nan), ((15, 255), np.inf),
                      ((16, 256), np.nan)]:  # the last four straddle strip and step edges
        image[y, x] = v
    kernel = rng.random((k, k)) + 0.1
    expected = scipy.signal.correlate2d(image, kernel, "valid")
    got = np.asarray(tc.correlate2d(image, kernel, "valid", method=METHOD, precision="fp32",
                                    options=FIXED), dtype=np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    assert mape(got[finite], expected[finite]) <= mape_bound(METHOD, "fp32")


def test_winograd_steps_redone_direct_where_sums_overflow():
    """k = 9 and 15 run Winograd F(2, 3) down the columns, whose row sums r1 + r2 can overflow where
    the direct sums do not: such a step (its outputs not all finite) is redone direct. Huge
    values that do not overflow, and huge taps, stay on Winograd. All agree with scipy."""
    require_available(METHOD)
    rng = np.random.default_rng(33)
    image = rng.random((300, 400))
    image[100, 200] = image[101, 200] = 2e38  # r1 + r2 = 4e38 overflows float32
    image[40, 50], image[200, 333] = 3e37, -1e25
    kernel = rng.random((15, 15)) * 0.05
    big_tap = rng.random((15, 15))
    big_tap[4, 4] = 1e12
    for img, k in ((image, kernel), (rng.random((300, 400)), big_tap), (image, kernel[:9, :9])):
        ref = scipy.signal.correlate2d(img, k, "valid")
        out = np.asarray(tc.correlate2d(img, k, "valid", method=METHOD, precision="fp32",
                                        options=FIXED), dtype=np.float64)
        assert np.isfinite(out).all()
        assert mape(out, ref) <= mape_bound(METHOD, "fp32")


def test_more_accurate_than_the_generic_kernel(usc_images):
    """Runs of 3 kernel rows summed apart: on a USC-SIPI image at k = 15 the median relative
    error is below the generic kernel's one running sum of 225 products."""
    require_available(METHOD)
    name, img = usc_images[0]
    kernel = np.random.default_rng(15).random((15, 15))
    ref = scipy.signal.correlate2d(img, kernel, "valid")
    nz = ref != 0
    err = {}
    for tag, opt in (("fixed", FIXED), ("generic", GENERIC)):
        out = np.asarray(tc.correlate2d(img.astype(np.float32), kernel, "valid", method=METHOD,
                                        precision="fp32", options=opt), dtype=np.float64)
        err[tag] = float(np.median(np.abs(out[nz] - ref[nz]) / np.abs(ref[nz])))
    assert err["fixed"] < err["generic"], (name, err)


def test_refusals_name_the_reason():
    require_available(METHOD)
    for kshape, precision in (((4, 4), "fp32"), ((15, 13), "fp32"), ((19, 19), "fp32"),
                              ((5, 5), "fp64"), ((5, 5), "tf32"), ((1, 1), "fp32")):
        with pytest.raises(ValueError, match="naive_shmem.fixed=True takes real fp32 data and one odd "
                                             "square kernel of 3..17"):
            tc.plan(np.ones(kshape), (64, 64), mode="valid", method=METHOD, precision=precision,
                    options=FIXED)
    # complex data: the real and imaginary parts as two real correlations (not complex-native)
    rng = np.random.default_rng(2)
    kernel = rng.random((5, 5))
    p = tc.plan(kernel, (64, 64), mode="valid", method=METHOD, precision="fp32", options=FIXED)
    z = (rng.random((64, 64)) + 1j * rng.random((64, 64))).astype(np.complex64)
    ref = scipy.signal.correlate2d(z.astype(np.complex128), kernel, "valid")
    out = np.asarray(p(z))
    assert np.iscomplexobj(out)
    assert mape(out.real, ref.real) <= mape_bound(METHOD, "fp32")
    assert mape(out.imag, ref.imag) <= mape_bound(METHOD, "fp32")
    # the generic kernel on request, and for every shape the variant does not take
    for kshape in ((15, 15), (4, 4), (15, 13)):
        check_vs_scipy(METHOD, "fp32", rng, (90, 140), kshape, GENERIC)


@pytest.mark.parametrize("k", [9, 15])
def test_winograd_even_row_translations_keep_every_bit(k):
    """k = 9 and 15 pair output rows for Winograd, so the registry gives naive_shmem fp32 a
    translation period of two rows there: the same windows moved by an even number of rows (any
    number of columns) give the same bits, NaN/inf included (a non-finite pair is redone direct
    alone, not its whole step, so where the step boundaries fall does not matter)."""
    require_available(METHOD)
    row = {m.name: m for m in tc.methods()}[METHOD]
    assert row.translation_invariant and row.translation_period("fp32", k, k) == (2, 1)
    assert row.translation_period("fp32", k + 2, k + 2) == (1, 1)
    rng = np.random.default_rng(k)
    big = rng.standard_normal((400, 700)).astype(np.float32)
    big[150, 333] = np.nan
    big[71, 20] = np.inf
    big[260:262, 400] = 2e38  # r1 + r2 overflows in Winograd; direct's sums stay finite
    kernel = rng.random((k, k)) * 0.5
    h, w = 330, 601

    def corr(a):
        return np.asarray(tc.correlate2d(a, kernel, "valid", method=METHOD, precision="fp32"))

    ref = corr(big[:h, :w])
    for s0, s1 in [(2, 1), (4, 5), (6, 0), (0, 3), (64, 17), (66, 128)]:
        for out in (corr(big[s0:s0 + h, s1:s1 + w]), corr(big[s0:h, s1:w])):
            r = ref[s0:, s1:]
            o = out[: r.shape[0], : r.shape[1]]
            assert np.array_equal(o, r, equal_nan=True), (
                k, (s0, s1), int(np.count_nonzero((o != r) & ~(np.isnan(o) & np.isnan(r)))))
    # and the windows that hold a non-finite value follow scipy
    want = scipy.signal.correlate2d(big[:h, :w].astype(np.float64), kernel, "valid")
    assert np.array_equal(np.isnan(ref), np.isnan(want))
    assert np.array_equal(np.isinf(ref), np.isinf(want))
    fin = np.isfinite(want)
    assert mape(ref[fin], want[fin]) <= mape_bound(METHOD, "fp32")
