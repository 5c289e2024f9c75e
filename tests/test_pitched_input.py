"""Device images padded on the device ('same' / 'full' with CuPy input, csrc/cuda/runtime/
device_pad.cu) run through every GPU method and precision: the result against scipy in float64,
in every boundary, on widths whose padded rows are not a multiple of 16 bytes (where a method's
vector loads must not assume aligned rows). GPU only."""

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
