"""Device images padded on the device ('same' / 'full' with CuPy input, csrc/cuda/runtime/
device_pad.cu) run through every GPU method and precision: the result against scipy in float64,
in every boundary, on widths whose padded rows are not a multiple of 16 bytes (where a method's
vector loads must not assume aligned rows); and naive_shmem, which maps the padding itself
(no padded copy), against scipy and its host path on odd shapes. GPU only."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal
from bounds import mape_bound, rel_l2_bound
from conftest import float_method_params

import tensorconv as tc
from tensorconv.metrics import mape, relative_l2

pytestmark = pytest.mark.gpu

_DTYPE = {"fp64": np.float64, "fp32": np.float32, "tf32": np.float32, "fp16fp32": np.float16,
          "fp16": np.float16, "bf16": np.float32}
_DEVICE = {m.name: m.device for m in tc.methods()}
_GPU = [p for p in float_method_params() if _DEVICE[p.values[0]] == "cuda"]


@pytest.mark.parametrize("method,precision", _GPU)
@pytest.mark.parametrize("mode,boundary", [("same", "fill"), ("same", "symm"),
                                           ("full", "wrap")])
def test_pitched_padded_device_image(method, precision, mode, boundary):
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(11)
    ran = 0
    # padded widths 70 + 4 = 74, 64 + 4 = 68 and (the 8x8 kernel) 61 + 7 = 68 or 61 + 14 = 75
    for ishape, kshape in [((67, 70), (5, 5)), ((40, 64), (3, 5)), ((45, 61), (8, 8))]:
        x = rng.random(ishape).astype(_DTYPE[precision])
        k = rng.random(kshape)
        if method == "separable":
            k = np.outer(rng.random(kshape[0]), rng.random(kshape[1]))
        try:
            out = tc.correlate2d(cp.asarray(x), k, mode, boundary, 0.5, method=method,
                                 precision=precision)
        except ValueError as e:  # a documented limit of the method (shape, kernel size)
            if "unavailable" in str(e) or "does not support" in str(e):
                raise
            continue
        ref = scipy.signal.correlate2d(x.astype(np.float64), k, mode, boundary, 0.5)
        out = cp.asnumpy(out).astype(np.float64)
        assert out.shape == ref.shape
        assert mape(out, ref) <= mape_bound(method, precision), (ishape, kshape)
        assert relative_l2(out, ref) <= rel_l2_bound(method, precision), (ishape, kshape)
        ran += 1
    assert ran, "the method refused every shape"


_ODD = [((67, 70), (4, 6)),   # even, non-square: naive_shmem's generic kernel in fp32 too
        ((9, 11), (13, 17)),  # kernel larger than the image ('full' only)
        ((1, 53), (1, 4)),    # 1 x N
        ((53, 1), (6, 1)),    # N x 1
        ((40, 300), (35, 9))]  # two row chunks of taps


@pytest.mark.parametrize("precision", tc.PRECISIONS)
@pytest.mark.parametrize("mode,boundary", [(m, b) for m in ("same", "full")
                                           for b in ("fill", "wrap", "symm")])
def test_naive_shmem_maps_the_padding(precision, mode, boundary):
    """naive_shmem stages device tiles straight from the unpadded image through the padding's
    indices (no padded copy): against scipy, and bit for bit the host path's result (padded on
    the host, then the same tiles), on odd shapes, a stack and a strided view."""
    cp = pytest.importorskip("cupy")
    from conftest import require_available

    require_available("naive_shmem", precision)
    row = {m.name: m for m in tc.methods()}["naive_shmem"]
    assert row.boundaries.startswith("in the method")
    rng = np.random.default_rng(12)
    ran = 0
    for ishape, kshape in _ODD:
        if mode == "same" and (kshape[0] > ishape[0] or kshape[1] > ishape[1]):
            continue
        x = rng.random(ishape).astype(_DTYPE[precision])
        k = rng.random(kshape)
        kw = dict(method="naive_shmem", precision=precision)
        dev = cp.asnumpy(tc.correlate2d(cp.asarray(x), k, mode, boundary, 0.25, **kw))
        host = np.asarray(tc.correlate2d(x, k, mode, boundary, 0.25, **kw))
        np.testing.assert_array_equal(dev, host, err_msg=str((ishape, kshape)))
        ref = scipy.signal.correlate2d(x.astype(np.float64), k, mode, boundary, 0.25)
        assert mape(dev.astype(np.float64), ref) <= mape_bound("naive_shmem", precision), \
            (ishape, kshape)
        ran += 1
    assert ran
    # a stack of three, and a strided view (rows 43 elements apart, the image 41 wide)
    stack = rng.random((3, 30, 41)).astype(_DTYPE[precision])
    k = rng.random((5, 4))
    p = tc.plan(k, (30, 41), mode=mode, boundary=boundary, fillvalue=0.25, method="naive_shmem",
                precision=precision)
    got = cp.asnumpy(p(cp.asarray(stack)))
    wide = cp.zeros((30, 43), dtype=stack.dtype)
    wide[:, :41] = cp.asarray(stack[1])
    view = cp.asnumpy(p(wide[:, :41]))
    for b in range(3):
        ref = scipy.signal.correlate2d(stack[b].astype(np.float64), k, mode, boundary, 0.25)
        assert mape(got[b].astype(np.float64), ref) <= mape_bound("naive_shmem", precision), b
    np.testing.assert_array_equal(view, got[1])
