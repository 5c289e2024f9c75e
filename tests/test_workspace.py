"""Workspaces that do not grow with the image: every GPU method `auto` may
choose keeps a 32768² fp32 image (4 GB in, 4 GB out) within a 16 GB device budget; fft's
overlap-save tiles (images whose whole transform passes 1 GiB) are exact; an impossible plan
raises MemoryError naming the bytes and the next call works."""

from __future__ import annotations

import numpy as np
import pytest
from bounds import rel_l2_bound

import tensorconv as tc
from tensorconv import _api
from tensorconv.metrics import relative_l2

pytestmark = pytest.mark.gpu

BUDGET = 16 << 30
SIDE = 32768
GIB = 1 << 30


def _kernels():
    rng = np.random.default_rng(3)
    g = np.exp(-0.5 * (np.arange(-7, 8) / 2.5) ** 2)
    return {"3x3": rng.random((3, 3)), "15x15": rng.random((15, 15)),
            "rank1_15": np.outer(g, g), "55x55": rng.random((55, 55)),
            "64x64": rng.random((64, 64)), "101x101": rng.random((101, 101))}


def _auto_choices():
    """(method, precision, kernel name) for every GPU method `auto` picks for device data,
    from the ranking itself (no hand list)."""
    if not tc.cuda_available():  # the ranking lists no GPU method here
        return [pytest.param("-", "-", "-", marks=pytest.mark.skip(reason="needs a CUDA device"))]
    picks = set()
    # fp64 is left out: a 32768² float64 image and its output alone take 17 GB
    for p in ("fp16", "fp16fp32", "bf16", "tf32", "fp32"):
        for name, k in _kernels().items():
            picks.add((_api.choose_method(p, True, kernel=k, image_shape=(SIDE, SIDE)), p, name))
    return sorted(picks)


def _storage_bytes(precision):
    return 2 if precision in ("fp16", "fp16fp32") else 4


@pytest.mark.parametrize("method,precision,kname", _auto_choices())
def test_auto_methods_fit_32768_in_16_gb(method, precision, kname):
    """Plan only (workspaces are allocated by the plan, the image is not): image + output +
    workspace <= 16 GB at 32768²."""
    kernel = _kernels()[kname]
    p = tc.plan(kernel, (SIDE, SIDE), mode="valid", method=method, precision=precision)
    kh, kw = kernel.shape
    data = _storage_bytes(precision) * (SIDE * SIDE + (SIDE - kh + 1) * (SIDE - kw + 1))
    total = data + p.workspace_bytes
    assert total <= BUDGET, (method, precision, kname, p.workspace_bytes)
    del p


@pytest.mark.parametrize("precision", ["fp16", "fp16fp32", "bf16"])
def test_im2tensor_fused_workspace_is_edges(precision):
    """The mma path's partial sums: only the kw - 1 columns each side of the CTA boundaries
    (at most 2 (kw - 1) floats per 128 columns per row), never the paper's full C."""
    for k in (15, 55):
        p = tc.plan(np.ones((k, k)), (16384, 16384), mode="valid", method="im2tensor_fused",
                    precision=precision)
        hR = 16384 - k + 1
        assert 0 < p.workspace_bytes <= 4 * hR * 2 * (k - 1) * (16384 // 128), (k, p.workspace_bytes)
        full_c = 4 * hR * 2 * (16384 - k + 1)  # the paper's C: two rows (eq. 19) of floats
        assert p.workspace_bytes <= full_c / 4, (k, p.workspace_bytes)


@pytest.mark.parametrize("method", ["im2tensor", "im2tensor_shmem", "im2tensor_fused",
                                    "fir_kl", "fft"])
def test_workspace_bounded_whatever_the_height(method):
    """Methods whose workspace scaled with the image hold one band / batch of tiles: the same
    bound at 8192 and at 32768 rows."""
    m = {x.name: x for x in tc.methods()}[method]
    if not m.available:
        pytest.skip(m.reason)
    precision = "fp16fp32" if method.startswith("fir") else "fp32"
    kernel = np.random.default_rng(0).random((9, 70))  # fir: two 64-wide kernel blocks
    ws = [tc.plan(kernel, (h, 4096), mode="valid", method=method,
                  precision=precision).workspace_bytes for h in (8192, SIDE)]
    assert ws[1] <= max(ws[0], GIB), ws  # fft: 8192 x 4096 is one whole transform (< 1 GiB)


@pytest.mark.parametrize("precision,shape,kshape", [
    ("fp32", (8192, 8300), (7, 9)),      # whole transform > 1 GiB: tiles, ragged at both ends
    ("fp64", (8200, 8192), (33, 5)),
    ("fp16", (16384, 16384), (15, 15)),  # cufftXt half, power-of-two tiles, scaled
])
def test_fft_overlap_save_tiles(precision, shape, kshape):
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(4)
    image = cp.asarray(rng.random(shape))
    kernel = rng.random(kshape)
    p = tc.plan(kernel, shape, mode="valid", method="fft", precision=precision)
    assert p.workspace_bytes <= GIB, p.workspace_bytes  # the whole transform would pass 1 GiB
    x = image.astype(p.storage)
    got = cp.asarray(p(x), dtype=cp.float64)
    ref_p = "fp16fp32" if precision == "fp16" else "fp64"
    ref = tc.correlate2d(x.astype(cp.float64) if ref_p == "fp64" else x, kernel, "valid",
                         method="naive_shmem", precision=ref_p)
    err = relative_l2(cp.asnumpy(got), cp.asnumpy(cp.asarray(ref, dtype=cp.float64)))
    assert err <= rel_l2_bound("fft", precision), err


def test_real_32768_run():
    """One real 32768² fp32 image through fft (overlap-save) and one fp16fp32 through
    im2tensor_fused: outputs checked at sampled windows against float64 sums."""
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(5)
    for method, precision, k in (("fft", "fp32", 55), ("im2tensor_fused", "fp16fp32", 31)):
        dtype = cp.float16 if precision == "fp16fp32" else cp.float32
        image = cp.random.default_rng(6).random((SIDE, SIDE), dtype=cp.float32).astype(dtype)
        kernel = rng.random((k, k))
        p = tc.plan(kernel, image.shape, mode="valid", method=method, precision=precision)
        out = p(image)
        cp.cuda.runtime.deviceSynchronize()
        n = SIDE - k + 1
        ys = np.r_[0, n - 1, rng.integers(0, n, 62)]
        xs = np.r_[n - 1, 0, rng.integers(0, n, 62)]
        for y, x in zip(ys, xs):
            win = cp.asnumpy(image[y:y + k, x:x + k]).astype(np.float64)
            want = float((win * kernel).sum())
            assert abs(float(out[y, x]) - want) <= 1e-3 * abs(want), (method, y, x)
        del out, image, p
        cp.get_default_memory_pool().free_all_blocks()


def test_out_of_memory_names_bytes_and_next_call_works():
    cp = pytest.importorskip("cupy")
    total = cp.cuda.runtime.memGetInfo()[1]
    side = int(np.sqrt(total / 4 / 7)) + 1024  # im2tensor_cublas: 7 image copies in S > device
    with pytest.raises(MemoryError, match="bytes"):
        tc.plan(np.ones((7, 7)), (side, side), mode="valid", method="im2tensor_cublas",
                precision="fp32")
    image = np.random.default_rng(7).random((64, 80))
    kernel = np.random.default_rng(8).random((7, 7))
    import scipy.signal
    for method in ("im2tensor_cublas", "im2tensor_fused", "fft"):
        out = tc.correlate2d(image, kernel, "valid", method=method, precision="fp32")
        ref = scipy.signal.correlate2d(image, kernel, "valid")
        assert relative_l2(out, ref) <= rel_l2_bound(method, "fp32")


@pytest.mark.parametrize("method,precision,shape,kshape", [
    ("im2tensor", "fp32", (100, 8192), (5, 130)),          # P: 5 MB a row -> 32-row bands
    ("im2tensor_shmem", "fp16fp32", (100, 16384), (7, 70)),
    ("im2tensor_fused", "fp32", (100, 400_000), (5, 70)),  # WMMA path's C
    ("im2tensor_fused", "fp64", (80, 300_000), (3, 9)),
    ("fir_dki", "fp16fp32", (70, 2_200_000), (3, 70)),     # two kernel blocks' float sums
])
def test_banded_runs_are_exact(method, precision, shape, kshape):
    """Images whose workspace passes the 256 MB cap run in bands of output rows: the result
    equals naive_shmem's (float64 on the same stored values) within the method's bound."""
    cp = pytest.importorskip("cupy")
    m = {x.name: x for x in tc.methods()}[method]
    if not m.available:
        pytest.skip(m.reason)
    rng = np.random.default_rng(9)
    kernel = rng.standard_normal(kshape)
    p = tc.plan(kernel, shape, mode="valid", method=method, precision=precision)
    assert 0 < p.workspace_bytes <= 320 << 20  # the cap, or one 32-row block a little over it
    x = cp.asarray(rng.standard_normal(shape)).astype(p.storage)
    got = cp.asnumpy(cp.asarray(p(x), dtype=cp.float64))
    ref = cp.asnumpy(tc.correlate2d(x.astype(cp.float64), kernel, "valid", method="naive_shmem",
                                    precision="fp64"))
    assert relative_l2(got, ref) <= rel_l2_bound(method, precision)
    assert np.isfinite(got).all()
