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

pytestmark = pytest.mark.gpu

# (method, options, large kernel, small kernel): the large one needs more shared memory
CASES = [
    ("fft", {"fft.layout": "rows"}, (40, 5), (3, 3)),
    ("im2tensor_fused", {}, (40, 40), (3, 3)),
    ("toeplitz_tc", {}, (41, 41), (3, 3)),
    ("fir_ki", {}, (41, 41), (3, 3)),
    ("separable", {}, (63, 63), (3, 3)),
]


@pytest.mark.parametrize("method,options,large,small", CASES, ids=[c[0] for c in CASES])
def test_a_later_smaller_plan_leaves_an_earlier_plan_running(method, options, large, small):
    require_available(method)
    rng = np.random.default_rng(3)
    x = rng.random((300, 256)).astype(np.float32)

    def kernel(shape):  # rank 1 (separable takes it; the others do not mind)
        return np.outer(rng.random(shape[0]), rng.random(shape[1]))

    kl, ks = kernel(large), kernel(small)
    big = tc.plan(kl, x.shape, mode="valid", method=method, precision="fp32", device="cuda",
                  options=options)
    first = np.asarray(big(x))
    little = tc.plan(ks, x.shape, mode="valid", method=method, precision="fp32",
                     device="cuda", options=options)
    little(x)
    np.testing.assert_array_equal(np.asarray(big(x)), first)  # launches still valid
    ref = scipy.signal.correlate2d(x.astype(np.float64), kl, "valid")
    assert np.abs(first - ref).max() <= 1e-4 * np.abs(ref).max()
