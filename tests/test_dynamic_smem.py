"""Plans of one method made for different kernel sizes often launch the same device function
with different amounts of dynamic shared memory. That limit is the function's, process-wide:
a plan made later with a smaller need must not lower it under an earlier plan that is still
cached (its launches would fail with "invalid argument"). GPU only."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal

from conftest import require_available

import tensorconv as tc
from tensorconv._bounds import rel_l2_bound
from tensorconv.metrics import relative_l2

pytestmark = pytest.mark.gpu

# (method, precision, options, large kernel, small kernel): the large one needs more shared
# memory
CASES = [
    ("fft", "fp32", {"fft.layout": "rows"}, (40, 5), (3, 3)),
    ("im2tensor_fused", "fp32", {}, (40, 40), (3, 3)),
    ("toeplitz_tc", "fp32", {}, (41, 41), (3, 3)),
    ("fir_ki", "fp16fp32", {}, (41, 41), (3, 3)),  # the FIR kernels are half-precision only
    ("separable", "fp32", {}, (63, 63), (3, 3)),
]


@pytest.mark.parametrize("method,precision,options,large,small", CASES,
                         ids=[c[0] for c in CASES])
def test_a_later_smaller_plan_leaves_an_earlier_plan_running(method, precision, options, large,
                                                             small):
    require_available(method, precision)
    rng = np.random.default_rng(3)
    x = rng.random((300, 256)).astype(np.float32)

    def kernel(shape):  # rank 1 (separable takes it; the others do not mind)
        return np.outer(rng.random(shape[0]), rng.random(shape[1]))

    kl, ks = kernel(large), kernel(small)
    big = tc.plan(kl, x.shape, mode="valid", method=method, precision=precision, device="cuda",
                  options=options)
    first = np.asarray(big(x))
    little = tc.plan(ks, x.shape, mode="valid", method=method, precision=precision,
                     device="cuda", options=options)
    little(x)
    np.testing.assert_array_equal(np.asarray(big(x)), first)  # launches still valid
    ref = scipy.signal.correlate2d(x.astype(np.float64), kl, "valid")
    assert relative_l2(first, ref) <= rel_l2_bound(method, precision)
