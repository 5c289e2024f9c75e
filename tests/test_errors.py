"""Bad input gets a ValueError/TypeError that names the problem and the valid choices."""

import numpy as np
import pytest

import tensorconv as tc

A = np.ones((8, 8))
K = np.ones((3, 3))


def test_unknown_method():
    with pytest.raises(ValueError, match=r"unknown method 'nope'.*direct"):
        tc.correlate2d(A, K, method="nope")


def test_method_not_a_string():
    with pytest.raises(TypeError, match="method must be a string"):
        tc.correlate2d(A, K, method=3)


def test_unknown_precision():
    with pytest.raises(ValueError, match=r"unknown precision 'fp8'.*fp16fp32"):
        tc.correlate2d(A, K, precision="fp8")


def test_method_lacks_precision():
    with pytest.raises(ValueError, match=r"'direct' does not support precision 'bf16'.*fp64"):
        tc.correlate2d(A, K, method="direct", precision="bf16")


def test_gpu_method_without_gpu():
    unavailable = [m for m in tc.methods() if m.device == "cuda" and not m.available]
    if tc.cuda_available() or not unavailable:
        pytest.skip("no unavailable CUDA method to call here (a GPU is present, or none is registered)")
    m = unavailable[0]
    with pytest.raises(ValueError, match=rf"'{m.name}' is unavailable"):
        tc.correlate2d(A, K, method=m.name, precision=m.precisions[0])


@pytest.mark.parametrize("bad", [np.ones(5), np.ones((2, 3, 4)), np.float64(3.0)])
def test_wrong_ndim(bad):
    with pytest.raises(ValueError, match="must be a 2-D array"):
        tc.correlate2d(bad, K)
    with pytest.raises(ValueError, match="must be a 2-D array"):
        tc.convolve2d(A, bad)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0)])
def test_empty(shape):
    with pytest.raises(ValueError, match="is empty"):
        tc.correlate2d(np.ones(shape), K)
    with pytest.raises(ValueError, match="is empty"):
        tc.correlate2d(A, np.ones(shape))


def test_complex():
    with pytest.raises(TypeError, match="complex"):
        tc.correlate2d(A.astype(complex), K)
    with pytest.raises(TypeError, match="complex"):
        tc.correlate2d(A, K, fillvalue=1j)


@pytest.mark.parametrize("bad", [np.array([["a", "b"], ["c", "d"]]),
                                 np.array([[object(), 1], [2, 3]], dtype=object),
                                 np.array([["2020-01-01"]], dtype="datetime64[D]")])
def test_non_numeric(bad):
    with pytest.raises(TypeError, match="expected a real numeric array"):
        tc.correlate2d(bad, K)


def test_bad_mode_and_boundary():
    with pytest.raises(ValueError, match=r"unknown mode 'half'.*full, valid, same"):
        tc.correlate2d(A, K, mode="half")
    with pytest.raises(ValueError, match=r"unknown boundary 'mirror'.*fill, wrap, symm"):
        tc.correlate2d(A, K, boundary="mirror")


def test_bad_fillvalue():
    with pytest.raises(TypeError, match="fillvalue must be a real scalar"):
        tc.correlate2d(A, K, fillvalue=[1, 2])
    with pytest.raises(TypeError, match="fillvalue must be a real scalar"):
        tc.correlate2d(A, K, fillvalue="0")


def test_plan_errors():
    with pytest.raises(ValueError, match="image_shape must be two integers"):
        tc.plan(K, 5)
    with pytest.raises(ValueError, match="image_shape must be positive"):
        tc.plan(K, (0, 5))
    with pytest.raises(ValueError, match="at least as large as the kernel"):
        tc.plan(np.ones((9, 9)), (5, 5), mode="valid")
    p = tc.plan(K, (8, 8), method="direct")
    with pytest.raises(ValueError, match=r"plan was made for images of shape \(8, 8\)"):
        p(np.ones((8, 9)))
    with pytest.raises(ValueError, match="must be a 2-D array"):
        p(np.ones(64))
