"""method='auto': the ranking in _api.choose_method, checked against a registry where every
method is available (so it runs without a GPU too)."""

import numpy as np
import pytest

import tensorconv as tc
from tensorconv import _api
from tensorconv.methods import MethodInfo

ALL = ("fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64")


@pytest.fixture
def every_method_available(monkeypatch):
    rows = [MethodInfo(m.name, m.device, m.precisions, True, "", m.summary, m.entry)
            for m in tc.methods()]
    names = {r.name for r in rows}
    for needed in ("naive_shmem", "separable", "fft", "im2tensor_fused", "im2tensor_atomic",
                   "toeplitz_tc"):
        if needed not in names:
            pytest.skip(f"{needed} is not in this build's registry")
    monkeypatch.setattr(_api, "_methods", lambda: rows)


def gaussian(k):
    g = np.exp(-0.5 * ((np.arange(k) - k // 2) / (k / 6)) ** 2)
    return np.outer(g, g)


def random_kernel(k):
    return np.random.default_rng(k).random((k, k))


@pytest.mark.parametrize("precision,k,expected", [
    ("fp16", 3, "naive_shmem"), ("fp16", 15, "im2tensor_fused"),
    ("fp16fp32", 55, "im2tensor_fused"), ("bf16", 25, "im2tensor_fused"),
    ("tf32", 3, "toeplitz_tc"), ("tf32", 35, "toeplitz_tc"), ("tf32", 55, "toeplitz_tc"),
    ("fp32", 3, "toeplitz_tc"), ("fp32", 15, "toeplitz_tc"), ("fp32", 25, "fft"),
    ("fp64", 3, "toeplitz_tc"), ("fp64", 25, "toeplitz_tc"), ("fp64", 35, "fft"),
    ("fp64", 55, "fft")])
def test_device_ranking(every_method_available, precision, k, expected):
    assert _api.choose_method(precision, True, 1e12, random_kernel(k)) == expected


@pytest.mark.parametrize("precision", ALL)
def test_rank1_kernels_go_separable(every_method_available, precision):
    assert _api.choose_method(precision, True, 1e12, gaussian(25)) == "separable"
    assert _api.choose_method(precision, True, 1e12, np.ones((1, 151))) == "separable"
    # small rank-1 kernels: the fused separable pass in the scalar precisions, fp16's half2
    # naive_shmem (faster than its two-pass separable form there)
    small = "naive_shmem" if precision == "fp16" else "separable"
    assert _api.choose_method(precision, True, 1e12, gaussian(3)) == small


def test_host_arrays_stay_on_cpu_when_small(every_method_available):
    assert _api.choose_method("fp64", False, 1e3, random_kernel(3)) == "direct"
    assert _api.choose_method("fp64", False, 1e12, random_kernel(3)) == "toeplitz_tc"


def test_never_atomic(every_method_available):
    for p in ("fp16", "fp16fp32", "bf16", "tf32"):
        for k in (3, 15, 55):
            assert _api.choose_method(p, True, 1e12, random_kernel(k)) != "im2tensor_atomic"


def test_non_finite_kernel_does_not_break_auto(every_method_available):
    k = random_kernel(15)
    k[3, 3] = np.nan
    assert _api.choose_method("fp32", True, 1e12, k) == "naive_shmem"
    # toeplitz_tc would run its direct fallback for every output
    assert _api.choose_method("tf32", True, 1e12, k) == "naive_shmem"


def test_no_method_for_device(monkeypatch):
    monkeypatch.setattr(_api, "_methods", lambda: [m for m in tc.methods() if m.device == "cpu"])
    with pytest.raises(ValueError, match="no available CUDA method supports precision 'bf16'"):
        _api.choose_method("bf16", True)
