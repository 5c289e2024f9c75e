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
    """Plans need elements (correlate2d / convolve2d give scipy's results for empty inputs:
    tests/test_empty.py)."""
    with pytest.raises(ValueError, match="is empty"):
        tc.plan(np.ones(shape), (8, 8))
    with pytest.raises(ValueError, match="is empty"):
        tc.plan(K, (8, 8))(np.ones(shape))


def test_complex():
    with pytest.raises(ValueError, match="complex image needs precision fp32 or fp64"):
        tc.correlate2d(A.astype(complex), K, precision="fp16fp32")
    with pytest.raises(ValueError, match="complex kernel needs precision fp32 or fp64"):
        tc.correlate2d(A, K.astype(complex), precision="tf32")
    with pytest.raises(ValueError, match="could not cast `fillvalue` directly to the output"):
        tc.correlate2d(A, K, fillvalue=1j)
    # a method without fp32/fp64 names the methods that take complex data
    no_complex = [m.name for m in tc.methods() if m.entry == "correlate2d"
                  and not {"fp32", "fp64"} & set(m.precisions)]
    for name in no_complex:
        with pytest.raises(ValueError, match=r"cannot take complex data.*methods that can: direct"):
            tc.correlate2d(A.astype(complex), K, method=name)
        with pytest.raises(ValueError, match=r"cannot take complex data.*methods that can: direct"):
            tc.plan(K.astype(complex), (9, 9), method=name, precision="fp16fp32")


@pytest.mark.parametrize("bad", [np.array([["a", "b"], ["c", "d"]]),
                                 np.array([[object(), 1], [2, 3]], dtype=object),
                                 np.array([["2020-01-01"]], dtype="datetime64[D]")])
def test_non_numeric(bad):
    with pytest.raises(TypeError, match="expected a numeric array"):
        tc.correlate2d(bad, K)


def test_bad_mode_and_boundary():
    with pytest.raises(ValueError, match=r"unknown mode 'half'.*full, valid, same"):
        tc.correlate2d(A, K, mode="half")
    with pytest.raises(ValueError, match=r"unknown boundary 'mirror'.*fill, wrap, symm"):
        tc.correlate2d(A, K, boundary="mirror")


def test_bad_fillvalue():
    # scipy's classes and messages
    with pytest.raises(ValueError, match="`fillvalue` must be scalar or an array with one"):
        tc.correlate2d(A, K, fillvalue=[1, 2])
    with pytest.raises(ValueError, match="`fillvalue` cannot be an empty array"):
        tc.correlate2d(A, K, fillvalue=[])
    with pytest.raises(ValueError, match="fillvalue must be a number"):
        tc.correlate2d(A, K, fillvalue="0")
    with pytest.raises(ValueError, match="fillvalue .* too large"):
        tc.correlate2d(A, K, fillvalue=10**400)


def test_plan_errors():
    with pytest.raises(TypeError, match="image_shape must be a pair of integers"):
        tc.plan(K, 5)
    with pytest.raises(TypeError, match="a float is not truncated"):
        tc.plan(K, (5.5, 5))
    with pytest.raises(ValueError, match="image_shape must be a pair of integers"):
        tc.plan(K, (5, 5, 5))
    with pytest.raises(ValueError, match="unknown device 'tpu'; valid devices"):
        tc.plan(K, (5, 5), device="tpu")
    with pytest.raises(ValueError, match="image_shape must be positive"):
        tc.plan(K, (0, 5))
    with pytest.raises(ValueError, match="at least as large as the kernel"):
        tc.plan(np.ones((9, 9)), (5, 5), mode="valid")
    p = tc.plan(K, (8, 8), method="direct")
    with pytest.raises(ValueError, match=r"plan was made for images of shape \(8, 8\)"):
        p(np.ones((8, 9)))
    with pytest.raises(ValueError, match="must be a 2-D array"):
        p(np.ones(64))
